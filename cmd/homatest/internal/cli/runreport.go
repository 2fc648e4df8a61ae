package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/spec"
)

// reportFile is the report page every run folder gets (report/html).
const reportFile = "report.html"

// failing reports whether spec s fails the run (conformance.SpecResult.Fails:
// SHOULD failures are warnings unless --strict).
func (o *runOpts) failing(s conformance.SpecResult) bool { return s.Fails(o.strict) }

// runReport is the JSON output of homatest run.
type runReport struct {
	// Verdict is pass, fail (a spec failed) or incomplete (no spec was
	// judged, or with --strict a spec was unsupported:
	// conformance.Tally.Incomplete), as the exit code 0, 1 or 2 (1 when
	// a spec failed in an incomplete run too: runExit); error when the run ended
	// before its report in a usage or environment error (Error, exit
	// code 2).
	// An interrupted run (Interrupted, exit code 130) is never pass: it is
	// fail when a finished pass failed, else incomplete, since the passes
	// it did not run may have failed.
	Verdict string `json:"verdict"`
	// Params are the --param overrides of the IUT's hello (each pass's
	// iut_params has every parameter it was judged with).
	Params agent.Params `json:"params,omitempty"`
	// Impl is the IUT (--impl: ref, linux, tcp or a manifest's path);
	// Fault the reference implementation's fault knob (--fault), when
	// set: a run against a deliberately broken IUT.
	Impl   string                `json:"impl"`
	Fault  string                `json:"fault,omitempty"`
	Passes []*conformance.Result `json:"passes"`
	// Artifacts is the run folder; "" when the run ended before it made
	// one (a refused --param, say).
	Artifacts string `json:"artifacts"`
	Failed    int    `json:"failed_passes"`
	// SpecsRun counts the specs judged over all passes; Unsupported those
	// not run (each spec's failure says why).
	SpecsRun    int `json:"specs_run"`
	Unsupported int `json:"unsupported"`
	// Inconclusive counts the specs never judged (timing-inconclusive in
	// their pass and every rerun: the run is INCOMPLETE);
	// TimingInconclusive the timing-inconclusive findings of all specs.
	Inconclusive       int `json:"inconclusive"`
	TimingInconclusive int `json:"timing_inconclusive"`
	// Warnings counts the specs that failed only as warnings (a SHOULD
	// spec without --strict: conformance.SpecResult.Warns; each has
	// "warning": true): counted here, in the text table's "warned" column
	// and as passed JUnit testcases with the warning in system-err, never
	// as failures.
	Warnings int `json:"warnings"`
	// Areas counts the specs of all passes by area and outcome
	// (conformance.CountAreas: passed, failed, warned, unsupported,
	// inconclusive, skipped), as the text table and the report page do:
	// each spec in one column, the warnings and inconclusive ones as
	// counted above.
	Areas []conformance.AreaCounts `json:"areas"`
	// Interrupted, when set, says the run was interrupted and these are
	// the passes that finished before ("interrupted after 2 finished
	// passes"); the exit code is then 130.
	Interrupted string `json:"interrupted,omitempty"`
	// Error, when set, is why the run ended before its report: a usage
	// or environment error found once it started (verdict "error", exit
	// code 2: no spec matched the filters, the environment could not be
	// built, the IUT cannot run here) or the IUT's failure outside any
	// spec (verdict "fail", exit code 1: its agent answered hello, then
	// fell silent). Passes are those that finished before.
	Error string `json:"error,omitempty"`
	// RunCapture, when set, says RUN-capture (the pass's whole capture
	// judged) did not run and how to judge the capture anyway ("not run:
	// ..."; a run whose --focus, --rules or --label-filter selected
	// specs: runCaptureNote); a whole-suite pass lists RUN-capture among
	// its specs instead.
	RunCapture string `json:"run_capture,omitempty"`
}

// writeJSON writes the JSON report of passes; interrupted, when not "",
// says the run was interrupted after them (runReport.Interrupted).
func (o *runOpts) writeJSON(out io.Writer, passes []*conformance.Result, interrupted string) error {
	verdict := conformance.Count(passes, o.strict).Verdict()
	if interrupted != "" && verdict != "fail" {
		verdict = "incomplete"
	}
	return o.writeJSONReport(out, passes, verdict, interrupted, "")
}

// writeJSONReport writes the JSON report of passes with verdict, and
// interrupted and errMsg (runReport.Interrupted, Error) when not "".
func (o *runOpts) writeJSONReport(out io.Writer, passes []*conformance.Result, verdict, interrupted, errMsg string) error {
	w := &errWriter{w: out}
	t := conformance.Count(passes, o.strict)
	markOutcomes(passes, o.strict)
	var all []conformance.SpecResult
	for _, p := range passes {
		for i := range p.Specs {
			if s := &p.Specs[i]; s.Fails(true) {
				s.RerunCommand = o.rerun(*s)
			}
		}
		all = append(all, p.Specs...)
	}
	areas := conformance.CountAreas(all, o.strict)
	if areas == nil {
		areas = []conformance.AreaCounts{} // [] in the JSON, never null
	}
	arts := o.artifacts
	if _, err := os.Stat(arts); err != nil {
		arts = "" // a run refused before it made its folder names none
	}
	jsonout.Write(w, runReport{Areas: areas, Verdict: verdict, Params: o.hello, Impl: o.impl, Fault: o.fault, Passes: passes, Artifacts: arts, Failed: t.FailedPasses,
		SpecsRun: t.Run, Unsupported: t.Unsupported, Inconclusive: t.Inconclusive, TimingInconclusive: t.TimingInconclusive,
		Warnings: t.Warned, Interrupted: interrupted, Error: errMsg, RunCapture: o.runCaptureNote(passes)})
	return w.err
}

// report prints the verdict of the passes.
//
// In text mode the passes themselves are not repeated: writePass printed
// each as it finished; this writes the verdict line, after a line saying
// how to run the unsupported specs when some were not run.
func (o *runOpts) report(out io.Writer, passes []*conformance.Result) error {
	w := &errWriter{w: out}
	t := conformance.Count(passes, o.strict)
	if o.output == "json" {
		return o.writeJSON(out, passes, "")
	}
	counts := plural.Of(t.Run, "spec", "specs") + " run"
	if t.Unsupported > 0 {
		counts += fmt.Sprintf(", %d not run (unsupported)", t.Unsupported)
		fmt.Fprintf(w, "\n%s not run: %s\n", plural.Of(t.Unsupported, "spec was", "specs were"), unsupportedHint(passes, t.Unsupported))
	}
	if t.Inconclusive > 0 {
		counts += fmt.Sprintf(", %d not judged (timing-inconclusive every time)", t.Inconclusive)
	}
	if t.TimingInconclusive > 0 {
		counts += "; " + plural.Of(t.TimingInconclusive, "timing finding", "timing findings") + " inconclusive"
	}
	if note := o.runCaptureNote(passes); note != "" {
		fmt.Fprintf(w, "\nRUN-capture %s\n", note)
	}
	verdict := "PASS (" + counts + ")"
	switch t.Verdict() {
	case "fail":
		verdict = fmt.Sprintf("FAIL (%d of %d passes; %s)", t.FailedPasses, t.Passes, counts)
	case "incomplete":
		verdict = fmt.Sprintf("INCOMPLETE (%s: %s)", counts, runIncompleteWhy(t))
	default:
		if t.Warned > 0 {
			verdict = fmt.Sprintf("PASS (%s) with %s (--strict fails on them)", counts, plural.Of(t.Warned, "SHOULD warning", "SHOULD warnings"))
		}
	}
	fmt.Fprintf(w, "\n%s; artifacts in %s (report: %s)\n", verdict, o.artifacts, filepath.Join(o.artifacts, reportFile))
	return w.err
}

// runCaptureNote says, for a run whose --focus, --rules or --label-filter
// selected specs, that RUN-capture (the pass's whole capture judged, which
// follows only a whole-suite pass) did not run and how to judge the
// capture anyway ("not run: ..."); "" for a whole-suite run, or one whose
// passes kept no capture.
func (o *runOpts) runCaptureNote(passes []*conformance.Result) string {
	if o.labelFilter == "" && o.rules == "" && len(o.focus) == 0 || len(passes) == 0 {
		return ""
	}
	capture := filepath.Join(o.artifacts, "pass-1", "capture.pcapng")
	if _, err := os.Stat(capture); err != nil {
		return ""
	}
	note := fmt.Sprintf("not run: the pass's whole capture is judged after a whole-suite pass only (no --focus, --rules or --label-filter); judge this one with homatest check %s", capture)
	switch n := len(passes); {
	case n == 2:
		note += " (and likewise pass-2)"
	case n > 2:
		note += fmt.Sprintf(" (and likewise pass-2 to pass-%d)", n)
	}
	return note
}

// runIncompleteWhy says why tally t is incomplete (Tally.Incomplete).
func runIncompleteWhy(t conformance.Tally) string {
	switch {
	case t.Inconclusive > 0:
		return plural.Of(t.Inconclusive, "spec was", "specs were") + " timing-inconclusive in every rerun: not judged is not a pass"
	case t.Run == 0:
		return "no spec was judged"
	}
	return "--strict fails on specs not run"
}

// unsupportedHint says how to run the n unsupported specs of passes
// (conformance.UnsupportedHints), or where their reasons are.
func unsupportedHint(passes []*conformance.Result, n int) string {
	var specs []conformance.SpecResult
	for _, p := range passes {
		specs = append(specs, p.Specs...)
	}
	if h := conformance.UnsupportedHints(specs); len(h) > 0 {
		return "to run " + plural.Word(n, "it", "them") + ", " + strings.Join(h, "; ")
	}
	return "the lines above say why"
}

// runExit is the error (nil: exit 0) of a run of passes, by their
// conformance.Tally: 1 when a spec failed, even if the run is also
// incomplete (the verdict is FAIL: a failed spec is the IUT's, and a CI
// job that retries exit 2 as the machine's must not retry it; a trial's
// faulty IUT exited 2 so), else 2 when incomplete.
func (o *runOpts) runExit(passes []*conformance.Result) error {
	t := conformance.Count(passes, o.strict)
	var msgs []string
	if t.FailedPasses > 0 {
		msgs = append(msgs, fmt.Sprintf("%d of %d passes had failed specs", t.FailedPasses, t.Passes))
	}
	if t.Incomplete() {
		if t.Inconclusive > 0 {
			msgs = append(msgs, runIncompleteWhy(t)+" (run them on a quieter machine)")
		}
		if t.Unsupported > 0 && (t.Run == 0 || t.Strict) {
			what := "no spec was judged"
			if t.Run > 0 {
				what = "--strict fails on specs not run"
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s not run (%s)", what, plural.Of(t.Unsupported, "spec", "specs"), unsupportedHint(passes, t.Unsupported)))
		}
		if t.FailedPasses > 0 {
			return &ExitError{Code: ExitViolations, Err: errors.New(strings.Join(msgs, "; "))}
		}
		return usageErr(errors.New(strings.Join(msgs, "; ")))
	}
	if len(msgs) > 0 {
		return &ExitError{Code: ExitViolations, Err: errors.New(msgs[0])}
	}
	return nil
}

// writePass prints pass i of n (1-based) in text mode as it finishes: its
// header, the specs by area, each failing spec with its reason and rerun
// command, the unsupported and inconclusive ones. A run of several passes
// shows each as soon as it is done, and an interrupted one keeps what
// finished.
func (o *runOpts) writePass(out io.Writer, i, n int, p *conformance.Result) error {
	w := &errWriter{w: out}
	fmt.Fprintf(w, "pass %d/%d: %s; %s in %.1fs\n", i, n, p.Env, plural.Of(specsRun(p), "spec", "specs"), p.Duration.Seconds())
	writeAreaTable(w, p.Specs, o.strict)
	for _, s := range p.Specs {
		if !s.Fails(true) {
			continue
		}
		kind := "FAIL"
		if !o.failing(s) {
			kind = "WARN (SHOULD)"
		}
		fmt.Fprintf(w, "\n%s %s\n  rules: %s; a %s spec\n", kind, s.Name, ruleLevels(s.Rules), s.Level)
		if s.Failure != "" {
			for _, l := range strings.Split(strings.TrimSpace(s.Failure), "\n") {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		for _, l := range s.OtherShould {
			fmt.Fprintf(w, "  %s\n", s.ShouldLine(l))
		}
		if s.Capture != "" {
			fmt.Fprintf(w, "  packets: %s (homatest decode %s)\n", s.Capture, s.Capture)
		}
		fmt.Fprintf(w, "  rerun: %s\n", o.rerun(s))
	}
	if o.strict {
		// Each spec not run fails the run: one line each, with its reason.
		for _, s := range p.Specs {
			if s.State == "unsupported" {
				fmt.Fprintf(w, "NOT RUN (--strict fails on it) %s: %s\n", s.ShortName(), strings.TrimSpace(s.Failure))
			}
		}
	} else {
		writeUnsupported(w, p.Specs)
	}
	writeInconclusive(w, p.Specs)
	return w.err
}

// ruleLevels lists rule IDs each with its own level from the rule book
// ("HOMA-GRANT-011 (SHOULD), HOMA-GRANT-007 (MUST)"): a spec labelled
// with rules of both levels has one level of its own, which is not every
// rule's. An ID the rule book lacks is listed bare.
func ruleLevels(ids []string) string {
	l := make([]string, len(ids))
	for i, id := range ids {
		l[i] = id
		if r := spec.RuleByID(id); r != nil {
			l[i] += " (" + r.Level.String() + ")"
		}
	}
	return strings.Join(l, ", ")
}

// specsRun is the number of p's specs that ran (every state but skipped:
// those --focus, --rules or --label-filter left out).
func specsRun(p *conformance.Result) int {
	n := 0
	for _, s := range p.Specs {
		if s.State != "skipped" {
			n++
		}
	}
	return n
}

// writeUnsupported prints the unsupported specs, one line per reason
// (conformance.Unsupported).
func writeUnsupported(w io.Writer, specs []conformance.SpecResult) {
	for _, l := range conformance.Unsupported(specs) {
		fmt.Fprintln(w, l)
	}
}

// rerun is the command that reruns one spec (for the pass's whole
// capture, conformance.RunCaptureShort, the whole suite).
func (o *runOpts) rerun(s conformance.SpecResult) string {
	c := "homatest run"
	if s.ShortName() != conformance.RunCaptureShort { // judged after a whole pass: no --focus
		c += " --focus " + strconv.Quote(s.ShortName())
	}
	if o.impl != "ref" {
		c += " --impl " + shellQuote(o.impl)
	}
	c += " --env " + o.env
	if o.fault != "" {
		c += " --fault " + shellQuote(o.fault)
	}
	for _, kv := range o.params {
		c += " --param " + shellQuote(kv)
	}
	// The flags that decide whether and how the spec runs and fails: a
	// workload spec of a foreign IUT is unsupported without
	// --ns-workloads, and a SHOULD spec fails only under --strict.
	if o.nsWorkloads {
		c += " --ns-workloads"
	}
	if o.strict {
		c += " --strict"
	}
	return c
}

// writeInconclusive prints the timing findings not charged to the IUT
// (conformance.SpecResult.TimingInconclusive, and TimingElsewhere: of
// rules that do not bear on their spec's verdict): counted, named, each
// with its cause, and the summary line says which cause excused how many
// (inconclusiveWhy).
func writeInconclusive(w io.Writer, specs []conformance.SpecResult) {
	var all []string
	in := 0
	for _, s := range specs {
		if k := len(s.TimingInconclusive) + len(s.TimingElsewhere); k > 0 {
			all = append(all, s.TimingInconclusive...)
			all = append(all, s.TimingElsewhere...)
			in++
		}
	}
	n := len(all)
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "%s in %s %s inconclusive: %s (not charged to the IUT)\n", plural.Of(n, "timing finding", "timing findings"), plural.Of(in, "spec", "specs"), plural.Word(n, "was", "were"), inconclusiveWhy(all))
	for _, s := range specs {
		if len(s.TimingInconclusive) == 0 && len(s.TimingElsewhere) == 0 {
			continue
		}
		switch s.Rerun {
		case "quiet":
			// The findings were the earlier tries'; the spec passed: not
			// an inconclusive line.
			fmt.Fprintf(w, "  %s: passed on rerun %d; before it, %s inconclusive: %s (not charged):\n",
				s.Name, s.Reruns, plural.Of(len(s.TimingInconclusive), "finding", "findings"), inconclusiveWhy(s.TimingInconclusive))
		case "inconclusive":
			fmt.Fprintf(w, "  NOT JUDGED %s: rerun %s, inconclusive every time (run it on a quieter machine to judge it)\n", s.Name, plural.Of(s.Reruns, "time", "times"))
		case "failed":
			fmt.Fprintf(w, "  %s: reproduced without a stall on rerun %d (FAIL above)\n", s.Name, s.Reruns)
		}
		for _, f := range s.TimingInconclusive {
			if s.Rerun == "quiet" {
				fmt.Fprintf(w, "    earlier try: %s\n", f)
				continue
			}
			fmt.Fprintf(w, "  INCONCLUSIVE %s: %s\n", s.Name, f)
		}
		for _, f := range alikeOnce(s.TimingElsewhere) {
			// Not "NOT JUDGED ...": the spec is judged; only this
			// finding, of a rule outside its verdict, is left to the
			// specs that judge that rule. A rerun finds the same one
			// again (simulated time repeats): said once, with a count
			// (two identical lines, without what told them apart).
			times := ""
			if f.n > 1 {
				times = fmt.Sprintf(" (found %d times", f.n)
				if s.Reruns > 0 {
					times += fmt.Sprintf(": the spec's first try and %s", plural.Of(s.Reruns, "rerun", "reruns"))
				}
				times += ")"
			}
			fmt.Fprintf(w, "  %s: judged; aside, another rule's inconclusive finding, not charged (the specs labelled with that rule judge it): %s%s\n", s.Name, f.line, times)
		}
	}
}

// alikeLine is a line of alikeOnce: line, found n times.
type alikeLine struct {
	line string
	n    int
}

// alikeOnce returns lines with each distinct line once, in the order it
// first came, and how many times it came.
func alikeOnce(lines []string) []alikeLine {
	var out []alikeLine
	at := map[string]int{}
	for _, l := range lines {
		if i, ok := at[l]; ok {
			out[i].n++
			continue
		}
		at[l] = len(out)
		out = append(out, alikeLine{l, 1})
	}
	return out
}

// inconclusiveWhy says what excused timing-inconclusive findings, by
// their causes (conformance.InconclusiveCause): "a measured stall of this
// machine explains each" when a stall explains every one, likewise for
// the slack alone or other causes alone, else how many each cause
// excused ("1 during a measured stall of this machine, 2 passed only by
// the slack ...").
func inconclusiveWhy(findings []string) string {
	count := map[string]int{}
	for _, f := range findings {
		count[conformance.InconclusiveCause(f)]++
	}
	each := plural.Word(len(findings), "it", "each")
	causes := []struct{ cause, all, some string }{
		{conformance.CauseStall, "a measured stall of this machine explains " + each, "during a measured stall of this machine"},
		{conformance.CauseSlack, "only the slack this machine's measured noise gave let " + each + " pass (a quiet machine's would not)", "passed only by this machine's measured slack"},
		{conformance.CauseOther, "its line says why", "for the cause its line names"},
	}
	var parts []string
	for _, c := range causes {
		switch count[c.cause] {
		case 0:
		case len(findings):
			if c.cause == conformance.CauseOther && len(findings) > 1 {
				return "each line says why"
			}
			return c.all
		default:
			parts = append(parts, fmt.Sprintf("%d %s", count[c.cause], c.some))
		}
	}
	return strings.Join(parts, ", ")
}

// writeAreaTable prints specs counted by area and outcome
// (conformance.CountAreas, as the report page and JSON count them): a
// spec that failed only as a warning (without strict) is warned, not
// failed, and one that ran but was never judged (inconclusive) is not
// judged, not skipped; the columns sum to the specs of the pass.
func writeAreaTable(w io.Writer, specs []conformance.SpecResult, strict bool) {
	fmt.Fprintf(w, "  %-12s %6s %6s %6s %11s %10s %7s\n", "area", "passed", "failed", "warned", "unsupported", "not judged", "skipped")
	for _, r := range conformance.CountAreas(specs, strict) {
		fmt.Fprintf(w, "  %-12s %6d %6d %6d %11d %10d %7d\n", r.Area, r.Passed, r.Failed, r.Warned, r.Unsupported, r.Inconclusive, r.Skipped)
	}
}

// markOutcomes sets Counted on the specs of passes to how each counts
// (conformance.SpecResult.Outcome), and Warning on those that failed
// only as warnings (without strict: Outcome "warned", as
// runReport.Warnings counts them).
func markOutcomes(passes []*conformance.Result, strict bool) {
	for _, p := range passes {
		for i := range p.Specs {
			p.Specs[i].Counted = p.Specs[i].Outcome(strict)
			p.Specs[i].Warning = p.Specs[i].Counted == "warned"
		}
	}
}

// matrixProgress is the mutation matrix's progress line: the knob about
// to run with the knobs done and caught so far, or (knob "") the count
// once every knob has run.
func matrixProgress(knob string, done, caught, n int) string {
	switch {
	case knob == "":
		return fmt.Sprintf("all %d fault knobs done, %d caught", n, caught)
	case done == 0:
		return fmt.Sprintf("fault knob 1 of %d (%s)", n, knob)
	}
	return fmt.Sprintf("fault knob %d of %d (%s); %d of the %d done caught", done+1, n, knob, caught, done)
}

// mutationMatrix runs one pass per fault knob (conformance.Supervisor.
// MutationMatrix) and prints the specs that fail under each; a knob no
// spec catches, or none by a rule its catalogue entry names
// (homa.FaultInfo.CaughtBy), fails the run.
func (o *runOpts) mutationMatrix(cmd *cobra.Command, sup *conformance.Supervisor, undo *harness.DirUndo) error {
	// A pass per knob takes minutes: a progress line on stderr (on a
	// terminal rewritten in place; in a CI log one line at the start,
	// then one every logEvery).
	pl := newProgressLine(cmd.ErrOrStderr(), "homatest run --mutation-matrix", 0, true)
	matrix, err := sup.MutationMatrix(o.passOptions(), func(knob string, done, caught, n int) {
		pl.update(matrixProgress(knob, done, caught, n))
	})
	pl.end()
	if errors.Is(err, conformance.ErrInterrupted) {
		return o.interrupted(err)
	}
	if err != nil {
		return o.usageEnd(err, undo)
	}
	o.startedRun()
	uncaught, elsewhere := 0, 0
	for _, e := range matrix {
		switch {
		case !e.Caught:
			uncaught++
		case !e.AsCatalogued:
			elsewhere++
		}
	}
	w := &errWriter{w: cmd.OutOrStdout()}
	if o.output == "json" {
		jsonout.Write(w, matrix)
	} else {
		fmt.Fprintf(w, "%-22s %s\n", "fault knob", "failing specs")
		for _, e := range matrix {
			specs := strings.Join(e.Specs, ", ")
			switch {
			case !e.Caught:
				specs = "NOT CAUGHT"
			case !e.AsCatalogued:
				specs = fmt.Sprintf("NOT BY %s (the catalogue's rules; findings: %s): %s", strings.Join(e.CaughtBy, ", "), strings.Join(e.Findings, ", "), specs)
			}
			fmt.Fprintf(w, "%-22s %s\n", e.Fault, specs)
		}
		fmt.Fprintf(w, "\n%d of %d knobs caught, %d by the rules the fault catalogue names; artifacts in %s\n",
			len(matrix)-uncaught, len(matrix), len(matrix)-uncaught-elsewhere, o.artifacts)
	}
	o.pruneRuns()
	if w.err != nil {
		return usageErr(fmt.Errorf("write output: %w", w.err))
	}
	if uncaught > 0 || elsewhere > 0 {
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("%d fault knobs are caught by no spec, %d not by the rules the fault catalogue names (homatest faults)", uncaught, elsewhere)}
	}
	return nil
}
