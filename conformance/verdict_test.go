package conformance

import (
	"fmt"
	"strings"
	"testing"
)

// TestStalledFindingBearsOnVerdict: a stall-explained timing finding
// leaves a spec unjudged only if its rule is part of what the spec
// judges: its own rules, the sections of its labels, and sections no spec
// is labelled in. The rules are those of trial runs beside stress-ng in
// which GRANT-srpt was not judged in its pass and 4 reruns (mostly
// HOMA-ACK-008 NEED_ACKs and HOMA-RESEND-008 rounds, RESENDs there only
// because the stalled tester sent nothing).
func TestStalledFindingBearsOnVerdict(t *testing.T) {
	labelled := map[string]bool{"ACK": true, "GRANT": true, "RESEND": true, "PRIO": true, "WIRE": true, "ID": true}
	own := func(ids ...string) map[string]bool {
		m := map[string]bool{"HOMA-WIRE-001": true, "HOMA-PRIO-001": true} // focusRules, in part
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	srpt := struct {
		own    map[string]bool
		labels []string
	}{own("HOMA-GRANT-007"), []string{"grant", "SHOULD", "HOMA-GRANT-006", "HOMA-GRANT-007"}}
	gap := struct {
		own    map[string]bool
		labels []string
	}{own("HOMA-RESEND-001", "HOMA-RESEND-008"), []string{"resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-PRIO-001"}}
	for _, c := range []struct {
		spec  string
		rule  string
		bears bool
	}{
		// GRANT-srpt: its own rule, and the grant rules it exercises.
		{"GRANT-srpt", "HOMA-GRANT-007", true},
		{"GRANT-srpt", "HOMA-GRANT-020", true}, // SRPT order
		{"GRANT-srpt", "HOMA-GRANT-010", true}, // first GRANT unless max_overcommit
		{"GRANT-srpt", "HOMA-PRIO-001", true},
		{"GRANT-srpt", "HOMA-WIRE-001", true},
		// A section no spec is labelled in: no other judge.
		{"GRANT-srpt", "HOMA-SEND-001", true},
		// The timer rules of other sections: their specs judge them.
		{"GRANT-srpt", "HOMA-ACK-008", false},
		{"GRANT-srpt", "HOMA-ACK-003", false},
		{"GRANT-srpt", "HOMA-RESEND-001", false},
		{"GRANT-srpt", "HOMA-RESEND-008", false},
		{"GRANT-srpt", "HOMA-RESEND-009", false},
		{"GRANT-srpt", "HOMA-RESEND-014", false},
		{"GRANT-srpt", "HOMA-PRIO-002", false},
		// A RESEND spec judges every RESEND rule, labelled or not: a late
		// RESEND (fault late-resend, HOMA-RESEND-014) stays its concern.
		{"RESEND-gap", "HOMA-RESEND-014", true},
		{"RESEND-gap", "HOMA-RESEND-009", true},
		{"RESEND-gap", "HOMA-GRANT-010", false},
	} {
		s := srpt
		if c.spec == "RESEND-gap" {
			s = gap
		}
		if got := bearsOnVerdict(c.rule, s.own, labelled, s.labels); got != c.bears {
			t.Errorf("%s, stall-explained %s: bears on the verdict %v, want %v", c.spec, c.rule, got, c.bears)
		}
	}
	if got := ruleSection("HOMA-GRANT-010"); got != "GRANT" {
		t.Errorf("section of HOMA-GRANT-010: %q", got)
	}
}

// TestJudgedElsewhereNotRerun: a spec whose stall-explained findings are
// all of rules that do not bear on its verdict (TimingElsewhere) is
// judged: passed, not rerun, not inconclusive; the findings are counted
// with the run's timing findings. A rerun with only such findings is
// quiet. Before, every such finding made the spec rerun, and GRANT-srpt
// beside stress-ng was not judged in 4 of 10 runs.
func TestJudgedElsewhereNotRerun(t *testing.T) {
	res := &Result{Specs: []SpecResult{
		{Name: "A elsewhere only", State: "passed", Level: "SHOULD", TimingElsewhere: []string{"HOMA-ACK-008: late (stall)", "HOMA-RESEND-008: soon (stall)"}},
		{Name: "B own then elsewhere", State: "passed", Level: "SHOULD", TimingInconclusive: []string{"HOMA-GRANT-020: (stall)"}},
	}}
	var calls [][]string
	run := func(name string, focus []string) (*Result, error) {
		calls = append(calls, focus)
		var out Result
		for _, f := range focus {
			out.Specs = append(out.Specs, SpecResult{Name: f, State: "passed", TimingElsewhere: []string{"HOMA-RESEND-014: late (stall)"}})
		}
		return &out, nil
	}
	if err := rerunInconclusive("pass-1", res, run); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || strings.Join(calls[0], ",") != "B own then elsewhere" {
		t.Fatalf("reruns %v, want one of B only", calls)
	}
	a, b := res.Specs[0], res.Specs[1]
	if a.State != "passed" || a.Reruns != 0 || a.Rerun != "" {
		t.Errorf("A: state %s reruns %d rerun %q; want passed, not rerun", a.State, a.Reruns, a.Rerun)
	}
	if b.State != "passed" || b.Rerun != "quiet" || len(b.TimingElsewhere) != 1 {
		t.Errorf("B: state %s rerun %q elsewhere %v; want passed, quiet, the rerun's finding kept", b.State, b.Rerun, b.TimingElsewhere)
	}
	tl := Count([]*Result{res}, true)
	if tl.Inconclusive != 0 || tl.TimingInconclusive != 4 || tl.Verdict() != "pass" {
		t.Errorf("tally: inconclusive %d, timing findings %d, verdict %s; want 0, 4, pass", tl.Inconclusive, tl.TimingInconclusive, tl.Verdict())
	}
}

// TestCountsOutcome: each spec counts in exactly one column of the area
// tables (Counts), as the verdict line (Tally) counts it: a failed SHOULD
// spec, or a passed one with another rule's SHOULD finding, is warned
// without --strict and failed with it; a spec that ran but was never
// judged is inconclusive, even with a warning, and only a spec left out
// is skipped. Before, the report page counted a warning as failed and an
// inconclusive spec as skipped.
func TestCountsOutcome(t *testing.T) {
	specs := []SpecResult{
		{Area: "grant", Level: "MUST", State: "passed"},
		{Area: "grant", Level: "MUST", State: "failed"},
		{Area: "grant", Level: "MUST", State: "error"},
		{Area: "grant", Level: "SHOULD", State: "failed"},
		{Area: "grant", Level: "SHOULD", State: "error"},
		{Area: "ack", Level: "MUST", State: "passed", OtherShould: []string{"HOMA-ACK-008: late"}},
		{Area: "ack", Level: "SHOULD", State: "failed", Failure: "x; " + otherMustFailure},
		{Area: "ack", Level: "MUST", State: "unsupported"},
		{Area: "resend", Level: "MUST", State: "inconclusive"},
		{Area: "resend", Level: "MUST", State: "inconclusive", OtherShould: []string{"HOMA-RESEND-009: late"}},
		{Area: "resend", Level: "MUST", State: "skipped"},
	}
	for _, c := range []struct {
		strict bool
		want   []AreaCounts
	}{
		{false, []AreaCounts{
			{"ack", Counts{Warned: 1, Failed: 1, Unsupported: 1}},
			{"grant", Counts{Passed: 1, Failed: 2, Warned: 2}},
			{"resend", Counts{Inconclusive: 2, Skipped: 1}},
		}},
		{true, []AreaCounts{
			{"ack", Counts{Failed: 2, Unsupported: 1}},
			{"grant", Counts{Passed: 1, Failed: 4}},
			{"resend", Counts{Inconclusive: 1, Failed: 1, Skipped: 1}},
		}},
	} {
		got := CountAreas(specs, c.strict)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("strict %v: areas %+v, want %+v", c.strict, got, c.want)
		}
		var sum Counts
		for _, a := range got {
			sum.Passed += a.Passed
			sum.Failed += a.Failed
			sum.Warned += a.Warned
			sum.Unsupported += a.Unsupported
			sum.Inconclusive += a.Inconclusive
			sum.Skipped += a.Skipped
		}
		if n := sum.Passed + sum.Failed + sum.Warned + sum.Unsupported + sum.Inconclusive + sum.Skipped; n != len(specs) {
			t.Errorf("strict %v: columns sum to %d, want %d specs", c.strict, n, len(specs))
		}
		tl := Count([]*Result{{Specs: specs}}, c.strict)
		if tl.Failing != sum.Failed || tl.Warned != sum.Warned || tl.Inconclusive != sum.Inconclusive || tl.Unsupported != sum.Unsupported ||
			tl.Run != sum.Passed+sum.Failed+sum.Warned {
			t.Errorf("strict %v: tally %+v disagrees with the columns %+v", c.strict, tl, sum)
		}
	}
}

// TestOwnRulesShouldOnlyByLabel: every active spec owns the wire, id and
// control-priority MUST rules, and a SHOULD rule only by its labels: an
// IUT breaking HOMA-WIRE-016 (segment sizes, SHOULD) failed every spec,
// MUST ones too, with or without --strict, where run --help says a SHOULD
// finding outside a spec's own rules is only a warning.
func TestOwnRulesShouldOnlyByLabel(t *testing.T) {
	grant, err := ownRules("HOMA-GRANT-010", "linux")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"HOMA-GRANT-010": true, "HOMA-WIRE-001": true, "HOMA-ID-003": true, "HOMA-PRIO-001": true, "HOMA-WIRE-016": false, "HOMA-WIRE-012": false, "HOMA-GRANT-013": false} {
		if grant[id] != want {
			t.Errorf("a spec labelled HOMA-GRANT-010 owns %s: %v, want %v", id, grant[id], want)
		}
	}
	wire, err := ownRules("HOMA-WIRE-016", "linux")
	if err != nil {
		t.Fatal(err)
	}
	if !wire["HOMA-WIRE-016"] || !wire["HOMA-WIRE-001"] {
		t.Errorf("a spec labelled HOMA-WIRE-016 does not own it (or HOMA-WIRE-001): %v", wire)
	}
	if _, err := ownRules("", "linux"); err != nil {
		t.Errorf("a spec without rule labels: %v", err)
	}
}
