package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/report/html"
	"github.com/homatest/homatest/scenario"
)

// scenarioOpts are the flags of homatest scenario run and homatest replay.
type scenarioOpts struct {
	artifacts, output, env string
	seed                   uint64
	quiet, strict          bool
	// force lets --artifacts name a folder that holds files already.
	force bool
	// page is the run's report page (report.html in its folder).
	page *html.Page
}

// flags defines the flags; seed adds --seed (scenario run; without it,
// replay's --artifacts), and html -o html (the report page, for scenario
// run).
func (o *scenarioOpts) flags(cmd *cobra.Command, seed, page bool) {
	f := cmd.Flags()
	if seed {
		f.StringVar(&o.artifacts, "artifacts", "", "run folder (default: a new folder under homatest-runs/)")
	} else {
		// replay: beside the folder it replays, never that folder.
		f.StringVar(&o.artifacts, "artifacts", "", "run folder of the replay (default: DIR-replay-<time> beside DIR; not DIR itself)")
	}
	if page {
		outputVar(f, &o.output, "the summary; html the report page (also written as report.html in the run folder)", "text", "json", "html")
	} else {
		outputVar(f, &o.output, "the summary", "text", "json")
	}
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines on standard error")
	f.BoolVar(&o.force, "force", false, "write into an --artifacts folder that holds files already, replacing those of the names the run writes (others are kept; an earlier run's interrupted marker, drops.json, summary.json, check.json and report.html are removed first)")
	f.BoolVar(&o.strict, "strict", false, "fail (exit 1) on SHOULD violations too (check.level should); by default they are warnings")
	if seed {
		f.Uint64Var(&o.seed, "seed", 0, "seed for every random choice, instead of the file's (0: the file's)")
		f.StringVar(&o.env, "env", "", "where to run, instead of the file's env: ns (namespaces, real time, root) or sim (the simulator, virtual time)")
	}
}

// check validates the flags cobra cannot (-o is checked as it is parsed).
func (o *scenarioOpts) check() error {
	if o.env != "" && o.env != scenario.EnvNS && o.env != scenario.EnvSim {
		return usageErr(fmt.Errorf("--env %q: want ns (network namespaces, root) or sim (the simulator)", o.env))
	}
	return nil
}

// checkFolder refuses an --artifacts folder that holds files already,
// unless --force: a run replaces the files of the names it writes
// (report.json, captures, logs), and an earlier run's were lost without
// a word.
func (o *scenarioOpts) checkFolder() error {
	if ents, err := os.ReadDir(o.artifacts); o.artifacts != "" && !o.force && err == nil && len(ents) > 0 {
		return usageErr(fmt.Errorf("--artifacts %s holds files already (%s; an earlier run's?): a run there would replace those of the names it writes; give a new folder, or --force to replace them", o.artifacts, plural.Of(len(ents), "entry", "entries")))
	}
	return nil
}

// earlierRunFiles are the files of a run folder its readers trust: the
// interrupted marker (kept, a finished run read as interrupted), and the
// files replay and a reader take as a finished run's (kept when the new
// run stops early, an earlier run's would read as the new one's).
var earlierRunFiles = []string{scenario.InterruptedFile, "drops.json", "summary.json", "check.json", reportFile}

// clearEarlierRun removes earlierRunFiles from dir (--force), so that the
// folder holds nothing of an earlier run a reader trusts: before, an
// interrupted run's marker outlived the finished run written over it,
// and replay refused the folder.
func clearEarlierRun(dir string) error {
	if dir == "" {
		return nil
	}
	for _, name := range earlierRunFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("--force: removing the earlier run's %s: %w", name, err)
		}
	}
	return nil
}

// run runs s with the flags' options; progress goes to stderr.
func (o *scenarioOpts) run(cmd *cobra.Command, s *scenario.Scenario) (*scenario.Result, error) {
	// No harness.HandleSignals: Main's context ends on SIGINT and SIGTERM,
	// and Run then removes its namespaces and marks its folder itself.
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	opts := scenario.Options{ArtifactsDir: o.artifacts, Strict: o.strict}
	if !o.quiet {
		errw := cmd.ErrOrStderr()
		opts.Log = func(line string) { fmt.Fprintln(errw, "homatest:", line) }
	}
	if o.force {
		if err := clearEarlierRun(o.artifacts); err != nil {
			return nil, usageErr(err)
		}
	}
	res, err := scenario.Run(ctx, s, opts)
	if errors.Is(err, scenario.ErrInterrupted) {
		switch o.output {
		case "json":
			// A CI job reading the JSON sees what finished and why
			// the rest did not (it got nothing to parse).
			jsonout.Write(cmd.OutOrStdout(), interruptedScenario(s, err))
		case "text":
			fmt.Fprintln(cmd.OutOrStdout(), interruptedScenario(s, err).text())
		}
		return nil, &ExitError{Code: 130, Err: err}
	}
	if errors.Is(err, scenario.ErrRunFolder) {
		return nil, usageErr(runFolderErr(err, o.artifacts == ""))
	}
	if err != nil {
		return nil, usageErr(err)
	}
	o.page = html.ScenarioPage(res, "homatest "+strings.Join(os.Args[1:], " "))
	if err := html.WriteFile(filepath.Join(res.Dir, reportFile), o.page); err != nil {
		return nil, usageErr(err)
	}
	return res, nil
}

// scenarioInterrupted is scenario run's (and replay's) -o json report of
// a run interrupted before it finished: what finished.
type scenarioInterrupted struct {
	Name string `json:"name"`
	Seed uint64 `json:"seed"`
	// Dir is the partial run folder, marked interrupted ("" when the
	// interruption came before it was made).
	Dir     string `json:"dir,omitempty"`
	Env     string `json:"env"`
	Backend string `json:"backend"`
	// Verdict is "incomplete"; Interrupted says why and where.
	Verdict     string `json:"verdict"`
	Interrupted string `json:"interrupted"`
	// Phase is the step the run was at (scenario.InterruptedError.Phase;
	// omitted before the first).
	Phase string `json:"phase,omitempty"`
	// RPCs issued before the interruption; OK and Failed those that had
	// ended so; CutShort the rest (running when it came). All 0 when the
	// workload had not begun. The capture was not checked.
	RPCs     int `json:"rpcs"`
	OK       int `json:"ok"`
	Failed   int `json:"failed"`
	CutShort int `json:"cut_short"`
}

// text is the one line scenario run's text output gives for rep: where
// the run stopped and how far its workload got (it printed nothing).
func (rep scenarioInterrupted) text() string {
	line := "INCOMPLETE: scenario " + rep.Name + " interrupted"
	if rep.Phase != "" {
		line += " while " + rep.Phase
	} else {
		line += " before it began"
	}
	switch {
	case rep.RPCs > 0:
		line += fmt.Sprintf(": %s issued, %d ok, %d failed, %d cut short", plural.Of(rep.RPCs, "RPC", "RPCs"), rep.OK, rep.Failed, rep.CutShort)
	case rep.Phase != "":
		line += ": no RPC issued"
	}
	line += "; the capture was not checked"
	if rep.Dir != "" {
		line += "; partial run folder " + rep.Dir
	}
	return line
}

// interruptedScenario is the report of scenario s, interrupted with
// err (scenario.ErrInterrupted, with its partial records when it is a
// *scenario.InterruptedError).
func interruptedScenario(s *scenario.Scenario, err error) scenarioInterrupted {
	rep := scenarioInterrupted{Name: s.Name, Seed: s.Seed, Env: s.Env, Backend: s.Link.Backend, Verdict: "incomplete", Interrupted: err.Error()}
	var ie *scenario.InterruptedError
	if !errors.As(err, &ie) {
		return rep
	}
	rep.Dir, rep.Phase = ie.Dir, ie.Phase
	if ie.Traffic == nil {
		return rep
	}
	for _, r := range ie.Traffic.Records {
		rep.RPCs++
		switch {
		case r.Ended == 0 || strings.HasPrefix(r.Err, "aborted: "):
			rep.CutShort++
		case r.Err == "":
			rep.OK++
		default:
			rep.Failed++
		}
	}
	return rep
}

func newScenarioCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Run or validate a scenario file (topology, link, IUT, workload, fault plan, check)",
		Long: `A scenario file (YAML) describes one experiment: N hosts in network
namespaces behind an emulated switch, the implementation under test (IUT) on
every host, an RPC workload, an optional fault plan and the rules that judge
the capture. Fields (defaults in brackets):

  name                 run name [the file's base name]
  seed                 seed of every random choice [random, written back]
  topology:  hosts [2], ipv6 [false], mtu [1500]
  link:      backend switch|tc [switch], rate (e.g. 1gbit), priorities [8],
             buffer_bytes, delay, jitter, loss {model, probability, ...},
             duplicate, reorder, corrupt, mtu (netem's link config)
  iut:       impl ref|linux|MANIFEST.yaml [ref], params {tick_ns: ...}, faults
  workload:  dist w1..w5|BYTES, response w1..w5|BYTES [100],
             pattern many-to-one|all-to-all [many-to-one], port [4000],
             load (fraction of link.rate) or concurrency [1],
             duration and/or count (both: it stops at whichever comes first),
             or rpcs: [{at, client, server, request, response}],
             timeout [10s]
  plan:      rules: [{name, match: {type, rpc, nth, ...}, action: drop|{delay, ...}}]
             (backend tc: nftables on every port's egress; nth counts per
             port; no rpc ordinals (use id), in_port, out_port, delay, hold
             or duplicate)
  check:     rules [HOMA-*], level must|should [must], profile [linux; the
             wire format's when the IUT's hello names one: linux-2024 for
             HomaModule linux_6.1.38], params
  env        ns|sim [ns]: network namespaces in real time (root), or the
             simulator (package sim: the reference implementation's
             protocol state machine on virtual time, no root; the same seed
             gives byte-identical captures and results; impl ref and
             backend switch only)
  sim:       packet_cost [2.5us], cores [4]: each simulated host's
             processing of a packet (env sim only)

Every run writes a folder: the resolved scenario (scenario.yaml), seed,
versions.json, hellos.json, the agents' logs, capture.pcapng (both
directions, with the switch's drop notes), sent.pcapng and delivered.pcapng
(each packet as sent and as delivered; violations as packet comments on
their frames), switch.json, drops.json, switch-notes.pcapng, rpcs.json,
check.json, summary.json and report.html (a page with the rules, each
violation's rule, finding and sequence graph; -o html prints it). homatest
replay DIR reruns it. On backend tc, drops.json lists the frames sent and
never delivered (no switch notes), attributed to the plan's matching drop
rules.`,
		Example: `  # check a file and print it with its defaults filled in
  homatest scenario validate scenario/testdata/w4-half-load.yaml
  # run it in the simulator (no root), then in network namespaces
  homatest scenario run --env sim scenario/testdata/w4-half-load.yaml
  sudo homatest scenario run scenario/testdata/w4-half-load.yaml`,
	}
	cmd.AddCommand(newScenarioRunCmd(), newScenarioValidateCmd())
	return cmd
}

func newScenarioRunCmd() *cobra.Command {
	o := &scenarioOpts{}
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a scenario and check its capture",
		Long: `run builds the scenario's topology (root needed), starts the IUT's agent
on every host, drives the workload, captures every switch port and checks
each host's view of the capture (what it sent as it sent it merged with what
it got as it arrived) with the scenario's rules. With --env sim (or env: sim
in the file) the reference implementation runs in the simulator instead: on
virtual time, without root, at any link rate; captures keep the first 128
bytes of each frame (every header) and no timing slack is applied. It prints RPCs ok and
failed, offered and carried load, latency p50/p99, drops by reason, fault
plan hits and the rule table.

Exit codes: 0 every RPC completed (or timed out while measured stalls of
this machine that lost its lateness overlapped it) and no MUST rule was
violated (SHOULD violations, with check.level should, are warnings unless
--strict) and the run tested what it set out to; 1 failed RPCs or
violations; 2 INCOMPLETE: nothing failed but the run did not test what it
set out to: a plan rule never fired (its fault was not tested), the
completed RPCs carried less than 70% of the workload's offered load (at
most the link) while the busiest downlink ran below 70% of the link (not
with a lossy link, a plan firing on more than 1% of the RPCs, or fewer
than 20 RPCs), or the capture lost frames a finding may rest on (the folder is
kept; -o json and summary.json: verdict "incomplete", one line per reason
in "incomplete"), or a bad scenario
or manifest, not root, a kernel without a
feature the link needs, or an environment error (nothing is left behind);
130 interrupted (the folder is kept, marked by its file "interrupted";
-o json writes what finished: verdict "incomplete", an "interrupted"
field saying why and where, and the RPCs issued, ok, failed and
cut_short by it; the capture is not checked).`,
		Example: `  homatest scenario run scenario/testdata/w4-half-load.yaml
  homatest scenario run --env sim scenario/testdata/w4-half-load.yaml
  homatest scenario run my.yaml --seed 42 --artifacts runs/my-42 -o json | jq .latency_p99_ns`,
		Args: oneArg("one scenario file", "scenario/testdata/w4-half-load.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			if err := o.checkFolder(); err != nil {
				return err
			}
			s, err := scenario.Load(args[0])
			if err != nil {
				return usageErr(err)
			}
			if o.seed != 0 {
				s.Seed = o.seed
			}
			if o.env != "" {
				s.Env = o.env
				if err := s.Validate(); err != nil {
					return usageErr(fmt.Errorf("--env %s: %w", o.env, err))
				}
			}
			res, err := o.run(cmd, s)
			if err != nil {
				return err
			}
			if err := o.print(cmd.OutOrStdout(), res.Summary, nil); err != nil {
				return usageErr(err)
			}
			return verdictErr(res.Summary, o.strict)
		},
	}
	o.flags(cmd, true, true)
	return cmd
}

// print writes the summary (and v in JSON), or the report page, in the
// chosen format.
func (o *scenarioOpts) print(w io.Writer, s scenario.Summary, v any) error {
	if o.output == "html" {
		return html.Write(w, o.page)
	}
	if o.output == "json" {
		if v == nil {
			v = s
		}
		return jsonout.Write(w, v)
	}
	return s.WriteText(w)
}

// verdictErr is exit 1 for a failed run (with strict, also for SHOULD
// violations) and exit 2 for an incomplete one (a plan rule never fired,
// the offered load not carried, or capture drops a finding may rest on:
// nothing failed, but the run did not test what it set out to, and
// untested is not a pass).
func verdictErr(s scenario.Summary, strict bool) error {
	if s.Verdict == scenario.VerdictPass && (!strict || s.ShouldViolated == 0) {
		return nil
	}
	if s.Verdict == scenario.VerdictIncomplete {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("scenario %s: INCOMPLETE: %s (see %s)", s.Name, strings.Join(s.Incomplete, "; "), s.Dir)}
	}
	return &ExitError{Code: ExitViolations, Err: fmt.Errorf("scenario %s: %s, %s (see %s)", s.Name, plural.Of(s.Failed, "failed RPC", "failed RPCs"), plural.Of(s.Violated, "violation", "violations"), s.Dir)}
}

func newScenarioValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a scenario file and print it resolved (every default filled in)",
		Long: `validate reads a scenario file, fills in the defaults and checks every
field (and the IUT's manifest), without root and without running anything.
It prints the resolved scenario; an error is one line with the YAML line,
the field and the fix (exit code 2).`,
		Example: `  homatest scenario validate scenario/testdata/w4-half-load.yaml`,
		Args:    oneArg("one scenario file", "scenario/testdata/w4-half-load.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenario.Load(args[0])
			if err != nil {
				return usageErr(err)
			}
			b, err := s.Marshal()
			if err != nil {
				return usageErr(err)
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}
