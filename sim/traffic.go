package sim

import (
	"errors"
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
// StartTraffic and run the Sim until Done.
type Traffic struct {
	s       *Sim
	cfg     traffic.Config
	hosts   []*Host
	seq     *traffic.Sequence
	servers []int
	ports   []uint16 // each host's client socket
	start   time.Duration
	recs    []traffic.Record
	done    []bool
	ndone   int
	allIn   bool
	last    time.Duration // the last done event
	stats   []agent.Stats
	served  []map[servedKey]bool
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
	client   *Host
	id       uint64
}

// servedKey is one call at a server: the client's address and port and
// the call id from the request's payload header.
type servedKey struct {
	client netip.AddrPort
	id     uint64
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
	t := &Traffic{s: s, cfg: seq.Config(), hosts: hosts, seq: seq, start: s.now,
		stats: make([]agent.Stats, len(hosts)), served: make([]map[servedKey]bool, len(hosts))}
	t.servers = t.cfg.Servers(len(hosts))
	for i, h := range hosts {
		if h.m == nil {
			return nil, fmt.Errorf("sim: traffic host %d (%s) is a raw endpoint: it needs the reference implementation", i, h.name)
		}
		p, err := h.Dial()
		if err != nil {
			return nil, err
		}
		t.ports = append(t.ports, p)
		t.served[i] = map[servedKey]bool{}
	}
	for _, i := range t.servers {
		if err := hosts[i].Listen(t.cfg.Port); err != nil {
			return nil, fmt.Errorf("sim: listen on %s port %d: %w", hosts[i].name, t.cfg.Port, err)
		}
		hosts[i].OnRequest(func(e homa.Event) { t.serve(i, e) })
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
	for i, h := range t.hosts {
		st := t.stats[i]
		agent.AddRefStats(&st, h.Stats())
		res.Stats[i] = st
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
	req := make([]byte, c.Request)
	agent.FillPayload(req, c.ID, uint32(c.Response))
	client := t.hosts[r.Client]
	t.stats[r.Client].Calls++
	start := t.s.now
	id, err := client.Call(t.ports[r.Client], netip.AddrPortFrom(c.Dst, c.Port), req, func(e homa.Event) {
		t.finish(i, e.Payload, e.Err, t.s.now-start, c)
	})
	if err != nil {
		t.finish(i, nil, err, 0, c)
		return
	}
	t.expiry = append(t.expiry, pending{i, start + t.cfg.Timeout, client, id})
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
				p.client.Abort(p.id)
				t.end(p.rec, 0, fmt.Sprintf("%s: no done event within %v", agent.CodeSilent, t.cfg.Timeout))
			}
		}
		// Completed RPCs at the front need no event of their own.
		for len(t.expiry) > 0 && t.done[t.expiry[0].rec] {
			t.expiry = t.expiry[1:]
		}
		t.armExpiry()
	})
}

// finish records the end of RPC i: its response or error, as the ref
// agent reports a call (agent.CheckResponse for the response).
func (t *Traffic) finish(i int, resp []byte, err error, latency time.Duration, c agent.Call) {
	var msg string
	switch {
	case errors.Is(err, homa.ErrTimeout):
		msg = fmt.Sprintf("%s: %v", agent.CodeTimeout, err)
	case err != nil:
		msg = fmt.Sprintf("%s: %v", agent.CodeError, err)
	default:
		if perr := agent.CheckResponse(resp, c); perr != nil {
			t.stats[t.recs[i].Client].PayloadErrors++
			msg = perr.Error()
		}
	}
	t.end(i, latency, msg)
}

// end completes record i once.
func (t *Traffic) end(i int, latency time.Duration, msg string) {
	if t.done[i] {
		return
	}
	t.done[i], t.recs[i].Latency, t.recs[i].Err = true, latency, msg
	t.ndone++
	t.last = t.s.now
	st := &t.stats[t.recs[i].Client]
	if msg == "" {
		st.Completed++
	} else {
		st.Failed++
	}
	if t.cfg.Progress != nil {
		t.cfg.Progress(t.ndone, max(t.seq.Expected(), len(t.recs)))
	}
	if t.cfg.Concurrency > 0 {
		t.nextClosed(t.recs[i].Client)
	}
}

// serve answers a request at server host i as the ref agent does: the
// response has the length the request's header asks for, in the payload
// format; executions are counted per (client, call id).
func (t *Traffic) serve(i int, e homa.Event) {
	st := &t.stats[i]
	n, id, hasID := agent.PayloadHeader(e.Payload)
	st.Served++
	if hasID {
		k := servedKey{e.Peer, id}
		if t.served[i][k] {
			st.ServedDuplicates++
		}
		t.served[i][k] = true
	}
	if agent.CheckPayload(e.Payload, id) != nil {
		st.PayloadErrors++
	}
	if n < 1 || n > agent.MaxMessage {
		st.PayloadErrors++
		return
	}
	resp := make([]byte, n)
	agent.FillPayload(resp, id, n)
	_ = t.hosts[i].Reply(e.Request, resp)
}
