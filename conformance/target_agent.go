package conformance

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
)

// AgentTarget drives an IUT through the agent protocol (package agent): the
// way the suite tests any implementation.
type AgentTarget struct {
	a    *agent.Agent
	c    *agent.Client
	info TargetInfo

	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan CallResult
	closed  chan struct{}
	// clock, when set, is told of every completion (the clock a spec
	// waits on for the IUT's calls: Env.Clock); guarded by mu.
	clock tester.Clock
}

// notifyTo makes the target tell clock of every completion.
func (t *AgentTarget) notifyTo(clock tester.Clock) {
	t.mu.Lock()
	t.clock = clock
	t.mu.Unlock()
}

// notify tells the clock a spec waits on that a call completed.
func (t *AgentTarget) notify() {
	t.mu.Lock()
	c := t.clock
	t.mu.Unlock()
	if c != nil {
		c.Notify()
	}
}

// newAgentTarget makes the Target of agent a (started and past its
// hello, agent.Start), its parameters read from the hello under profile.
// Errors: a hello parameter of the wrong shape.
func newAgentTarget(a *agent.Agent, profile string) (*AgentTarget, error) {
	h := a.Hello
	sp, err := h.Params.Spec(profile)
	if err != nil {
		return nil, err
	}
	mtu, err := h.Params.MTU()
	if err != nil {
		return nil, err
	}
	t := &AgentTarget{a: a, c: a.Client, waiting: map[uint64]chan CallResult{}, closed: make(chan struct{}),
		info: TargetInfo{Impl: h.Impl, Version: h.Version, Capabilities: h.Capabilities, Params: sp, MTU: mtu}}
	for _, addr := range a.Addrs {
		if addr.Is4() && !t.info.Addr.IsValid() {
			t.info.Addr = addr
		} else if addr.Is6() && !t.info.Addr6.IsValid() {
			t.info.Addr6 = addr
		}
	}
	go t.dispatch()
	return t, nil
}

// dispatch routes completions to the calls waiting for them.
func (t *AgentTarget) dispatch() {
	defer close(t.closed)
	for c := range t.c.Completions() {
		t.mu.Lock()
		ch := t.waiting[c.ID]
		delete(t.waiting, c.ID)
		t.mu.Unlock()
		if ch != nil {
			ch <- CallResult{Latency: c.Latency(), Response: c.Response, Err: c.Error}
			t.notify() // a spec may wait for it (iutRPC.wait)
		}
	}
	// The agent is gone: fail whatever still waits, saying how it went
	// (the session's error names the agent, its exit status and its log).
	why := "the agent ended before the call completed"
	if err := t.c.Err(); err != nil {
		why += ": " + err.Error()
	}
	t.mu.Lock()
	for id, ch := range t.waiting {
		ch <- CallResult{Err: agent.CodeExited + ": " + why}
		delete(t.waiting, id)
	}
	t.mu.Unlock()
	t.notify()
}

// Info is the agent's hello.
func (t *AgentTarget) Info() TargetInfo { return t.info }

// Listen asks the agent to serve on port.
func (t *AgentTarget) Listen(ctx context.Context, port uint16, o agent.ListenOptions) error {
	return t.c.ListenWith(ctx, port, o)
}

// Call starts an RPC through the agent; the call ids are unique for the
// session (the agent counts a reused id as a duplicate execution).
func (t *AgentTarget) Call(ctx context.Context, dst netip.AddrPort, reqLen, respLen int, timeout time.Duration) (<-chan CallResult, error) {
	ch := make(chan CallResult, 1)
	t.mu.Lock()
	t.nextID++
	id := t.nextID
	t.waiting[id] = ch
	t.mu.Unlock()
	err := t.c.Call(ctx, agent.Call{ID: id, Dst: dst.Addr(), Port: dst.Port(), Request: reqLen, Response: respLen, TimeoutMs: agent.Ms(timeout)})
	if err != nil {
		t.mu.Lock()
		delete(t.waiting, id)
		t.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// Stats returns the agent's counters by JSON name.
func (t *AgentTarget) Stats(ctx context.Context) (map[string]uint64, error) {
	s, err := t.c.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return statsMap(s), nil
}

// statsMap returns an agent's stats by their JSON names, Extra included.
func statsMap(s agent.Stats) map[string]uint64 {
	m := map[string]uint64{"calls": s.Calls, "completed": s.Completed, "failed": s.Failed, "served": s.Served,
		"served_duplicates": s.ServedDuplicates, "payload_errors": s.PayloadErrors,
		"packets_sent": s.PacketsSent, "packets_received": s.PacketsReceived, "retransmitted": s.Retransmitted, "timeouts": s.Timeouts}
	for k, v := range s.Extra {
		m[k] = v
	}
	return m
}

// Close shuts the agent down (agent.Agent.Close: within the manifest's
// shutdown timeout).
func (t *AgentTarget) Close() error { return t.a.Close() }
