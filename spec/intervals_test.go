package spec

import (
	"math/rand/v2"
	"testing"
)

// TestIntervalsAgainstBitmap adds random ranges and compares the set, its
// total and covers() with a byte bitmap.
func TestIntervalsAgainstBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	t.Logf("seed 7,9")
	for trial := 0; trial < 200; trial++ {
		var iv intervals
		var bm [2000]bool
		for k := 0; k < 30; k++ {
			s := uint32(rng.IntN(500))
			e := s + uint32(rng.IntN(100))
			if rng.IntN(3) == 0 && len(iv) > 0 { // often in order, like real DATA
				s = iv[len(iv)-1].end
				if s >= 2 {
					s -= uint32(rng.IntN(3))
				}
				e = min(s+uint32(rng.IntN(50)), 1999)
			}
			before := 0
			for _, b := range bm {
				if b {
					before++
				}
			}
			added := iv.add(s, e)
			after := 0
			for i := s; i < e; i++ {
				bm[i] = true
			}
			for _, b := range bm {
				if b {
					after++
				}
			}
			if int(added) != after-before || int(iv.total()) != after {
				t.Fatalf("trial %d add(%d,%d): added %d total %d, bitmap says %d %d; set %v", trial, s, e, added, iv.total(), after-before, after, iv)
			}
			for i := 1; i < len(iv); i++ {
				if iv[i-1].end >= iv[i].start {
					t.Fatalf("not merged/sorted: %v", iv)
				}
			}
			a := uint32(rng.IntN(1900))
			b := a + uint32(rng.IntN(20))
			want := true
			for i := a; i < b; i++ {
				want = want && bm[i]
			}
			if got := iv.covers(a, b); got != want {
				t.Fatalf("covers(%d,%d) = %v, bitmap %v; set %v", a, b, got, want, iv)
			}
			var inSet uint32
			for i := a; i < b; i++ {
				if bm[i] {
					inSet++
				}
			}
			if got := iv.overlap(a, b); got != inSet {
				t.Fatalf("overlap(%d,%d) = %d, bitmap %d; set %v", a, b, got, inSet, iv)
			}
			// coversWith: the set plus [x, y) against the bitmap plus it.
			x := uint32(rng.IntN(1900))
			y := x + uint32(rng.IntN(60))
			wantWith := true
			for i := a; i < b; i++ {
				wantWith = wantWith && (bm[i] || i >= x && i < y)
			}
			n := len(iv)
			if got := iv.coversWith(a, b, x, y); got != wantWith || len(iv) != n {
				t.Fatalf("coversWith(%d,%d,%d,%d) = %v, bitmap %v; set %v", a, b, x, y, got, wantWith, iv)
			}
		}
	}
}
