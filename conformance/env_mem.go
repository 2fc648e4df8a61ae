package conformance

import (
	"context"
	"github.com/homatest/homatest/agent"
	"net/netip"

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
	t, err := NewAgentTarget(ctx, c, "h1", []netip.Addr{addr}, agent.Params{"link_bps": 10e9}, faults, "linux")
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
	e.Close = func() error { err := t.Close(); cancel(); n.Close(); return err }
	return e, nil
}
