package sim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/homa"
)

// Traffic is a workload (harness/traffic's Config and Sequence: W1..W5
// or fixed sizes, Poisson arrivals at an offered load, a closed loop or an
// explicit list) issued to simulated hosts as the agents of a harness run
// issue it: requests and responses carry the agent protocol's payload
// format (docs/agent-protocol.md), servers answer with the length a
// request's header asks for and count executions per call for
// at-most-once, and clients check every response. Start it with
// StartTraffic (Homa hosts) or StartRPC (any RPCHost) and run the Sim
// until Done.
type Traffic struct {
	s       *Sim
	cfg     traffic.Config
	hosts   []RPCHost
	seq     *traffic.Sequence
	servers []int
	start   time.Duration
	recs    []traffic.Record
	done    []bool
	ndone   int
	allIn   bool
	last    time.Duration // the last done event
	agents  []*Agent      // each host's agent
	// expiry holds the RPCs issued and not yet past their timeout, in
	// issue order (which is deadline order: one timeout for all); one
	// event at a time waits for the first deadline.
	expiry    []pending
	expiryRun bool
	stopped   bool
}

// RPCHost is one host's RPC transport as a Traffic drives it: Homa on a
// host running the reference implementation (HomaRPC), or another
// transport on a stack host (package sim/simtcp's TCP). Its methods run
// on the goroutine driving the Sim; callbacks run inside its events.
type RPCHost interface {
	// Addr is the address other hosts call it at.
	Addr() netip.Addr
	// Listen serves requests on port: serve gets each whole request with
	// the caller's address and port, and answers it (at once or later)
	// by calling reply once with the response.
	Listen(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error
	// Call sends request to dst now; done gets the whole response, or an
	// error (homa.ErrTimeout when the transport gave up for silence).
	// abort gives up on the call: done is not called after it.
	Call(dst netip.AddrPort, request []byte, done func(resp []byte, err error)) (abort func(), err error)
	// AddStats adds the transport's counters (packets, retransmissions,
	// timeouts, connections) to st.
	AddStats(st *agent.Stats)
}

// HomaRPC returns h's reference implementation as an RPCHost: calls go
// from one client socket, dialled on the first call.
func HomaRPC(h *Host) RPCHost { return &homaRPC{h: h} }

// homaRPC is a Host's Homa as an RPCHost.
type homaRPC struct {
	h    *Host
	port uint16 // the client socket; 0 until the first call
}

func (r *homaRPC) Addr() netip.Addr { return r.h.addr }

func (r *homaRPC) Listen(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error {
	if err := r.h.Listen(port); err != nil {
		return err
	}
	prev := r.h.onRequest
	r.h.OnRequest(func(e homa.Event) {
		if e.Port != port {
			if prev != nil {
				prev(e)
			}
			return
		}
		serve(e.Payload, e.Peer, func(resp []byte) { _ = r.h.Reply(e.Request, resp) })
	})
	return nil
}

func (r *homaRPC) Call(dst netip.AddrPort, request []byte, done func(resp []byte, err error)) (func(), error) {
	if r.port == 0 {
		p, err := r.h.Dial()
		if err != nil {
			return nil, err
		}
		r.port = p
	}
	id, err := r.h.Call(r.port, dst, request, func(e homa.Event) { done(e.Payload, e.Err) })
	if err != nil {
		return nil, err
	}
	return func() { r.h.Abort(id) }, nil
}

func (r *homaRPC) AddStats(st *agent.Stats) { agent.AddRefStats(st, r.h.Stats()) }

// DualStack returns the reference implementation on v4 and v6, a host's
// IPv4 and IPv6 addresses, as one RPCHost, as the ref agent runs one
// homa.Host per address family (agent/ref.go): it serves on both, calls
// from the one of the callee's family, and adds both hosts' counters. Its
// Addr is v4's.
func DualStack(v4, v6 *Host) RPCHost { return dualStack{HomaRPC(v4), HomaRPC(v6)} }

// dualStack is an IPv4 and an IPv6 RPCHost of one machine (DualStack).
type dualStack [2]RPCHost

// DualStackOneFamily is DualStack with the linux agent's servers on a
// host with both families: a port serves IPv4 alone unless the agent
// listens with IPv6 (agent.ListenOptions.IPv6, Agent.Listen), then IPv6
// alone, as HomaModule binds a port once for both families and routes a
// socket's packets by the socket's family (homa_peer_reset_dst).
func DualStackOneFamily(v4, v6 *Host) RPCHost {
	return oneFamily{dualStack{HomaRPC(v4), HomaRPC(v6)}}
}

// oneFamily is a dualStack whose Listen serves IPv4 (DualStackOneFamily).
type oneFamily struct{ dualStack }

func (d oneFamily) Listen(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error {
	return d.dualStack[0].Listen(port, serve)
}

// listenIPv6 serves port on the IPv6 side alone.
func (d oneFamily) listenIPv6(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error {
	return d.dualStack[1].Listen(port, serve)
}

func (d dualStack) Addr() netip.Addr { return d[0].Addr() }

func (d dualStack) Listen(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error {
	for _, r := range d {
		if err := r.Listen(port, serve); err != nil {
			return err
		}
	}
	return nil
}

func (d dualStack) Call(dst netip.AddrPort, request []byte, done func(resp []byte, err error)) (func(), error) {
	a := dst.Addr().Unmap()
	r := d[0]
	if a.Is6() {
		r = d[1]
	}
	return r.Call(netip.AddrPortFrom(a, dst.Port()), request, done)
}

func (d dualStack) AddStats(st *agent.Stats) {
	for _, r := range d {
		r.AddStats(st)
	}
}

// pending is an RPC waiting for its timeout.
type pending struct {
	rec      int
	deadline time.Duration
	abort    func()
	call     agent.Call
}

// StartTraffic starts cfg's workload now on hosts running the reference
// implementation (StartRPC over HomaRPC of each). Errors: those of
// StartRPC, a raw or stack endpoint among hosts.
func (s *Sim) StartTraffic(hosts []*Host, cfg traffic.Config) (*Traffic, error) {
	rs := make([]RPCHost, len(hosts))
	for i, h := range hosts {
		if h.m == nil {
			return nil, fmt.Errorf("sim: traffic host %d (%s) runs no Homa: it needs the reference implementation", i, h.name)
		}
		rs[i] = HomaRPC(h)
	}
	return s.StartRPC(rs, cfg)
}

// StartRPC starts cfg's workload now on hosts (cfg.Hosts is not used:
// host i of the workload is hosts[i]); servers listen on cfg.Port at once.
// Errors: a config traffic.Run would refuse, a port in use.
func (s *Sim) StartRPC(hosts []RPCHost, cfg traffic.Config) (*Traffic, error) {
	cfg.Hosts = nil
	seq, err := traffic.NewSequence(cfg, len(hosts))
	if err != nil {
		return nil, err
	}
	t := &Traffic{s: s, cfg: seq.Config(), hosts: hosts, seq: seq, start: s.now}
	t.servers = t.cfg.Servers(len(hosts))
	for _, h := range hosts {
		t.agents = append(t.agents, s.NewAgent(h))
	}
	for _, i := range t.servers {
		if err := t.agents[i].Listen(t.cfg.Port, agent.ListenOptions{}); err != nil {
			return nil, fmt.Errorf("sim: listen on %v port %d: %w", hosts[i].Addr(), t.cfg.Port, err)
		}
	}
	if t.cfg.Concurrency > 0 {
		clients := len(hosts)
		if t.cfg.Pattern == traffic.ManyToOne {
			clients--
		}
		for c := range clients {
			for range t.cfg.Concurrency {
				t.nextClosed(c)
			}
		}
		t.allIn = true // a closed loop issues from completions; Done checks the slots
	} else {
		t.scheduleNext()
	}
	return t, nil
}

// Stop ends the workload early: no RPC is issued after it (those issued
// still run to their end, and Done waits for them).
func (t *Traffic) Stop() {
	t.stopped, t.allIn = true, true
}

// Done reports whether every RPC was issued and has ended.
func (t *Traffic) Done() bool { return t.allIn && t.ndone == len(t.recs) }

// Result returns the workload's outcome so far: the records in issue
// order, Elapsed from the start to the last done event, the offered and
// achieved rates (traffic.NewResult) and each host's counters (the ref
// agent's Stats).
func (t *Traffic) Result() *traffic.Result {
	res := traffic.NewResult(t.recs, t.last-t.start, len(t.servers))
	res.Stats = make([]agent.Stats, len(t.hosts))
	for i, a := range t.agents {
		res.Stats[i] = a.Stats()
	}
	return res
}

// scheduleNext schedules the next RPC of an open loop or a list.
func (t *Traffic) scheduleNext() {
	r, more := t.seq.Next(-1)
	if !more {
		t.allIn = true
		return
	}
	t.s.At(t.start+r.At, func() {
		if t.stopped {
			return
		}
		t.issue(r)
		t.scheduleNext()
	})
}

// nextClosed issues client c's next RPC of a closed loop, unless the
// workload is over.
func (t *Traffic) nextClosed(c int) {
	at := t.s.now - t.start
	if t.stopped || t.cfg.Duration > 0 && at >= t.cfg.Duration {
		return
	}
	r, more := t.seq.Next(c)
	if !more {
		return
	}
	r.At = at
	t.issue(r)
}

// issue starts one RPC now.
func (t *Traffic) issue(r traffic.RPC) {
	i := len(t.recs)
	t.recs = append(t.recs, traffic.Record{Seq: i, Client: r.Client, Server: r.Server, Request: r.Request, Response: r.Response, At: r.At})
	t.done = append(t.done, false)
	c := agent.Call{ID: t.cfg.IDBase + uint64(i) + 1, Dst: t.hosts[r.Server].Addr(), Port: t.cfg.Port, Request: r.Request, Response: r.Response}
	abort, err := t.agents[r.Client].Call(c, func(comp agent.Completion) { t.end(i, comp.Latency(), comp.Error) })
	if err != nil {
		t.end(i, 0, fmt.Sprintf("%s: %v", agent.CodeError, err))
		return
	}
	t.expiry = append(t.expiry, pending{i, t.s.now + t.cfg.Timeout, abort, c})
	t.armExpiry()
}

// armExpiry schedules the check of the first pending timeout.
func (t *Traffic) armExpiry() {
	if t.expiryRun || len(t.expiry) == 0 {
		return
	}
	t.expiryRun = true
	t.s.At(t.expiry[0].deadline, func() {
		t.expiryRun = false
		for len(t.expiry) > 0 && t.expiry[0].deadline <= t.s.now {
			p := t.expiry[0]
			t.expiry = t.expiry[1:]
			if !t.done[p.rec] {
				r := t.recs[p.rec]
				t.agents[r.Client].Abort(p.abort, p.call, 0, fmt.Sprintf("%s: no done event within %v", agent.CodeSilent, t.cfg.Timeout),
					func(comp agent.Completion) { t.end(p.rec, 0, comp.Error) })
			}
		}
		// Completed RPCs at the front need no event of their own.
		for len(t.expiry) > 0 && t.done[t.expiry[0].rec] {
			t.expiry = t.expiry[1:]
		}
		t.armExpiry()
	})
}

// end completes record i once.
func (t *Traffic) end(i int, latency time.Duration, msg string) {
	if t.done[i] {
		return
	}
	t.done[i], t.recs[i].Latency, t.recs[i].Err = true, latency, msg
	t.recs[i].Ended = time.Duration(t.s.now - t.start)
	t.ndone++
	t.last = t.s.now
	if t.cfg.Progress != nil {
		t.cfg.Progress(t.ndone, max(t.seq.Expected(), len(t.recs)))
	}
	if t.cfg.Concurrency > 0 {
		t.nextClosed(t.recs[i].Client)
	}
}
