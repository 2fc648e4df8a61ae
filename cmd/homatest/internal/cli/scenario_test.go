package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/scenario"
)

const exampleDir = "../../../../scenario/testdata"

// writeFile writes content to name in dir and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// htNamespaces returns the harness namespaces (ht<id>-*) present now.
func htNamespaces(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		if _, ok := harness.RunOf(e.Name()); ok {
			m[e.Name()] = true
		}
	}
	return m
}

// newLeftovers returns harness namespaces present now but not in before,
// of runs nobody holds (other packages' tests may be running).
func newLeftovers(t *testing.T, before map[string]bool) []string {
	t.Helper()
	live := map[harness.RunID]bool{}
	for _, id := range harness.LiveRuns("") {
		live[id] = true
	}
	var out []string
	for n := range htNamespaces(t) {
		if id, _ := harness.RunOf(n); !before[n] && !live[id] {
			out = append(out, n)
		}
	}
	return out
}

func TestScenarioValidate(t *testing.T) {
	out, err, code := run(t, "scenario", "validate", filepath.Join(exampleDir, "w4-half-load.yaml"))
	if code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	for _, want := range []string{"name: w4-half-load", "seed: 4", "  hosts: 4", "  rate: 1gbit", "  priorities: 8", "  response: \"100\"", "  pattern: many-to-one", "  timeout: 10s", "  level: must", "  profile: linux"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("resolved scenario lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", "topology: {hosts: 2}\nworkload:\n  dist: w7\n  count: 3\n")
	_, err, code = run(t, "scenario", "validate", bad)
	if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), "scenario "+bad+": line 3: workload.dist: ") {
		t.Errorf("bad dist: exit %d, %v", code, err)
	}
}

// TestScenarioUsageErrors: a bad scenario, a bad manifest and bad flags
// stop scenario run before anything is built (exit 2, one line).
func TestScenarioUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badManifest := writeFile(t, dir, "agent.yaml", "name: My Homa\ncommand: [/bin/true]\n")
	withManifest := writeFile(t, dir, "m.yaml", "iut: {impl: agent.yaml}\nworkload: {dist: w1, count: 3}\n")
	badField := writeFile(t, dir, "f.yaml", "workload: {dist: w1, count: 3, speed: 9}\n")
	tcRPC := writeFile(t, dir, "tc.yaml", "link: {backend: tc}\nworkload: {dist: w1, count: 3}\nplan:\n  rules:\n    - {match: {type: GRANT, rpc: 1}, action: drop}\n")
	before := htNamespaces(t)
	replayWant := "not a scenario run folder (no scenario.yaml): " + dir
	replayFileWant := "is a file, not a scenario run folder: give a folder homatest scenario run wrote (an explore script replays with homatest explore --replay FILE)"
	if os.Geteuid() != 0 {
		replayWant, replayFileWant = "needs root", "needs root"
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", withManifest}, "line 1: iut.impl: manifest " + badManifest + `: name: "My Homa": use 1-40 lower-case letters`},
		{[]string{"scenario", "run", badField}, `line 1: unknown field "speed" (workload.speed): check its spelling and indentation; known fields: dist, response, pattern`},
		{[]string{"scenario", "run", filepath.Join(dir, "none.yaml")}, "scenario " + filepath.Join(dir, "none.yaml") + ": no such file or directory (give a scenario YAML file, e.g. scenario/testdata/w4-half-load.yaml)"},
		{[]string{"scenario", "run", tcRPC}, "line 3: plan: link.backend tc cannot run this plan: plan rule 0: match.rpc: nftables cannot number RPCs"},
		{[]string{"scenario", "run", withManifest, "-o", "xml"}, `-o "xml": want text, json or html`},
		{[]string{"scenario", "run"}, "scenario run wants one scenario file, got 0 arguments"},
		{[]string{"replay", dir}, replayWant},
		{[]string{"replay", badField}, replayFileWant},
	} {
		_, err, code := run(t, c.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, %v; want exit 2 and one line containing %q", c.args, code, err, c.want)
		}
	}
	if os.Geteuid() == 0 {
		if left := newLeftovers(t, before); len(left) > 0 {
			t.Errorf("namespaces left behind: %v", left)
		}
	}
}

// TestScenarioNotRootAndKernel: as an unprivileged user scenario run says
// it needs root; as root, a tc link this kernel cannot emulate names the
// missing feature and the switch backend. Both exit 2 and leave nothing.
func TestScenarioNotRootAndKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		_, err, code := run(t, "scenario", "run", filepath.Join(exampleDir, "two-hosts-drops.yaml"))
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "needs root") {
			t.Fatalf("not root: exit %d, %v", code, err)
		}
		return
	}
	// Root: run this test binary as nobody (uid 65534), from a copy and a
	// scenario file it can read.
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "homatest")
	copyFile(t, self, exe)
	sc := writeFile(t, dir, "s.yaml", "workload: {dist: '1000', count: 1}\n")
	// A run folder as sudo leaves it: root's, unreadable to others.
	runDir := filepath.Join(dir, "rootrun")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, runDir, "scenario.yaml", "workload: {dist: '1000', count: 1}\n")
	for _, args := range [][]string{{"scenario", "run", sc, "--artifacts", filepath.Join(dir, "runs")}, {"replay", runDir}} {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "HOMATEST_CLI_CHILD=1")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != ExitUsage || !strings.Contains(stderr.String(), "needs root") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("%v as nobody: exit %d (%v), stderr %q; want 2 and one line saying it needs root", args, code, err, stderr.String())
		}
	}

	k, err := netem.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	if k.Netem {
		return // this kernel can delay frames with tc
	}
	before := htNamespaces(t)
	tc := writeFile(t, dir, "tc.yaml", "link: {backend: tc, rate: 100mbit, delay: 1ms}\nworkload: {dist: '1000', count: 1}\n")
	_, err, code := run(t, "scenario", "run", tc, "--artifacts", filepath.Join(dir, "tc"), "-q")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "delay: needs sch_netem") || !strings.Contains(err.Error(), "use link.backend switch") || strings.Contains(err.Error(), "--backend") {
		t.Errorf("tc with delay: exit %d, %v", code, err)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestScenarioRunAndReplay runs the two-host example through the CLI (this
// test binary is also the agent) and replays it: exit 0, the summary, and
// "same" fault-plan drops.
func TestScenarioRunAndReplay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	before := htNamespaces(t)
	a := filepath.Join(dir, "a")
	out, err, code := run(t, "scenario", "run", filepath.Join(exampleDir, "two-hosts-drops.yaml"), "--artifacts", a, "-q")
	if code != ExitOK {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{"scenario two-hosts-drops (seed 11): 3 RPCs, 3 ok, 0 failed", "latency: p50 ", "switch drops: plan 2, loss 0, buffer 0",
		`plan rule 0 "request DATA in [50000, 51424) of RPC 2": 1 hit`, "HOMA-GRANT-001", "PASS; artifacts in " + a} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err, code = run(t, "replay", a, "--artifacts", filepath.Join(dir, "b"), "-q", "-o", "json")
	if code != ExitOK {
		t.Fatalf("replay: exit %d: %v\n%s", code, err, out)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.Same || rep.PlanDrops != 2 || rep.Summary.OK != 3 || rep.Summary.Seed != 11 || rep.Original != a {
		t.Errorf("replay report %+v", rep)
	}
	// Into the folder it replays, by another name: refused, the folder
	// untouched (it would be overwritten and compared with itself).
	summary, _ := os.ReadFile(filepath.Join(a, "summary.json"))
	_, err, code = run(t, "replay", a, "--artifacts", a+"/.", "-q")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "is the run folder being replayed") {
		t.Errorf("replay into its own folder: exit %d, %v; want 2 saying so", code, err)
	}
	if now, _ := os.ReadFile(filepath.Join(a, "summary.json")); len(summary) == 0 || !bytes.Equal(now, summary) {
		t.Errorf("replay into its own folder changed its summary.json (%d bytes before, %d after)", len(summary), len(now))
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}

// TestScenarioSimRunAndReplay runs the two-host example in the simulator
// through the CLI (no root) and replays it: exit 0, the summary, the same
// fault-plan drops and byte-identical files; a folder with one changed
// byte makes replay exit 1 and name the file.
func TestScenarioSimRunAndReplay(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	out, err, code := run(t, "scenario", "run", "--env", "sim", filepath.Join(exampleDir, "two-hosts-drops.yaml"), "--artifacts", a, "-q")
	if code != ExitOK {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{"scenario two-hosts-drops (seed 11, simulated): 3 RPCs, 3 ok, 0 failed", "switch drops: plan 2, loss 0, buffer 0",
		`plan rule 0 "request DATA in [50000, 51424) of RPC 2": 1 hit`, "PASS; artifacts in " + a} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err, code = run(t, "replay", a, "--artifacts", filepath.Join(dir, "b"), "-q")
	if code != ExitOK || !strings.Contains(out, "fault-plan drops: same (2 packets acted on") || !strings.Contains(out, "files: byte-identical (13 files") {
		t.Fatalf("replay: exit %d: %v\n%s", code, err, out)
	}
	// One byte of the original's record changed: the replay differs.
	p := filepath.Join(a, "rpcs.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err, code = run(t, "replay", a, "--artifacts", filepath.Join(dir, "c"), "-q", "-o", "json")
	var rep replayReport
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
		t.Fatalf("%v\n%s", jerr, out)
	}
	if code != ExitViolations || err == nil || rep.Same || len(rep.FileDifferences) != 1 || !strings.HasPrefix(rep.FileDifferences[0], "rpcs.json differs") {
		t.Errorf("replay of a changed folder: exit %d, %v, %+v", code, err, rep)
	}
	// "replay ." from inside the run folder: the default folder goes
	// beside it (a-replay-<time>), not inside it (".-replay-<time>").
	t.Chdir(a)
	run(t, "replay", ".", "-q")
	if inside, _ := filepath.Glob(filepath.Join(a, "*replay*")); len(inside) != 0 {
		t.Errorf("replay . wrote %v inside the run folder", inside)
	}
	if beside, _ := filepath.Glob(a + "-replay-*"); len(beside) != 1 {
		t.Errorf("replay . wrote %v beside the run folder, want one %s-replay-<time>", beside, a)
	}
}

// TestScenarioInterrupt: SIGINT during scenario run (in the simulator, no
// root) ends it with exit 130 and one line saying it was interrupted; its
// folder is marked interrupted and replay refuses it (exit 2, saying
// why), as replay interrupted in turn marks its own folder.
func TestScenarioInterrupt(t *testing.T) {
	dir := t.TempDir()
	// SIGINT once the workload runs (w4 at half of 1 Gbit/s for 5 s of
	// virtual time: many seconds of CPU), not before.
	interrupt := func(args ...string) (string, int) {
		return interruptAt(t, syscall.SIGINT, "running the workload", args...)
	}
	a := filepath.Join(dir, "a")
	out, code := interrupt("scenario", "run", "--env", "sim", filepath.Join(exampleDir, "w4-half-load.yaml"), "--artifacts", a)
	last := out[strings.LastIndex(out, "\n")+1:]
	if code != 130 || !strings.HasPrefix(last, "homatest: interrupted: the run stopped before it finished; its partial folder "+a+" is marked interrupted") {
		t.Fatalf("scenario run interrupted: exit %d, stderr:\n%s\nwant 130 and the interrupted line last", code, out)
	}
	if _, err := os.Stat(filepath.Join(a, "interrupted")); err != nil {
		t.Errorf("interrupted run folder is not marked: %v", err)
	}
	_, err, code := run(t, "replay", a, "-q")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "interrupted before it finished") {
		t.Errorf("replay of the interrupted folder: exit %d, %v; want 2 saying it was interrupted", code, err)
	}
	// A finished run, replayed and interrupted.
	b := filepath.Join(dir, "b")
	writeFile(t, dir, "short.yaml", "env: sim\ntopology: {hosts: 4}\nlink: {rate: 1gbit}\nworkload: {dist: w4, load: 0.5, count: 5}\n")
	if _, err, code := run(t, "scenario", "run", filepath.Join(dir, "short.yaml"), "--artifacts", b, "-q"); code != ExitOK {
		t.Fatalf("short run: exit %d, %v", code, err)
	}
	// Its scenario, made long, as the original whose replay is stopped.
	long, err := os.ReadFile(filepath.Join(exampleDir, "w4-half-load.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, b, "scenario.yaml", "env: sim\n"+string(long))
	c := filepath.Join(dir, "c")
	out, code = interrupt("replay", b, "--artifacts", c)
	if code != 130 || !strings.Contains(out, "homatest: interrupted: the run stopped before it finished") {
		t.Fatalf("replay interrupted: exit %d, stderr:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c, "interrupted")); err != nil {
		t.Errorf("interrupted replay folder is not marked: %v", err)
	}
}

// TestScenarioNoRPC: a workload that issues no RPC (a duration shorter
// than the first arrival) is an error, exit 2, naming the fix, and leaves
// no run folder; it used to report "0 RPCs ... PASS". The seed is fixed:
// arrivals are random, and some seeds put the first inside the 1 µs.
func TestScenarioNoRPC(t *testing.T) {
	dir := t.TempDir()
	sc := writeFile(t, dir, "none.yaml", "env: sim\nseed: 1\nlink: {rate: 1gbit}\nworkload: {dist: w4, load: 0.5, duration: 1us}\n")
	runs := filepath.Join(dir, "runs", "a")
	out, err, code := run(t, "scenario", "run", sc, "--artifacts", runs, "-q")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "the workload produced no RPC (w4 requests, 100 responses, many-to-one, load 0.5, for 1µs): give a longer workload.duration, or a workload.count") {
		t.Errorf("no RPC: exit %d, %v\n%s", code, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("run folder after a run with no RPC: %v; want none", err)
	}
}

// interruptAt runs homatest with args in a child process (startChild)
// and sends it sig as soon as a line of its output (standard output and
// error) contains trigger; it returns that output and the exit code.
func interruptAt(t *testing.T, sig syscall.Signal, trigger string, args ...string) (string, int) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd, done := startChild(t, pw, args...)
	go func() { <-done; pw.Close() }()
	var lines []string
	sent := false
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if !sent && strings.Contains(sc.Text(), trigger) {
			cmd.Process.Signal(sig)
			sent = true
		}
	}
	<-done
	if !sent {
		t.Fatalf("homatest %v ended (exit %d) without printing %q, so it was never interrupted:\n%s", args, cmd.ProcessState.ExitCode(), trigger, strings.Join(lines, "\n"))
	}
	return strings.Join(lines, "\n"), cmd.ProcessState.ExitCode()
}

// cancelOn is a writer that calls cancel once what is written holds
// text (a log line marking the moment to interrupt at).
type cancelOn struct {
	buf    bytes.Buffer
	text   string
	cancel func()
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.text) {
		c.cancel()
	}
	return len(p), nil
}

// interruptScenarioWorkload runs scenario w4-overload-sim with -o output,
// interrupts it once it says it runs the workload, fails t unless it
// exits 130, and returns its standard output and run folder.
func interruptScenarioWorkload(t *testing.T, output string) (*bytes.Buffer, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "run")
	cmd := New()
	var out bytes.Buffer
	errw := &cancelOn{text: "running the workload", cancel: cancel}
	cmd.SetOut(&out)
	cmd.SetErr(errw)
	cmd.SetArgs([]string{"scenario", "run", "--artifacts", dir, "-o", output, filepath.Join(exampleDir, "w4-overload-sim.yaml")})
	err := cmd.ExecuteContext(ctx)
	if code := ExitCode(err); code != 130 {
		t.Fatalf("exit %d, %v, want 130\n%s", code, err, errw.buf.String())
	}
	return &out, dir
}

// TestScenarioInterruptedJSON: scenario run -o json interrupted during
// the workload writes a valid JSON report of what finished (verdict
// incomplete, why and where, the RPCs issued, ok, failed and cut short)
// and exits 130; it wrote nothing, so a CI job had nothing to parse.
func TestScenarioInterruptedJSON(t *testing.T) {
	out, dir := interruptScenarioWorkload(t, "json")
	var rep scenarioInterrupted
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("-o json: %v:\n%s", err, out.String())
	}
	if rep.Verdict != "incomplete" || rep.Dir != dir || !strings.HasPrefix(rep.Interrupted, "interrupted: ") || rep.Name != "w4-overload" ||
		rep.RPCs == 0 || rep.RPCs != rep.OK+rep.Failed+rep.CutShort || !strings.HasPrefix(rep.Phase, "running the workload on ref (") {
		t.Errorf("report %+v; want verdict incomplete, dir %s, why, the phase (running the workload), and RPCs issued = ok + failed + cut short > 0", rep, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, harness.InterruptedFile)); err != nil {
		t.Errorf("the run folder is not marked interrupted: %v", err)
	}
}

// TestScenarioInterruptedText: scenario run -o text interrupted during
// the workload prints one INCOMPLETE line saying where it stopped (the
// phase) and how many RPCs it had issued, ok, failed and cut short, and
// its partial folder; it printed nothing. Fails on the old code.
func TestScenarioInterruptedText(t *testing.T) {
	out, dir := interruptScenarioWorkload(t, "text")
	re := regexp.MustCompile(`^INCOMPLETE: scenario w4-overload interrupted while running the workload on ref \([^\n]*\): (\d+) RPCs issued, (\d+) ok, (\d+) failed, (\d+) cut short; the capture was not checked; partial run folder ` + regexp.QuoteMeta(dir) + "\n$")
	m := re.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("text output %q, want it to match %s", out.String(), re)
	}
	n := make([]int, 4)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	if n[0] == 0 || n[0] != n[1]+n[2]+n[3] {
		t.Errorf("RPCs %d, ok %d, failed %d, cut short %d: want issued = ok + failed + cut short > 0", n[0], n[1], n[2], n[3])
	}
}

// TestScenarioHelpDurationAndCount: a workload may give duration and
// count together, and the help says which stops it (the first reached,
// harness/traffic's Sequence and the run's clock). It said "duration or
// count" while both were accepted.
func TestScenarioHelpDurationAndCount(t *testing.T) {
	out, err, _ := run(t, "scenario", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "duration and/or count (both: it stops at whichever comes first)") {
		t.Errorf("scenario --help does not say duration and count may come together:\n%s", out)
	}
}

// TestScenarioSimRuleNeverFired: a scenario whose plan rule never fires
// (a 9th GRANT of the two-host example's RPC 3, which gets far fewer) did
// not test its fault: scenario run exits 2 (it exited 0, PASS), says
// INCOMPLETE with the rule in its text, its error line and -o json, and
// keeps the folder.
func TestScenarioSimRuleNeverFired(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(exampleDir, "two-hosts-drops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	y := filepath.Join(dir, "nf.yaml")
	if err := os.WriteFile(y, []byte(strings.Replace(string(b), "check:", "    - name: 9th GRANT of RPC 3\n      match: {type: GRANT, rpc: 3, nth: 9}\n      action: drop\ncheck:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a")
	out, err, code := run(t, "scenario", "run", "--env", "sim", y, "--artifacts", a, "-q")
	rule := `plan rule 2 "9th GRANT of RPC 3" never fired`
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "INCOMPLETE: "+rule) || !strings.Contains(out, "  INCOMPLETE "+rule) ||
		!strings.Contains(out, "INCOMPLETE: 1 plan rule never fired, so the run did not test its fault; artifacts in "+a) {
		t.Fatalf("exit %d, %v; want 2 naming the rule:\n%s", code, err, out)
	}
	if _, err := os.Stat(filepath.Join(a, "summary.json")); err != nil {
		t.Errorf("the folder was not kept: %v", err)
	}
	out, _, code = run(t, "scenario", "run", "--env", "sim", y, "--artifacts", filepath.Join(dir, "b"), "-q", "-o", "json")
	var rep struct {
		Verdict    string   `json:"verdict"`
		Incomplete []string `json:"incomplete"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitUsage || rep.Verdict != "incomplete" || len(rep.Incomplete) != 1 || !strings.HasPrefix(rep.Incomplete[0], rule) {
		t.Errorf("-o json: exit %d, %+v (%v)", code, rep, err)
	}
}

// TestScenarioRunExistingFolder: scenario run (and replay) refuses an
// --artifacts folder that holds files already, leaving them as they were,
// unless --force. Before, a run replaced the files of the names it writes
// (an earlier run's summary.json, captures and logs) without a word.
func TestScenarioRunExistingFolder(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, "summary.json", "an earlier run's\n")
	refused := func(args ...string) {
		t.Helper()
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "--artifacts "+a+" holds files already (1 entry; an earlier run's?)") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("%v: exit %d, %v; want 2 saying the folder holds files and naming --force", args[:2], code, err)
		}
		if got, _ := os.ReadFile(filepath.Join(a, "summary.json")); string(got) != "an earlier run's\n" {
			t.Errorf("%v: the refused run changed summary.json: %q", args[:2], got)
		}
	}
	sc := filepath.Join(exampleDir, "two-hosts-drops.yaml")
	refused("scenario", "run", "--env", "sim", sc, "--artifacts", a, "-q")
	b := filepath.Join(t.TempDir(), "b")
	if _, err, code := run(t, "scenario", "run", "--env", "sim", sc, "--artifacts", b, "-q"); code != ExitOK {
		t.Fatalf("a run into a new folder: exit %d, %v", code, err)
	}
	refused("replay", b, "--artifacts", a, "-q")
	if _, err, code := run(t, "scenario", "run", "--env", "sim", sc, "--artifacts", a, "-q", "--force"); code != ExitOK {
		t.Fatalf("--force: exit %d, %v", code, err)
	}
	if got, _ := os.ReadFile(filepath.Join(a, "summary.json")); string(got) == "an earlier run's\n" {
		t.Errorf("--force: summary.json not replaced")
	}
}

// TestScenarioRunForceOverInterrupted: --force over the folder of an
// interrupted run leaves no marker of it, so the finished run written
// there replays. Before, the stale "interrupted" outlived the new run
// (exit 0) and LoadRun (replay) said the folder "holds a run that was
// interrupted".
func TestScenarioRunForceOverInterrupted(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, a, scenario.InterruptedFile, "interrupted by an earlier run\n")
	writeFile(t, a, "report.html", "an earlier run's page\n")
	sc := filepath.Join(exampleDir, "two-hosts-drops.yaml")
	if _, err, code := run(t, "scenario", "run", "--env", "sim", sc, "--artifacts", a, "-q", "--force"); code != ExitOK {
		t.Fatalf("--force: exit %d, %v", code, err)
	}
	if _, err := os.Stat(filepath.Join(a, scenario.InterruptedFile)); err == nil {
		t.Errorf("--force kept the earlier run's %s", scenario.InterruptedFile)
	}
	if got, _ := os.ReadFile(filepath.Join(a, "report.html")); string(got) == "an earlier run's page\n" {
		t.Errorf("--force kept the earlier run's report.html")
	}
	if _, _, err := scenario.LoadRun(a); err != nil {
		t.Errorf("LoadRun of the finished run: %v", err)
	}
}

// TestReplayHelpIncomplete: replay's --help lists exit 2 for a replay
// that is INCOMPLETE (verdictErr gives it, as scenario run's does). Before,
// its exit codes named for 2 only a folder without a finished run and an
// environment error.
func TestReplayHelpIncomplete(t *testing.T) {
	out, _, _ := run(t, "replay", "--help")
	help := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(help, "2 a folder without a finished run, a replay INCOMPLETE") {
		t.Errorf("replay --help does not list exit 2 for an INCOMPLETE replay:\n%s", out)
	}
}
