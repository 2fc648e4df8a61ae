package cli

import (
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
)

// TestRunReportUnsupported: unsupported specs are one line per reason
// (the capabilities the manifest lacks, with each one's count, and the
// specs by short name; another reason on its own line), not a line per
// spec, and the verdict line counts the specs run and unsupported.
func TestRunReportUnsupported(t *testing.T) {
	spec := func(name, state, failure string) conformance.SpecResult {
		return conformance.SpecResult{Name: name, Area: "grant", Level: "MUST", State: state, Failure: failure}
	}
	lacks := func(c string) string { return `unsupported: the IUT does not declare capability "` + c + `"` }
	p := &conformance.Result{Env: "x", Specs: []conformance.SpecResult{
		spec("grants GRANT-long-request: a long request draws GRANTs", "unsupported", lacks("grants")),
		spec("grants GRANT-srpt: SRPT order", "unsupported", lacks("grants")),
		spec("cutoffs CUTOFFS-applied: CUTOFFS applied", "unsupported", lacks("cutoffs")),
		spec("workload W1-incast: many clients", "unsupported", "unsupported: this environment builds no bench of IUT hosts"),
		spec("resend RESEND-gap: a gap draws a RESEND", "passed", ""),
		spec("ack NEED_ACK-answered: NEED_ACK draws an ACK", "passed", ""),
		spec("ack ACK-late: ack timing", "skipped", ""),
	}}
	o := &runOpts{output: "text", artifacts: "runs/x", impl: "m.yaml", env: "sim"}
	var b strings.Builder
	if err := o.writePass(&b, 1, 1, p); err != nil {
		t.Fatal(err)
	}
	if err := o.report(&b, []*conformance.Result{p}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pass 1/1: x; 6 specs in 0.0s\n", // the skipped one (left out by --focus, say) not counted
		`3 specs unsupported by this IUT's manifest, for the capabilities it does not declare, "grants" (2), "cutoffs" (1): GRANT-long-request, GRANT-srpt, CUTOFFS-applied` + "\n",
		"1 spec unsupported: this environment builds no bench of IUT hosts: W1-incast\n",
		"\nPASS (2 specs run, 4 unsupported); artifacts in runs/x",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "UNSUPPORTED") {
		t.Errorf("a line per unsupported spec:\n%s", out)
	}
	// A failing MUST spec: the verdict line still counts.
	p.Specs[4] = spec("resend RESEND-gap: a gap draws a RESEND", "failed", "no RESEND")
	b.Reset()
	o.report(&b, []*conformance.Result{p})
	if !strings.Contains(b.String(), "\nFAIL (1 of 1 passes; 2 specs run, 4 unsupported); artifacts in runs/x") {
		t.Errorf("failing report:\n%s", b.String())
	}
	// A failing SHOULD spec is one warning, in the singular.
	p.Specs[4].Level = "SHOULD"
	b.Reset()
	o.report(&b, []*conformance.Result{p})
	if !strings.Contains(b.String(), "\nPASS (2 specs run, 4 unsupported) with 1 SHOULD warning (--strict fails on them)") {
		t.Errorf("report with a SHOULD warning:\n%s", b.String())
	}
}
