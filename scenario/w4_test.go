package scenario

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestW4HalfLoad100m runs the acceptance scenario scaled to this class of
// machine (testdata/w4-half-load-100m.yaml: reference implementation, 4
// hosts, W4 at 50% of 100 Mbit/s for 5 s, 8 priority queues, a two-rule
// fault plan) in network namespaces, in real time, and asserts function:
// every RPC completes (with the right payload, executed once: the agents
// count; an RPC that timed out while a measured stall overlapped it is
// inconclusive, Summary.TimedOutInStall), no MUST rule is violated in any host's view, both plan rules hit
// once, the busiest link carries at least 35% of its rate (unless measured
// stalls slowed the hosts), and a replay of
// the run folder passes with both plan rules hitting once. A timing
// finding that a measured stall explains is timing-inconclusive (logged,
// not charged): on a loaded machine CPU starvation breaks timing rules
// (go test ./... failed 3 runs of 6 here on HOMA-RESEND-001 and
// HOMA-GRANT-008 before stalls were measured). The same scenario's timing
// is asserted exactly in the simulator (TestSimW4HalfLoad100m, and at 1
// Gbit/s TestSimW4HalfLoad).
func TestW4HalfLoad100m(t *testing.T) {
	needRoot(t)
	res, dir, text := runExample(t, "w4-half-load-100m.yaml")
	sum := res.Summary
	t.Logf("%d stalls measured, %d timing findings inconclusive, %d RPCs timed out during stalls", sum.Stalls, sum.TimingInconclusive, sum.TimedOutInStall)
	if sum.Failed != 0 || sum.RPCs < 400 || len(res.Traffic.Errors) > 0 {
		t.Fatalf("want every RPC (about 450) ok:\n%s", text)
	}
	for _, hr := range res.Hosts {
		for _, v := range hr.Violations {
			t.Errorf("host %v: %v", hr.Host, v)
		}
	}
	if len(sum.PlanHits) != 2 || sum.PlanHits[0].Hits != 1 || sum.PlanHits[1].Hits != 1 {
		t.Errorf("plan hits %+v, want one each", sum.PlanHits)
	}
	if sum.BusiestDownlinkLoad < 0.35 {
		// A rate over wall time: hosts kept from running offer and carry
		// less, so measured stalls make it inconclusive.
		if sum.Stalls > 0 {
			t.Logf("inconclusive: the busiest link carried %.0f%% of 100 Mbit/s (offered 50%%) while %d stalls were measured", 100*sum.BusiestDownlinkLoad, sum.Stalls)
		} else {
			t.Errorf("the busiest link carried %.0f%% of 100 Mbit/s, want at least 35%% (offered 50%%) on a quiet machine", 100*sum.BusiestDownlinkLoad)
		}
	}
	s2, orig, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := runScenario(t, s2, filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	// In real time the plan's RPC ordinals follow the order in which the
	// switch first sees RPCs, which host scheduling can change, so the
	// replay may act on other packets (the plan still hits once per
	// rule); byte-identical replays are asserted in simulated time.
	if d := CompareDrops(orig, res2.Drops); d != nil {
		t.Logf("the replay acted on other packets (real-time scheduling): %v", d)
	}
	if len(res2.Summary.PlanHits) != 2 || res2.Summary.PlanHits[0].Hits != 1 || res2.Summary.PlanHits[1].Hits != 1 {
		t.Errorf("replay plan hits %+v, want one each", res2.Summary.PlanHits)
	}
	t.Logf("replay: %d RPCs timed out during stalls", res2.Summary.TimedOutInStall)
	if res2.Summary.Failed != 0 {
		var t2 strings.Builder
		res2.Summary.WriteText(&t2)
		t.Errorf("replay: RPCs failed:\n%s", t2.String())
	}
	if left := ourNamespaces(t, runID(t, dir)); len(left) != 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
