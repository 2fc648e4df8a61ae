package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// SimEnvConfig configures NewSimEnv.
type SimEnvConfig struct {
	// Params are parameter overrides for the IUT, as an agent's hello
	// takes them (docs/agent-protocol.md): applied over link_bps
	// 10000000000 (a link_bps here picks another link's lab settings
	// first); nil: none. The passive specs' benches keep their own.
	Params agent.Params
	// Faults are reference-implementation fault knobs for the IUT (and
	// the passive specs' reference hosts).
	Faults []string
	// Artifacts is the run folder: capture.pcapng (every packet of the
	// active specs, as sent and as delivered, 128 bytes of each) and the
	// passive specs' captures; "" keeps no capture of the active specs.
	Artifacts string
	// Slack, when above sim.ViewTolerance, is the timing slack the specs'
	// windows and judgements get instead: a loaded machine's measured
	// noise played in virtual time, for tests of how the suite treats
	// a wide slack (slackOnly); 0: the simulator's exact tolerance.
	Slack time.Duration
	// HoldUps, when its Every is above 0, holds the testers up as a loaded
	// machine would (tester.SimClock.HoldUps), each hold-up recorded as
	// a measured stall of the harness (Env.Stalls): for tests that the
	// suite's verdicts on a correct IUT survive a held-up tester.
	HoldUps HoldUps
	// Freezes, when its Every is above 0, freezes the IUT's host as a
	// loaded machine keeps an implementation from running
	// (tester.SimClock.Freezes, sim.Host.Freeze), each freeze recorded as
	// a measured stall of the IUT's agent (Env.Stalls).
	Freezes HoldUps
	// OneFamilyPerPort gives the IUT the linux agent's servers on a
	// dual-stack host (sim.DualStackOneFamily): a port serves IPv4 alone
	// unless listened with IPv6 (agent.ListenOptions.IPv6).
	OneFamilyPerPort bool
}

// HoldUps configures the simulator's held-up testers
// (tester.SimClock.HoldUps): hold-ups on average Every apart, each up to
// Most long, drawn from a source seeded with Seed.
type HoldUps struct {
	Seed  uint64
	Every time.Duration
	Most  time.Duration
}

// holdUpWho and freezeWho name the simulator's held-up testers and its
// frozen IUT in stall spans.
const (
	holdUpWho = stall.Harness + " (held up by the simulator)"
	freezeWho = "IUT agent on h1 (frozen by the simulator)"
)

// simSeed seeds the simulation of the active specs. Their switch applies
// no impairment, so nothing draws from it; it is fixed so that a run is
// the same however often it is repeated.
const simSeed = 1

// NewSimEnv builds the suite's environment in the simulator (package sim,
// virtual time): the reference implementation's protocol state machine
// as the IUT on host h1 (198.18.0.1, and 2001:2::1 on a switch port of
// its own, h1-v6: sim.DualStack; driven as the ref agent would drive it:
// sim.Agent), and tester hosts h2 and h3 (each with an IPv6 side too,
// h2-v6 and h3-v6, for the specs over IPv6) as raw endpoints whose Peers
// wait on the simulation's clock (tester.SimClock): a spec's expectation
// steps virtual time until its packet arrives or its window ends. The
// switch is netem's core with 8 strict-priority queues and no rate,
// delay or processing cost, so a packet reaches the other end at the
// virtual instant it was sent: what the tester records is, to the
// nanosecond, what the IUT sent and when, and timing windows need no
// slack (sim.ViewTolerance: records of one instant are 1 ns apart). The
// IUT paces its DATA itself for a 10 Gbit/s link (homa.ParamsForLink) and
// keeps HomaModule's 1 ms timer tick: nothing here runs late. Passive
// specs run their benches in simulations of their own (simBench). No
// privileges needed; the same run gives the same results on any machine.
func NewSimEnv(cfg SimEnvConfig) (*Env, error) {
	var faults []homa.Fault
	for _, f := range cfg.Faults {
		faults = append(faults, homa.Fault(f))
	}
	ap := agent.Params{"link_bps": int64(10e9)}
	for k, v := range cfg.Params {
		ap[k] = v
	}
	p, err := agent.RefParams(ap)
	if err != nil {
		return nil, err
	}
	sp, err := agent.ParamsOf(p).Spec("linux")
	if err != nil {
		return nil, err
	}
	s, err := sim.New(sim.Config{Seed: simSeed, Link: netem.LinkConfig{Priorities: netem.MaxPriorities}, Cost: &sim.Cost{}})
	if err != nil {
		return nil, err
	}
	iutAddr, iutAddr6 := simAddr(1, false), simAddr(1, true)
	h, err := s.AddHost(sim.HostConfig{Name: "h1", Addr: iutAddr, Params: p, Faults: faults})
	if err != nil {
		return nil, err
	}
	// The IUT's IPv6 side: a host of its own, as the ref agent runs a
	// homa.Host per address family (sim.DualStack).
	h6, err := s.AddHost(sim.HostConfig{Name: "h1-v6", Addr: iutAddr6, Params: p, Faults: faults})
	if err != nil {
		return nil, err
	}
	clock := tester.NewSimClock(s)
	e := &Env{Profile: "linux", Slack: max(sim.ViewTolerance, cfg.Slack), QuietSlack: sim.ViewTolerance, Clock: clock, Virtual: true,
		Describe: fmt.Sprintf("simulator: h1 IUT (virtual time, %s tick), h2-h3 testers", tickText(p.Tick))}
	if cfg.HoldUps.Every > 0 || cfg.Freezes.Every > 0 {
		e.Stalls = stall.NewRecorder()
	}
	record := func(who string) func(from, to time.Time) {
		return func(from, to time.Time) {
			e.Stalls.Record(stall.Span{From: from, To: to, Who: who, Lost: to.Sub(from)})
		}
	}
	if h := cfg.HoldUps; h.Every > 0 {
		clock.HoldUps(h.Seed, h.Every, h.Most, record(holdUpWho))
		e.Describe += fmt.Sprintf(", testers held up (every %v on average, up to %v, seed %d)", h.Every, h.Most, h.Seed)
	}
	if f := cfg.Freezes; f.Every > 0 {
		clock.Freezes(f.Seed, f.Every, f.Most, func(until time.Duration) { h.Freeze(until); h6.Freeze(until) }, record(freezeWho))
		e.Describe += fmt.Sprintf(", IUT frozen (every %v on average, up to %v, seed %d)", f.Every, f.Most, f.Seed)
	}
	for i := range 2 {
		a, a6 := simAddr(2+i, false), simAddr(2+i, true)
		r, err := s.AddRaw(fmt.Sprintf("h%d", 2+i), a)
		if err != nil {
			return nil, err
		}
		r6, err := s.AddRaw(fmt.Sprintf("h%d-v6", 2+i), a6)
		if err != nil {
			return nil, err
		}
		e.TesterAddrs = append(e.TesterAddrs, a)
		e.Testers = append(e.Testers, func() (homa.Transport, error) { return tester.SimTransport(clock, r), nil })
		e.TesterAddrs6 = append(e.TesterAddrs6, a6)
		e.Testers6 = append(e.Testers6, func() (homa.Transport, error) { return tester.SimTransport(clock, r6), nil })
	}
	var capFile *os.File
	var capBuf *bufio.Writer
	if cfg.Artifacts != "" {
		if err := os.MkdirAll(cfg.Artifacts, 0o755); err != nil {
			return nil, err
		}
		capFile, err = os.Create(filepath.Join(cfg.Artifacts, "capture.pcapng"))
		if err != nil {
			return nil, err
		}
		capBuf = bufio.NewWriter(capFile)
		// Homa headers are enough to decode and check the exchange (the
		// specs judge their peers' own records); 128 bytes keep a pass's
		// capture near a megabyte.
		if err := s.Capture(sim.CaptureConfig{Both: capBuf, SnapLen: 128}); err != nil {
			capFile.Close()
			return nil, err
		}
	}
	caps := append([]string{agent.CapIPv4, agent.CapIPv6}, agent.RefCapabilities()...)
	stack := sim.DualStack(h, h6)
	if cfg.OneFamilyPerPort {
		stack = sim.DualStackOneFamily(h, h6)
	}
	e.IUT = &simTarget{a: s.NewAgent(stack), clock: clock, info: TargetInfo{Impl: "ref", Version: "simulated",
		Addr: iutAddr, Addr6: iutAddr6, Capabilities: caps, Params: sp, MTU: p.MTU}}
	dir := cfg.Artifacts
	if dir == "" {
		dir = os.TempDir()
	}
	e.NewBench = func(n int, imp LinkImpairment) (*Bench, error) {
		return simBench(n, imp, cfg.Faults, dir)
	}
	e.Close = func() error {
		if capFile == nil {
			return nil
		}
		var err error
		clock.Do(func() { err = s.Flush() })
		if err := errors.Join(err, capBuf.Flush(), capFile.Close()); err != nil {
			e.RunCapture, e.RunCaptureLost = "", err.Error()
			return err
		}
		// As in namespaces: the tester's frames marked and the
		// parameters beside the capture, so that homatest check on it
		// charges nothing to the IUT of a passing run.
		if err := markTesterPackets(capFile.Name(), e); err != nil {
			e.RunCapture, e.RunCaptureLost = "", err.Error()
			return err
		}
		return nil
	}
	if capFile != nil {
		e.RunCapture = capFile.Name()
	}
	return e, nil
}

// simAddr is simulated host i's address: 198.18.0.i, or 2001:2::i for
// its IPv6 side (the benchmarking ranges, RFC 2544 and RFC 5180).
func simAddr(i int, v6 bool) netip.Addr {
	if v6 {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x00, 0x02, 15: byte(i)})
	}
	return netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})
}

// tickText renders a timer tick for the pass header: whole milliseconds
// as "1 ms", anything else as Go prints a duration ("200µs").
func tickText(d time.Duration) string {
	if d > 0 && d%time.Millisecond == 0 {
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	}
	return d.String()
}
