package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/explore"
)

// TestExploreFindShrinkReplay: homatest explore with a fault knob in the
// simulator fails (exit 1) with the knob's rule, writes the shrunk script,
// its capture and result.json, and --replay of the script reproduces the
// failure (exit 1); without the knob the same session passes (exit 0).
func TestExploreFindShrinkReplay(t *testing.T) {
	dir := t.TempDir()
	out, err, code := run(t, "explore", "--fault", "grant-past-end", "--param", "link_bps=1000000000", "--budget", "1h", "--max-cases", "200",
		"--artifacts", dir, "-q")
	if code != ExitViolations {
		t.Fatalf("exit %d (%v), want %d:\n%s", code, err, ExitViolations, out)
	}
	script := filepath.Join(dir, "failure-1-HOMA-GRANT-002.homa")
	for _, f := range []string{script, filepath.Join(dir, "failure-1-HOMA-GRANT-002.pcapng"), filepath.Join(dir, "result.json")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (want a non-empty file)\n%s", f, err, out)
		}
	}
	// The replay command, in the summary and the script's header, is
	// exact: the script's param line carries the session's --param.
	replayCmd := "homatest explore --replay " + script
	if !strings.Contains(out, "FAIL HOMA-GRANT-002 MUST") || !strings.Contains(out, "  replay:  "+replayCmd+"\n") {
		t.Errorf("summary lacks the failure or its replay command %q:\n%s", replayCmd, out)
	}
	if b, err := os.ReadFile(script); err != nil || !strings.Contains(string(b), "\n# Replay: "+replayCmd+"\n") || !strings.Contains(string(b), "\nparam link_bps=1000000000\n") {
		t.Errorf("script header lacks '# Replay: %s' or its param line (%v):\n%s", replayCmd, err, b)
	}
	// The capture checks as the session judged it (its .params beside
	// it): the knob's rule and no other MUST rule.
	checkOnly(t, filepath.Join(dir, "failure-1-HOMA-GRANT-002.pcapng"), "HOMA-GRANT-002")
	var res struct {
		Failures []struct {
			Rule    string `json:"rule"`
			Packets int    `json:"packets"`
			Script  string `json:"script"`
			Replay  string `json:"replay"`
			Capture string `json:"capture"`
		} `json:"failures"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err != nil || json.Unmarshal(b, &res) != nil || len(res.Failures) != 1 {
		t.Fatalf("result.json: %v, %d failures", err, len(res.Failures))
	}
	if f := res.Failures[0]; f.Rule != "HOMA-GRANT-002" || f.Packets < 1 || f.Packets > 20 {
		t.Errorf("result.json failure %+v, want HOMA-GRANT-002 shrunk to 1..20 packets", f)
	}
	// The files and the replay command, as the text summary gives them.
	if f := res.Failures[0]; f.Script != script || f.Replay != replayCmd || f.Capture != filepath.Join(dir, "failure-1-HOMA-GRANT-002.pcapng") {
		t.Errorf("result.json failure: script %q replay %q capture %q, want %q, %q and the .pcapng beside it", f.Script, f.Replay, f.Capture, script, replayCmd)
	}
	// Replayed as the header says (no --param): the script's parameters.
	rdir := t.TempDir()
	out, err, code = run(t, "explore", "--replay", script, "--artifacts", rdir, "-q")
	if code != ExitViolations || !strings.Contains(out, "reproduced: HOMA-GRANT-002") || !strings.Contains(out, "parameters: link_bps=1000000000 (script)\n") ||
		strings.Contains(out, "warning") {
		t.Errorf("replay: exit %d (%v), want %d, reproduced with the script's link_bps and no warning:\n%s", code, err, ExitViolations, out)
	}
	// The replay's capture checks as the replay judged it: its sidecars
	// (the parameters it judged with, its stalls) beside it.
	rcap := filepath.Join(rdir, "failure-1-HOMA-GRANT-002-replay.pcapng")
	checkOnly(t, rcap, "HOMA-GRANT-002")
	// Without them check judges the 1 Gbit/s exchange by the profile's
	// values, and says so. (It no longer charges the IUT with more than
	// the knob's rule here: the DATA's incoming 3000, short of its
	// 3001 bytes, tells the grant rules the sender's unscheduled bytes
	// whatever unsched_bytes says, as HomaModule's receiver takes them.)
	withOut, _, _ := run(t, "check", rcap)
	for _, f := range []string{rcap + ".params", rcap + ".stalls.json"} {
		if err := os.Remove(f); err != nil {
			t.Fatalf("the replay wrote no %s: %v", f, err)
		}
	}
	bareOut, _, _ := run(t, "check", rcap)
	if !strings.Contains(withOut, "parameters: the run's, from ") || !strings.Contains(bareOut, "so it was judged with profile linux's values") {
		t.Errorf("check %s with its sidecars, then without: want the run's parameters, then the profile's:\n%s\n%s", rcap, withOut, bareOut)
	}
	if !strings.Contains(out, "  fault knobs: grant-past-end (script)\n") {
		t.Errorf("replay: the summary does not name the script's fault knob:\n%s", out)
	}
	// --fault "" replaces the script's knobs with none: the IUT is then
	// correct, and the summary says where the (empty) set came from.
	out, err, code = run(t, "explore", "--replay", script, "--fault", "", "--artifacts", t.TempDir(), "-q")
	if code != ExitOK || !strings.Contains(out, "not reproduced") || !strings.Contains(out, `  fault knobs: none (--fault "" instead of the script's grant-past-end)`+"\n") {
		t.Errorf("replay with --fault \"\": exit %d (%v), want 0, not reproduced, no knob:\n%s", code, err, out)
	}
	out, _, _ = run(t, "explore", "--replay", script, "--fault", "no-busy", "--artifacts", t.TempDir(), "-q", "-o", "json")
	if !strings.Contains(out, `"arg": "no-busy"`) || !strings.Contains(out, `"from": "--fault"`) || strings.Contains(out, `"arg": "grant-past-end"`) {
		t.Errorf("replay with --fault no-busy -o json: want faults [no-busy from --fault] only:\n%s", out)
	}
	// A --param overrides the script's (and the replay says so).
	out, _, _ = run(t, "explore", "--replay", script, "--param", "link_bps=10000000000", "--artifacts", t.TempDir(), "-q")
	if !strings.Contains(out, "parameters: link_bps=10000000000 (--param)\n") || !strings.Contains(out, "warning: the IUT's parameters differ") {
		t.Errorf("replay with --param link_bps=10000000000: want it used and the difference warned:\n%s", out)
	}
	// A script cut after its header replays nothing: an error, not
	// "not reproduced".
	b, rerr := os.ReadFile(script)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var head []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "rpc ") || strings.HasPrefix(l, "at ") {
			break
		}
		head = append(head, l)
	}
	cut := filepath.Join(t.TempDir(), "cut.homa")
	if werr := os.WriteFile(cut, []byte(strings.Join(head, "\n")), 0o644); werr != nil {
		t.Fatal(werr)
	}
	if _, err, code := run(t, "explore", "--replay", cut, "--artifacts", t.TempDir(), "-q"); code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no rpc or at lines") {
		t.Errorf("replay of a script cut after its header: exit %d (%v), want %d and 'no rpc or at lines'", code, err, ExitUsage)
	}
	out, err, code = run(t, "explore", "--param", "link_bps=1000000000", "--budget", "1h", "--max-cases", "50", "--artifacts", t.TempDir(), "-q")
	if code != 0 || !strings.Contains(out, "PASS: no violation in 50 cases") {
		t.Errorf("no knob: exit %d (%v), want 0 and PASS:\n%s", code, err, out)
	}
}

// checkRules runs homatest check (MUST, every HOMA rule) on capture and
// returns the rules of the violations it charges to the IUT (not to the
// hosts whose frames carry a tester's mark, which do not fail a check).
func checkRules(t *testing.T, capture string) []string {
	t.Helper()
	cout, _, _ := run(t, "check", "--rules", "HOMA-*", "--level", "must", "-o", "json", capture)
	var cr struct {
		Files []struct {
			Testers []string `json:"testers"`
			Report  struct {
				Violations []struct {
					Rule      string `json:"rule"`
					ChargedTo string `json:"charged_to"`
				} `json:"violations"`
			} `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(cout), &cr); err != nil || len(cr.Files) != 1 {
		t.Fatalf("check %s: %v, want one file report:\n%s", capture, err, cout)
	}
	var rules []string
	for _, v := range cr.Files[0].Report.Violations {
		if !slices.Contains(cr.Files[0].Testers, v.ChargedTo) && !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
	}
	return rules
}

// checkOnly: homatest check on capture fails (exit 1) with violations of
// rule alone charged to the IUT, as the explore run that wrote it did.
func checkOnly(t *testing.T, capture, rule string) {
	t.Helper()
	if _, _, code := run(t, "check", "--rules", "HOMA-*", "--level", "must", capture); code != ExitViolations {
		t.Errorf("check %s: exit %d, want %d", capture, code, ExitViolations)
	}
	if rules := checkRules(t, capture); len(rules) != 1 || rules[0] != rule {
		t.Errorf("check %s: the IUT violates %v, want only %s (the run's parameters not applied?)", capture, rules, rule)
	}
}

// TestExploreUsageErrors: bad flags exit 2 with a one-line error saying
// what to fix, and leave no --artifacts folder (nor its missing parents)
// behind.
func TestExploreUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.homa")
	if err := os.WriteFile(bad, []byte("homatest-explore 1\nrule HOMA-GRANT-010 MUST\nrpc 1 h9 calls iut id=2 port=40000 request=1 response=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "--env", "qemu"}, `--env "qemu": want sim, ns or auto`},
		{[]string{"explore", "--env", "sim", "--impl", "linux"}, "--impl linux needs --env ns"},
		{[]string{"explore", "--budget", "0s"}, "--budget 0s: want a positive duration"},
		{[]string{"explore", "--fault", "nope"}, `--fault "nope": no such fault knob`},
		{[]string{"explore", "--level", "may"}, `--level "may": want must or should`},
		// A SHOULD rule at level must judges nothing: it passed green.
		{[]string{"explore", "--level", "must", "--rules", "HOMA-ACK-011"}, `--rules: rule pattern "HOMA-ACK-011" matches only SHOULD rules`},
		{[]string{"explore", "--max-cases", "-1"}, "--max-cases -1"},
		// link_bps=0 ran, and wrote link_mbps=0 into the run's .params.
		{[]string{"explore", "--param", "link_bps=0"}, "--param link_bps=0: explore's link runs from 1000000 to 1099511627776 bit/s"},
		{[]string{"explore", "--param", "link_mbps=0"}, "--param link_bps=0: explore's link runs from 1000000"},
		{[]string{"explore", "--param", "link_bps=999999"}, "explore's link runs from 1000000"},
		{[]string{"explore", "--replay", "nosuch.homa"}, "--replay nosuch.homa: no such file or directory (give a failure-N-RULE.homa script of an explore run folder)"},
		{[]string{"explore", "--env", "sim", "--replay", bad}, "script line 3: host h9 has no host line"},
		{[]string{"explore", "--env", "sim", "--replay", bad, "--fault", "nope"}, `--fault "nope": no such fault knob`},
	} {
		parent := filepath.Join(t.TempDir(), "new")
		art := filepath.Join(parent, "art")
		args := append(c.args, "--artifacts", art, "-q")
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, error %v; want exit 2 and %q", c.args, code, err, c.want)
		}
		if _, err := os.Stat(parent); !os.IsNotExist(err) {
			t.Errorf("%v: %s left behind (%v)", c.args, parent, err)
		}
	}
}

// BenchmarkExploreNS measures the explorer's throughput in network
// namespaces (root): homatest explore --env ns --impl ref for 20 s of
// search, no shrinking; it reports the session's events per wall second
// (issue 20 asks for at least 100) and, as a baseline measured in the
// same run, the same session (seed, budget) in the simulator:
// ns/sim is the namespace rate over the simulator's (the cost of real
// packets, sockets and timers).
func BenchmarkExploreNS(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (network namespaces)")
	}
	b.Setenv("HOMATEST_CLI_CHILD", "1") // this binary is the ref's agent
	session := func(env string) (events, secs float64) {
		cmd := New()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&strings.Builder{})
		cmd.SetArgs([]string{"explore", "--env", env, "--impl", "ref", "--budget", "20s", "--shrink-runs", "0", "--keep-going",
			"--artifacts", b.TempDir(), "-q", "-o", "json"})
		if err := cmd.Execute(); ExitCode(err) > ExitViolations {
			b.Fatal(err)
		}
		var res struct {
			Events  float64 `json:"events"`
			Elapsed float64 `json:"elapsed_ns"`
		}
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
			b.Fatalf("%v: %s", err, out.String())
		}
		return res.Events, res.Elapsed / 1e9
	}
	var events, secs, simEvents, simSecs float64
	for b.Loop() {
		e, s := session("ns")
		events, secs = events+e, secs+s
		e, s = session("sim")
		simEvents, simSecs = simEvents+e, simSecs+s
	}
	b.ReportMetric(events/secs, "events/s")
	b.ReportMetric(simEvents/simSecs, "sim-events/s")
	b.ReportMetric(events/secs/(simEvents/simSecs), "ns/sim")
}

// foundScript is a shrunk script homatest explore wrote (checked in), for
// hand edits.
const foundScript = "../../../../explore/testdata/found/seed5-HOMA-RESEND-002.homa"

// TestExploreReplayBadScript: --replay of a hand-edited script naming an
// undeclared host (it panicked in Replay) or a message beyond
// HOMA_MAX_MESSAGE_LENGTH (it allocated ~100 GB) exits 2 with a one-line
// error naming the script line and what is allowed, and leaves no
// --artifacts folder behind.
func TestExploreReplayBadScript(t *testing.T) {
	found, err := os.ReadFile(foundScript)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ old, new, want string }{
		{"rpc 3 h2 calls", "rpc 3 h9 calls", "script line 16: host h9 has no host line (hosts declared: h2, h3)"},
		{"h2 sends", "h7 sends", "script line 43: host h7 has no host line (hosts declared: h2, h3)"},
		{"request=1425", "request=99999999999", `script line 16: rpc 3: request="99999999999": want a message length in bytes, 1..1000000`},
	} {
		dir := t.TempDir()
		script := filepath.Join(dir, "edited.homa")
		if err := os.WriteFile(script, []byte(strings.Replace(string(found), c.old, c.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		art := filepath.Join(dir, "art")
		out, err, code := run(t, "explore", "--env", "sim", "--replay", script, "--artifacts", art, "-q")
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: exit %d, error %v; want exit 2 and one line with %q\n%s", c.new, code, err, c.want, out)
		}
		if _, err := os.Stat(art); !os.IsNotExist(err) {
			t.Errorf("%s: --artifacts %s left behind (%v)", c.new, art, err)
		}
	}
}

// TestExploreProgressNotTerminal: when stderr is not a terminal (a CI
// log), the progress line is printed at the start, every logEvery of the
// (here simulated) clock, and with the final state at the end.
func TestExploreProgressNotTerminal(t *testing.T) {
	var b strings.Builder
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	p := &progressLine{w: &b, name: "explore", now: func() time.Time { return now }, start: t0}
	for s := range 26 { // the session reports once a second for 25 s
		now = t0.Add(time.Duration(s) * time.Second)
		p.update(explore.Progress{Elapsed: time.Duration(s) * time.Second, Cases: 100 * s}.String())
	}
	p.end()
	var cases []string
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != "explore:" || f[3] != "cases" {
			t.Fatalf("progress line %q, want 'explore: ELAPSED N cases ...'", l)
		}
		cases = append(cases, f[2])
	}
	if got, want := strings.Join(cases, " "), "0 1000 2000 2500"; got != want {
		t.Errorf("lines at cases %s, want %s (start, every 10 s, the end):\n%s", got, want, b.String())
	}
}

// TestExploreProgressFinalLine: homatest explore with stderr not a
// terminal ends its progress with the session's final state (it printed
// only its first line).
func TestExploreProgressFinalLine(t *testing.T) {
	cmd := New()
	var out, errb strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs([]string{"explore", "--env", "sim", "--param", "link_bps=1000000000", "--budget", "1h", "--max-cases", "30", "--artifacts", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "explore: ") || !strings.Contains(last, " 30 cases ") {
		t.Errorf("last progress line %q, want the final state (30 cases); stderr:\n%s", last, errb.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "explore: ") {
			t.Errorf("stderr line %q is not a progress line", l)
		}
	}
}

// TestExploreManifestFault: explore, like run, takes --fault with a
// manifest's IUT in namespaces and asks its agent for the knob in hello
// (it used to refuse the combination homatest run accepts): a manifest
// running the reference agent gets the knob; an agent without fault knobs
// refuses its hello, and the session ends with that one line, exit 2.
func TestExploreManifestFault(t *testing.T) {
	dir := t.TempDir()
	manifest := func(name, impl, params string) string { return agentManifest(t, dir, name, impl, params) }
	arts := filepath.Join(dir, "ref")
	out, err, code := run(t, "explore", "--env", "ns", "--impl", manifest("refm", "ref", "params: {tick_ns: 5000000}\n"), "--fault", "no-busy",
		"--budget", "60s", "--max-cases", "2", "--shrink-runs", "0", "-q", "--artifacts", arts)
	if code == ExitUsage || !strings.Contains(out, "explore: ref") {
		t.Fatalf("explore --impl MANIFEST --fault no-busy: exit %d, %v\n%s", code, err, out)
	}
	if log, _ := os.ReadFile(filepath.Join(arts, "h1.agent.stderr.log")); !strings.Contains(string(log), "faults=[no-busy]") {
		t.Errorf("the manifest's agent was not asked for the knob; its log:\n%s", log)
	}
	out, err, code = run(t, "explore", "--env", "ns", "--impl", manifest("tcpm", "tcp", ""), "--fault", "no-busy",
		"--budget", "60s", "-q", "--artifacts", filepath.Join(dir, "tcp"))
	if code != ExitUsage || err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "the tcp agent has no fault knobs") {
		t.Errorf("explore --fault with an agent without knobs: exit %d, %v; want %d and the agent's reason on one line\n%s", code, err, ExitUsage, out)
	}
}
