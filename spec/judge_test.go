package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestJudgeCaptureCharged: over one switch-wide capture, the late BUSY's
// finding (at the client's RESEND) is charged to the server that owed the
// answer, the client's retransmission at the wrong level to the client;
// Charged keeps each side's own.
func TestJudgeCaptureCharged(t *testing.T) {
	rules, p := hostViewRules(t)
	j := Judge{Profile: "linux", Params: p, Rules: rules}

	b, resend := lateBusy(t)
	rep := j.Capture(Switch, b.events)
	wantViolations(t, rep, "HOMA-RESEND-002", resend)
	if got := Charged(rep.Violations, b.server); len(got) != 1 || got[0].Rule != "HOMA-RESEND-002" {
		t.Errorf("charged to the server: %v, want the late BUSY's HOMA-RESEND-002", got)
	}
	if got := Charged(rep.Violations, b.client); len(got) != 0 {
		t.Errorf("charged to the client: %v, want nothing (it asked in time)", got)
	}

	b = newTrace(t, wire.VersionCurrent)
	b.retransmitAtLevel0()
	rep = j.Capture(Switch, b.events)
	if got := Charged(rep.Violations, b.client, netip.Addr{}); len(got) != 1 || got[0].Rule != "HOMA-RESEND-004" {
		t.Errorf("charged to the client: %v, want one HOMA-RESEND-004", got)
	}
	if got := Charged(rep.Violations, b.server); len(got) != 0 {
		t.Errorf("charged to the server: %v, want nothing", got)
	}
	if got := Charged(rep.Violations); got != nil {
		t.Errorf("charged to no host: %v, want nil", got)
	}
}

// TestNewJudge: the rules are Select's (level and profile applied), the
// parameters kept, and a glob matching nothing is Select's error.
func TestNewJudge(t *testing.T) {
	p := Params{Slack: time.Millisecond}
	j, err := NewJudge("linux", p, "HOMA-RESEND-*", Must)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Select(Rules(), "HOMA-RESEND-*", Must, "linux")
	if len(j.Rules) != len(want) || len(want) == 0 || j.Profile != "linux" || j.Params.Slack != time.Millisecond {
		t.Errorf("NewJudge: %d rules, profile %q, slack %v; want %d, linux, 1ms", len(j.Rules), j.Profile, j.Params.Slack, len(want))
	}
	for _, r := range j.Rules {
		if r.Level != Must || !strings.HasPrefix(r.ID, "HOMA-RESEND-") {
			t.Errorf("rule %s (%s) selected", r.ID, r.Level)
		}
	}
	if _, err := NewJudge("linux", p, "HOMA-NOPE-*", Should); err == nil {
		t.Error("NewJudge with a glob matching nothing: no error")
	}
}
