package html

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
)

// TestRunPageShouldIsWarning: a failed SHOULD spec is a warning without
// --strict, as in run's text and verdict (a trial's page said "9 of 29
// specs failed" over "Failures (10)"), and a failure with it.
func TestRunPageShouldIsWarning(t *testing.T) {
	pass := &conformance.Result{Env: "sim", Specs: []conformance.SpecResult{
		{Name: "GRANT-long-request", Level: "MUST", State: "failed", Failure: "no GRANT", Rules: []string{"HOMA-GRANT-001"}},
		{Name: "GRANT-srpt", Level: "SHOULD", State: "failed", Failure: "granted out of SRPT order", Rules: []string{"HOMA-GRANT-011"}},
		{Name: "RESEND-gap", Level: "MUST", State: "passed", Rules: []string{"HOMA-RESEND-001"}},
	}}
	pg := RunPage([]*conformance.Result{pass}, RunInput{})
	if len(pg.Failures) != 1 || pg.Failures[0].Title != "GRANT-long-request" {
		t.Fatalf("without --strict: failures %+v, want only the MUST spec", pg.Failures)
	}
	warned := false
	for _, n := range pg.Notes {
		warned = warned || strings.HasPrefix(n, "WARN (SHOULD) GRANT-srpt: granted out of SRPT order")
	}
	if !warned {
		t.Errorf("without --strict: no warning note for the SHOULD spec: %q", pg.Notes)
	}
	if pg = RunPage([]*conformance.Result{pass}, RunInput{Strict: true}); len(pg.Failures) != 2 {
		t.Errorf("--strict: %d failures, want 2 (the SHOULD spec fails too)", len(pg.Failures))
	}
}

// TestRunPageAreaTable: the "Specs by area" table counts each spec once,
// as the verdict line does (conformance.Counts): a failed SHOULD spec
// without --strict is warned, not failed (the verdict said "PASS with 1
// SHOULD warning" over a table row with 1 failed); a spec that ran but
// was never judged is not judged, not skipped; only a spec left out is
// skipped. The rule table counts warnings apart too, and a passed spec
// failed under --strict by another rule's SHOULD finding is a failure
// with that finding, as in the verdict's count.
func TestRunPageAreaTable(t *testing.T) {
	pass := &conformance.Result{Env: "sim", Specs: []conformance.SpecResult{
		{Name: "GRANT-long-request", Area: "grant", Level: "MUST", State: "passed", Rules: []string{"HOMA-GRANT-001"}},
		{Name: "GRANT-srpt", Area: "grant", Level: "SHOULD", State: "failed", Failure: "granted out of SRPT order", Rules: []string{"HOMA-GRANT-011"}},
		{Name: "RESEND-gap", Area: "resend", Level: "MUST", State: "inconclusive", Failure: "timing-inconclusive: not judged", Rules: []string{"HOMA-RESEND-001"}},
		{Name: "RESEND-busy", Area: "resend", Level: "MUST", State: "skipped", Rules: []string{"HOMA-RESEND-005"}},
		{Name: "NEED_ACK-answered", Area: "ack", Level: "MUST", State: "passed", OtherShould: []string{"HOMA-ACK-008: late"}, Rules: []string{"HOMA-ACK-001"}},
	}}
	table := func(pg *Page, title string) [][]string {
		for _, tb := range pg.Tables {
			if tb.Title == title {
				rows := [][]string{tb.Head}
				for _, r := range tb.Rows {
					rows = append(rows, r.Cells)
				}
				return rows
			}
		}
		t.Fatalf("no table %q", title)
		return nil
	}
	for _, c := range []struct {
		strict        bool
		areas, grants string
		failures      int
	}{
		{false, "[[area passed failed warned unsupported not judged skipped] [ack 0 0 1 0 0 0] [grant 1 0 1 0 0 0] [resend 0 0 0 0 1 1]]",
			"[HOMA-GRANT-011 SHOULD 1 0 0 1]", 0},
		{true, "[[area passed failed warned unsupported not judged skipped] [ack 0 1 0 0 0 0] [grant 1 1 0 0 0 0] [resend 0 0 0 0 1 1]]",
			"[HOMA-GRANT-011 SHOULD 1 0 1 0]", 2},
	} {
		pg := RunPage([]*conformance.Result{pass}, RunInput{Strict: c.strict})
		if got := fmt.Sprint(table(pg, "Specs by area")); got != c.areas {
			t.Errorf("strict %v: specs by area %s, want %s (verdict %q)", c.strict, got, c.areas, pg.Verdict)
		}
		if got := fmt.Sprint(table(pg, "Specs by rule")[3]); got != c.grants {
			t.Errorf("strict %v: HOMA-GRANT-011's row %s, want %s", c.strict, got, c.grants)
		}
		if len(pg.Failures) != c.failures {
			t.Errorf("strict %v: %d failures, want %d (verdict %q)", c.strict, len(pg.Failures), c.failures, pg.Verdict)
		}
	}
	pg := RunPage([]*conformance.Result{pass}, RunInput{Strict: true})
	if len(pg.Failures) == 2 && pg.Failures[1].Observed != "SHOULD finding of another rule: HOMA-ACK-008: late" {
		t.Errorf("--strict: the ACK spec's failure observed %q, want its SHOULD finding", pg.Failures[1].Observed)
	}
}

// TestRunPageRuleLevels: a spec's rules each show their own level from
// the rule book, on its failure and in the rule table, not the spec's (a
// MUST spec's SHOULD rule HOMA-GRANT-011 read "Rules (MUST)"); a rule the
// book lacks shows the spec's.
func TestRunPageRuleLevels(t *testing.T) {
	pass := &conformance.Result{Env: "sim", Specs: []conformance.SpecResult{
		{Name: "GRANT-priority", Area: "grant", Level: "MUST", State: "failed", Failure: "wrong priority", Rules: []string{"HOMA-GRANT-011", "HOMA-GRANT-007", "HOMA-NO-SUCH-999"}},
	}}
	pg := RunPage([]*conformance.Result{pass}, RunInput{})
	var levels []string
	for _, tb := range pg.Tables {
		if tb.Title == "Specs by rule" {
			for _, r := range tb.Rows {
				levels = append(levels, r.Cells[0]+" "+r.Cells[1])
			}
		}
	}
	if got, want := strings.Join(levels, ", "), "HOMA-GRANT-007 MUST, HOMA-GRANT-011 SHOULD, HOMA-NO-SUCH-999 MUST"; got != want {
		t.Errorf("rule table levels %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := Write(&b, pg); err != nil {
		t.Fatal(err)
	}
	want := "<code>HOMA-GRANT-011</code> (SHOULD), <code>HOMA-GRANT-007</code> (MUST), <code>HOMA-NO-SUCH-999</code> (MUST)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("page lacks %q", want)
	}
}

// TestRunPageNamesViolatedRule: a spec that failed on another rule's
// finding (GRANT-waiting-alive, whose rules are two RESEND rules,
// failing on HOMA-GRANT-009) names that rule and its statement on its
// card, not only its own rules.
func TestRunPageNamesViolatedRule(t *testing.T) {
	pass := &conformance.Result{Env: "sim", Specs: []conformance.SpecResult{
		{Name: "GRANT-waiting-alive", Level: "MUST", State: "failed", Rules: []string{"HOMA-RESEND-009", "HOMA-RESEND-019"},
			Failure: "HOMA-GRANT-009 MUST frame 40: GRANT offset 30000 below the 40000 granted before (frame 31)"},
	}}
	pg := RunPage([]*conformance.Result{pass}, RunInput{})
	if len(pg.Failures) != 1 {
		t.Fatalf("failures %+v, want one", pg.Failures)
	}
	f := pg.Failures[0]
	if len(f.Violated) != 1 || f.Violated[0] != "HOMA-GRANT-009" {
		t.Errorf("violated %v, want [HOMA-GRANT-009]", f.Violated)
	}
	for _, id := range []string{"HOMA-RESEND-009", "HOMA-RESEND-019", "HOMA-GRANT-009"} {
		if !strings.Contains(f.Expected, id+" (") {
			t.Errorf("expected text lacks %s's statement:\n%s", id, f.Expected)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, pg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<div class="label">Violated</div><div><code>HOMA-GRANT-009</code>`) {
		t.Errorf("the page does not name the violated rule HOMA-GRANT-009")
	}
	// A spec failing on its own rule lists no other.
	pass.Specs[0].Failure = "HOMA-RESEND-009 MUST frame 40: no answer"
	if v := RunPage([]*conformance.Result{pass}, RunInput{}).Failures[0].Violated; v != nil {
		t.Errorf("violated %v for a failure of the spec's own rule, want none", v)
	}
}
