package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/bench/benchrun"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/report/html"
)

// Environments of homatest bench --env (benchrun's).
const (
	envNS  = benchrun.EnvNS
	envSim = benchrun.EnvSim
)

// nsBenchDuration is --duration's default with --env ns.
const nsBenchDuration = 10 * time.Second

// simBenchDuration is --duration's default with --env sim: W4 at 0.8 of
// 10 Gbit/s issues about 7,500 RPCs in it (750 per bucket).
const simBenchDuration = 500 * time.Millisecond

// maxHosts is the largest --hosts for env: the simulator runs as many
// hosts as the Homa simulations' default topology (HomaSimulation's 144
// hosts, 9 racks of 16), namespaces what this machine's CPUs carry.
func maxHosts(env string) int {
	if env == envSim {
		return 144
	}
	return 16
}

// benchOpts are the flags of homatest bench.
type benchOpts struct {
	impl, workload, rate, transports, output, plot, artifacts, env string
	// defaulted: no --artifacts was given (errors name the default folder).
	defaulted                          bool
	load                               float64
	hosts, buckets, unloaded, response int
	duration, rtt                      time.Duration
	seed                               uint64
	params                             []string

	// Set by check.
	dist     workload.Dist
	homaPar  agent.Params
	rateBps  netem.BitRate
	trans    []string
	homaImpl *agent.Manifest
	tcpImpl  *agent.Manifest

	// started is set by run once a transport's first RPC is issued.
	started bool
	// page is the report page run wrote (report.html).
	page *html.Page
}

func newBenchCmd() *cobra.Command {
	o := &benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Homa's slowdown under load against TCP's, as the Homa papers do",
		Long: `Bench runs the Homa papers' slowdown benchmark on emulated hosts. As root it
builds --hosts network namespaces behind netem's user-space switch (8
strict-priority queues per port, every link at --rate), starts an agent on
each host, and for each transport of --transport:

  1. measures the unloaded latency: RPCs of representative request sizes
     (the smallest and largest size of every bucket below), one at a time
     from the first host to the last, --unloaded RPCs per size (their 25th
     percentile: a CPU stall only adds latency);
  2. runs the loaded workload: the other hosts call the last one with
     request sizes from --workload at Poisson arrivals offering --load of
     the server's link, for --duration (harness/traffic). A --rate and
     --duration in which the workload would not issue one message on
     average are refused before anything is built (exit 2).

The transports see the same request sizes and arrival times (same --seed).
"homa" is the --impl agent (ref: the reference implementation, run with a
50 ms timer tick here; linux: the kernel module; or a manifest file); "tcp"
is homatest's tcp agent (one TCP connection per client-server pair).

Each RPC's slowdown is its latency divided by the unloaded latency of its
request size (interpolated between the measured sizes). The report gives,
per bucket of message sizes (the workload split into --buckets of equal
probability; the papers' x axis), the RPC count and the p50 and p99
slowdown per transport, the ratio of the p99s (tcp/homa), and each
transport's offered and achieved throughput. --plot draws it (PNG or SVG by
extension): slowdown on a log scale against message size placed at its
workload percentile, p99 solid, p50 dashed.

The switch, the hosts and the agents share this machine's CPUs: pick a
--rate the switch and the user-space hosts can carry (the achieved
throughput should match the offered one), or the result measures the CPU
rather than the transports.

With --env sim (the default when not root) the hosts are simulated
(package sim) behind netem's switch core on virtual time, 2..144 of them:
"homa" is the reference implementation's protocol state machine with
HomaModule's 1 ms tick and its lab parameters for --rate
(homa.ParamsForLink; --rtt is not used), "tcp" is gVisor's netstack TCP
(CUBIC, SACK, RACK-TLP, 200 ms minimum RTO; package sim/simtcp says
where it differs from Linux's) carrying RPCs as the tcp agent does. Every host pays the same modelled cost per packet it sends or takes
in (2.5 µs on 4 cores per 10 Gbit/s of --rate, sim.CostForLink: 1.6 M
packets/s per host at 10gbit). No other program competes for that time,
so a seed always gives the same report, byte for byte, at any --rate
(10gbit, 25gbit, 100gbit); but the modelled cores are finite: workloads of
tiny messages offer the server more packets than they carry (W1 at
--load 0.5 of 10gbit: 2 M RPCs/s, at least 2 packets each), and the
report then says which host saturated. --duration defaults to 500ms of
simulated time. The wall time per simulated second goes to standard
error.

A transport that did not keep up (an RPC failed, or it carried less than
90% of the offered load: its RPCs ended slower than they were issued) is
named in a WARNING before the tables, with what fell short and the
likely cause (when the sizes the run drew offered more than the link
carries, a run too short for the workload's heavy tail: RUN TOO SHORT,
with the realised load against the nominal one; give a longer
--duration); its name and every p99 ratio are marked "!" (the
slowdowns measure a backlog, not the transport), report.json lists it in
"saturated", and the exit code is 1 (with --env ns only when an RPC failed:
there a shortfall alone may be this machine's other jobs).

The run folder gets report.json and report.html (the plot and the tables
as a page; -o html prints it).

Exit codes: 0 done, 1 done but a transport did not keep up (the report
is written; see above), 2 usage or
environment error (not root for --env ns, a bad flag, an agent that cannot
start), 130 interrupted (Ctrl-C, SIGINT or SIGTERM: the namespaces are
removed first; a bench interrupted once its RPCs began keeps its folder
with what was written so far, marked by a file "interrupted", else leaves
nothing; -o json writes what finished: the setup, the transports measured
to the end, verdict "incomplete", an "interrupted" field saying why and
where and "running", the transport cut short; -o text prints the finished
transports' tables after a line saying it was interrupted).`,
		Example: `  sudo homatest bench --workload w4 --load 0.8 --rate 100mbit --plot w4.png
  homatest bench --env sim --workload w4 --load 0.8 --rate 10gbit --hosts 16 --duration 100ms
  sudo homatest bench --workload 1000 --transport homa --duration 5s -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch o.env {
			case "auto":
				o.env = envNS
				if os.Geteuid() != 0 {
					o.env = envSim
				}
			case envNS, envSim:
			default:
				return usageErr(fmt.Errorf("--env %q: want auto, ns (network namespaces, root) or sim (the simulator)", o.env))
			}
			if !cmd.Flags().Changed("duration") {
				o.duration = nsBenchDuration
				if o.env == envSim {
					o.duration = simBenchDuration
				}
			}
			if err := o.check(); err != nil {
				return usageErr(err)
			}
			if o.env == envNS && os.Geteuid() != 0 {
				return usageErr(errors.New("bench builds network namespaces and needs root: run it with sudo, or simulate it with --env sim"))
			}
			// No harness.HandleSignals: Main's context ends on SIGINT and
			// SIGTERM, and Run then removes its namespaces itself.
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if o.artifacts == "" {
				o.artifacts, o.defaulted = defaultRunDir(), true
			}
			undo := harness.RecordDir(o.artifacts)
			rep, err := o.run(ctx, newBenchProgress(cmd.ErrOrStderr(), o.output != "text"))
			if err != nil && !o.started {
				undo.Remove() // nothing ran
			}
			if err != nil && ctx.Err() != nil {
				ierr := o.interrupted(ctx)
				o.writeInterrupted(cmd.OutOrStdout(), err, ierr)
				return ierr
			}
			if err != nil && o.started && agentOutput(o.artifacts) {
				return usageErr(fmt.Errorf("%w; logs in %s", err, o.artifacts))
			}
			if err != nil {
				// Nothing half-written: a bench that failed (no RPC
				// completed, say) leaves no folder without a report.
				undo.Remove()
				return usageErr(err)
			}
			switch o.output {
			case "json":
				err = rep.WriteJSON(cmd.OutOrStdout())
			case "html":
				err = html.Write(cmd.OutOrStdout(), o.page)
			default:
				err = rep.WriteText(cmd.OutOrStdout())
				if err == nil && o.plot != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "\nplot: %s\n", o.plot)
				}
			}
			if err != nil {
				return err
			}
			return notKeptUp(rep)
		},
	}
	cmd.AddCommand(newCollectiveCmd())
	f := cmd.Flags()
	f.StringVar(&o.env, "env", "auto", "where the hosts run: ns (network namespaces, real time, root), sim (the simulator, virtual time) or auto (ns as root, else sim)")
	f.StringVar(&o.impl, "impl", "ref", implUsage+" (the homa transport)")
	f.StringVar(&o.workload, "workload", "w4", "request sizes: w1..w5 (the Homa papers' workloads) or a fixed size in bytes")
	f.Float64Var(&o.load, "load", 0.5, "offered load, a fraction 0.001..1 of the server's link rate")
	f.StringVar(&o.rate, "rate", "50mbit", `link rate of every switch port ("1gbit", "100mbit", bit/s)`)
	f.IntVar(&o.hosts, "hosts", 4, "hosts: the last one serves, the others call it (2..16; with --env sim 2..144)")
	f.DurationVar(&o.duration, "duration", 0, "how long the loaded run issues RPCs, per transport (default 10s; with --env sim 500ms of simulated time)")
	f.StringVar(&o.transports, "transport", "homa,tcp", "transports to run, comma-separated: homa, tcp")
	outputVar(f, &o.output, "the slowdown table; html the report page (also written as report.html in the run folder)", "text", "json", "html")
	f.StringVar(&o.plot, "plot", "", "write the slowdown plot to this .png or .svg file")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the request sizes and arrival times (the same for every transport)")
	f.StringVar(&o.artifacts, "artifacts", "", "run folder for the agents' logs, the topology and report.json (default: a new folder under homatest-runs/)")
	f.IntVar(&o.buckets, "buckets", bench.DefaultBuckets, "size buckets: the workload split into this many of equal probability")
	f.IntVar(&o.unloaded, "unloaded", 20, "unloaded RPCs per measured size for the baseline")
	f.DurationVar(&o.rtt, "rtt", time.Millisecond, "round trip the ref agent's unsched_bytes (rate × rtt) and max_incoming (8 × that) are sized for")
	f.StringArrayVar(&o.params, "param", nil, "Homa parameter override for the homa agents' hello, NAME=VALUE (an integer or comma-separated integers; repeatable; e.g. unsched_bytes=12000)")
	f.IntVar(&o.response, "response", traffic.DefaultResponseBytes, "response size in bytes")
	return cmd
}

// check validates the flags and fills the parsed fields.
func (o *benchOpts) check() error {
	var err error
	if o.dist, err = workload.Parse(o.workload); err != nil {
		return fmt.Errorf("--workload %q: %s", o.workload, strings.TrimPrefix(err.Error(), "workload: "))
	}
	if o.rateBps, err = netem.ParseRate(o.rate); err != nil {
		return fmt.Errorf("--rate: %s", strings.TrimPrefix(err.Error(), "netem: "))
	}
	if o.rateBps == 0 {
		return fmt.Errorf("--rate %q: the load is a fraction of the link rate: give a rate above 0 (e.g. 100mbit)", o.rate)
	}
	if o.rateBps > benchMaxRate {
		return fmt.Errorf("--rate %q: want at most 2^40 bit/s (1099gbit), the most the agents take as link_bps", o.rate)
	}
	switch {
	case !(o.load >= benchMinLoad && o.load <= 1):
		return fmt.Errorf("--load %v: want a fraction in [%v, 1], e.g. 0.8 (below %v the bench measures an unloaded network, as --unloaded does)", o.load, benchMinLoad, benchMinLoad)
	case o.hosts < 2 || o.hosts > maxHosts(o.env):
		return fmt.Errorf("--hosts %d: want 2..%d (one server, the others clients)", o.hosts, maxHosts(o.env))
	case o.duration <= 0:
		return fmt.Errorf("--duration %v: want a positive duration such as 10s", o.duration)
	case o.buckets < 1 || o.buckets > 100:
		return fmt.Errorf("--buckets %d: want 1..100", o.buckets)
	case o.rtt <= 0:
		return fmt.Errorf("--rtt %v: want a positive duration such as 1ms", o.rtt)
	case o.unloaded < 1:
		return fmt.Errorf("--unloaded %d: want at least 1", o.unloaded)
	case o.response < 1 || o.response > agent.MaxMessage:
		return fmt.Errorf("--response %d: want 1..%d bytes", o.response, agent.MaxMessage)
	}
	if err := o.checkIssues(); err != nil {
		return err
	}
	if err := checkPlotFile(o.plot); err != nil {
		return err
	}
	par, err := parseParams(o.params)
	if err != nil {
		return err
	}
	// Refused before the hosts are built, as homatest run refuses them.
	if err := checkRefParams(o.impl, par, "--param"); err != nil {
		return err
	}
	o.homaPar = par
	o.trans = nil
	for _, t := range strings.Split(o.transports, ",") {
		t = strings.TrimSpace(t)
		if t != "homa" && t != "tcp" {
			return fmt.Errorf("--transport %q: want homa, tcp or homa,tcp", o.transports)
		}
		if slices.Contains(o.trans, t) {
			return fmt.Errorf("--transport %q: %s given twice", o.transports, t)
		}
		o.trans = append(o.trans, t)
	}
	if o.env == envSim {
		if o.impl != "ref" {
			return fmt.Errorf("--impl %q: --env sim simulates the reference implementation only: use --impl ref, or --env ns", o.impl)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this program to run its agent: %w", err)
	}
	if o.tcpImpl, err = agent.BuiltinManifest("tcp", self); err != nil {
		return err
	}
	o.homaImpl, err = agent.ResolveManifest(o.impl)
	return err
}

// benchMinLoad and benchMaxRate bound --load and --rate: below a load of
// 0.001 the bench measures an unloaded network (--unloaded measures that
// already), and a load of 1e-300 made a gap between messages past any
// duration (printed negative); the agents refuse a link_bps above 2^40.
const (
	benchMinLoad = 0.001
	benchMaxRate = 1 << 40
)

// checkIssues refuses a --rate and --duration in which the workload's
// Poisson arrivals (workload.Poisson: --load of the link over the
// workload's mean message size on the wire) would not issue one message
// on average: such a bench measured nothing, after building its hosts and
// measuring the unloaded latency (--rate 1kbit --duration 10ms ran 47 s
// before failing). It suggests the shortest duration and the lowest rate
// that would, rounded up (a gap of 49.6ns suggested 49ns, which still
// issued none), within --rate's 2^40 maximum, or says no rate would.
func (o *benchOpts) checkIssues() error {
	a, err := workload.Poisson(o.load, float64(o.rateBps), o.dist, workload.HomaDataOverhead{})
	if err != nil || a.Rate*o.duration.Seconds() >= 1 {
		return nil
	}
	// The gap in whole ns, rounded up. Load (benchMinLoad) and rate (1
	// bit/s at least) are bounded, so it fits a Duration (a 1,000,000-byte
	// workload at 0.001 of 1 bit/s: 8.4e18 ns); past half of one, it is
	// not suggested.
	ns := math.Ceil(1e9 / a.Rate)
	every, dur := "", ""
	if ns <= math.MaxInt64/2 {
		gap := roundUp(time.Duration(ns))
		every, dur = fmt.Sprintf(" every %v", gap), fmt.Sprintf("--duration %v or more", gap)
	} else {
		every, dur = " less than once in 146 years", "a higher --load or --rate, or smaller --workload messages"
	}
	rate := fmt.Sprintf(" (no --rate up to 2^40 bit/s issues one in %v)", o.duration)
	if need := float64(o.rateBps) / (a.Rate * o.duration.Seconds()); need <= benchMaxRate {
		rate = ", or --rate " + rateUp(need, benchMaxRate) + " or more"
	}
	return fmt.Errorf("--rate %s and --duration %v: at --load %v the workload %s (%.0f bytes a message on the wire, on average) issues one message%s, so none in %v: give %s%s",
		o.rate, o.duration, o.load, o.dist.Name(), o.dist.MeanWireBytes(workload.HomaDataOverhead{}), every, o.duration, dur, rate)
}

// rateUp writes bps rounded up to a whole number of gbit, mbit or kbit
// per second, as --rate takes it, in the coarsest unit whose rounding
// stays within max (bit, when none does).
func rateUp(bps, max float64) string {
	for _, u := range []struct {
		name string
		bps  float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if v := math.Ceil(bps / u.bps); (bps >= u.bps || u.bps <= 1e3) && v*u.bps <= max {
			return fmt.Sprintf("%.0f%s", v, u.name)
		}
	}
	return fmt.Sprintf("%.0fbit", math.Ceil(bps))
}

// roundUp rounds d up to two significant digits, for a bound to suggest.
func roundUp(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 100 {
		unit *= 10
	}
	return (d + unit - 1) / unit * unit
}

// interrupted is the error (exit 130) of a bench whose context ended
// (Ctrl-C, SIGINT or SIGTERM): Run has removed its namespaces (env ns);
// a bench that had begun its RPCs keeps its folder, marked partial
// (harness.MarkInterrupted), as homatest run and scenario keep theirs;
// one that had not has removed it.
func (o *benchOpts) interrupted(ctx context.Context) error {
	msg := "interrupted: the bench stopped before it finished"
	if o.env == envNS {
		msg += " and its namespaces were removed"
	}
	if !o.started {
		return &ExitError{Code: 130, Err: errors.New(msg + "; it had written nothing to keep")}
	}
	arts := &harness.Artifacts{Dir: o.artifacts}
	if err := arts.MarkInterrupted("this bench", context.Cause(ctx), "its report is missing; run the bench again"); err != nil {
		return &ExitError{Code: 130, Err: fmt.Errorf("%s (and marking %s failed: %v)", msg, o.artifacts, err)}
	}
	return &ExitError{Code: 130, Err: fmt.Errorf("%s; its partial folder %s is marked %s", msg, o.artifacts, harness.InterruptedFile)}
}

// benchInterrupted is bench's -o json report of a bench interrupted
// before it finished: the report (bench.Report) of what finished, the
// setup and the transports measured to the end (none when the first was
// cut short), with Artifacts the partial folder ("" when none was kept).
type benchInterrupted struct {
	*bench.Report
	// Verdict is "incomplete"; Interrupted says why and where, as
	// scenario run's -o json does (scenarioInterrupted).
	Verdict     string `json:"verdict"`
	Interrupted string `json:"interrupted"`
	// Running names the transport the interruption cut short ("" when
	// it came before the first began).
	Running string `json:"running,omitempty"`
}

// writeInterrupted writes to w what an interrupted bench finished: with
// -o json a benchInterrupted, with -o text the finished transports'
// tables after a line saying the bench was interrupted (when none
// finished, that line and the setup); nothing with -o html. err is the run's error (a
// *benchrun.InterruptedError once the bench had begun), ierr the exit
// error saying why and where (benchOpts.interrupted).
func (o *benchOpts) writeInterrupted(w io.Writer, err, ierr error) {
	rep := benchInterrupted{Verdict: "incomplete", Interrupted: ierr.Error()}
	var ie *benchrun.InterruptedError
	if errors.As(err, &ie) {
		rep.Report, rep.Running = ie.Report, ie.Running
	} else {
		rep.Report = o.bench(nil, nil).Setup()
	}
	rep.Artifacts = ""
	if o.started {
		rep.Artifacts = o.artifacts
	}
	switch o.output {
	case "json":
		jsonout.Write(w, rep)
	case "text":
		if len(rep.Transports) == 0 {
			// Nothing to tabulate, but what was being measured: the
			// setup (it printed nothing at all).
			where := "before the first transport began"
			if rep.Running != "" {
				where = "while " + rep.Running + " ran, before any transport finished"
			}
			fmt.Fprintf(w, "INCOMPLETE: interrupted %s: nothing was measured to the end; the setup:\n\n", where)
			rep.WriteSetup(w)
			if rep.Artifacts != "" {
				fmt.Fprintf(w, "\nrun folder: %s\n", rep.Artifacts)
			}
			return
		}
		fmt.Fprintf(w, "INCOMPLETE: interrupted while %s ran; the report of what finished before:\n\n", rep.Running)
		rep.WriteText(w)
	}
}

// notKeptUp is the error (exit 1) of a bench whose report says a transport
// did not keep up with the offered load (bench.Report.Saturated), nil
// otherwise. On emulated hosts (--env ns) a shortfall without a failed RPC
// is the machine's CPUs as much as the transport's (other jobs slow both),
// so it stays a WARNING in the report and the exit code does not depend on
// the machine's load; in the simulator nothing competes, and it is exit 1.
func notKeptUp(rep *bench.Report) error {
	if len(rep.Saturated) == 0 {
		return nil
	}
	if rep.Env != "sim" {
		failed := false
		for _, s := range rep.Transports {
			failed = failed || s.Errors > 0
		}
		if !failed {
			return nil
		}
	}
	short := true
	for _, s := range rep.Transports {
		short = short && (!s.Saturated || s.ShortRun)
	}
	if short {
		// No transport is to blame: the sizes drawn offered more than
		// the link carries.
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("the run was too short for workload %s: the sizes it drew offered more than the link carries, so %s could not keep up and the report compares nothing (see its WARNING); rerun with a longer --duration", rep.Workload, strings.Join(rep.Saturated, " and "))}
	}
	return &ExitError{Code: ExitViolations, Err: fmt.Errorf("%s did not keep up with the offered load: the report's slowdowns measure a backlog and its ratios do not compare the transports (see its WARNING)", strings.Join(rep.Saturated, " and "))}
}

// checkPlotFile checks --plot of bench and bench collective before they
// run: a .png or .svg name ("" none) that can be written, so that a bad
// one fails at once rather than after the whole run.
func checkPlotFile(plot string) error {
	if ext := strings.ToLower(filepath.Ext(plot)); plot != "" && ext != ".png" && ext != ".svg" {
		return fmt.Errorf("--plot %q: the file name must end in .png or .svg", plot)
	}
	return checkOutputFile("--plot", plot)
}
