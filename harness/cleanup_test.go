package harness

import (
	"bufio"
	"encoding/json"
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
	var rep helperReport
	t.Cleanup(func() {
		if rep.Run != "" {
			Cleanup(rep.Run.Prefix())
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
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
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("helper report %q: %v", line, err)
	}
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
