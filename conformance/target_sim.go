package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/sim"
)

// simTarget is the reference implementation on a simulated host as the
// IUT (sim.Agent: the ref agent's behaviour on virtual time). Its calls
// enter the simulation at the current virtual time, and their results
// arrive while a spec waits on the environment's clock (which steps the
// simulation), so a spec drives it exactly as an agent in namespaces.
type simTarget struct {
	a      *sim.Agent
	clock  *tester.SimClock
	info   TargetInfo
	nextID uint64
}

// Info is what the ref agent's hello would say.
func (t *simTarget) Info() TargetInfo { return t.info }

// Listen serves requests on port as the ref agent does.
func (t *simTarget) Listen(_ context.Context, port uint16, o agent.ListenOptions) error {
	var err error
	t.clock.DoFrozen(func() { err = t.a.Listen(port, o) })
	return err
}

// Call starts an RPC now; the result is on the channel once the
// simulation has run far enough (a wait on the clock).
func (t *simTarget) Call(_ context.Context, dst netip.AddrPort, reqLen, respLen int, timeout time.Duration) (<-chan CallResult, error) {
	ch := make(chan CallResult, 1)
	c := agent.Call{ID: t.nextID + 1, Dst: dst.Addr(), Port: dst.Port(), Request: reqLen, Response: respLen, TimeoutMs: agent.Ms(timeout)}
	if err := c.Check(); err != nil {
		// As an agent over its protocol refuses it (agent.Call.Check):
		// a call the simulator took would pass here and fail in
		// namespaces.
		return nil, fmt.Errorf("agent refused call: %w", err)
	}
	var err error
	t.clock.DoFrozen(func() {
		t.nextID++
		_, err = t.a.Call(c, func(comp agent.Completion) {
			ch <- CallResult{Latency: comp.Latency(), Response: comp.Response, Err: comp.Error}
		})
	})
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// Stats returns the agent's counters by JSON name, as AgentTarget does.
func (t *simTarget) Stats(context.Context) (map[string]uint64, error) {
	var s agent.Stats
	t.clock.Do(func() { s = t.a.Stats() })
	return statsMap(s), nil
}

// Close does nothing: the simulation ends with the environment.
func (t *simTarget) Close() error { return nil }
