package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/report/html"
	"github.com/homatest/homatest/spec"
)

// runOpts are the flags of homatest run.
type runOpts struct {
	impl, env, labelFilter, rules, fault string
	focus                                []string
	params                               []string     // --param NAME=VALUE
	hello                                agent.Params // params parsed (validate)
	junit, output, artifacts             string
	repeat                               int
	// keepRuns is --keep-runs; defaulted that the run folder is
	// defaultRunDir's (no --artifacts): only then are old ones pruned.
	keepRuns                             int
	defaulted                            bool
	matrix, verbose, nsWorkloads, strict bool
	list                                 bool   // --list: print the specs, run none
	progress                             bool   // --progress: the progress line on stderr when not a terminal too
	passFile                             string // hidden: run one pass in this process
	ctx                                  context.Context
	// earlier are the pass folders and run files (report page,
	// interrupted marker) an earlier run left in --artifacts,
	// set aside until this run really starts (startedRun) or put back
	// when it ends in a usage error (usageEnd).
	earlier *conformance.EarlierPasses
	stdout  io.Writer
	stderr  io.Writer
	// done are the passes finished so far, junits their JUnit files:
	// a run that ends early (an error, the IUT's failure) reports them
	// with why it ended (endReports).
	done   []*conformance.Result
	junits []string
}

// selection names the spec filters the run was given, for a message
// saying they matched nothing: "--focus" or "--rules and --focus".
func (o *runOpts) selection() string {
	var given []string
	if o.labelFilter != "" {
		given = append(given, "--label-filter")
	}
	if o.rules != "" {
		given = append(given, "--rules")
	}
	if len(o.focus) > 0 {
		given = append(given, "--focus")
	}
	if len(given) == 0 {
		return "the run's selection"
	}
	return strings.Join(given, " and ")
}

// selectionHelp says what --focus and --label-filter take, for a
// selection that matched no spec.
const selectionHelp = "--focus takes plain text of a spec's name, case and all, e.g. GRANT-long-request or srpt; --label-filter an area (wire, grant, resend, ack, cutoffs, robustness, workload, ipv6), a level or a rule ID; homatest run --list lists the specs, homatest spec list the rule IDs"

// testHookBeforeLock, set by tests, runs between a run's look at its
// folder and its lock: another run taking the folder there is the race
// it must survive.
var testHookBeforeLock func(dir string)

func newRunCmd() *cobra.Command {
	o := &runOpts{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the conformance suite against a Homa implementation",
		Long: `Run runs the conformance suite: specs that play a Homa peer against the
implementation under test (IUT) and check its answers field by field and in
time, and check every exchange against the spec's rules. Each spec is
labelled with the rule IDs it checks (homatest spec list), its area and its
level (MUST or SHOULD).

The default IUT is the built-in reference implementation (package homa). As
root the default environment is network namespaces behind a switch (--env
ns); otherwise the simulator (--env sim: the reference implementation and
the tester peers on virtual time, no privileges, exact timing windows, the
same results on any machine). Output: a table of
specs by area, then every failure with its rule IDs, expected against
observed, the path of a pcapng holding just that spec's packets (the spec
checker's findings as packet comments on their frames), and the command
that reruns it. The run folder gets report.html: the same as a page, with
each failure's sequence graph (-o html prints it). While a pass runs,
standard error shows the spec it is at ("run: pass-1: spec 12/95
GRANT-srpt") when it is a terminal, or with --progress (a CI or lab log:
a line at most every 10 s, and the pass's last).

--list prints the specs a run would select, without running any: short
name, area, level, kind and RUNS, whether this IUT and environment run it:
yes; no (the reason follows the table); for an IUT whose hello is not
known in advance (any but the built-in ref with its own parameters),
"if params allow" (unless the parameters or profile in its hello rule the
spec out) or "if CAP" (only if its hello declares capability CAP, e.g.
ipv6, reply-delay, timeouts). -o json gives it as "runs" (with "needs",
the capabilities); "support" is the older, coarser field (yes, no, or
hello for every active spec), kept for scripts that read it.

--repeat N runs the suite N times (each pass in its own process) and fails if
any pass fails. --mutation-matrix runs one pass per fault knob of the
reference implementation (homatest faults) and prints which specs catch
which knob; a knob that no spec catches makes it fail.

Levels: a failed MUST spec fails the run (exit 1); a failed SHOULD spec is a
warning, listed but not failing, unless --strict. Each active spec judges its
exchange with every rule. Its own rules are its labels (at any level) and the
wire, id and control-priority MUST rules: a violation of one at the IUT's
packets fails it. A MUST violation of a rule outside the spec's own fails it
whatever its level; a SHOULD one is a warning, failing under --strict. After a pass of the whole suite (no
--focus, --rules or --label-filter) its capture.pcapng is judged as
homatest check judges it, as one more result, RUN-capture (area run): what
the IUT sent after a spec ended (an ack of an RPC it gave up, a reused id)
is in no spec's exchange; a MUST finding charged to the IUT that no spec
reported fails it (in namespaces only findings that judge no time).
Specs the IUT cannot run
(a capability its hello does not declare; the workload specs of a
manifest's IUT without --ns-workloads) are unsupported, not run: one line
per reason names them, a line says how to run them, and the last line
counts them ("PASS (12 specs run, 14 not run (unsupported))"). Nothing
judged is not a pass: a run in which no spec ran is INCOMPLETE (exit 2).
Under --strict every spec not run fails the run: one line each with its
reason, INCOMPLETE, exit 2 (a JUnit failure of type "unsupported").

Exit codes: 0 the run passed: a spec was judged, none failed the run and
none stayed timing-inconclusive (failed SHOULD specs and other rules'
SHOULD findings are warnings); 1 a spec failed the run: a MUST spec failed
or errored, a MUST violation of a rule outside a spec's own, or with
--strict a failed SHOULD spec or another rule's SHOULD finding (1 even
when the run is also INCOMPLETE); or the IUT failed before any spec ran
(its agent answered hello, then fell silent, exited or broke the agent
protocol); with --repeat, any pass so; with --mutation-matrix, a fault
knob no spec catches or none by the rules its catalogue entry names; 2
usage or environment error (the test environment could not be built), or
INCOMPLETE with no spec failed (no spec ran; a spec timing-inconclusive
in its pass and every rerun; with --strict, a spec not run); 130
interrupted (Ctrl-C, SIGINT or SIGTERM: the pass removes its
namespaces, and the run folder is kept, marked by its file
"interrupted"; a capture the pass could not finish is renamed
NAME.partial.pcapng, so every other capture reads whole, and the last line
says which). A run that ends early still writes -o json and --junit:
one ended by an error writes verdict "error" (usage or environment,
exit 2) or "fail" (the IUT fell silent outside any spec, exit 1) with an
"error" field, and an <error> or <failure> testcase; an interrupted one
writes verdict "incomplete" (or "fail" when a finished pass failed) with
an "interrupted" field naming the stopped pass and no "error", and its
JUnit says which pass was stopped. Either lists the passes that finished.

One run at a time uses a run folder (a lock in it names the run's pid; a
run refused it changes nothing in it; the pass child holds the lock too
and gets SIGTERM when its run dies; a killed run's lock is taken over). In namespaces a run first removes what
killed runs left on the machine, never a live run's (homatest cleanup).`,
		Example: `  homatest run --list                      # every spec's name for --focus, its area, level and rules
  homatest run --list --label-filter ipv6 -o json
  homatest run --env sim --focus GRANT-srpt --focus RESEND-gap   # these two specs
  homatest run --env sim --focus WORKLOAD   # every spec whose name holds WORKLOAD
  homatest run
  homatest run --label-filter 'grant && MUST'
  homatest run --rules 'HOMA-RESEND-*' -o json
  homatest run --fault no-grants            # expect failures citing HOMA-GRANT rules
  homatest run --env sim --fault reuse-timed-out-id   # every spec passes; RUN-capture fails (HOMA-WIRE-014)
  homatest run --env sim --param timeout_ticks=30 --param resend_ticks=2
  homatest run --repeat 10 --junit report.xml
  homatest run --mutation-matrix`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "ref", implUsage)
	f.StringVar(&o.env, "env", "auto", "environment: ns (network namespaces, root), sim (the simulator, virtual time, ref only), auto (ns as root, else sim)")
	f.StringVar(&o.labelFilter, "label-filter", "", "Ginkgo label filter over rule IDs, areas and levels, e.g. 'grant && MUST'")
	f.StringVar(&o.rules, "rules", "", "comma-separated rule-ID globs: run only specs checking these rules, e.g. 'HOMA-GRANT-*'")
	f.StringArrayVar(&o.focus, "focus", nil, "run only specs whose name (run --list -o json's \"name\": group, short name and description) contains this text as typed: case matters, and it is plain text, not a glob or regexp (e.g. srpt, WORKLOAD); a short name like WORKLOAD-incast selects that spec alone, not WORKLOAD-incast-mixed; repeat for several (a spec any of them selects runs; one that selects none while the others do is noted on stderr); empty text is refused")
	f.StringVar(&o.fault, "fault", "", "enable a fault knob of the reference implementation (homatest faults)")
	f.StringArrayVar(&o.params, "param", nil, "IUT parameter override for its hello, NAME=VALUE, over a manifest's own params (repeatable; e.g. timeout_ticks=30, unsched_bytes=12000; with --env sim, the simulated reference implementation's)")
	f.IntVar(&o.repeat, "repeat", 1, "run the suite N times; fails if any pass fails")
	f.StringVar(&o.junit, "junit", "", "write a JUnit XML report to this file (one testsuite per pass)")
	outputVar(f, &o.output, "the specs by area and every failure; html the report page (also written as report.html in the run folder)", "text", "json", "html")
	f.StringVar(&o.artifacts, "artifacts", "", "run folder: per pass its whole capture (capture.pcapng; --mutation-matrix keeps none), failed specs' own captures, result.json and logs, and report.html (default: a new folder under homatest-runs/)")
	f.IntVar(&o.keepRuns, "keep-runs", 20, "without --artifacts: once the run is done, remove the oldest of homatest run's folders under homatest-runs/ so that the newest N remain, this one included (only folders it made: named by time, holding passes, not in use; said on stderr); 0 keeps all")
	f.BoolVar(&o.list, "list", false, "print the specs the run would select (one a line: short name for --focus, area, level, active or passive, RUNS: whether this IUT and environment run it, rule IDs; -o json for machines; -o text or json only) and run none")
	f.BoolVar(&o.progress, "progress", false, "show which spec each pass is at on standard error (\"run: pass-1: spec 12/95 GRANT-srpt\") when it is not a terminal too (a CI or lab log: a line at most every 10 s); on a terminal it is shown anyway, in place")
	f.BoolVar(&o.matrix, "mutation-matrix", false, "run one pass per fault knob and print which specs catch each")
	f.BoolVar(&o.strict, "strict", false, "fail (exit 1) on SHOULD failures too: a failed SHOULD spec, or a SHOULD finding of another rule in any spec's exchange; and (exit 2, INCOMPLETE) on specs not run (unsupported); by default the first are warnings and the last are listed")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "keep Ginkgo's verbose log in the artifacts")
	f.BoolVar(&o.nsWorkloads, "ns-workloads", false, "with --env ns: run the passive workload specs on IUT hosts in namespaces behind netem's switch (heavy: one process per host plus the switch; default: reference hosts in the simulator for --impl ref, unsupported otherwise)")
	f.StringVar(&o.passFile, "pass", "", "internal: run one pass here from this options file (conformance.RunPassFile)")
	f.MarkHidden("pass")
	return cmd
}

// validate checks the flags before anything runs.
func (o *runOpts) validate() error {
	if o.env == "auto" {
		o.env = "sim"
		if os.Geteuid() == 0 {
			o.env = "ns"
		}
	}
	if _, err := o.manifest(); err != nil {
		return err
	}
	switch {
	case o.env == "mem":
		return errors.New("--env mem is gone: the simulator replaced the in-memory network; use --env sim (no root needed)")
	case o.env != "sim" && o.env != "ns":
		return fmt.Errorf("--env %q: want ns, sim or auto", o.env)
	case o.env == "sim" && o.impl != "ref":
		return fmt.Errorf("--impl %s needs --env ns (the simulator runs only the built-in reference implementation)", o.impl)
	case o.env == "sim" && o.nsWorkloads:
		return errors.New("--ns-workloads runs the workload specs in namespaces: it needs --env ns (and root)")
	case o.list && (len(o.runOnly()) > 0 || o.output == "html"):
		return listFlagsErr(o.runOnly(), o.output == "html")
	case o.env == "ns" && os.Geteuid() != 0 && !o.list: // listing builds nothing

		return errors.New("--env ns builds network namespaces and needs root: run with sudo, or use --env sim")
	case o.repeat < 1:
		return fmt.Errorf("--repeat %d: want 1 or more", o.repeat)
	case o.keepRuns < 0:
		return fmt.Errorf("--keep-runs %d: want 0 (keep every run folder) or more", o.keepRuns)
	case o.matrix && o.output == "html":
		return errors.New("--mutation-matrix has no report page: use -o text or json")
	case o.matrix && o.fault != "":
		return errors.New("--mutation-matrix runs every fault knob; drop --fault")
	case o.matrix && o.impl != "ref":
		return errors.New("--mutation-matrix needs --impl ref: the fault knobs belong to the reference implementation")
	}
	for _, f := range o.focus {
		if strings.TrimSpace(f) == "" {
			// Ginkgo ignores an empty focus: the whole suite ran.
			return fmt.Errorf("--focus %q: empty text selects no spec; give text of a spec's name, e.g. GRANT-srpt or srpt (homatest run --list lists them), or drop --focus to run every spec", f)
		}
	}
	if o.fault != "" && !knownFault(o.fault) {
		return fmt.Errorf("--fault %q: no such fault knob (homatest faults lists them)", o.fault)
	}
	hello, err := parseParams(o.params)
	if err != nil {
		return err
	}
	o.hello = hello // in -o json's report of a refusal below too
	if err := checkRefParams(o.impl, hello, "--param"); err != nil {
		return err
	}
	if t, ok := hello["tick_ns"].(int64); ok && o.env == "ns" {
		// The environment refuses it too, once built: said before.
		if err := conformance.CheckNSTick(time.Duration(t)); err != nil {
			return fmt.Errorf("--param %w", err)
		}
	}
	// A pattern that matches no rule is said so (as explore and check
	// say it), not as "no spec matched" after the run started.
	if _, err := spec.Select(spec.Rules(), o.rules, 0, ""); err != nil {
		return fmt.Errorf("--rules: %w", err)
	}
	if err := checkOutputFile("--junit", o.junit); err != nil {
		return err
	}
	if _, err := types.ParseLabelFilter(o.labelFilter); err != nil {
		// Ginkgo's message spans lines and colours; one line is enough.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("--label-filter %q: not a Ginkgo label expression (%s); e.g. 'grant && MUST', '!workload'", o.labelFilter, strings.TrimSpace(stripANSI(msg)))
	}
	return nil
}

// stripANSI removes terminal colour sequences (ESC [ ... m).
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && s[j] != 'm' {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// noteUnmatchedFocus says on standard error which of several --focus
// texts select no spec of the suite while the others do (a typo among
// them ran fewer specs than asked, silently); the texts that all miss
// are the pass's usage error instead.
func (o *runOpts) noteUnmatchedFocus() {
	if len(o.focus) < 2 {
		return
	}
	whole := o.passOptions()
	whole.LabelFilter, whole.Rules, whole.Focus = "", "", nil
	all, err := conformance.List(whole)
	if err != nil {
		return
	}
	names := make([]conformance.SpecResult, len(all))
	for i, s := range all {
		names[i] = conformance.SpecResult{Name: s.Name}
	}
	miss := conformance.UnmatchedFocus(o.focus, names)
	if len(miss) == 0 || len(miss) == len(o.focus) {
		return
	}
	for _, f := range miss {
		msg := fmt.Sprintf("homatest: note: --focus %q selects no spec; the run goes on with the specs the other --focus texts select", f)
		if h := conformance.FocusHint([]string{f}, names); h != "" {
			msg += " (" + h + ")"
		}
		fmt.Fprintln(o.stderr, msg)
	}
}

// passOptions are the options of each pass (conformance.Supervisor.Pass).
func (o *runOpts) passOptions() conformance.PassOptions {
	return conformance.PassOptions{Impl: o.impl, Env: o.env, LabelFilter: o.labelFilter, Rules: o.rules, Focus: o.focus,
		Fault: o.fault, Params: o.hello, JUnit: o.junit != "", Verbose: o.verbose, NSWorkloads: o.nsWorkloads}
}

// manifest returns the IUT's agent manifest: a built-in one for ref and
// linux (this executable's "agent" command), else the YAML file --impl names.
func (o *runOpts) manifest() (*agent.Manifest, error) { return agent.ResolveManifest(o.impl) }

func (o *runOpts) run(cmd *cobra.Command) error {
	o.ctx = cmd.Context()
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	if o.passFile != "" {
		// A pass of a run whose flags were validated (Supervisor.Pass).
		return conformance.RunPassFile(o.passFile)
	}
	if err := o.validate(); err != nil {
		if o.output == "json" && !o.list {
			// A CI job reading the JSON sees why nothing ran.
			o.stdout, o.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return o.endReports(usageErr(err))
		}
		return usageErr(err)
	}
	if o.list {
		return o.listSpecs(cmd.OutOrStdout())
	}
	defaulted := o.artifacts == ""
	if defaulted {
		o.artifacts = defaultRunDir()
	}
	o.defaulted = defaulted
	o.stdout, o.stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
	// A scenario run's folder is not a run folder: run would replace its
	// report.html and mix its passes into it.
	if _, err := os.Stat(filepath.Join(o.artifacts, "scenario.yaml")); err == nil {
		return o.endReports(usageErr(fmt.Errorf("--artifacts %s holds a homatest scenario run (scenario.yaml): give homatest run a folder of its own (a new one, or an earlier homatest run's)", o.artifacts)))
	}
	// A usage error found by the pass (no spec matched, an environment
	// that cannot be built) removes what this run created, and only that.
	_, serr := os.Stat(o.artifacts)
	existed := serr == nil
	undo, err := harness.MakeDir(o.artifacts)
	if err != nil {
		// An environment error as any other: -o json and --junit say it.
		return o.endReports(usageErr(runFolderErr(err, defaulted)))
	}
	// One run at a time in a folder: two would remove each other's passes
	// and report each other's files as their own. A run refused the lock
	// removes and changes nothing in the folder, even one it saw missing:
	// the holder may have made it since, and its passes are in it.
	if testHookBeforeLock != nil {
		testHookBeforeLock(o.artifacts)
	}
	lock, stale, err := lockRunFolder(o.artifacts)
	if err != nil {
		var inUse folderInUseError
		if errors.As(err, &inUse) {
			return o.endReports(usageErr(err)) // a CI job reads why in its JSON or JUnit
		}
		if !existed {
			os.Remove(o.artifacts) // only if still empty: nobody else's files go
		}
		return usageErr(err)
	}
	defer lock.release()
	undo.RemoveLast(runFolderLockFile) // unlinked last: a run that takes it then keeps its folder
	if !existed && folderHoldsMore(o.artifacts) {
		// Made by a run that held the lock and ended between this run's
		// look and its lock: what it left is not this run's to remove.
		existed = true
		undo = harness.RecordDir(o.artifacts)
	}
	if stale > 0 && stale != os.Getpid() {
		// Marked before its passes are set aside: the marker goes with
		// them, and comes back with them if this run ends in a usage error.
		settleKilledRun(o.artifacts, stale)
		fmt.Fprintf(o.stderr, "homatest: %s was left by run pid %d, which ended without releasing it (killed): this run takes it over\n", o.artifacts, stale)
	}
	settleKilledSiblings(o.artifacts, o.stderr)
	if o.env == "ns" {
		// A killed run's namespaces would share the machine with this
		// run's; only runs whose lock nobody holds are touched.
		harness.RemoveDeadRuns(o.stderr, 0)
	}
	self, err := os.Executable()
	if err != nil {
		return usageErr(fmt.Errorf("cannot find this program to run a pass: %w", err))
	}
	// The pass child holds the lock too (Hold): if this process is
	// killed, the folder stays in use until the child, which gets SIGTERM
	// then, has ended.
	sup := &conformance.Supervisor{Command: []string{self, "run", "--pass"}, Dir: o.artifacts, Ctx: o.ctx, Hold: lock.f}
	if o.progress || isTerminal(o.stderr) {
		sup.Progress = passProgress(newProgressLine(o.stderr, "run", 0, true))
	}
	if !defaulted {
		// The earlier run's report page and interrupted marker go with
		// its passes: beside this run's passes (an interrupted run writes
		// no page) they would read as this run's.
		if o.earlier, err = sup.SetAsideEarlierPasses(reportFile, harness.InterruptedFile); err != nil {
			return usageErr(artifactsErr(err))
		}
		if existed {
			undo = harness.RecordDir(o.artifacts) // what this run adds starts here
		}
	}
	if o.matrix {
		return o.mutationMatrix(cmd, sup, undo)
	}
	o.noteUnmatchedFocus()
	for i := 1; i <= o.repeat; i++ {
		passes, junits := o.done, o.junits
		name := fmt.Sprintf("pass-%d", i)
		res, junit, err := sup.Pass(name, o.passOptions())
		if errors.Is(err, conformance.ErrInterrupted) {
			return o.interruptedAfter(cmd.OutOrStdout(), err, passes, junits, res, junit)
		}
		if err != nil {
			o.startedRun() // the pass's child failed: its folder is the evidence
			return o.endReports(usageErr(err))
		}
		if res.SetupError != "" {
			return o.setupFailed(res.SetupError, undo)
		}
		if res.IUTFailure != "" {
			o.startedRun() // its agent's log is the evidence
			if junit != "" {
				os.Remove(junit) // its specs did not run; the failure says why
			}
			return o.endReports(&ExitError{Code: ExitViolations, Err: fmt.Errorf("pass %d: %s; logs in %s", i, res.IUTFailure, filepath.Join(o.artifacts, name))})
		}
		if specsRun(res) == 0 { // nothing ran
			msg := "no spec matched " + o.selection() + " (" + selectionHelp + ")"
			if h := conformance.FocusHint(o.focus, res.Specs); h != "" {
				msg += "; " + h
			}
			return o.usageEnd(errors.New(msg), undo)
		}
		o.startedRun()
		if err := sup.RerunInconclusive(name, res, o.passOptions()); err != nil {
			if errors.Is(err, conformance.ErrInterrupted) {
				// Every spec of the pass finished, and so did those of
				// the rerun before the interrupt: all are reported, the
				// pass as the one cut short (its rerun was).
				if junit != "" && conformance.ApplyResult(junit, res, o.strict) != nil {
					junit = ""
				}
				return o.interruptedAfter(cmd.OutOrStdout(), err, passes, junits, res, junit)
			}
			return usageErr(err)
		}
		o.done = append(o.done, res)
		if junit != "" {
			if err := conformance.ApplyResult(junit, res, o.strict); err != nil {
				return usageErr(flagWriteErr("--junit", o.junit, err))
			}
			o.junits = append(o.junits, junit)
		}
		if o.output == "text" {
			// Each pass as it finishes: a long --repeat shows progress,
			// and an interrupted one keeps the passes that finished.
			if err := o.writePass(cmd.OutOrStdout(), i, o.repeat, res); err != nil {
				return usageErr(fmt.Errorf("write output: %w", err))
			}
		}
	}
	passes := o.done
	if o.junit != "" {
		if err := conformance.MergeJUnit(o.junits, o.junit, o.junitRun()); err != nil {
			return usageErr(flagWriteErr("--junit", o.junit, err))
		}
	}
	page := html.RunPage(passes, html.RunInput{Impl: o.impl, Env: o.env, Fault: o.fault, Dir: o.artifacts, Params: o.params,
		Command: "homatest " + strings.Join(os.Args[1:], " "), Rerun: o.rerun, Strict: o.strict})
	if err := html.WriteFile(filepath.Join(o.artifacts, reportFile), page); err != nil {
		return usageErr(err)
	}
	o.pruneRuns()
	var werr error
	if o.output == "html" {
		werr = html.Write(cmd.OutOrStdout(), page)
	} else {
		werr = o.report(cmd.OutOrStdout(), passes)
	}
	if err := werr; err != nil {
		return usageErr(fmt.Errorf("write output: %w", err))
	}
	return o.runExit(passes)
}

// setupFailed is the error (exit code 2) of a run whose pass could not
// build its environment (setupErr, conformance.Result.SetupError): one line
// naming the problem and its fix. What the run created is removed (undo)
// unless an agent wrote to its log; then the line names the folder.
func (o *runOpts) setupFailed(setupErr string, undo *harness.DirUndo) error {
	msg := "the test environment could not be built: " + setupErr
	if agent.ParseCannotRun(setupErr) != nil {
		msg = setupErr // one line, as every command says it (agent.CannotRunError)
	}
	if agentOutput(o.artifacts) {
		o.startedRun() // its logs replace the earlier run's passes
		msg += "; logs in " + o.artifacts
		return o.endReports(usageErr(errors.New(msg)))
	}
	return o.usageEnd(errors.New(agent.LogRemoved(msg)), undo) // the empty logs go with the folder
}

// usageEnd is the error (exit code 2) of a run that ended in a usage
// error before it really started (err): what it created is removed
// (undo) and an earlier run's pass folders are put back, so the folder is
// as it was.
func (o *runOpts) usageEnd(err error, undo *harness.DirUndo) error {
	undo.Remove()
	if _, serr := os.Stat(o.artifacts); os.IsNotExist(serr) {
		o.artifacts = "" // the reports name no folder that is gone
	}
	if o.earlier != nil {
		if rerr := o.earlier.Restore(); rerr != nil {
			err = fmt.Errorf("%w (and restoring the earlier run's passes in %s failed: %v)", err, o.artifacts, rerr)
		}
		o.earlier = nil
	}
	return o.endReports(usageErr(err))
}

// junitRun describes this run to conformance.MergeJUnit.
func (o *runOpts) junitRun() conformance.JUnitRun {
	return conformance.JUnitRun{Passes: o.repeat}
}

// endReports writes -o json's report and --junit's file for a run that
// ends with err (an *ExitError) before its report: exit 2, a usage or
// environment error found once the run started (no spec matched, an
// environment that could not be built), reports verdict "error" and a
// JUnit <error>; exit 1, the IUT's failure outside any spec, verdict
// "fail" and a JUnit <failure>. The passes that finished before (o.done)
// are in both, so a CI job reading either sees why the run ended, as
// homatest check -o json and -o junit report a capture they cannot read.
// It returns err, with the reports' own write errors appended.
func (o *runOpts) endReports(err error) error {
	var ee *ExitError
	if !errors.As(err, &ee) || (o.output != "json" && o.junit == "") {
		return err
	}
	msg := ee.Err.Error()
	verdict, problem := "error", conformance.ErrorCase("run", "error", msg)
	if ee.Code == ExitViolations {
		verdict, problem = "fail", conformance.FailureCase("IUT", "iut", msg)
	}
	var werrs []string
	if o.output == "json" && o.stdout != nil {
		passes := o.done
		if passes == nil {
			passes = []*conformance.Result{}
		}
		if werr := o.writeJSONReport(o.stdout, passes, verdict, "", msg); werr != nil {
			werrs = append(werrs, fmt.Sprintf("writing the JSON report: %v", werr))
		}
	}
	if o.junit != "" {
		r := o.junitRun()
		r.Problem = problem
		if jerr := conformance.MergeJUnit(o.junits, o.junit, r); jerr != nil {
			werrs = append(werrs, flagWriteErr("--junit", o.junit, jerr).Error())
		}
	}
	if len(werrs) > 0 {
		return &ExitError{Code: ee.Code, Err: fmt.Errorf("%v (and %s)", ee.Err, strings.Join(werrs, "; "))}
	}
	return err
}

// startedRun removes the earlier run's pass folders set aside (said on
// stderr) once this run really started: a pass ran specs, or an agent
// wrote a log worth keeping, or the run was interrupted.
func (o *runOpts) startedRun() {
	e := o.earlier
	if e == nil || len(e.Names)+len(e.Files) == 0 {
		return
	}
	o.earlier = nil
	if err := e.Discard(); err != nil {
		fmt.Fprintf(o.stderr, "homatest: removing the earlier run's pass folders from %s: %v\n", o.artifacts, err)
		return
	}
	files := strings.Join(e.Files, ", ")
	switch {
	case len(e.Names) == 0:
		fmt.Fprintf(o.stderr, "homatest: removed an earlier run's %s from %s\n", files, o.artifacts)
	case len(e.Files) > 0:
		fmt.Fprintf(o.stderr, "homatest: removed %s of an earlier run from %s: %s (and its %s)\n", plural.Of(len(e.Names), "pass folder", "pass folders"), o.artifacts, strings.Join(e.Names, ", "), files)
	default:
		fmt.Fprintf(o.stderr, "homatest: removed %s of an earlier run from %s: %s\n", plural.Of(len(e.Names), "pass folder", "pass folders"), o.artifacts, strings.Join(e.Names, ", "))
	}
}

// interruptedAfter is interrupted for a run whose passes (with their
// JUnit files junits) finished before the interruption, and partial (its
// JUnit file partialJUnit), when not nil, the pass cut short with the
// specs it finished (conformance.Result.Running: the one it was running):
// -o json writes their report and --junit their JUnit, both marked
// interrupted, as text mode has shown each finished pass as it finished
// and now shows the partial one.
func (o *runOpts) interruptedAfter(out io.Writer, err error, passes []*conformance.Result, junits []string, partial *conformance.Result, partialJUnit string) error {
	ierr := o.interrupted(err)
	// Even before the first pass finished, -o json writes a report (verdict
	// incomplete) and --junit a file that says so: a CI job reading
	// either fails on an empty one.
	note := fmt.Sprintf("interrupted during pass %d of %d, after %s", len(passes)+1, o.repeat, plural.Of(len(passes), "finished pass", "finished passes"))
	partialText := ""
	if partial != nil {
		// The specs the pass finished are reported (as bench reports the
		// transports it measured to the end); the one cut short is named.
		cut := ""
		if len(partial.Running) > 0 {
			cut = "; cut short: " + strings.Join(partial.Running, "; ")
		}
		note += fmt.Sprintf(" (its %s reported%s)", plural.Of(specsRun(partial), "finished spec", "finished specs"), cut)
		partialText = fmt.Sprintf("%s of pass %d finished (printed above)%s", plural.Of(specsRun(partial), "spec", "specs"), len(passes)+1, cut)
		if o.output == "text" {
			if werr := o.writePass(out, len(passes)+1, o.repeat, partial); werr != nil {
				return &ExitError{Code: 130, Err: fmt.Errorf("%v (and writing the report: %v)", ierr.(*ExitError).Err, werr)}
			}
		}
		passes = append(slices.Clip(passes), partial)
		if partialJUnit != "" {
			junits = append(slices.Clip(junits), partialJUnit)
		}
	}
	if passes == nil {
		passes = []*conformance.Result{} // "passes": [], not null
	}
	var werrs []string
	switch o.output {
	case "json":
		if werr := o.writeJSON(out, passes, note); werr != nil {
			werrs = append(werrs, fmt.Sprintf("writing the JSON report: %v", werr))
		}
	case "text":
		// The verdict line a finished run ends with, for the passes
		// printed above: how many of --repeat finished, and that the run
		// is no pass (JSON: "interrupted", verdict incomplete).
		// The pass cut short is counted apart: it did not finish.
		finished := len(passes)
		if partial != nil {
			finished--
		}
		verdict := "INCOMPLETE"
		t := conformance.Count(passes[:finished], o.strict)
		cutFailed := partial != nil && conformance.Count([]*conformance.Result{partial}, o.strict).FailedPasses > 0
		switch {
		case t.FailedPasses > 0 && cutFailed:
			verdict = fmt.Sprintf("FAIL (%d of %d finished passes, and the interrupted pass %d)", t.FailedPasses, t.Passes, finished+1)
		case t.FailedPasses > 0:
			verdict = fmt.Sprintf("FAIL (%d of %d finished passes)", t.FailedPasses, t.Passes)
		case cutFailed && t.Passes == 0:
			verdict = fmt.Sprintf("FAIL (the interrupted pass %d)", finished+1)
		case cutFailed:
			verdict = fmt.Sprintf("FAIL (the interrupted pass %d; none of %d finished passes)", finished+1, t.Passes)
		}
		// "(each printed above)" only when one was: with none finished
		// nothing above is a pass report.
		above := ""
		if finished > 0 {
			above = " (each printed above)"
		}
		if partialText != "" {
			above += "; " + partialText
		}
		if _, werr := fmt.Fprintf(out, "\n%s: interrupted after %d of %d passes finished%s; artifacts in %s\n", verdict, finished, o.repeat, above, o.artifacts); werr != nil {
			werrs = append(werrs, fmt.Sprintf("writing the report: %v", werr))
		}
	}
	if o.junit != "" {
		r := o.junitRun()
		r.Interrupted = note
		if jerr := conformance.MergeJUnit(junits, o.junit, r); jerr != nil {
			werrs = append(werrs, flagWriteErr("--junit", o.junit, jerr).Error())
		}
	}
	if len(werrs) > 0 {
		return &ExitError{Code: 130, Err: fmt.Errorf("%v (and %s)", ierr.(*ExitError).Err, strings.Join(werrs, "; "))}
	}
	return ierr
}

// interrupted is the error (exit 130) of a run whose pass was interrupted
// (err wraps conformance.ErrInterrupted): the pass has removed its
// namespaces (env ns; the simulator makes none), and the run folder is
// kept with what was written so far, marked partial
// (harness.MarkInterrupted) as scenario and bench mark theirs.
func (o *runOpts) interrupted(err error) error {
	o.startedRun()
	msg := err.Error()
	if o.env == "ns" && err == conformance.ErrInterrupted { // not killed after the grace period
		msg += " and its namespaces removed"
	}
	// The pass has ended: a capture it could not finish (killed after
	// the grace period) is renamed partial, so that every capture left
	// under its own name reads whole.
	caps, cerr := settleCaptures(o.artifacts)
	said := ""
	if s := caps.String(); s != "" {
		said = "; " + s
	}
	if cerr != nil {
		said += fmt.Sprintf(" (and settling its captures failed: %v)", cerr)
	}
	arts := &harness.Artifacts{Dir: o.artifacts}
	cause := context.Cause(o.ctx)
	if cause == nil {
		cause = err
	}
	if merr := arts.MarkInterrupted("this run", cause, "its report is missing; run it again"); merr != nil {
		return &ExitError{Code: 130, Err: fmt.Errorf("%s (and marking %s failed: %v)%s", msg, o.artifacts, merr, said)}
	}
	return &ExitError{Code: 130, Err: fmt.Errorf("%s; its partial folder %s is marked %s%s", msg, o.artifacts, harness.InterruptedFile, said)}
}

// runsLegend says what the RUNS values that specs hold mean, in one
// clause: those of an IUT whose hello is known (the ref) need no more
// than "yes" and "no".
func runsLegend(specs []conformance.SpecInfo) string {
	var ifCap, ifParams bool
	for _, s := range specs {
		ifCap = ifCap || len(s.Needs) > 0 && s.Runs != "yes" && s.Runs != "no"
		ifParams = ifParams || s.Runs == conformance.RunsIfParams
	}
	legend := "yes or no, with these flags"
	if ifParams {
		legend += "; " + conformance.RunsIfParams + ": unless the parameters or profile in the IUT's hello rule it out (the skipped spec says why)"
	}
	if ifCap {
		legend += "; if CAP: only if the IUT's hello declares capability CAP, and its parameters allow"
	}
	return legend
}

// runOnly names the flags given that only a run uses (--list runs none).
func (o *runOpts) runOnly() []string {
	var given []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"--mutation-matrix", o.matrix}, {"--repeat", o.repeat != 1}, {"--junit", o.junit != ""}, {"--artifacts", o.artifacts != ""}} {
		if f.set {
			given = append(given, f.name)
		}
	}
	return given
}

// passProgress shows a pass's specs as they start on p ("pass-1: spec
// 12/95 GRANT-srpt"), for conformance.Supervisor.Progress, and ends the
// line when the pass has ended (erased on a terminal before the pass's
// report is printed).
func passProgress(p *progressLine) func(pass string, i, n int, short string) {
	return func(pass string, i, n int, short string) {
		if i == 0 {
			p.end()
			return
		}
		p.update(fmt.Sprintf("%s: spec %d/%d %s", pass, i, n, short))
	}
}

// listFlagsErr is the usage error of --list given the run-only flags
// runOnly, and -o html when html: what to drop, and which -o values
// --list prints.
func listFlagsErr(runOnly []string, html bool) error {
	var parts []string
	if len(runOnly) > 0 {
		parts = append(parts, "--list prints the specs and runs none: drop "+andList(runOnly))
	}
	if html {
		parts = append(parts, "--list prints -o text (the default) or -o json; html is a run's report page")
	}
	return errors.New(strings.Join(parts, "; "))
}

// andList joins words as a sentence does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// listSpecs prints the specs the run's selection names, without running
// any (conformance.List): text, one a line, or -o json. No spec selected
// is the usage error a run gives.
func (o *runOpts) listSpecs(out io.Writer) error {
	specs, err := conformance.List(o.passOptions())
	if err != nil {
		return usageErr(err)
	}
	if len(specs) == 0 {
		msg := "no spec matched " + o.selection() + " (" + selectionHelp + ")"
		whole := o.passOptions()
		whole.LabelFilter, whole.Rules, whole.Focus = "", "", nil
		all, _ := conformance.List(whole) // as a pass's results, skipped ones included
		var names []conformance.SpecResult
		for _, s := range all {
			names = append(names, conformance.SpecResult{Name: s.Name})
		}
		if h := conformance.FocusHint(o.focus, names); h != "" {
			msg += "; " + h
		}
		return usageErr(errors.New(msg))
	}
	w := &errWriter{w: out}
	if o.output == "json" {
		jsonout.Write(w, specs)
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tAREA\tLEVEL\tKIND\tRUNS\tRULES")
		var whys []string // the reasons of RUNS "no", once each
		n := 0
		for _, s := range specs {
			rules := strings.Join(s.Rules, ",")
			if s.Kind == conformance.KindCapture {
				rules = "(every rule, over the pass's whole capture)"
			} else {
				n++
			}
			if s.Why != "" && !slices.Contains(whys, s.Why) {
				whys = append(whys, s.Why)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Short, s.Area, s.Level, s.Kind, s.Runs, rules)
		}
		tw.Flush()
		count := plural.Of(n, "spec", "specs")
		if n < len(specs) {
			count += " and " + conformance.RunCaptureShort
		}
		fmt.Fprintf(w, "%s; RUNS: %s; run one: homatest run --focus NAME\n", count, runsLegend(specs))
		for _, why := range whys {
			fmt.Fprintf(w, "RUNS no: %s\n", why)
		}
	}
	if w.err != nil {
		return usageErr(fmt.Errorf("write output: %w", w.err))
	}
	return nil
}
