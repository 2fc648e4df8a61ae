package sim

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/traffic"
)

// Traffic is a workload (harness/traffic's Config and Sequence: W1..W5
// or fixed sizes, Poisson arrivals at an offered load, a closed loop or an
// explicit list) issued to simulated hosts as the agents of a harness run
// issue it: requests and responses carry the agent protocol's payload
// format (docs/agent-protocol.md), servers answer with the length a
// request's header asks for and count executions per call for
// at-most-once, and clients check every response. Start it with
// StartTraffic and run the Sim until Done.
type Traffic struct {
	s       *Sim
	cfg     traffic.Config
	hosts   []*Host
	seq     *traffic.Sequence
	servers []int
	agents  []*Agent // each host's agent
	start   time.Duration
	recs    []traffic.Record
	done    []bool
	ndone   int
	allIn   bool
	last    time.Duration // the last done event
	// expiry holds the RPCs issued and not yet past their timeout, in
	// issue order (which is deadline order: one timeout for all); one
	// event at a time waits for the first deadline.
	expiry    []pending
	expiryRun bool
}

// pending is an RPC waiting for its timeout.
type pending struct {
	rec      int
	deadline time.Duration
	id       uint64
	call     agent.Call
}

// StartTraffic starts cfg's workload now on hosts (cfg.Hosts is not used:
// host i of the workload is hosts[i]); servers listen on cfg.Port at once.
// Errors: a config traffic.Run would refuse, a raw endpoint among hosts,
// a port in use.
func (s *Sim) StartTraffic(hosts []*Host, cfg traffic.Config) (*Traffic, error) {
	cfg.Hosts = nil
	seq, err := traffic.NewSequence(cfg, len(hosts))
	if err != nil {
		return nil, err
	}
	t := &Traffic{s: s, cfg: seq.Config(), hosts: hosts, seq: seq, start: s.now}
	t.servers = t.cfg.Servers(len(hosts))
	for i, h := range hosts {
		a, err := h.Agent()
		if err != nil {
			return nil, fmt.Errorf("sim: traffic host %d: %w", i, err)
		}
		t.agents = append(t.agents, a)
	}
	for _, i := range t.servers {
		if err := t.agents[i].Listen(t.cfg.Port); err != nil {
			return nil, fmt.Errorf("sim: listen on %s port %d: %w", hosts[i].name, t.cfg.Port, err)
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
		t.issue(r)
		t.scheduleNext()
	})
}

// nextClosed issues client c's next RPC of a closed loop, unless the
// workload is over.
func (t *Traffic) nextClosed(c int) {
	at := t.s.now - t.start
	if t.cfg.Duration > 0 && at >= t.cfg.Duration {
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
	c := agent.Call{ID: t.cfg.IDBase + uint64(i) + 1, Dst: t.hosts[r.Server].addr, Port: t.cfg.Port, Request: r.Request, Response: r.Response}
	id, err := t.agents[r.Client].Call(c, func(comp agent.Completion) { t.end(i, comp.Latency(), comp.Error) })
	if err != nil {
		t.end(i, 0, fmt.Sprintf("%s: %v", agent.CodeError, err))
		return
	}
	t.expiry = append(t.expiry, pending{i, t.s.now + t.cfg.Timeout, id, c})
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
				t.agents[r.Client].Abort(p.id, p.call, 0, fmt.Sprintf("%s: no done event within %v", agent.CodeSilent, t.cfg.Timeout),
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
	t.ndone++
	t.last = t.s.now
	if t.cfg.Progress != nil {
		t.cfg.Progress(t.ndone, max(t.seq.Expected(), len(t.recs)))
	}
	if t.cfg.Concurrency > 0 {
		t.nextClosed(t.recs[i].Client)
	}
}
