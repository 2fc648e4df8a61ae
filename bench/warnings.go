package bench

import "fmt"

// baselineJump is the largest factor by which the unloaded latency may
// grow between neighbouring measured sizes before Warn calls it
// suspicious (unless the sizes themselves grow more: see Warn).
const baselineJump = 3

// Warn fills r.Warnings with the signs that a transport's unloaded baseline
// is off (a CPU stall during its few RPCs), one line each naming the
// transport:
//
//   - a bucket whose p50 slowdown is below 1: half of its loaded RPCs were
//     faster than the unloaded ones, so the baseline is too high there;
//   - neighbouring measured sizes whose baseline latencies differ by more
//     than 3x and more than twice the sizes' own ratio (a fixed cost plus a
//     per-byte one never grows faster than the size; the margin covers
//     the grant round trips a message past unsched_bytes adds: 7 KB to
//     49 KB at 100 Mbit/s took 7.2x longer for 6.8x the bytes).
func (r *Report) Warn() {
	r.Warnings = nil
	for _, s := range r.Transports {
		for _, b := range s.Buckets {
			if b.Count > 0 && b.P50 > 0 && b.P50 < 1 {
				r.Warnings = append(r.Warnings, fmt.Sprintf("%s: p50 slowdown %.3g < 1 in bucket %s: its unloaded baseline is too high (a CPU stall while measuring it?); rerun with a larger --unloaded", s.Transport, b.P50, b.String()))
			}
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
