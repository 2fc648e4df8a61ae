package bench

import "fmt"

// baselineJump is the largest factor by which the unloaded latency may
// grow between neighbouring measured sizes before Warn calls it
// suspicious (unless the sizes themselves grow more: see Warn).
const baselineJump = 3

// simInterpolationFloor is the p50 slowdown below which Warn reports a
// simulated bucket: above it, the baseline's interpolation error.
const simInterpolationFloor = 0.95

// Warn fills r.Warnings, one line each naming the transport: first, for
// each transport that did not keep up with the offered load
// (Summary.KeptUp: failed RPCs, or well below the offered load carried),
// what fell short and its likely cause (a saturated simulated host's
// CPU, Summary.HostCPU), setting Summary.Saturated and r.Saturated; then
// a transport that kept up on a saturated simulated host; then the signs that a transport's unloaded baseline is off (a CPU stall
// during its few RPCs):
//
//   - a bucket whose p50 slowdown is below 1: half of its loaded RPCs were
//     faster than the unloaded ones, so the baseline is too high there;
//   - buckets whose p99 rests on fewer than MinP99Count RPCs
//     (BucketStats.FewForP99, marked "*" in the table): one line per
//     transport, with how many such buckets and their smallest count;
//   - neighbouring measured sizes whose baseline latencies differ by more
//     than 3x and more than twice the sizes' own ratio (a fixed cost plus a
//     per-byte one never grows faster than the size; the margin covers
//     the grant round trips a message past unsched_bytes adds: 7 KB to
//     49 KB at 100 Mbit/s took 7.2x longer for 6.8x the bytes).
//
// In the simulator nothing stalls: a baseline is exact at its measured
// sizes and interpolated between them, so only a p50 clearly below 1
// (simInterpolationFloor) is reported, as interpolation error, and jumps
// are the protocol's own (grant round trips), not reported.
func (r *Report) Warn() {
	r.Warnings = r.warnSaturated()
	sim := r.Env == "sim"
	for _, s := range r.Transports {
		for _, b := range s.Buckets {
			switch {
			case b.Count == 0 || b.P50 <= 0:
			case sim && b.P50 < simInterpolationFloor:
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s: p50 slowdown %.3g < 1 in bucket %s: the unloaded baseline, interpolated between the measured sizes, is above most loaded RPCs there (more --buckets put measured sizes closer)", s.Transport, b.P50, b.String()))
			case !sim && b.P50 < 1:
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s: p50 slowdown %.3g < 1 in bucket %s: its unloaded baseline is too high (a CPU stall while measuring it?); rerun with a larger --unloaded", s.Transport, b.P50, b.String()))
			}
		}
		few, least, empty := 0, 0, 0
		for _, b := range s.Buckets {
			if b.FewForP99 {
				if few == 0 || b.Count < least {
					least = b.Count
				}
				few++
			}
			if b.Count == 0 && b.Errors == 0 {
				empty++
			}
		}
		// Every bucket keeps its row; one the run drew no size for says
		// why it shows "-".
		none := ""
		if empty > 0 {
			none = fmt.Sprintf("; %d hold none (the run drew no size there: n 0, slowdowns -)", empty)
		}
		switch {
		case few > 0:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d of %d buckets hold fewer than %d RPCs (the fewest %d)%s: their p99 (marked *) is about their largest slowdown, not a 99th percentile; run longer (--duration) or at a higher --load", s.Transport, few, len(s.Buckets), MinP99Count, least, none))
		case empty > 0:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d of %d buckets hold no RPC (the run drew no size there: n 0, slowdowns -); run longer (--duration) or at a higher --load", s.Transport, empty, len(s.Buckets)))
		case s.FewForP99:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d RPCs in all, fewer than %d: the overall p99 (marked *) is about their largest slowdown, not a 99th percentile; run longer (--duration) or at a higher --load", s.Transport, s.Count, MinP99Count))
		}
		if sim {
			continue
		}
		p := s.Baseline.Points
		for i := 1; i < len(p); i++ {
			lo, hi := p[i-1], p[i]
			if lo.Latency <= 0 || lo.Size <= 0 {
				continue
			}
			ratio := float64(hi.Latency) / float64(lo.Latency)
			if ratio > baselineJump && ratio > 2*float64(hi.Size)/float64(lo.Size) {
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s: unloaded latency jumps %.1fx from %d bytes (%v) to %d bytes (%v): a CPU stall while measuring it?; rerun with a larger --unloaded", s.Transport, ratio, lo.Size, lo.Latency, hi.Size, hi.Latency))
			}
		}
	}
}
