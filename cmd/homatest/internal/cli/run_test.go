package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/harness"
)

// TestMain lets this test binary act as homatest itself when homatest run
// re-executes os.Executable() for a pass or starts it as the agent
// (HOMATEST_CLI_CHILD set by the tests below).
//
// HOMATEST_CLI_CHILD=ref-swallowing-calls makes it an agent whose calls
// hang (TestRunInterruptDuringHungCall), ref-swallowing-listen one that
// answers hello but never listen (TestRunAgentSilentOnListen).
//
// HOMATEST_TEST_HOLD_PASS=pass-N makes the child running that pass of a
// homatest run wait for SIGINT or SIGTERM before it runs any spec, so a
// test interrupts the run in that pass whatever the machine's load (a
// simulated pass takes milliseconds: the interrupt often came after it).
func TestMain(m *testing.M) {
	switch os.Getenv("HOMATEST_CLI_CHILD") {
	case "1":
		if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
			holdPass(os.Args[1:])
			os.Exit(Main(os.Args[1:]))
		}
	case "ref-swallowing-calls":
		os.Exit(refSwallowing(agent.OpCall))
	case "ref-swallowing-listen":
		os.Exit(refSwallowing(agent.OpListen))
	case "":
		if msg := misSetChild(os.Args[1:]); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
			os.Exit(2)
		}
	}
	// What a test binary killed before it cleaned up (its go test
	// -timeout, or a child's own limit) left is removed here.
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}

// misSetChild returns the one-line error of this test binary started as
// homatest with args (a first argument that is no flag: "run --pass FILE"
// from a homatest run, an agent's command line) without
// HOMATEST_CLI_CHILD, "" for a test binary's own arguments. Without the
// variable TestMain would run every test of the package in the child,
// which then hangs its test until go test's timeout.
func misSetChild(args []string) string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return ""
	}
	return fmt.Sprintf("cli test binary started as homatest (%s) without HOMATEST_CLI_CHILD=1: the test that ran homatest run (which re-executes this binary for each pass) or an agent must t.Setenv(\"HOMATEST_CLI_CHILD\", \"1\") first", strings.Join(args, " "))
}

// holdPass, in a child running "run --pass FILE" for the pass named by
// HOMATEST_TEST_HOLD_PASS, waits for SIGINT or SIGTERM and exits as an
// interrupted pass (130) without running it.
func holdPass(args []string) {
	pass := os.Getenv("HOMATEST_TEST_HOLD_PASS")
	if pass == "" || len(args) != 3 || args[0] != "run" || args[1] != "--pass" || filepath.Base(filepath.Dir(args[2])) != pass {
		return
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	os.Exit(130)
}

func TestRunFocusedPassAndFault(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	out, err, code := run(t, "run", "--focus", "GRANT-long-request", "--artifacts", filepath.Join(dir, "ok"),
		"--junit", filepath.Join(dir, "ok.xml"), "-o", "json", "--param", "timeout_ticks=50")
	if code != ExitOK {
		t.Fatalf("homatest run --focus GRANT-long-request: exit %d, %v\n%s", code, err, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(rep.Passes) != 1 || rep.Verdict != "pass" {
		t.Fatalf("%d passes, verdict %q; want 1 and pass", len(rep.Passes), rep.Verdict)
	}
	// The report says which parameters the IUT was judged with: the
	// override as given, and every parameter of the pass.
	if v, _ := rep.Params.Int("timeout_ticks"); v != 50 || len(rep.Params) != 1 {
		t.Errorf("params %v, want only timeout_ticks 50", rep.Params)
	}
	if ip := rep.Passes[0].IUTParams; ip["timeout_ticks"] != "50" || ip["resend_ticks"] != "5" {
		t.Errorf("iut_params timeout_ticks %q resend_ticks %q, want 50 and 5", ip["timeout_ticks"], ip["resend_ticks"])
	}
	ran := 0
	for _, s := range rep.Passes[0].Specs {
		if s.State == "passed" {
			ran++
			if !strings.Contains(s.Name, "GRANT-long-request") {
				t.Errorf("spec %q ran outside the focus", s.Name)
			}
		}
	}
	if ran != 1 {
		t.Errorf("%d specs passed, want exactly the focused one", ran)
	}
	junit, err := os.ReadFile(filepath.Join(dir, "ok.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), `<property name="rule" value="HOMA-GRANT-002">`) {
		t.Errorf("JUnit report lacks the spec's rule property (unquoted)")
	}
	// One testcase per spec, and nothing else (no suite setup nodes).
	if got, want := strings.Count(string(junit), "<testcase "), len(rep.Passes[0].Specs); got != want || want < 10 {
		t.Errorf("JUnit report has %d testcases, want one per spec (%d)", got, want)
	}

	// With the no-grants fault the same spec fails, citing its rules,
	// with a capture and a rerun command.
	out, _, code = run(t, "run", "--focus", "GRANT-long-request", "--fault", "no-grants", "--param", "timeout_ticks=50", "--artifacts", filepath.Join(dir, "bad"))
	if code != ExitViolations {
		t.Fatalf("with --fault no-grants: exit %d, want %d\n%s", code, ExitViolations, out)
	}
	for _, want := range []string{"FAIL grants GRANT-long-request", "HOMA-GRANT-002", "no GRANT from 198.18.0.1",
		"packets: " + filepath.Join(dir, "bad", "pass-1"), `rerun: homatest run --focus "GRANT-long-request" --env `, ` --fault no-grants --param timeout_ticks=50`,
		"(report: " + filepath.Join(dir, "bad", "report.html") + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the no-match cases run a pass
	noAgent := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(noAgent, []byte("name: foo\ncommand: [/nonexistent/agent]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--impl", "quic"}, `--impl "quic"`},
		{[]string{"run", "--impl", noAgent, "--env", "sim"}, `agent program "/nonexistent/agent" cannot be run (stat /nonexistent/agent: no such file or directory): fix command[0]`},
		{[]string{"run", "--fault", "nope"}, `--fault "nope": no such fault knob`},
		{[]string{"run", "--env", "sim", "--label-filter", "grant &&"}, `--label-filter "grant &&": not a Ginkgo label expression`},
		{[]string{"run", "--repeat", "0"}, "--repeat 0"},
		{[]string{"run", "--env", "sim", "--junit", "/nonexistent/dir/j.xml"}, "--junit /nonexistent/dir/j.xml: folder /nonexistent/dir"},
		{[]string{"run", "--env", "sim", "--artifacts", "/dev/null/x"}, "--artifacts: mkdir /dev/null: not a directory (pass --artifacts DIR somewhere writable)"},
		{[]string{"run", "-o", "xml"}, `-o "xml"`},
		{[]string{"run", "--mutation-matrix", "--fault", "no-grants"}, "drop --fault"},
		{[]string{"run", "--env", "sim", "--focus", "no-such-spec-xyz"}, "no spec matched"},
		{[]string{"run", "--list", "--focus", "GRANT-long"}, "--focus GRANT-long names no spec; the specs whose short names begin with it: GRANT-long-request, GRANT-long-response"},
		// The error names the flags given, not every one --list refuses.
		{[]string{"run", "--list", "--repeat", "2"}, "--list prints the specs and runs none: drop --repeat"},
		{[]string{"run", "--list", "--artifacts", "x"}, "--list prints the specs and runs none: drop --artifacts"},
		// -o html is no flag to drop but an output --list does not
		// print: the error says which it prints (it said "drop -o html").
		{[]string{"run", "--list", "-o", "html"}, "--list prints -o text (the default) or -o json; html is a run's report page"},
		{[]string{"run", "--list", "--mutation-matrix", "--junit", "j.xml", "-o", "html"}, "--list prints the specs and runs none: drop --mutation-matrix and --junit; --list prints -o text (the default) or -o json; html is a run's report page"},
		{[]string{"run", "--env", "sim", "--rules", "HOMA-NOPE-*"}, `matches no rule (see homatest spec list)`},
		{[]string{"run", "--env", "mem"}, "--env mem is gone: the simulator replaced the in-memory network; use --env sim"},
		{[]string{"run", "--env", "qemu"}, `--env "qemu": want ns, sim or auto`},
		{[]string{"run", "--env", "sim", "--impl", "linux"}, "--impl linux needs --env ns (the simulator runs only the built-in reference implementation)"},
		{[]string{"run", "--env", "sim", "--ns-workloads"}, "--ns-workloads runs the workload specs in namespaces: it needs --env ns"},
		{[]string{"run", "--env", "sim", "--param", "timeout_ticks"}, `--param "timeout_ticks": want NAME=VALUE`},
		{[]string{"run", "--env", "sim", "--param", "timeout_ticks=soon"}, `--param "timeout_ticks=soon": "soon" is not an integer`},
		// The ref would refuse it in its hello: refused before any pass.
		{[]string{"run", "--env", "sim", "--param", "unsched_bytes=0"}, "--param: homa: unsched_bytes 0: want 1 or more"},
		{[]string{"run", "--env", "sim", "--param", "bogus=3"}, `unknown parameter "bogus"`},
		{[]string{"run", "--env", "sim", "--param", "tick=1000000"}, `tick is a positive duration such as 1ms (or give tick_ns in nanoseconds)`},
		// A pattern matching no rule is said so before the run (as explore says it).
		{[]string{"run", "--env", "sim", "--rules", "NOPE-*"}, `--rules: rule pattern "NOPE-*" matches no rule`},
		{[]string{"run", "--env", "sim", "--param", "slack=1"}, "the checker measures slack and jitter"},
		{[]string{"run", "--env", "sim", "--param", "unsched_bytes=99999999999999"}, "unsched_bytes 99999999999999 is above 2^40"},
		{[]string{"run", "--env", "sim", "--param", " timeout_ticks=30", "--param", "timeout_ticks=40"}, "timeout_ticks is given twice"},
		{[]string{"run", "--env", "sim", "--param", "tick_ns=1099511627776"}, "tick 18m19.511627776s is outside 1µs..1s"},
		{[]string{"run", "--env", "sim", "--param", "resend_ticks=99999999999999999999"}, `"99999999999999999999" is out of range`},
		// A cross-parameter error names the fix (it said only what clashed).
		{[]string{"run", "--env", "sim", "--param", "resend_ticks=200"}, "timeout_ticks 100 is below resend_ticks 200 (an RPC would time out before its first RESEND): set timeout_ticks to 200 or more, or resend_ticks to 100 or less"},
		{[]string{"run", "--env", "sim", "--param", "max_sched_prio=9"}, "max_sched_prio 9 must be below num_priorities 8: set max_sched_prio to 7 or less"},
		// Settings under which the clean ref failed specs (HomaModule too
		// would never grant, or take its own cutoffs for unknown ones).
		{[]string{"run", "--env", "sim", "--param", "max_incoming=1"}, "max_incoming 1 with window 0 (dynamic: max_incoming/(messages+1)) grants no byte past unsched_bytes, so no longer message could complete: set max_incoming to 2 or more, or window to 1 or more"},
		{[]string{"run", "--env", "sim", "--param", "cutoff_version=0"}, "cutoff_version 0 is what a host holds for a peer whose cutoffs it never got (its own starts at 1): set cutoff_version to 1..65535"},
		{[]string{"check", "--param", "num_priorities=2", "x.pcapng"}, "max_sched_prio: 3 must be below num_priorities 2: set max_sched_prio to 1 or less, or num_priorities to 4 or more"},
	} {
		_, err, code := run(t, c.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, error %v; want exit 2 and %q", c.args, code, err, c.want)
		}
	}
}

// TestRunRefParamsBeforeEnv: with the built-in ref, a parameter its
// hello would refuse stops the run before the namespaces are built (exit
// 2, nothing under --artifacts); it used to build them, start the agent
// and leave a pass-1 folder with the agent's refusal in its log.
//
// A tick the ref takes but namespaces cannot keep (below
// conformance.MinNSTick) is refused the same way (the ref failed 16 specs
// at tick_ns 1000, helper-161).
func TestRunRefParamsBeforeEnv(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--env ns needs root")
	}
	for _, c := range []struct{ param, want string }{
		{"tick_ns=5", "--param: homa: tick 5ns is outside 1µs..1s"},
		{"tick_ns=100000", "--param tick_ns 100000: in namespaces (real time) timer passes come 60-110 µs late"},
	} {
		arts := filepath.Join(t.TempDir(), "a")
		out, err, code := run(t, "run", "--env", "ns", "--param", c.param, "--artifacts", arts, "-o", "json")
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: exit %d, %v; want 2 and %q", c.param, code, err, c.want)
		}
		if _, serr := os.Stat(arts); !os.IsNotExist(serr) {
			t.Errorf("%s: --artifacts %s exists after a refused parameter (%v)", c.param, arts, serr)
		}
		// The JSON report names the refused parameter and no folder
		// (helper-163: it named one never made, and no parameter).
		var rep runReport
		if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil {
			t.Fatalf("%s: -o json: %v\n%s", c.param, jerr, out)
		}
		name, _, _ := strings.Cut(c.param, "=")
		if rep.Verdict != "error" || rep.Params[name] == nil || rep.Artifacts != "" || rep.Areas == nil {
			t.Errorf("%s: JSON verdict %q params %v artifacts %q areas %v; want error, the parameter, no folder, []", c.param, rep.Verdict, rep.Params, rep.Artifacts, rep.Areas)
		}
	}
}

// TestRunNSRefusesMTU: in namespaces an IUT whose hello says an MTU
// above the links' 1500 bytes is refused before any spec runs (helper-159
// saw an IUT told 9000 fail five specs with "message too long").
func TestRunNSRefusesMTU(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--env ns needs root")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	_, err, code := run(t, "run", "--env", "ns", "--param", "mtu=9000", "--artifacts", filepath.Join(t.TempDir(), "a"))
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "the IUT's hello says mtu 9000, but the namespaces' links carry 1500 bytes") {
		t.Errorf("exit %d, %v; want 2 and the MTU reason", code, err)
	}
}

// TestRunUsageErrorLeavesNothing: a run whose filter matches no spec
// (exit 2) removes what it created under --artifacts: a new folder with
// its parents, or in a folder that existed only its own files (it used to
// leave pass-1/{ginkgo.log,result.json,pass.json}).
func TestRunUsageErrorLeavesNothing(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	// An earlier run's pass folder and report: kept as they were (they
	// used to be removed before the filter was found to match nothing).
	for f, body := range map[string]string{"notes.txt": "keep\n", "report.html": "old report", "pass-1/pass.json": "{}", "pass-1/capture.pcapng": "old capture"} {
		os.MkdirAll(filepath.Dir(filepath.Join(mine, f)), 0o755)
		if err := os.WriteFile(filepath.Join(mine, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range [][]string{{"--focus", "NOSUCH"}, {"--rules", "NOPE-*"}, {"--label-filter", "nosuchlabel"}} {
		for _, arts := range []string{filepath.Join(dir, "new", "a"), mine} {
			args := append([]string{"run", "--env", "sim", "--artifacts", arts}, c...)
			out, err, code := run(t, args...)
			// (--rules matching no rule is refused before the pass.)
			if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no spec matched") && !strings.Contains(err.Error(), "matches no rule") {
				t.Errorf("%v: exit %d, %v; want 2 and no spec matched", args, code, err)
			}
			if strings.Contains(out, "removed") {
				t.Errorf("%v: said %q", args, out)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
			t.Errorf("%v: the new --artifacts folder's parent is still there: %v", c, err)
		}
		var names []string
		ents, _ := os.ReadDir(mine)
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != "notes.txt pass-1 report.html" {
			t.Errorf("%v: the existing --artifacts folder holds %v; want notes.txt pass-1 report.html", c, names)
		}
		if b, _ := os.ReadFile(filepath.Join(mine, "pass-1", "capture.pcapng")); string(b) != "old capture" {
			t.Errorf("%v: the earlier run's capture is %q", c, b)
		}
	}
	// A run that starts replaces them, and says so.
	out, err, code := run(t, "run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", mine)
	if code != ExitOK || !strings.Contains(out, "removed 1 pass folder of an earlier run from "+mine+": pass-1") {
		t.Fatalf("run reusing %s: exit %d, %v\n%s", mine, code, err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "pass-1", "capture.pcapng")); string(b) == "old capture" {
		t.Error("the earlier run's capture is still there")
	}
	if _, err := os.Stat(filepath.Join(mine, conformance.EarlierFolder)); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", conformance.EarlierFolder, err)
	}
}

// TestRunList: run --list prints every spec, one a line, with its area,
// level, kind, whether the chosen IUT and environment run it, and its
// rules, and runs none (no run folder); --focus and --label-filter
// select as a run does.
func TestRunList(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	out, err, code := run(t, "run", "--list", "--env", "sim")
	if code != ExitOK {
		t.Fatalf("run --list: exit %d, %v\n%s", code, err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+98+1 || !strings.HasPrefix(lines[0], "NAME ") || lines[len(lines)-1] != "97 specs and RUN-capture; RUNS: yes or no, with these flags; run one: homatest run --focus NAME" {
		t.Fatalf("want a header, 98 lines (97 specs and RUN-capture) and the count; got %d lines:\n%s", len(lines), out)
	}
	for _, want := range []string{
		// The built-in ref's hello is known: every active spec runs.
		"GRANT-long-request  grant  MUST  active  yes  HOMA-GRANT-001,HOMA-GRANT-002,",
		"CUTOFFS-stale  cutoffs  SHOULD  active  yes  HOMA-CUTOFF-002,HOMA-CUTOFF-005",
		"IPV6-request  ipv6  MUST  active  yes  HOMA-WIRE-013,",
		"WORKLOAD-incast  workload  MUST  passive  yes  HOMA-GRANT-002,HOMA-GRANT-003,HOMA-GRANT-005,HOMA-GRANT-009",
		"RUN-capture  run  MUST  capture  yes  (every rule, over the pass's whole capture)",
	} {
		// Columns compared as words: their widths are the table's.
		words := func(l string) string { return strings.Join(strings.Fields(l), " ") }
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(words(l), words(want)) }) {
			t.Errorf("run --list lacks a line %q", want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("run --list left %v in its folder", ents)
	}
	// An IUT with an agent in namespaces without --ns-workloads has no
	// bench for the passive specs: listed as not run, and why.
	out, err, code = run(t, "run", "--list", "--env", "ns", "--impl", "linux", "--focus", "WORKLOAD-incast", "-o", "json")
	if code != ExitOK {
		t.Fatalf("run --list --impl linux: exit %d, %v\n%s", code, err, out)
	}
	var specs []conformance.SpecInfo
	if err := json.Unmarshal([]byte(out), &specs); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(specs) != 1 || specs[0].Short != "WORKLOAD-incast" || specs[0].Kind != "passive" || specs[0].Support != "no" || !strings.Contains(specs[0].Why, "--ns-workloads") {
		t.Errorf("--impl linux --env ns --focus WORKLOAD-incast: %+v; want WORKLOAD-incast alone, passive, not run for want of --ns-workloads", specs)
	}
	// Another IUT's hello decides: the column says on what (before, it
	// said "hello" for all 77 active specs, even of the ref). The JSON
	// keeps the old "support" beside the new "runs".
	for _, c := range []struct {
		args  []string
		runs  map[string]string
		needs string
	}{
		{[]string{"--env", "ns", "--impl", "linux"}, map[string]string{"GRANT-long-request": "if params allow", "IPV6-request": "if ipv6",
			"RESEND-busy-alive-app": "if reply-delay", "REQUEST-id-after-abort": "if timeouts", "WORKLOAD-incast": "no"}, "ipv6"},
		// The ref with other parameters: they may rule a spec out.
		{[]string{"--env", "sim", "--param", "unsched_bytes=20000"}, map[string]string{"GRANT-long-request": "if params allow", "IPV6-request": "if ipv6",
			"WORKLOAD-incast": "yes"}, "ipv6"},
	} {
		args := append([]string{"run", "--list"}, c.args...)
		out, _, code := run(t, args...)
		legend := "RUNS: yes or no, with these flags; if params allow: unless the parameters or profile in the IUT's hello rule it out (the skipped spec says why); if CAP: only if the IUT's hello declares capability CAP, and its parameters allow;"
		if code != ExitOK || !strings.Contains(out, legend) {
			t.Errorf("%v: exit %d, no legend %q:\n%s", args, code, legend, out)
		}
		out, _, _ = run(t, append(args, "-o", "json")...)
		var got []struct {
			Short   string   `json:"short_name"`
			Runs    string   `json:"runs"`
			Support string   `json:"support"`
			Needs   []string `json:"needs"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v -o json: %v", args, err)
		}
		for _, s := range got {
			want, ok := c.runs[s.Short]
			if !ok {
				continue
			}
			delete(c.runs, s.Short)
			wantSupport := "hello"
			if s.Short == "WORKLOAD-incast" {
				wantSupport = want
			}
			if s.Runs != want || s.Support != wantSupport || (s.Short == "IPV6-request") != slices.Equal(s.Needs, []string{c.needs}) {
				t.Errorf("%v: %s runs %q support %q needs %v, want %q, %q (and needs [%s] for IPV6-request only)", args, s.Short, s.Runs, s.Support, s.Needs, want, wantSupport, c.needs)
			}
		}
		if len(c.runs) > 0 {
			t.Errorf("%v: not listed: %v", args, c.runs)
		}
	}
	// A selection lists what it selects, and no RUN-capture.
	out, _, code = run(t, "run", "--list", "--env", "sim", "--label-filter", "ipv6")
	if code != ExitOK || !strings.HasPrefix(strings.Split(strings.TrimSpace(out), "\n")[3], "IPV6-") || !strings.Contains(out, "\n5 specs; ") {
		t.Errorf("run --list --label-filter ipv6: exit %d; want the 5 IPV6 specs:\n%s", code, out)
	}
}

// keep the import used when the JSON shape changes
var _ = conformance.Result{}

func TestRunSimEnvAndUnsupported(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	out, err, code := run(t, "run", "--env", "sim", "--focus", "RPC_UNKNOWN-reply", "--artifacts", filepath.Join(dir, "sim"))
	if code != ExitOK || !strings.Contains(out, "simulator: h1 IUT") || !strings.Contains(out, "PASS") {
		t.Fatalf("--env sim: exit %d, %v\n%s", code, err, out)
	}
	if os.Geteuid() != 0 {
		return // --impl linux needs the namespace environment
	}
	if _, statErr := os.Stat("/proc/sys/net/homa"); statErr == nil {
		t.Skip("this kernel has Homa: the linux agent is supported here")
	}
	out, err, code = run(t, "run", "--impl", "linux", "--artifacts", filepath.Join(dir, "linux"))
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "implementation linux cannot run here: Linux kernel has no Homa") {
		t.Fatalf("--impl linux on a kernel without Homa: exit %d, %v\n%s", code, err, out)
	}
	// One error line, no report of a pass that never ran.
	if out != "" || strings.Count(err.Error(), "environment") > 0 {
		t.Errorf("--impl linux on a kernel without Homa: output %q, error %q; want no output and the reason alone", out, err)
	}
}

// TestRunSimNonDefaultParams: the simulated suite passes the ref at
// parameters away from HomaModule's defaults, where code paths the
// defaults hide run: four priority levels (unscheduled levels chosen
// below num_priorities-1, homa_unsched_priority) and resend_ticks 3 with
// resend_interval 5 (rounds counted from resend_ticks, not from 0:
// homa_timer_check_rpc). A ref broken in either (helper-158's mutants
// unsched-loop-hi and rs-mod-silent) passes at the defaults and fails
// here; every spec is run or unsupported with its reason. unsched_bytes
// 1 makes every message past one byte scheduled: the testers must grant
// the IUT's responses and take its call id from its scheduled bytes (and
// the simulator refuses a call an agent would: a spec once asked for a
// 0-byte response there and failed only in namespaces). unsched_bytes
// 2000000 exceeds max_message_length: no tester message may.
func TestRunSimNonDefaultParams(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	for i, c := range []struct {
		params []string
		pass   int // at least this many specs pass, the rest unsupported
	}{
		{[]string{"num_priorities=4", "resend_ticks=3"}, 91},
		// Where the unscheduled bytes hold no segment to lose or hold
		// back, specs lose or hold back bytes the IUT grants: 89 and 93
		// pass (38 each before; the simulator is deterministic), and the
		// pass's whole capture (RUN-capture).
		{[]string{"unsched_bytes=1"}, 89},
		{[]string{"unsched_bytes=1000"}, 93},
		{[]string{"unsched_bytes=2000000"}, 64}, // past max_message_length: every message unscheduled
	} {
		args := []string{"run", "--env", "sim", "-o", "json", "--artifacts", filepath.Join(dir, fmt.Sprint("sim", i))}
		for _, p := range c.params {
			args = append(args, "--param", p)
		}
		out, err, code := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d, %v\n%s", c.params, code, err, out)
		}
		var rep runReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		if len(rep.Passes) != 1 || len(rep.Passes[0].Specs) != 98 {
			t.Fatalf("%v: want one pass of all 97 specs and RUN-capture; got %+v", c.params, rep)
		}
		passed := 0
		for _, sp := range rep.Passes[0].Specs {
			switch sp.State {
			case "passed":
				passed++
			case "unsupported":
			default:
				t.Errorf("%v: %s: %s", c.params, sp.Name, sp.State)
			}
		}
		if rep.Verdict != "pass" || passed < c.pass {
			t.Errorf("%v: verdict %q, %d of 97 specs passed; want pass with at least %d (the rest unsupported)", c.params, rep.Verdict, passed, c.pass)
		}
	}
}

// TestRunSimRepeatIdentical: in the simulator, passes of the whole suite
// (active and passive specs) give the same report, wall times aside, and
// the same capture of the active specs, byte for byte: virtual time makes
// the verdicts independent of the machine's load. run --list names the
// specs of a pass, in its order.
func TestRunSimRepeatIdentical(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	const passes = 3
	out, err, code := run(t, "run", "--env", "sim", "--repeat", fmt.Sprint(passes), "--artifacts", dir, "-o", "json")
	if code != ExitOK {
		t.Fatalf("run --env sim --repeat %d: exit %d, %v\n%s", passes, code, err, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(rep.Passes) != passes {
		t.Fatalf("%d passes, want %d", len(rep.Passes), passes)
	}
	// run --list names the specs a pass runs, in its order, without
	// running them.
	lout, err, code := run(t, "run", "--list", "--env", "sim", "-o", "json")
	if code != ExitOK {
		t.Fatalf("run --list -o json: exit %d, %v\n%s", code, err, lout)
	}
	var listed []conformance.SpecInfo
	if err := json.Unmarshal([]byte(lout), &listed); err != nil {
		t.Fatalf("run --list -o json: %v\n%s", err, lout)
	}
	if len(listed) != len(rep.Passes[0].Specs) {
		t.Errorf("run --list lists %d specs, the pass ran %d", len(listed), len(rep.Passes[0].Specs))
	}
	for i := range min(len(listed), len(rep.Passes[0].Specs)) {
		if got, ran := listed[i], rep.Passes[0].Specs[i]; got.Name != ran.Name || got.Area != ran.Area || got.Level != ran.Level || !slices.Equal(got.Rules, ran.Rules) && got.Kind != conformance.KindCapture {
			t.Errorf("run --list's spec %d is %+v; the pass ran %s (%s %s %v)", i, got, ran.Name, ran.Area, ran.Level, ran.Rules)
		}
	}
	var first []byte
	var firstCap []byte
	for i, p := range rep.Passes {
		if n := len(p.Specs); n != 98 {
			t.Errorf("pass %d ran %d specs, want all 97 and RUN-capture", i+1, n)
		}
		for _, s := range p.Specs {
			if s.State != "passed" {
				t.Errorf("pass %d: %s %s: %s", i+1, s.Name, s.State, s.Failure)
			}
		}
		b, err := json.Marshal(withoutWallTimes(*p))
		if err != nil {
			t.Fatal(err)
		}
		c, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("pass-%d", i+1), "capture.pcapng"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first, firstCap = b, c
			if len(c) < 10000 {
				t.Errorf("pass 1's capture.pcapng has %d bytes: the active specs' packets are missing", len(c))
			}
			continue
		}
		if string(b) != string(first) {
			t.Errorf("pass %d's report differs from pass 1's:\n%s\n%s", i+1, b, first)
		}
		if string(c) != string(firstCap) {
			t.Errorf("pass %d's capture.pcapng differs from pass 1's (%d and %d bytes)", i+1, len(c), len(firstCap))
		}
	}
}

// withoutWallTimes returns r with its wall-clock durations zeroed.
func withoutWallTimes(r conformance.Result) conformance.Result {
	r.Duration = 0
	r.Specs = slices.Clone(r.Specs)
	for i := range r.Specs {
		r.Specs[i].Duration = 0
	}
	return r
}

// TestRunOtherRuleFindingsFail: an active spec judges its exchange with
// every rule, so a MUST violation at the IUT's packets of a rule outside
// its labels fails it. The unprompted-ack knob's unasked ACKs break
// HOMA-ACK-007, which no active spec names; without the passive specs (a
// manifest's IUT in namespaces runs none) the active suite alone used to
// pass it while homatest check failed the run's own capture. A SHOULD spec
// failed so fails the run without --strict too, and stays a failure in the
// JUnit report.
func TestRunOtherRuleFindingsFail(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	out, err, code := run(t, "run", "--env", "sim", "--label-filter", "!workload", "--fault", "unprompted-ack",
		"--artifacts", dir, "--junit", junit, "-o", "json")
	if code != ExitViolations {
		t.Fatalf("run --fault unprompted-ack without the passive specs: exit %d, %v; want %d\n%s", code, err, ExitViolations, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(rep.Passes) != 1 || rep.Verdict != "fail" {
		t.Fatalf("%d passes, verdict %q; want 1 and fail", len(rep.Passes), rep.Verdict)
	}
	failedBy := map[string]bool{} // levels of the specs ACK-007 failed
	for _, s := range rep.Passes[0].Specs {
		if slices.Contains(s.Rules, "HOMA-ACK-007") {
			t.Fatalf("spec %q names HOMA-ACK-007: the test needs a rule no active spec names", s.Name)
		}
		if s.State != "failed" {
			continue
		}
		if !strings.Contains(s.Failure, "MUST violations of rules outside this spec's own") || !strings.Contains(s.Failure, "HOMA-ACK-007 frame ") {
			t.Errorf("spec %q failed for another reason: %s", s.Name, s.Failure)
			continue
		}
		if !s.Fails(false) {
			t.Errorf("spec %q (%s) failed by a MUST rule does not fail the run without --strict", s.Name, s.Level)
		}
		failedBy[s.Level] = true
	}
	if !failedBy["MUST"] || !failedBy["SHOULD"] {
		t.Errorf("HOMA-ACK-007 failed specs of levels %v; want a MUST and a SHOULD one", failedBy)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(x), "<failure "); n != rep.Passes[0].Failing(false) {
		t.Errorf("JUnit report has %d failures, want %d (every failed spec: none is a SHOULD warning)\n%s", n, rep.Passes[0].Failing(false), x)
	}
	if strings.Contains(string(x), "WARNING (SHOULD)") {
		t.Errorf("JUnit report demotes a spec a MUST rule failed to a warning:\n%s", x)
	}
	// homatest check agrees: the run's own capture fails.
	capture := filepath.Join(dir, "pass-1", "capture.pcapng")
	if out, err, code := run(t, "check", capture); code != ExitViolations || !strings.Contains(out, "HOMA-ACK-007") {
		t.Errorf("homatest check %s: exit %d, %v; want %d citing HOMA-ACK-007\n%s", capture, code, err, ExitViolations, out)
	}
}

// TestRunFailurePlain: a failing spec's reason is its own message, each
// finding once, without Gomega's dump of the list (type, length, its
// truncation notes, "to be empty").
func TestRunFailurePlain(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	out, _, code := run(t, "run", "--env", "sim", "--focus", "RESEND-answered", "--fault", "id-zero", "--artifacts", filepath.Join(t.TempDir(), "r"))
	if code != ExitViolations {
		t.Fatalf("exit %d, want %d\n%s", code, ExitViolations, out)
	}
	for _, bad := range []string{"Expected", "Gomega", "to be empty", "<[]string"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "HOMA-ID-003 frame 1: DATA with sender_id 0"); n != 1 {
		t.Errorf("the first finding is printed %d times, want once:\n%s", n, out)
	}
}

// TestRerunKeepsFlags: a failing spec's rerun line keeps the flags that
// decide whether it runs and fails (a new-user trial's rerun of a workload
// spec of a manifest IUT dropped --ns-workloads and ran 0 specs).
func TestRerunKeepsFlags(t *testing.T) {
	o := &runOpts{impl: "m.yaml", env: "ns", fault: "partial-retransmit", nsWorkloads: true, strict: true}
	got := o.rerun(conformance.SpecResult{Name: "workload WORKLOAD-burst-loss: bursts of loss"})
	if want := `homatest run --focus "WORKLOAD-burst-loss" --impl m.yaml --env ns --fault partial-retransmit --ns-workloads --strict`; got != want {
		t.Errorf("rerun %q, want %q", got, want)
	}
	// Values a shell would split are quoted (helper-157).
	o = &runOpts{impl: "my agent.yaml", env: "sim", params: []string{"unsched_cutoffs=0, 0,0,0,1000000,15000,2800,200", "timeout_ticks=30"}}
	got = o.rerun(conformance.SpecResult{Name: "grants GRANT-stale: x"})
	if want := `homatest run --focus "GRANT-stale" --impl 'my agent.yaml' --env sim --param 'unsched_cutoffs=0, 0,0,0,1000000,15000,2800,200' --param timeout_ticks=30`; got != want {
		t.Errorf("rerun %q, want %q", got, want)
	}
}

// TestRunJSONNamesFaultAndRerun: -o json says which IUT ran and with
// which fault knob, and gives each failed spec the command that reruns
// it (the text report's "rerun:" line); a passing spec has none.
func TestRunJSONNamesFaultAndRerun(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	out, err, code := run(t, "run", "--env", "sim", "--fault", "duplicate-data", "--focus", "RESEND-answered", "--focus", "RESEND-timeout", "-o", "json",
		"--artifacts", filepath.Join(t.TempDir(), "a"))
	if code != ExitViolations {
		t.Fatalf("exit %d, %v; want %d\n%s", code, err, ExitViolations, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if rep.Impl != "ref" || rep.Fault != "duplicate-data" || len(rep.Passes) != 1 {
		t.Fatalf("impl %q fault %q, %d passes; want ref, duplicate-data, 1", rep.Impl, rep.Fault, len(rep.Passes))
	}
	failed := 0
	for _, s := range rep.Passes[0].Specs {
		want := ""
		if s.State == "failed" {
			failed++
			want = `homatest run --focus "` + (conformance.SpecResult{Name: s.Name}).ShortName() + `" --env sim --fault duplicate-data`
		}
		if s.RerunCommand != want {
			t.Errorf("%s (%s): rerun_command %q, want %q", s.Name, s.State, s.RerunCommand, want)
		}
	}
	if failed == 0 {
		t.Errorf("no spec failed under duplicate-data: %s", out)
	}
}

// TestRunManifestNothingJudged: a manifest's IUT in namespaces without
// --ns-workloads runs no passive spec (they are unsupported). A run
// focused on one such spec judged nothing: INCOMPLETE, exit 2, saying how
// to run it (it used to print "PASS (0 specs run, 1 unsupported)" and exit
// 0). With an active spec beside it the run passes, unless --strict,
// which fails on the spec not run (exit 2, a line naming it and why).
func TestRunManifestNothingJudged(t *testing.T) {
	dir := t.TempDir()
	m := agentManifest(t, dir, "refm", "ref", "params: {tick_ns: 5000000}\n")
	base := []string{"run", "--impl", m, "--env", "ns", "--focus", "WORKLOAD-burst-loss"}
	out, err, code := run(t, append(base, "--artifacts", filepath.Join(dir, "a"))...)
	if code != ExitUsage || !strings.Contains(out, "\nINCOMPLETE (0 specs run, 1 not run (unsupported): no spec was judged)") ||
		!strings.Contains(out, "add --ns-workloads") || strings.Contains(out, "PASS") {
		t.Errorf("a run that judged nothing: exit %d, %v; want %d, INCOMPLETE and the --ns-workloads hint\n%s", code, err, ExitUsage, out)
	}
	base = append(base, "--focus", "RESEND-answered")
	out, err, code = run(t, append(base, "--artifacts", filepath.Join(dir, "b"))...)
	// A measured stall of the machine may add "; N timing findings
	// inconclusive" inside the parentheses: the verdict stays PASS.
	if code != ExitOK || !strings.Contains(out, "\nPASS (1 spec run, 1 not run (unsupported)") {
		t.Errorf("an active spec judged, a passive one unsupported: exit %d, %v; want 0 and PASS\n%s", code, err, out)
	}
	out, err, code = run(t, append(base, "--strict", "--artifacts", filepath.Join(dir, "c"))...)
	if code != ExitUsage || !strings.Contains(out, "NOT RUN (--strict fails on it) WORKLOAD-burst-loss: unsupported: this environment builds no bench") ||
		!strings.Contains(out, "\nINCOMPLETE (1 spec run, 1 not run (unsupported): --strict fails on specs not run)") {
		t.Errorf("--strict with a spec not run: exit %d, %v; want %d, the spec's line and INCOMPLETE\n%s", code, err, ExitUsage, out)
	}
}

// agentManifest writes dir/NAME.yaml, a manifest running this test binary
// as homatest agent --impl IMPL (TestMain), with the manifest lines extra,
// and returns its path. It needs root (a manifest's IUT runs in network
// namespaces): it skips the test otherwise, and sets HOMATEST_CLI_CHILD.
func agentManifest(t *testing.T, dir, name, impl, extra string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: a manifest's IUT runs in network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name+".yaml", fmt.Sprintf("name: %s\ncommand: [%s, agent, --impl, %s]\nenv: {HOMATEST_CLI_CHILD: '1'}\n%s", name, self, impl, extra))
}

// TestRunCheckAgreeNoAcks: the suite and homatest check give the same
// verdict on the same behaviour. A client that never acknowledges (fault
// no-acks) used to fail NEED_ACK-answered after 2 ms while check allowed
// 22 ms and, its per-spec capture ending at the single NEED_ACK, found
// nothing; now the tester asks once a tick as a server does until past
// HOMA-ACK-002's bound (spec.Params.NeedAckAnswerBound), and under
// --strict both fail on HOMA-ACK-002 with that bound: 20 ms plus the
// simulator's own 1 µs of slack (the .params sidecar says it, so check
// agrees).
func TestRunCheckAgreeNoAcks(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	out, err, code := run(t, "run", "--env", "sim", "--focus", "NEED_ACK-answered", "--fault", "no-acks", "--strict", "--artifacts", dir, "-o", "json")
	if code != ExitViolations {
		t.Fatalf("run --fault no-acks --strict: exit %d, %v; want %d\n%s", code, err, ExitViolations, out)
	}
	var rep runReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	var failed *conformance.SpecResult
	for i, s := range rep.Passes[0].Specs {
		if s.State == "failed" {
			failed = &rep.Passes[0].Specs[i]
		}
	}
	if failed == nil || !strings.Contains(failed.Failure, "HOMA-ACK-002") || !strings.Contains(failed.Failure, "within 20.001ms") || failed.Capture == "" {
		t.Fatalf("failed spec %+v: want NEED_ACK-answered failed by HOMA-ACK-002 within 20.001ms, with its capture", failed)
	}
	out, err, code = run(t, "check", "--strict", failed.Capture)
	if code != ExitViolations || !strings.Contains(out, "HOMA-ACK-002 SHOULD") || !strings.Contains(out, "within 20.001ms") {
		t.Errorf("check --strict of the spec's capture: exit %d, %v; want %d and the same HOMA-ACK-002 finding\n%s", code, err, ExitViolations, out)
	}
}

// TestRunSilentAgent: a manifest whose agent exits at once without a word
// is one usage error that says its log was empty (the folder holding it
// is removed; it used to name that log twice, gone), and a reused folder
// keeps the earlier run's pass folders.
func TestRunSilentAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--impl MANIFEST runs in namespaces: needs root")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs as a child
	dir := t.TempDir()
	m := writeFile(t, dir, "quiet.yaml", "name: quiet\ncommand: [/bin/sh, -c, 'read hello']\n")
	arts := filepath.Join(dir, "arts")
	os.MkdirAll(filepath.Join(arts, "pass-1"), 0o755)
	os.WriteFile(filepath.Join(arts, "pass-1", "pass.json"), []byte("{}"), 0o644)
	_, err, code := run(t, "run", "--env", "ns", "--impl", m, "--focus", "BUSY", "--artifacts", arts)
	if code != ExitUsage || err == nil || strings.Contains(err.Error(), "its log: ") || !strings.Contains(err.Error(), "(its log was empty)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("exit %d, %v; want 2 and one line saying the log was empty", code, err)
	}
	if b, err := os.ReadFile(filepath.Join(arts, "pass-1", "pass.json")); string(b) != "{}" {
		t.Errorf("the earlier run's pass-1: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(arts); len(ents) != 1 {
		t.Errorf("the folder holds %v, want pass-1 alone", ents)
	}
}

// TestRunCaptureCrossSpecFaults: a fault the IUT shows only after a spec
// ended (it reuses the id of an RPC that RESEND-timeout made it give up)
// passes every spec, each of which judges its own exchange, and
// fails the pass's whole capture (RUN-capture) with the rule it breaks;
// the clean ref passes it (TestRunSimRepeatIdentical).
func TestRunCaptureCrossSpecFaults(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	for _, c := range []struct {
		fault string
		rules []string // RUN-capture names one of them
	}{
		// The reused id's fresh request repeats the timed-out one's
		// bytes with other content: HOMA-WIRE-014 judges it where
		// HOMA-RESEND-010 does not (in the suite with the rt3 specs the
		// reuse, in RESEND-timeout-response-begun as before, draws
		// only WIRE-014 and RESEND-012: RESEND-010 passes it as new
		// bytes, FactInOrder; not looked into).
		{"reuse-timed-out-id", []string{"HOMA-RESEND-010", "HOMA-WIRE-014"}},
	} {
		out, err, code := run(t, "run", "--env", "sim", "--fault", c.fault, "-o", "json", "--artifacts", filepath.Join(t.TempDir(), c.fault))
		if code != ExitViolations {
			t.Fatalf("--fault %s: exit %d, %v; want %d\n%s", c.fault, code, err, ExitViolations, out)
		}
		var rep runReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		var failed []string
		for _, s := range rep.Passes[0].Specs {
			if s.State != "passed" && s.State != "unsupported" {
				failed = append(failed, s.ShortName())
			}
			if s.ShortName() == conformance.RunCaptureShort {
				named := slices.ContainsFunc(c.rules, func(rule string) bool {
					return slices.Contains(s.Rules, rule) && strings.Contains(s.Failure, rule+" frame ")
				})
				if !named || s.RerunCommand != "homatest run --env sim --fault "+c.fault {
					t.Errorf("--fault %s: RUN-capture rules %v, rerun %q, failure %q; want one of %v and the whole pass's rerun", c.fault, s.Rules, s.RerunCommand, s.Failure, c.rules)
				}
			}
		}
		if !slices.Equal(failed, []string{conformance.RunCaptureShort}) {
			t.Errorf("--fault %s: not passed: %v; want RUN-capture alone", c.fault, failed)
		}
	}
}

// TestRunFolderErrorJSON: a run folder that cannot be made is an
// environment error like any other: -o json writes the error document
// (it wrote nothing) and --junit its file; a default folder that cannot
// be made is named as such, with --artifacts DIR as the way out, not as
// a --artifacts the user never passed.
func TestRunFolderErrorJSON(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "j.xml")
	out, err, code := run(t, "run", "--env", "sim", "--artifacts", filepath.Join(file, "a"), "-o", "json", "--junit", junit)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "--artifacts: mkdir") {
		t.Fatalf("exit %d, %v; want 2 naming --artifacts", code, err)
	}
	var rep runReport
	if jerr := json.Unmarshal([]byte(strings.SplitN(out, "\nhomatest", 2)[0]), &rep); jerr != nil || rep.Verdict != "error" {
		t.Errorf("-o json: verdict %q, %v:\n%s", rep.Verdict, jerr, out)
	}
	if _, serr := os.Stat(junit); serr != nil {
		t.Errorf("--junit: %v", serr)
	}
	msg := runFolderErr(&fs.PathError{Op: "mkdir", Path: "homatest-runs", Err: syscall.EROFS}, true).Error()
	if strings.Contains(msg, "--artifacts:") || !strings.Contains(msg, "default run folder") || !strings.Contains(msg, "--artifacts DIR") {
		t.Errorf("default folder error %q: want the default folder named and --artifacts DIR offered", msg)
	}
}

// TestRunFocusAsHelpSays: --focus does what its help says, and the
// --help examples with --focus select what their comments say (listed
// with --list, which selects as a run does): a short name selects that
// spec alone, other text the specs whose name contains it, as typed.
// Text of the suite's description in no spec's name selects nothing
// ("--focus Homa" and "--focus conformance" selected all 96 specs: Ginkgo
// matches the description too). A glob or a text in the wrong case says
// why it matched nothing.
func TestRunFocusAsHelpSays(t *testing.T) {
	t.Chdir(t.TempDir())
	list := func(args ...string) ([]conformance.SpecInfo, string, int) {
		out, err, code := run(t, append([]string{"run", "--list", "-o", "json"}, args...)...)
		var specs []conformance.SpecInfo
		if code == ExitOK {
			if err := json.Unmarshal([]byte(out), &specs); err != nil {
				t.Fatalf("%v: -o json: %v\n%s", args, err, out)
			}
		} else if err != nil {
			out = err.Error()
		}
		return specs, out, code
	}
	examples := 0
	for _, line := range strings.Split(newRunCmd().Example, "\n") {
		cmdline, _, _ := strings.Cut(line, "#")
		args := strings.Fields(cmdline)
		if !slices.Contains(args, "--focus") {
			continue
		}
		examples++
		var focus []string
		for i, a := range args {
			if a == "--focus" {
				focus = append(focus, args[i+1])
			}
		}
		specs, out, code := list(args[2:]...)
		if code != ExitOK || len(specs) == 0 {
			t.Errorf("help example %q: exit %d, %d specs:\n%s", line, code, len(specs), out)
		}
		for _, s := range specs {
			if !slices.ContainsFunc(focus, func(f string) bool { return s.Short == f || !strings.Contains(f, "-") && strings.Contains(s.Name, f) }) {
				t.Errorf("help example %q selected %s (%q)", line, s.Short, s.Name)
			}
		}
	}
	if examples < 2 {
		t.Errorf("%d run --help examples with --focus, want 2 or more", examples)
	}
	if specs, _, _ := list("--env", "sim", "--focus", "GRANT-srpt", "--focus", "RESEND-gap"); len(specs) != 2 {
		t.Errorf("--focus GRANT-srpt --focus RESEND-gap: %d specs, want those 2", len(specs))
	}
	for _, c := range []struct{ focus, want string }{
		{"Homa", "no spec matched --focus"},
		{"conformance", "no spec matched --focus"},
		{"GRANT-*", `--focus "GRANT-*" is plain text, not a glob or regexp`},
		{"grant-srpt", `--focus "grant-srpt": no spec's name contains it as typed (case matters); in another case: GRANT-srpt, `},
	} {
		specs, out, code := list("--env", "sim", "--focus", c.focus)
		if code != ExitUsage || !strings.Contains(out, c.want) {
			t.Errorf("--focus %q: exit %d, %d specs, %q; want exit 2 and %q", c.focus, code, len(specs), out, c.want)
		}
	}
}

// TestRunProgress: --progress shows on standard error which spec each
// pass is at, when it is not a terminal too (a CI or lab log): the first
// spec at once, the last state when the pass ends (a long run in
// namespaces printed nothing for many minutes). Without it, and not on a
// terminal, there is no such line.
func TestRunProgress(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // the pass runs in a child
	dir := t.TempDir()
	out, err, code := run(t, "run", "--env", "sim", "--focus", "GRANT-srpt", "--focus", "RESEND-gap", "--progress", "--artifacts", filepath.Join(dir, "a"))
	if code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	// Ginkgo's order: resend before grant.
	for _, want := range []string{"\nrun: pass-1: spec 1/2 RESEND-gap\n", "\nrun: pass-1: spec 2/2 GRANT-srpt\n"} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, "run", "--env", "sim", "--focus", "GRANT-srpt", "--artifacts", filepath.Join(dir, "b"))
	if strings.Contains(out, "run: pass-1: spec") {
		t.Errorf("a progress line without --progress, not on a terminal:\n%s", out)
	}
}
