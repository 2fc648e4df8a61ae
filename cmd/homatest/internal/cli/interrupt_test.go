package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/internal/timescale"
)

// refSwallowing is the ref agent on standard input and output, except
// that it never sees a request of op (agent.OpCall, OpListen): the request
// is dropped (and said so on standard error), so the harness waits for a
// reply that never comes, as with an implementation hung in it.
func refSwallowing(op string) int {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var req agent.Request
			if json.Unmarshal(sc.Bytes(), &req) == nil && req.Op == op {
				fmt.Fprintf(os.Stderr, "swallowed %s seq %d\n", op, req.Seq)
				continue
			}
			w.Write(append(sc.Bytes(), '\n'))
		}
		w.Close()
	}()
	err := agent.ServeRef(context.Background(), r, os.Stdout, agent.RefOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestRunInterruptDuringHungCall: SIGINT to homatest run while the IUT
// hangs in a call (its reply timeout ten minutes away) ends the run within
// conformance.InterruptGrace, exit 130: the spec's context is cancelled, the call
// returns, and the pass removes its namespaces itself (a pass killed at
// the end of the grace would leave them behind).
func TestRunInterruptDuringHungCall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := writeFile(t, dir, "hang.yaml", fmt.Sprintf("name: hang\ncommand: [%s]\nenv: {HOMATEST_CLI_CHILD: ref-swallowing-calls}\n"+
		"params: {tick_ns: 5000000}\ntimeouts: {reply: 10m, shutdown: 1s}\n", self))
	arts := filepath.Join(dir, "run")
	before := htNamespaces(t)
	var out bytes.Buffer
	cmd, done := startChild(t, &out, "run", "--impl", m, "--env", "ns", "--focus", "RESEND-answered", "--artifacts", arts)

	// Wait for the call to hang: the agent's log says it swallowed one.
	agentLog := filepath.Join(arts, "pass-1", "h1.agent.stderr.log")
	giveUp := time.After(timescale.D(2 * time.Minute))
	for {
		if b, _ := os.ReadFile(agentLog); bytes.Contains(b, []byte("swallowed call")) {
			break
		}
		select {
		case <-done:
			t.Fatalf("homatest run ended before the IUT got a call: exit %d\n%s", cmd.ProcessState.ExitCode(), out.String())
		case <-giveUp:
			t.Fatalf("no call reached the IUT's agent within 2 minutes (its log %s)\n%s", agentLog, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}

	interrupted := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(conformance.InterruptGrace + timescale.D(30*time.Second)):
		t.Fatalf("homatest run still running %v after SIGINT\n%s", time.Since(interrupted), out.String())
	}
	took := time.Since(interrupted)
	t.Logf("interrupted during a hung call: the run ended %v later (grace %v)", took.Round(time.Millisecond), conformance.InterruptGrace)
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(out.String(), "interrupted: the pass in progress was stopped") {
		t.Errorf("exit %d, want 130 and the interrupted line\n%s", code, out.String())
	}
	if took >= conformance.InterruptGrace {
		t.Errorf("the run ended %v after SIGINT, not within the interrupt grace period %v: the hung call held the pass", took, conformance.InterruptGrace)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}

// TestRunInterruptSim: SIGTERM to homatest run --env sim between passes
// ends it with exit 130 and one line that says the pass was stopped and
// the run folder is marked partial, without claiming namespaces were
// removed (the simulator makes none; it used to say so), and the folder
// holds the marker and no report page, not even an earlier run's: the
// folder is reused, and the earlier run's report.html went with its
// passes (a trial found it beside the partial pass, where a reader takes
// it for this run's). The passes that finished were printed as each
// finished (they used to be printed only at the end, so an interrupted
// run showed none), and a last line says how many of --repeat finished.
func TestRunInterruptSim(t *testing.T) {
	arts := filepath.Join(t.TempDir(), "run")
	for f, body := range map[string]string{"report.html": "earlier report", "pass-1/pass.json": "{}", "pass-7/pass.json": "{}"} {
		os.MkdirAll(filepath.Dir(filepath.Join(arts, f)), 0o755)
		if err := os.WriteFile(filepath.Join(arts, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	holdPass2(t)
	var out bytes.Buffer
	cmd, done := startChild(t, &out, "run", "--env", "sim", "--focus", "GRANT-long-request", "--repeat", "1000", "--artifacts", arts)
	interruptInPass2(t, cmd, done, arts, out.String)
	// Pass 1's capture, and pass 2's if it began one: whole.
	want := regexp.MustCompile("\nhomatest: interrupted: the pass in progress was stopped; its partial folder " + regexp.QuoteMeta(arts) +
		" is marked interrupted; [12] complete captures? kept \\(packets up to the interruption\\)\n$")
	if code := cmd.ProcessState.ExitCode(); code != 130 || !want.MatchString(out.String()) {
		t.Errorf("exit %d, output:\n%s\nwant 130 and a last line matching %q", code, out.String(), want)
	}
	// The text says how many passes finished (it did not: only JSON's
	// "interrupted" did).
	if !strings.Contains(out.String(), "\nINCOMPLETE: interrupted after 1 of 1000 passes finished (each printed above); artifacts in "+arts+"\n") {
		t.Errorf("output:\n%s\nwant the line saying 1 of 1000 passes finished", out.String())
	}
	// Pass 1 follows the line on the earlier run's files.
	if !strings.Contains(out.String(), "(and its report.html)\npass 1/1000: ") || !strings.Contains(out.String(), "; 1 spec in ") || !strings.Contains(out.String(), "\n  grant ") {
		t.Errorf("output:\n%s\nwant pass 1's result (its header and area table) before the interruption", out.String())
	}
	checkInterruptedFolder(t, arts, filepath.Join("pass-1", "result.json"))
	if !strings.Contains(out.String(), "removed 2 pass folders of an earlier run from "+arts+": pass-1, pass-7 (and its report.html)") {
		t.Errorf("output:\n%s\nwant the earlier run's passes and report named as removed", out.String())
	}
	if _, err := os.Stat(filepath.Join(arts, "pass-7")); !os.IsNotExist(err) {
		t.Errorf("the earlier run's pass-7 is still there: %v", err)
	}
}

// TestRunInterruptSimCaptures: an interrupted run leaves only captures
// that read whole: one its pass could not finish (here planted, as a pass
// killed after conformance.InterruptGrace leaves it: cut mid-block, or a
// temporary spool) is renamed NAME.partial.pcapng or removed, and the last
// line says so (it said nothing, and the cut file passed for whole).
func TestRunInterruptSimCaptures(t *testing.T) {
	arts := filepath.Join(t.TempDir(), "run")
	whole, err := os.ReadFile(filepath.Join(faultsDir, "ACK-004-ack-before-response.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	holdPass2(t)
	var out bytes.Buffer
	cmd, done := startChild(t, &out, "run", "--env", "sim", "--focus", "GRANT-long-request", "--repeat", "1000", "--artifacts", arts)
	plant := func() {
		os.WriteFile(filepath.Join(arts, "pass-2", "sent-1.pcapng"), whole[:len(whole)/2], 0o644)
		os.WriteFile(filepath.Join(arts, "pass-2", ".capture-1.spool"), whole, 0o644)
	}
	interruptInPassAfter(t, cmd, done, arts, 2, plant, out.String)
	want := regexp.MustCompile("; its partial folder " + regexp.QuoteMeta(arts) + " is marked interrupted; [12] complete captures? kept \\(packets up to the interruption\\), " +
		"1 capture cut short kept as pass-2/sent-1.partial.pcapng \\(check reads up to the cut\\), 1 unfinished temporary file removed\n$")
	if code := cmd.ProcessState.ExitCode(); code != 130 || !want.MatchString(out.String()) {
		t.Errorf("exit %d, output:\n%s\nwant 130 and a last line matching %q", code, out.String(), want)
	}
	n := 0
	filepath.WalkDir(arts, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".pcapng") && !strings.HasSuffix(p, partialCapture) {
			n++
			if !readsWhole(p) {
				t.Errorf("%s is left and does not read whole", p)
			}
		}
		if err == nil && strings.HasPrefix(d.Name(), ".capture-") {
			t.Errorf("%s is left", p)
		}
		return nil
	})
	if n == 0 {
		t.Errorf("no capture left in %s: pass 1's is whole", arts)
	}
}

// TestRunInterruptSimJSON: an interrupted run --repeat with -o json and
// --junit writes the passes that finished, marked interrupted (it used to
// write nothing, while text mode showed them). Its JUnit file is not
// green: an <error> testcase says which pass was interrupted (it used to
// have only passed testcases, the interruption a property), and the
// finished pass's suite is named "(pass 1)" as with every --repeat run
// (it used to be named as a single pass's).
func TestRunInterruptSimJSON(t *testing.T) {
	dir := t.TempDir()
	arts, junit := filepath.Join(dir, "run"), filepath.Join(dir, "junit.xml")
	holdPass2(t)
	var stdout, stderr bytes.Buffer
	cmd, done := startChildSplit(t, &stdout, &stderr, "run", "--env", "sim", "--focus", "GRANT-long-request", "--repeat", "1000", "-o", "json", "--junit", junit, "--artifacts", arts)
	interruptInPass2(t, cmd, done, arts, stderr.String)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130\n%s", code, stderr.String())
	}
	var rep runReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Passes) < 1 || rep.Interrupted != "interrupted during pass 2 of 1000, after 1 finished pass" || rep.SpecsRun < 1 {
		t.Errorf("JSON report %+v (%v); want the finished passes, marked interrupted:\n%s", rep, err, stdout.String())
	}
	// The passes that finished passed, but the run did not finish: its
	// verdict is incomplete, never pass (it used to say pass).
	if rep.Verdict != "incomplete" || rep.Failed != 0 {
		t.Errorf("verdict %q with %d failed passes, want incomplete and 0", rep.Verdict, rep.Failed)
	}
	b, err := os.ReadFile(junit)
	var js conformance.JUnitSuites
	if err != nil || xml.Unmarshal(b, &js) != nil {
		t.Fatalf("--junit %s: %v\n%s", junit, err, b)
	}
	if js.Errors != 1 || len(js.TestSuites) != 2 || js.TestSuites[0].Name != "Homa conformance (pass 1)" || js.TestSuites[0].Tests == 0 ||
		js.TestSuites[1].Name != "homatest run" || len(js.TestSuites[1].TestCases) != 1 || js.TestSuites[1].TestCases[0].Error == nil ||
		js.TestSuites[1].TestCases[0].Error.Message != "interrupted during pass 2 of 1000, after 1 finished pass" {
		t.Errorf("--junit %s: want errors=1, the suite \"Homa conformance (pass 1)\" and an <error> testcase \"interrupted during pass 2 of 1000, after 1 finished pass\":\n%s", junit, b)
	}
}

// TestRunInterruptSimJSONPartialPass: SIGTERM in the middle of the only
// pass, once 3 specs have finished (ginkgo.log shows them): -o json
// reports the pass with the specs that finished (verdict incomplete, the
// spec cut short named in "running" and in "interrupted") and --junit
// lists their testcases and one error for the interruption. Before, the
// report held "passes": [] and "specs_run": 0, and the JUnit one error,
// although the pass's result.json held the finished specs.
func TestRunInterruptSimJSONPartialPass(t *testing.T) {
	dir := t.TempDir()
	arts, junit := filepath.Join(dir, "run"), filepath.Join(dir, "junit.xml")
	var stdout, stderr bytes.Buffer
	// The whole suite: a pass long enough to be interrupted in.
	cmd, done := startChildSplit(t, &stdout, &stderr, "run", "--env", "sim", "-o", "json", "--junit", junit, "--artifacts", arts)
	threeDone := func() {
		giveUp := time.After(timescale.D(2 * time.Minute))
		for {
			if b, _ := os.ReadFile(filepath.Join(arts, "pass-1", "ginkgo.log")); bytes.Count(b, []byte("\n• [")) >= 3 {
				return
			}
			select {
			case <-giveUp:
				t.Fatalf("no 3 specs finished within 2 minutes\n%s", stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	interruptInPassAfter(t, cmd, done, arts, 1, threeDone, stderr.String)
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr.String())
	}
	var rep runReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Verdict != "incomplete" || len(rep.Passes) != 1 {
		t.Fatalf("JSON report %+v (%v); want verdict incomplete and the partial pass:\n%s", rep, err, stdout.String())
	}
	p := rep.Passes[0]
	if rep.SpecsRun < 3 || rep.SpecsRun != len(p.Specs) {
		t.Errorf("specs_run %d, %d specs in the pass; want the ≥ 3 that finished", rep.SpecsRun, len(p.Specs))
	}
	for _, s := range p.Specs {
		if s.State != "passed" {
			t.Errorf("spec %s: state %s, want passed (only finished specs)", s.Name, s.State)
		}
	}
	cut := ""
	if len(p.Running) == 1 {
		cut = "; cut short: " + p.Running[0]
	}
	if want := fmt.Sprintf("interrupted during pass 1 of 1, after 0 finished passes (its %d finished specs reported%s)", len(p.Specs), cut); rep.Interrupted != want {
		t.Errorf("interrupted %q, want %q", rep.Interrupted, want)
	}
	b, err := os.ReadFile(junit)
	// The property's value is XML-escaped: a cut-short spec's
	// description may hold an apostrophe (GRANT-fifo-paced's "receiver's").
	var esc bytes.Buffer
	_ = xml.EscapeText(&esc, []byte(rep.Interrupted))
	if err != nil || !bytes.Contains(b, []byte(fmt.Sprintf(`<testsuites tests="%d" disabled="0" errors="1" failures="0"`, len(p.Specs)+1))) ||
		bytes.Count(b, []byte(`status="passed"`)) != len(p.Specs) || bytes.Contains(b, []byte("<skipped")) || !bytes.Contains(b, []byte(`name="interrupted" value="`+esc.String()+`"`)) {
		t.Errorf("--junit %s: %v\n%.2000s", junit, err, b)
	}
}

// interruptInPass2 is interruptInPass in pass 2. The child running pass 2
// holds until interrupted (HOMATEST_TEST_HOLD_PASS, set by holdPass2).
func interruptInPass2(t *testing.T, cmd *exec.Cmd, done <-chan struct{}, arts string, out func() string) {
	t.Helper()
	interruptInPass(t, cmd, done, arts, 2, out)
}

// interruptInPass sends SIGTERM to cmd, a homatest run into arts, once
// its pass number pass has begun (the ones before have then written their
// files), and waits for it to end; out is what it said so far, for
// failures.
func interruptInPass(t *testing.T, cmd *exec.Cmd, done <-chan struct{}, arts string, pass int, out func() string) {
	t.Helper()
	interruptInPassAfter(t, cmd, done, arts, pass, func() {}, out)
}

// interruptInPassAfter is interruptInPass calling before just before it
// sends SIGTERM.
func interruptInPassAfter(t *testing.T, cmd *exec.Cmd, done <-chan struct{}, arts string, pass int, before func(), out func() string) {
	t.Helper()
	giveUp := time.After(timescale.D(2 * time.Minute))
	for {
		if _, err := os.Stat(filepath.Join(arts, fmt.Sprintf("pass-%d", pass), "pass.json")); err == nil {
			break
		}
		select {
		case <-done:
			t.Fatalf("homatest run ended before its pass %d: exit %d\n%s", pass, cmd.ProcessState.ExitCode(), out())
		case <-giveUp:
			t.Fatalf("no pass %d within 2 minutes\n%s", pass, out())
		case <-time.After(20 * time.Millisecond):
		}
	}
	before()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(conformance.InterruptGrace + timescale.D(30*time.Second)):
		t.Fatalf("homatest run still running after SIGTERM\n%s", out())
	}
}

// startChild starts homatest with args in a child process (this test
// binary, HOMATEST_CLI_CHILD=1), its standard output and error into out,
// and returns it with a channel closed once it has ended. The child is
// killed if the test ends first.
func startChild(t *testing.T, out io.Writer, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	return startChildSplit(t, out, out, args...)
}

// startChildSplit is startChild with standard output into stdout and
// standard error into stderr.
func startChildSplit(t *testing.T, stdout, stderr io.Writer, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "HOMATEST_CLI_CHILD=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd, done
}

// holdPass2 makes the children of the homatest runs a test starts hold
// their pass 2 until interrupted (see TestMain), so that the interrupt
// lands in pass 2 however fast pass 2 would run.
func holdPass2(t *testing.T) { t.Setenv("HOMATEST_TEST_HOLD_PASS", "pass-2") }

// TestInterruptedBeforeAnyPass: a text run interrupted before its first
// pass finished says "0 of 1 passes finished" without "(each printed
// above)": nothing above is a pass report (a trial read it as lost
// output); after one finished pass the words stay (TestRunInterruptSim).
func TestInterruptedBeforeAnyPass(t *testing.T) {
	arts := t.TempDir()
	var out bytes.Buffer
	o := &runOpts{output: "text", repeat: 1, artifacts: arts, ctx: context.Background(), stderr: io.Discard}
	err := o.interruptedAfter(&out, conformance.ErrInterrupted, nil, nil, nil, "")
	if e, ok := err.(*ExitError); !ok || e.Code != 130 {
		t.Errorf("error %v, want exit 130", err)
	}
	if want := "\nINCOMPLETE: interrupted after 0 of 1 passes finished; artifacts in " + arts + "\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// TestInterruptedVerdictCountsFinished: the text verdict of an
// interrupted run counts only the passes that finished; a failed spec
// of the pass cut short is named apart. Before, the partial pass counted
// as finished: "FAIL (1 of 1 finished passes)" after 0 finished.
func TestInterruptedVerdictCountsFinished(t *testing.T) {
	failed := func() *conformance.Result {
		return &conformance.Result{Specs: []conformance.SpecResult{{Name: "X", State: "failed", Level: "MUST", Failure: "HOMA-X"}}}
	}
	passed := func() *conformance.Result {
		return &conformance.Result{Specs: []conformance.SpecResult{{Name: "X", State: "passed", Level: "MUST"}}}
	}
	for _, c := range []struct {
		name    string
		passes  []*conformance.Result
		partial *conformance.Result
		want    string
	}{
		{"cut short failed, none finished", nil, failed(), "\nFAIL (the interrupted pass 1): interrupted after 0 of 3 passes finished"},
		{"cut short failed, one finished passed", []*conformance.Result{passed()}, failed(), "\nFAIL (the interrupted pass 2; none of 1 finished passes): interrupted after 1 of 3 passes finished"},
		{"finished failed, cut short passed", []*conformance.Result{failed()}, passed(), "\nFAIL (1 of 1 finished passes): interrupted after 1 of 3 passes finished"},
		{"both failed", []*conformance.Result{failed(), passed()}, failed(), "\nFAIL (1 of 2 finished passes, and the interrupted pass 3): interrupted after 2 of 3 passes finished"},
		{"none failed", []*conformance.Result{passed()}, passed(), "\nINCOMPLETE: interrupted after 1 of 3 passes finished"},
	} {
		var out bytes.Buffer
		o := &runOpts{output: "text", repeat: 3, artifacts: t.TempDir(), ctx: context.Background(), stderr: io.Discard}
		o.interruptedAfter(&out, conformance.ErrInterrupted, c.passes, nil, c.partial, "")
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output\n%s\nwant %q", c.name, out.String(), c.want)
		}
	}
}
