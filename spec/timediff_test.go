package spec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSubTime: subTime equals time.Time.Sub for capture-like times, far
// ones (the fallback) and the extremes where Sub saturates.
func TestSubTime(t *testing.T) {
	at := func(s int64, ns int64) time.Time { return time.Unix(s, ns) }
	cases := [][2]time.Time{
		{at(1700000000, 5), at(1700000000, 999999999)},
		{at(0, 0), at(-1<<32+1, 0)},
		{at(1<<32-1, 999999999), at(-1<<32, 0)},
		{at(1<<32, 0), at(0, 1)},
		{at(math.MaxInt64/2, 0), at(math.MinInt64/2, 0)},
		{at(math.MinInt64/2, 0), at(math.MaxInt64/2, 0)},
		{time.Time{}, at(1700000000, 0)},
		{at(1700000000, 0), time.Time{}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		span := int64(1) << r.IntN(63)
		cases = append(cases, [2]time.Time{at(r.Int64N(span)-span/2, r.Int64N(1e9)), at(r.Int64N(span)-span/2, r.Int64N(1e9))})
	}
	for _, c := range cases {
		if got, want := subTime(c[0], c[1]), c[0].Sub(c[1]); got != want {
			t.Fatalf("subTime(%v, %v) = %v, Sub says %v", c[0], c[1], got, want)
		}
	}
}
