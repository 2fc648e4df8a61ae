package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/homa"
)

// Agent plays the ref agent (agent.ServeRef) on a simulated host, on
// virtual time: its servers answer every request with the response length
// the request's payload header asks for (docs/agent-protocol.md) and count
// executions per (client, call id) for at-most-once; its calls carry the
// payload format and check their responses (agent.CheckResponse). Its
// counters are the ref agent's stats. The traffic driver and the
// conformance suite's simulated IUT both drive hosts through it.
type Agent struct {
	h      *Host
	port   uint16 // the client socket
	stats  agent.Stats
	served map[servedKey]bool
}

// servedKey is one call at a server: the client's address and port and
// the call id from the request's payload header.
type servedKey struct {
	client netip.AddrPort
	id     uint64
}

// Agent opens a client socket on host h and returns the agent that drives
// it. Errors: h is a raw endpoint, no free port.
func (h *Host) Agent() (*Agent, error) {
	if h.m == nil {
		return nil, fmt.Errorf("sim: %s is a raw endpoint: an agent needs the reference implementation", h.name)
	}
	p, err := h.Dial()
	if err != nil {
		return nil, err
	}
	return &Agent{h: h, port: p, served: map[servedKey]bool{}}, nil
}

// Host returns the agent's host.
func (a *Agent) Host() *Host { return a.h }

// Listen makes the host serve requests on port as the ref agent does.
// Errors: those of homa.Machine.Listen (a port in use).
func (a *Agent) Listen(port uint16) error {
	if err := a.h.Listen(port); err != nil {
		return err
	}
	a.h.OnRequest(a.serve)
	return nil
}

// Call starts call c now (c.Dst and c.Port the server; c.TimeoutMs is not
// used: the RPC ends when the protocol ends it, or at Abort). done gets
// its completion once, as the ref agent reports it: the response length
// and the latency on virtual time, or an error starting with an agent
// error code. It returns the RPC's id for Abort. Errors: those of
// homa.Machine.Call (the call is then counted as failed and done is not
// called).
func (a *Agent) Call(c agent.Call, done func(agent.Completion)) (uint64, error) {
	req := make([]byte, c.Request)
	agent.FillPayload(req, c.ID, uint32(c.Response))
	a.stats.Calls++
	start := a.h.s.now
	id, err := a.h.Call(a.port, netip.AddrPortFrom(c.Dst, c.Port), req, func(e homa.Event) {
		comp := agent.Completion{ID: c.ID, Request: c.Request, LatencyNs: int64(a.h.s.now - start)}
		switch {
		case errors.Is(e.Err, homa.ErrTimeout):
			comp.Error = fmt.Sprintf("%s: %v", agent.CodeTimeout, e.Err)
		case e.Err != nil:
			comp.Error = fmt.Sprintf("%s: %v", agent.CodeError, e.Err)
		default:
			comp.Response = len(e.Payload)
			if perr := agent.CheckResponse(e.Payload, c); perr != nil {
				a.stats.PayloadErrors++
				comp.Error = perr.Error()
			}
		}
		a.end(comp, done)
	})
	if err != nil {
		a.stats.Failed++
		return 0, err
	}
	return id, nil
}

// Abort gives up on RPC id (as Call returned it) without telling the
// server, and completes it with error why (which should start with an
// agent error code) after latency.
func (a *Agent) Abort(id uint64, c agent.Call, latency time.Duration, why string, done func(agent.Completion)) {
	a.h.Abort(id)
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

// Stats returns the agent's counters with the host's protocol counters
// added (agent.AddRefStats), as the ref agent's stats op reports them.
func (a *Agent) Stats() agent.Stats {
	st := a.stats
	st.Extra = nil
	agent.AddRefStats(&st, a.h.Stats())
	return st
}

// serve answers one request as the ref agent does.
func (a *Agent) serve(e homa.Event) {
	st := &a.stats
	n, id, hasID := agent.PayloadHeader(e.Payload)
	st.Served++
	if hasID {
		k := servedKey{e.Peer, id}
		if a.served[k] {
			st.ServedDuplicates++
		}
		a.served[k] = true
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
	_ = a.h.Reply(e.Request, resp)
}
