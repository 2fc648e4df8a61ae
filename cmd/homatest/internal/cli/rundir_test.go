package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// checkUndone runs homatest with args, which must fail with exit 2 and an
// error containing want before the command's work starts, three ways: with
// the default run folder (in an empty working folder), with --artifacts a
// folder whose parent does not exist, and with --artifacts a folder that
// holds a file of the user's. It fails the test if the command left
// anything it created: homatest-runs, the new folder or its parent, or a
// new entry in the existing folder (whose file must survive).
func checkUndone(t *testing.T, want string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	mine := filepath.Join(dir, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mine, "notes.txt", "keep\n")
	for _, arts := range []string{"", filepath.Join(dir, "new", "a"), mine} {
		a := args
		if arts != "" {
			a = append(append([]string(nil), args...), "--artifacts", arts)
		}
		out, err, code := run(t, a...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: exit %d, %v; want exit 2 and %q\n%s", a, code, err, want, out)
		}
	}
	if got := entries(t, dir); got != "mine" {
		t.Errorf("the working folder holds %s after the failed commands; want only mine (no homatest-runs, no new/a)", got)
	}
	if got := entries(t, mine); got != "notes.txt" {
		t.Errorf("the existing --artifacts folder holds %s; want only the user's notes.txt", got)
	}
}

// entries returns the names in dir, comma-separated.
func entries(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

// needLinuxUnsupported skips t unless it runs as root (namespaces) on a
// kernel without Homa, where --impl linux fails its setup.
func needLinuxUnsupported(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	if _, err := os.Stat("/proc/sys/net/homa"); err == nil {
		t.Skip("this kernel has Homa: the linux agent is supported here")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
}

// TestBenchSetupFailureLeavesNothing: a simulated bench whose hosts cannot
// be built (a Homa parameter the reference implementation refuses) exits 2
// and removes what it created, whether the run folder was the default, a
// new --artifacts folder (it used to stay) or an existing one.
func TestBenchSetupFailureLeavesNothing(t *testing.T) {
	checkUndone(t, "unsched_bytes -5: want a non-negative integer",
		"bench", "--env", "sim", "--duration", "100ms", "--param", "unsched_bytes=-5")
}

// TestBenchNSSetupFailureLeavesNothing: the same in namespaces with a homa
// agent that cannot run here (--impl linux without the kernel module),
// whose failed setup has written topology.json and the agents' logs into
// the run folder (they used to stay in a new or existing --artifacts
// folder).
func TestBenchNSSetupFailureLeavesNothing(t *testing.T) {
	needLinuxUnsupported(t)
	checkUndone(t, "implementation linux cannot run here: Linux kernel has no Homa", "bench", "--impl", "linux", "--hosts", "2", "--duration", "1s")
}

// TestExploreSetupFailureLeavesNothing: a session, and a replay, whose
// IUT cannot run here (--impl linux without the kernel module) exit 2 and
// remove what they created, topology.json and the agents' logs with it,
// whether the run folder was the default, a new --artifacts folder (they
// used to stay there) or an existing one.
func TestExploreSetupFailureLeavesNothing(t *testing.T) {
	needLinuxUnsupported(t)
	script, err := filepath.Abs(foundScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("session", func(t *testing.T) {
		checkUndone(t, "implementation linux cannot run here", "explore", "--env", "ns", "--impl", "linux", "--budget", "5s", "-q")
	})
	t.Run("replay", func(t *testing.T) {
		checkUndone(t, "implementation linux cannot run here", "explore", "--env", "ns", "--impl", "linux", "--replay", script, "-q")
	})
}

// TestCannotRunOneLine: an implementation that cannot run here (--impl
// linux without the kernel module) is the same one line, what and the fix,
// exit 2, from run, bench, explore (a session and a replay) and scenario
// run: bench and scenario run said "unsupported: implementation linux
// ...", explore "explore: unsupported: ...", where run said
// "implementation linux ..." alone.
func TestCannotRunOneLine(t *testing.T) {
	needLinuxUnsupported(t)
	dir := t.TempDir()
	sc := writeFile(t, dir, "linux.yaml", "topology: {hosts: 2}\niut: {impl: linux}\nworkload: {dist: '1000', count: 1}\n")
	script, err := filepath.Abs(foundScript)
	if err != nil {
		t.Fatal(err)
	}
	const want = "implementation linux cannot run here: Linux kernel has no Homa ("
	var first string
	for i, args := range [][]string{
		{"run", "--impl", "linux"},
		{"bench", "--impl", "linux", "--hosts", "2", "--duration", "1s"},
		{"explore", "--env", "ns", "--impl", "linux", "--budget", "5s", "-q"},
		{"explore", "--env", "ns", "--impl", "linux", "--replay", script, "-q"},
		{"scenario", "run", "-q", sc},
	} {
		args = append(args, "--artifacts", filepath.Join(dir, "run"+strconv.Itoa(i)))
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, %v; want exit 2 and one line %q...", args, code, err, want)
			continue
		}
		if first == "" {
			first = err.Error()
		} else if err.Error() != first {
			t.Errorf("%v: %q; want the line run printed, %q", args, err, first)
		}
	}
	if got := entries(t, dir); got != "linux.yaml" {
		t.Errorf("the folder holds %s after the refused commands; want only linux.yaml", got)
	}
}

// TestArtifactsUnderAFile: --artifacts under a file is the same one-line
// usage error (exit 2) from every command that makes a run folder, naming
// the flag, the file system's reason and the fix, and nothing is left:
// bench said "--artifacts: artifacts: mkdir ...", scenario run
// "artifacts: mkdir ..." without the flag or the fix.
func TestArtifactsUnderAFile(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "file", "x")
	sc := writeFile(t, dir, "s.yaml", "env: sim\ntopology: {hosts: 2}\nlink: {rate: 1gbit}\nworkload: {dist: w4, load: 0.5, count: 5}\n")
	want := "--artifacts: mkdir " + file + ": not a directory (pass --artifacts DIR somewhere writable)"
	for _, args := range [][]string{
		{"run", "--env", "sim"},
		{"explore", "--env", "sim", "--budget", "1s"},
		{"bench", "--env", "sim", "--duration", "100ms"},
		{"scenario", "run", sc},
	} {
		args = append(args, "--artifacts", filepath.Join(file, "run"))
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || err.Error() != want {
			t.Errorf("%v: exit %d, %v; want 2 and %q", args, code, err, want)
		}
	}
	if got := entries(t, dir); got != "file,s.yaml" {
		t.Errorf("the folder holds %s after the failed commands; want only file,s.yaml", got)
	}
}

// TestSettleCaptures: in an interrupted run's folder, a capture that does
// not read whole (cut mid-block, or empty: a pass killed before it
// flushed) is renamed NAME.partial.pcapng with its sidecars, bytes
// unchanged, temporary files go, and whole captures and an earlier run's
// passes set aside stay; the line says which.
func TestSettleCaptures(t *testing.T) {
	dir := t.TempDir()
	whole, err := os.ReadFile(filepath.Join(faultsDir, "ACK-004-ack-before-response.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"pass-1/capture.pcapng":             whole,
		"pass-2/capture.pcapng":             whole[:len(whole)-7],
		"pass-2/capture.pcapng.params":      []byte("{}"),
		"pass-2/capture.pcapng.stalls.json": []byte("[]"),
		"pass-2/sent-123.pcapng":            nil,
		"pass-2/.capture-1.spool":           whole,
		"pass-2/.result.json.tmp42":         []byte("{"),
		"pass-2/ginkgo.log":                 []byte("log"),
		".earlier-passes/pass-9/x.pcapng":   whole[:10],
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := settleCaptures(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "1 complete capture kept (packets up to the interruption), 2 captures cut short kept as pass-2/capture.partial.pcapng, pass-2/sent-123.partial.pcapng (check reads up to the cut), 2 unfinished temporary files removed"
	if c.String() != want {
		t.Errorf("settled: %q, want %q", c.String(), want)
	}
	for name, b := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		gone := strings.HasPrefix(name, "pass-2/capture.pcapng") || strings.HasPrefix(name, "pass-2/sent-") || strings.HasPrefix(name, "pass-2/.")
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: %v, want gone %v", name, err, gone)
		}
		if moved := strings.Replace(name, ".pcapng", ".partial.pcapng", 1); gone && !strings.HasPrefix(name, "pass-2/.") {
			if got, err := os.ReadFile(filepath.Join(dir, moved)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s: renamed to %s: %v, %d bytes, want its %d bytes", name, moved, err, len(got), len(b))
			}
		}
	}
	// Settled again (a later interruption): a partial capture stays as it is.
	if c, err := settleCaptures(dir); err != nil || len(c.Partial) != 0 {
		t.Errorf("settled again: %+v, %v; want nothing renamed", c, err)
	}
	if s := (settledCaptures{}).String(); s != "" {
		t.Errorf("no captures: %q, want nothing said", s)
	}
}

// TestRunKeepRuns: a run without --artifacts removes the oldest of
// homatest run's folders under homatest-runs/ so that --keep-runs remain,
// itself included, and says so on stderr; a folder it did not make (the
// user's, named otherwise), another command's (no pass folder), one in
// use (its lock) are kept, and --keep-runs 0 removes none (homatest-runs/
// was never pruned).
func TestRunKeepRuns(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := t.TempDir()
	t.Chdir(dir)
	runs := filepath.Join(dir, "homatest-runs")
	mkRun := func(name string, pass bool, extra ...string) {
		d := filepath.Join(runs, name)
		if err := os.MkdirAll(filepath.Join(d, "pass-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if pass {
			writeFile(t, filepath.Join(d, "pass-1"), "pass.json", "{}\n")
		}
		for _, f := range extra {
			writeFile(t, d, f, "1\n")
		}
	}
	mkRun("20200101-000000-1", true)
	mkRun("20200102-000000-2", true, "report.html")
	mkRun("20200103-000000-3", true, "interrupted")
	mkRun("20200101-000000-4", false)                   // an explore's or a bench's
	mkRun("20200101-000000-5", true, runFolderLockFile) // in use
	mkRun("mine", true)                                 // the user's
	args := []string{"run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply"}
	_, stderr, err, code := runSplit(t, append(args, "--keep-runs", "0")...)
	if code != ExitOK || strings.Contains(stderr, "removed") {
		t.Fatalf("--keep-runs 0: exit %d, %v; want 0 and nothing removed:\n%s", code, err, stderr)
	}
	fixtures := "20200101-000000-1,20200101-000000-4,20200101-000000-5,20200102-000000-2,20200103-000000-3,mine"
	ents, _ := os.ReadDir(runs)
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "2020") || e.Name() == "mine" {
			names = append(names, e.Name())
		} else {
			os.RemoveAll(filepath.Join(runs, e.Name())) // the run's own: not a candidate below
		}
	}
	if got := strings.Join(names, ","); got != fixtures {
		t.Fatalf("--keep-runs 0 left %s; want every folder: %s", got, fixtures)
	}
	_, stderr, err, code = runSplit(t, append(args, "--keep-runs", "2")...)
	if code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	// Left: the run just made and 20200103's (the newest two), and the
	// three that are not candidates.
	want := "homatest: removed 2 old run folders (--keep-runs 2 keeps the newest 2 under homatest-runs; 0 keeps all): " +
		filepath.Join("homatest-runs", "20200102-000000-2") + ", " + filepath.Join("homatest-runs", "20200101-000000-1") + "\n"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	ents, _ = os.ReadDir(runs)
	names = nil
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "2020") || e.Name() == "mine" {
			names = append(names, e.Name())
		}
	}
	if got := strings.Join(names, ","); got != "20200101-000000-4,20200101-000000-5,20200103-000000-3,mine" || len(ents) != 5 {
		t.Errorf("homatest-runs holds %d entries, the older %s; want the run just made and 20200101-000000-4,20200101-000000-5,20200103-000000-3,mine", len(ents), got)
	}
}

// TestSettleKilledRunRenamesCutCapture: the folder of a run killed
// without a word (SIGKILL: no pass renamed its capture) gets the same
// settling as an interrupted pass's: a capture.pcapng the kill cut (the
// simulator writes it as it goes) is renamed capture.partial.pcapng with
// its sidecars, a whole one stays, and the folder is marked interrupted.
// Fails on the old code (the cut capture kept its name).
func TestSettleKilledRunRenamesCutCapture(t *testing.T) {
	dir := t.TempDir()
	whole, err := os.ReadFile(filepath.Join(faultsDir, "ACK-004-ack-before-response.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"pass-1/capture.pcapng":        whole,
		"pass-2/capture.pcapng":        whole[:len(whole)-7],
		"pass-2/capture.pcapng.params": []byte("wire=current\n"),
		"pass-2/.capture-1.spool":      whole,
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := settleKilledRun(dir, 4242); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"pass-1/capture.pcapng": true, "pass-2/capture.pcapng": false, "pass-2/capture.pcapng.params": false,
		"pass-2/capture.partial.pcapng": true, "pass-2/capture.partial.pcapng.params": true, "pass-2/.capture-1.spool": false,
		"interrupted": true,
	} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, want)
		}
	}
}
