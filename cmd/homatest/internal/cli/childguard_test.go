package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMisSetChildFailsFast: this test binary started as a pass child
// ("run --pass FILE", as homatest run re-executes itself) without
// HOMATEST_CLI_CHILD=1 exits 2 at once with a one-line error naming the
// variable. Before TestMain's guard it ran every test of the package
// instead, and the test that started it hung until go test's timeout.
func TestMisSetChildFailsFast(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run", "--pass", filepath.Join(t.TempDir(), "pass.json"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOMATEST_CLI_CHILD=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group: the tests an unguarded child runs start
	// children of their own, killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The guard exits before any test runs: a process start, which even
	// a machine at load 50 does within seconds; running the package's
	// tests takes many minutes.
	const limit = time.Minute
	select {
	case err = <-done:
	case <-time.After(limit):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("the mis-set child still ran after %v (it runs the package's tests instead of failing fast)\nstdout:\n%.2000s\nstderr:\n%.2000s", limit, stdout.String(), stderr.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Errorf("exit %v, want 2", err)
	}
	msg := stderr.String()
	if !strings.Contains(msg, "without HOMATEST_CLI_CHILD=1") || strings.Count(strings.TrimSpace(msg), "\n") != 0 || !strings.Contains(msg, "run --pass") {
		t.Errorf("stderr %q: want one line naming the command and HOMATEST_CLI_CHILD=1", msg)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want none", stdout.String())
	}
}
