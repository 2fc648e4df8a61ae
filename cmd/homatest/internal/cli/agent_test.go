package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/homatest/homatest/agent"
)

// runAgent runs "homatest agent ARGS" with stdin and returns stdout and the
// exit code.
func runAgent(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := New()
	var out, errb bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append([]string{"agent"}, args...))
	err := cmd.Execute()
	return out.String(), ExitCode(err)
}

func TestAgentCmdSession(t *testing.T) {
	out, code := runAgent(t, `{"op":"stats","seq":1}
{"op":"hello","seq":2,"protocol":1,"addrs":["198.18.0.1"],"faults":["no-grants"]}
{"op":"shutdown","seq":3}
`, "--impl", "linux")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	var evs []agent.Event
	for _, l := range lines {
		ev, err := agent.DecodeEvent([]byte(l))
		if err != nil {
			t.Fatalf("stdout carries a non-protocol line: %v", err)
		}
		evs = append(evs, ev)
	}
	if evs[0].Event != agent.EventError || evs[0].Seq != 1 || !strings.Contains(evs[0].Error, "send hello first") {
		t.Errorf("stats before hello: %+v", evs[0])
	}
	if evs[1].Event != agent.EventError || !strings.Contains(evs[1].Error, "no fault knobs") {
		t.Errorf("linux hello with faults: %+v", evs[1])
	}
	if evs[2].Event != agent.EventBye || evs[2].Seq != 3 {
		t.Errorf("shutdown: %+v", evs[2])
	}
}

func TestAgentCmdBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--impl", "bsd"}, {"--log-level", "loud"}} {
		if _, code := runAgent(t, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
	// Input that ends at once: exit 0 without output.
	if out, code := runAgent(t, "", "--impl", "ref"); code != 0 || out != "" {
		t.Errorf("empty input: exit %d, output %q", code, out)
	}
}
