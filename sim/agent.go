package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/homa"
)

// Agent plays the built-in agents (agent.ServeRef, and the tcp agent) on
// a simulated host, on virtual time, over any RPCHost: its servers answer
// every request with the response length the request's payload header asks
// for (docs/agent-protocol.md) and count executions per (client, call id)
// for at-most-once; its calls carry the payload format and check their
// responses (agent.CheckResponse). Its counters are the agent's stats. The
// traffic driver and the conformance suite's simulated IUT both drive
// hosts through it.
type Agent struct {
	s      *Sim
	rpc    RPCHost
	stats  agent.Stats
	served map[servedKey]bool
}

// servedKey is one call at a server: the client's address and port and
// the call id from the request's payload header.
type servedKey struct {
	client netip.AddrPort
	id     uint64
}

// NewAgent returns the agent that drives r, a host of s.
func (s *Sim) NewAgent(r RPCHost) *Agent {
	return &Agent{s: s, rpc: r, served: map[servedKey]bool{}}
}

// Agent returns the agent that drives h's reference implementation
// (HomaRPC). Errors: h is a raw or stack endpoint.
func (h *Host) Agent() (*Agent, error) {
	if h.m == nil {
		return nil, fmt.Errorf("sim: %s runs no Homa: an agent needs the reference implementation", h.name)
	}
	return h.s.NewAgent(HomaRPC(h)), nil
}

// Addr is the address of the agent's host.
func (a *Agent) Addr() netip.Addr { return a.rpc.Addr() }

// Listen makes the host serve requests on port as the ref agent does,
// each reply o.ReplyDelay after its request came (on virtual time); on
// a DualStackOneFamily host IPv6 alone when o.IPv6, else IPv4 alone.
// Errors: the transport's (a port in use).
func (a *Agent) Listen(port uint16, o agent.ListenOptions) error {
	listen := a.rpc.Listen
	if f, ok := a.rpc.(oneFamily); ok && o.IPv6 {
		listen = f.listenIPv6
	}
	delay := o.ReplyDelay
	if delay <= 0 {
		return listen(port, a.serve)
	}
	return listen(port, func(req []byte, peer netip.AddrPort, reply func([]byte)) {
		a.serve(req, peer, func(resp []byte) { a.s.After(delay, func() { reply(resp) }) })
	})
}

// Call starts call c now (c.Dst and c.Port the server). The RPC ends when
// the protocol ends it, at Abort, or, with c.TimeoutMs > 0, when the
// application gives it up that long after it began (aborted as Abort
// does, with the agents' timeout error: agent.runCall). done gets
// its completion once, as the agents report it: the response length and
// the latency on virtual time, or an error starting with an agent error
// code. It returns the function Abort needs. Errors: the transport's (the
// call is then counted as failed and done is not called).
func (a *Agent) Call(c agent.Call, done func(agent.Completion)) (abort func(), err error) {
	req := make([]byte, c.Request)
	agent.FillPayload(req, c.ID, uint32(c.Response))
	a.stats.Calls++
	start := a.s.now
	ended := false
	defer func() {
		if err != nil || c.TimeoutMs <= 0 {
			return
		}
		limit := time.Duration(c.TimeoutMs) * time.Millisecond
		a.s.After(limit, func() {
			if !ended {
				a.Abort(abort, c, limit, fmt.Sprintf("%s: no response within timeout_ms %d", agent.CodeTimeout, c.TimeoutMs), done)
			}
		})
	}()
	done0 := done
	done = func(comp agent.Completion) {
		ended = true
		if done0 != nil {
			done0(comp)
		}
	}
	abort, err = a.rpc.Call(netip.AddrPortFrom(c.Dst, c.Port), req, func(resp []byte, err error) {
		comp := agent.Completion{ID: c.ID, Request: c.Request, LatencyNs: int64(a.s.now - start)}
		switch {
		case errors.Is(err, homa.ErrTimeout):
			comp.Error = fmt.Sprintf("%s: %v", agent.CodeTimeout, err)
		case err != nil:
			comp.Error = fmt.Sprintf("%s: %v", agent.CodeError, err)
		default:
			comp.Response = len(resp)
			if perr := agent.CheckResponse(resp, c); perr != nil {
				a.stats.PayloadErrors++
				comp.Error = perr.Error()
			}
		}
		a.end(comp, done)
	})
	if err != nil {
		a.stats.Failed++
		return nil, err
	}
	return abort, nil
}

// Abort gives up on a call (abort as Call returned it) without telling
// the server, and completes it with error why (which should start with an
// agent error code) after latency.
func (a *Agent) Abort(abort func(), c agent.Call, latency time.Duration, why string, done func(agent.Completion)) {
	abort()
	a.end(agent.Completion{ID: c.ID, Request: c.Request, LatencyNs: int64(latency), Error: why}, done)
}

// end counts one completion and hands it on.
func (a *Agent) end(comp agent.Completion, done func(agent.Completion)) {
	if comp.Error == "" {
		a.stats.Completed++
	} else {
		a.stats.Failed++
	}
	if done != nil {
		done(comp)
	}
}

// Stats returns the agent's counters with the transport's counters added
// (RPCHost.AddStats), as the agent's stats op reports them.
func (a *Agent) Stats() agent.Stats {
	st := a.stats
	st.Extra = nil
	a.rpc.AddStats(&st)
	return st
}

// serve answers one request as the ref agent does.
func (a *Agent) serve(req []byte, peer netip.AddrPort, reply func([]byte)) {
	st := &a.stats
	n, id, hasID := agent.PayloadHeader(req)
	st.Served++
	if hasID {
		k := servedKey{peer, id}
		if a.served[k] {
			st.ServedDuplicates++
		}
		a.served[k] = true
	}
	if agent.CheckPayload(req, id) != nil {
		st.PayloadErrors++
	}
	if n < 1 || n > agent.MaxMessage {
		st.PayloadErrors++
		return
	}
	resp := make([]byte, n)
	agent.FillPayload(resp, id, n)
	reply(resp)
}
