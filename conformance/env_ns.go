package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec/wire"
)

// NSEnvConfig configures NewNSEnv.
type NSEnvConfig struct {
	// Manifest is the IUT: its agent runs in host h1's namespace (and on
	// every bench host with Workloads), started by agent.Start with the
	// manifest's environment, params and timeouts.
	Manifest *agent.Manifest
	// Faults are fault knobs asked for in hello (reference implementation).
	Faults []string
	// Artifacts is the run folder (logs, capture.pcapng, topology.json);
	// "" means harness.DefaultArtifactsDir.
	Artifacts string
	// Fabric forwards between the switch ports (nil: the kernel bridge).
	Fabric harness.Fabric
	// Workloads makes passive specs build their benches of IUT hosts in
	// namespaces behind netem's switch. Otherwise, when RefBench is set,
	// they run on reference hosts in the simulator (NewSimEnv's bench,
	// with the pass's fault knobs), and else they are unsupported.
	Workloads, RefBench bool
}

// RefTick is the timer tick the suite asks the reference implementation
// to use in real time (namespaces): every timer keeps HomaModule's tick
// count, but a 5 ms tick keeps scheduling noise of a shared machine well
// below a tick (1 ms timer wake-ups come late and in bursts on a loaded
// machine, which would shift RESEND and NEED_ACK timing by whole ticks).
// In the simulator it keeps HomaModule's 1 ms. It is sent only to an
// implementation that declares tick_ns (the built-in ref agent: see
// agent.Manifest.HelloParams); a manifest gets exactly its own params.
const RefTick = 5 * time.Millisecond

// MinNSTick is the shortest IUT tick NewNSEnv accepts: a wall-clock timer
// (the ref's timerfd, internal/hrtimer) fires 60-110 µs after its due time
// on a 2-vCPU VM (BenchmarkTimer: a 200 µs timer after 266-308 µs), so a
// shorter tick stretches past timer_drift 0.5 and the timer rules would
// charge the machine to the IUT (at tick_ns 1000 the ref failed 16 specs,
// helper-161).
const MinNSTick = 200 * time.Microsecond

// CheckNSTick refuses a tick below MinNSTick for namespaces, saying why
// and what to give instead; 0 (undeclared) passes.
func CheckNSTick(tick time.Duration) error {
	if tick <= 0 || tick >= MinNSTick {
		return nil
	}
	return fmt.Errorf("tick_ns %d: in namespaces (real time) timer passes come 60-110 µs late, past timer_drift for a tick below %v: give %d or more, or use the simulator (--env sim) for shorter ticks", tick.Nanoseconds(), MinNSTick, MinNSTick.Nanoseconds())
}

// NewNSEnv builds the suite's environment in network namespaces (root
// needed): three hosts behind a switch (harness.Build), the IUT's agent on
// h1 as a child process speaking the agent protocol, tester peers on raw IP
// sockets (protocol 146, or the one of the wire format the agent's hello
// names) in h2 and h3, and a capture of every switch port
// written to the run folder when the environment closes. Errors: not root
// (harness.ErrNotRoot), topology or agent failures, and an
// *agent.CannotRunError when the agent says the implementation cannot run
// here.
func NewNSEnv(ctx context.Context, cfg NSEnvConfig) (*Env, error) {
	if cfg.Manifest == nil {
		return nil, errors.New("conformance: NSEnvConfig.Manifest is nil")
	}
	var arts *harness.Artifacts
	if cfg.Artifacts != "" {
		a, err := harness.NewArtifacts(cfg.Artifacts)
		if err != nil {
			return nil, err
		}
		arts = a
	}
	topo, err := harness.Build(ctx, harness.Config{Hosts: 3, Fabric: cfg.Fabric, Artifacts: arts})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Env, error) {
		topo.Close()
		return nil, err
	}
	capture, err := topo.StartCapture(ctx)
	if err != nil {
		return fail(err)
	}
	h1 := topo.Hosts[0]
	a, err := agent.Start(ctx, h1, agent.StartConfig{Manifest: cfg.Manifest, Faults: cfg.Faults,
		Defaults: agent.Params{"tick_ns": RefTick.Nanoseconds()}, Addrs: []netip.Addr{h1.Addr4, h1.Addr6}})
	if err != nil {
		return fail(err)
	}
	profile, err := a.Hello.Profile()
	if err != nil {
		a.Close()
		return fail(err)
	}
	t, err := newAgentTarget(a, profile)
	if err != nil {
		a.Close()
		return fail(err)
	}
	if m := t.info.MTU; m > topo.MTU {
		// Frames that large do not fit the veths: every full DATA
		// packet would fail (sendmmsg: message too long).
		a.Close()
		return fail(fmt.Errorf("the IUT's hello says mtu %d, but the namespaces' links carry %d bytes: drop the mtu setting (--param or the manifest's params); the simulator (--env sim) models other MTUs", m, topo.MTU))
	}
	if err := CheckNSTick(t.info.Params.Tick); err != nil {
		a.Close()
		return fail(fmt.Errorf("the IUT's hello says %w", err))
	}
	clock := tester.NewPreciseWallClock() // a tick under 1 ms is kept
	t.notifyTo(clock)
	e := &Env{IUT: t, Profile: profile, Slack: slackFor(0), QuietSlack: slackFor(0), Clock: clock, Stalls: stall.Start(stall.Config{}),
		Describe: fmt.Sprintf("namespaces %s: h1 IUT, h2-h3 testers, run folder %s", topo.ID, topo.Artifacts.Path("."))}
	e.Stalls.Watch(a.Proc.Pid(), "IUT agent on h1")
	e.Stalls.WatchSoftirq()
	if missing := a.Unclaimed(); len(missing) > 0 {
		e.Describe += fmt.Sprintf("; WARNING: the manifest claims %s, which the agent's hello does not declare (its hello is what counts)",
			strings.Join(missing, ", "))
	}
	for _, h := range topo.Hosts[1:] {
		// Only the tester speaks for a tester host: a kernel Homa there
		// (HomaModule serves every namespace) would answer the IUT with
		// ICMP port unreachable or Homa packets of its own.
		if err := h.Silence(harness.TesterMark); err != nil {
			return fail(err)
		}
		e.TesterAddrs = append(e.TesterAddrs, h.Addr4)
		e.Testers = append(e.Testers, nsTester(h, h.Addr4, t.info.Params.Wire))
		e.TesterAddrs6 = append(e.TesterAddrs6, h.Addr6)
		e.Testers6 = append(e.Testers6, nsTester(h, h.Addr6, t.info.Params.Wire))
	}
	artsDir := topo.Artifacts.Path(".")
	switch {
	case cfg.Workloads:
		e.NewBench = func(n int, imp LinkImpairment) (*Bench, error) {
			ctx, cancel := context.WithTimeout(context.Background(), envTimeout)
			defer cancel()
			c := cfg
			c.Artifacts = artsDir
			return nsBench(ctx, c, n, imp, e.Stalls)
		}
	case cfg.RefBench:
		e.NewBench = func(n int, imp LinkImpairment) (*Bench, error) {
			return simBench(n, imp, cfg.Faults, artsDir)
		}
	}
	e.Close = func() error {
		e.Stalls.Stop()
		err := t.Close()
		if _, cerr := capture.Stop(); err == nil {
			err = cerr
			if err == nil {
				err = markTesterPackets(topo.Artifacts.Path("capture.pcapng"), e)
			}
		}
		if err != nil && e.RunCapture != "" {
			e.RunCapture, e.RunCaptureLost = "", err.Error() // not whole, or unmarked: not judged
		}
		if terr := topo.Close(); err == nil {
			err = terr
		}
		return err
	}
	e.RunCapture = topo.Artifacts.Path("capture.pcapng")
	return e, nil
}

// nsTester opens tester transports on host h at its address addr (IPv4
// or IPv6): raw IP sockets of wire format v's IP protocol (146, or 253
// for linux_6.1.38's) in h's namespace, sending with the tester's mark
// (Host.Silence lets only those out).
func nsTester(h *harness.Host, addr netip.Addr, v wire.Version) func() (homa.Transport, error) {
	return func() (homa.Transport, error) {
		var tr homa.Transport
		err := h.Do(func() error {
			r, err := rawip.OpenProto(addr, max(v.IPProtocol(), wire.IPProtoHoma))
			if err != nil {
				return err
			}
			if err := r.SetMark(harness.TesterMark); err != nil {
				r.Close()
				return err
			}
			// The IUT's packets are judged at the time they reached
			// the tester host, not when the tester's goroutine got
			// them: on a busy machine that can be ms later.
			if err := r.RecvTimestamps(); err != nil {
				r.Close()
				return err
			}
			tr = r
			return nil
		})
		return tr, err
	}
}

// envTimeout bounds building an environment.
var envTimeout = timescale.D(30 * time.Second)
