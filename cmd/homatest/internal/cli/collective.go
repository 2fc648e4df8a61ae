package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
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

// collectivePort is the port the collective's messages go to (the
// background uses traffic.DefaultPort and the baseline the ports above it).
const collectivePort = 5000

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

Exit codes: 0 done, 2 usage error.`,
		Example: `  homatest bench collective --rate 100gbit --hosts 8 --size 32MB --background w4 --loads 0,0.2,0.4,0.6 --plot coll.png
  homatest bench collective --algorithm halving-doubling --hosts 16 --size 64MB --mtu 9000 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageErr(err)
			}
			stop := harness.HandleSignals()
			defer stop()
			rep, err := o.run(cmd.Context(), newBenchProgress(cmd.ErrOrStderr(), o.output == "json"))
			if err != nil && cmd.Context().Err() != nil {
				return &ExitError{Code: 130, Err: errors.New("interrupted")}
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
	f.StringVar(&o.size, "size", "32MB", `bytes every host all-reduces ("64MB", "1GB", "500KB" are decimal; "64MiB" binary; or a number)`)
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
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
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
		return fmt.Errorf("--rate: %v", err)
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
	case o.output != "text" && o.output != "json":
		return fmt.Errorf("-o %q: want text or json", o.output)
	}
	if ext := strings.ToLower(filepath.Ext(o.plot)); o.plot != "" && ext != ".png" && ext != ".svg" {
		return fmt.Errorf("--plot %q: the file name must end in .png or .svg", o.plot)
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
			return fmt.Errorf("--background: %v (or none)", err)
		}
	} else if slices.ContainsFunc(o.loadsF, func(v float64) bool { return v > 0 }) {
		return fmt.Errorf("--loads %q with --background none: give only 0, or a background workload", o.loads)
	}
	return nil
}

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

// run runs every transport at every load and returns the report (and
// writes the plot).
func (o *collectiveOpts) run(ctx context.Context, prog *benchProgress) (*bench.CollectiveReport, error) {
	rep := &bench.CollectiveReport{Algorithm: o.algorithm, Bytes: o.bytes, Hosts: o.hosts, RateBps: float64(o.rateBps),
		MTU: o.mtu, Iterations: o.iterations, Seed: o.seed}
	var buckets []bench.Bucket
	if o.background != "none" {
		rep.Background = o.bg.Name()
		buckets = bench.Buckets(o.bg, bench.DefaultBuckets)
		rep.Buckets = buckets
	}
	for _, tr := range o.trans {
		for _, load := range o.loadsF {
			pt, ideal, err := o.point(ctx, tr, load, buckets, prog)
			if err != nil {
				return nil, err
			}
			rep.Ideal = ideal
			rep.Points = append(rep.Points, pt)
		}
	}
	prog.done()
	rep.Finish()
	if o.plot != "" {
		if err := rep.Plot(o.plot); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// point runs transport tr's collective at background load in a
// simulation of its own, and returns it with the collective's ideal
// completion time.
func (o *collectiveOpts) point(ctx context.Context, tr string, load float64, buckets []bench.Bucket, prog *benchProgress) (bench.CollectivePoint, time.Duration, error) {
	pt := bench.CollectivePoint{Transport: tr, Load: load}
	cost := sim.CostForLink(int64(o.rateBps))
	sm, err := sim.New(sim.Config{Seed: o.seed, Link: netem.LinkConfig{Rate: o.rateBps, Priorities: 8}, Cost: &cost})
	if err != nil {
		return pt, 0, err
	}
	hosts, stop, err := newSimHosts(sm, tr, o.hosts, o.seed, homa.ParamsForLink(int64(o.rateBps)), o.mtu)
	defer stop()
	if err != nil {
		return pt, 0, err
	}
	start := time.Now()
	runUntil := func(done func() bool) error {
		n := 0
		sm.RunWhile(func() bool {
			if n++; n%65536 == 0 && ctx.Err() != nil {
				return false
			}
			return !done()
		})
		return ctx.Err()
	}
	var bl bench.Baseline
	var ids uint64
	if load > 0 {
		pair := []sim.RPCHost{hosts[0], hosts[len(hosts)-1]}
		_, bl, ids, err = measureBaseline(tr, buckets, o.unloaded, traffic.DefaultResponseBytes, o.seed, prog,
			func(cfg traffic.Config, _ bool) (*traffic.Result, error) {
				t, err := sm.StartRPC(pair, cfg)
				if err != nil {
					return nil, err
				}
				err = runUntil(t.Done)
				return t.Result(), err
			})
		if err != nil {
			return pt, 0, err
		}
	}
	prog.phase(fmt.Sprintf("%s: %s all-reduce of %d bytes × %d, background load %.2f", tr, o.algorithm, o.bytes, o.iterations, load), 0)
	var bg *sim.Traffic
	if load > 0 {
		bg, err = sm.StartRPC(hosts, traffic.Config{Pattern: traffic.AllToAll, Requests: o.bg, Load: load,
			LinkBps: float64(o.rateBps), Duration: time.Hour, Seed: o.seed, IDBase: ids})
		if err != nil {
			return pt, 0, err
		}
		sm.RunFor(o.warmup)
	}
	c, err := sm.StartCollective(hosts, sim.CollectiveConfig{Algorithm: o.algorithm, Bytes: o.bytes, Port: collectivePort, Iterations: o.iterations})
	if err != nil {
		return pt, 0, err
	}
	if err := runUntil(c.Done); err != nil {
		return pt, 0, err
	}
	pt.Times, pt.Err = c.Times(), c.Err()
	if bg != nil {
		bg.Stop()
		if err := runUntil(bg.Done); err != nil {
			return pt, 0, err
		}
		res := bg.Result()
		s, err := bench.Analyze(bench.Run{Transport: tr, Records: benchRecords(res.Records), Baseline: bl,
			Elapsed: res.Elapsed, OfferedBps: res.OfferedBps, AchievedBps: res.AchievedBps}, buckets)
		if err != nil {
			return pt, 0, err
		}
		pt.Background = &s
	}
	wall := time.Since(start)
	prog.note(fmt.Sprintf("%s at load %.2f: simulated %v in %v of wall time (%.1f s per simulated second)",
		tr, load, sm.Now().Round(time.Microsecond), wall.Round(time.Millisecond), wall.Seconds()/max(sm.Now().Seconds(), 1e-9)))
	return pt, c.Ideal(float64(o.rateBps)), nil
}
