package netem

import (
	"math/bits"
	"time"
)

// lagHist is a histogram of durations in power-of-two nanosecond buckets
// (bucket i holds [2^(i-1), 2^i) ns), cheap enough for every frame.
type lagHist [64]uint64

func (h *lagHist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h[bits.Len64(uint64(d))]++
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (0 when empty), so it overestimates by at most 2x.
func (h *lagHist) quantile(q float64) time.Duration {
	var n uint64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i, c := range h {
		if seen += c; seen >= want {
			return time.Duration(uint64(1)<<i - 1)
		}
	}
	return time.Duration(1<<63 - 1)
}
