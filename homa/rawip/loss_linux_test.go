//go:build linux && rawiploss

// KNOWN FAILING, not part of the test suite: run with -tags rawiploss.
// The 1,000-RPC workload of TestRawIPThousandRPCs with 5 % random loss, and
// with bursts of 10 lost packets every 200: a few to 16 of 1000 RPCs time out
// (1 s of silence) — bursts only when the CPUs are also busy with other
// tests — which the same workload on the in-memory network never does.
// Being investigated (see the session notes); do not count it as passing.

package rawip_test

import "testing"

func TestRawIPRandomLoss(t *testing.T) {
	thousandRPCs(t, []lossCase{{"random-5pct", 0.05, 0, 0}, {"bursts-of-10", 0, 200, 10}})
}
