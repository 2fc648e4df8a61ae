// Package simtcp runs a real TCP implementation on the simulator's hosts:
// gVisor's netstack (gvisor.dev/gvisor/pkg/tcpip: IPv4/IPv6 and TCP with
// SACK, RACK-TLP, CUBIC or NewReno, 200 ms minimum RTO; timestamps off,
// see stripSYNTimestamp) on a stack host of
// package sim, its clock the simulator's virtual clock, its frames through
// the same netem switch core as the Homa hosts', paying the same
// per-packet host cost (sim.Cost). On top it carries RPCs exactly as
// homatest's tcp agent does (agent.ServeTCP): one kept connection per
// client-server pair, dialled on first use; each message one frame (the
// agent's 12-byte header, then the payload); the server answers a
// connection's requests one at a time and in order; TCP_NODELAY. A Host
// is a sim.RPCHost, so sim.Traffic drives Homa and TCP with the same
// sizes and arrival times.
//
// Determinism. netstack processes inbound segments on its own goroutines
// (the TCP dispatcher's processors) and its ManualClock fires timers due
// at one instant in map order and zero-delay timers on new goroutines.
// Here every input is made synchronous: a packet is injected, then the
// stack is paused (stack.Pause returns once every processor has drained
// its queue) and resumed, so the packet's whole effect happens before
// the simulator's next event, with one processor at work at a time; the
// stack's clock is this package's, whose timers are simulator events
// (ordered by time, then by when they were set) fired on the simulator's
// goroutine; the stack's random sources are seeded. Packets, timers and
// socket notifications the stack produces on a processor are collected
// under a mutex and acted on by the simulator's goroutine after the
// pause, in the order they happened. The same seed therefore gives the
// same packets at the same times, whatever GOMAXPROCS or the machine's
// load.
package simtcp

import (
	"errors"
	"fmt"
	"math/rand"
	"net/netip"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/sim"
)

// Congestion control algorithms netstack has (it has no DCTCP: it does
// not implement ECN).
const (
	// CUBIC with HyStart, Linux's default: the default.
	CUBIC = "cubic"
	// Reno is NewReno.
	Reno = "reno"
)

// Config configures a simulated TCP host.
type Config struct {
	// MTU is the link's MTU in bytes (1500 if 0): TCP's MSS is MTU minus
	// the IP and TCP headers.
	MTU int
	// CongestionControl is CUBIC (the default) or Reno.
	CongestionControl string
	// Seed seeds the stack's random choices (ISN and timestamp secrets,
	// ephemeral ports, hash seeds); each host should get its own.
	Seed uint64
}

// nicID is the stack's one NIC.
const nicID = 1

// Host is one simulated host running netstack's TCP: a sim.Stack on its
// switch port and a sim.RPCHost for sim.Traffic. Its methods run on the
// goroutine driving the Sim.
type Host struct {
	s     *sim.Sim
	node  *sim.Host
	addr  netip.Addr
	netp  tcpip.NetworkProtocolNumber
	st    *stack.Stack
	link  *channel.Endpoint
	clk   *clock
	conns map[netip.AddrPort]*conn // client connections by server
	lns   []*listener
	// pumping is set while pump runs (a callback's call re-enters it).
	pumping bool
	cnt     struct{ dialled, accepted, broken, sent, received uint64 }

	// mu guards what the stack's goroutines hand to the simulator's:
	// packets sent, endpoints with events, timers to schedule.
	mu    sync.Mutex
	out   [][]byte
	ready []servicer
}

// servicer is a connection or a listener with socket events to act on.
type servicer interface{ service() }

// Add adds a TCP host named name at addr on sim's next switch port.
// Errors: those of sim.AddStackHost, a bad config, netstack's.
func Add(s *sim.Sim, name string, addr netip.Addr, cfg Config) (*Host, error) {
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if cfg.MTU < 576 || cfg.MTU > 65535 {
		return nil, fmt.Errorf("simtcp: MTU %d: want 576..65535", cfg.MTU)
	}
	newTCP := tcp.NewProtocolCUBIC
	switch cfg.CongestionControl {
	case "", CUBIC:
	case Reno:
		newTCP = tcp.NewProtocol
	default:
		return nil, fmt.Errorf("simtcp: congestion control %q: want cubic or reno (netstack has no DCTCP)", cfg.CongestionControl)
	}
	h := &Host{s: s, addr: addr.Unmap(), conns: map[netip.AddrPort]*conn{}}
	h.clk = &clock{h: h}
	rng := rand.New(rand.NewSource(int64(cfg.Seed)))
	h.st = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{newTCP},
		Clock:              h.clk,
		RandSource:         &lockedSource{src: rand.NewSource(rng.Int63())},
		SecureRNG:          &lockedReader{r: rand.New(rand.NewSource(rng.Int63()))},
	})
	sack := tcpip.TCPSACKEnabled(true)
	if err := h.st.SetTransportProtocolOption(tcp.ProtocolNumber, &sack); err != nil {
		return nil, fmt.Errorf("simtcp: SACK: %v", err)
	}
	h.link = channel.New(256, uint32(cfg.MTU), "")
	h.link.AddNotify(h)
	if err := h.st.CreateNIC(nicID, h.link); err != nil {
		return nil, fmt.Errorf("simtcp: NIC: %v", err)
	}
	h.netp = ipv4.ProtocolNumber
	subnet := header.IPv4EmptySubnet
	if h.addr.Is6() {
		h.netp, subnet = ipv6.ProtocolNumber, header.IPv6EmptySubnet
	}
	pa := tcpip.ProtocolAddress{Protocol: h.netp, AddressWithPrefix: tcpip.AddrFromSlice(h.addr.AsSlice()).WithPrefix()}
	if err := h.st.AddProtocolAddress(nicID, pa, stack.AddressProperties{}); err != nil {
		return nil, fmt.Errorf("simtcp: address %v: %v", addr, err)
	}
	h.st.SetRouteTable([]tcpip.Route{{Destination: subnet, NIC: nicID}})
	node, err := s.AddStackHost(name, h.addr, h)
	if err != nil {
		h.st.Close()
		return nil, err
	}
	h.node = node
	return h, nil
}

// Node returns the host's switch port.
func (h *Host) Node() *sim.Host { return h.node }

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.addr }

// Close stops the stack's goroutines (the host sends nothing after it).
func (h *Host) Close() {
	h.st.Close()
	h.st.Wait()
}

// DeliverIP takes an IP packet the switch delivered (sim.Stack): it is
// injected into the stack and processed completely before it returns.
func (h *Host) DeliverIP(pkt []byte) {
	h.clk.sync()
	h.cnt.received++
	pb := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(pkt)})
	h.link.InjectInbound(h.netp, pb)
	pb.DecRef()
	h.settle()
	h.pump()
}

// settle returns once the stack's processors have handled every segment
// queued to them: Pause waits for each to drain its queue and stop.
func (h *Host) settle() {
	h.st.Pause()
	h.st.Resume()
}

// WriteNotify takes a packet the stack wrote to its link (channel's
// Notification); it runs on whichever goroutine the stack sent from.
func (h *Host) WriteNotify() {
	for {
		pb := h.link.Read()
		if pb == nil {
			return
		}
		var b []byte
		for _, s := range pb.AsSlices() {
			b = append(b, s...)
		}
		pb.DecRef()
		h.mu.Lock()
		h.out = append(h.out, b)
		h.mu.Unlock()
	}
}

// notify queues x for service (a socket event; any goroutine).
func (h *Host) notify(x servicer, queued *bool) {
	h.mu.Lock()
	if !*queued {
		*queued = true
		h.ready = append(h.ready, x)
	}
	h.mu.Unlock()
}

// pump acts on what the stack produced, on the simulator's goroutine:
// sends its packets, schedules its timers and serves socket events, until
// none is left.
func (h *Host) pump() {
	if h.pumping {
		return
	}
	h.pumping = true
	defer func() { h.pumping = false }()
	for {
		h.mu.Lock()
		out, ready := h.out, h.ready
		h.out, h.ready = nil, nil
		h.mu.Unlock()
		timers := h.clk.takeArmed()
		if len(out) == 0 && len(ready) == 0 && len(timers) == 0 {
			return
		}
		for _, p := range out {
			stripSYNTimestamp(p)
			h.cnt.sent++
			if err := h.node.SendIP(p); err != nil {
				panic(err) // the stack sends IP packets of its own family
			}
		}
		for _, t := range timers {
			h.s.At(t.at, func() { h.clk.fire(t) })
		}
		for _, x := range ready {
			x.service()
		}
	}
}

// AddStats adds the host's TCP counters to st: packets sent and received,
// segments retransmitted, retransmission timeouts, connections dialled,
// accepted and broken.
func (h *Host) AddStats(st *agent.Stats) {
	ts := h.st.Stats().TCP
	st.PacketsSent += h.cnt.sent
	st.PacketsReceived += h.cnt.received
	st.Retransmitted += ts.Retransmits.Value()
	st.Timeouts += ts.Timeouts.Value()
	if st.Extra == nil {
		st.Extra = map[string]uint64{}
	}
	st.Extra["connections_dialled"] += h.cnt.dialled
	st.Extra["connections_accepted"] += h.cnt.accepted
	st.Extra["connections_broken"] += h.cnt.broken
}

// Listen serves RPCs on port (sim.RPCHost): every connection accepted
// there answers its requests one at a time, in order.
func (h *Host) Listen(port uint16, serve func(req []byte, peer netip.AddrPort, reply func(resp []byte))) error {
	h.clk.sync()
	var wq waiter.Queue
	ep, terr := h.st.NewEndpoint(tcp.ProtocolNumber, h.netp, &wq)
	if terr != nil {
		return fmt.Errorf("simtcp: %v", terr)
	}
	if terr := ep.Bind(tcpip.FullAddress{Port: port}); terr != nil {
		ep.Close()
		return fmt.Errorf("simtcp: bind port %d: %v", port, terr)
	}
	l := &listener{h: h, ep: ep, serve: serve}
	l.entry = waiter.NewFunctionEntry(waiter.ReadableEvents, func(waiter.EventMask) { h.notify(l, &l.queued) })
	wq.EventRegister(&l.entry)
	if terr := ep.Listen(4096); terr != nil {
		ep.Close()
		return fmt.Errorf("simtcp: listen on port %d: %v", port, terr)
	}
	h.lns = append(h.lns, l)
	h.pump()
	return nil
}

// errBroken is the error of calls on a connection that broke.
var errBroken = errors.New("simtcp: connection broken")

// Call sends request to dst over the kept connection to it, dialling it
// first if there is none (sim.RPCHost). done gets the response, or the
// connection's failure.
func (h *Host) Call(dst netip.AddrPort, request []byte, done func(resp []byte, err error)) (func(), error) {
	if len(request) < 1 || len(request) > agent.MaxMessage {
		return nil, fmt.Errorf("simtcp: request of %d bytes: want 1..%d", len(request), agent.MaxMessage)
	}
	h.clk.sync()
	c := h.conns[dst]
	if c == nil {
		var err error
		if c, err = h.dial(dst); err != nil {
			return nil, err
		}
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = done
	c.send(id, request)
	c.flush()
	h.pump()
	return func() { delete(c.calls, id) }, nil
}

// dial opens the client connection to dst.
func (h *Host) dial(dst netip.AddrPort) (*conn, error) {
	var wq waiter.Queue
	ep, terr := h.st.NewEndpoint(tcp.ProtocolNumber, h.netp, &wq)
	if terr != nil {
		return nil, fmt.Errorf("simtcp: %v", terr)
	}
	c := newConn(h, ep, &wq, nil)
	c.dst, c.calls = dst, map[uint64]func([]byte, error){}
	c.connecting = true
	h.conns[dst] = c
	h.cnt.dialled++
	terr = ep.Connect(tcpip.FullAddress{NIC: nicID, Addr: tcpip.AddrFromSlice(dst.Addr().Unmap().AsSlice()), Port: dst.Port()})
	if _, started := terr.(*tcpip.ErrConnectStarted); terr != nil && !started {
		delete(h.conns, dst)
		ep.Close()
		return nil, fmt.Errorf("simtcp: connect to %v: %v", dst, terr)
	}
	return c, nil
}

// listener is a listening endpoint.
type listener struct {
	h      *Host
	ep     tcpip.Endpoint
	entry  waiter.Entry
	serve  func(req []byte, peer netip.AddrPort, reply func(resp []byte))
	queued bool // guarded by h.mu
}

// service accepts every connection the listener has ready.
func (l *listener) service() {
	l.h.mu.Lock()
	l.queued = false
	l.h.mu.Unlock()
	for {
		var peer tcpip.FullAddress
		ep, wq, terr := l.ep.Accept(&peer)
		if terr != nil {
			return
		}
		l.h.cnt.accepted++
		a, _ := netip.AddrFromSlice(peer.Addr.AsSlice())
		c := newConn(l.h, ep, wq, l.serve)
		c.peer = netip.AddrPortFrom(a, peer.Port)
		c.service()
	}
}

// lockedSource is a rand.Source safe for the stack's goroutines.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Int63()
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.Seed(seed)
}

// lockedReader is a seeded byte source for the stack's "secure" random
// numbers (ISN and timestamp secrets): reproducible, not secret.
type lockedReader struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (r *lockedReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Read(p)
}

// epoch is the stack's wall clock at virtual time 0.
var epoch = time.Unix(0, 0)

// Stack returns the host's netstack (for its counters).
func (h *Host) Stack() *stack.Stack { return h.st }
