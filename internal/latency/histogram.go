package latency

import (
	"math"
	"math/bits"
)

// subBits is the number of mantissa bits kept: 2^subBits sub-buckets per
// power of two.
const subBits = 7

const (
	subCount = 1 << subBits
	// numBuckets covers every non-negative int64: values below subCount
	// are exact, then one group of subCount buckets per power of two from
	// 2^subBits to 2^62.
	numBuckets = (64 - subBits) * subCount
)

// Histogram counts latencies in nanoseconds. The zero value is not usable;
// use New. It is not safe for concurrent use: give each goroutine its own
// and Merge them.
type Histogram struct {
	counts   []uint64
	count    uint64
	sum      float64
	min, max int64
}

// New returns an empty histogram.
func New() *Histogram {
	return &Histogram{counts: make([]uint64, numBuckets), min: math.MaxInt64}
}

// index returns the bucket of v ≥ 0.
func index(v int64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - subBits // ≥ 0
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bounds returns the smallest and largest value of bucket i.
func bounds(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	shift := i/subCount - 1
	lo = int64(i%subCount+subCount) << shift
	return lo, lo + (int64(1) << shift) - 1
}

// Record adds one latency of ns nanoseconds (negative values count as 0).
// It does not allocate.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[index(ns)]++
	h.count++
	h.sum += float64(ns)
	h.min = min(h.min, ns)
	h.max = max(h.max, ns)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.count }

// Min returns the smallest recorded value in ns (0 if empty).
func (h *Histogram) Min() int64 {
	if h.count == 0 {
		return 0
	}
	return h.min
}

// Max returns the largest recorded value in ns (0 if empty).
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the exact mean of the recorded values in ns (0 if empty).
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / float64(h.count)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1; p99 is 0.99) in ns: the
// value of rank ⌈q·Count⌉ in sorted order, as the middle of its bucket,
// within 1/256 of the true value and clamped to [Min, Max]. q ≤ 0 gives
// Min, q ≥ 1 Max; an empty histogram gives 0.
func (h *Histogram) Quantile(q float64) int64 {
	if h.count == 0 {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			return min(max(lo+(hi-lo)/2, h.min), h.max)
		}
	}
	return h.max
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.count += o.count
	h.sum += o.sum
	if o.count > 0 {
		h.min = min(h.min, o.min)
		h.max = max(h.max, o.max)
	}
}

// Reset empties h.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.count, h.sum, h.min, h.max = 0, 0, math.MaxInt64, 0
}
