package conformance

import (
	"fmt"
	"regexp"
	"testing"
)

// TestSpecResultFails: a failed MUST spec fails the pass; a failed SHOULD
// spec is a warning unless strict, except one a MUST finding of another
// rule failed; a passed spec with SHOULD findings of other rules
// (OtherShould) is a warning that fails under strict.
func TestSpecResultFails(t *testing.T) {
	otherMust := otherMustFailure + ", on packets the IUT sent\nHOMA-ACK-007 frame 3: ..."
	for _, c := range []struct {
		name               string
		s                  SpecResult
		fails, strict, war bool
	}{
		{"passed", SpecResult{Level: "MUST", State: "passed"}, false, false, false},
		{"failed MUST", SpecResult{Level: "MUST", State: "failed", Failure: "no GRANT"}, true, true, false},
		{"error MUST", SpecResult{Level: "MUST", State: "error"}, true, true, false},
		{"failed SHOULD", SpecResult{Level: "SHOULD", State: "failed", Failure: "late ACK"}, false, true, true},
		{"SHOULD failed by another MUST rule", SpecResult{Level: "SHOULD", State: "failed", Failure: otherMust}, true, true, false},
		{"passed with another rule's SHOULD", SpecResult{Level: "MUST", State: "passed", OtherShould: []string{"HOMA-GRANT-011 frame 9: ..."}}, false, true, true},
		{"unsupported", SpecResult{Level: "MUST", State: "unsupported", OtherShould: nil}, false, false, false},
	} {
		if got := c.s.Fails(false); got != c.fails {
			t.Errorf("%s: Fails(false) = %v, want %v", c.name, got, c.fails)
		}
		if got := c.s.Fails(true); got != c.strict {
			t.Errorf("%s: Fails(true) = %v, want %v", c.name, got, c.strict)
		}
		if got := c.s.Warns(); got != c.war {
			t.Errorf("%s: Warns() = %v, want %v", c.name, got, c.war)
		}
	}
	r := Result{Specs: []SpecResult{{Level: "SHOULD", State: "failed"}, {Level: "MUST", State: "passed", OtherShould: []string{"x"}}, {Level: "MUST", State: "failed"}}}
	if got := r.Failing(false); got != 1 {
		t.Errorf("Failing(false) = %d, want 1", got)
	}
	if got := r.Failing(true); got != 3 {
		t.Errorf("Failing(true) = %d, want 3", got)
	}
}

// TestFocusRegexp: a spec's short name selects that spec alone, not the
// specs whose names extend it (--focus WORKLOAD-incast, the rerun command
// of a failed WORKLOAD-incast, used to run WORKLOAD-incast-mixed too);
// other text still selects by containment.
func TestFocusRegexp(t *testing.T) {
	names := []string{
		"workloads WORKLOAD-incast: 200 KB requests from three clients to one server all complete",
		"workloads WORKLOAD-incast-mixed: W4 requests (capped at 300 KB) from four clients to one server",
		"retransmission RESEND-busy: a RESEND to a server still receiving the request is answered with BUSY",
		"retransmission RESEND-busy-held: a server that answered BUSY still holds the RPC",
	}
	for _, c := range []struct {
		focus string
		want  []int
	}{
		{"WORKLOAD-incast", []int{0}},
		{"WORKLOAD-incast-mixed", []int{1}},
		{"RESEND-busy", []int{2}},
		{"incast", []int{0, 1}},
		{"BUSY", []int{2, 3}},
		{"a RESEND", []int{2}},
		{"(capped", []int{1}},
	} {
		re := regexp.MustCompile(focusRegexp(c.focus))
		var got []int
		for i, n := range names {
			if re.MatchString(suiteDescription + " " + n) { // what Ginkgo matches
				got = append(got, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("--focus %q (%s) selects %v, want %v", c.focus, re, got, c.want)
		}
	}
}

func TestFocusHint(t *testing.T) {
	for _, c := range []struct {
		focus []string
		want  string
	}{
		{[]string{"GRANT-long"}, "--focus GRANT-long names no spec; the specs whose short names begin with it: GRANT-long-request, GRANT-long-response (give each with a --focus of its own)"},
		{[]string{"RESEND-ga"}, "--focus RESEND-ga names no spec; the specs whose short names begin with it: RESEND-gap, RESEND-gap-duplicates (give each with a --focus of its own)"},
		{[]string{"RESEND-gapz"}, "--focus RESEND-gapz names no spec (a text shaped like a spec's short name selects that spec alone; any other text, such as a word of its name, selects the specs whose names contain it)"},
		{[]string{"incast", "a RESEND"}, ""},
		{[]string{"GRANT-long-"}, ""},
		{[]string{"GRANT-*"}, `--focus "GRANT-*" is plain text, not a glob or regexp: give text of the specs' names, such as a short name (GRANT-srpt) or a word (srpt); --rules takes rule-ID globs`},
		{[]string{"RESEND-.*"}, `--focus "RESEND-.*" is plain text, not a glob or regexp: give text of the specs' names, such as a short name (GRANT-srpt) or a word (srpt); --rules takes rule-ID globs`},
		{[]string{"grant-long"}, `--focus "grant-long": no spec's name contains it as typed (case matters); in another case: GRANT-long-request, GRANT-long-response`},
		{[]string{"grants"}, ""}, // contained: the other filters left its specs out
	} {
		specs := []SpecResult{{Name: "grants GRANT-long-request: x"}, {Name: "grants GRANT-long-response: x"}, {Name: "retransmission RESEND-gap: x"},
			{Name: "retransmission RESEND-gap-duplicates: x"}, {Name: "grants GRANT-srpt: x"}}
		if got := FocusHint(c.focus, specs); got != c.want {
			t.Errorf("FocusHint(%q) = %q, want %q", c.focus, got, c.want)
		}
	}
	// The containment the hint proposes selects what it says; Ginkgo
	// matches the suite's description and the full name.
	for _, c := range []struct {
		focus, name string
		want        bool
	}{
		{"GRANT-long-", "grants GRANT-long-request: x", true},
		{"GRANT-long-", "grants GRANT-long-response: x", true},
		{"GRANT-long-", "grants GRANT-srpt-priority: x", false},
		{"GRANT-srpt", "grants GRANT-srpt: x", true},
		{"GRANT-srpt", "grants GRANT-srpt-priority: x", false},
		{"GRANT-srpt", "GRANT-srpt: x", true},
		{"grants GRANT", "grants GRANT-srpt: x", true},
		// Text of the suite's description is no spec's: "--focus Homa"
		// selected every spec.
		{"Homa", "grants GRANT-srpt: x", false},
		{"conformance", "grants GRANT-srpt: x", false},
		{"conformance grants", "grants GRANT-srpt: x", false},
		{"Homa", "grants GRANT-srpt: a Homa message", true},
	} {
		if got := regexp.MustCompile(focusRegexp(c.focus)).MatchString(suiteDescription + " " + c.name); got != c.want {
			t.Errorf("--focus %q on %q: %v, want %v", c.focus, c.name, got, c.want)
		}
	}
}

// TestShouldLine: a SHOULD finding of one of the result's own rules
// (RUN-capture lists its findings' rules as its own) reads "SHOULD
// finding:", not "of another rule" (a trial saw the rules line name
// HOMA-GRANT-013 and each finding call it another rule); a spec's
// finding of a rule outside its own keeps "of another rule", and the
// "… and N more" line follows the list's kind.
func TestShouldLine(t *testing.T) {
	own := SpecResult{Rules: []string{"HOMA-GRANT-013"}, OtherShould: []string{"HOMA-GRANT-013 frame 9: y", moreShould + "4 more"}}
	other := SpecResult{Rules: []string{"HOMA-GRANT-001"}, OtherShould: []string{"HOMA-GRANT-013 frame 9: y", moreShould + "4 more"}}
	for _, c := range []struct {
		s    SpecResult
		l    string
		want string
	}{
		{own, own.OtherShould[0], "SHOULD finding: HOMA-GRANT-013 frame 9: y"},
		{own, own.OtherShould[1], "… and 4 more SHOULD findings"},
		{other, other.OtherShould[0], "SHOULD finding of another rule: HOMA-GRANT-013 frame 9: y"},
		{other, other.OtherShould[1], "… and 4 more SHOULD findings of other rules"},
	} {
		if got := c.s.ShouldLine(c.l); got != c.want {
			t.Errorf("ShouldLine(%q) with rules %v = %q, want %q", c.l, c.s.Rules, got, c.want)
		}
	}
}
