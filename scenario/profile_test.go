package scenario

import (
	"testing"

	"github.com/homatest/homatest/agent"
)

// TestJudgeProfile: a run's captures are judged in the wire format the
// IUT's hello names (HomaModule linux_6.1.38's agent says "2024"), whatever
// check.profile says; without a wire in the hello the scenario's profile
// stands. Judged under "linux", a linux_6.1.38 lab run's capture read every
// DATA's cutoff_version as 0 and its acks' ports wrong: 262 false MUST and
// SHOULD findings (HOMA-WIRE-005, -PRIO-002, -ACK-004), none under
// linux-2024.
func TestJudgeProfile(t *testing.T) {
	for _, tc := range []struct {
		profile, wire, want string
	}{
		{"linux", "2024", "linux-2024"},
		{"linux", "", "linux"},
		{"linux-2025", "", "linux-2025"},
		{"linux-2025", "current", "linux"},
		{"linux", "2025", "linux-2025"},
	} {
		if got, err := judgeProfile(tc.profile, agent.Hello{Wire: tc.wire}); err != nil || got != tc.want {
			t.Errorf("check.profile %s, hello wire %q: %q, %v; want %q", tc.profile, tc.wire, got, err, tc.want)
		}
	}
	if _, err := judgeProfile("linux", agent.Hello{Wire: "1999"}); err == nil {
		t.Error("hello wire 1999 accepted")
	}
}
