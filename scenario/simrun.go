package scenario

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/sim"
)

// SimSnapLen is the bytes of each frame a simulated run's captures keep:
// every Ethernet, IP and Homa header (the check and homatest decode take
// data lengths from the IP header), not the payload, so that a 1 Gbit/s
// run stores tens of megabytes rather than gigabytes.
const SimSnapLen = 128

// simTopology is topology.json of a simulated run.
type simTopology struct {
	Env   string     `json:"env"`
	Hosts []simHost  `json:"hosts"`
	Cost  sim.Cost   `json:"cost"`
	Link  simLinkDoc `json:"link"`
}

type simHost struct {
	Name string     `json:"name"`
	Addr netip.Addr `json:"addr"`
}

// simLinkDoc says how hosts reach the switch in the simulator.
type simLinkDoc struct {
	Uplink string `json:"uplink"`
}

// runSim runs s in the simulator (Env sim): on every host the reference
// implementation's protocol state machine (homa.Machine with sim's
// per-packet cost and an uplink at the link rate), netem's switch core
// with the scenario's link, plan and seed, and the workload as
// harness/traffic issues it, on virtual time in this goroutine; then the
// same check and run folder as a namespace run (its captures cut to
// SimSnapLen bytes per frame, the views taken at the hosts' protocol code:
// sim.CaptureConfig). No root is needed, and a seed always gives the same
// files.
func runSim(ctx context.Context, s *Scenario, o Options) (*Result, error) {
	// The resolved scenario names the host model it ran with.
	if s.Sim == nil {
		s.Sim = &SimHosts{}
	}
	if s.Sim.PacketCost == nil {
		c := sim.DefaultCost.PerPacket
		s.Sim.PacketCost = &c
	}
	if s.Sim.Cores == 0 {
		s.Sim.Cores = sim.DefaultCost.Cores
	}
	cost := sim.Cost{PerPacket: *s.Sim.PacketCost, Cores: s.Sim.Cores}
	params := agent.Params{}
	for k, v := range s.IUT.Params {
		params[k] = v
	}
	p, err := agent.RefParams(params)
	if err != nil {
		return nil, fmt.Errorf("iut.%v", err)
	}
	var faults []homa.Fault
	for _, f := range s.IUT.Faults {
		faults = append(faults, homa.Fault(f))
	}
	r, err := newRun(s, o)
	if err != nil {
		return nil, err
	}
	if err := r.executeSim(ctx, p, faults, cost); err != nil {
		return nil, r.fail(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, r.fail(ctx, err) // ended as the last step finished
	}
	return r.commit()
}

// executeSim is runSim's run once its folder is made: the simulator
// with hosts of parameters p, faults and cost.
func (r *run) executeSim(ctx context.Context, p homa.Params, faults []homa.Fault, cost sim.Cost) error {
	s := r.s
	sm, err := sim.New(sim.Config{Seed: s.Seed, Link: s.Link.LinkConfig, Plan: s.Plan, Cost: &cost})
	if err != nil {
		return fmt.Errorf("link or plan: %w", err)
	}
	version := r.o.Version
	if version == "" {
		version = homatestVersion()
	}
	var hosts []*sim.Host
	var hs []host
	topo := simTopology{Env: EnvSim, Cost: cost, Link: simLinkDoc{Uplink: "FIFO at link.rate, no delay"}}
	for i := 1; i <= s.Topology.Hosts; i++ {
		a, capa := harness.Addr4(i), agent.CapIPv4
		if s.Topology.IPv6 {
			a, capa = harness.Addr6(i), agent.CapIPv6
		}
		h, err := sm.AddHost(sim.HostConfig{Name: fmt.Sprintf("h%d", i), Addr: a, Params: p, Faults: faults})
		if err != nil {
			return fmt.Errorf("iut: %w", err)
		}
		hosts = append(hosts, h)
		hs = append(hs, host{name: h.Name(), addr: a})
		topo.Hosts = append(topo.Hosts, simHost{h.Name(), a})
		r.res.Hellos = append(r.res.Hellos, agent.Hello{Protocol: agent.ProtocolVersion, Impl: ImplRef, Version: version + " (sim)",
			Capabilities: []string{capa}, Params: agent.ParamsOf(p)})
	}
	for _, a := range []struct {
		name string
		v    any
	}{{"topology.json", topo}, {"hellos.json", r.res.Hellos}} {
		if err := r.arts.WriteJSON(a.name, a.v); err != nil {
			return err
		}
	}
	files := map[string]*harness.AtomicFile{}
	bufs := map[string]*bufio.Writer{}
	defer func() {
		for _, f := range files {
			f.Abort() // a no-op once committed
		}
	}()
	for _, name := range []string{"sent.pcapng", "delivered.pcapng", "capture.pcapng"} {
		f, err := r.arts.Create(name)
		if err != nil {
			return err
		}
		files[name], bufs[name] = f, bufio.NewWriterSize(f, 1<<20)
	}
	if err := sm.Capture(sim.CaptureConfig{Sent: bufs["sent.pcapng"], Delivered: bufs["delivered.pcapng"],
		Both: bufs["capture.pcapng"], SnapLen: SimSnapLen}); err != nil {
		return err
	}
	sm.OnNote(func(n sim.Note) {
		r.notes.add(note{Port: n.Port, Time: time.Unix(0, int64(n.Time)), Data: n.Frame, Comment: n.Comment})
	})
	cfg, err := r.trafficConfig()
	if err != nil {
		return err
	}
	r.logf("simulating %d hosts behind netem's switch core (%s, seed %d)", s.Topology.Hosts, s.Link.Rate, s.Seed)
	r.logf("running the workload on ref (%s)", describeWorkload(s.Workload))
	tr, err := sm.StartTraffic(hosts, cfg)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	n := 0
	sm.RunWhile(func() bool {
		if n++; n%65536 == 0 && ctx.Err() != nil {
			return false
		}
		return !tr.Done()
	})
	r.res.Traffic = tr.Result() // an interrupted run's too: its records as far as it got
	if err := ctx.Err(); err != nil {
		return err
	}
	r.res.Switch = sm.Switch()
	if err := sm.Flush(); err != nil {
		return err
	}
	for name, f := range files {
		if err := bufs[name].Flush(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := f.Commit(); err != nil {
			return err
		}
	}
	r.logf("checking the capture")
	if err := r.finish(ctx, hs, harness.CaptureStats{}); err != nil {
		return err
	}
	return nil
}
