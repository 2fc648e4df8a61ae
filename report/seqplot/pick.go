package seqplot

import (
	"time"

	"github.com/homatest/homatest/spec"
)

// Latency returns the RPC's latency as the capture shows it: from its first
// packet to the DATA that completed the response (every byte of the
// response seen). It returns 0 for an RPC whose response never completed.
// Unlike the duration homatest rpcs prints (first to last packet), it leaves
// out the NEED_ACK/ACK exchange after the response.
func Latency(r *spec.RPC) time.Duration {
	if !r.Response.Complete {
		return 0
	}
	return r.Response.CompleteTime.Sub(r.First)
}

// Slowest returns the complete RPC (response complete) with the highest
// Latency; ties go to the earlier one in rpcs. It returns nil when no RPC
// completed.
func Slowest(rpcs []*spec.RPC) *spec.RPC {
	var best *spec.RPC
	for _, r := range rpcs {
		if r.Response.Complete && (best == nil || Latency(r) > Latency(best)) {
			best = r
		}
	}
	return best
}
