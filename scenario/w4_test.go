package scenario

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestW4HalfLoad100m runs the acceptance scenario scaled to this class of
// machine (testdata/w4-half-load-100m.yaml: reference implementation, 4
// hosts, W4 at 50% of 100 Mbit/s for 5 s, 8 priority queues, a two-rule
// fault plan): every RPC completes, each host's view keeps every MUST
// rule, both plan rules hit once, the busiest link carries at least 35%
// of its rate, and a replay of the run folder drops the same packets.
func TestW4HalfLoad100m(t *testing.T) {
	needRoot(t)
	res, dir, text := runExample(t, "w4-half-load-100m.yaml")
	sum := res.Summary
	if sum.Verdict != VerdictPass || sum.Failed != 0 || sum.OK < 400 {
		t.Fatalf("want every RPC (about 450) ok and a clean check:\n%s", text)
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
	if res2.Summary.Verdict != VerdictPass {
		var t2 strings.Builder
		res2.Summary.WriteText(&t2)
		t.Errorf("replay failed:\n%s", t2.String())
	}
	if left := ourNamespaces(t, runID(t, dir)); len(left) != 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
