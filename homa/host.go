package homa

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Errors returned by Call and Receive.
var (
	// ErrTimeout: the peer was silent for timeout_ticks (ETIMEDOUT).
	ErrTimeout = errors.New("homa: RPC timed out")
	// ErrClosed: the host or socket was closed.
	ErrClosed = errors.New("homa: closed")
	// ErrTooLong: a message longer than 1,000,000 bytes.
	ErrTooLong = errors.New("homa: message longer than 1000000 bytes")
	// ErrEmpty: a message of 0 bytes (Homa messages carry at least one byte).
	ErrEmpty = errors.New("homa: empty message")
)

// Config configures a Host.
type Config struct {
	// Transport carries the packets; required.
	Transport Transport
	// Params are the protocol parameters (DefaultParams if zero).
	Params Params
	// Faults are deliberate misbehaviours (see FaultNames).
	Faults []Fault
}

// Stats counts a host's packets and events.
type Stats struct {
	// Sent and Received count packets by type (index type-0x10).
	Sent, Received [9]int
	// Dropped counts received packets dropped: malformed, for unknown RPCs
	// or ports, or out of range.
	Dropped int
	// Retransmitted counts DATA packets sent with retransmit=1.
	Retransmitted int
	// Timeouts counts RPCs aborted for silence; Restarts client restarts
	// after RPC_UNKNOWN.
	Timeouts, Restarts int
	// Delivered counts requests handed to server sockets; Duplicates
	// request packets for RPCs already delivered (at-most-once holds).
	Delivered, Duplicates int
}

type lateGrant struct {
	tick int
	dst  netip.Addr
	f    wire.GrantFields
}

type serverKey struct {
	client netip.Addr
	id     uint64 // client's (even) id
}

// peer is what a host knows about another host.
type peer struct {
	cutoffs       [8]uint32 // the peer's unscheduled cutoffs
	cutoffVersion uint16    // version of those cutoffs; 0 = none received
	lastCutoffs   int       // tick at which we last sent CUTOFFS to it
	acks          []wire.AckEntry
}

// Host is one Homa endpoint: an IP address with sockets, like one Linux
// host with the Homa module loaded.
type Host struct {
	p      Params
	tr     Transport
	addr   netip.Addr
	v6     bool
	faults faultSet

	mu sync.Mutex
	// sendMu keeps packets leaving in the order they were built under mu:
	// unlock takes it before releasing mu and holds it while it hands the
	// packets to the transport, so a timer pass cannot send (say) a
	// NEED_ACK ahead of the response DATA a sender pass built before it.
	sendMu   sync.Mutex
	sockets  map[uint16]*Socket
	nextPort uint16
	nextID   uint64
	clients  map[uint64]*rpc
	servers  map[serverKey]*rpc
	peers    map[netip.Addr]*peer
	// acked remembers server RPCs freed by an ack (the tick it came), so
	// that request packets delayed past the ack cannot recreate and
	// re-execute the RPC (at-most-once; a gap HomaModule documents).
	acked map[serverKey]int
	tick  int
	// lateGrants are GRANTs FaultRepeatGrants sends after messages completed.
	lateGrants []lateGrant
	outbox     []outPkt
	retxTurn   bool   // the sender alternates retransmissions and new data
	retxQ      []*rpc // RPCs with retransmissions waiting, in RESEND order
	grants     grantQueue
	sendQ      sendQueue
	rpcSeq     uint64 // RPCs created so far (rpc.seq)
	lastFIFO   time.Time
	stats      Stats
	closed     bool

	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// New starts a host on cfg.Transport. It returns an error for bad
// parameters or fault names.
func New(cfg Config) (*Host, error) {
	if cfg.Transport == nil {
		return nil, errors.New("homa: Config.Transport is required")
	}
	p := cfg.Params
	if p == (Params{}) {
		p = DefaultParams()
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	fs, err := parseFaults(cfg.Faults)
	if err != nil {
		return nil, err
	}
	addr := cfg.Transport.LocalAddr()
	h := &Host{p: p, tr: cfg.Transport, addr: addr, v6: addr.Is6() && !addr.Is4In6(), faults: fs,
		sockets: map[uint16]*Socket{}, nextPort: 32768, nextID: 2,
		clients: map[uint64]*rpc{}, servers: map[serverKey]*rpc{}, peers: map[netip.Addr]*peer{}, acked: map[serverKey]int{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	k := p.MaxOvercommit
	if fs[FaultOvercommit] {
		k = math.MaxInt // every grantable message is active
	}
	h.grants, h.sendQ = newGrantQueue(k), newSendQueue()
	if fs[FaultIDZero] {
		h.nextID = 0
	}
	cfg.Transport.SetHandler(h.receive)
	h.wg.Add(2)
	go h.timerLoop()
	go h.senderLoop()
	return h, nil
}

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.addr }

// Params returns the host's parameters.
func (h *Host) Params() Params { return h.p }

// Stats returns a copy of the host's counters.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Close aborts every RPC, closes every socket, stops the host's goroutines
// and closes the transport.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	for _, r := range h.clients {
		h.finishClient(r, ErrClosed)
	}
	for _, s := range h.sockets {
		s.closeLocked()
	}
	h.mu.Unlock()
	close(h.done)
	h.wg.Wait()
	return h.tr.Close()
}

func (h *Host) peer(a netip.Addr) *peer {
	p := h.peers[a]
	if p == nil {
		p = &peer{lastCutoffs: -1}
		// A new peer's table sends every unscheduled packet at level
		// num_priorities-2 until its CUTOFFS arrive (homa_peer_alloc).
		if h.p.NumPriorities >= 2 {
			p.cutoffs[h.p.NumPriorities-2] = 0x7fffffff
		}
		h.peers[a] = p
	}
	return p
}

// unschedPriority returns the level for unscheduled packets of a message of
// length bytes to peer pr (homa_unsched_priority).
func (h *Host) unschedPriority(pr *peer, length int) uint8 {
	for i := h.p.NumPriorities - 1; i > 0; i-- {
		if int64(pr.cutoffs[i]) >= int64(length) {
			return uint8(i)
		}
	}
	return 0
}

// send queues one packet for transmission, counting it and applying
// priority faults. Called with h.mu held; the packets leave when the caller
// releases the lock through unlock, so no syscall runs under the lock.
func (h *Host) send(dst netip.Addr, prio uint8, f wire.Fields) {
	pkt, err := wire.Encode(f, wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true, SetMarks: true})
	if err != nil {
		panic(fmt.Sprintf("homa: encode %s: %v", f.PacketType(), err)) // a bug in this package
	}
	if f.PacketType() != wire.TypeData && h.faults[FaultControlLowPriority] {
		prio = 0
	}
	if h.faults[FaultWrongPriorityBits] {
		prio >>= 2
	}
	h.stats.Sent[f.PacketType()-wire.MinType]++
	h.outbox = append(h.outbox, outPkt{dst, prio, pkt})
}

// checkQueues, when set (by this package's tests), checks h.grants and
// h.sendQ against the host's RPC tables each time h.mu is released.
var checkQueues atomic.Pointer[func(h *Host)]

// outPkt is a packet waiting for h.mu to be released.
type outPkt struct {
	dst  netip.Addr
	prio uint8
	pkt  []byte
}

// unlock releases h.mu and then transmits the packets queued under it, in
// order.
func (h *Host) unlock() {
	if check := checkQueues.Load(); check != nil {
		(*check)(h)
	}
	out := h.outbox
	h.outbox = nil
	h.sendMu.Lock()
	h.mu.Unlock()
	for _, o := range out {
		_ = h.tr.Send(o.dst, o.prio, o.pkt)
	}
	h.sendMu.Unlock()
}

// control returns the common header of a control packet for r.
func (h *Host) control(r *rpc) wire.CommonFields {
	c := wire.CommonFields{Sport: r.sock.port, Dport: r.peerPort, SenderID: r.wireID()}
	if h.faults[FaultControlSequence] {
		c.Sequence = 0x1b2c0
	}
	return c
}

// topPriority is the level of control packets.
func (h *Host) topPriority() uint8 { return uint8(h.p.NumPriorities - 1) }

func (h *Host) wake() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// timerLoop runs the timer every tick.
func (h *Host) timerLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.p.Tick)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
			h.mu.Lock()
			h.onTick()
			h.unlock()
		}
	}
}
