package harness

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGKILLThenCleanup kills a harness process (this test binary
// re-executed as one) with SIGKILL while its run is up, checks that its
// children die with it (Pdeathsig) and that Cleanup then removes the
// grandchild, the namespaces and the lock, leaving nothing.
func TestSIGKILLThenCleanup(t *testing.T) {
	requireRoot(t)
	cmd, rep := startHelper(t, false)
	if len(rep.Children) != 3 || rep.Grandchild <= 0 {
		t.Fatalf("helper report %+v: want 3 children and a grandchild", rep)
	}
	if runIsLive(rep.Run) != true {
		t.Fatalf("run %s not live while its harness runs", rep.Run)
	}
	// A live run is never cleaned.
	if left, err := Leftovers(rep.Run.Prefix()); err != nil || len(left) != 0 {
		t.Fatalf("Leftovers of the live run = %v, %v; want none", left, err)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range rep.Children {
		if !eventually(5*time.Second, func() bool { return !processAlive(pid) }) {
			t.Errorf("child %d still alive 5 s after the harness was SIGKILLed (Pdeathsig)", pid)
		}
	}
	if !processAlive(rep.Grandchild) {
		t.Fatalf("grandchild %d died with the harness; the test needs it alive to check Cleanup", rep.Grandchild)
	}

	left, err := Leftovers(rep.Run.Prefix())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range left {
		kinds = append(kinds, l.Kind+":"+l.Name)
	}
	want := []string{"process:sleep", "netns:" + rep.Hosts[0], "netns:" + rep.Hosts[1], "netns:" + rep.Run.SwitchNS(), "lock:" + rep.Run.Prefix() + ".lock"}
	slices.Sort(kinds)
	slices.Sort(want)
	if !slices.Equal(kinds, want) {
		t.Fatalf("Leftovers = %v, want %v", kinds, want)
	}
	removed, err := Cleanup(rep.Run.Prefix())
	if err != nil {
		t.Fatalf("Cleanup: %v (removed %v)", err, removed)
	}
	if len(removed) != len(want) || !strings.Contains(removed[0], "process") {
		t.Errorf("Cleanup removed %v, want %d things, the process first", removed, len(want))
	}
	if processAlive(rep.Grandchild) {
		t.Errorf("grandchild %d alive after Cleanup", rep.Grandchild)
	}
	if l := leftovers(t, rep.Run); len(l) > 0 {
		t.Errorf("left after Cleanup: %v", l)
	}
	if again, err := Cleanup(rep.Run.Prefix()); err != nil || len(again) != 0 {
		t.Errorf("second Cleanup = %v, %v; want nothing", again, err)
	}
}

// startHelper runs this test binary as a harness process (see
// runHelperHarness) and returns it with its report once its run is up.
// Killing it and cleaning its run are registered with t.Cleanup first.
func startHelper(t *testing.T, signals bool) (*exec.Cmd, *helperReport) {
	t.Helper()
	rep := &helperReport{}
	t.Cleanup(func() {
		if rep.Run != "" {
			Cleanup(rep.Run.Prefix())
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
	if signals {
		cmd.Env = append(cmd.Env, helperSignalsEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper harness: %v", err)
	}
	if err := json.Unmarshal([]byte(line), rep); err != nil {
		t.Fatalf("helper report %q: %v", line, err)
	}
	return cmd, rep
}

// TestSIGTERMTearsDown: a harness that called HandleSignals removes its
// whole run (children, grandchildren in its process groups, namespaces,
// lock) when it gets SIGTERM, and ends with the signal.
func TestSIGTERMTearsDown(t *testing.T) {
	requireRoot(t)
	cmd, rep := startHelper(t, true)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("helper ended with %v, want killed by SIGTERM", err)
	}
	for _, pid := range append(rep.Children, rep.Grandchild) {
		if processAlive(pid) {
			t.Errorf("process %d alive after the harness's SIGTERM teardown", pid)
		}
	}
	if l := leftovers(t, rep.Run); len(l) > 0 {
		t.Errorf("left after SIGTERM: %v", l)
	}
}

func TestCleanupFilter(t *testing.T) {
	for _, bad := range []string{"x", "eth0", "htz", "ht1234567", "ht3F"} {
		if _, err := Leftovers(bad); err == nil {
			t.Errorf("Leftovers(%q): no error", bad)
		}
	}
	for _, good := range []string{"", "ht", "ht3f", "ht3f9a1c", "ht3f9a1c-h1"} {
		if err := checkPrefix(good); err != nil {
			t.Errorf("checkPrefix(%q): %v", good, err)
		}
	}
}

// TestShadowedIn: a namespace mounted on the root file system's
// /run/netns before /run/netns was bind-mounted over itself is shadowed;
// one mounted inside the bind mount is not.
func TestShadowedIn(t *testing.T) {
	info := `26 1 254:0 / / rw,relatime - ext4 /dev/vda rw
46 26 0:4 net:[4026532525] /run/netns/hte86c78-h1 rw - nsfs nsfs rw
43 26 254:0 /run/netns /run/netns rw,relatime shared:1 - ext4 /dev/vda rw
50 43 0:4 net:[4026532600] /run/netns/ht3f9a1c-h1 rw shared:1 - nsfs nsfs rw
`
	got := shadowedIn([]byte(info))
	if len(got) != 1 || !got["hte86c78-h1"] {
		t.Errorf("shadowedIn = %v, want only hte86c78-h1", got)
	}
	if got := shadowedIn([]byte("26 1 254:0 / / rw - ext4 /dev/vda rw\n46 26 0:4 net:[1] /run/netns/x rw - nsfs nsfs rw\n")); len(got) != 0 {
		t.Errorf("without a /run/netns mount: %v, want none", got)
	}
}
