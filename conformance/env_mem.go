package conformance

import (
	"context"
	"github.com/homatest/homatest/agent"
	"net/netip"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// MemEnvConfig configures NewMemEnv.
type MemEnvConfig struct {
	// Faults are reference-implementation fault knobs for the IUT.
	Faults []homa.Fault
	// Rate is the link rate in bit/s (0: no serialisation delay).
	Rate int64
}

// RefTick is the timer tick (ns) the suite asks the reference
// implementation to use: every timer keeps HomaModule's tick count, but a
// 5 ms tick keeps scheduling noise of a shared machine well below a tick.
const RefTick = 5 * time.Millisecond

// NewMemEnv builds an environment in this process: the reference
// implementation as IUT behind the agent protocol (agent.PipeRef) on an
// in-memory network (homa/memnet), with two tester hosts. It needs no
// privileges; timing is real time.
func NewMemEnv(cfg MemEnvConfig) (*Env, error) {
	// Packets go through at once (no serialisation or propagation delay):
	// in real time, per-packet timers would cost far more than the
	// modelled microseconds. Parameters are those of a 10 Gbit/s link.
	n := memnet.New(memnet.Config{Rate: cfg.Rate})
	addr := netip.MustParseAddr("198.18.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	c, _ := agent.PipeRef(ctx, agent.RefOptions{Version: "in-process",
		Transport: func(a netip.Addr) (homa.Transport, error) { return n.Attach(a), nil }}, agent.ClientOptions{})
	var faults []string
	for _, f := range cfg.Faults {
		faults = append(faults, string(f))
	}
	// A 5 ms tick (HomaModule's ratios between the timers kept): on a
	// loaded machine 1 ms timer wake-ups come late and in bursts, which
	// would shift RESEND and NEED_ACK timing by whole ticks.
	t, err := NewAgentTarget(ctx, c, "h1", []netip.Addr{addr}, agent.Params{"link_bps": 10e9, "tick_ns": int64(RefTick)}, faults, "linux")
	if err != nil {
		c.Close()
		cancel()
		n.Close()
		return nil, err
	}
	e := &Env{IUT: t, Profile: "linux", Slack: slackFor(0),
		Describe: "agent in-process, in-memory network"}
	for i := 0; i < 2; i++ {
		a := netip.AddrFrom4([4]byte{198, 18, 0, byte(2 + i)})
		e.TesterAddrs = append(e.TesterAddrs, a)
		e.Testers = append(e.Testers, func() (homa.Transport, error) { return n.Attach(a), nil })
	}
	e.NewBench = func(hosts int, imp LinkImpairment) (*Bench, error) {
		return simBench(hosts, imp, faults, opts.Artifacts)
	}
	e.Close = func() error { err := t.Close(); cancel(); n.Close(); return err }
	return e, nil
}
