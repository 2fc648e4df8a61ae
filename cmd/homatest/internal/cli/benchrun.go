package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/report/html"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/sim/simtcp"
)

// benchRefTick is the reference implementation's timer tick in bench:
// several user-space hosts and the switch share this machine's two CPUs,
// and HomaModule's timer ratios at a shorter tick turn queueing at these
// slow links and CPU starvation into RESEND/BUSY storms (w4 at load 0.8 of
// 50 Mbit/s for 2 minutes: 30,000 DATA packets retransmitted with a 10 ms
// tick, conformance's namespace tick; 33 in 30 s with 50 ms, homa/rawip's
// test tick).
const benchRefTick = 50 * time.Millisecond

// homaParams returns the parameter overrides the homa agents get in
// hello: for the ref agent a benchRefTick tick, link_bps = --rate (its
// pacer and FIFO grant interval follow the link: without it the ref
// agent assumes 25 Gbit/s, and w4 at load 0.8 of 50 Mbit/s had a p50
// slowdown of 10-13 instead of 2-3) and unsched_bytes and max_incoming
// sized for --rate and --rtt (HomaModule's defaults are for a 25 Gbit/s
// network with a few µs round trips: at 100 Mbit/s their 40 KB of
// unscheduled bytes per message and 400 KB of grants overflow the switch
// buffers in bursts; homa.ParamsForLink's, scaled for µs round trips,
// starve these ms ones), then the manifest's params, then --param. In
// the simulator (--env sim) only link_bps: homa.ParamsForLink and
// HomaModule's 1 ms tick, since simulated hosts keep time exactly.
func (o *benchOpts) homaParams() agent.Params {
	p := agent.Params{}
	switch {
	case o.env == envSim:
		// Simulated hosts keep time exactly: HomaModule's 1 ms tick,
		// and its lab parameters for the link (homa.ParamsForLink).
		p["link_bps"] = int64(o.rateBps)
	case o.impl == "ref":
		rttBytes := max(int64(1500), int64(float64(o.rateBps)*o.rtt.Seconds()/8))
		p["tick_ns"] = benchRefTick.Nanoseconds()
		p["link_bps"] = int64(o.rateBps)
		p["unsched_bytes"] = rttBytes
		p["max_incoming"] = 8 * rttBytes
	}
	maps.Copy(p, agent.Params(o.homaImpl.Params))
	maps.Copy(p, o.homaPar)
	return p
}

// run builds the topology (or the simulation), runs every transport and
// returns the report (and writes report.json into the run folder and the
// plot).
func (o *benchOpts) run(ctx context.Context, prog *benchProgress) (*bench.Report, error) {
	arts, err := harness.NewArtifacts(o.artifacts)
	if err != nil {
		return nil, artifactsErr(err)
	}
	buckets := bench.Buckets(o.dist, o.buckets)
	rep := &bench.Report{Workload: o.dist.Name(), Load: o.load, RateBps: float64(o.rateBps), Hosts: o.hosts,
		Seed: o.seed, Buckets: buckets, Artifacts: o.artifacts}
	var topo *harness.Topology
	var fab *netem.SwitchFabric
	if o.env == envSim {
		rep.Env = envSim
	} else {
		fab = &netem.SwitchFabric{Link: netem.LinkConfig{Rate: o.rateBps, Priorities: 8}, Seed: o.seed}
		bctx, cancel := context.WithTimeout(ctx, timescale.D(30*time.Second))
		topo, err = harness.Build(bctx, harness.Config{Hosts: o.hosts, Fabric: fab, Artifacts: arts})
		cancel()
		if err != nil {
			return nil, err
		}
		defer topo.Close()
	}
	for _, tr := range o.trans {
		if tr == "homa" {
			rep.Impl, rep.Params = o.homaImpl.Name, o.homaParams()
		}
		var s bench.Summary
		if o.env == envSim {
			s, err = o.runSim(ctx, tr, arts, buckets, prog)
		} else {
			s, err = o.runTransport(ctx, topo, fab, tr, buckets, prog)
		}
		if err != nil {
			return nil, err
		}
		rep.Transports = append(rep.Transports, s)
	}
	prog.done()
	rep.Warn()
	if err := arts.WriteJSON("report.json", rep); err != nil {
		return nil, err
	}
	if o.plot != "" {
		if err := rep.Plot(o.plot); err != nil {
			return nil, err
		}
	}
	page, err := html.BenchPage(rep, o.artifacts, "homatest "+strings.Join(os.Args[1:], " "), []string{arts.Path("report.json")})
	if err != nil {
		return nil, err
	}
	if err := arts.Write(reportFile, func(w io.Writer) error { return html.Write(w, page) }); err != nil {
		return nil, err
	}
	o.page = page
	return rep, nil
}

// runTraffic runs one traffic config on the bench's hosts (all of them, or
// only the first and the last with pair) and returns its result.
type runTraffic func(cfg traffic.Config, pair bool) (*traffic.Result, error)

// runTransport starts tr's agents on every host, measures the unloaded
// baseline, runs the loaded workload, stops the agents and analyses the
// run.
func (o *benchOpts) runTransport(ctx context.Context, topo *harness.Topology, fab *netem.SwitchFabric, tr string, buckets []bench.Bucket, prog *benchProgress) (bench.Summary, error) {
	m, params := o.tcpImpl, agent.Params(nil)
	if tr == "homa" {
		m, params = o.homaImpl, o.homaParams()
	}
	sw0 := fab.Stats()
	ags, err := startBenchAgents(ctx, topo, m, params)
	if err != nil {
		return bench.Summary{}, err
	}
	defer ags.close()
	eps := ags.eps
	pair := []traffic.Endpoint{eps[0], eps[len(eps)-1]}
	return o.measure(tr, buckets, prog, topo.Artifacts, func(cfg traffic.Config, two bool) (*traffic.Result, error) {
		cfg.Hosts = eps
		if two {
			cfg.Hosts = pair
		}
		return traffic.Run(ctx, cfg)
	}, func(st []agent.Stats) map[string]uint64 { return benchCounters(st, sw0, fab.Stats()) })
}

// runSim runs transport tr on simulated hosts (package sim on virtual
// time behind netem's switch core with the bench's links and seed: the
// reference implementation's protocol state machine for homa, gVisor's
// netstack for tcp, each host paying sim.CostForLink per packet): the
// same baseline and loaded runs as runTransport, in one simulation of its
// own. It writes the wall time per simulated second to prog's writer.
func (o *benchOpts) runSim(ctx context.Context, tr string, arts *harness.Artifacts, buckets []bench.Bucket, prog *benchProgress) (bench.Summary, error) {
	cost := sim.CostForLink(int64(o.rateBps))
	sm, err := sim.New(sim.Config{Seed: o.seed, Link: netem.LinkConfig{Rate: o.rateBps, Priorities: 8}, Cost: &cost})
	if err != nil {
		return bench.Summary{}, err
	}
	hosts, closeHosts, err := o.simHosts(sm, tr)
	if err != nil {
		return bench.Summary{}, err
	}
	defer closeHosts()
	pair := []sim.RPCHost{hosts[0], hosts[len(hosts)-1]}
	start := time.Now()
	defer func() {
		wall := time.Since(start)
		prog.note(fmt.Sprintf("%s: simulated %v in %v of wall time (%.1f s per simulated second)",
			tr, sm.Now().Round(time.Millisecond), wall.Round(time.Millisecond), wall.Seconds()/max(sm.Now().Seconds(), 1e-9)))
	}()
	return o.measure(tr, buckets, prog, arts, func(cfg traffic.Config, two bool) (*traffic.Result, error) {
		hs := hosts
		if two {
			hs = pair
		}
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
		return t.Result(), ctx.Err()
	}, func(st []agent.Stats) map[string]uint64 { return benchCounters(st, netem.Stats{}, sm.Switch()) })
}

// simHosts adds --hosts hosts running transport tr to sm (newSimHosts).
func (o *benchOpts) simHosts(sm *sim.Sim, tr string) ([]sim.RPCHost, func(), error) {
	var p homa.Params
	if tr == "homa" {
		var err error
		if p, err = agent.RefParams(o.homaParams()); err != nil {
			return nil, func() {}, err
		}
	}
	return newSimHosts(sm, tr, o.hosts, o.seed, p, 0)
}

// newSimHosts adds n hosts running transport tr to sm (h1..hN at
// harness.Addr4): the reference implementation with params p for homa,
// netstack for tcp (seeded from seed and the host's number), with an MTU
// of mtu bytes (0: 1500; homa takes it into p). It returns them with the
// function that stops them.
func newSimHosts(sm *sim.Sim, tr string, n int, seed uint64, p homa.Params, mtu int) ([]sim.RPCHost, func(), error) {
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
func (o *benchOpts) measure(tr string, buckets []bench.Bucket, prog *benchProgress, arts *harness.Artifacts, run runTraffic, counters func([]agent.Stats) map[string]uint64) (bench.Summary, error) {
	o.started = true
	base, bl, ids, err := measureBaseline(tr, buckets, o.unloaded, o.response, o.seed, prog, run)
	if err != nil {
		return bench.Summary{}, err
	}

	prog.phase(fmt.Sprintf("%s: %s at load %.2f for %v", tr, o.dist.Name(), o.load, o.duration), 0)
	res, err := run(traffic.Config{Port: traffic.DefaultPort, Requests: o.dist,
		ResponseBytes: o.response, Load: o.load, LinkBps: float64(o.rateBps), Duration: o.duration,
		Seed: o.seed, IDBase: ids, Progress: func(done, total int) { prog.setMax(done, total) }}, false)
	if err != nil {
		return bench.Summary{}, fmt.Errorf("%s loaded run: %w", tr, err)
	}
	recs := benchRecords(res.Records)
	for name, v := range map[string]any{tr + "-agent-stats.json": res.Stats, tr + "-unloaded.json": base, tr + "-records.json": recs} {
		if err := arts.WriteJSON(name, v); err != nil {
			return bench.Summary{}, err
		}
	}
	return bench.Analyze(bench.Run{Transport: tr, Records: recs, Baseline: bl,
		Elapsed: res.Elapsed, OfferedBps: res.OfferedBps, AchievedBps: res.AchievedBps,
		Counters: counters(res.Stats)}, buckets)
}

// measureBaseline measures transport tr's unloaded latency through run:
// one size at a time (bench.BaselineSizes of buckets), one RPC at a time
// (unloaded of each, response bytes back), each size on its own server
// port (a traffic run starts with a listen), between the first and the
// last host. It returns the records, their baseline and the number of
// call ids used.
func measureBaseline(tr string, buckets []bench.Bucket, unloaded, response int, seed uint64, prog *benchProgress, run runTraffic) ([]bench.Record, bench.Baseline, uint64, error) {
	sizes := bench.BaselineSizes(buckets)
	var base []bench.Record
	var ids uint64
	prog.phase(fmt.Sprintf("%s: unloaded latency, %d sizes × %d RPCs", tr, len(sizes), unloaded), len(sizes)*unloaded)
	for i, size := range sizes {
		d, err := workload.Parse(strconv.Itoa(size))
		if err != nil {
			return nil, bench.Baseline{}, 0, err
		}
		offset := len(base)
		res, err := run(traffic.Config{Port: traffic.DefaultPort + 1 + uint16(i),
			Requests: d, ResponseBytes: response, Concurrency: 1, Count: unloaded, Seed: seed, IDBase: ids,
			Progress: func(done, _ int) { prog.set(offset + done) }}, true)
		if err != nil {
			return nil, bench.Baseline{}, 0, fmt.Errorf("%s unloaded run: %w", tr, err)
		}
		ids += uint64(len(res.Records))
		base = append(base, benchRecords(res.Records)...)
	}
	bl, err := bench.NewBaseline(base)
	if err != nil {
		return nil, bench.Baseline{}, 0, fmt.Errorf("%s: %w", tr, err)
	}
	return base, bl, ids, nil
}

// benchCounters are the counters a bench report shows for one transport
// (unloaded and loaded runs together): the agents' retransmissions, IUT
// timeouts, payload errors and broken TCP connections summed over the
// hosts, and the switch's drops by reason between sw0 and sw1
// (switch_<reason>_drops: "buffer" the egress buffer full, and the
// switch's own losses no impairment asked for, "ingress", "ring",
// "unreadable", "oversize" and "send", see netem.DropReason) and its read
// and send lags p50 and p99 (µs) at the end: a send lag p50 above one
// frame time means the switch did not keep the link rate. Zero counters
// are left out.
func benchCounters(stats []agent.Stats, sw0, sw1 netem.Stats) map[string]uint64 {
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
	maps.DeleteFunc(c, func(_ string, v uint64) bool { return v == 0 })
	return c
}

// benchRecords converts traffic records to bench records.
func benchRecords(rs []traffic.Record) []bench.Record {
	out := make([]bench.Record, len(rs))
	for i, r := range rs {
		out[i] = bench.Record{Request: r.Request, Latency: r.Latency, Err: r.Err}
	}
	return out
}

// benchAgents are one transport's agents, one per host in host order.
type benchAgents struct {
	eps     []traffic.Endpoint
	procs   []*harness.Process
	logs    []io.Closer
	timeout agent.ManifestTimeouts
}

// startBenchAgents starts m's agent on every host of topo and says hello
// with the host's IPv4 address and params. Errors name the host and quote
// the agent's last stderr lines; a hello with "unsupported" is an error.
func startBenchAgents(ctx context.Context, topo *harness.Topology, m *agent.Manifest, params agent.Params) (*benchAgents, error) {
	a := &benchAgents{timeout: m.Timeouts.Effective()}
	var env []string
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	for _, h := range topo.Hosts {
		logf, err := topo.Artifacts.OpenLog(fmt.Sprintf("%s.%s.stderr.log", h.Name, m.Name))
		if err != nil {
			a.close()
			return nil, err
		}
		a.logs = append(a.logs, logf)
		tail := agent.NewTailWriter(5, 4096)
		proc, err := h.Start(harness.ProcSpec{Path: m.Command[0], Args: m.Command[1:], Env: env, Name: m.Name,
			Stderr: io.MultiWriter(logf, tail)})
		if err != nil {
			a.close()
			return nil, fmt.Errorf("starting the %s agent on %s: %w", m.Name, h.Name, err)
		}
		a.procs = append(a.procs, proc)
		c := agent.NewClient(proc.Stdout(), proc.Stdin(), agent.ClientOptions{ReplyTimeout: a.timeout.Reply, StderrTail: tail.String})
		a.eps = append(a.eps, traffic.Endpoint{Name: h.Name, Addr: h.Addr4, Client: c})
		hctx, cancel := context.WithTimeout(ctx, a.timeout.Start)
		hello, err := c.Hello(hctx, agent.HelloRequest{Host: h.Name, Addrs: []netip.Addr{h.Addr4}, Params: params})
		cancel()
		if err == nil && hello.Unsupported != "" {
			err = errors.New("unsupported: " + hello.Unsupported)
		}
		if err != nil {
			a.close()
			return nil, fmt.Errorf("the %s agent on %s: %w", m.Name, h.Name, err)
		}
	}
	return a, nil
}

// close shuts every agent down (killing one that does not exit within
// the manifest's shutdown timeout) and closes the logs.
func (a *benchAgents) close() {
	for i, ep := range a.eps {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout.Shutdown)
		ep.Client.Shutdown(ctx)
		ep.Client.Close()
		select {
		case <-a.procs[i].Done():
		case <-ctx.Done():
			a.procs[i].Kill()
		}
		cancel()
	}
	for _, l := range a.logs {
		l.Close()
	}
}
