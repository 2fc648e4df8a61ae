package html

import (
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
