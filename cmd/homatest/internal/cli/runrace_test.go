package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunRefusedChangesNothing: a run refused a folder's lock removes and
// changes nothing in it, even a folder it saw missing before another run
// made it and took the lock (two runs started at once with one
// --artifacts: the refused one used to remove the whole folder, the live
// run's lock and pass-1 with it, and the live run then failed on its
// missing pass.json); the refusal is in its -o json report (verdict
// error) and its --junit file (an <error> testcase), as other errors of a
// started run are. A run that takes a folder it saw missing, which a
// finished run made meanwhile, removes on a usage error only what it made.
func TestRunRefusedChangesNothing(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	tmp := t.TempDir()
	dir, junit := filepath.Join(tmp, "same"), filepath.Join(tmp, "c2.xml")
	var held *folderLock
	testHookBeforeLock = func(d string) { // the other run wins the lock here
		var err error
		if held, _, err = lockRunFolder(d); err != nil {
			t.Error(err)
		}
		os.MkdirAll(filepath.Join(d, "pass-1"), 0o755)
		os.WriteFile(filepath.Join(d, "pass-1", "pass.json"), []byte("live"), 0o644)
	}
	defer func() { testHookBeforeLock = nil; held.release() }()
	cmd := New()
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", dir, "-o", "json", "--junit", junit})
	err := cmd.Execute()
	want := "--artifacts " + dir + " is in use by another homatest run (pid " + strconv.Itoa(os.Getpid()) + ")"
	if code := ExitCode(err); code != ExitUsage || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("exit %d, %v; want 2 and %q\n%s", code, err, want, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "pass-1", "pass.json")); string(b) != "live" {
		t.Errorf("the live run's pass-1/pass.json: %q, %v; want it untouched", b, err)
	}
	lockPath := filepath.Join(dir, runFolderLockFile)
	if b, err := os.ReadFile(lockPath); string(b) != strconv.Itoa(os.Getpid())+" "+bootID()+"\n" {
		t.Errorf("the live run's lock holds %q (%v); want its pid and boot id", b, err)
	}
	if f, err := os.Open(lockPath); err != nil {
		t.Errorf("the live run's lock: %v", err)
	} else {
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			t.Error("the live run's lock file is a new one nobody holds")
		}
		f.Close()
	}
	rep, js := readRunEnd(t, stdout.String(), junit)
	if rep.Verdict != "error" || !strings.Contains(rep.Error, want) || rep.Passes == nil || len(rep.Passes) != 0 {
		t.Errorf("JSON report %+v; want verdict error, the refusal, no passes", rep)
	}
	if js.Errors != 1 || len(js.TestSuites) != 1 || js.TestSuites[0].TestCases[0].Error == nil ||
		!strings.Contains(js.TestSuites[0].TestCases[0].Error.Message, want) {
		t.Errorf("JUnit %+v; want one <error> testcase with the refusal", js)
	}
	held.release()

	// A finished run made the folder between this run's look and its
	// lock: this run's usage error leaves what that run wrote.
	dir = filepath.Join(tmp, "made-meanwhile")
	testHookBeforeLock = func(d string) {
		os.MkdirAll(filepath.Join(d, "pass-1"), 0o755)
		os.WriteFile(filepath.Join(d, "pass-1", "pass.json"), []byte("earlier"), 0o644)
	}
	_, err, code := run(t, "run", "--env", "sim", "--focus", "NOSUCH", "--artifacts", dir)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no spec matched") {
		t.Fatalf("exit %d, %v; want 2, no spec matched", code, err)
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	if strings.Join(names, " ") != "pass-1/pass.json" {
		t.Errorf("the folder holds %v after the usage error; want the finished run's pass-1/pass.json alone", names)
	}
}

// TestRunFolderHeldByOrphanedPass: a run folder whose lock names a dead
// run but is still held (by its pass child, which inherited it and is
// ending on SIGTERM) is not taken over: the refusal says whose pass holds
// it (a killed run's lock used to be taken over while its pass still
// wrote there).
func TestRunFolderHeldByOrphanedPass(t *testing.T) {
	dir := t.TempDir()
	l, _, err := lockRunFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	dead := deadPid(t)
	l.f.Truncate(0)
	l.f.WriteAt([]byte(strconv.Itoa(dead)+"\n"), 0)
	child := exec.Command("sleep", "60") // the orphaned pass: holds the lock as its fd 3
	child.ExtraFiles = []*os.File{l.f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	l.f.Close() // the run is gone; only its pass holds the lock
	l.f = nil
	_, _, err = lockRunFolder(dir)
	want := "--artifacts " + dir + " is in use by the pass of a killed homatest run (pid " + strconv.Itoa(dead) + "), which is ending: pass another --artifacts folder, or wait until that run ends"
	if err == nil || err.Error() != want {
		t.Fatalf("lockRunFolder: %v; want %q", err, want)
	}
	child.Process.Kill()
	child.Wait()
	l2, stale, err := lockRunFolder(dir)
	if err != nil || stale != dead {
		t.Fatalf("after the pass ended: %v, stale pid %d; want the lock taken over from %d", err, stale, dead)
	}
	l2.release()
}
