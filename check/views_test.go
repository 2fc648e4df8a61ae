package check

import (
	"net/netip"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestMergeHostReportsKeepsViewDrops: a port's view that shows its own
// loss (spec.Report.CaptureDropsShown) excuses findings as the capture's
// drops; the merged report keeps that count and evidence, so check says
// where the drops come from (a run's per-port capture was INCOMPLETE with
// no word on drops, and check exited 0).
func TestMergeHostReportsKeepsViewDrops(t *testing.T) {
	a := &spec.Report{CaptureDrops: 3, CaptureDropsShown: "frame 609: a response held whole with bytes never seen", CaptureDropExcused: 16, CaptureDropLimit: 18}
	b := &spec.Report{CaptureDropExcused: 0}
	out := mergeHostReports([]spec.HostReport{
		{Host: netip.MustParseAddr("198.18.0.1"), Report: b},
		{Host: netip.MustParseAddr("198.18.0.2"), Report: a},
	})
	if out.CaptureDrops != 3 || out.CaptureDropsShown != a.CaptureDropsShown || out.CaptureDropExcused != 16 {
		t.Fatalf("merged drops %d shown %q excused %d, want 3, the view's evidence, 16", out.CaptureDrops, out.CaptureDropsShown, out.CaptureDropExcused)
	}
	if from, hint := dropsHint(out, pcap.Stats{}, 0); from == "" || hint == "" {
		t.Errorf("dropsHint of the merged report: %q %q, want where the drops come from and what they did", from, hint)
	}
}

// TestMergeHostReportsListsCountedInconclusive: the merged report lists
// inconclusive findings of every rule it counts inconclusive, at most
// spec.MaxFindings per rule. A tester's view counted 150 of an IUT's
// GRANTs inconclusive (charged to the IUT, judged again in its own view);
// the merge listed none of them, keeping only findings charged to the
// view's own host.
func TestMergeHostReportsListsCountedInconclusive(t *testing.T) {
	iut, tester := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	finds := func(rule string, n, frame0 int, to netip.Addr) []spec.Finding {
		var fs []spec.Finding
		for i := range n {
			fs = append(fs, spec.Finding{Rule: rule, Frame: frame0 + 2*i, ChargedTo: to})
		}
		return fs
	}
	own := &spec.Report{Rules: []spec.RuleResult{{ID: "HOMA-GRANT-012", Inconclusive: 80}, {ID: "HOMA-SEND-001", Inconclusive: 1}},
		Inconclusive: append(finds("HOMA-GRANT-012", 80, 1, iut), finds("HOMA-SEND-001", 1, 7, iut)...)}
	other := &spec.Report{Rules: []spec.RuleResult{{ID: "HOMA-GRANT-012", Inconclusive: 150}},
		Inconclusive: finds("HOMA-GRANT-012", spec.MaxFindings, 2, iut)}
	out := mergeHostReports([]spec.HostReport{{Host: iut, Report: own}, {Host: tester, Report: other}})
	listed := map[string]int{}
	for _, f := range out.Inconclusive {
		listed[f.Rule]++
	}
	for _, rr := range out.Rules {
		want := min(rr.Inconclusive, spec.MaxFindings)
		if listed[rr.ID] != want {
			t.Errorf("%s: %d inconclusive counted, %d listed; want %d listed", rr.ID, rr.Inconclusive, listed[rr.ID], want)
		}
	}
	if out.Rules[0].Inconclusive != 230 {
		t.Errorf("HOMA-GRANT-012 counted %d inconclusive, want 230 (80 + 150)", out.Rules[0].Inconclusive)
	}
	for i := 1; i < len(out.Inconclusive); i++ {
		if out.Inconclusive[i].Frame < out.Inconclusive[i-1].Frame {
			t.Fatalf("inconclusive findings out of frame order at %d: %d after %d", i, out.Inconclusive[i].Frame, out.Inconclusive[i-1].Frame)
		}
	}
}
