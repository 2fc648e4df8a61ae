package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
)

// ServerPort is the port the IUT serves requests on during the suite.
const ServerPort = 4000

// Env is the world the specs run in: the IUT, and tester hosts from which
// peers play the other end.
type Env struct {
	// IUT is the implementation under test.
	IUT Target
	// Testers opens a fresh transport on tester host i (0-based; at least
	// two tester hosts exist). Specs wrap it in a tester.Peer.
	Testers []func() (homa.Transport, error)
	// TesterAddrs are the tester hosts' IPv4 addresses.
	TesterAddrs []netip.Addr
	// Testers6 and TesterAddrs6 are the same tester hosts' IPv6 side, for
	// the specs that run over IPv6 (overIPv6); none: the environment
	// carries no IPv6, and those specs are unsupported.
	Testers6     []func() (homa.Transport, error)
	TesterAddrs6 []netip.Addr
	// Profile is the spec profile the checks use ("linux"; in namespaces
	// the one of the wire format the IUT's hello names, e.g. "linux-2024").
	Profile string
	// Slack is the timing tolerance added to every timing window: measured
	// noise of this environment times HOMATEST_TIME_SCALE (see
	// measureNoise); in virtual time, sim.ViewTolerance.
	Slack time.Duration
	// QuietSlack is the slack a quiet machine gives (slackFor(0); in
	// virtual time sim.ViewTolerance): a timing check that passes only
	// with Slack beyond it is timing-inconclusive (slackOnly), as the
	// wider slack cannot tell the IUT's lateness from the machine's.
	QuietSlack time.Duration
	// Delivery is the worst round trip between a tester and the IUT the
	// noise measurement saw (measureNoise; 0 before it, and in virtual
	// time): how long a tester's packet may take to reach the IUT's
	// protocol code (Env.setReaction).
	Delivery time.Duration
	// Clock is the time the specs' peers keep and every wait of a spec
	// waits on (tester.WallClock, or the simulation's tester.SimClock).
	Clock tester.Clock
	// Virtual is set when the environment runs on virtual time (NewSimEnv):
	// timing is exact, so no noise is measured, windows get no slack and
	// no stall excuses a finding.
	Virtual bool
	// Describe names the environment in reports ("namespaces: 3 hosts, bridge").
	Describe string
	// NewBench builds n fresh IUT hosts behind a switch with the given
	// impairment for a passive spec (nil: passive specs are unsupported).
	NewBench func(n int, imp LinkImpairment) (*Bench, error)
	// Stalls measures when this process and the IUT's processes were kept
	// from running (nil: none measured, e.g. in simulated time); a timing
	// finding that a measured stall explains is timing-inconclusive.
	Stalls *stall.Monitor
	// Close tears the environment down.
	Close func() error
	// RunCapture is the capture of every packet the active specs' hosts
	// sent and received, complete and marked once Close has returned
	// (markTesterPackets), which the pass judges whole after its specs
	// (judgeRunCapture); "" when the environment keeps none.
	RunCapture string
	// RunCaptureLost, set by Close when it could not complete RunCapture
	// (then ""), is why: the pass then reports RUN-capture not judged,
	// with it, rather than leaving the result out silently.
	RunCaptureLost string

	nextID  atomic.Uint64
	mu      sync.Mutex
	peers   []*tester.Peer
	cutoffs map[netip.Addr]*tester.CutoffsHost // per tester address (openPeer)
	// listened are the IUT's server ports beyond ServerPort (listenPort),
	// by their options.
	listened map[agent.ListenOptions]uint16
}

// listenPort returns a port of the IUT's served with options o: one whose
// server answers each request o.ReplyDelay after it came, as an
// application computing its response would, or one that serves IPv6
// clients (o.IPv6: the linux agent's ServerPort serves IPv4 alone on a
// dual-stack host). The first call for an o makes the IUT listen on a new
// port after ServerPort, the next return it (a rerun spec listens once).
// Errors: the IUT's to listen.
func (e *Env) listenPort(ctx context.Context, o agent.ListenOptions) (uint16, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.listened[o]; ok {
		return p, nil
	}
	p := ServerPort + 1 + uint16(len(e.listened))
	if err := e.IUT.Listen(ctx, p, o); err != nil {
		return 0, err
	}
	if e.listened == nil {
		e.listened = map[agent.ListenOptions]uint16{}
	}
	e.listened[o] = p
	return p, nil
}

// openPeer opens a tester peer on tester host i, at its IPv6 address when
// v6 (Testers6), reading the IUT's IPv6 priority levels with its
// profile's shift (tester.Peer.SetIPv6Shift), that answers stale DATA with CUTOFFS as a HomaModule
// host holding the IUT's cutoffs and cutoff_version would (the version a
// tester's DATA carries): once per IUT tick per peer, the limit shared by
// every peer of the host's address. The peer's packets are marked in the
// run's capture (addPeer).
func (e *Env) openPeer(i int, v6 bool) (*tester.Peer, error) {
	open := e.Testers
	if v6 {
		open = e.Testers6
	}
	tr, err := open[i]()
	if err != nil {
		return nil, err
	}
	p := tester.New(tr, e.Clock)
	p.SetWire(e.Params().Wire)
	// The IUT's IPv6 levels as it writes them: priority<<4 before
	// HomaModule 548056f (its profile says), <<5 since.
	p.SetIPv6Shift(e.Params().IPv6PrioShift)
	p.AnswerCutoffs(e.cutoffsHost(p.Addr()))
	e.addPeer(p)
	return p, nil
}

// cutoffsHost is tester address a's side of the cutoff_version exchange
// (the IUT keeps a peer per address: homa_peer_get), created with the
// IUT's cutoffs on first use.
func (e *Env) cutoffsHost(a netip.Addr) *tester.CutoffsHost {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cutoffs == nil {
		e.cutoffs = map[netip.Addr]*tester.CutoffsHost{}
	}
	h := e.cutoffs[a]
	if h == nil {
		pr := e.Params()
		h = tester.NewCutoffsHost(pr.UnschedCutoffs, pr.CutoffVersion, ctrlLevel(pr), e.tick())
		e.cutoffs[a] = h
	}
	return h
}

// addPeer remembers a tester peer, so that the run's capture can mark the
// packets testers sent (see markTesterPackets).
func (e *Env) addPeer(p *tester.Peer) {
	e.mu.Lock()
	e.peers = append(e.peers, p)
	e.mu.Unlock()
}

// testerPackets returns every packet the testers sent so far.
func (e *Env) testerPackets() []*tester.Packet {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*tester.Packet
	for _, p := range e.peers {
		for _, r := range p.Log() {
			if r.Sent {
				out = append(out, r)
			}
		}
	}
	return out
}

// Params are the IUT's protocol parameters.
func (e *Env) Params() spec.Params { return e.IUT.Info().Params }

// NewRPCID returns a fresh client RPC id (even, unique in the run) for a
// tester playing a client.
func (e *Env) NewRPCID() uint64 { return 1000 + 2*e.nextID.Add(1) }

// tick is the IUT's timer tick.
func (e *Env) tick() time.Duration {
	if t := e.Params().Tick; t > 0 {
		return t
	}
	return time.Millisecond
}

// ticks converts n IUT timer ticks to a duration.
func (e *Env) ticks(n int) time.Duration { return time.Duration(n) * e.tick() }

func (e *Env) String() string {
	i := e.IUT.Info()
	return fmt.Sprintf("%s %s at %s (%s)", i.Impl, i.Version, i.Addr, e.Describe)
}
