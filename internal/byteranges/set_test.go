package byteranges

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSetAgainstBitmap adds random ranges and compares the set, its Total,
// Covers, Overlap, CoversWith and Gaps with a byte bitmap.
func TestSetAgainstBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	t.Logf("seed 7,9")
	for trial := 0; trial < 200; trial++ {
		var iv Set
		var bm [2000]bool
		for k := 0; k < 30; k++ {
			s := uint32(rng.IntN(500))
			e := s + uint32(rng.IntN(100))
			if rng.IntN(3) == 0 && len(iv) > 0 { // often in order, like real DATA
				s = iv[len(iv)-1].End
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
			added := iv.Add(s, e)
			after := 0
			for i := s; i < e; i++ {
				bm[i] = true
			}
			for _, b := range bm {
				if b {
					after++
				}
			}
			if int(added) != after-before || int(iv.Total()) != after {
				t.Fatalf("trial %d add(%d,%d): added %d total %d, bitmap says %d %d; set %v", trial, s, e, added, iv.Total(), after-before, after, iv)
			}
			for i := 1; i < len(iv); i++ {
				if iv[i-1].End >= iv[i].Start {
					t.Fatalf("not merged/sorted: %v", iv)
				}
			}
			a := uint32(rng.IntN(1900))
			b := a + uint32(rng.IntN(20))
			want := true
			for i := a; i < b; i++ {
				want = want && bm[i]
			}
			if got := iv.Covers(a, b); got != want {
				t.Fatalf("covers(%d,%d) = %v, bitmap %v; set %v", a, b, got, want, iv)
			}
			var inSet uint32
			for i := a; i < b; i++ {
				if bm[i] {
					inSet++
				}
			}
			if got := iv.Overlap(a, b); got != inSet {
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
			if got := iv.CoversWith(a, b, x, y); got != wantWith || len(iv) != n {
				t.Fatalf("CoversWith(%d,%d,%d,%d) = %v, bitmap %v; set %v", a, b, x, y, got, wantWith, iv)
			}
			// Gaps below a random limit: exactly the bytes missing there.
			limit := uint32(rng.IntN(700))
			var wantGaps []Range
			for i := uint32(0); i < limit; i++ {
				if bm[i] {
					continue
				}
				if n := len(wantGaps); n > 0 && wantGaps[n-1].End == i {
					wantGaps[n-1].End++
				} else {
					wantGaps = append(wantGaps, Range{i, i + 1})
				}
			}
			if got := iv.Gaps(limit); !slices.Equal(got, wantGaps) {
				t.Fatalf("Gaps(%d) = %v, bitmap %v; set %v", limit, got, wantGaps, iv)
			}
		}
	}
}
