package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/harness"
)

// deadPid returns the pid of a process that has ended.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestRunFolderLock: a run refuses a folder a live run holds (two runs
// with one --artifacts used to remove each other's passes and both point
// their JSON at the same pass-1), in one line naming the holder's pid and
// the fix; a lock left by a killed run is taken over and said so, and a
// killed run's folder beside it is marked interrupted and loses the spool
// and temporary files its captures left (a SIGKILLed run left them
// unmarked); a live run's folder is left alone; the lock goes when the
// run ends.
func TestRunFolderLock(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := filepath.Join(t.TempDir(), "same")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	held, _, err := lockRunFolder(dir) // a live run (this process)
	if err != nil {
		t.Fatal(err)
	}
	out, err, code := run(t, "run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", dir, "-o", "json")
	held.release()
	want := "--artifacts " + dir + " is in use by another homatest run (pid " + strconv.Itoa(os.Getpid()) + "): pass another --artifacts folder"
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("run in a held folder: exit %d, %v; want 2 and %q\n%s", code, err, want, out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refused run left %v in the folder", ents)
	}
	// A killed run's lock: its pid is dead and nobody holds the flock.
	pid := deadPid(t)
	lockPath := filepath.Join(dir, runFolderLockFile)
	if err := os.WriteFile(lockPath, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "pass-1"), 0o755)
	os.WriteFile(filepath.Join(dir, "pass-1", "pass.json"), []byte("{}"), 0o644)
	// Beside it, the folder of another killed run, with what a SIGKILL
	// leaves mid-capture, and one of a live run.
	killed, live := filepath.Join(filepath.Dir(dir), "killed"), filepath.Join(filepath.Dir(dir), "live")
	for f, body := range map[string]string{runFolderLockFile: strconv.Itoa(pid) + "\n", "pass-1/pass.json": "{}",
		"pass-1/.capture-h1-p1-in.spool": "", "pass-1/.capture.pcapng.tmp4242": "partial", "pass-1/ginkgo.log": "log"} {
		os.MkdirAll(filepath.Dir(filepath.Join(killed, f)), 0o755)
		if err := os.WriteFile(filepath.Join(killed, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(filepath.Join(killed, runFolderLockFile), old, old)
	os.MkdirAll(live, 0o755)
	liveLock, _, err := lockRunFolder(live)
	if err != nil {
		t.Fatal(err)
	}
	defer liveLock.release()
	os.Chtimes(filepath.Join(live, runFolderLockFile), old, old)
	out, err, code = run(t, "run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", dir)
	if code != ExitOK || !strings.Contains(out, "homatest: "+dir+" was left by run pid "+strconv.Itoa(pid)+", which ended without releasing it (killed): this run takes it over\n") ||
		!strings.Contains(out, "homatest: marked 1 run folder interrupted (killed: their runs ended without releasing their locks; partial captures' temporary files removed, captures cut short renamed NAME.partial.pcapng): "+killed+"\n") ||
		!strings.Contains(out, "removed 1 pass folder of an earlier run from "+dir+": pass-1 (and its interrupted)") {
		t.Fatalf("run in a killed run's folder: exit %d, %v; want 0, the take-over line, the killed sibling marked, the earlier pass removed\n%s", code, err, out)
	}
	var names []string
	filepath.WalkDir(killed, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, killed+"/"))
		}
		return nil
	})
	if strings.Join(names, " ") != "interrupted pass-1/ginkgo.log pass-1/pass.json" {
		t.Errorf("the killed run's folder holds %v; want its marker, log and options, no lock, spool or temporary file", names)
	}
	if b, _ := os.ReadFile(filepath.Join(killed, "interrupted")); !strings.Contains(string(b), "killed: its process "+strconv.Itoa(pid)+" ended") {
		t.Errorf("its marker says %q", b)
	}
	if _, err := os.Stat(filepath.Join(live, runFolderLockFile)); err != nil {
		t.Errorf("the live run's lock: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live, "interrupted")); err == nil {
		t.Error("the live run's folder was marked interrupted")
	}
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Errorf("the run's lock is still there after it ended: %v", err)
	}
}

// TestRemoveDeadRunsLeftovers: what a killed run left (its namespace and
// its unheld lock) is removed at the start of a run in namespaces, in one
// line naming them; a live run's namespace is kept (runs share a
// machine), and so is a lock being reserved (an empty file just made).
func TestRemoveDeadRunsLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	// The live run: this test holds its lock.
	live, release, err := harness.ReserveRun()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// The killed run: an id reserved and then abandoned without its flock.
	dead, releaseDead, err := harness.ReserveRun()
	if err != nil {
		t.Fatal(err)
	}
	releaseDead()
	deadLock := filepath.Join(harness.LockDir, dead.Prefix()+".lock")
	if err := os.WriteFile(deadLock, []byte("999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(deadLock)
	for _, ns := range []string{live.HostNS(1), dead.HostNS(1)} {
		if b, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", ns, err, b)
		}
		defer exec.Command("ip", "netns", "del", ns).Run()
	}
	// A lock being reserved right now: empty, unheld, fresh.
	fresh, releaseFresh, err := harness.ReserveRun()
	if err != nil {
		t.Fatal(err)
	}
	releaseFresh()
	freshLock := filepath.Join(harness.LockDir, fresh.Prefix()+".lock")
	if err := os.WriteFile(freshLock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(freshLock)
	now := time.Now()
	os.Chtimes(freshLock, now, now)

	// A test binary's start leaves a run that died a moment ago: a test
	// may be about to look at what it left.
	var w bytes.Buffer
	harness.RemoveDeadRuns(&w, harness.StaleRunAge)
	if _, err := os.Stat("/run/netns/" + dead.HostNS(1)); err != nil || w.Len() > 0 {
		t.Fatalf("a run reserved just now: said %q, its namespace: %v; want it kept, nothing said", w.String(), err)
	}
	past := now.Add(-harness.StaleRunAge - time.Second)
	if err := os.Chtimes(deadLock, past, past); err != nil {
		t.Fatal(err)
	}
	harness.RemoveDeadRuns(&w, harness.StaleRunAge)
	line := w.String()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, "namespace "+dead.HostNS(1)) || !strings.Contains(line, "lock "+dead.Prefix()+".lock") {
		t.Errorf("said %q; want one line naming %s and its lock", line, dead.HostNS(1))
	}
	if strings.Contains(line, string(live)) || strings.Contains(line, string(fresh)) {
		t.Errorf("said %q: a live run's leftovers", line)
	}
	if _, err := os.Stat("/run/netns/" + dead.HostNS(1)); !os.IsNotExist(err) {
		t.Errorf("the killed run's namespace is still there: %v", err)
	}
	if _, err := os.Stat(deadLock); !os.IsNotExist(err) {
		t.Errorf("the killed run's lock is still there: %v", err)
	}
	if _, err := os.Stat("/run/netns/" + live.HostNS(1)); err != nil {
		t.Errorf("the live run's namespace is gone: %v", err)
	}
	if _, err := os.Stat(freshLock); err != nil {
		t.Errorf("the lock being reserved is gone: %v", err)
	}
}

// TestForeignLockLeftAlone: flock does not cross a 9p share, so a run
// folder a homatest lab guest writes looks unlocked from the host
// (helper-195: a host run beside a live guest run marked it killed and
// deleted its capture spools). A lock names its kernel's boot id: one
// another kernel wrote while this one was up is left alone, and a run
// refuses to take its folder over; one from before this boot is a dead
// run's and is settled as before. This run's own lock names its boot id.
func TestForeignLockLeftAlone(t *testing.T) {
	parent := t.TempDir()
	self := filepath.Join(parent, "self")
	pid := deadPid(t)
	const otherBoot = "00000000-1111-2222-3333-444444444444"
	mk := func(name string, mtime time.Time) string {
		d := filepath.Join(parent, name)
		os.MkdirAll(filepath.Join(d, "pass-1"), 0o755)
		os.WriteFile(filepath.Join(d, runFolderLockFile), []byte(strconv.Itoa(pid)+" "+otherBoot+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "pass-1", ".capture-h1-p1-in.spool"), []byte("x"), 0o644)
		os.Chtimes(filepath.Join(d, runFolderLockFile), mtime, mtime)
		return d
	}
	guest := mk("guest", time.Now().Add(-time.Minute))
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	earlier := mk("earlier-boot", time.Now().Add(-time.Duration(si.Uptime)*time.Second-time.Hour))
	var w bytes.Buffer
	settleKilledSiblings(self, &w)
	if _, err := os.Stat(filepath.Join(guest, "pass-1", ".capture-h1-p1-in.spool")); err != nil {
		t.Errorf("the guest run's spool was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(guest, harness.InterruptedFile)); err == nil {
		t.Error("the guest run was marked interrupted")
	}
	if want := "homatest: marked 1 run folder interrupted (killed: their runs ended without releasing their locks; partial captures' temporary files removed, captures cut short renamed NAME.partial.pcapng): " + earlier + "\n"; w.String() != want {
		t.Errorf("settled: %q, want %q", w.String(), want)
	}
	if _, _, err := lockRunFolder(guest); err == nil || !strings.Contains(err.Error(), "may be in use by a run on another machine that shares the folder") {
		t.Errorf("taking the guest run's folder: %v", err)
	}
	os.MkdirAll(self, 0o755)
	l, _, err := lockRunFolder(self)
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	b, _ := os.ReadFile(filepath.Join(self, runFolderLockFile))
	if want := strconv.Itoa(os.Getpid()) + " " + bootID() + "\n"; string(b) != want || bootID() == "" {
		t.Errorf("this run's lock holds %q, want %q", b, want)
	}
}
