package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/bench/benchrun"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// collectiveOpts are the flags of homatest bench collective.
type collectiveOpts struct {
	algorithm, size, rate, transports, background, loads, output, plot string
	hosts, mtu, iterations, unloaded                                   int
	warmup                                                             time.Duration
	seed                                                               uint64

	// Set by check.
	bytes   int64
	rateBps netem.BitRate
	trans   []string
	bg      workload.Dist
	loadsF  []float64
}

func newCollectiveCmd() *cobra.Command {
	o := &collectiveOpts{}
	cmd := &cobra.Command{
		Use:   "collective",
		Short: "Simulate an AI cluster's all-reduce over Homa and TCP, alone and beside background RPCs",
		Long: `Collective runs an all-reduce of --size bytes over --hosts simulated hosts
under one switch (package sim: links of --rate, 8 strict-priority queues,
MTU --mtu; the hosts pay 2.5 µs per packet on 4 cores per 10 Gbit/s), in
lockstep steps: a step starts when every transfer of the step before has
arrived. --algorithm ring is ring all-reduce (2(N-1) steps, each host
sending a 1/N chunk to the next), halving-doubling is recursive halving
then doubling (hosts a power of two). Transfers above 1 MB (Homa's largest
message) go as several messages at once. "homa" is the reference
implementation (HomaModule's parameters for the rate), "tcp" gVisor's
netstack TCP with the tcp agent's semantics (one connection per pair).

For every transport and every load of --loads the collective runs
--iterations times in a fresh simulation (same seed); with a load above 0,
background RPCs of --background sizes run all-to-all at that fraction of
every link (Poisson arrivals; their unloaded latency measured first, as
homatest bench does), starting --warmup before the collective and stopping
when it ends.

The report gives, per transport and load, the mean completion time, its
ratio to the ideal (each host's share of the bytes at the link rate) and to
the same transport without background, and the background RPCs' count and
p99 slowdown: of their smallest size bucket (short messages) and overall.
--plot draws completion time against background load (PNG or SVG).

Exit codes: 0 done, 2 a bad flag, a simulation that failed or a --plot
that could not be written (the report is then not printed), 130
interrupted (Ctrl-C, SIGINT or SIGTERM): the points that finished are
reported (-o text: after a line "INCOMPLETE: interrupted while homa ran at
background load 0.40"; -o json: the report with verdict "incomplete",
"interrupted" saying why, "running" and "running_load" the point cut
short), no plot is written.

The defaults (32 MB over 8 hosts at 100 Gbit/s, loads 0-0.6, both
transports) take many minutes of wall time here (TCP at the high loads
most); the first example below takes about 15 seconds on a 2-core machine
beside other jobs.`,
		Example: `  homatest bench collective --rate 100gbit --hosts 8 --size 2MB --background w4 --loads 0,0.3 --iterations 1 --plot coll.png
  homatest bench collective --algorithm halving-doubling --hosts 16 --size 64MB --mtu 9000 -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageErr(err)
			}
			rep, err := o.run(cmd.Context(), newBenchProgress(cmd.ErrOrStderr(), o.output == "json"))
			if err != nil && cmd.Context().Err() != nil {
				// Main's context ended (SIGINT, SIGTERM): the points that
				// finished are reported, the one cut short named.
				return o.writeInterrupted(cmd.OutOrStdout(), err)
			}
			if err != nil {
				return usageErr(err)
			}
			if o.output == "json" {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			if o.plot != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "\nplot: %s\n", o.plot)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.algorithm, "algorithm", sim.Ring, "all-reduce algorithm: ring or halving-doubling")
	f.StringVar(&o.size, "size", "32MB", `bytes every host all-reduces ("64MB", "1GB", "500KB" are decimal; "64MiB" binary; or a number); at most what fits in memory: about 5× its largest step (ring: the size; halving-doubling: hosts/2 × the size)`)
	f.IntVar(&o.hosts, "hosts", 8, "hosts taking part (2..144; a power of two for halving-doubling)")
	f.StringVar(&o.rate, "rate", "100gbit", `link rate of every switch port ("100gbit", "25gbit", bit/s)`)
	f.IntVar(&o.mtu, "mtu", 1500, "MTU in bytes of every link (576..9000)")
	f.StringVar(&o.transports, "transport", "homa,tcp", "transports to run, comma-separated: homa, tcp")
	f.StringVar(&o.background, "background", "w4", "background RPC sizes: w1..w5, a size in bytes, or none")
	f.StringVar(&o.loads, "loads", "0,0.2,0.4,0.6", "background loads to run, comma-separated fractions in [0, 1) of each link")
	f.IntVar(&o.iterations, "iterations", 2, "all-reduces back to back per transport and load")
	f.DurationVar(&o.warmup, "warmup", time.Millisecond, "how long the background runs before the collective starts")
	f.IntVar(&o.unloaded, "unloaded", 5, "unloaded RPCs per measured size for the background's baseline")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the background's sizes and arrivals and of the switch")
	outputVar(f, &o.output, "the completion times by transport and load", "text", "json")
	f.StringVar(&o.plot, "plot", "", "write the completion time against load plot to this .png or .svg file")
	return cmd
}

// check validates the flags and fills the parsed fields.
func (o *collectiveOpts) check() error {
	var err error
	if o.bytes, err = parseBytes(o.size); err != nil {
		return fmt.Errorf("--size: %v", err)
	}
	if o.rateBps, err = netem.ParseRate(o.rate); err != nil {
		return fmt.Errorf("--rate: %s", strings.TrimPrefix(err.Error(), "netem: "))
	}
	switch {
	case o.rateBps == 0:
		return fmt.Errorf("--rate %q: give a rate above 0 (e.g. 100gbit)", o.rate)
	case o.algorithm != sim.Ring && o.algorithm != sim.HalvingDoubling:
		return fmt.Errorf("--algorithm %q: want ring or halving-doubling", o.algorithm)
	case o.hosts < 2 || o.hosts > 144:
		return fmt.Errorf("--hosts %d: want 2..144", o.hosts)
	case o.algorithm == sim.HalvingDoubling && o.hosts&(o.hosts-1) != 0:
		return fmt.Errorf("--hosts %d: halving-doubling needs a power of two (8, 16, 32, ...)", o.hosts)
	case o.bytes < int64(o.hosts):
		return fmt.Errorf("--size %s: want at least one byte per host", o.size)
	case o.mtu < 576 || o.mtu > 9000:
		return fmt.Errorf("--mtu %d: want 576..9000", o.mtu)
	case o.iterations < 1:
		return fmt.Errorf("--iterations %d: want at least 1", o.iterations)
	case o.warmup < 0:
		return fmt.Errorf("--warmup %v: want a duration of 0 or more", o.warmup)
	case o.unloaded < 1:
		return fmt.Errorf("--unloaded %d: want at least 1", o.unloaded)
	}
	if err := o.checkMemory(); err != nil {
		return err
	}
	if err := checkPlotFile(o.plot); err != nil {
		return err
	}
	o.trans = nil
	for _, t := range strings.Split(o.transports, ",") {
		t = strings.TrimSpace(t)
		if t != "homa" && t != "tcp" || slices.Contains(o.trans, t) {
			return fmt.Errorf("--transport %q: want homa, tcp or homa,tcp", o.transports)
		}
		o.trans = append(o.trans, t)
	}
	o.loadsF = nil
	for _, l := range strings.Split(o.loads, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(l), 64)
		if err != nil || !(v >= 0 && v < 1) {
			return fmt.Errorf("--loads %q: %q is not a fraction in [0, 1)", o.loads, l)
		}
		o.loadsF = append(o.loadsF, v)
	}
	o.bg = workload.Dist{}
	if o.background != "none" {
		if o.bg, err = workload.Parse(o.background); err != nil {
			return fmt.Errorf("--background %q: %s (or none)", o.background, strings.TrimPrefix(err.Error(), "workload: "))
		}
	} else if slices.ContainsFunc(o.loadsF, func(v float64) bool { return v > 0 }) {
		return fmt.Errorf("--loads %q with --background none: give only 0, or a background workload", o.loads)
	}
	return nil
}

// collectiveMemPerByte is the memory a collective takes per byte of its
// largest step (sim.CollectiveStepBytes): the step's messages, their
// packets in flight and the receivers' copies. Measured (Go's peak RSS,
// 8 hosts, homa): ring 64 MB 323 MB, ring 256 MB 1065 MB, halving-doubling
// 64 MB (a 256 MB first step) 1031 MB: 4-5x the step, tcp less.
const collectiveMemPerByte = 5

// availableMemory returns the bytes this process can still allocate: the
// kernel's MemAvailable, or less under a cgroup v2 memory limit; false
// when unknown (then the size is not checked). A variable for tests.
var availableMemory = func() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	var avail int64 = -1
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemAvailable:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				avail = kb << 10
			}
		}
	}
	if avail < 0 {
		return 0, false
	}
	limit, err1 := os.ReadFile("/sys/fs/cgroup/memory.max")
	used, err2 := os.ReadFile("/sys/fs/cgroup/memory.current")
	if err1 == nil && err2 == nil {
		l, e1 := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64) // "max": no limit
		u, e2 := strconv.ParseInt(strings.TrimSpace(string(used)), 10, 64)
		if e1 == nil && e2 == nil {
			// memory.current counts the page cache, which the kernel
			// reclaims before it refuses an allocation (a CI container
			// after a build holds much of it): not in use.
			stat, _ := os.ReadFile("/sys/fs/cgroup/memory.stat")
			u -= cgroupFileBytes(stat)
			avail = min(avail, max(0, l-u))
		}
	}
	return avail, true
}

// cgroupFileBytes returns the page cache a cgroup v2 memory.stat b
// charges its cgroup (its "file" line, bytes), 0 when it has none.
func cgroupFileBytes(b []byte) int64 {
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "file" {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return n
			}
		}
	}
	return 0
}

// checkMemory refuses a --size whose collective would not fit in the
// memory this machine has available (collectiveMemPerByte times its
// largest step), naming the largest size that would.
func (o *collectiveOpts) checkMemory() error {
	avail, ok := availableMemory()
	if !ok {
		return nil
	}
	step := sim.CollectiveStepBytes(o.algorithm, o.hosts, o.bytes)
	need := float64(step) * collectiveMemPerByte
	if need <= float64(avail) {
		return nil
	}
	// The largest size whose step fits: ring's step is the size,
	// halving-doubling's hosts/2 times it.
	most := float64(avail) / collectiveMemPerByte
	if o.algorithm == sim.HalvingDoubling {
		most = most * 2 / float64(o.hosts)
	}
	return fmt.Errorf("--size %s: this %s all-reduce over %d hosts needs about %s of memory (%d× the %s its largest step sends at once) and this machine has %s available: give --size %s or less",
		o.size, o.algorithm, o.hosts, gbytes(need), collectiveMemPerByte, gbytes(float64(step)), gbytes(float64(avail)), sizeDown(most))
}

// gbytes writes a byte count in decimal units, e.g. "23.9 GB".
func gbytes(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.1f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", b/1e9)
	default:
		return fmt.Sprintf("%.0f MB", b/1e6)
	}
}

// sizeDown writes b, rounded down to whole MB, as a --size value.
func sizeDown(b float64) string { return fmt.Sprintf("%dMB", int64(b/1e6)) }

// parseBytes reads a size: a number of bytes with an optional unit, KB,
// MB, GB (decimal) or KiB, MiB, GiB (binary).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 1) || v*float64(mult) > 1<<40 {
		return 0, fmt.Errorf("%q: want a size such as 64MB, 64MiB or 1000000 (1 B to 1 TiB)", s)
	}
	return int64(v * float64(mult)), nil
}

// collectiveInterrupted is bench collective's -o json report of a run
// interrupted before it finished: the report of the points measured to
// the end (bench.CollectiveReport; none when the first was cut short).
type collectiveInterrupted struct {
	*bench.CollectiveReport
	// Verdict is "incomplete"; Interrupted says why, as bench's -o json
	// does (benchInterrupted).
	Verdict     string `json:"verdict"`
	Interrupted string `json:"interrupted"`
	// Running and RunningLoad are the point the interruption cut short.
	Running     string  `json:"running"`
	RunningLoad float64 `json:"running_load"`
}

// writeInterrupted writes to w what an interrupted collective finished
// (err is o.run's error, a *benchrun.CollectiveInterruptedError once a
// point began): with -o json a collectiveInterrupted, with -o text the
// finished points' table after a line saying where it was interrupted.
// It returns the exit error (130).
func (o *collectiveOpts) writeInterrupted(w io.Writer, err error) error {
	var ie *benchrun.CollectiveInterruptedError
	if !errors.As(err, &ie) {
		return &ExitError{Code: 130, Err: errors.New("interrupted: the collective bench stopped before its first point began; nothing was measured")}
	}
	where := fmt.Sprintf("while %s ran at background load %.2f", ie.Running, ie.Load)
	msg := fmt.Sprintf("interrupted %s: the collective bench stopped before it finished; %d of %d points finished and are reported (no plot)",
		where, len(ie.Report.Points), len(o.trans)*len(o.loadsF))
	if len(ie.Report.Points) == 0 {
		msg = fmt.Sprintf("interrupted %s: the collective bench stopped before any point finished; nothing was measured", where)
	}
	switch o.output {
	case "json":
		jsonout.Write(w, collectiveInterrupted{CollectiveReport: ie.Report, Verdict: "incomplete", Interrupted: msg, Running: ie.Running, RunningLoad: ie.Load})
	default:
		if len(ie.Report.Points) == 0 {
			fmt.Fprintf(w, "INCOMPLETE: interrupted %s, before any point finished: nothing was measured to the end\n", where)
		} else {
			fmt.Fprintf(w, "INCOMPLETE: interrupted %s; the report of what finished before:\n\n", where)
			ie.Report.WriteText(w)
		}
	}
	return &ExitError{Code: 130, Err: errors.New(msg)}
}

// run runs the collective (benchrun.Collective.Run) and writes the plot.
func (o *collectiveOpts) run(ctx context.Context, prog *benchProgress) (*bench.CollectiveReport, error) {
	c := &benchrun.Collective{Algorithm: o.algorithm, Bytes: o.bytes, Hosts: o.hosts, RateBps: o.rateBps, MTU: o.mtu,
		Iterations: o.iterations, Transports: o.trans, Background: o.bg, Loads: o.loadsF, Warmup: o.warmup,
		Unloaded: o.unloaded, Seed: o.seed, Progress: prog}
	rep, err := c.Run(ctx)
	prog.done()
	if err != nil {
		return nil, err
	}
	if o.plot != "" {
		if err := rep.Plot(o.plot); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
