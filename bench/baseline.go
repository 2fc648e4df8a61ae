package bench

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/latency"
)

// Record is one RPC's outcome, as any traffic driver reports it.
type Record struct {
	// Request is the request size in bytes.
	Request int `json:"request"`
	// Latency is from sending the request to receiving the whole
	// response.
	Latency time.Duration `json:"latency_ns"`
	// Err is empty for a successful RPC, else the agent's
	// "<code>: <text>".
	Err string `json:"error,omitempty"`
}

// BaselinePoint is the unloaded latency of RPCs with one request size.
type BaselinePoint struct {
	// Size is the request size in bytes.
	Size int `json:"size"`
	// Latency is the unloaded latency used for the size: the
	// BaselineQuantile of the latencies measured, lowered to the next
	// larger size's when that is lower (see NewBaseline).
	Latency time.Duration `json:"latency_ns"`
	// Median is the median latency measured for the size.
	Median time.Duration `json:"median_ns"`
	// Count is the number of successful unloaded RPCs measured.
	Count int `json:"count"`
}

// BaselineQuantile is the quantile of a size's unloaded latencies that
// NewBaseline takes as its unloaded latency: the 25th percentile, not the
// median. A CPU stall (the hosts and the switch share this machine's CPUs)
// only ever adds latency, so a low quantile is the network's latency for
// as long as fewer than three quarters of the size's RPCs stalled; the
// median was off as soon as half of them did (--unloaded 5 with 3 stalled
// 385-byte RPCs gave a 5.69 ms baseline and p50 slowdowns below 1).
const BaselineQuantile = 0.25

// Baseline is the unloaded latency as a function of request size: the
// BaselineQuantile of the latencies measured at a few sizes, linearly
// interpolated between them. The
// zero Baseline is unusable; get one from NewBaseline.
type Baseline struct {
	// Points are ascending by Size, one per measured size.
	Points []BaselinePoint `json:"points"`
}

// NewBaseline returns the baseline of unloaded RPC records: per request
// size, the BaselineQuantile of the successful ones' latencies, then made
// non-decreasing in size from the largest size down (a size whose latency
// is above a larger size's gets the larger size's): an unloaded RPC never
// gets faster with a longer request, so such a latency is a CPU stall
// during its few RPCs, not the network. Errors: no successful record (the
// failures' first error is quoted).
func NewBaseline(records []Record) (Baseline, error) {
	hists := map[int]*latency.Histogram{}
	var firstErr string
	for _, r := range records {
		if r.Err != "" {
			if firstErr == "" {
				firstErr = r.Err
			}
			continue
		}
		h := hists[r.Request]
		if h == nil {
			h = latency.New()
			hists[r.Request] = h
		}
		h.Record(r.Latency.Nanoseconds())
	}
	if len(hists) == 0 {
		if firstErr != "" {
			return Baseline{}, fmt.Errorf("baseline: none of the %d unloaded RPCs succeeded (first error: %s)", len(records), firstErr)
		}
		return Baseline{}, errors.New("baseline: no unloaded RPCs measured")
	}
	var b Baseline
	for size, h := range hists {
		b.Points = append(b.Points, BaselinePoint{Size: size, Latency: time.Duration(h.Quantile(BaselineQuantile)),
			Median: time.Duration(h.Quantile(0.5)), Count: int(h.Count())})
	}
	slices.SortFunc(b.Points, func(x, y BaselinePoint) int { return x.Size - y.Size })
	for i := len(b.Points) - 2; i >= 0; i-- {
		b.Points[i].Latency = min(b.Points[i].Latency, b.Points[i+1].Latency)
	}
	return b, nil
}

// At returns the unloaded latency of a request of size bytes: the measured
// latencies interpolated linearly in size, the smallest measured one below
// the smallest size, and above the largest size the line through the last
// two points (never falling: latency grows with size). It returns 0 for
// the zero Baseline.
func (b Baseline) At(size int) time.Duration {
	p := b.Points
	switch {
	case len(p) == 0:
		return 0
	case size <= p[0].Size:
		return p[0].Latency
	}
	i, found := slices.BinarySearchFunc(p, size, func(x BaselinePoint, s int) int { return x.Size - s })
	if found {
		return p[i].Latency
	}
	if i == len(p) { // above the largest: the last segment's line, never falling
		if len(p) == 1 {
			return p[0].Latency
		}
		lo, hi := p[len(p)-2], p[len(p)-1]
		slope := max(0, float64(hi.Latency-lo.Latency)/float64(hi.Size-lo.Size))
		return hi.Latency + time.Duration(slope*float64(size-hi.Size))
	}
	lo, hi := p[i-1], p[i]
	return lo.Latency + time.Duration(float64(hi.Latency-lo.Latency)*float64(size-lo.Size)/float64(hi.Size-lo.Size))
}

// BaselineSizes returns the request sizes in bytes to measure the baseline
// at for buckets: every bucket's smallest and largest size (so that
// interpolation inside a bucket stays between two measured points),
// ascending and without repeats.
func BaselineSizes(buckets []Bucket) []int {
	var sizes []int
	for _, bk := range buckets {
		sizes = append(sizes, bk.Lo, bk.Hi)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// DistBaselineSizes is BaselineSizes of Buckets(d, n).
func DistBaselineSizes(d workload.Dist, n int) []int {
	return BaselineSizes(Buckets(d, n))
}
