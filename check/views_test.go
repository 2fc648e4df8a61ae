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

// TestExcuseMergedViews: when one host's view of a ports capture shows
// two instances of its host interleaved (spec.Report.Merged), every
// view's violations are inconclusive (spec.CauseMerged), counted so in
// the rule table and downgrades, and the hosts' lines count none. A ports
// capture merged with itself got the merged WARNING ("every violation is
// inconclusive") from 198.18.0.1's view while the other hosts' views
// kept 266 MUST violations and failed the check.
func TestExcuseMergedViews(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	merged := &spec.Report{Merged: &spec.Merged{Frame: 9, Host: a.String(), Why: "two counters"},
		Rules: []spec.RuleResult{{ID: "HOMA-RESEND-010", Checked: 4, Passed: 3, Inconclusive: 1}}}
	other := &spec.Report{Rules: []spec.RuleResult{{ID: "HOMA-RESEND-010", Checked: 5, Passed: 3, Violated: 2}},
		Violations: []spec.Finding{{Rule: "HOMA-RESEND-010", Frame: 4, ChargedTo: b, Why: "repeats"}, {Rule: "HOMA-RESEND-010", Frame: 8, ChargedTo: b, Why: "repeats"}}}
	hrs := []spec.HostReport{{Host: a, Report: merged}, {Host: b, Report: other, Violations: other.Violations}}
	out := mergeHostReports(hrs)
	hosts := []HostResult{{Host: a.String()}, {Host: b.String(), Violations: 2}}
	excuseMergedViews(out, hosts)
	if len(out.Violations) != 0 || hosts[1].Violations != 0 {
		t.Fatalf("violations %v, host count %d after the merged diagnosis, want none", out.Violations, hosts[1].Violations)
	}
	rr := out.Rules[0]
	if rr.Violated != 0 || rr.Inconclusive != 3 || rr.Checked != 9 {
		t.Errorf("rule counts %+v, want 0 violated, 3 inconclusive, 9 checked", rr)
	}
	if len(out.Downgrades) != 1 || out.Downgrades[0] != (spec.DowngradeCount{Rule: "HOMA-RESEND-010", Cause: spec.CauseMerged, Count: 2, Frame: 4}) {
		t.Errorf("downgrades %+v, want 2 of HOMA-RESEND-010 for %q from frame 4", out.Downgrades, spec.CauseMerged)
	}
	n := 0
	for _, f := range out.Inconclusive {
		if f.Cause == spec.CauseMerged && f.Why == "repeats (capture merges two captures: frame 9 shows two instances of 198.18.0.1 interleaved)" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("inconclusive findings %+v, want the 2 with the merged cause in their text", out.Inconclusive)
	}
}
