package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/explore"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec"
)

// exploreOpts are the flags of homatest explore.
type exploreOpts struct {
	impl, env, fault, rules, level string
	params                         []string
	budget                         time.Duration
	seed                           uint64
	maxCases, shrinkRuns           int
	keepGoing, quiet               bool
	artifacts, output, junit       string
	// defaulted: no --artifacts was given (errors name the default folder).
	defaulted bool
	replay    string
	// faultSet is set when --fault was given, even as "": with
	// --replay it replaces the script's knobs ("" none).
	faultSet bool

	par agent.Params
	lvl spec.Level
	sel []*spec.Rule
}

func newExploreCmd() *cobra.Command {
	o := &exploreOpts{}
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Explore an implementation with every legal peer behaviour, shrink what fails",
		Long: `Explore plays, from the tester hosts, every behaviour a correct Homa peer and
the network between may show against the implementation under test (IUT):
request and response DATA of the unscheduled and granted bytes, GRANTs
within the window and the overcommit limit, RESENDs after resend_ticks of
silence, BUSY, RPC_UNKNOWN after an abort or a lost server state, CUTOFFS
with new versions, NEED_ACK and ACK, and packets dropped (alone or in
bursts), duplicated, delayed and reordered, with decisions weighted toward
the protocol's boundaries (sizes at unsched_bytes, the cutoffs and segment
edges; packets given just before or after the IUT's timer deadlines).
Every packet the IUT sends or is given goes to the spec checker as it
happens (the IUT's own view; findings charged to the IUT only), and the
IUT's calls through the agent protocol must end with the right payload,
execute once, or fail only where the peer allowed it. Coverage (rules
evaluated at the IUT's packets, the IUT's answers to each packet type, the
IUT states reached) steers the search toward what is not covered.

A failure stops the session (--keep-going searches on) and is shrunk to
the smallest exchange that still fails with the same rule: fewer RPCs,
fewer packets, smaller messages, simpler timing. It is written to the
run folder as a replay script (failure-N-RULE.homa: the RPCs, then one
line per packet in time order, the tester's to send, the IUT's expected)
and the IUT's view as pcapng with the finding on its frame; --replay
FILE runs a script again, with the script's fault knobs and --param values
(--param given with --replay overrides the script's of that name; --fault
replaces the script's knobs, --fault "" with none); it prints the
parameters and knobs it used and where each came from.

The default environment is the simulator (--env sim: the reference
implementation, virtual time, a seed gives the same cases); --env ns runs
any IUT (--impl linux or a manifest) in network namespaces (root).

The progress line (stderr) shows the explorer's events per second (packets
it sent and received, calls and completions), the MUST rules exercised and
the failures: on a terminal rewritten about once a second, otherwise (a CI
log) a line at the start, every 10 seconds and at the end. Exit codes: 0 no failure, 1 failures (or, with --replay, the
script's exchange failed), 2 usage or environment error (a --rules and
--level that select no rule, such as a SHOULD rule at --level must, judge
nothing: refused), 130 interrupted.`,
		Example: `  homatest explore --budget 60s --seed 1
  homatest explore --fault no-busy --param link_bps=1000000000   # a knob, small messages (unsched_bytes 3000)
  homatest explore --env ns --impl mystack.yaml --budget 10m --keep-going
  homatest explore --rules 'HOMA-GRANT-*,HOMA-RESEND-*' --level must -o json
  homatest explore --replay homatest-runs/20260101-120000-42/failure-1-HOMA-GRANT-002.homa`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.impl, "impl", "ref", implUsage)
	f.StringVar(&o.env, "env", "auto", "environment: sim (the simulator, virtual time, ref only), ns (network namespaces, root), auto (sim for ref, else ns)")
	f.DurationVar(&o.budget, "budget", 60*time.Second, "how long to search (wall time; shrinking a failure comes on top)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of every random choice (in the simulator the same seed gives the same cases)")
	f.StringVar(&o.fault, "fault", "", "enable a fault knob of the reference implementation (homatest faults); with a manifest's IUT its agent is asked for it in hello, as homatest run does")
	f.StringArrayVar(&o.params, "param", nil, "IUT parameter override for its hello, NAME=VALUE (repeatable; e.g. link_bps=1000000000 for the ref's 1 Gbit/s settings, unsched_bytes=12000)")
	f.StringVar(&o.rules, "rules", "", "comma-separated rule-ID globs to judge (default: every rule)")
	f.StringVar(&o.level, "level", "should", "lowest level that fails: must (MUST rules only) or should (MUST and SHOULD)")
	f.BoolVar(&o.keepGoing, "keep-going", false, "search on after a failure (each rule's first failure is shrunk and kept)")
	f.IntVar(&o.maxCases, "max-cases", 0, "stop after this many cases (0: the budget decides)")
	f.IntVar(&o.shrinkRuns, "shrink-runs", 400, "reruns spent shrinking one failure (0: none)")
	f.StringVar(&o.artifacts, "artifacts", "", "run folder for failure scripts, captures, result.json (default: a new folder under homatest-runs/)")
	outputVar(f, &o.output, "the summary", "text", "json")
	f.StringVar(&o.junit, "junit", "", "write a JUnit XML report to this file (one test case per rule: failed, exercised, or skipped when not exercised)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line")
	f.StringVar(&o.replay, "replay", "", "replay this script (a failure-N-RULE.homa of a run folder) instead of exploring")
	return cmd
}

// envFor returns the explore environment for faults.
func (o *exploreOpts) envFor(faults []string) (explore.Env, error) {
	if o.env == "sim" {
		return explore.SimEnv(faults, o.par), nil
	}
	m, err := agent.ResolveManifest(o.impl)
	if err != nil {
		return explore.Env{}, err
	}
	cfg := nsEnvConfig(m, faults, o.par, o.artifacts)
	return explore.Env{Name: "ns", Faults: faults, Params: o.par, New: func() (*conformance.Env, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timescale.D(30*time.Second))
		defer cancel()
		return conformance.NewNSEnv(ctx, cfg)
	}}, nil
}

func (o *exploreOpts) run(cmd *cobra.Command) error {
	if err := o.validate(); err != nil {
		return usageErr(err)
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if o.artifacts == "" {
		o.artifacts, o.defaulted = defaultRunDir(), true
	}
	if o.replay != "" {
		o.faultSet = cmd.Flags().Changed("fault")
		return o.runReplay(ctx, cmd.OutOrStdout())
	}
	var faults []string
	if o.fault != "" {
		faults = []string{o.fault}
	}
	env, err := o.envFor(faults)
	if err != nil {
		return usageErr(err)
	}
	// The run folder only once nothing can stop the session: a usage
	// error leaves nothing behind. A session that wrote nothing removes
	// the folders it made.
	undo, err := harness.MakeDir(o.artifacts)
	if err != nil {
		return usageErr(runFolderErr(err, o.defaulted))
	}
	defer func() {
		if !undo.Changed() {
			undo.Remove()
		}
	}()
	cfg := explore.Config{Env: env, Budget: o.budget, MaxCases: o.maxCases, Seed: o.seed,
		Rules: o.sel, Level: o.lvl, ShrinkRuns: shrinkRuns(o.shrinkRuns), KeepGoing: o.keepGoing, ReplayCommand: o.replayCommand}
	prog := o.newExploreProgress(cmd.ErrOrStderr())
	if prog != nil {
		cfg.Progress = func(pr explore.Progress) { prog.update(pr.String()) }
	}
	res, err := explore.Explore(ctx, cfg)
	if prog != nil {
		prog.end()
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		undo.Remove() // a failed setup: what it wrote (topology, agents' logs) goes too
		return usageErr(envErr("explore", err))
	}
	paths, werr := o.writeFailures(res)
	if werr != nil {
		return usageErr(werr)
	}
	for i := range res.Failures {
		if f := res.Failures[i]; i < len(paths) && paths[i].script != "" {
			f.ScriptFile, f.ReplayCommand, f.CaptureFile = paths[i].script, o.replayCommand(i+1, f.Rule), paths[i].capture
		}
	}
	if err := atomicfile.Write(filepath.Join(o.artifacts, "result.json"), func(w io.Writer) error {
		return jsonout.Write(w, res)
	}); err != nil {
		return usageErr(err)
	}
	if o.junit != "" {
		if err := o.writeJUnit(res); err != nil {
			return usageErr(err)
		}
	}
	w := &errWriter{w: cmd.OutOrStdout()}
	if o.output == "json" {
		jsonout.Write(w, res)
	} else {
		o.text(w, res, paths, interrupted)
	}
	if w.err != nil {
		return usageErr(fmt.Errorf("write output: %w", w.err))
	}
	if interrupted {
		return &ExitError{Code: 130, Err: errors.New("interrupted: the session stopped; what it found is in " + o.artifacts)}
	}
	if len(res.Failures) > 0 {
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("%s (scripts and captures in %s)", plural.Of(len(res.Failures), "failure", "failures"), o.artifacts)}
	}
	return nil
}

// text prints the session's summary (no PASS line when it was
// interrupted).
func (o *exploreOpts) text(w io.Writer, res *explore.Result, paths []failurePaths, interrupted bool) {
	fmt.Fprintf(w, "explore: %s %s in %s, seed %d: %d cases in %v, %d events (%.0f events/s), %d packets to the IUT\n",
		res.Impl, res.Version, res.Env, res.Seed, res.Cases, res.Elapsed.Round(100*time.Millisecond), res.Events, res.EventsPerSec, res.Sent)
	c := res.Coverage
	fmt.Fprintf(w, "coverage: MUST rules exercised %d of %d (%.0f%%); %d (packet given, IUT's answer) pairs; %d IUT states\n",
		c.MustExercised, c.MustRules, pctOf(c.MustExercised, c.MustRules), c.Pairs, c.States)
	var missing, capture []string
	for _, r := range c.Rules {
		switch {
		case r.Level != spec.Must || r.Exercised:
		case r.NeedsCapture:
			capture = append(capture, r.ID)
		default:
			missing = append(missing, r.ID)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  not exercised: %s\n", strings.Join(missing, ", "))
	}
	if len(capture) > 0 {
		fmt.Fprintf(w, "  not counted (judge what only a capture holds, the IP header; homatest check judges them): %s\n", strings.Join(capture, ", "))
	}
	if res.Inconclusive > 0 {
		fmt.Fprintf(w, "inconclusive: %s on the IUT not charged (a measured stall, a timer racing a packet, or packets the namespace network lost); e.g.\n", plural.Of(res.Inconclusive, "finding", "findings"))
		for _, f := range res.InconclusiveFindings[:min(3, len(res.InconclusiveFindings))] {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for i, f := range res.Failures {
		fmt.Fprintf(w, "FAIL %s %s: %s\n", f.Rule, f.Level, f.Why)
		fmt.Fprintf(w, "  found after %v (case %d); %s\n", f.After.Round(10*time.Millisecond), f.Case, f.ShrinkText())
		if f.Unstable {
			fmt.Fprintf(w, "  unstable: %s\n", f.UnstableWhy())
		}
		if i < len(paths) && paths[i].script == "" {
			fmt.Fprintf(w, "  interrupted while shrinking: no script (rerun with the same --seed to find it again)\n")
		} else if i < len(paths) {
			fmt.Fprintf(w, "  script:  %s\n  replay:  %s\n", paths[i].script, o.replayCommand(i+1, f.Rule))
			if paths[i].capture != "" {
				fmt.Fprintf(w, "  capture: %s\n", paths[i].capture)
			}
		}
	}
	if len(res.Failures) == 0 && !interrupted {
		fmt.Fprintf(w, "PASS: no violation in %s; artifacts in %s\n", plural.Of(res.Cases, "case", "cases"), o.artifacts)
	}
}

// scriptPath is the n-th failure's script (rule its rule) in the run
// folder.
func (o *exploreOpts) scriptPath(n int, rule string) string {
	return filepath.Join(o.artifacts, fmt.Sprintf("failure-%d-%s.homa", n, rule))
}

// replayCommand is the command that replays the n-th failure's script:
// the session's --impl and --env (the script's param and iut lines give
// its --param and --fault; another IUT than ref gets the session's
// --fault, since a replay asks it for the script's knobs only then).
func (o *exploreOpts) replayCommand(n int, rule string) string {
	s := "homatest explore --replay " + o.scriptPath(n, rule)
	if o.impl != "ref" {
		s += " --impl " + o.impl
		if o.fault != "" {
			s += " --fault " + o.fault
		}
	}
	if o.env != "sim" {
		s += " --env " + o.env
	}
	return s
}

func pctOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// envErr is the error of a session whose environment could not be built
// (err), prefixed by what ("explore", "replay FILE"), except an
// implementation that cannot run here: its agent.CannotRunError is one
// line, what and the fix, said alone as run, bench and scenario run say
// it.
func envErr(what string, err error) error {
	var cr *agent.CannotRunError
	if errors.As(err, &cr) {
		return cr
	}
	return fmt.Errorf("%s: %w", what, err)
}
