//go:build linux

package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// superviseSleeper is the supervisor process of TestPassDiesWithSupervisor:
// it runs one pass in dir whose child is a shell that records its pid,
// the file its fd 3 names and a SIGTERM, and sleeps.
func superviseSleeper(dir string) int {
	hold, err := os.Create(filepath.Join(dir, "lock"))
	if err != nil {
		return 2
	}
	script := `readlink /proc/$$/fd/3 > "$0.fd"; trap 'echo term > "$0.term"; kill $! 2>/dev/null; exit 0' TERM; echo $$ > "$0.pid"; sleep 60 & wait`
	s := &Supervisor{Dir: dir, Command: []string{"/bin/sh", "-c", script, filepath.Join(dir, "c")}, Hold: hold}
	s.Pass("pass-1", PassOptions{})
	return 0
}

// TestPassDiesWithSupervisor: a pass's child gets SIGTERM when its
// supervisor is SIGKILLed (it used to run on, re-parented to init, while
// the next run took its folder over and removed its pass folder), and it
// holds the supervisor's Hold file (the run-folder lock) as its fd 3.
func TestPassDiesWithSupervisor(t *testing.T) {
	dir := t.TempDir()
	sup := exec.Command(os.Args[0], "-test.run", "^$")
	sup.Env = append(os.Environ(), "HOMATEST_SUPERVISOR_CHILD="+dir)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sup.Process.Kill(); sup.Wait() }()
	c := filepath.Join(dir, "c")
	var pid int
	for end := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the pass child never started")
		}
		b, _ := os.ReadFile(c + ".pid")
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	defer func() { // the shell's trap ends its sleep too
		syscall.Kill(pid, syscall.SIGTERM)
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	if b, _ := os.ReadFile(c + ".fd"); strings.TrimSpace(string(b)) != filepath.Join(dir, "lock") {
		t.Errorf("the pass child's fd 3 is %q; want the held file %s", b, filepath.Join(dir, "lock"))
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sup.Wait()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(c + ".term"); err == nil && !alive(pid) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the pass child %d still runs (or got no SIGTERM) 10 s after its supervisor was SIGKILLed", pid)
		}
	}
}

// alive reports whether pid runs (a zombie nobody reaped yet does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
