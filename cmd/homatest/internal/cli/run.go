package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/report/html"
)

// runOpts are the flags of homatest run.
type runOpts struct {
	impl, env, labelFilter, rules, fault string
	focus                                []string
	junit, output, artifacts             string
	repeat                               int
	matrix, verbose, nsWorkloads, strict bool
	passResult                           string // hidden: run one pass in this process
	ctx                                  context.Context
}

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
each failure's sequence graph (-o html prints it).

--repeat N runs the suite N times (each pass in its own process) and fails if
any pass fails. --mutation-matrix runs one pass per fault knob of the
reference implementation (homatest faults) and prints which specs catch
which knob; a knob that no spec catches makes it fail.

Levels: a failed MUST spec fails the run (exit 1); a failed SHOULD spec is a
warning, listed but not failing, unless --strict.

Exit codes: 0 every MUST spec passed (unsupported specs do not fail a run;
with --strict every SHOULD spec too), 1 a spec failed, 2 usage or
environment error.`,
		Example: `  homatest run
  homatest run --label-filter 'grant && MUST'
  homatest run --rules 'HOMA-RESEND-*' -o json
  homatest run --fault no-grants            # expect failures citing HOMA-GRANT rules
  homatest run --repeat 10 --junit report.xml
  homatest run --mutation-matrix`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "ref", "implementation under test: ref (built-in reference implementation), linux (kernel Homa module), or a manifest YAML file")
	f.StringVar(&o.env, "env", "auto", "environment: ns (network namespaces, root), sim (the simulator, virtual time, ref only), auto (ns as root, else sim)")
	f.StringVar(&o.labelFilter, "label-filter", "", "Ginkgo label filter over rule IDs, areas and levels, e.g. 'grant && MUST'")
	f.StringVar(&o.rules, "rules", "", "comma-separated rule-ID globs: run only specs checking these rules, e.g. 'HOMA-GRANT-*'")
	f.StringArrayVar(&o.focus, "focus", nil, "run only specs whose name contains this text (repeat for several)")
	f.StringVar(&o.fault, "fault", "", "enable a fault knob of the reference implementation (homatest faults)")
	f.IntVar(&o.repeat, "repeat", 1, "run the suite N times; fails if any pass fails")
	f.StringVar(&o.junit, "junit", "", "write a JUnit XML report to this file (one testsuite per pass)")
	outputVar(f, &o.output, "the specs by area and every failure; html the report page (also written as report.html in the run folder)", "text", "json", "html")
	f.StringVar(&o.artifacts, "artifacts", "", "directory for captures of failed specs and logs (default: a new directory under homatest-runs/)")
	f.BoolVar(&o.matrix, "mutation-matrix", false, "run one pass per fault knob and print which specs catch each")
	f.BoolVar(&o.strict, "strict", false, "fail (exit 1) on failed SHOULD specs too; by default they are warnings")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "keep Ginkgo's verbose log in the artifacts")
	f.BoolVar(&o.nsWorkloads, "ns-workloads", false, "with --env ns: run the passive workload specs on IUT hosts in namespaces behind netem's switch (heavy: one process per host plus the switch; default: reference hosts in the simulator for --impl ref, unsupported otherwise)")
	f.StringVar(&o.passResult, "pass-result", "", "internal: run one pass here and write its result to this file")
	f.MarkHidden("pass-result")
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
	case o.env == "ns" && os.Geteuid() != 0:
		return errors.New("--env ns builds network namespaces and needs root: run with sudo, or use --env sim")
	case o.repeat < 1:
		return fmt.Errorf("--repeat %d: want 1 or more", o.repeat)
	case o.matrix && o.output == "html":
		return errors.New("--mutation-matrix has no report page: use -o text or json")
	case o.matrix && o.fault != "":
		return errors.New("--mutation-matrix runs every fault knob; drop --fault")
	case o.matrix && o.impl != "ref":
		return errors.New("--mutation-matrix needs --impl ref: the fault knobs belong to the reference implementation")
	}
	if o.fault != "" && !knownFault(o.fault) {
		return fmt.Errorf("--fault %q: no such fault knob (homatest faults lists them)", o.fault)
	}
	return nil
}

// manifest returns the IUT's agent manifest: a built-in one for ref and
// linux (this executable's "agent" command), else the YAML file --impl names.
func (o *runOpts) manifest() (*agent.Manifest, error) { return implManifest(o.impl) }

// implManifest returns the manifest --impl names: this executable's agent
// for the built-in ref and linux (and tcp when "tcp" is in extra), else the
// YAML file impl.
func implManifest(impl string, extra ...string) (*agent.Manifest, error) {
	if impl == "ref" || impl == "linux" || slices.Contains(extra, impl) {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cannot find this program to run its agent: %w", err)
		}
		return agent.BuiltinManifest(impl, self)
	}
	if _, err := os.Stat(impl); err != nil {
		return nil, fmt.Errorf("--impl %q: not ref, linux or a readable manifest file (%v)", impl, err)
	}
	m, err := agent.LoadManifest(impl)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(m.Command[0]); err != nil {
		return nil, fmt.Errorf("manifest %s: command: agent program %q cannot be run (%v): fix command[0] to name the agent executable (an absolute path, or a name found in PATH)",
			impl, m.Command[0], errors.Unwrap(err))
	}
	return m, nil
}

func knownFault(name string) bool {
	for _, f := range homa.FaultNames() {
		if f.Name == name {
			return true
		}
	}
	return false
}

// errInterrupted ends a run stopped by SIGINT or SIGTERM (exit 130).
var errInterrupted = errors.New("interrupted: the pass in progress was stopped and its namespaces removed")

func (o *runOpts) run(cmd *cobra.Command) error {
	o.ctx = cmd.Context()
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	if err := o.validate(); err != nil {
		return usageErr(err)
	}
	if o.passResult != "" {
		return o.onePass()
	}
	defaulted := o.artifacts == ""
	if defaulted {
		o.artifacts = defaultRunDir()
	}
	if err := os.MkdirAll(o.artifacts, 0o755); err != nil {
		return usageErr(artifactsErr(err))
	}
	if o.matrix {
		return o.mutationMatrix(cmd)
	}
	var passes []*conformance.Result
	var junits []string
	for i := 1; i <= o.repeat; i++ {
		res, junit, err := o.child(fmt.Sprintf("pass-%d", i), o.fault, o.focus)
		if errors.Is(err, errInterrupted) {
			return &ExitError{Code: 130, Err: err}
		}
		if err != nil {
			return usageErr(err)
		}
		if res.SetupError != "" {
			return o.setupFailed(res.SetupError, defaulted)
		}
		rerunPass := func(name string, focus []string) (*conformance.Result, error) {
			r, _, err := o.child(name, o.fault, focus)
			return r, err
		}
		if err := rerunInconclusive(fmt.Sprintf("pass-%d", i), res, rerunPass); err != nil {
			if errors.Is(err, errInterrupted) {
				return &ExitError{Code: 130, Err: err}
			}
			return usageErr(err)
		}
		passes = append(passes, res)
		if junit != "" {
			junits = append(junits, junit)
		}
	}
	for _, p := range passes {
		ran := 0
		for _, s := range p.Specs {
			if s.State != "skipped" {
				ran++
			}
		}
		if ran == 0 {
			if defaulted {
				removeRunDir(o.artifacts) // nothing ran
			}
			return usageErr(errors.New("no spec matched --label-filter, --rules and --focus (homatest spec list shows the rule IDs; areas: wire, grant, resend, ack, cutoffs, robustness, workload)"))
		}
	}
	if o.junit != "" {
		if err := conformance.MergeJUnit(junits, o.junit); err != nil {
			return usageErr(err)
		}
		if !o.strict {
			if err := conformance.DemoteShouldFailures(o.junit); err != nil {
				return usageErr(err)
			}
		}
	}
	page := html.RunPage(passes, html.RunInput{Impl: o.impl, Env: o.env, Fault: o.fault, Dir: o.artifacts,
		Command: "homatest " + strings.Join(os.Args[1:], " "), Rerun: o.rerun, Strict: o.strict})
	if err := html.WriteFile(filepath.Join(o.artifacts, reportFile), page); err != nil {
		return usageErr(err)
	}
	var werr error
	if o.output == "html" {
		werr = html.Write(cmd.OutOrStdout(), page)
	} else {
		werr = o.report(cmd.OutOrStdout(), passes)
	}
	if err := werr; err != nil {
		return usageErr(fmt.Errorf("write output: %w", err))
	}
	if n := o.failedPasses(passes); n > 0 {
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("%d of %d passes had failed specs", n, len(passes))}
	}
	return nil
}

// maxReruns bounds the reruns of specs whose timing findings a measured
// stall explained.
const maxReruns = 2

// rerunInconclusive reruns, in a child pass of their own (run(name,
// focus)), the specs of res with timing-inconclusive findings, up to
// maxReruns times, and folds the
// outcome into res: a rerun that fails without a stall to explain it fails
// the spec (the finding reproduced on a quieter machine); a quiet clean
// rerun leaves it passed, its first findings still reported; a rerun that
// stalled again leaves them inconclusive.
func rerunInconclusive(name string, res *conformance.Result, run func(name string, focus []string) (*conformance.Result, error)) error {
	for k := 1; k <= maxReruns; k++ {
		var focus []string
		idx := map[string]int{}
		for i, s := range res.Specs {
			if s.State == "passed" && len(s.TimingInconclusive) > 0 && s.Rerun != "quiet" {
				focus = append(focus, s.Name)
				idx[s.Name] = i
			}
		}
		if len(focus) == 0 {
			return nil
		}
		again, err := run(fmt.Sprintf("%s-rerun-%d", name, k), focus)
		if err != nil {
			return err
		}
		if again.SetupError != "" {
			return fmt.Errorf("rerun of %d specs with timing-inconclusive findings: the test environment could not be built: %s", len(focus), again.SetupError)
		}
		for _, r := range again.Specs {
			i, ok := idx[r.Name]
			if !ok || r.State == "skipped" {
				continue
			}
			s := &res.Specs[i]
			s.Reruns = k
			switch {
			case r.State == "failed" || r.State == "error":
				s.State, s.Failure, s.Capture, s.Rerun = r.State, "reproduced on rerun "+strconv.Itoa(k)+" without a stall to explain it: "+r.Failure, r.Capture, "failed"
			case len(r.TimingInconclusive) > 0:
				s.Rerun = "inconclusive"
				s.TimingInconclusive = append(s.TimingInconclusive, r.TimingInconclusive...)
			default:
				s.Rerun = "quiet"
			}
		}
	}
	return nil
}

// failing reports whether spec s fails the run: failed or in error, and
// MUST (SHOULD specs are warnings unless --strict).
func (o *runOpts) failing(s conformance.SpecResult) bool {
	return (s.State == "failed" || s.State == "error") && (s.Level != "SHOULD" || o.strict)
}

// failedPasses counts the passes with a failing spec.
func (o *runOpts) failedPasses(ps []*conformance.Result) int {
	n := 0
	for _, p := range ps {
		for _, s := range p.Specs {
			if o.failing(s) {
				n++
				break
			}
		}
	}
	return n
}

// child runs one pass in a new process of this binary (Ginkgo runs one
// suite per process) and returns its result and JUnit file.
func (o *runOpts) child(name, fault string, focus []string) (*conformance.Result, string, error) {
	dir := filepath.Join(o.artifacts, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("cannot find this program to run a pass: %w", err)
	}
	resFile := filepath.Join(dir, "result.json")
	args := []string{"run", "--pass-result", resFile, "--artifacts", dir, "--impl", o.impl, "--env", o.env,
		"--label-filter", o.labelFilter, "--rules", o.rules, "--fault", fault}
	for _, f := range focus {
		args = append(args, "--focus", f)
	}
	junit := ""
	if o.junit != "" {
		junit = filepath.Join(dir, "junit.xml")
		args = append(args, "--junit", junit)
	}
	if o.verbose {
		args = append(args, "--verbose")
	}
	if o.nsWorkloads {
		args = append(args, "--ns-workloads")
	}
	c := exec.Command(self, args...)
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return nil, "", fmt.Errorf("pass %s failed to start: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	err = nil
	select {
	case err = <-done:
	case <-o.ctx.Done():
		// Interrupted. A Ctrl-C reached the pass too and it is tearing
		// down; a signal sent to this process alone did not, so after a
		// grace second the pass gets one SIGINT (a second one would make
		// Ginkgo skip its cleanup) and time to remove its namespaces.
		select {
		case <-done:
		case <-time.After(time.Second):
			c.Process.Signal(syscall.SIGINT)
			select {
			case <-done:
			case <-time.After(timescale.D(30 * time.Second)):
				c.Process.Kill()
				<-done
			}
		}
		return nil, "", errInterrupted
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no error output; see " + filepath.Join(dir, "ginkgo.log")
		}
		return nil, "", fmt.Errorf("pass %s failed to run: %v: %s", name, err, msg)
	}
	b, err := os.ReadFile(resFile)
	if err != nil {
		return nil, "", fmt.Errorf("pass %s wrote no result: %w", name, err)
	}
	var res conformance.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, "", fmt.Errorf("pass %s: bad result file %s: %w", name, resFile, err)
	}
	return &res, junit, nil
}

// onePass runs the suite once in this process (the child side of child).
func (o *runOpts) onePass() error {
	var faults []string
	if o.fault != "" {
		faults = append(faults, o.fault)
	}
	logf, err := os.Create(filepath.Join(o.artifacts, "ginkgo.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	newEnv := func() (*conformance.Env, error) {
		return conformance.NewSimEnv(conformance.SimEnvConfig{Faults: faults, Artifacts: o.artifacts})
	}
	if o.env == "ns" {
		m, err := o.manifest()
		if err != nil {
			return err
		}
		var env []string
		for k, v := range m.Env {
			env = append(env, k+"="+v)
		}
		params := agent.Params{}
		for k, v := range m.Params {
			params[k] = v
		}
		var benchParams agent.Params // nil: the manifest's params
		if o.impl == "ref" {
			// The reference implementation runs with a 5 ms tick in real
			// time (conformance.RefTick); its workload benches keep
			// their 10 ms tick.
			benchParams = maps.Clone(params)
			params["tick_ns"] = int64(conformance.RefTick)
		}
		newEnv = func() (*conformance.Env, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timescale.D(30*time.Second))
			defer cancel()
			return conformance.NewNSEnv(ctx, conformance.NSEnvConfig{Agent: m.Command, AgentEnv: env,
				Params: params, BenchParams: benchParams, Faults: faults, Claimed: m.Capabilities, Artifacts: o.artifacts, Workloads: o.nsWorkloads, RefBench: o.impl == "ref"})
		}
	}
	// Ginkgo handles SIGINT and SIGTERM in the pass: it interrupts the
	// spec and runs the suite's cleanups, which remove the namespaces.
	res, err := conformance.Run(nil, conformance.Options{
		NewEnv:      newEnv,
		LabelFilter: o.labelFilter, Rules: o.rules, Focus: o.focus, JUnit: o.junit,
		Artifacts: o.artifacts, Log: logf, Verbose: o.verbose,
	})
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	tmp := o.passResult + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, o.passResult)
}

// runReport is the JSON output of homatest run.
type runReport struct {
	// Verdict is pass or fail (a spec failed), as the exit code 0 or 1.
	// (A pass whose environment could not be built ends the run with exit
	// code 2 and no report.)
	Verdict   string                `json:"verdict"`
	Passes    []*conformance.Result `json:"passes"`
	Artifacts string                `json:"artifacts"`
	Failed    int                   `json:"failed_passes"`
}

// report prints the passes as a table by area and the failures.
func (o *runOpts) report(out io.Writer, passes []*conformance.Result) error {
	w := &errWriter{w: out}
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		verdict := "pass"
		if o.failedPasses(passes) > 0 {
			verdict = "fail"
		}
		enc.Encode(runReport{Verdict: verdict, Passes: passes, Artifacts: o.artifacts, Failed: o.failedPasses(passes)})
		return w.err
	}
	for i, p := range passes {
		fmt.Fprintf(w, "pass %d/%d: %s; %d specs in %.1fs\n", i+1, len(passes), p.Env, len(p.Specs), p.Duration.Seconds())
		writeAreaTable(w, p.Specs)
		for _, s := range p.Specs {
			if s.State != "failed" && s.State != "error" {
				continue
			}
			kind := "FAIL"
			if !o.failing(s) {
				kind = "WARN (SHOULD)"
			}
			fmt.Fprintf(w, "\n%s %s\n  rules: %s (%s)\n", kind, s.Name, strings.Join(s.Rules, ", "), s.Level)
			for _, l := range strings.Split(strings.TrimSpace(s.Failure), "\n") {
				fmt.Fprintf(w, "  %s\n", l)
			}
			if s.Capture != "" {
				fmt.Fprintf(w, "  packets: %s (homatest decode %s)\n", s.Capture, s.Capture)
			}
			fmt.Fprintf(w, "  rerun: %s\n", o.rerun(s))
		}
		for _, s := range p.Specs {
			if s.State == "unsupported" {
				fmt.Fprintf(w, "UNSUPPORTED %s: %s\n", s.Name, s.Failure)
			}
		}
		writeInconclusive(w, p.Specs)
	}
	verdict := "PASS"
	warned := 0
	for _, p := range passes {
		for _, s := range p.Specs {
			if (s.State == "failed" || s.State == "error") && !o.failing(s) {
				warned++
			}
		}
	}
	if warned > 0 {
		verdict = fmt.Sprintf("PASS with %d SHOULD warnings (--strict fails on them)", warned)
	}
	if n := o.failedPasses(passes); n > 0 {
		verdict = fmt.Sprintf("FAIL (%d of %d passes)", n, len(passes))
	}
	fmt.Fprintf(w, "\n%s; artifacts in %s (report: %s)\n", verdict, o.artifacts, filepath.Join(o.artifacts, reportFile))
	return w.err
}

// setupFailed is the error (exit code 2) of a run whose pass could not
// build its environment (setupErr, conformance.Result.SetupError): one line
// naming the problem and its fix. The run folder is removed when it was
// defaulted and holds no agent output; otherwise the line names it.
func (o *runOpts) setupFailed(setupErr string, defaulted bool) error {
	msg := "the test environment could not be built: " + setupErr
	if _, why, ok := strings.Cut(setupErr, "unsupported: "); ok {
		msg = fmt.Sprintf("implementation %s is unsupported here: %s", o.impl, why)
	}
	if agentOutput(o.artifacts) || !defaulted {
		msg += "; logs in " + o.artifacts
	} else {
		removeRunDir(o.artifacts)
	}
	return usageErr(errors.New(msg))
}

// defaultRunDir is the run folder of a command run without --artifacts:
// homatest-runs/<time>-<pid>, e.g. homatest-runs/20260101-120000-4242.
func defaultRunDir() string {
	return filepath.Join(harness.DefaultRunsDir, fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), os.Getpid()))
}

// artifactsErr is the error of a run folder that cannot be created.
func artifactsErr(err error) error {
	return fmt.Errorf("--artifacts: %w (pass --artifacts DIR somewhere writable)", err)
}

// removeRunDir removes a defaulted run folder in which nothing ran, and
// homatest-runs if that is then empty.
func removeRunDir(dir string) {
	os.RemoveAll(dir)
	os.Remove(filepath.Dir(dir))
}

// agentOutput reports whether any agent wrote to its stderr log
// (*.agent.stderr.log) under dir.
func agentOutput(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.agent.stderr.log"))
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

// rerun is the command that reruns one spec.
func (o *runOpts) rerun(s conformance.SpecResult) string {
	name, _, _ := strings.Cut(s.Name, ":")
	if i := strings.LastIndex(name, " "); i >= 0 {
		name = name[i+1:]
	}
	c := "homatest run --focus " + strconv.Quote(name)
	if o.impl != "ref" {
		c += " --impl " + o.impl
	}
	c += " --env " + o.env
	if o.fault != "" {
		c += " --fault " + o.fault
	}
	return c
}

// writeInconclusive prints the timing findings that measured stalls
// explain (conformance.SpecResult.TimingInconclusive): counted, named,
// not charged.
func writeInconclusive(w io.Writer, specs []conformance.SpecResult) {
	n, in := 0, 0
	for _, s := range specs {
		if len(s.TimingInconclusive) > 0 {
			n += len(s.TimingInconclusive)
			in++
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "%d timing findings in %d specs were inconclusive: a measured stall of this machine explains each (not charged to the IUT)\n", n, in)
	for _, s := range specs {
		if len(s.TimingInconclusive) == 0 {
			continue
		}
		switch s.Rerun {
		case "quiet":
			fmt.Fprintf(w, "  %s: rerun %d times, the last without a finding\n", s.Name, s.Reruns)
		case "inconclusive":
			fmt.Fprintf(w, "  %s: rerun %d times, stalled every time (run it on a quieter machine to judge it)\n", s.Name, s.Reruns)
		case "failed":
			fmt.Fprintf(w, "  %s: reproduced without a stall on rerun %d (FAIL above)\n", s.Name, s.Reruns)
		}
		for _, f := range s.TimingInconclusive {
			fmt.Fprintf(w, "  INCONCLUSIVE %s: %s\n", s.Name, f)
		}
	}
}

// writeAreaTable prints specs counted by area and state.
func writeAreaTable(w io.Writer, specs []conformance.SpecResult) {
	fmt.Fprintf(w, "  %-12s %6s %6s %11s %7s\n", "area", "passed", "failed", "unsupported", "skipped")
	for _, r := range html.SpecAreas(specs) {
		fmt.Fprintf(w, "  %-12s %6d %6d %11d %7d\n", r.Area, r.Passed, r.Failed, r.Unsupported, r.Skipped)
	}
}

// mutationMatrix runs one pass per fault knob and prints the specs (and
// their rules) that fail under each.
func (o *runOpts) mutationMatrix(cmd *cobra.Command) error {
	type entry struct {
		Fault  string   `json:"fault"`
		Specs  []string `json:"failing_specs"`
		Rules  []string `json:"rules"`
		Caught bool     `json:"caught"`
	}
	var matrix []entry
	uncaught := 0
	for _, f := range homa.FaultNames() {
		res, _, err := o.child("fault-"+f.Name, f.Name, o.focus)
		if errors.Is(err, errInterrupted) {
			return &ExitError{Code: 130, Err: err}
		}
		if err != nil {
			return usageErr(err)
		}
		if res.SetupError != "" {
			return usageErr(fmt.Errorf("fault %s: the test environment could not be built: %s", f.Name, res.SetupError))
		}
		// Failing specs keep their captures (about 10 MB each), and under a
		// fault most of them fail: the matrix keeps only the results (run
		// --fault KNOB to keep one knob's captures).
		if pcaps, err := filepath.Glob(filepath.Join(o.artifacts, "fault-"+f.Name, "*.pcapng")); err == nil {
			for _, p := range pcaps {
				os.Remove(p)
			}
		}
		e := entry{Fault: f.Name}
		rules := map[string]bool{}
		for _, s := range res.Specs {
			if s.State == "failed" || s.State == "error" {
				name, _, _ := strings.Cut(s.Name, ":")
				e.Specs = append(e.Specs, name[strings.LastIndex(name, " ")+1:])
				for _, r := range s.Rules {
					rules[r] = true
				}
			}
		}
		for r := range rules {
			e.Rules = append(e.Rules, r)
		}
		sort.Strings(e.Rules)
		e.Caught = len(e.Specs) > 0
		if !e.Caught {
			uncaught++
		}
		matrix = append(matrix, e)
	}
	w := &errWriter{w: cmd.OutOrStdout()}
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(matrix)
	} else {
		fmt.Fprintf(w, "%-22s %s\n", "fault knob", "failing specs")
		for _, e := range matrix {
			specs := strings.Join(e.Specs, ", ")
			if !e.Caught {
				specs = "NOT CAUGHT"
			}
			fmt.Fprintf(w, "%-22s %s\n", e.Fault, specs)
		}
		fmt.Fprintf(w, "\n%d of %d knobs caught; artifacts in %s\n", len(matrix)-uncaught, len(matrix), o.artifacts)
	}
	if w.err != nil {
		return usageErr(fmt.Errorf("write output: %w", w.err))
	}
	if uncaught > 0 {
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("%d fault knobs are caught by no spec", uncaught)}
	}
	return nil
}
