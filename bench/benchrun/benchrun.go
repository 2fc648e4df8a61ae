// Package benchrun runs homatest bench's measurement: the hosts (network
// namespaces behind netem's switch with each transport's agents, or the
// simulator), each transport's unloaded baseline and loaded workload, and
// the slowdown analysis (package bench) of what they recorded. The CLI
// parses flags into a Config and prints the report.
package benchrun

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/sim/simtcp"
)

// Environments of a bench.
const (
	// EnvNS: hosts in network namespaces behind netem's switch, each
	// transport's agents real processes (root).
	EnvNS = "ns"
	// EnvSim: hosts in the simulator on virtual time.
	EnvSim = "sim"
)

// RefTick is the reference implementation's timer tick in a namespace
// bench: several user-space hosts and the switch share this machine's
// CPUs, and HomaModule's timer ratios at a shorter tick turn queueing at
// these rates into RESEND storms.
const RefTick = 50 * time.Millisecond

// Progress receives a bench's progress (homatest bench draws it on
// standard error).
type Progress interface {
	// Phase starts a phase described by desc with total steps (0: open).
	Phase(desc string, total int)
	// Set and SetMax report done steps (and a new total).
	Set(done int)
	SetMax(done, total int)
	// Note prints a line of its own.
	Note(line string)
}

// Config is one bench: the flags of homatest bench, parsed.
type Config struct {
	// Env is EnvNS or EnvSim.
	Env string
	// Hosts is the number of hosts; RateBps every link's rate; RTT the
	// round trip the Homa parameters are sized for (EnvNS).
	Hosts   int
	RateBps netem.BitRate
	RTT     time.Duration
	// Dist is the request sizes, Load the offered load (fraction of each
	// link), Duration the loaded run's length, Buckets the number of size
	// buckets, Unloaded the unloaded RPCs per baseline size, Response the
	// response bytes, Seed the seed of sizes, arrivals and the switch.
	Dist     workload.Dist
	Load     float64
	Duration time.Duration
	Buckets  int
	Unloaded int
	Response int
	Seed     uint64
	// Transports are "homa" and/or "tcp", in the order they run.
	Transports []string
	// Homa and TCP are the transports' agents (EnvNS); HomaOver are
	// parameter overrides for Homa (--param).
	Homa, TCP *agent.Manifest
	HomaOver  agent.Params
	// Artifacts is the run folder.
	Artifacts *harness.Artifacts
	// Progress receives the bench's progress.
	Progress Progress
}

// Bench is a bench in progress (Run).
type Bench struct {
	Config
	started bool
}

// Started reports whether a transport's first RPC was issued (a failed
// bench's run folder then holds something).
func (b *Bench) Started() bool { return b.started }

// HomaParams are the Homa parameters the bench asks for: in namespaces
// the reference implementation's RefTick and unscheduled bytes and
// max_incoming sized for RateBps and RTT (HomaModule's defaults are for a
// 25 Gbit/s network with a few µs round trips: at 100 Mbit/s their 40 KB
// of unscheduled bytes per message and 400 KB of grants overflow the
// switch buffers in bursts; homa.ParamsForLink's, scaled for µs round
// trips, starve these ms ones), then the manifest's params, then
// HomaOver. In the simulator only link_bps: homa.ParamsForLink and
// HomaModule's 1 ms tick, since simulated hosts keep time exactly. The
// defaults reach only an implementation that declares them (the built-in
// ref: agent.Manifest.HelloParams).
func (b *Bench) HomaParams() agent.Params {
	d := agent.Params{"link_bps": int64(b.RateBps)}
	if b.Env != EnvSim {
		rttBytes := max(int64(1500), int64(float64(b.RateBps)*b.RTT.Seconds()/8))
		d["tick_ns"] = RefTick.Nanoseconds()
		d["unsched_bytes"] = rttBytes
		d["max_incoming"] = 8 * rttBytes
	}
	return b.Homa.HelloParams(d, b.HomaOver)
}

// InterruptedError is Run's error when ctx ended before the bench
// finished (it wraps ctx's error): Report holds the setup and the
// transports that finished before (none when the first was cut short),
// with their warnings; Running names the transport cut short ("" when
// the interruption came before the first began). Nothing of it is
// written as report.json.
type InterruptedError struct {
	Report  *bench.Report
	Running string
	Err     error
}

func (e *InterruptedError) Error() string { return e.Err.Error() }

// Unwrap returns the run's error (context.Canceled or a wrapping of it).
func (e *InterruptedError) Unwrap() error { return e.Err }

// Run builds the topology (or the simulation), runs every transport and
// returns the report, also written as report.json in the run folder.
// Errors: the topology, an agent, a run, or ctx's end (then an
// *InterruptedError with what finished).
func (b *Bench) Run(ctx context.Context) (*bench.Report, error) {
	rep := b.Setup()
	buckets := rep.Buckets
	var topo *harness.Topology
	var fab *netem.SwitchFabric
	if b.Env != EnvSim {
		fab = &netem.SwitchFabric{Link: netem.LinkConfig{Rate: b.RateBps, Priorities: 8}, Seed: b.Seed}
		bctx, cancel := context.WithTimeout(ctx, timescale.D(30*time.Second))
		var err error
		topo, err = harness.Build(bctx, harness.Config{Hosts: b.Hosts, Fabric: fab, Artifacts: b.Artifacts})
		cancel()
		if err != nil {
			return nil, interrupted(ctx, rep, "", err)
		}
		defer topo.Close()
	}
	for _, tr := range b.Transports {
		if tr == "homa" {
			rep.Impl, rep.Params = b.Homa.Name, b.HomaParams()
		}
		var s bench.Summary
		var err error
		if b.Env == EnvSim {
			s, err = b.runSim(ctx, tr, b.Artifacts, buckets)
		} else {
			s, err = b.runTransport(ctx, topo, fab, tr, buckets)
		}
		if err != nil {
			return nil, interrupted(ctx, rep, tr, err)
		}
		if s.Count == 0 {
			why := ""
			if s.FirstError != "" {
				why = fmt.Sprintf(" (%d failed, first: %s)", s.Errors, s.FirstError)
			}
			return nil, fmt.Errorf("no %s RPC completed in the %v loaded run%s: there is nothing to compute slowdowns from; make the run longer (--duration) or the load higher (--load)", tr, b.Duration, why)
		}
		rep.Transports = append(rep.Transports, s)
	}
	rep.Warn()
	return rep, b.Artifacts.WriteJSON("report.json", rep)
}

// Setup is the report of the bench before any transport ran: its
// workload, load, rate, hosts, seed, buckets, run folder and, in the
// simulator, Env.
func (b *Bench) Setup() *bench.Report {
	rep := &bench.Report{Workload: b.Dist.Name(), Load: b.Load, RateBps: float64(b.RateBps), Hosts: b.Hosts,
		Seed: b.Seed, Buckets: bench.Buckets(b.Dist, b.Buckets), Transports: []bench.Summary{}}
	if b.Artifacts != nil {
		rep.Artifacts = b.Artifacts.Dir
	}
	if b.Env == EnvSim {
		rep.Env = EnvSim
	}
	return rep
}

// interrupted is Run's error err, met while transport running ran:
// an *InterruptedError with rep (warned) when ctx has ended, else err.
func interrupted(ctx context.Context, rep *bench.Report, running string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	rep.Warn()
	return &InterruptedError{Report: rep, Running: running, Err: err}
}

// runTraffic runs one traffic config on the bench's hosts (all of them, or
// only the first and the last with pair) and returns its result.
type runTraffic func(cfg traffic.Config, pair bool) (*traffic.Result, error)

// runTransport starts tr's agents on every host, measures the unloaded
// baseline, runs the loaded workload, stops the agents and analyses the
// run.
func (b *Bench) runTransport(ctx context.Context, topo *harness.Topology, fab *netem.SwitchFabric, tr string, buckets []bench.Bucket) (bench.Summary, error) {
	m, params := b.TCP, agent.Params(nil)
	if tr == "homa" {
		m, params = b.Homa, b.HomaParams()
	}
	sw0 := fab.Stats()
	ags, err := startBenchAgents(ctx, topo, m, params)
	if err != nil {
		return bench.Summary{}, err
	}
	defer ags.close()
	eps := ags.eps
	pair := []traffic.Endpoint{eps[0], eps[len(eps)-1]}
	return b.measure(tr, buckets, topo.Artifacts, func(cfg traffic.Config, two bool) (*traffic.Result, error) {
		cfg.Hosts = eps
		if two {
			cfg.Hosts = pair
		}
		return traffic.Run(ctx, cfg)
	}, func(st []agent.Stats) map[string]uint64 { return counters(st, sw0, fab.Stats()) }, nil)
}

// wallRate says how fast a simulation ran: the wall time it took per
// simulated second, to two significant digits ("0.067 s per simulated
// second", "12 s per simulated second"; it printed "0.0 s" for any run
// faster than 20 times real time), or that no simulated time passed.
func wallRate(wall, simulated time.Duration) string {
	if simulated <= 0 {
		return "no simulated time passed"
	}
	r := wall.Seconds() / simulated.Seconds()
	switch {
	case r < 0.001:
		return "under 0.001 s per simulated second"
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 0, 64) + " s per simulated second"
	}
	return strconv.FormatFloat(r, 'g', 2, 64) + " s per simulated second"
}

// runSim runs transport tr on simulated hosts (package sim on virtual
// time behind netem's switch core with the bench's links and seed: the
// reference implementation's protocol state machine for homa, gVisor's
// netstack for tcp, each host paying sim.CostForLink per packet): the
// same baseline and loaded runs as runTransport, in one simulation of its
// own. It notes the wall time per simulated second (Progress.Note).
func (b *Bench) runSim(ctx context.Context, tr string, arts *harness.Artifacts, buckets []bench.Bucket) (bench.Summary, error) {
	cost := sim.CostForLink(int64(b.RateBps))
	sm, err := sim.New(sim.Config{Seed: b.Seed, Link: netem.LinkConfig{Rate: b.RateBps, Priorities: 8}, Cost: &cost})
	if err != nil {
		return bench.Summary{}, err
	}
	hosts, closeHosts, err := b.simHosts(sm, tr)
	if err != nil {
		return bench.Summary{}, err
	}
	defer closeHosts()
	pair := []sim.RPCHost{hosts[0], hosts[len(hosts)-1]}
	var cpu *bench.HostCPU
	start := time.Now()
	defer func() {
		wall := time.Since(start)
		b.Progress.Note(fmt.Sprintf("%s: simulated %v in %v of wall time (%s)",
			tr, sm.Now().Round(time.Millisecond), wall.Round(time.Millisecond), wallRate(wall, sm.Now())))
	}()
	return b.measure(tr, buckets, arts, func(cfg traffic.Config, two bool) (*traffic.Result, error) {
		hs := hosts
		if two {
			hs = pair
		}
		before, t0 := cpuStats(sm), sm.Now()
		t, err := sm.StartRPC(hs, cfg)
		if err != nil {
			return nil, err
		}
		n := 0
		sm.RunWhile(func() bool {
			if n++; n%65536 == 0 && ctx.Err() != nil {
				return false
			}
			return !t.Done()
		})
		res := t.Result()
		if !two {
			cpu = busiestCPU(sm, before, sm.Now()-t0, len(res.Records))
		}
		return res, ctx.Err()
	}, func(st []agent.Stats) map[string]uint64 { return counters(st, netem.Stats{}, sm.Switch()) }, &cpu)
}

// cpuStats returns every host's processing counters (sim.Host.CPU).
func cpuStats(sm *sim.Sim) []sim.CPUStats {
	var st []sim.CPUStats
	for _, h := range sm.Hosts() {
		st = append(st, h.CPU())
	}
	return st
}

// busiestCPU returns the modelled processing of sm's busiest host in a
// run of span that issued rpcs RPCs, from the counters before it (nil:
// the hosts' processing costs nothing). The last host is the server.
func busiestCPU(sm *sim.Sim, before []sim.CPUStats, span time.Duration, rpcs int) *bench.HostCPU {
	var best *bench.HostCPU
	hosts := sm.Hosts()
	for i, h := range hosts {
		c, now := h.Cost(), h.CPU()
		if c.PerPacket <= 0 || c.Cores <= 0 || span <= 0 || i >= len(before) {
			continue
		}
		pkts := now.Packets - before[i].Packets
		busy := float64(now.Busy-before[i].Busy) / float64(c.Cores) / float64(span)
		if best != nil && busy <= best.Busy {
			continue
		}
		best = &bench.HostCPU{Host: h.Name(), Server: i == len(hosts)-1, Busy: busy,
			PacketsPerSec: float64(pkts) / span.Seconds(), CapacityPerSec: float64(c.Cores) * float64(time.Second) / float64(c.PerPacket),
			PerPacket: c.PerPacket, Cores: c.Cores, PacketsPerRPC: float64(pkts) / float64(max(rpcs, 1)), MaxWait: now.MaxWait}
	}
	return best
}

// simHosts adds the bench's hosts running transport tr to sm (NewSimHosts).
func (b *Bench) simHosts(sm *sim.Sim, tr string) ([]sim.RPCHost, func(), error) {
	var p homa.Params
	if tr == "homa" {
		var err error
		if p, err = agent.RefParams(b.HomaParams()); err != nil {
			return nil, func() {}, err
		}
	}
	return NewSimHosts(sm, tr, b.Hosts, b.Seed, p, 0)
}

// NewSimHosts adds n hosts running transport tr to sm (h1..hN at
// harness.Addr4): the reference implementation with params p for homa,
// netstack for tcp (seeded from seed and the host's number), with an MTU
// of mtu bytes (0: 1500; homa takes it into p). It returns them with the
// function that stops them.
func NewSimHosts(sm *sim.Sim, tr string, n int, seed uint64, p homa.Params, mtu int) ([]sim.RPCHost, func(), error) {
	var hosts []sim.RPCHost
	var tcps []*simtcp.Host
	stop := func() {
		for _, h := range tcps {
			h.Close()
		}
	}
	if mtu > 0 {
		p.MTU = mtu
	}
	for i := 1; i <= n; i++ {
		name, addr := fmt.Sprintf("h%d", i), harness.Addr4(i)
		if tr == "homa" {
			h, err := sm.AddHost(sim.HostConfig{Name: name, Addr: addr, Params: p})
			if err != nil {
				return nil, stop, err
			}
			hosts = append(hosts, sim.HomaRPC(h))
			continue
		}
		h, err := simtcp.Add(sm, name, addr, simtcp.Config{Seed: seed*1000003 + uint64(i), MTU: mtu})
		if err != nil {
			stop()
			return nil, stop, err
		}
		tcps = append(tcps, h)
		hosts = append(hosts, h)
	}
	return hosts, stop, nil
}

// measure measures transport tr's unloaded baseline and runs the loaded
// workload through run, writes their records into arts and analyses
// them, with the counters counters returns for the agents' stats.
//
// cpu, when not nil, points to what the loaded run found of the busiest
// host's modelled processing (simulated hosts), read after it.
func (b *Bench) measure(tr string, buckets []bench.Bucket, arts *harness.Artifacts, run runTraffic, counters func([]agent.Stats) map[string]uint64, cpu **bench.HostCPU) (bench.Summary, error) {
	b.started = true
	base, bl, ids, err := MeasureBaseline(tr, buckets, b.Unloaded, b.Response, b.Seed, b.Progress, run)
	if err != nil {
		return bench.Summary{}, err
	}

	b.Progress.Phase(fmt.Sprintf("%s: %s at load %.2f for %v", tr, b.Dist.Name(), b.Load, b.Duration), 0)
	res, err := run(traffic.Config{Port: traffic.DefaultPort, Requests: b.Dist,
		ResponseBytes: b.Response, Load: b.Load, LinkBps: float64(b.RateBps), Duration: b.Duration,
		Seed: b.Seed, IDBase: ids, Progress: func(done, total int) { b.Progress.SetMax(done, total) }}, false)
	if err != nil {
		return bench.Summary{}, fmt.Errorf("%s loaded run: %w", tr, err)
	}
	recs := Records(res.Records)
	for name, v := range map[string]any{tr + "-agent-stats.json": res.Stats, tr + "-unloaded.json": base, tr + "-records.json": recs} {
		if err := arts.WriteJSON(name, v); err != nil {
			return bench.Summary{}, err
		}
	}
	run1 := bench.Run{Transport: tr, Records: recs, Baseline: bl,
		Elapsed: res.Elapsed, OfferedBps: res.OfferedBps, AchievedBps: res.AchievedBps, DeliveredBps: res.DeliveredBps,
		Counters: counters(res.Stats)}
	if cpu != nil {
		run1.HostCPU = *cpu
	}
	return bench.Analyze(run1, buckets)
}

// MeasureBaseline measures transport tr's unloaded latency through run:
// one size at a time (bench.BaselineSizes of buckets), one RPC at a time
// (unloaded of each, response bytes back), each size on its own server
// port (a traffic run starts with a listen), between the first and the
// last host. It returns the records, their baseline and the number of
// call ids used.
func MeasureBaseline(tr string, buckets []bench.Bucket, unloaded, response int, seed uint64, prog Progress, run func(cfg traffic.Config, pair bool) (*traffic.Result, error)) ([]bench.Record, bench.Baseline, uint64, error) {
	sizes := bench.BaselineSizes(buckets)
	var base []bench.Record
	var ids uint64
	prog.Phase(fmt.Sprintf("%s: unloaded latency, %d sizes × %d RPCs", tr, len(sizes), unloaded), len(sizes)*unloaded)
	for i, size := range sizes {
		d, err := workload.Parse(strconv.Itoa(size))
		if err != nil {
			return nil, bench.Baseline{}, 0, err
		}
		offset := len(base)
		res, err := run(traffic.Config{Port: traffic.DefaultPort + 1 + uint16(i),
			Requests: d, ResponseBytes: response, Concurrency: 1, Count: unloaded, Seed: seed, IDBase: ids,
			Progress: func(done, _ int) { prog.Set(offset + done) }}, true)
		if err != nil {
			return nil, bench.Baseline{}, 0, fmt.Errorf("%s unloaded run: %w", tr, err)
		}
		ids += uint64(len(res.Records))
		base = append(base, Records(res.Records)...)
	}
	bl, err := bench.NewBaseline(base)
	if err != nil {
		return nil, bench.Baseline{}, 0, fmt.Errorf("%s: %w", tr, err)
	}
	return base, bl, ids, nil
}

// counters are the counters a bench report shows for one transport
// (unloaded and loaded runs together): the agents' retransmissions, IUT
// timeouts, payload errors and broken TCP connections summed over the
// hosts, and the switch's drops by reason between sw0 and sw1
// (switch_<reason>_drops: "buffer" the egress buffer full, and the
// switch's own losses no impairment asked for, "ingress", "ring",
// "unreadable", "oversize" and "send", see netem.DropReason) and its read
// and send lags p50 and p99 (µs) at the end: a send lag p50 above one
// frame time means the switch did not keep the link rate; and the
// forwarding thread's CPU between sw0 and sw1 (switch_forwarding_cpu_us:
// near the runs' wall time, the switch was the bottleneck). Zero counters
// are left out.
func counters(stats []agent.Stats, sw0, sw1 netem.Stats) map[string]uint64 {
	c := map[string]uint64{}
	for _, s := range stats {
		c["retransmitted"] += s.Retransmitted
		c["timeouts"] += s.Timeouts
		c["payload_errors"] += s.PayloadErrors
		c["connections_broken"] += s.Extra["connections_broken"]
	}
	before := sw0.Drops.ByReason()
	for r, n := range sw1.Drops.ByReason() {
		c["switch_"+r+"_drops"] = n - min(n, before[r])
	}
	c["switch_read_lag_p50_us"] = uint64(sw1.ReadLagP50.Microseconds())
	c["switch_read_lag_p99_us"] = uint64(sw1.ReadLagP99.Microseconds())
	c["switch_send_lag_p50_us"] = uint64(sw1.SendLagP50.Microseconds())
	c["switch_send_lag_p99_us"] = uint64(sw1.SendLagP99.Microseconds())
	c["switch_forwarding_cpu_us"] = uint64(max(0, sw1.ForwardingCPU-sw0.ForwardingCPU).Microseconds())
	maps.DeleteFunc(c, func(_ string, v uint64) bool { return v == 0 })
	return c
}

// Records converts traffic records to bench records.
func Records(rs []traffic.Record) []bench.Record {
	out := make([]bench.Record, len(rs))
	for i, r := range rs {
		out[i] = bench.Record{Request: r.Request, Latency: r.Latency, Err: r.Err}
	}
	return out
}

// benchAgents are one transport's agents, one per host in host order.
type benchAgents struct {
	agents []*agent.Agent
	eps    []traffic.Endpoint
}

// startBenchAgents starts m's agent on every host of topo (agent.Start,
// its log named after the manifest: both transports run on every host)
// and says hello with the host's IPv4 address and params (flattened
// already: the manifest's own params are among them).
func startBenchAgents(ctx context.Context, topo *harness.Topology, m *agent.Manifest, params agent.Params) (*benchAgents, error) {
	a := &benchAgents{}
	for _, h := range topo.Hosts {
		ag, err := agent.Start(ctx, h, agent.StartConfig{Manifest: m, Params: params, LogName: m.Name})
		if err != nil {
			a.close()
			return nil, err
		}
		a.agents = append(a.agents, ag)
		a.eps = append(a.eps, traffic.Endpoint{Name: h.Name, Addr: h.Addr4, Client: ag.Client})
	}
	return a, nil
}

// close shuts every agent down (agent.Agent.Close: killed if it does not
// exit within the manifest's shutdown timeout).
func (a *benchAgents) close() {
	for _, ag := range a.agents {
		ag.Close()
	}
}
