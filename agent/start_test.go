package agent

import (
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
)

// TestHelloParams: the harness's defaults reach only an implementation
// that declares them; the manifest's params come next and the caller's
// overrides win.
func TestHelloParams(t *testing.T) {
	ref, err := BuiltinManifest("ref", "/bin/homatest")
	if err != nil {
		t.Fatal(err)
	}
	defaults := Params{"tick_ns": int64(5e6), "no_such_param": 1}
	got := ref.HelloParams(defaults, Params{"resend_ticks": 9})
	if want := (Params{"tick_ns": int64(5e6), "resend_ticks": 9}); !reflect.DeepEqual(got, want) {
		t.Errorf("ref: %v, want %v", got, want)
	}
	m := &Manifest{Name: "mine", Command: []string{"/bin/true"}, Params: Params{"resend_ticks": 7, "window": 1000}}
	got = m.HelloParams(defaults, Params{"window": 2000})
	if want := (Params{"resend_ticks": 7, "window": 2000}); !reflect.DeepEqual(got, want) {
		t.Errorf("manifest: %v, want %v (no tick_ns: it declares none)", got, want)
	}
	if len(m.Params) != 2 || m.Params["window"] != 1000 {
		t.Errorf("HelloParams changed the manifest: %v", m.Params)
	}
}

func TestUnclaimed(t *testing.T) {
	a := &Agent{Manifest: &Manifest{Capabilities: []string{"ipv4", "ipv6", "grants", "cutoffs"}},
		Hello: Hello{Capabilities: []string{"ipv4", "grants", "need-ack"}}}
	if got, want := a.Unclaimed(), []string{"ipv6", "cutoffs"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Unclaimed = %v, want %v", got, want)
	}
	a.Manifest.Capabilities = []string{"grants"}
	if got := a.Unclaimed(); got != nil {
		t.Errorf("Unclaimed = %v, want none", got)
	}
}

// testTopology builds hosts namespaces for a test (skipped without
// root), closed when the test ends.
func testTopology(t *testing.T, hosts int) *harness.Topology {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	arts, err := harness.NewArtifacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo, err := harness.Build(t.Context(), harness.Config{Hosts: hosts, Artifacts: arts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topo.Close() })
	return topo
}

// TestStartHonoursStartTimeout: an agent that never answers hello fails
// Start after the manifest's timeouts.start (not the 10 s default), the
// error quotes its standard error, and nothing is left running.
func TestStartHonoursStartTimeout(t *testing.T) {
	topo := testTopology(t, 1)
	m := &Manifest{Name: "mute", Command: []string{"/bin/sh", "-c", "echo booting the mute agent >&2; exec sleep 600"},
		Timeouts: ManifestTimeouts{Start: 300 * time.Millisecond}}
	_, err := Start(t.Context(), topo.Hosts[0], StartConfig{Manifest: m})
	want := "no reply to hello (seq 1) within " + m.Timeouts.Effective().Start.String()
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "booting the mute agent") {
		t.Fatalf("Start: %v; want an error with %q and the agent's stderr", err, want)
	}
	if ps := topo.Hosts[0].Processes(); len(ps) != 0 {
		t.Errorf("%d processes left running after a failed Start", len(ps))
	}
}

// TestDescribeExit: a process's end in words: its exit status, or the
// signal that killed it.
func TestDescribeExit(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{"exit 0", "exited with status 0"},
		{"exit 3", "exited with status 3"},
		{"kill -SEGV $$", "was killed by signal segmentation fault"},
	} {
		if got := describeExit(exec.Command("/bin/sh", "-c", c.script).Run()); got != c.want {
			t.Errorf("sh -c %q: %q, want %q", c.script, got, c.want)
		}
	}
}

// TestAgentExitsSilently: an agent that exits before its hello, writing
// nothing, is an error naming its exit status and its log once (the log
// used to be named twice: by the exit status and again by Start).
func TestAgentExitsSilently(t *testing.T) {
	topo := testTopology(t, 1)
	// /bin/true may be gone before the hello is written; the shell reads
	// it first, so its exit closes standard output mid-session.
	for _, cmd := range [][]string{{"/bin/true"}, {"/bin/sh", "-c", "read hello"}} {
		m := &Manifest{Name: "quiet", Command: cmd}
		_, err := Start(t.Context(), topo.Hosts[0], StartConfig{Manifest: m})
		if err == nil || !errors.Is(err, ErrAgentExited) || strings.Count(err.Error(), "(its log: ") != 1 {
			t.Fatalf("%v: Start: %v; want ErrAgentExited naming the log once", cmd, err)
		}
		if got := LogRemoved(err.Error()); strings.Contains(got, "its log: ") || !strings.Contains(got, "(its log was empty)") {
			t.Errorf("%v: LogRemoved: %q", cmd, got)
		}
	}
}

// TestAgentExitReported: an agent that exits in the middle of a session
// ends it with an error naming the agent, its host, its exit status and
// its standard error log (which holds its last words).
func TestAgentExitReported(t *testing.T) {
	topo := testTopology(t, 1)
	for _, c := range []struct{ end, want string }{
		{"exit 3", "exited with status 3"},
		{"kill -SEGV $$", "was killed by signal segmentation fault"},
	} {
		m := &Manifest{Name: "dies", Command: []string{"/bin/sh", "-c",
			`read hello; echo '{"event":"hello","seq":1,"protocol":1,"capabilities":["ipv4"]}'; read next; echo 'dying now' >&2; ` + c.end}}
		a, err := Start(t.Context(), topo.Hosts[0], StartConfig{Manifest: m})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Client.Stats(t.Context())
		want := "agent dies on " + topo.Hosts[0].Name + " " + c.want + " (its log: " + a.Proc.LogPath() + ")"
		if err == nil || !errors.Is(err, ErrAgentExited) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "dying now") {
			t.Errorf("%s: %v; want ErrAgentExited with %q and its stderr", c.end, err, want)
		}
		if b, rerr := os.ReadFile(a.Proc.LogPath()); rerr != nil || !strings.Contains(string(b), "dying now") {
			t.Errorf("the log %s: %q, %v", a.Proc.LogPath(), b, rerr)
		}
		a.Close()
	}
}

// TestStartTurnsGROOnForKernelStacks: an agent whose hello names another
// implementation than the built-in ref (a kernel Homa stack) gets GRO on
// its host's link, which veth leaves off and HomaModule needs to read its
// own first transmissions (harness.Host.SetGRO); the ref's host keeps it
// off.
func TestStartTurnsGROOnForKernelStacks(t *testing.T) {
	topo := testTopology(t, 2)
	hello := func(impl string) *Manifest {
		return &Manifest{Name: impl, Command: []string{"/bin/sh", "-c",
			`read hello; echo '{"event":"hello","seq":1,"protocol":1,"impl":"` + impl + `"}'; exec sleep 600`}}
	}
	for i, c := range []struct {
		impl string
		gro  bool
	}{{"myhoma", true}, {"ref", false}} {
		h := topo.Hosts[i]
		a, err := Start(t.Context(), h, StartConfig{Manifest: hello(c.impl)})
		if err != nil {
			t.Fatalf("%s: %v", c.impl, err)
		}
		on, err := h.GRO()
		if err != nil || on != c.gro {
			t.Errorf("%s: GRO on %s is %v (%v), want %v", c.impl, h.Name, on, err, c.gro)
		}
		a.Client.Close()
		a.Proc.Kill() // it answers no shutdown; the topology reaps it
	}
}

// TestCannotRunText: a CannotRunError's text is the one line the commands
// print, and ParseCannotRun reads it back from that text (a conformance
// pass's setup error) and from nothing else.
func TestCannotRunText(t *testing.T) {
	e := &CannotRunError{Impl: "linux", Reason: "Linux kernel has no Homa (socket(AF_INET, SOCK_DGRAM, 146): protocol not supported); load homa.ko"}
	want := "implementation linux cannot run here: Linux kernel has no Homa (socket(AF_INET, SOCK_DGRAM, 146): protocol not supported); load homa.ko"
	if e.Error() != want {
		t.Errorf("text %q; want %q", e.Error(), want)
	}
	if got := ParseCannotRun(e.Error()); got == nil || *got != *e {
		t.Errorf("ParseCannotRun(%q) = %+v; want %+v", e.Error(), got, e)
	}
	for _, msg := range []string{
		"",
		"the test environment could not be built: " + want,
		"implementation my stack cannot run here: no",
		"implementation linux cannot run here: ",
		"agent linux on h1: hello: the agent exited with status 1",
	} {
		if got := ParseCannotRun(msg); got != nil {
			t.Errorf("ParseCannotRun(%q) = %+v; want nil", msg, got)
		}
	}
}
