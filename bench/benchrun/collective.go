package benchrun

import (
	"context"
	"fmt"
	"time"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// CollectivePort is the port a collective's messages go to (the
// background uses traffic.DefaultPort and the baseline the ports above it).
const CollectivePort = 5000

// Collective is homatest bench collective: an all-reduce over simulated
// hosts (sim.Collective), alone and beside background RPCs, per transport
// and background load.
type Collective struct {
	// Algorithm is sim.Ring or sim.HalvingDoubling; Bytes the all-reduce's
	// size, Iterations how many run back to back.
	Algorithm  string
	Bytes      int64
	Iterations int
	// Hosts, RateBps and MTU are the simulated hosts and links.
	Hosts   int
	RateBps netem.BitRate
	MTU     int
	// Transports are "homa" and/or "tcp"; Loads the background loads
	// (fractions of each link) to run each at.
	Transports []string
	Loads      []float64
	// Background are the background RPC sizes (the zero Dist: none),
	// Warmup how long they run before the collective starts, Unloaded the
	// unloaded RPCs per size of their baseline.
	Background workload.Dist
	Warmup     time.Duration
	Unloaded   int
	// Seed seeds the background and the switch.
	Seed uint64
	// Progress receives the progress.
	Progress Progress
}

// Run runs every transport at every load, each in a simulation of its
// own, and returns the report. Errors: a simulation's, or ctx's end.
func (o *Collective) Run(ctx context.Context) (*bench.CollectiveReport, error) {
	rep := &bench.CollectiveReport{Algorithm: o.Algorithm, Bytes: o.Bytes, Hosts: o.Hosts, RateBps: float64(o.RateBps),
		MTU: o.MTU, Iterations: o.Iterations, Seed: o.Seed}
	var buckets []bench.Bucket
	if o.Background.Name() != "" {
		rep.Background = o.Background.Name()
		buckets = bench.Buckets(o.Background, bench.DefaultBuckets)
		rep.Buckets = buckets
	}
	for _, tr := range o.Transports {
		for _, load := range o.Loads {
			pt, ideal, err := o.point(ctx, tr, load, buckets)
			if err != nil {
				if ctx.Err() != nil {
					rep.Finish()
					return nil, &CollectiveInterruptedError{Report: rep, Running: tr, Load: load, Err: err}
				}
				return nil, err
			}
			rep.Ideal = ideal
			rep.Points = append(rep.Points, pt)
		}
	}
	rep.Finish()
	return rep, nil
}

// CollectiveInterruptedError is Collective.Run's error when ctx ended
// before every point finished (it wraps ctx's error): Report holds the
// setup and the points measured to the end (none when the first was cut
// short), Running and Load the point cut short.
type CollectiveInterruptedError struct {
	Report  *bench.CollectiveReport
	Running string
	Load    float64
	Err     error
}

// Error returns the wrapped error's text.
func (e *CollectiveInterruptedError) Error() string { return e.Err.Error() }

// Unwrap returns ctx's error.
func (e *CollectiveInterruptedError) Unwrap() error { return e.Err }

// point runs transport tr's collective at background load in a
// simulation of its own, and returns it with the collective's ideal
// completion time.
func (o *Collective) point(ctx context.Context, tr string, load float64, buckets []bench.Bucket) (bench.CollectivePoint, time.Duration, error) {
	pt := bench.CollectivePoint{Transport: tr, Load: load}
	cost := sim.CostForLink(int64(o.RateBps))
	sm, err := sim.New(sim.Config{Seed: o.Seed, Link: netem.LinkConfig{Rate: o.RateBps, Priorities: 8}, Cost: &cost})
	if err != nil {
		return pt, 0, err
	}
	hosts, stop, err := NewSimHosts(sm, tr, o.Hosts, o.Seed, homa.ParamsForLink(int64(o.RateBps)), o.MTU)
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
		_, bl, ids, err = MeasureBaseline(tr, buckets, o.Unloaded, traffic.DefaultResponseBytes, o.Seed, o.Progress,
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
	o.Progress.Phase(fmt.Sprintf("%s: %s all-reduce of %d bytes × %d, background load %.2f", tr, o.Algorithm, o.Bytes, o.Iterations, load), 0)
	var bg *sim.Traffic
	if load > 0 {
		bg, err = sm.StartRPC(hosts, traffic.Config{Pattern: traffic.AllToAll, Requests: o.Background, Load: load,
			LinkBps: float64(o.RateBps), Duration: time.Hour, Seed: o.Seed, IDBase: ids})
		if err != nil {
			return pt, 0, err
		}
		sm.RunFor(o.Warmup)
	}
	c, err := sm.StartCollective(hosts, sim.CollectiveConfig{Algorithm: o.Algorithm, Bytes: o.Bytes, Port: CollectivePort, Iterations: o.Iterations})
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
		s, err := bench.Analyze(bench.Run{Transport: tr, Records: Records(res.Records), Baseline: bl,
			Elapsed: res.Elapsed, OfferedBps: res.OfferedBps, AchievedBps: res.AchievedBps}, buckets)
		if err != nil {
			return pt, 0, err
		}
		pt.Background = &s
	}
	wall := time.Since(start)
	o.Progress.Note(fmt.Sprintf("%s at load %.2f: simulated %v in %v of wall time (%s)",
		tr, load, sm.Now().Round(time.Microsecond), wall.Round(time.Millisecond), wallRate(wall, sm.Now())))
	return pt, c.Ideal(float64(o.RateBps)), nil
}
