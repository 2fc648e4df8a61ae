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
// count), no MUST rule without a timing tolerance is violated in any
// host's view, both plan rules hit once, the busiest link carries at least
// 35% of its rate, and a replay of the run folder drops the same packets.
// Timing findings are logged, not asserted: on a loaded machine they can
// come from CPU starvation (go test ./... failed 3 runs of 6 here on
// HOMA-RESEND-001 and HOMA-GRANT-008). The same scenario's timing is
// asserted exactly in the simulator (TestSimW4HalfLoad100m, and at 1
// Gbit/s TestSimW4HalfLoad).
func TestW4HalfLoad100m(t *testing.T) {
	needRoot(t)
	res, dir, text := runExample(t, "w4-half-load-100m.yaml")
	sum := res.Summary
	if sum.Failed != 0 || sum.OK < 400 || len(res.Traffic.Errors) > 0 {
		t.Fatalf("want every RPC (about 450) ok:\n%s", text)
	}
	for _, hr := range res.Hosts {
		for _, v := range hr.Violations {
			if v.Slack == 0 {
				t.Errorf("host %v: %v", hr.Host, v)
			} else {
				t.Logf("timing finding (asserted in the simulator, not here): host %v: %v", hr.Host, v)
			}
		}
	}
	if len(sum.PlanHits) != 2 || sum.PlanHits[0].Hits != 1 || sum.PlanHits[1].Hits != 1 {
		t.Errorf("plan hits %+v, want one each", sum.PlanHits)
	}
	if sum.BusiestDownlinkLoad < 0.35 {
		t.Errorf("the busiest link carried %.0f%% of 100 Mbit/s, want at least 35%% (offered 50%%)", 100*sum.BusiestDownlinkLoad)
	}
	s2, orig, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := runScenario(t, s2, filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	if d := CompareDrops(orig, res2.Drops); d != nil {
		t.Errorf("the replay hit other packets: %v", d)
	}
	if res2.Summary.Failed != 0 {
		var t2 strings.Builder
		res2.Summary.WriteText(&t2)
		t.Errorf("replay: RPCs failed:\n%s", t2.String())
	}
	if left := ourNamespaces(t, runID(t, dir)); len(left) != 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
