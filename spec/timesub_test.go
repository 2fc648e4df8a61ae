package spec

import (
	"math"
	"testing"
	"time"
)

// TestSubTimeIsSub holds subTime to time.Time.Sub: near times, far apart
// ones (saturated by Sub), zero times, monotonic readings, nanoseconds
// borrowing across a second.
func TestSubTimeIsSub(t *testing.T) {
	base := time.Unix(1700000000, 999_999_999)
	now := time.Now()
	times := []time.Time{
		{}, base, base.Add(1), base.Add(-time.Nanosecond * 1_000_000_001), time.Unix(0, 0), time.Unix(-5, 3),
		time.Unix(1<<40-1, 5), time.Unix(1<<40+1, 5), time.Unix(-(1 << 40), 0), time.Unix(math.MaxInt64/2, 0),
		time.Unix(1700000000+8_999_999_999, 1), time.Unix(1700000000+9_000_000_000, 0), time.Unix(1700000000-9_500_000_000, 0),
		now, now.Add(time.Hour), now.Round(0), now.Add(-time.Millisecond).Round(0),
	}
	for _, a := range times {
		for _, b := range times {
			if got, want := subTime(a, b), a.Sub(b); got != want {
				t.Errorf("subTime(%v, %v) = %v, Sub %v", a, b, got, want)
			}
		}
	}
}
