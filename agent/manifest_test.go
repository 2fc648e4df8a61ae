package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeManifest(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadManifest(t *testing.T) {
	m, err := LoadManifest(writeManifest(t, `
name: myhoma
command: [/opt/myhoma/agent, --verbose]
env: {MYHOMA_LOG: debug}
capabilities: [ipv4, grants, reply-delay]
params: {resend_ticks: 10}
timeouts: {start: 5s, reply: 2s}
`))
	if err != nil {
		t.Fatal(err)
	}
	// reply-delay is a capability of protocol version 1 (listen's
	// reply_delay_ms), so a manifest may claim it.
	if !slices.Contains(m.Capabilities, CapReplyDelay) {
		t.Errorf("capabilities %v; want reply-delay among them", m.Capabilities)
	}
	if m.Name != "myhoma" || len(m.Command) != 2 || m.Env["MYHOMA_LOG"] != "debug" || m.Timeouts.Start != 5*time.Second || m.Timeouts.Reply != 2*time.Second || m.Params["resend_ticks"] != 10 {
		t.Errorf("manifest = %+v", m)
	}
}

func TestManifestErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"", "the file is empty"},
		{"name: x\ncommand: [a]\ncomand: [b]\n", `line 3: unknown field "comand": check its spelling and indentation (known fields: name, command`},
		// A value of the wrong kind: its field, the value, the kind wanted
		// (no Go type names).
		{"name: x\ncommand: [a]\ntimeouts: {reply: soon}\n", `line 3: timeouts.reply: "soon": want a duration such as 500us, 10ms or 2s`},
		{"name: x\ncommand: a b\n", `line 2: command: "a b": want a list ([a, b], or one "- item" line each)`},
		{"name: x\ncommand: [a]\ncapabilities: {ipv4: yes}\n", "line 3: capabilities: a mapping: want a list"},
		{"command: [a]\n", "name: missing"},
		{"name: My Homa\ncommand: [a]\n", `name: "My Homa": use 1-40 lower-case letters`},
		{"name: x\n", "command: missing"},
		{"name: x\ncommand: ['']\n", "command: missing"},
		{"name: x\ncommand: [a]\ncapabilities: [ipv4, grant]\n", `capabilities: unknown capability "grant": use ipv4, ipv6, grants`},
		{"name: x\ncommand: [a]\ntimeouts: {reply: -1s}\n", "timeouts.reply: -1s is negative"},
		{"name: x\ncommand: [a]\nenv: {'A=B': c}\n", `env: "A=B" is not a variable name`},
		// Tabs: the line (yaml names none for line 1) and why.
		{"\tname: x\ncommand: [a]\n", "line 1: found character that cannot start any token (YAML forbids tabs for indentation: indent with spaces)"},
		{"name: x\n\tcommand: [a]\n", "line 2: found a tab character that violates indentation (YAML forbids tabs"},
		{"name: [x\n", "did not find expected ',' or ']': not valid YAML; a manifest is a YAML mapping with at least name and command"},
	} {
		_, err := LoadManifest(writeManifest(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "agent.") || strings.Contains(err.Error(), "unmarshal") {
			t.Errorf("%q: error %v; want one line containing %q", tc.yaml, err, tc.want)
		}
	}
	if _, err := LoadManifest(filepath.Join(t.TempDir(), "none.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestBuiltinManifest(t *testing.T) {
	for _, impl := range []string{"ref", "linux"} {
		m, err := BuiltinManifest(impl, "/bin/homatest")
		if err != nil || m.Validate() != nil || strings.Join(m.Command, " ") != "/bin/homatest agent --impl "+impl {
			t.Errorf("%s: %+v, %v", impl, m, err)
		}
	}
	if _, err := BuiltinManifest("bsd", "x"); err == nil {
		t.Error("bsd: no error")
	}
	// The linux agent declares both families on a dual-stack host (its
	// IPv6 servers on the ports listened with ipv6), so its manifest
	// claims both.
	if m, _ := BuiltinManifest("linux", "x"); !slices.Contains(m.Capabilities, CapIPv6) || !slices.Contains(m.Capabilities, CapIPv4) {
		t.Errorf("linux claims %v; want ipv4 and ipv6", m.Capabilities)
	}
}

func TestManifestTimeoutsEffective(t *testing.T) {
	t.Setenv("HOMATEST_TIME_SCALE", "2")
	got := ManifestTimeouts{Reply: 3 * time.Second}.Effective()
	if got.Start != 20*time.Second || got.Reply != 6*time.Second || got.Shutdown != 10*time.Second {
		t.Errorf("effective timeouts at scale 2 = %+v", got)
	}
}

// TestManifestWithParams: --param overrides go over a manifest's own
// params in a copy; the manifest itself is unchanged.
func TestManifestWithParams(t *testing.T) {
	m := &Manifest{Name: "x", Params: map[string]any{"tick_ns": 5000000, "timeout_ticks": 100}}
	got := m.WithParams(Params{"timeout_ticks": int64(30), "resend_ticks": int64(2)})
	if got.Params["tick_ns"] != 5000000 || got.Params["timeout_ticks"] != int64(30) || got.Params["resend_ticks"] != int64(2) || got.Name != "x" {
		t.Errorf("WithParams: %+v; want tick_ns kept, timeout_ticks 30 and resend_ticks 2 over it", got.Params)
	}
	if m.Params["timeout_ticks"] != 100 || len(m.Params) != 2 {
		t.Errorf("the manifest changed: %+v", m.Params)
	}
	if p := (&Manifest{}).WithParams(nil).Params; p == nil || len(p) != 0 {
		t.Errorf("WithParams(nil) of a manifest without params: %v; want an empty map", p)
	}
}
