package cli

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/conformance"
)

// runSplit is run with standard output and standard error apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error, code int) {
	t.Helper()
	cmd := New()
	var o, e strings.Builder
	cmd.SetOut(&o)
	cmd.SetErr(&e)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return o.String(), e.String(), err, ExitCode(err)
}

// readRunEnd parses a run's -o json output and --junit file.
func readRunEnd(t *testing.T, out, junit string) (runReport, conformance.JUnitSuites) {
	t.Helper()
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json wrote no report: %v\n%s", err, out)
	}
	var js conformance.JUnitSuites
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatalf("--junit: %v", err)
	}
	if err := xml.Unmarshal(b, &js); err != nil {
		t.Fatalf("--junit: %v\n%s", err, b)
	}
	return rep, js
}

// TestRunErrorReports: a run that ends in a usage or environment error
// found once it started (here a --focus that matches no spec) still
// writes -o json's report (verdict error, the error) and --junit's file
// (an <error> testcase), as check -o json|junit does on a capture it
// cannot read; it used to write an empty standard output and no JUnit.
func TestRunErrorReports(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := t.TempDir()
	junit := filepath.Join(dir, "u.xml")
	cmd := New()
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"run", "--env", "sim", "-o", "json", "--junit", junit, "--focus", "NOSUCH", "--artifacts", filepath.Join(dir, "a")})
	err := cmd.Execute()
	if code := ExitCode(err); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no spec matched") {
		t.Fatalf("exit %d, %v; want 2, no spec matched", code, err)
	}
	rep, js := readRunEnd(t, stdout.String(), junit)
	if rep.Verdict != "error" || rep.Error != err.(*ExitError).Err.Error() || rep.Passes == nil || len(rep.Passes) != 0 {
		t.Errorf("JSON report %+v; want verdict error, the error, no passes", rep)
	}
	if rep.Artifacts != "" {
		t.Errorf("JSON report names run folder %q, which the run removed", rep.Artifacts)
	}
	if js.Errors != 1 || js.Failures != 0 || len(js.TestSuites) != 1 || js.TestSuites[0].TestCases[0].Error == nil ||
		!strings.Contains(js.TestSuites[0].TestCases[0].Error.Message, "no spec matched") {
		t.Errorf("JUnit %+v; want one <error> testcase saying no spec matched", js)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("the run folder is left: %v", err)
	}
}

// TestRunAgentSilentOnListen: an agent that answers hello and then never
// answers listen is the IUT's failure, not the environment's: exit 1 (a
// CI retries exit 2 as infrastructure), one line naming the cause (it used
// to say only "asking the IUT to serve on port 4000", the cause in
// ginkgo.log), JSON verdict fail with the error and a JUnit <failure>
// (there used to be neither); its namespaces are removed.
func TestRunAgentSilentOnListen(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a manifest's IUT runs in network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := writeFile(t, dir, "mute.yaml", fmt.Sprintf("name: mute\ncommand: [%s]\nenv: {HOMATEST_CLI_CHILD: ref-swallowing-listen}\n"+
		"params: {tick_ns: 5000000}\ntimeouts: {reply: 2s, shutdown: 1s}\n", self))
	before := htNamespaces(t)
	defer func() {
		if left := newLeftovers(t, before); len(left) > 0 {
			t.Errorf("namespaces left behind: %v", left)
		}
	}()
	arts, junit := filepath.Join(dir, "run"), filepath.Join(dir, "j.xml")
	cmd := New()
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"run", "--env", "ns", "--impl", m, "--focus", "BUSY", "-o", "json", "--junit", junit, "--artifacts", arts})
	err = cmd.Execute()
	want := "agent silent: no reply to listen (seq 2) within 2s"
	if code := ExitCode(err); code != ExitViolations || err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "the IUT failed before any spec ran: asking the IUT to serve on port") {
		t.Fatalf("exit %d, %v; want 1 and one line naming the IUT's failure and %q\n%s", code, err, want, stderr.String())
	}
	rep, js := readRunEnd(t, stdout.String(), junit)
	if rep.Verdict != "fail" || !strings.Contains(rep.Error, want) {
		t.Errorf("JSON report %+v; want verdict fail and the cause", rep)
	}
	if js.Failures != 1 || js.Errors != 0 || len(js.TestSuites) != 1 || js.TestSuites[0].TestCases[0].Failure == nil ||
		!strings.Contains(js.TestSuites[0].TestCases[0].Failure.Message, want) {
		t.Errorf("JUnit %+v; want one <failure> testcase with the cause", js)
	}
}

// TestRunWarningCountedOnce: a failed SHOULD spec without --strict is a
// warning everywhere: the text table's "warned" column (it was counted
// "failed"), JSON's top-level warnings and the spec's warning flag (there
// was no count), and a passed JUnit testcase, never a failure.
func TestRunWarningCountedOnce(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := t.TempDir()
	args := []string{"run", "--env", "sim", "--focus", "NEED_ACK-answered", "--fault", "no-acks"}
	out, err, code := run(t, append(args, "--artifacts", filepath.Join(dir, "t"))...)
	// The skipped column counts the area's other specs: any number.
	if code != ExitOK || !regexp.MustCompile(`\n  ack +0 +0 +1 +0 +0 +\d+\n`).MatchString(out) {
		t.Fatalf("exit %d, %v; want 0 and the ack row counting 1 warned, 0 failed:\n%s", code, err, out)
	}
	// A focused run says RUN-capture did not run and how to judge its
	// capture (helper-165: it said nothing).
	if want := "RUN-capture not run: the pass's whole capture is judged after a whole-suite pass only (no --focus, --rules or --label-filter); judge this one with homatest check " +
		filepath.Join(dir, "t", "pass-1", "capture.pcapng") + "\n"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	junit := filepath.Join(dir, "w.xml")
	out, err, code = run(t, append(args, "--artifacts", filepath.Join(dir, "j"), "-o", "json", "--junit", junit)...)
	if code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	rep, js := readRunEnd(t, out, junit)
	// So does its JSON (it said nothing of it).
	if want := "not run: the pass's whole capture is judged after a whole-suite pass only (no --focus, --rules or --label-filter); judge this one with homatest check " +
		filepath.Join(dir, "j", "pass-1", "capture.pcapng"); rep.RunCapture != want {
		t.Errorf("run_capture %q, want %q", rep.RunCapture, want)
	}
	warned := 0
	for _, s := range rep.Passes[0].Specs {
		if s.Warning {
			warned++
		}
	}
	if rep.Verdict != "pass" || rep.Warnings != 1 || warned != 1 {
		t.Errorf("verdict %q, warnings %d, %d specs marked warning; want pass, 1, 1", rep.Verdict, rep.Warnings, warned)
	}
	if js.Failures != 0 || js.Errors != 0 {
		t.Errorf("JUnit counts failures=%d errors=%d; want a warning to be neither", js.Failures, js.Errors)
	}
}

// TestRunFlagErrorJSON: a flag the run refuses before it starts (here
// --repeat 0) still gives -o json's report, verdict error and the error,
// and the one-line error with exit 2 (it used to print no JSON).
func TestRunFlagErrorJSON(t *testing.T) {
	dir := t.TempDir()
	junit := filepath.Join(dir, "u.xml")
	out, err, code := run(t, "run", "--env", "sim", "-o", "json", "--junit", junit, "--repeat", "0", "--artifacts", filepath.Join(dir, "a"))
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "--repeat 0: want 1 or more") {
		t.Fatalf("exit %d, %v; want 2 and the --repeat error", code, err)
	}
	rep, js := readRunEnd(t, out, junit)
	if rep.Verdict != "error" || rep.Error != "--repeat 0: want 1 or more" || len(rep.Passes) != 0 {
		t.Errorf("JSON report %+v; want verdict error and the --repeat error", rep)
	}
	if js.Errors != 1 {
		t.Errorf("JUnit %+v; want one <error> testcase", js)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("a run folder was made for a refused flag: %v", err)
	}
}
