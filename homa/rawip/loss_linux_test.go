//go:build linux

package rawip_test

import "testing"

// TestRawIPLoss runs the 1,000-RPC workload of TestRawIPThousandRPCs with
// 5 % random loss, and with bursts of 10 lost packets every 200 sent. Every
// RPC must complete with the right payload and the server must execute
// each request at most once, and every completed one. The timers are those
// of userSpaceParams, which also explains why the kernel-speed defaults
// time out under CPU load. On a machine whose CPUs the hosts do not get,
// received packets wait seconds in a host's socket before it reads them,
// and an RPC whose request was lost then times out by the protocol's own
// rules (homa's TestRestartLoopUnderLag): a timeout is inconclusive, not a
// failure, only when the hosts' measured input lag reached
// restartLagBound.
func TestRawIPLoss(t *testing.T) {
	thousandRPCs(t, []lossCase{{"random-5pct", 0.05, 0, 0}, {"bursts-of-10", 0, 200, 10}})
}
