package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec"
)

// TestMain lets this test binary act as the reference agent (for the
// namespace environment, whose agent is a child process in host h1).
func TestMain(m *testing.M) {
	if os.Getenv("HOMATEST_AGENT_CHILD") == "ref" {
		err := agent.ServeRef(context.Background(), os.Stdin, os.Stdout, agent.RefOptions{Version: "test"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv("HOMATEST_SUPERVISOR_CHILD"); dir != "" {
		os.Exit(superviseSleeper(dir))
	}
	// What a test binary killed before it cleaned up (its go test
	// -timeout, or a child's own limit) left is removed here.
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}

// TestConformance runs the whole suite against the reference implementation:
// in the simulator (virtual time: no privileges needed, the same verdicts on
// any machine), or with HOMATEST_ENV=ns in network namespaces with the agent
// as a child process (root). HOMATEST_FOCUS, HOMATEST_LABEL_FILTER and
// HOMATEST_FAULT narrow it; HOMATEST_SIM_ONE_FAMILY=1 gives the simulated
// IUT the linux agent's one family per server port.
func TestConformance(t *testing.T) {
	var names []string
	if f := os.Getenv("HOMATEST_FAULT"); f != "" {
		names = append(names, f)
	}
	dir := artifactsDir(t)
	var slack time.Duration
	if v := os.Getenv("HOMATEST_SIM_SLACK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("HOMATEST_SIM_SLACK: %v", err)
		}
		slack = d
	}
	holdUps, freezes := envHoldUps(t, "HOMATEST_SIM_HOLDUPS"), envHoldUps(t, "HOMATEST_SIM_FREEZES")
	newEnv := func(context.Context) (*Env, error) {
		return NewSimEnv(SimEnvConfig{Faults: names, Artifacts: dir, Slack: slack, HoldUps: holdUps, Freezes: freezes,
			OneFamilyPerPort: os.Getenv("HOMATEST_SIM_ONE_FAMILY") == "1"})
	}
	if os.Getenv("HOMATEST_ENV") == "ns" {
		// The ref agent as this test binary (TestMain), declaring the
		// ref's parameters as the built-in manifest does.
		m, err := agent.BuiltinManifest("ref", os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		m.Command, m.Env = []string{os.Args[0]}, map[string]string{"HOMATEST_AGENT_CHILD": "ref"}
		newEnv = func(ctx context.Context) (*Env, error) {
			ctx, cancel := context.WithTimeout(ctx, envTimeout)
			defer cancel()
			return NewNSEnv(ctx, NSEnvConfig{Manifest: m, Faults: names, Artifacts: dir, RefBench: true, Workloads: os.Getenv("HOMATEST_NS_WORKLOADS") == "1"})
		}
	}
	res, err := Run(t, Options{NewEnv: newEnv, Log: os.Stdout, Artifacts: dir, Verbose: testing.Verbose(),
		Focus: []string{os.Getenv("HOMATEST_FOCUS")}, LabelFilter: os.Getenv("HOMATEST_LABEL_FILTER")})
	if err != nil {
		t.Fatal(err)
	}
	if res.SetupError != "" {
		t.Fatal(res.SetupError)
	}
	if f := os.Getenv("HOMATEST_RESULT"); f != "" {
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Specs) == 0 {
		t.Fatal("no spec ran")
	}
	for _, s := range res.Specs {
		// The pass's whole capture names the rules of its findings only.
		if len(s.Rules) == 0 && s.ShortName() != RunCaptureShort || s.Area == "" || s.Level == "" {
			t.Errorf("spec %q lacks rule, area or level labels", s.Name)
		}
		if s.State == "failed" || s.State == "error" {
			t.Errorf("%s: %s: %s (capture %s)", s.Name, s.State, s.Failure, s.Capture)
		}
	}
	if os.Getenv("HOMATEST_ENV") == "" && len(names) == 0 && os.Getenv("HOMATEST_FOCUS") == "" {
		testerPacketsConform(t, filepath.Join(dir, "capture.pcapng"))
	}
}

// testerShouldRules are the SHOULD rules a tester host keeps as a
// HomaModule host does (outside deliberate packets): HOMA-CUTOFF-002, its
// CUTOFFS answers to stale DATA (tester.CutoffsHost).
var testerShouldRules = []string{"HOMA-CUTOFF-002"}

// testerPacketsConform fails on every MUST finding the checker charges to
// a tester packet of the run's capture at path that the tester did not
// break on purpose (marked tester.SentNote, not deliberate), and on every
// finding of testerShouldRules charged to a tester host away from a
// deliberate packet: the tester plays the protocol as HomaModule does
// except where a spec needs it broken.
func testerPacketsConform(t *testing.T, path string) {
	t.Helper()
	fr := check.File(check.Options{Profile: "auto", Level: spec.Should, CapturePoint: "auto"}, path)
	if fr.Error != "" {
		t.Fatalf("checking the run's capture %s: %s", path, fr.Error)
	}
	if fr.Report == nil || fr.Report.Events == 0 {
		t.Fatalf("the run's capture %s holds no Homa packet", path)
	}
	marked := 0
	for _, f := range fr.Report.Violations {
		if slices.Contains(testerShouldRules, f.Rule) && slices.Contains(fr.Testers, f.ChargedTo.String()) &&
			!strings.HasPrefix(f.Note, tester.DeliberatePrefix) {
			t.Errorf("%s %s charged to tester host %v at frame %d (%v>%v): %s", f.Rule, f.Level, f.ChargedTo, f.Frame, f.Src, f.Dst, f.Why)
		}
		if f.Note == "" {
			continue
		}
		marked++
		if f.Level == spec.Must && f.Note == tester.SentNote && f.ChargedTo == f.Src {
			t.Errorf("%s at tester packet frame %d (%v>%v), not marked deliberate: %s", f.Rule, f.Frame, f.Src, f.Dst, f.Why)
		}
	}
	if marked == 0 {
		t.Errorf("no finding at a deliberate tester packet in %s: the marks are missing", path)
	}
}

// TestConformanceNamespaces runs the suite in network namespaces: the
// reference implementation as a child-process agent on host h1 behind the
// kernel-bridge switch, tester peers on raw IP sockets in h2 and h3. Ginkgo
// runs one suite per process, so this runs TestConformance in a child.
func TestConformanceNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces (run the tests as root, as CI does)")
	}
	if os.Getenv("HOMATEST_ENV") != "" {
		t.Skip("already the namespace run")
	}
	c := exec.Command(os.Args[0], "-test.run", "^TestConformance$", "-test.count", "1")
	c.Env = append(os.Environ(), "HOMATEST_ENV=ns")
	out, err := runChild(t, c, timescale.D(3*time.Minute))
	if err != nil {
		t.Fatalf("the suite in namespaces failed: %v\n%s", err, out)
	}
}

// TestWideSlackPassIsInconclusive: a late RESEND (fault late-resend: the
// first round after 4*resend_ticks) that only a wide slack lets pass is
// timing-inconclusive, not a pass; the same slack gives a correct IUT no
// such finding. The slack is played in virtual time (SimEnvConfig.Slack),
// as a loaded machine's measured noise would widen it: the verdict does
// not depend on this machine's load. Before slackOnly the late RESEND
// passed with no finding at all (homatest run beside stress-ng: 2 of 4
// runs PASS).
func TestWideSlackPassIsInconclusive(t *testing.T) {
	if os.Getenv("HOMATEST_ENV") != "" || os.Getenv("HOMATEST_RESULT") != "" {
		t.Skip("a child run")
	}
	for _, c := range []struct {
		fault string
		want  bool
	}{{"late-resend", true}, {"", false}} {
		res := childRun(t, fmt.Sprintf("fault %q", c.fault), "HOMATEST_FAULT="+c.fault, "HOMATEST_FOCUS=RESEND-gap", "HOMATEST_SIM_SLACK=200ms")
		i := slices.IndexFunc(res.Specs, func(s SpecResult) bool { return s.ShortName() == "RESEND-gap" })
		if i < 0 || res.Specs[i].State != "passed" {
			t.Fatalf("fault %q: no RESEND-gap passed (by the slack) among %d specs", c.fault, len(res.Specs))
		}
		got := strings.Join(res.Specs[i].TimingInconclusive, "\n")
		if has := strings.Contains(got, "HOMA-RESEND-014") && strings.Contains(got, "passed only by the slack 200ms"); has != c.want {
			t.Errorf("fault %q: timing-inconclusive %q; want a HOMA-RESEND-014 finding passed only by the slack: %v", c.fault, got, c.want)
		}
	}
}

// TestIPv6SpecsOneFamilyPerPort: against an IUT whose server ports serve
// one address family, IPv4 unless listened with IPv6, as the linux agent's
// on a dual-stack host (HomaModule's AF_INET socket answers no IPv6
// client), the IPv6 specs send their requests to a port listened with
// IPv6 and pass. Sent to ServerPort, IPV6-request and IPV6-resend got no
// GRANT and no RESEND (the lab's linux_6.13.9 before listen's ipv6).
func TestIPv6SpecsOneFamilyPerPort(t *testing.T) {
	if os.Getenv("HOMATEST_ENV") != "" || os.Getenv("HOMATEST_RESULT") != "" {
		t.Skip("a child run")
	}
	res := childRun(t, "one family per port", "HOMATEST_FOCUS=IPV6", "HOMATEST_SIM_ONE_FAMILY=1")
	var passed []string
	for _, s := range res.Specs {
		if s.State == "passed" {
			passed = append(passed, s.ShortName())
		}
	}
	slices.Sort(passed)
	if want := []string{"IPV6-cutoffs-stale", "IPV6-request", "IPV6-resend", "IPV6-response", "IPV6-rpc-unknown"}; !slices.Equal(passed, want) {
		t.Errorf("passed %v, want %v", passed, want)
	}
}

// childRun runs TestConformance in a child of this test binary with the
// environment variables env added (NAME=VALUE) and returns its Result;
// what names the run in the failure when the suite fails.
func childRun(t *testing.T, what string, env ...string) Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestConformance$", "-test.count", "1")
	cmd.Env = append(append(os.Environ(), env...), "HOMATEST_RESULT="+out)
	b, err := runChild(t, cmd, timescale.D(2*time.Minute))
	if err != nil {
		t.Fatalf("%s: the suite failed: %v\n%s", what, err, b)
	}
	var res Result
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// runChild runs c to its end and returns its output (stdout and stderr).
// It kills c once c has run limit plus the time it waited for a CPU
// (stall.ProcessWait's growth over GOMAXPROCS), crediting at most
// stallCreditMost limits as lateWithinStalls does, and never later than a
// minute before the test's deadline: a fixed limit killed the namespace
// suite at load average 35-60, which takes 30 s at 23. A killed child's
// namespaces are removed at once (harness.RemoveDeadRuns: its run began
// at least a limit ago), and the error says how long it ran and waited.
func runChild(t *testing.T, c *exec.Cmd, limit time.Duration) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	// A grandchild that outlives c (one without Pdeathsig) must not hold
	// its output open, and Wait with it, after c is killed.
	c.WaitDelay = 10 * time.Second
	if err := c.Start(); err != nil {
		return nil, err
	}
	start, pid := time.Now(), c.Process.Pid
	wait0, _ := stall.ProcessWait(pid)
	hard := time.Time{}
	if d, ok := t.Deadline(); ok {
		hard = d.Add(-time.Minute)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lost time.Duration
	for {
		select {
		case err := <-done:
			return out.Bytes(), err
		case now := <-tick.C:
			if w, err := stall.ProcessWait(pid); err == nil {
				lost = min((w-wait0)/time.Duration(runtime.GOMAXPROCS(0)), stallCreditMost*limit)
			}
			if now.Sub(start) <= limit+lost && (hard.IsZero() || now.Before(hard)) {
				continue
			}
			c.Process.Kill()
			<-done
			harness.RemoveDeadRuns(&out, harness.StaleRunAge)
			return out.Bytes(), fmt.Errorf("killed after %v: its limit %v plus %v it waited for a CPU (credited up to %d limits, and up to a minute before the test's deadline)",
				now.Sub(start).Round(time.Second), limit, lost.Round(time.Millisecond), stallCreditMost)
		}
	}
}

// TestRunChildLimit: a child that sleeps past its limit (waiting for no
// CPU) is killed a tick after it, with its output so far; one that ends
// in time gives its output and exit status.
func TestRunChildLimit(t *testing.T) {
	start := time.Now()
	out, err := runChild(t, exec.Command("sh", "-c", "echo begun; exec sleep 60"), time.Second)
	if took := time.Since(start); err == nil || !strings.Contains(err.Error(), "killed after") || string(out) != "begun\n" || took > 30*time.Second {
		t.Errorf("a child sleeping past its 1 s limit: %q, %v after %v; want it killed with its output", out, err, took)
	}
	out, err = runChild(t, exec.Command("sh", "-c", "echo done; echo warn >&2; exit 3"), time.Minute)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || string(out) != "done\nwarn\n" {
		t.Errorf("a child ending in time: %q, %v; want its output and exit status 3", out, err)
	}
}

// artifactsDir is $HOMATEST_ARTIFACTS when set (to keep failed specs'
// captures), else a temporary directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("HOMATEST_ARTIFACTS"); d != "" {
		return d
	}
	return t.TempDir()
}

// envHoldUps reads environment variable name with parseHoldUps (zero
// when unset), failing the test on a bad value.
func envHoldUps(t *testing.T, name string) HoldUps {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return HoldUps{}
	}
	h, err := parseHoldUps(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

// parseHoldUps reads HOMATEST_SIM_HOLDUPS or HOMATEST_SIM_FREEZES:
// "SEED,EVERY,MOST", e.g. "1,100ms,40ms" (SimEnvConfig.HoldUps, Freezes).
func parseHoldUps(v string) (HoldUps, error) {
	f := strings.Split(v, ",")
	if len(f) != 3 {
		return HoldUps{}, fmt.Errorf("%q: want SEED,EVERY,MOST, e.g. 1,100ms,40ms", v)
	}
	seed, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return HoldUps{}, fmt.Errorf("seed %q: %w", f[0], err)
	}
	var d [2]time.Duration
	for i, x := range f[1:] {
		if d[i], err = time.ParseDuration(x); err != nil || d[i] <= 0 {
			return HoldUps{}, fmt.Errorf("%q: want a positive duration such as 40ms", x)
		}
	}
	return HoldUps{Seed: seed, Every: d[0], Most: d[1]}, nil
}

// TestHeldUpTesters runs the suite in the simulator with its testers held
// up as a loaded machine holds them (SimEnvConfig.HoldUps: on average
// every 20 ms of virtual time up to 40 ms each, and every 60 ms up to
// 400 ms) and with the IUT frozen (SimEnvConfig.Freezes: every 40 ms up
// to 30 ms, and every 100 ms up to 250 ms beside held-up testers), each
// recorded as a measured stall: the clean reference implementation must
// fail no spec, and a faulty one (early-resend, no-grants, no-acks, no-busy) must still fail. 48 more
// seeds of hold-ups and 48 of freezes, four profiles each, passed when it
// was written. Load flakes of the suite's
// own logic then show here, the same on every machine and every run: a
// spec that counted a held-up tester's earlier RESEND rounds as the
// IUT's, a driver that judged the exchange stuck before taking the GRANTs
// that had come, an IUT answer to the previous spec's last RESEND judged
// in the next spec, a probe sent late judged as if on time (each failed
// here before its fix), a call the IUT legally timed out while the tester
// was held up past timeout_ticks taken for a failure, the tester's own
// DATA at a GRANT's priority that a later GRANT had changed; and with the
// IUT frozen: a late RESEND round whose finding did not reach back to the
// silence the freeze lay in (HOMA-RESEND-014's Since), awaited packets
// missing while the IUT was frozen (missedDuringStall), an ack of an
// earlier spec's RPC riding on this one's DATA, an overflow ACK holding
// an earlier spec's still pending ack. And the other way, a faulty IUT
// passing with a timing note: a stuck exchange excused by stalls that
// lost most of timeout_ticks anywhere in it (failStuck), a freeze's
// whole loss credited to the short window it touched (stall.Within).
func TestHeldUpTesters(t *testing.T) {
	if os.Getenv("HOMATEST_ENV") != "" || os.Getenv("HOMATEST_RESULT") != "" {
		t.Skip("a child run")
	}
	for _, c := range []struct {
		fault, focus, holdUps, freezes string
		most                           time.Duration
		fail                           bool
		// must is a spec (short name) that must be among the failed:
		// one whose missing packet a stall excused before.
		must string
	}{
		{"", "", "7,20ms,40ms", "", 40 * time.Millisecond, false, ""},
		// Hold-ups past timeout_ticks (100 ms here): the IUT may end
		// RPCs the tester left silent that long.
		{"", "", "110,60ms,400ms", "", 400 * time.Millisecond, false, ""},
		// The IUT frozen, every 40 ms up to 30 ms, and every 100 ms up
		// to 250 ms, with the testers held up too.
		{"", "", "", "301,40ms,30ms", 30 * time.Millisecond, false, ""},
		{"", "", "8,50ms,20ms", "323,100ms,250ms", 250 * time.Millisecond, false, ""},
		{"", "", "3,30ms,20ms", "17,80ms,120ms", 120 * time.Millisecond, false, ""},
		{"early-resend", "RESEND-gap", "7,20ms,40ms", "", 40 * time.Millisecond, true, ""},
		{"early-resend", "RESEND-gap", "", "301,40ms,30ms", 30 * time.Millisecond, true, ""},
		// An IUT that never grants: the GRANT awaited through a freeze
		// must still be missing after the freeze's loss plus the whole
		// window, a failure, not excused as timing-inconclusive (it was,
		// in every rerun, on a loaded machine).
		{"no-grants", "GRANT-long-request", "", "301,40ms,30ms", 30 * time.Millisecond, true, ""},
		// The same for the suite's other waits a stall excused: a
		// client that never ACKs, still silent after the repeated
		// NEED_ACKs' bound plus the freeze's loss (needAck), and
		// requests no GRANT ever moves on, still stuck after the bound
		// plus the freezes' loss (driveRequests): each passed with a
		// timing note before.
		{"no-acks", "NEED_ACK-answered-again", "", "301,40ms,30ms", 30 * time.Millisecond, true, ""},
		{"no-grants", "GRANT-fifo-paced", "8,50ms,20ms", "323,100ms,250ms", 250 * time.Millisecond, true, ""},
		// A receiver that never grants, its GRANT-waiting-alive exchange
		// stuck: stalls that lost most of timeout_ticks anywhere in it
		// no longer excuse that (only a held-up tester's silence of
		// timeout_ticks, or an exchange that moves on late: failStuck).
		{"no-grants", "GRANT-waiting-alive", "8,50ms,20ms", "323,100ms,250ms", 250 * time.Millisecond, true, ""},
		// A server that never answers BUSY: its missing BUSY awaited
		// 2 ms beside a 250 ms freeze was "too stalled to judge" while
		// the freeze's whole loss was credited to the window; only the
		// part inside it is now (stall.Within), and the BUSY is still
		// missing after it.
		{"no-busy", "", "8,50ms,20ms", "323,100ms,250ms", 250 * time.Millisecond, true, "RESEND-busy"},
		// The IUT frozen every 40 ms up to 30 ms: its timer counts
		// passes, so the call RESEND-timeout-one lets time out ends
		// 153-163 ms after its request (timeout_ticks 100 of 1 ms
		// allow 152), late by what many short freezes lost between
		// them. Asking one freeze to have lost a quarter of the bound
		// failed the clean IUT at seeds 3 and 5 ("had not ended
		// 152.002ms after its server went silent"), as a namespaces
		// run under load failed the ref; a faulty one still fails.
		{"", "RESEND-timeout-one", "", "3,40ms,30ms", 30 * time.Millisecond, false, ""},
		{"", "RESEND-timeout-one", "", "5,40ms,30ms", 30 * time.Millisecond, false, ""},
		{"late-resend", "RESEND-timeout-one", "", "3,40ms,30ms", 30 * time.Millisecond, true, "RESEND-timeout-one"},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "result.json")
		ctx, cancel := context.WithTimeout(context.Background(), timescale.D(10*time.Minute))
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestConformance$", "-test.count", "1")
		cmd.Env = append(os.Environ(), "HOMATEST_FAULT="+c.fault, "HOMATEST_FOCUS="+c.focus, "HOMATEST_SIM_HOLDUPS="+c.holdUps,
			"HOMATEST_SIM_FREEZES="+c.freezes, "HOMATEST_ARTIFACTS="+dir, "HOMATEST_RESULT="+out)
		b, err := cmd.CombinedOutput()
		cancel()
		var res Result
		raw, rerr := os.ReadFile(out)
		if rerr != nil {
			t.Fatalf("fault %q: no result (%v): %v\n%s", c.fault, rerr, err, b)
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, s := range res.Specs {
			if s.State == "failed" || s.State == "error" {
				failed = append(failed, s.ShortName()+": "+s.Failure)
			}
		}
		if got := len(failed) > 0; got != c.fail || (err != nil) != c.fail {
			t.Errorf("fault %q under held-up testers: failed specs %q (exit: %v); want failures: %v", c.fault, failed, err, c.fail)
		}
		if c.must != "" && !slices.ContainsFunc(failed, func(f string) bool { return strings.HasPrefix(f, c.must+": ") }) {
			t.Errorf("fault %q under %s %s: %s did not fail (failed: %q)", c.fault, c.holdUps, c.freezes, c.must, failed)
		}
		var held []stall.Span
		if raw, err := os.ReadFile(filepath.Join(dir, "capture.pcapng.stalls.json")); err != nil || json.Unmarshal(raw, &held) != nil {
			t.Fatalf("fault %q: the run's stalls: %v", c.fault, err)
		}
		if c.focus == "" && len(held) < 10 {
			t.Errorf("%s %s: only %d stalls in the whole suite: the testers and the IUT were hardly held up", c.holdUps, c.freezes, len(held))
		}
		for _, s := range held {
			if s.Who != holdUpWho && s.Who != freezeWho || s.Lost <= 0 || s.Lost > c.most {
				t.Errorf("%s %s: stall %v: want one of %q or %q up to %v", c.holdUps, c.freezes, s, holdUpWho, freezeWho, c.most)
			}
		}
	}
}
