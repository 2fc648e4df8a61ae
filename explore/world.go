package explore

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Env says where cases run: conformance's environment (the IUT behind
// the agent protocol's operations, tester hosts, a clock), built by New.
type Env struct {
	// New builds the environment (conformance.NewSimEnv in the simulator,
	// conformance.NewNSEnv in namespaces).
	New func() (*conformance.Env, error)
	// Fresh builds a new environment for every case, so that each case
	// starts from a fresh IUT and replays exactly (the simulator, where
	// building one costs microseconds). Otherwise one environment serves
	// the session and the tester hosts' state (RPC ids, ports, cutoffs)
	// carries over from case to case.
	Fresh bool
	// Name describes the environment in reports ("sim", "ns").
	Name string
	// Faults are the IUT's fault knobs (reference implementation), for
	// reports and scripts.
	Faults []string
	// Params are the IUT's parameter overrides (homatest's --param), for
	// scripts: a replay applies them again.
	Params agent.Params
}

// SimEnv is the simulator with the reference implementation as the IUT,
// with the given fault knobs and parameter overrides (as an agent's hello
// takes them; nil: the simulator's 10 Gbit/s settings): a fresh
// simulation per case.
func SimEnv(faults []string, params agent.Params) Env {
	return Env{Name: "sim", Fresh: true, Faults: faults, Params: params, New: func() (*conformance.Env, error) {
		return conformance.NewSimEnv(conformance.SimEnvConfig{Faults: faults, Params: params})
	}}
}

// world is one built environment and the tester-side state that outlives
// a case in it.
type world struct {
	ce      *conformance.Env
	clock   tester.Clock
	info    conformance.TargetInfo
	params  spec.Params // the checker's: the IUT's, with the environment's slack
	virtual bool
	hosts   []*hostState
	trs     []homa.Transport
	in      inbox
	cases   int
	// calls counts the IUT calls made through the environment's Target:
	// its call ids are 1, 2, ... in call order.
	calls uint64
	// iutPhase is the IUT timer's phase (its tick passes come at
	// iutPhase + k·tick): 0 in the simulator (the IUT starts at time 0);
	// in real time estimated from its timer-driven packets.
	iutPhase time.Duration
}

// hostState is what a tester host remembers across cases of one
// environment (HomaModule keeps it per peer and per host).
type hostState struct {
	name     string
	addr     netip.Addr
	nextID   uint64 // next client RPC id (even)
	nextPort uint16 // next client socket port
	// iutMaxID is the highest client id of the IUT's calls to this host
	// bound so far (cases of a shared environment: an earlier case's RPC
	// has a lower one).
	iutMaxID uint64
	// iutCut and iutVer are the IUT's cutoffs as its CUTOFFS told them
	// (iutVer 0: none yet, a new peer's table).
	iutCut [wire.NumCutoffs]uint32
	iutVer uint16
	// myCut and myVer are the host's own cutoffs, announced in CUTOFFS.
	myCut [wire.NumCutoffs]uint32
	myVer uint16
	// acks are completed client RPCs to the IUT not yet acknowledged.
	acks []wire.AckEntry
}

// serverPort is the port tester hosts serve the IUT's calls on.
const serverPort = conformance.ServerPort

// newWorld builds env and readies it for cases: the IUT listens on
// conformance.ServerPort and every tester host gets a transport.
func newWorld(ctx context.Context, env Env) (*world, error) {
	ce, err := env.New()
	if err != nil {
		return nil, err
	}
	w := &world{ce: ce, clock: ce.Clock, info: ce.IUT.Info(), virtual: ce.Virtual}
	fail := func(err error) (*world, error) {
		w.close()
		return nil, err
	}
	if len(ce.Testers) == 0 {
		return fail(errors.New("explore: the environment has no tester hosts"))
	}
	p := w.info.Params
	if p.Tick <= 0 {
		p.Tick = time.Millisecond
	}
	// Timestamps are the tester's: in real time they lag the IUT's
	// sending and lead its receiving by the environment's noise.
	p.Slack = max(p.Slack, ce.Slack)
	p.Jitter = max(p.Jitter, ce.Slack)
	if ce.Virtual {
		p.Reaction = 0 // the view is the IUT's own order
	} else {
		// Within slack the view cannot order the IUT's timer pass and a
		// packet on its way to its protocol code (oracle.reaction).
		p.Reaction = max(p.Reaction, p.Slack)
	}
	w.params = p
	for i, open := range ce.Testers {
		tr, err := open()
		if err != nil {
			return fail(fmt.Errorf("explore: tester host %d: %w", i+2, err))
		}
		w.trs = append(w.trs, tr)
		hs := &hostState{name: fmt.Sprintf("h%d", i+2), addr: ce.TesterAddrs[i], nextID: 2, nextPort: 40000,
			myCut: p.UnschedCutoffs, myVer: p.CutoffVersion}
		if hs.myVer == 0 {
			hs.myVer = 1
		}
		w.hosts = append(w.hosts, hs)
		host := i
		tr.SetHandler(func(src netip.Addr, prio uint8, pkt []byte) { w.in.put(w.clock, host, src, prio, pkt) })
	}
	if err := ce.IUT.Listen(ctx, conformance.ServerPort, agent.ListenOptions{}); err != nil {
		return fail(fmt.Errorf("explore: the IUT cannot listen on port %d: %w", conformance.ServerPort, err))
	}
	return w, nil
}

// close closes the transports and the environment.
func (w *world) close() error {
	var errs []error
	for _, tr := range w.trs {
		errs = append(errs, tr.Close())
	}
	if w.ce != nil && w.ce.Close != nil {
		errs = append(errs, w.ce.Close())
	}
	return errors.Join(errs...)
}

// arrival is a packet a tester host received.
type arrival struct {
	host int
	at   time.Time
	src  netip.Addr
	prio uint8
	pkt  []byte
}

// inbox holds arrivals until the run loop takes them (the transports'
// handlers run on the simulation's events or on socket goroutines).
type inbox struct {
	mu sync.Mutex
	q  []arrival
}

func (b *inbox) put(c tester.Clock, host int, src netip.Addr, prio uint8, pkt []byte) {
	a := arrival{host: host, at: c.Now(), src: src, prio: prio, pkt: append([]byte(nil), pkt...)}
	b.mu.Lock()
	b.q = append(b.q, a)
	b.mu.Unlock()
	c.Notify()
}

// take returns the arrivals so far and empties the inbox.
func (b *inbox) take(dst []arrival) []arrival {
	b.mu.Lock()
	dst = append(dst[:0], b.q...)
	clear(b.q)
	b.q = b.q[:0]
	b.mu.Unlock()
	return dst
}

func (b *inbox) empty() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.q) == 0
}
