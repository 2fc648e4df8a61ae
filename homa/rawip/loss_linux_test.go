//go:build linux && rawiploss

// NOT YET RELIABLE, not part of the test suite: run with -tags rawiploss.
// The 1,000-RPC workload of TestRawIPThousandRPCs with 5 % random loss, and
// with bursts of 10 lost packets every 200. Since retransmissions are served
// round-robin these pass on an idle machine (8 of 8 runs), but while other
// test binaries load both CPUs about one run in five times out one RPC of
// 1,000 ("no response bytes"). Kept out of CI until that is understood.

package rawip_test

import "testing"

func TestRawIPRandomLoss(t *testing.T) {
	thousandRPCs(t, []lossCase{{"random-5pct", 0.05, 0, 0}, {"bursts-of-10", 0, 200, 10}})
}
