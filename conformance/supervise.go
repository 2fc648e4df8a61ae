package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/internal/childproc"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/timescale"
)

// PassOptions are one pass of the suite as a child process runs it
// (RunPassFile). Supervisor.Pass writes them as JSON in the pass's folder,
// so nothing is rebuilt as flags by hand.
type PassOptions struct {
	// Impl is the implementation under test: ref, linux or a manifest
	// file (agent.ResolveManifest).
	Impl string `json:"impl"`
	// Env is "ns" (network namespaces) or "sim" (the simulator).
	Env string `json:"env"`
	// LabelFilter, Rules and Focus select specs (see Options).
	LabelFilter string   `json:"label_filter,omitempty"`
	Rules       string   `json:"rules,omitempty"`
	Focus       []string `json:"focus,omitempty"`
	// Fault is a fault knob of the reference implementation ("" none).
	Fault string `json:"fault,omitempty"`
	// JUnit writes the pass's JUnit report (junit.xml in its folder).
	JUnit bool `json:"junit,omitempty"`
	// Verbose keeps Ginkgo's verbose log (ginkgo.log).
	Verbose bool `json:"verbose,omitempty"`
	// NSWorkloads runs the passive specs' benches on IUT hosts in
	// namespaces (NSEnvConfig.Workloads).
	NSWorkloads bool `json:"ns_workloads,omitempty"`
	// Params are parameter overrides for the IUT's hello (--param), over
	// a manifest's own params; in the simulator, SimEnvConfig.Params.
	Params agent.Params `json:"params,omitempty"`
	// Dir is the pass's folder (set by Supervisor.Pass).
	Dir string `json:"dir"`
}

// Files in a pass's folder.
const (
	passOptionsFile = "pass.json"
	passResultFile  = "result.json"
	passJUnitFile   = "junit.xml"
)

// ErrInterrupted is the error of a pass stopped because the supervisor's
// context ended (SIGINT or SIGTERM to homatest run). A pass in network
// namespaces removes them as it stops, unless it outlived InterruptGrace
// and was killed (the error then says so).
var ErrInterrupted = errors.New("interrupted: the pass in progress was stopped")

// InterruptGrace bounds a pass's end after its supervisor is interrupted:
// the spec's context is cancelled at once, so a call the IUT never
// answers ends and the suite's cleanups remove the namespaces well within
// it; a pass still running then is killed.
var InterruptGrace = timescale.D(30 * time.Second)

// Supervisor runs passes of the suite, each in a child process of its own
// (Ginkgo runs one suite per process), in folders under Dir.
type Supervisor struct {
	// Command is the argv that runs one pass from an options file, which
	// is appended (homatest's hidden "run --pass FILE": RunPassFile).
	Command []string
	// Dir is the run folder; pass NAME runs in Dir/NAME.
	Dir string
	// Ctx's end interrupts the pass in progress (ErrInterrupted): a
	// Ctrl-C reached the child too; a signal sent to the supervisor alone
	// is forwarded after a second; the child is killed after
	// InterruptGrace.
	Ctx context.Context
	// Hold, if set, is an open file each pass's child keeps open for its
	// life (its fd 3, close-on-exec in the child so the child's own
	// children do not keep it): the run-folder lock, whose flock then
	// stays held while a pass runs even if the supervisor was killed.
	Hold *os.File
	// Progress, if set, is called as each spec of pass starts: its
	// place i of the n the pass runs and its short name (Options.Progress
	// in the child, over a pipe), from another goroutine; and, before
	// Pass returns, once with i 0 when the pass has ended.
	Progress func(pass string, i, n int, short string)
}

// holdFDEnv names, in a pass child's environment, the descriptor of
// Supervisor.Hold (RunPassFile marks it close-on-exec); progressFDEnv
// the pipe's write end the child reports each spec's start on, one line
// "I N SHORT" a spec (Supervisor.Progress).
const (
	holdFDEnv     = "HOMATEST_PASS_HOLD_FD"
	progressFDEnv = "HOMATEST_PASS_PROGRESS_FD"
)

// EarlierFolder is the folder under a run folder where SetAsideEarlierPasses
// keeps an earlier run's pass folders while a new run starts.
const EarlierFolder = ".earlier-passes"

// EarlierPasses are an earlier run's pass folders and run files set aside
// (SetAsideEarlierPasses): Restore puts them back (the new run ended in a
// usage error), Discard removes them (the new run really started).
type EarlierPasses struct {
	dir, aside string
	// Names are the pass folders set aside, sorted ("pass-1", "fault-KNOB").
	Names []string
	// Files are the earlier run's own files set aside ("report.html",
	// "interrupted"), in the order asked for.
	Files []string
}

// IsPassFolder reports whether dir is a pass's folder: one holding the
// pass's options file, which Supervisor.Pass writes first.
func IsPassFolder(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, passOptionsFile))
	return err == nil
}

// SetAsideEarlierPasses moves the pass folders (those holding a pass's
// options file) an earlier run left in Dir, and the run files named
// (those a run writes beside its passes: its report page, the marker of
// an interrupted run), and nothing else, into Dir/EarlierFolder, so a run
// reusing --artifacts shows only its own passes and files (an interrupted
// one no earlier report that a reader would take for its own), and a run
// that ends in a usage error can put them back. A leftover EarlierFolder
// (of a killed run) is removed first. Errors are the file system's; what
// was moved is put back.
func (s *Supervisor) SetAsideEarlierPasses(runFiles ...string) (*EarlierPasses, error) {
	e := &EarlierPasses{dir: s.Dir, aside: filepath.Join(s.Dir, EarlierFolder)}
	if err := os.RemoveAll(e.aside); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, err
	}
	aside := func(name string) error {
		if len(e.Names)+len(e.Files) == 0 {
			if err := os.Mkdir(e.aside, 0o755); err != nil {
				return err
			}
		}
		if err := os.Rename(filepath.Join(s.Dir, name), filepath.Join(e.aside, name)); err != nil {
			return errors.Join(err, e.Restore())
		}
		return nil
	}
	for _, ent := range ents {
		if !ent.IsDir() || !IsPassFolder(filepath.Join(s.Dir, ent.Name())) {
			continue
		}
		if err := aside(ent.Name()); err != nil {
			return nil, err
		}
		e.Names = append(e.Names, ent.Name())
	}
	for _, f := range runFiles {
		if st, err := os.Lstat(filepath.Join(s.Dir, f)); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := aside(f); err != nil {
			return nil, err
		}
		e.Files = append(e.Files, f)
	}
	return e, nil
}

// Restore moves the set-aside pass folders and files back, replacing
// those of the same name the new run made, and removes EarlierFolder.
func (e *EarlierPasses) Restore() error {
	if len(e.Names)+len(e.Files) == 0 {
		return nil
	}
	var errs []error
	for _, n := range append(append([]string(nil), e.Names...), e.Files...) {
		d := filepath.Join(e.dir, n)
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Rename(filepath.Join(e.aside, n), d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(e.aside))
	}
	return errors.Join(errs...)
}

// Discard removes the set-aside pass folders and files.
func (e *EarlierPasses) Discard() error {
	if len(e.Names)+len(e.Files) == 0 {
		return nil
	}
	return os.RemoveAll(e.aside)
}

// Pass runs pass name with o (o.Dir set to its folder) and returns its
// result and JUnit file ("" without o.JUnit). Errors: the child could not
// start, failed without a result (its standard error quoted), or
// ErrInterrupted. A pass whose environment could not be built is a result
// with SetupError.
func (s *Supervisor) Pass(name string, o PassOptions) (*Result, string, error) {
	o.Dir = filepath.Join(s.Dir, name)
	// A pass folder is the pass's alone: a capture or log of an earlier
	// run with the same --artifacts must not pass for this one's.
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, "", err
	}
	optsFile := filepath.Join(o.Dir, passOptionsFile)
	if err := atomicfile.Write(optsFile, func(w io.Writer) error { return jsonout.Write(w, o) }); err != nil {
		return nil, "", err
	}
	c := exec.Command(s.Command[0], append(s.Command[1:], optsFile)...)
	var stderr strings.Builder
	c.Stderr = &stderr
	c.Env = os.Environ()
	if s.Hold != nil {
		c.ExtraFiles = append(c.ExtraFiles, s.Hold)
		c.Env = append(c.Env, fmt.Sprintf("%s=%d", holdFDEnv, 2+len(c.ExtraFiles)))
	}
	progressDone := make(chan struct{})
	close(progressDone)
	if s.Progress != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, "", err
		}
		defer r.Close()
		defer w.Close() // closed at once after the start; again is harmless
		c.ExtraFiles = append(c.ExtraFiles, w)
		c.Env = append(c.Env, fmt.Sprintf("%s=%d", progressFDEnv, 2+len(c.ExtraFiles)))
		progressDone = make(chan struct{})
		go func() {
			defer close(progressDone)
			readProgress(r, func(i, n int, short string) { s.Progress(name, i, n, short) })
		}()
	}
	// SIGTERM when the supervisor dies, not SIGKILL: the pass's interrupt
	// handling (Ginkgo's) removes its namespaces, and a SIGKILLed "homatest
	// run" must not leave its pass working on a run folder the next run
	// takes over.
	done, err := childproc.StartDying(c, syscall.SIGTERM)
	if s.Progress != nil {
		c.ExtraFiles[len(c.ExtraFiles)-1].Close() // the child's now: EOF when it ends
	}
	if err != nil {
		return nil, "", fmt.Errorf("pass %s failed to start: %w", name, err)
	}
	// Every spec start the child reported is passed on before Pass
	// returns (Pass's return follows done), then the pass's end.
	defer func() {
		<-progressDone
		if s.Progress != nil {
			s.Progress(name, 0, 0, "")
		}
	}()
	ctx := s.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		// One SIGINT only: a second would make Ginkgo skip its cleanups.
		select {
		case <-done:
		case <-time.After(time.Second):
			c.Process.Signal(syscall.SIGINT)
			select {
			case <-done:
			case <-time.After(InterruptGrace - time.Second):
				c.Process.Kill()
				<-done
				return nil, "", fmt.Errorf("%w, killed after %v without ending: homatest cleanup removes any namespaces it left", ErrInterrupted, InterruptGrace)
			}
		}
		// The pass ended on the interrupt: Ginkgo reported the specs that
		// finished (the one cut short an error, those not begun skipped).
		if res, junit := s.partialPass(o); res != nil {
			return res, junit, ErrInterrupted
		}
		return nil, "", ErrInterrupted
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no error output; see " + filepath.Join(o.Dir, "ginkgo.log")
		}
		return nil, "", fmt.Errorf("pass %s failed to run: %v: %s", name, err, msg)
	}
	resFile := filepath.Join(o.Dir, passResultFile)
	b, err := os.ReadFile(resFile)
	if err != nil {
		return nil, "", fmt.Errorf("pass %s wrote no result: %w", name, err)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, "", fmt.Errorf("pass %s: bad result file %s: %w", name, resFile, err)
	}
	junit := ""
	if o.JUnit {
		junit = filepath.Join(o.Dir, passJUnitFile)
	}
	return &res, junit, nil
}

// partialPass reads what an interrupted pass (folder o.Dir) wrote as it
// ended: its result with only the specs that finished (Result.Running
// names the one cut short) and its JUnit file with only their testcases
// ("" without o.JUnit or the file). Nil when the pass wrote no result
// (killed, or interrupted before its specs began) or none finished.
func (s *Supervisor) partialPass(o PassOptions) (*Result, string) {
	b, err := os.ReadFile(filepath.Join(o.Dir, passResultFile))
	if err != nil {
		return nil, ""
	}
	var res Result
	if json.Unmarshal(b, &res) != nil {
		return nil, ""
	}
	var done []SpecResult
	for _, sp := range res.Specs {
		switch {
		case sp.State == "error" && strings.HasPrefix(sp.Failure, "interrupted"):
			res.Running = append(res.Running, sp.Name)
		case sp.State != "skipped":
			done = append(done, sp)
		}
	}
	if len(done) == 0 {
		return nil, ""
	}
	res.Specs = done
	junit := ""
	if path := filepath.Join(o.Dir, passJUnitFile); o.JUnit && keepFinishedCases(path) == nil {
		junit = path
	}
	return &res, junit
}

// readProgress calls fn with each "I N SHORT" line r holds, until its
// end; other lines are skipped.
func readProgress(r io.Reader, fn func(i, n int, short string)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var i, n int
		var short string
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &i, &n, &short); err == nil {
			fn(i, n, short)
		}
	}
}

// RerunInconclusive reruns the specs of res (pass name, run with o) whose
// timing findings a measured stall explained, each rerun a pass of its
// own named NAME-rerun-K with only those specs (see rerunInconclusive).
func (s *Supervisor) RerunInconclusive(name string, res *Result, o PassOptions) error {
	return rerunInconclusive(name, res, func(name string, focus []string) (*Result, error) {
		q := o
		q.Focus = focus
		r, _, err := s.Pass(name, q)
		return r, err
	})
}

// maxReruns bounds the reruns of specs whose timing findings a measured
// stall explained. A spec inconclusive in every rerun is not judged (the
// run is INCOMPLETE), so each rerun is another chance at a quiet run:
// beside stress-ng --cpu 2 (load average 11-15 with the other work on
// the 2-CPU VM) GRANT-srpt, a second of NEED_ACKs every tick, stalled in
// its pass and 2 reruns in 2 of 4 clean runs.
const maxReruns = 4

// rerunInconclusive reruns, in a pass of their own (run(name, focus)), the
// specs of res with timing-inconclusive findings, up to maxReruns times,
// and folds the outcome into res: a rerun that fails without a stall to
// explain it fails the spec (the finding reproduced on a quieter machine);
// a quiet clean rerun leaves it passed, its first findings still reported;
// a spec whose every rerun stalled again was never judged: its state
// becomes inconclusive (Tally.Incomplete), never passed.
func rerunInconclusive(name string, res *Result, run func(name string, focus []string) (*Result, error)) error {
	defer markInconclusive(res)
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
			if again != nil {
				// Interrupted: the specs the rerun finished count (it
				// returns them with the one cut short in Running), as an
				// interrupted pass's do; those it did not finish stay
				// never judged (markInconclusive).
				foldRerun(res, again, idx, k)
				for _, r := range again.Running {
					res.Running = append(res.Running, fmt.Sprintf("%s (rerun %d)", r, k))
				}
			}
			return err
		}
		if again.SetupError != "" {
			return fmt.Errorf("rerun of %s with timing-inconclusive findings: the test environment could not be built: %s", plural.Of(len(focus), "spec", "specs"), again.SetupError)
		}
		foldRerun(res, again, idx, k)
	}
	return nil
}

// foldRerun folds the specs rerun k (again) ran into res, whose specs
// idx indexes by name.
func foldRerun(res, again *Result, idx map[string]int, k int) {
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
			s.TimingElsewhere = append(s.TimingElsewhere, r.TimingElsewhere...)
		default:
			// Judged: stall-explained findings of rules that do
			// not bear on its verdict are reported, not rerun for.
			s.Rerun = "quiet"
			s.TimingElsewhere = append(s.TimingElsewhere, r.TimingElsewhere...)
		}
	}
}

// markInconclusive sets the state of res's passed specs whose last run
// (the pass, or its last rerun) was timing-inconclusive to inconclusive,
// with a failure message that says so.
func markInconclusive(res *Result) {
	for i := range res.Specs {
		s := &res.Specs[i]
		if s.State != "passed" || len(s.TimingInconclusive) == 0 || s.Rerun == "quiet" {
			continue
		}
		s.State = "inconclusive"
		s.Failure = fmt.Sprintf("timing-inconclusive: not judged (%s), run it on a quieter machine: %s",
			ranTimes(s.Reruns), s.TimingInconclusive[len(s.TimingInconclusive)-1])
	}
}

// ranTimes says how often a spec ran timing-inconclusive: "once, not
// rerun" or "in its pass and 2 reruns".
func ranTimes(reruns int) string {
	if reruns == 0 {
		return "once, not rerun"
	}
	return "in its pass and " + plural.Of(reruns, "rerun", "reruns")
}

// MatrixEntry is one fault knob's row of the mutation matrix.
type MatrixEntry struct {
	// Fault is the knob (homa.FaultNames).
	Fault string `json:"fault"`
	// Specs are the specs that failed under it (their short names), Rules
	// the rules those specs check, sorted.
	Specs []string `json:"failing_specs"`
	Rules []string `json:"rules"`
	// Findings are the rule IDs the failing specs' failures name (the
	// spec checker's findings and the tester's expectations).
	Findings []string `json:"findings"`
	// CaughtBy are the rules the fault catalogue says catch the knob
	// (homa.FaultInfo.CaughtBy).
	CaughtBy []string `json:"caught_by"`
	// Caught: at least one spec failed. AsCatalogued: one of CaughtBy is
	// among Findings or Rules (a spec checking it failed).
	Caught       bool `json:"caught"`
	AsCatalogued bool `json:"as_catalogued"`
}

// forgetCaptures rewrites res, a mutation-matrix pass's result, and its
// file resFile after the matrix removed the captures pcaps: no spec names
// a removed capture as its own, and a failure text that names one (as
// RUN-capture's gives the homatest check command) says it was removed and
// how to keep it (run --fault knob).
func forgetCaptures(resFile string, res *Result, pcaps []string, knob string) error {
	for i := range res.Specs {
		sp := &res.Specs[i]
		for _, p := range pcaps {
			if sp.Capture == p {
				sp.Capture = ""
			}
			sp.Failure = strings.ReplaceAll(sp.Failure, p, p+" (removed by --mutation-matrix; homatest run --fault "+knob+" keeps it)")
		}
	}
	return writeResult(resFile, res)
}

// writeResult writes res, a pass's result, to resFile (JSON, indented),
// whole or not at all (atomicfile): a supervisor reading it never sees
// half a file.
func writeResult(resFile string, res *Result) error {
	return atomicfile.Write(resFile, func(w io.Writer) error { return jsonout.Write(w, res) })
}

// ruleIDs matches the rule IDs a failure names.
var ruleIDs = regexp.MustCompile(`HOMA-[A-Z]+-[0-9]{3}`)

// MutationMatrix runs one pass per fault knob of the reference
// implementation (o with Fault set; pass folder fault-KNOB) and returns
// which specs fail under each. Failing specs' captures are removed (under
// a fault most specs fail, about 10 MB each; run --fault KNOB keeps one
// knob's). progress, when not nil, is called before each knob's pass
// with the knob, the number of knobs done and of those caught, and the
// number of knobs, and once after the last with knob "" (done = n): a
// matrix takes minutes, and its last state is the whole count. Errors: a
// pass's, and one whose environment cannot be built.
func (s *Supervisor) MutationMatrix(o PassOptions, progress func(knob string, done, caught, n int)) ([]MatrixEntry, error) {
	var matrix []MatrixEntry
	faults := homa.FaultNames()
	caught := 0
	for i, f := range faults {
		if progress != nil {
			progress(f.Name, i, caught, len(faults))
		}
		q := o
		q.Fault = f.Name
		res, _, err := s.Pass("fault-"+f.Name, q)
		if err != nil {
			return nil, err
		}
		if res.SetupError != "" {
			return nil, fmt.Errorf("fault %s: the test environment could not be built: %s", f.Name, res.SetupError)
		}
		if pcaps, err := filepath.Glob(filepath.Join(s.Dir, "fault-"+f.Name, "*.pcapng")); err == nil && len(pcaps) > 0 {
			for _, p := range pcaps {
				removeWithSidecars(p) // no .params or .stalls.json left for a removed capture
			}
			if err := forgetCaptures(filepath.Join(s.Dir, "fault-"+f.Name, passResultFile), res, pcaps, f.Name); err != nil {
				return nil, err
			}
		}
		// Empty lists are [] in the JSON, never null.
		e := MatrixEntry{Fault: f.Name, Specs: []string{}, CaughtBy: append([]string{}, f.CaughtBy...)}
		rules, found := map[string]bool{}, map[string]bool{}
		for _, sr := range res.Specs {
			if sr.State == "failed" || sr.State == "error" {
				e.Specs = append(e.Specs, sr.ShortName())
				for _, r := range sr.Rules {
					rules[r] = true
				}
				for _, r := range sr.NamedRules() {
					found[r] = true
				}
			}
		}
		e.Rules = append([]string{}, slices.Sorted(maps.Keys(rules))...)
		e.Findings = append([]string{}, slices.Sorted(maps.Keys(found))...)
		e.Caught = len(e.Specs) > 0
		for _, r := range f.CaughtBy {
			e.AsCatalogued = e.AsCatalogued || rules[r] || found[r]
		}
		matrix = append(matrix, e)
		if e.Caught {
			caught++
		}
	}
	if progress != nil {
		progress("", len(faults), caught, len(faults))
	}
	return matrix, nil
}

// RunPassFile runs one pass in this process (the child side of
// Supervisor.Pass): the options from the file at path, the environment
// they name (NewSimEnv, or NewNSEnv with the implementation's manifest),
// Ginkgo's log in ginkgo.log, and the result written beside the options
// as result.json. Errors: an unreadable options file, a bad --impl, or a
// result that cannot be written; a pass whose environment cannot be built
// is a result with SetupError.
func RunPassFile(path string) error {
	if fd, err := strconv.Atoi(os.Getenv(holdFDEnv)); err == nil && fd > 2 {
		// Held for this process's life; the agents and tools it starts
		// must not keep the supervisor's lock after it ends.
		syscall.CloseOnExec(fd)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var o PassOptions
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("pass options %s: %w", path, err)
	}
	var faults []string
	if o.Fault != "" {
		faults = append(faults, o.Fault)
	}
	logf, err := os.Create(filepath.Join(o.Dir, "ginkgo.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	newEnv := func(context.Context) (*Env, error) {
		return NewSimEnv(SimEnvConfig{Params: o.Params, Faults: faults, Artifacts: o.Dir})
	}
	if o.Env == "ns" {
		m, err := agent.ResolveManifest(o.Impl)
		if err != nil {
			return err
		}
		m = m.WithParams(o.Params)
		newEnv = func(ctx context.Context) (*Env, error) {
			ctx, cancel := context.WithTimeout(ctx, envTimeout)
			defer cancel()
			return NewNSEnv(ctx, NSEnvConfig{Manifest: m, Faults: faults, Artifacts: o.Dir,
				Workloads: o.NSWorkloads, RefBench: o.Impl == "ref"})
		}
	}
	junit := ""
	if o.JUnit {
		junit = filepath.Join(o.Dir, passJUnitFile)
	}
	var progress func(i, n int, short string)
	if fd, err := strconv.Atoi(os.Getenv(progressFDEnv)); err == nil && fd > 2 {
		syscall.CloseOnExec(fd) // the agents must not hold the pipe open
		pw := os.NewFile(uintptr(fd), "progress")
		defer pw.Close()
		progress = func(i, n int, short string) { fmt.Fprintf(pw, "%d %d %s\n", i, n, short) }
	}
	// Ginkgo handles SIGINT and SIGTERM in the pass: it interrupts the
	// spec and runs the suite's cleanups, which remove the namespaces.
	res, err := Run(nil, Options{NewEnv: newEnv, LabelFilter: o.LabelFilter, Rules: o.Rules, Focus: o.Focus,
		JUnit: junit, Artifacts: o.Dir, Log: logf, Verbose: o.Verbose, Progress: progress})
	if err != nil {
		return err
	}
	return writeResult(filepath.Join(o.Dir, passResultFile), res)
}
