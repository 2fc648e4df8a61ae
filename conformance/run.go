package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
)

// Options configure one pass of the suite.
type Options struct {
	// NewEnv builds the environment (run once, before the first spec);
	// ctx ends when the pass is interrupted.
	NewEnv func(ctx context.Context) (*Env, error)
	// LabelFilter is a Ginkgo label filter expression over rule IDs, areas
	// and levels, e.g. "grant && MUST" or "HOMA-RESEND-006" ("" = all).
	LabelFilter string
	// Rules is a comma-separated list of rule-ID globs ("HOMA-GRANT-*"):
	// only specs labelled with a matching rule run ("" = all).
	Rules string
	// Focus, when set, runs only specs whose full name contains one of
	// its strings, or named by it: a spec's short name selects that spec
	// alone (focusRegexp).
	Focus []string
	// Progress, if set, is called as each selected spec starts: its
	// place i of the n the pass runs (from 1) and its short name.
	Progress func(i, n int, short string)
	// JUnit is the path of a JUnit XML report to write ("" = none).
	JUnit string
	// Artifacts is the pass's directory: its whole capture (capture.pcapng)
	// and the per-spec captures of failed specs.
	Artifacts string
	// Log receives Ginkgo's own progress output (nil = discarded).
	Log io.Writer
	// Verbose makes Ginkgo's output verbose.
	Verbose bool
}

// SpecResult is the outcome of one spec.
type SpecResult struct {
	// Name is the spec's full, stable name.
	Name string `json:"name"`
	// Area is the spec's area label (grant, resend, …).
	Area string `json:"area"`
	// Level is MUST or SHOULD.
	Level string `json:"level"`
	// Rules are the rule IDs the spec checks.
	Rules []string `json:"rules"`
	// State is passed, failed, error, unsupported, skipped or
	// inconclusive: its timing findings were timing-inconclusive in the
	// pass and in every rerun (rerunInconclusive), so it was never
	// judged, and nothing judged is not a pass (Tally.Incomplete).
	State string `json:"state"`
	// Failure is the failure message (expected vs observed).
	Failure string `json:"failure,omitempty"`
	// Capture is the path of the spec's packets (pcapng) for failed specs.
	Capture string `json:"capture,omitempty"`
	// Slack is the timing tolerance the spec's windows used (ns).
	Slack time.Duration `json:"slack_ns,omitempty"`
	// TimingInconclusive are the timing findings on the IUT that the
	// evidence cannot charge: a measured stall (of this process or the
	// IUT's) explains them, or only the measured noise's slack let them
	// pass, or another cause (InconclusiveCause): neither charged nor
	// hidden, one line each naming its cause.
	TimingInconclusive []string `json:"timing_inconclusive,omitempty"`
	// TimingElsewhere are the timing findings on the IUT that the
	// evidence cannot charge (as TimingInconclusive), of rules that do not bear on the spec's verdict
	// (outside its own rules and its labels' sections, in a section other
	// specs are labelled in and judge), one line each: not judged in this
	// exchange, reported and counted, but no reason to rerun the spec or
	// to leave it unjudged.
	TimingElsewhere []string `json:"timing_judged_elsewhere,omitempty"`
	// Reruns counts the reruns of a spec with inconclusive timing
	// findings (homatest run reruns it, bounded, to judge them on a
	// quieter machine); Rerun says how the last one ended: "quiet" (no
	// finding: the stall explained them), "inconclusive" (stalled again)
	// or "failed" (reproduced without a stall: the spec failed).
	Reruns int    `json:"reruns,omitempty"`
	Rerun  string `json:"rerun,omitempty"`
	// RerunCommand is set in homatest run's JSON report on a spec that
	// failed or warned: the command line that runs it alone again, as
	// the text report's "rerun:" line gives it.
	RerunCommand string `json:"rerun_command,omitempty"`
	// OtherShould are the SHOULD findings, at packets the IUT sent, of
	// rules outside the spec's own (see checkExchange), one line each: a
	// warning, failing the pass under --strict. (A MUST finding of such a
	// rule fails the spec, whatever its Level.)
	OtherShould []string `json:"other_should,omitempty"`
	// Warning is set in homatest run's report on a spec that is only a
	// warning (Warns, without --strict): its State may be "failed", but it
	// does not fail the run and is counted as a warning.
	Warning bool `json:"warning,omitempty"`
	// Counted is set in homatest run's report to how the spec counts in
	// the verdict and tables (Outcome, strict as --strict): its State is
	// Ginkgo's, so under --strict a spec with other rules' SHOULD
	// findings has State "passed" and Counted "failed".
	Counted string `json:"outcome,omitempty"`
	// Duration is the spec's run time (ns).
	Duration time.Duration `json:"duration_ns"`
}

// Result is the outcome of one pass.
type Result struct {
	// Env describes the environment (IUT, hosts).
	Env string `json:"env"`
	// Specs in run order.
	Specs []SpecResult `json:"specs"`
	// Duration of the pass (ns).
	Duration time.Duration `json:"duration_ns"`
	// IUTParams are the parameters the pass judged the IUT with, by
	// spec parameter name (spec.ParamNames): its hello's, with any
	// --param override, and slack and jitter from the measured noise.
	IUTParams map[string]string `json:"iut_params,omitempty"`
	// SetupError is set when the environment could not be built; then no
	// spec ran.
	SetupError string `json:"setup_error,omitempty"`
	// IUTFailure is set when the IUT failed before any spec ran, outside
	// any spec: its agent answered hello, then fell silent, exited or
	// broke the agent protocol (iutFault). Then no spec ran, and the run
	// fails (exit 1).
	IUTFailure string `json:"iut_failure,omitempty"`
	// Running, in the result of a pass interrupted part-way, names the
	// specs the interrupt cut short (left out of Specs, which holds the
	// specs that finished); in a pass whose rerun of timing-inconclusive
	// specs was interrupted, the rerun's, each "NAME (rerun K)".
	Running []string `json:"running,omitempty"`
}

// NamedRules returns the rule IDs the spec's failure message names, in
// the order it first names them, each once: the rules the exchange
// broke, which may lie outside the spec's own Rules (a MUST finding of
// any rule fails the spec). Nil when it names none.
func (s SpecResult) NamedRules() []string {
	var ids []string
	for _, r := range ruleIDs.FindAllString(s.Failure, -1) {
		if !slices.Contains(ids, r) {
			ids = append(ids, r)
		}
	}
	return ids
}

// ShortName is the spec's short name, as --focus takes it: "RESEND-gap"
// of "retransmission RESEND-gap: a request with a missing segment ...".
func (s SpecResult) ShortName() string {
	name, _, _ := strings.Cut(s.Name, ":")
	return name[strings.LastIndex(name, " ")+1:]
}

// lacksCapability starts the reason need gives for an unsupported spec.
const lacksCapability = "the IUT does not declare capability "

// Unsupported sums up the unsupported specs among specs in one line per
// reason, naming them by short name: one line for the capabilities the
// IUT's manifest does not declare (each with its count), then one per
// other reason (an environment without a bench, say); nil when none.
func Unsupported(specs []SpecResult) []string {
	var caps, reasons []string // in first-seen order
	byCap, byReason := map[string][]string{}, map[string][]string{}
	for _, s := range specs {
		if s.State != "unsupported" {
			continue
		}
		why := strings.TrimSpace(strings.TrimPrefix(s.Failure, "unsupported:"))
		if c, ok := strings.CutPrefix(why, lacksCapability); ok {
			if byCap[c] == nil {
				caps = append(caps, c)
			}
			byCap[c] = append(byCap[c], s.ShortName())
			continue
		}
		if byReason[why] == nil {
			reasons = append(reasons, why)
		}
		byReason[why] = append(byReason[why], s.ShortName())
	}
	specsN := func(n int) string { return plural.Of(n, "spec", "specs") }
	var out []string
	if len(caps) > 0 {
		var names, missing []string
		for _, c := range caps {
			names = append(names, byCap[c]...)
			missing = append(missing, fmt.Sprintf("%s (%d)", c, len(byCap[c])))
		}
		out = append(out, fmt.Sprintf("%s unsupported by this IUT's manifest, for the capabilities it does not declare, %s: %s",
			specsN(len(names)), strings.Join(missing, ", "), strings.Join(names, ", ")))
	}
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%s unsupported: %s: %s", specsN(len(byReason[r])), r, strings.Join(byReason[r], ", ")))
	}
	return out
}

// UnsupportedHints says how to run the unsupported specs among specs, one
// hint per kind of reason: add --ns-workloads for the passive specs an
// environment without benches left out, declare the missing capabilities
// in the agent's hello, and change the parameters (or the IUT) the other
// reasons name; nil when none is unsupported.
func UnsupportedHints(specs []SpecResult) []string {
	var caps []string
	bench, other := false, false
	for _, s := range specs {
		if s.State != "unsupported" {
			continue
		}
		why := strings.TrimSpace(strings.TrimPrefix(s.Failure, "unsupported:"))
		if c, ok := strings.CutPrefix(why, lacksCapability); ok {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		} else if why == errNoBench.Error() {
			bench = true
		} else {
			other = true
		}
	}
	var out []string
	if bench {
		out = append(out, "add --ns-workloads (the workload specs on IUT hosts in namespaces, as root)")
	}
	if len(caps) > 0 {
		out = append(out, fmt.Sprintf("declare %s in the agent's hello if the IUT has them (docs/agent-protocol.md, Capabilities)", strings.Join(caps, ", ")))
	}
	if other {
		// Parameters (a timeout, unsched_bytes, a grant window) or the
		// profile's HomaModule version: each reason names its own.
		out = append(out, "change the IUT's parameters as each reason above says (--param NAME=VALUE for the ref, params in a manifest); a reason naming a profile needs an IUT of that HomaModule version")
	}
	return out
}

// Failed counts specs in state failed or error.
func (r *Result) Failed() int {
	n := 0
	for _, s := range r.Specs {
		if s.State == "failed" || s.State == "error" {
			n++
		}
	}
	return n
}

// moreShould starts the line that ends an OtherShould list capped at
// maxOtherShould: "… and N more" stands for N findings.
const moreShould = "… and "

// capShould returns lines, SHOULD findings one a line, capped at
// maxOtherShould: the rest are one last line, "… and N more".
func capShould(lines []string) []string {
	if len(lines) <= maxOtherShould {
		return lines
	}
	return append(lines[:maxOtherShould:maxOtherShould], fmt.Sprintf(moreShould+"%d more", len(lines)-maxOtherShould))
}

// ShouldCount returns how many SHOULD findings of other rules s's
// OtherShould lines stand for: one a line, and N for the "… and N more"
// line that ends a capped list.
func (s SpecResult) ShouldCount() int {
	n := 0
	for _, l := range s.OtherShould {
		var more int
		if _, err := fmt.Sscanf(l, moreShould+"%d more", &more); err == nil && strings.HasPrefix(l, moreShould) {
			n += more
			continue
		}
		n++
	}
	return n
}

// ShouldLine returns OtherShould line l as run's text and report page
// print it: "SHOULD finding: l" when l's rule is one of s.Rules (as for
// RUN-capture, whose own findings they are), else "SHOULD finding of
// another rule: l"; a "… and N more" line reads "… and N more SHOULD
// findings" (of other rules, likewise).
func (s SpecResult) ShouldLine(l string) string {
	rule, _, _ := strings.Cut(l, " ")
	own := slices.Contains(s.Rules, rule)
	if strings.HasPrefix(l, moreShould) {
		own = len(s.OtherShould) > 0 && s.ShouldLine(s.OtherShould[0]) == "SHOULD finding: "+s.OtherShould[0]
		if own {
			return l + " SHOULD findings"
		}
		return l + " SHOULD findings of other rules"
	}
	if own {
		return "SHOULD finding: " + l
	}
	return "SHOULD finding of another rule: " + l
}

// Fails reports whether s fails the pass: failed or in error and MUST, or
// failed by a MUST finding of a rule outside its own, or, when strict,
// failed at any level or with a warning (OtherShould). Otherwise a failed
// SHOULD spec is a warning.
func (s SpecResult) Fails(strict bool) bool {
	if s.State == "failed" || s.State == "error" {
		return strict || s.Level != "SHOULD" || strings.Contains(s.Failure, otherMustFailure)
	}
	return strict && len(s.OtherShould) > 0
}

// Warns reports whether s is a warning without strict: a failed SHOULD
// spec, or one with findings of other rules' SHOULD (OtherShould), that
// does not fail the pass.
func (s SpecResult) Warns() bool {
	return !s.Fails(false) && s.Fails(true)
}

// Outcome is how s counts in homatest run's verdict and tables, strict
// as --strict: "failed" (Fails), "warned" (Warns: a failed SHOULD spec,
// or one with other rules' SHOULD findings, without strict), else its
// State: "passed", "unsupported" (not run), "inconclusive" (ran, never
// judged: "not judged" in the text and the report page; so even with a
// warning, since a warning is a pass and not judged is not) or
// "skipped" (left out by --focus, --rules or --label-filter). Every
// spec has one, so counts by Outcome sum to the number of specs.
func (s SpecResult) Outcome(strict bool) string {
	switch {
	case s.Fails(strict):
		return "failed"
	case s.State == "inconclusive" || !s.Warns():
		return s.State
	}
	return "warned"
}

// Counts counts specs by Outcome, each spec in exactly one field: the
// one count of states homatest run's text table, JSON and report page
// share, so that they sum to the number of specs and agree with the
// verdict line (Tally).
type Counts struct {
	// One field per Outcome; Inconclusive is "not judged" in the text
	// and the report page.
	Passed       int `json:"passed"`
	Failed       int `json:"failed"`
	Warned       int `json:"warned"`
	Unsupported  int `json:"unsupported"`
	Inconclusive int `json:"inconclusive"`
	Skipped      int `json:"skipped"`
}

// Add counts s (strict as --strict). A state no outcome names (none is
// set) counts as inconclusive: it ran or may have, and was not judged,
// which is not "skipped".
func (c *Counts) Add(s SpecResult, strict bool) {
	switch s.Outcome(strict) {
	case "passed":
		c.Passed++
	case "failed":
		c.Failed++
	case "warned":
		c.Warned++
	case "unsupported":
		c.Unsupported++
	case "skipped":
		c.Skipped++
	default:
		c.Inconclusive++
	}
}

// AreaCounts are the Counts of one spec area.
type AreaCounts struct {
	Area string `json:"area"`
	Counts
}

// CountAreas counts specs by area (sorted by name) and Outcome, strict
// as --strict.
func CountAreas(specs []SpecResult, strict bool) []AreaCounts {
	idx := map[string]int{}
	var out []AreaCounts
	for _, s := range specs {
		i, ok := idx[s.Area]
		if !ok {
			i = len(out)
			idx[s.Area] = i
			out = append(out, AreaCounts{Area: s.Area})
		}
		out[i].Add(s, strict)
	}
	slices.SortFunc(out, func(a, b AreaCounts) int { return strings.Compare(a.Area, b.Area) })
	return out
}

// Failing counts the specs that fail the pass (SpecResult.Fails).
func (r *Result) Failing(strict bool) int {
	n := 0
	for _, s := range r.Specs {
		if s.Fails(strict) {
			n++
		}
	}
	return n
}

// Tally counts the specs of a run's passes by outcome: the one reading of
// a run's verdict that homatest run's text, JSON and report page share.
type Tally struct {
	// Passes is the number of passes; FailedPasses those with a spec
	// that fails the run.
	Passes, FailedPasses int
	// Run counts the specs judged (passed, failed or in error).
	Run int
	// Unsupported counts the specs not run because the IUT's manifest
	// or the environment could not run them (Unsupported says why).
	Unsupported int
	// Failing counts the specs that fail the run (SpecResult.Fails).
	Failing int
	// Warned counts the SHOULD warnings (Outcome "warned"; 0 when
	// Strict, where they fail).
	Warned int
	// Inconclusive counts the specs never judged (Outcome inconclusive);
	// TimingInconclusive the stall-explained timing findings of every
	// spec (SpecResult.TimingInconclusive and TimingElsewhere), reruns'
	// included.
	Inconclusive, TimingInconclusive int
	// Strict is homatest run --strict.
	Strict bool
}

// Count tallies passes; strict as homatest run --strict. Its counts are
// the specs' Counts (Outcome), as the area tables count them.
func Count(passes []*Result, strict bool) Tally {
	t := Tally{Passes: len(passes), Strict: strict}
	for _, p := range passes {
		var c Counts
		for _, s := range p.Specs {
			c.Add(s, strict)
			t.TimingInconclusive += len(s.TimingInconclusive) + len(s.TimingElsewhere)
		}
		if c.Failed > 0 {
			t.FailedPasses++
		}
		t.Failing += c.Failed
		t.Warned += c.Warned
		t.Run += c.Passed + c.Failed + c.Warned
		t.Unsupported += c.Unsupported
		t.Inconclusive += c.Inconclusive
	}
	return t
}

// Incomplete reports whether the run could not be judged whole: a spec
// was timing-inconclusive in every rerun (nothing judged is not a pass),
// no spec ran (every one selected was unsupported), or a spec was
// unsupported under Strict (a gate that asks for strictness does not
// skip part of the suite). homatest run exits 2 then,
// as homatest check does on a capture it could not judge whole, even
// when a spec failed.
func (t Tally) Incomplete() bool {
	return t.Inconclusive > 0 || t.Unsupported > 0 && (t.Run == 0 || t.Strict)
}

// Verdict is the run's verdict: "fail" (a spec fails the run),
// "incomplete" (none does, but Incomplete) or "pass".
func (t Tally) Verdict() string {
	switch {
	case t.Failing > 0:
		return "fail"
	case t.Incomplete():
		return "incomplete"
	}
	return "pass"
}

// The state of the pass in progress (Ginkgo runs one suite per process).
var (
	opts       Options
	env        *Env
	lastReport *types.Report
	// iutFailure is the IUT's failure before any spec ran
	// (Result.IUTFailure), "" if none.
	iutFailure string
)

// iutFault reports whether err, from a request to an agent that answered
// its hello, is the IUT's fault: the agent fell silent, exited or broke
// the agent protocol. An agent that declared itself an IUT and then does
// not answer fails the run (exit 1), as a spec it does not answer fails;
// the environment is not to blame and a CI retry would not help.
func iutFault(err error) bool {
	var pe *agent.ProtocolError
	return errors.Is(err, agent.ErrAgentSilent) || errors.Is(err, agent.ErrAgentExited) || errors.As(err, &pe)
}

var _ = BeforeSuite(func(sc SpecContext) {
	// Registered first, so an interrupt while the environment is being
	// built still removes every namespace the harness created.
	DeferCleanup(harness.CloseAll)
	e, err := opts.NewEnv(sc)
	if err != nil {
		// The error names the step; the caller says the environment
		// could not be built (Result.SetupError).
		Fail(err.Error())
	}
	env = e
	DeferCleanup(func() error {
		if env != nil && env.Close != nil {
			return env.Close()
		}
		return nil
	})
	if err := env.IUT.Listen(sc, ServerPort, agent.ListenOptions{}); err != nil {
		// One line with the cause (Gomega's message put it on a later
		// line, which the run's error left out).
		msg := fmt.Sprintf("asking the IUT to serve on port %d: %v", ServerPort, err)
		if iutFault(err) {
			iutFailure = "the IUT failed before any spec ran: " + msg
			Fail(iutFailure)
		}
		Fail(msg)
	}
	if env.Virtual {
		// Virtual time: nothing stalls and nothing is late; the windows
		// keep the environment's slack (sim.ViewTolerance).
		AddReportEntry("noise", fmt.Sprintf("virtual time; slack %v", env.Slack))
		return
	}
	if env.Stalls == nil {
		env.Stalls = stall.Start(stall.Config{})
	}
	env.Stalls.Watch(os.Getpid(), stall.Harness)
	env.Stalls.WatchSoftirq()
	DeferCleanup(env.Stalls.Stop)
	worst, median, err := measureNoise(sc, env)
	ok(err, "unexpected error")
	env.Slack = max(env.Slack, slackFor(worst))
	env.Delivery = max(env.Delivery, timescale.D(worst))
	AddReportEntry("noise", fmt.Sprintf("round trip median %v, worst %v of %d; slack %v", median, worst, noiseSamples, env.Slack))
})

var _ = ReportAfterSuite("homatest result", func(r Report) { lastReport = &r })

// specsToRun and specsStarted count the pass's specs for
// Options.Progress.
var specsToRun, specsStarted int

var _ = ReportBeforeSuite(func(r Report) { specsToRun = r.PreRunStats.SpecsThatWillRun })

var _ = BeforeEach(func() {
	specsStarted++
	if opts.Progress != nil {
		opts.Progress(specsStarted, specsToRun, SpecResult{Name: CurrentSpecReport().FullText()}.ShortName())
	}
})

// failer satisfies GinkgoTestingT for runs outside go test.
type failer struct{ failed bool }

func (f *failer) Fail() { f.failed = true }

// Run executes the suite once with o and returns its result. t is the
// go-test *testing.T when run under go test, nil otherwise. Ginkgo allows
// one run per process: a second call returns an error.
func Run(t GinkgoTestingT, o Options) (*Result, error) {
	if o.NewEnv == nil {
		return nil, errors.New("conformance: Options.NewEnv is required")
	}
	if lastReport != nil || opts.NewEnv != nil {
		return nil, errors.New("conformance: the suite runs once per process (use a child process per pass)")
	}
	opts = o
	if t == nil {
		t = &failer{}
	}
	RegisterFailHandler(Fail)
	sc, rc, err := suiteConfig(o)
	if err != nil {
		return nil, err
	}
	if o.JUnit != "" {
		abs, err := filepath.Abs(o.JUnit)
		if err != nil {
			return nil, err
		}
		o.JUnit = abs
	}
	out := o.Log
	if out == nil {
		out = io.Discard
	}
	saved := formatter.ColorableStdOut
	formatter.ColorableStdOut = out
	defer func() { formatter.ColorableStdOut = saved }()
	start := time.Now()
	RunSpecs(t, suiteDescription, sc, rc)
	res := &Result{Duration: time.Since(start)}
	if env != nil {
		res.Env = env.String()
		if env.IUT != nil {
			jp := env.judgedParams()
			res.IUTParams = jp.Values()
		}
	}
	if lastReport == nil {
		return res, errors.New("conformance: Ginkgo produced no report")
	}
	if o.JUnit != "" {
		if err := writeJUnit(*lastReport, o.JUnit); err != nil {
			return res, fmt.Errorf("conformance: writing JUnit report: %w", err)
		}
	}
	for _, sr := range lastReport.SpecReports {
		switch sr.LeafNodeType {
		case types.NodeTypeIt:
		case types.NodeTypeBeforeSuite, types.NodeTypeSynchronizedBeforeSuite:
			if sr.State.Is(types.SpecStateFailureStates) {
				if iutFailure != "" {
					res.IUTFailure = iutFailure
				} else {
					res.SetupError = firstLine(sr.Failure.Message)
				}
			}
			continue
		default:
			continue
		}
		res.Specs = append(res.Specs, specResult(sr))
	}
	// The whole capture is judged after a whole suite only: --focus,
	// --rules and --label-filter ask for the verdicts of some specs.
	whole := o.LabelFilter == "" && o.Rules == "" && len(o.Focus) == 0
	if whole {
		if rc, ok := passCaptureResult(env, res.Specs, len(lastReport.SpecialSuiteFailureReasons) > 0); ok {
			res.Specs = append(res.Specs, rc)
		}
	}
	return res, nil
}

// suiteConfig is Ginkgo's configuration of a pass with o: its order,
// and the specs o's LabelFilter, Rules and Focus select (Run and List
// select alike). Every field it uses is set, not added to, so a
// configuration left by an earlier List does not leak into it. Errors: a
// bad Rules pattern.
func suiteConfig(o Options) (types.SuiteConfig, types.ReporterConfig, error) {
	sc, rc := GinkgoConfiguration()
	// One order for every pass: Ginkgo shuffles top-level containers by
	// its seed, and in the simulator the order decides the IUT's state
	// (RPC ids, peers known) each spec starts from, so a fixed seed makes
	// passes repeat exactly (and a rerun command runs what failed).
	sc.RandomizeAllSpecs = false
	sc.RandomSeed = 1
	sc.LabelFilter = o.LabelFilter
	if o.Rules != "" {
		f, err := rulesFilter(o.Rules)
		if err != nil {
			return sc, rc, err
		}
		if sc.LabelFilter != "" {
			f = "(" + sc.LabelFilter + ") && " + f
		}
		sc.LabelFilter = f
	}
	sc.FocusStrings = nil
	for _, f := range o.Focus {
		if f != "" {
			sc.FocusStrings = append(sc.FocusStrings, focusRegexp(f))
		}
	}
	rc.NoColor = true
	rc.Succinct = !o.Verbose
	rc.Verbose = o.Verbose
	return sc, rc, nil
}

// passCaptureResult is the RUN-capture result of a whole pass of env
// whose results are specs (ok false: none), suiteFailed when a suite
// node failed (its setup or cleanup). A capture env lost while it closed
// (Env.RunCaptureLost, a cleanup failure) is said as RUN-capture's error,
// so that the text, JSON and JUnit reports say it was not judged and why.
func passCaptureResult(env *Env, specs []SpecResult, suiteFailed bool) (SpecResult, bool) {
	switch {
	case env == nil || !judgedAny(specs):
	case env.RunCaptureLost != "":
		return runCaptureLost(env.RunCaptureLost), true
	case env.RunCapture != "" && env.IUT != nil && !suiteFailed:
		return judgeRunCapture(env.RunCapture, env.IUT.Info(), env.Profile, env.Virtual), true
	}
	return SpecResult{}, false
}

// judgedAny reports whether a spec among specs ran to a verdict (passed
// or failed): the pass's capture then holds an exchange to judge.
func judgedAny(specs []SpecResult) bool {
	for _, s := range specs {
		if s.State == "passed" || s.State == "failed" {
			return true
		}
	}
	return false
}

// specResult converts a Ginkgo spec report.
func specResult(sr types.SpecReport) SpecResult {
	s := SpecResult{Name: sr.FullText(), Duration: sr.RunTime}
	for _, l := range sr.Labels() {
		switch {
		case strings.HasPrefix(l, "HOMA-"):
			s.Rules = append(s.Rules, l)
		case l == "MUST" || l == "SHOULD":
			s.Level = l
		case areas[l]:
			s.Area = l
		}
	}
	for _, e := range sr.ReportEntries {
		switch e.Name {
		case entryCapture:
			s.Capture = e.StringRepresentation()
		case entrySlack:
			if d, err := time.ParseDuration(e.StringRepresentation()); err == nil {
				s.Slack = d
			}
		case entryInconclusive:
			s.TimingInconclusive = append(s.TimingInconclusive, e.StringRepresentation())
		case entryElsewhere:
			s.TimingElsewhere = append(s.TimingElsewhere, e.StringRepresentation())
		case entryOtherShould:
			s.OtherShould = append(s.OtherShould, e.StringRepresentation())
		}
	}
	switch {
	case sr.State == types.SpecStatePassed:
		s.State = "passed"
	case sr.State == types.SpecStateSkipped && strings.HasPrefix(sr.Failure.Message, "unsupported"):
		s.State, s.Failure = "unsupported", sr.Failure.Message
	case sr.State == types.SpecStateSkipped || sr.State == types.SpecStatePending:
		s.State = "skipped"
		if sr.Failure.Message != "" {
			s.Failure = sr.Failure.Message
		}
	case sr.State == types.SpecStateFailed:
		s.State, s.Failure = "failed", PlainFailure(sr.Failure.Message)
	default:
		s.State, s.Failure = "error", sr.State.String()+": "+PlainFailure(sr.Failure.Message)
	}
	if s.State != "failed" && s.State != "error" {
		s.Capture = "" // kept for failed specs only (passing ones delete theirs)
	}
	return s
}

// gomegaType is the type annotation Gomega puts before a value
// ("<uint64>: ", "<[]string | len:3, cap:4>: ").
var gomegaType = regexp.MustCompile(`^<[^>]*>: ?`)

// PlainFailure turns a Gomega assertion message ("DESCRIPTION\nExpected\n
// <T>: v\nto equal\n    <T>: w", with notes on truncation and a link)
// into one line, "DESCRIPTION: expected v to equal w", without the type
// annotations and notes: a spec's failure reads as its own reason. Other
// messages (Fail's, the specs' own) are returned as they are.
func PlainFailure(msg string) string {
	desc, rest, found := strings.Cut("\n"+msg, "\nExpected\n")
	if !found {
		return msg
	}
	var parts []string
	for _, l := range strings.Split(rest, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, "Gomega") || strings.HasPrefix(l, "Consider having the object") ||
			strings.HasPrefix(l, "Learn more here:") {
			continue
		}
		parts = append(parts, gomegaType.ReplaceAllString(l, ""))
	}
	line := "expected " + strings.Join(parts, " ")
	if desc = strings.TrimSpace(desc); desc != "" {
		line = desc + ": " + line
	}
	return line
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// rulesFilter turns "HOMA-GRANT-*,HOMA-ACK-001" into a label filter that
// matches specs labelled with any of those rules.
func rulesFilter(globs string) (string, error) {
	var parts []string
	for _, g := range strings.Split(globs, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		if strings.ContainsAny(g, "/()&|!") {
			return "", fmt.Errorf("--rules: %q is not a rule-ID glob (e.g. HOMA-GRANT-* or HOMA-ACK-001)", g)
		}
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(g), `\*`, ".*") + "$"
		parts = append(parts, "/"+re+"/")
	}
	if len(parts) == 0 {
		return "", errors.New("--rules: no rule-ID glob given")
	}
	return "(" + strings.Join(parts, " || ") + ")", nil
}

// focusTextHint is FocusHint's word on --focus text f that is not
// shaped like a short name: "" when a spec's name contains it.
func focusTextHint(f string, specs []SpecResult) string {
	re := regexp.MustCompile(focusRegexp(f))
	var other []string
	for _, s := range specs {
		if re.MatchString(suiteDescription + " " + s.Name) {
			return ""
		}
		if strings.Contains(strings.ToLower(s.Name), strings.ToLower(f)) && s.ShortName() != RunCaptureShort {
			other = append(other, s.ShortName())
		}
	}
	switch {
	case strings.ContainsAny(f, `*?[]^$|\+(){}`):
		return fmt.Sprintf("--focus %q is plain text, not a glob or regexp: give text of the specs' names, such as a short name (GRANT-srpt) or a word (srpt); --rules takes rule-ID globs", f)
	case len(other) > 0:
		if len(other) > 6 {
			other = append(other[:6], "…")
		}
		return fmt.Sprintf("--focus %q: no spec's name contains it as typed (case matters); in another case: %s", f, strings.Join(other, ", "))
	}
	return ""
}

// shortNameRe matches a spec's short name (SpecResult.ShortName), e.g.
// "WORKLOAD-incast", "RPC_UNKNOWN-reply".
var shortNameRe = regexp.MustCompile(`^[A-Z][A-Z_]*-[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)

// suiteDescription is the suite's description (Ginkgo's RunSpecs and
// PreviewSpecs), which Ginkgo puts before each spec's full name when it
// matches focus regexps.
const suiteDescription = "Homa conformance"

// focusRegexp is the Ginkgo focus regexp of the --focus text f: a spec's
// short name selects that spec alone (its full name has it as a word
// followed by ":"), not those whose names extend it ("WORKLOAD-incast"
// used to run WORKLOAD-incast-mixed too, rerun commands included); any
// other text selects the specs whose full name contains it. Ginkgo
// matches "Homa conformance " + the full name: the regexp skips that
// prefix ("--focus Homa" used to select every spec).
func focusRegexp(f string) string {
	prefix := "^" + regexp.QuoteMeta(suiteDescription+" ")
	if shortNameRe.MatchString(f) {
		return prefix + `(.* )?` + regexp.QuoteMeta(f) + `:`
	}
	return prefix + `.*` + regexp.QuoteMeta(f)
}

// UnmatchedFocus returns the --focus texts among focus that select none
// of specs (their names, as a pass's results or List give them; Ginkgo's
// focus regexps, focusRegexp), in the order given; nil when each selects
// one. A text another filter (--rules, --label-filter) then leaves out
// still counts as selecting.
func UnmatchedFocus(focus []string, specs []SpecResult) []string {
	var out []string
	for _, f := range focus {
		re := regexp.MustCompile(focusRegexp(f))
		hit := false
		for _, s := range specs {
			if re.MatchString(suiteDescription + " " + s.Name) {
				hit = true
				break
			}
		}
		if !hit {
			out = append(out, f)
		}
	}
	return out
}

// FocusHint says, for --focus texts that selected no spec, what to give
// instead: for one shaped like a short name (which selects that spec
// alone), the short names among specs (the pass's results, skipped ones
// included) that begin with it, each to be given with a --focus of its
// own; for other text that no spec's name contains, that it is plain
// text (one with glob or regexp characters) or that case matters (the
// short names of the specs whose names contain it in another case); ""
// when there is nothing to say (the text matched specs the other
// filters left out).
func FocusHint(focus []string, specs []SpecResult) string {
	var hints []string
	for _, f := range focus {
		if f == RunCaptureShort {
			hints = append(hints, "--focus "+RunCaptureShort+" names no spec: the pass's whole capture is judged after a pass of the whole suite (no --focus, --rules or --label-filter)")
			continue
		}
		if !shortNameRe.MatchString(f) {
			if h := focusTextHint(f, specs); h != "" {
				hints = append(hints, h)
			}
			continue
		}
		var like []string
		for _, s := range specs {
			if n := s.ShortName(); strings.HasPrefix(n, f) && n != RunCaptureShort {
				like = append(like, n)
			}
		}
		if len(like) == 0 {
			hints = append(hints, fmt.Sprintf("--focus %s names no spec (a text shaped like a spec's short name selects that spec alone; any other text, such as a word of its name, selects the specs whose names contain it)", f))
			continue
		}
		hints = append(hints, fmt.Sprintf("--focus %s names no spec; the specs whose short names begin with it: %s (give each with a --focus of its own)", f, strings.Join(like, ", ")))
	}
	return strings.Join(hints, "; ")
}
