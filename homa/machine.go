package homa

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Machine is one Homa host's protocol state as a deterministic state
// machine without I/O (the shape of quinn-proto beside quinn, or h11): every
// input is a method call that carries the current time (a packet, a timer
// expiry, an application call), and every output is taken from it: packets
// to transmit (PollTransmit), application events (PollEvent: a request
// arrived, an RPC completed or failed) and the next time it wants to be
// called (Deadline). It has no goroutines, clocks, channels or locks: the
// same inputs at the same times give the same outputs. Times are offsets
// on the caller's clock (time.Duration since any epoch) and must not go
// backwards.
//
// Drivers: Host runs a Machine in real time over a Transport; package sim
// runs many on one virtual clock. A Machine is not safe for concurrent use.
type Machine struct {
	p      Params
	addr   netip.Addr
	v6     bool
	faults faultSet

	now      time.Duration // time of the current (or latest) input
	sockets  map[uint16]*sock
	nextPort uint16
	nextID   uint64
	reuseID  uint64 // a timed-out RPC's id the next RPC takes (FaultReuseTimedOutID); 0: none
	clients  map[uint64]*rpc
	servers  map[serverKey]*rpc
	// clientList and serverList hold the same RPCs in creation order.
	clientList, serverList rpcList
	peers                  map[netip.Addr]*peer
	tick                   int
	// nextTick is when the next timer pass is due.
	nextTick time.Duration
	// lateGrants are GRANTs FaultRepeatGrants sends after messages completed.
	lateGrants []lateGrant
	outbox     []Transmit // packets built, not yet taken by PollTransmit
	outHead    int
	events     []Event // application events not yet taken by PollEvent
	evHead     int
	grants     grantQueue
	sendQ      sendQueue
	rpcSeq     uint64 // RPCs created so far (rpc.seq)
	lastFIFO   time.Duration
	// linkFree is when the link finishes the DATA handed out so far (the
	// pacer's estimate); DATA may leave while it is at most backlog ahead
	// of now.
	linkFree time.Duration
	backlog  time.Duration
	headroom int
	stats    Stats
	// dataFields and grantFields are the fields of the DATA or GRANT
	// being built: reused, since send keeps nothing of them.
	dataFields  wire.DataFields
	grantFields wire.GrantFields
	// spare holds packet buffers a driver gave back (Reuse), each able to
	// take a full-size packet with the headroom; reusing is set once a
	// driver gives buffers back, and from then on every buffer is made
	// full-size (a driver that keeps its packets, as the simulator, gets
	// buffers of the packet's size).
	spare   [][]byte
	reusing bool
	closed  bool
	// ungranted counts the server RPCs whose response waits for GRANTs
	// (trackUngranted), for WantsInput.
	ungranted int
}

// MachineConfig configures a Machine.
type MachineConfig struct {
	// Addr is the host's IP address (IPv4 or IPv6); required.
	Addr netip.Addr
	// Params are the protocol parameters (DefaultParams if zero).
	Params Params
	// Faults are deliberate misbehaviours (see FaultNames).
	Faults []Fault
	// PacerBacklog is how far ahead of the link the pacer lets DATA go
	// when Params.LinkRate is set: a packet leaves while the link time
	// already handed out ends at most this far after now (HomaModule's
	// max_nic_est_backlog_usecs, 5 µs). 0 means DefaultPacerBacklog.
	PacerBacklog time.Duration
	// Headroom is the bytes left free before every packet the machine
	// builds (Transmit.Frame), so that a driver can put its link and IP
	// headers there without copying the packet.
	Headroom int
}

// DefaultPacerBacklog is the pacer backlog of a Machine whose config gives
// none, and the one Host uses: a user-space host in real time cannot
// sleep a few microseconds (a sleep per 12 µs packet at 1 Gbit/s takes a
// timer tick or more, and would cut the rate tenfold), so it keeps 500 µs
// of link time in hand and the average rate stays the link's. A simulated
// host can keep HomaModule's 5 µs (HomaBacklog).
const DefaultPacerBacklog = 500 * time.Microsecond

// HomaBacklog is HomaModule's max_nic_est_backlog_usecs (5 µs): the NIC
// queue its pacer allows.
const HomaBacklog = 5 * time.Microsecond

// Transmit is one packet a Machine wants sent.
type Transmit struct {
	// Dst is the destination host.
	Dst netip.Addr
	// Prio is the IP priority level 0..7 (written into the IP precedence
	// bits, or priority<<5 of the IPv6 traffic class).
	Prio uint8
	// Packet is the transport bytes (Homa header and payload); the
	// Machine does not keep or reuse it.
	Packet []byte
	// frame is Packet with the free bytes before it
	// (MachineConfig.Headroom).
	frame []byte
}

// Frame returns the buffer that holds Packet with the machine's headroom
// (MachineConfig.Headroom) free before it: len(Frame) is headroom plus
// len(Packet).
func (t Transmit) Frame() []byte {
	if t.frame == nil {
		return t.Packet
	}
	return t.frame
}

// EventKind is the kind of an application Event.
type EventKind uint8

// Event kinds.
const (
	// EventRequest: a request arrived complete at a server socket; answer
	// it with Machine.Reply(now, Event.Request, ...).
	EventRequest EventKind = iota + 1
	// EventCallDone: a client RPC ended: Err is nil and Payload the
	// response, or Err says why it failed (ErrTimeout, ErrClosed).
	EventCallDone
)

// Event is an application event of a Machine.
type Event struct {
	// Kind says what happened (EventRequest, EventCallDone).
	Kind EventKind
	// Port is the local socket's port.
	Port uint16
	// ID is the RPC's local id: the client's (even) id of EventCallDone
	// (as Machine.Call returned it), the server's (odd) id of
	// EventRequest.
	ID uint64
	// Peer is the other end: the client's address and port of a request,
	// the server's of a call.
	Peer netip.AddrPort
	// Payload is the request (EventRequest) or response (EventCallDone)
	// bytes; the Machine does not keep them.
	Payload []byte
	// Err is the failure of EventCallDone (nil: success).
	Err error
	// Request identifies the server RPC of EventRequest for Reply.
	Request RequestRef
}

// RequestRef identifies a server RPC to Machine.Reply. The zero value
// names no RPC.
type RequestRef struct{ r *rpc }

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

// Stats counts a host's packets and events.
type Stats struct {
	// Sent and Received count packets by type (index type-0x10).
	Sent, Received [9]int
	// Dropped counts received packets dropped: malformed, for unknown RPCs
	// or ports, or out of range, and requests a full receive queue
	// refused.
	Dropped int
	// Retransmitted counts DATA packets sent with retransmit=1.
	Retransmitted int
	// Timeouts counts RPCs aborted for silence; Restarts client restarts
	// after RPC_UNKNOWN.
	Timeouts, Restarts int
	// Delivered counts requests handed to server sockets; Duplicates
	// request packets for RPCs already delivered (at-most-once holds).
	Delivered, Duplicates int
	// TxRefused counts packets the transport refused to send (Host: a
	// homa.RefusedError's count, one for another send error): counted in
	// Sent, yet lost before the wire, where no capture shows them.
	TxRefused int
}

type lateGrant struct {
	tick int
	dst  netip.Addr
	f    wire.GrantFields
}

// ackedRPC is an entry of peer.acked: the server RPC of client id id
// was freed by an ack at tick.
type ackedRPC struct {
	id   uint64
	tick int
}

type serverKey struct {
	client netip.Addr
	id     uint64 // client's (even) id
}

// peer is what a host knows about another host.
type peer struct {
	cutoffs       [8]uint32 // the peer's unscheduled cutoffs
	cutoffVersion uint16    // version of those cutoffs; 0 = none received
	lastCutoffs   int       // jiffy in which we last sent CUTOFFS to it
	acks          []wire.AckEntry
	// acked remembers the server RPCs of this peer freed by an ack, in
	// ascending client id from ackedHead on, so that request packets
	// delayed past the ack cannot recreate and re-execute the RPC
	// (at-most-once; a gap HomaModule documents). A client's ids grow, so
	// an ack mostly appends and a new request is mostly above them all;
	// entries are forgotten from the front 10 timeouts after their ack
	// (one acked later than those behind it keeps them a little longer).
	acked     []ackedRPC
	ackedHead int
}

// isAcked reports whether client id was acked.
func (p *peer) isAcked(id uint64) bool {
	a := p.acked[p.ackedHead:]
	if len(a) == 0 || id > a[len(a)-1].id {
		return false
	}
	_, ok := slices.BinarySearchFunc(a, id, ackedCmp)
	return ok
}

func ackedCmp(e ackedRPC, id uint64) int { return cmp.Compare(e.id, id) }

// addAcked remembers that client id was acked at tick.
func (p *peer) addAcked(id uint64, tick int) {
	a := p.acked[p.ackedHead:]
	if len(a) == 0 || id > a[len(a)-1].id {
		p.acked = append(p.acked, ackedRPC{id, tick})
		return
	}
	i, ok := slices.BinarySearchFunc(a, id, ackedCmp)
	if ok {
		a[i].tick = tick
		return
	}
	p.acked = slices.Insert(p.acked, p.ackedHead+i, ackedRPC{id, tick})
}

// forgetAcked forgets the acked RPCs at the front acked before tick.
func (p *peer) forgetAcked(before int) {
	for p.ackedHead < len(p.acked) && p.acked[p.ackedHead].tick < before {
		p.ackedHead++
	}
	if p.ackedHead > 0 && p.ackedHead >= len(p.acked)/2 {
		n := copy(p.acked, p.acked[p.ackedHead:])
		p.acked, p.ackedHead = p.acked[:n], 0
	}
}

// sock is a socket of a Machine: a port, a server (below 32768) or a
// client.
type sock struct {
	port   uint16
	server bool
}

// NewMachine returns a host at cfg.Addr whose first timer pass is due one
// tick after now. Errors: no address, bad parameters or fault names.
func NewMachine(cfg MachineConfig, now time.Duration) (*Machine, error) {
	if !cfg.Addr.IsValid() {
		return nil, errors.New("homa: MachineConfig.Addr is required")
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
	h := &Machine{p: p, addr: cfg.Addr, v6: cfg.Addr.Is6() && !cfg.Addr.Is4In6(), faults: fs,
		now: now, nextTick: now + p.Tick, lastFIFO: math.MinInt64 / 2, linkFree: now, backlog: cfg.PacerBacklog, headroom: max(0, cfg.Headroom),
		sockets: map[uint16]*sock{}, nextPort: 32768, nextID: 2,
		clients: map[uint64]*rpc{}, servers: map[serverKey]*rpc{}, peers: map[netip.Addr]*peer{}}
	if h.backlog <= 0 {
		h.backlog = DefaultPacerBacklog
	}
	k := p.MaxOvercommit
	if fs[FaultOvercommit] {
		k = math.MaxInt // every grantable message is active
	}
	h.grants, h.sendQ = newGrantQueue(k), newSendQueue()
	if fs[FaultIDZero] {
		h.nextID = 0
	}
	return h, nil
}

// Addr returns the host's address.
func (h *Machine) Addr() netip.Addr { return h.addr }

// Params returns the host's parameters.
func (h *Machine) Params() Params { return h.p }

// Stats returns the host's counters.
func (h *Machine) Stats() Stats { return h.stats }

// advance moves the machine's clock to now (never backwards).
func (h *Machine) advance(now time.Duration) {
	if now > h.now {
		h.now = now
	}
}

// checkQueues, when set (by this package's tests), checks h.grants and
// h.sendQ against the host's RPC tables after every input.
var checkQueues atomic.Pointer[func(h *Machine)]

// settled ends every input method: the test hook checks the queues.
func (h *Machine) settled() {
	if check := checkQueues.Load(); check != nil {
		(*check)(h)
	}
}

// HandleTimeout runs what is due by now: the timer pass when its tick has
// come (HomaModule homa_timer; missed ticks are not run twice: the next
// is due a whole tick after the last one due), and lets the pacer send.
func (h *Machine) HandleTimeout(now time.Duration) {
	h.advance(now)
	if h.closed {
		return
	}
	if now >= h.nextTick {
		h.onTick()
		h.nextTick += h.p.Tick
		if h.nextTick <= now {
			h.nextTick += (now-h.nextTick)/h.p.Tick*h.p.Tick + h.p.Tick
		}
	}
	h.settled()
}

// Deadline returns when the machine next needs HandleTimeout: the next
// timer tick, or earlier when DATA waits for the pacer. It is the earliest
// time at which anything can change without another input; a past time
// means now. After Close it returns false.
func (h *Machine) Deadline() (time.Duration, bool) {
	if h.closed {
		return 0, false
	}
	t := h.nextTick
	if h.p.LinkRate > 0 && h.hasData() {
		t = min(t, h.linkFree-h.backlog)
		if h.deferExempt() != nil {
			t = min(t, h.now)
		}
	}
	return t, true
}

// deferExempt returns the RPC whose next first transmission may leave
// past the pacer, or nil: the sender's SRPT head when it has at most
// defer_min_bytes left to send (HomaModule homa_xmit_data calls
// homa_pacer_check_nic_q only for messages with more left), so that a
// small message is not held behind a backlogged link.
func (h *Machine) deferExempt() *rpc {
	if h.p.DeferMinBytes <= 0 {
		return nil
	}
	r := h.nextFresh()
	if r == nil || r.out.length()-r.out.next > h.p.DeferMinBytes {
		return nil
	}
	return r
}

// hasData reports whether DATA waits to be sent.
func (h *Machine) hasData() bool {
	return h.nextFresh() != nil
}

// PollTransmit returns the next packet to send at now and true, or false
// when nothing may leave now. Control packets built by earlier inputs come
// first, in the order they were built; then DATA in the sender's order
// (retransmissions and sender SRPT, HomaModule homa_pacer.c), one packet
// per call, as long as the pacer allows (Params.LinkRate). Call it until
// it returns false after every input.
func (h *Machine) PollTransmit(now time.Duration) (Transmit, bool) {
	h.advance(now)
	if h.outHead == len(h.outbox) && !h.closed {
		if h.p.LinkRate <= 0 || h.linkFree-h.now <= h.backlog {
			if n := h.sendOne(); n > 0 {
				h.chargeLink(n)
			}
		} else if r := h.deferExempt(); r != nil {
			if n := h.sendFresh(r); n > 0 {
				h.chargeLink(n)
			}
		}
		h.settled()
	}
	if h.outHead == len(h.outbox) {
		h.outbox, h.outHead = h.outbox[:0], 0
		return Transmit{}, false
	}
	t := h.outbox[h.outHead]
	h.outbox[h.outHead] = Transmit{}
	h.outHead++
	return t, true
}

// PollEvent returns the next application event and true, or false when
// none is waiting.
func (h *Machine) PollEvent() (Event, bool) {
	if h.evHead == len(h.events) {
		h.events, h.evHead = h.events[:0], 0
		return Event{}, false
	}
	e := h.events[h.evHead]
	h.events[h.evHead] = Event{}
	h.evHead++
	return e, true
}

// Listen opens a server socket on port (1..32767). Errors: port out of
// range or in use, machine closed.
func (h *Machine) Listen(port uint16) error {
	if port == 0 || port >= 32768 {
		return fmt.Errorf("homa: server port %d not in 1..32767", port)
	}
	_, err := h.socket(port, true)
	return err
}

// Dial opens a client socket on the next free port from 32768 up and
// returns the port.
func (h *Machine) Dial() (uint16, error) { return h.socket(0, false) }

func (h *Machine) socket(port uint16, server bool) (uint16, error) {
	if h.closed {
		return 0, ErrClosed
	}
	if port == 0 {
		for i := 0; i < 32768; i++ {
			p := h.nextPort
			h.nextPort++
			if h.nextPort == 0 {
				h.nextPort = 32768
			}
			if h.sockets[p] == nil {
				port = p
				break
			}
		}
		if port == 0 {
			return 0, errors.New("homa: no free client port")
		}
	} else if h.sockets[port] != nil {
		return 0, fmt.Errorf("homa: port %d in use", port)
	}
	h.sockets[port] = &sock{port: port, server: server}
	return port, nil
}

// CloseSocket closes the socket on port: its client RPCs end with
// ErrClosed (EventCallDone), its server RPCs are forgotten, and it
// receives no more requests. No packet is sent (HomaModule does not tell
// servers). A port without a socket is ignored.
func (h *Machine) CloseSocket(port uint16) {
	s := h.sockets[port]
	if s == nil {
		return
	}
	delete(h.sockets, port)
	h.clientList.each(func(r *rpc) {
		if r.sock == s {
			h.finishClient(r, ErrClosed)
		}
	})
	h.serverList.each(func(r *rpc) {
		if r.sock == s {
			h.dropServer(r)
		}
	})
	h.settled()
}

// Call starts an RPC from the client socket on port to dst with request
// at now and returns its (even) id; the machine keeps request (not a
// copy) until the RPC ends, so the caller must not change it; its end comes as an
// EventCallDone. Errors: ErrEmpty, ErrTooLong, ErrClosed (machine closed
// or no socket on port).
func (h *Machine) Call(now time.Duration, port uint16, dst netip.AddrPort, request []byte) (uint64, error) {
	h.advance(now)
	if len(request) == 0 {
		return 0, ErrEmpty
	}
	if len(request) > wire.MaxMessageLength {
		return 0, ErrTooLong
	}
	s := h.sockets[port]
	if h.closed || s == nil {
		return 0, ErrClosed
	}
	h.rpcSeq++
	r := &rpc{id: h.nextID, client: true, peer: dst.Addr(), peerPort: dst.Port(), sock: s,
		state: clientSending, seq: h.rpcSeq}
	if h.reuseID != 0 {
		r.id, h.reuseID = h.reuseID, 0
	} else {
		h.nextID += 2
	}
	h.setOut(r, request)
	h.addClient(r)
	h.queueSend(r)
	h.settled()
	return r.id, nil
}

// Abort forgets client RPC id without telling the server and without an
// event (the application gave up on it). An id the machine no longer has
// is ignored.
func (h *Machine) Abort(id uint64) {
	if r := h.clients[id]; r != nil {
		h.dropClient(r)
		h.settled()
	}
}

// Reply sends response to the request q names, from now; the machine
// keeps response (not a copy) until the RPC ends, so the caller must not
// change it.
// Errors: ErrTooLong/ErrEmpty; replying twice or to an RPC the machine no
// longer has (the client gave up, or a timeout) returns nil without
// sending, as HomaModule does.
func (h *Machine) Reply(now time.Duration, q RequestRef, response []byte) error {
	h.advance(now)
	if len(response) == 0 {
		return ErrEmpty
	}
	if len(response) > wire.MaxMessageLength {
		return ErrTooLong
	}
	r := q.r
	if r == nil || h.servers[serverKey{r.peer, r.clientID()}] != r || r.state != serverInService {
		return nil
	}
	h.setOut(r, response)
	r.state = serverSending
	h.trackUngranted(r)
	h.queueSend(r)
	h.settled()
	return nil
}

// Close aborts every client RPC (EventCallDone with ErrClosed) and closes
// every socket; the machine then ignores all input and sends nothing.
func (h *Machine) Close() {
	if h.closed {
		return
	}
	h.clientList.each(func(r *rpc) { h.finishClient(r, ErrClosed) })
	ports := slices.Sorted(maps.Keys(h.sockets))
	for _, port := range ports {
		h.CloseSocket(port)
	}
	h.closed = true
	h.outbox, h.outHead = nil, 0
}

// WantsInput reports whether the machine waits for packets that no
// application call waits for: GRANTs for a response it sends, or the rest
// of a message it grants. A driver whose application calls read the
// packets themselves (Host over a PullTransport) keeps reading while it
// is true and none is waiting.
func (h *Machine) WantsInput() bool {
	return !h.closed && (h.ungranted > 0 || h.grants.len() > 0)
}

// trackUngranted counts server RPC r in h.ungranted while its response is
// not granted to the end.
func (h *Machine) trackUngranted(r *rpc) {
	want := !r.client && r.out != nil && r.out.granted < r.out.length()
	if want != r.ungranted {
		r.ungranted = want
		if want {
			h.ungranted++
		} else {
			h.ungranted--
		}
	}
}

// Closed reports whether Close was called.
func (h *Machine) Closed() bool { return h.closed }

func (h *Machine) peer(a netip.Addr) *peer {
	p := h.peers[a]
	if p == nil {
		p = &peer{lastCutoffs: math.MinInt}
		// A new peer's table is {[7]=0, [6]=INT_MAX} until its CUTOFFS
		// arrive (homa_peer_alloc), whatever num_priorities is: with 7 or
		// 8 levels every unscheduled packet goes at level 6. With fewer,
		// homa_unsched_priority finds no entry holding the message and
		// reads past the table (its level is undefined); the ref uses
		// level num_priorities-2 there.
		switch {
		case h.p.NumPriorities >= 7:
			p.cutoffs[6] = 0x7fffffff
		case h.p.NumPriorities >= 2:
			p.cutoffs[h.p.NumPriorities-2] = 0x7fffffff
		}
		h.peers[a] = p
	}
	return p
}

// peerOf returns r's peer, looked up once per RPC.
func (h *Machine) peerOf(r *rpc) *peer {
	if r.pr == nil {
		r.pr = h.peer(r.peer)
	}
	return r.pr
}

// unschedPriority returns the level for unscheduled packets of a message of
// length bytes to peer pr (homa_unsched_priority).
// Not spec.UnschedPriority on purpose: the checker must catch a bug here.
func (h *Machine) unschedPriority(pr *peer, length int) uint8 {
	for i := h.p.NumPriorities - 1; i > 0; i-- {
		if int64(pr.cutoffs[i]) >= int64(length) {
			return uint8(i)
		}
	}
	return 0
}

// Reuse gives back the buffer of a Transmit this machine built
// (Transmit.Frame) once the driver has sent it and keeps no reference to
// it: later packets are built in it, so that a host in steady state
// allocates no packet buffers. Giving buffers back is optional.
func (h *Machine) Reuse(frame []byte) {
	h.reusing = true
	if cap(frame) >= h.bufSize() && len(h.spare) < 256 {
		h.spare = append(h.spare, frame[:0])
	}
}

// bufSize is the capacity of a packet buffer: the headroom, every
// control header or a DATA header, and a full segment.
func (h *Machine) bufSize() int { return h.headroom + 128 + h.p.maxSegData(h.v6) }

// buffer returns an empty packet buffer of at least size bytes' capacity.
func (h *Machine) buffer(size int) []byte {
	if n := len(h.spare); n > 0 && size <= h.bufSize() {
		b := h.spare[n-1]
		h.spare = h.spare[:n-1]
		return b
	}
	if h.reusing {
		size = max(size, h.bufSize())
	}
	return make([]byte, 0, size)
}

// send queues one packet for transmission, counting it and applying
// priority faults.
func (h *Machine) send(dst netip.Addr, prio uint8, f wire.Fields) {
	size := h.headroom + 128 // every control header, and a DATA header
	if d, ok := f.(*wire.DataFields); ok {
		size += len(d.Payload)
	}
	buf, err := f.AppendTo(h.buffer(size)[:h.headroom], wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true, SetMarks: true})
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
	h.outbox = append(h.outbox, Transmit{Dst: dst, Prio: prio, Packet: buf[h.headroom:], frame: buf})
}

// event queues an application event.
func (h *Machine) event(e Event) { h.events = append(h.events, e) }

// control returns the common header of a control packet for r.
func (h *Machine) control(r *rpc) wire.CommonFields {
	c := wire.CommonFields{Sport: r.sock.port, Dport: r.peerPort, SenderID: r.wireID()}
	if h.faults[FaultControlSequence] {
		c.Sequence = 0x1b2c0
	}
	return c
}

// topPriority is the level of control packets.
func (h *Machine) topPriority() uint8 { return uint8(h.p.NumPriorities - 1) }

// setOut makes data r's outgoing message: U bytes are granted at once.
func (h *Machine) setOut(r *rpc, data []byte) {
	u := min(len(data), h.p.UnschedBytes)
	if h.faults[FaultUnschedOverflow] && len(data) > u {
		u = min(len(data), u+h.p.maxSegData(h.v6))
	}
	r.outMsg = msgOut{data: data, unsched: min(len(data), h.p.UnschedBytes), granted: u}
	r.out = &r.outMsg
}

// finishClient completes a client RPC with err (nil: response received)
// and queues its EventCallDone.
func (h *Machine) finishClient(r *rpc, err error) {
	if h.clients[r.id] != r {
		return
	}
	h.dropClient(r)
	e := Event{Kind: EventCallDone, Port: r.sock.port, ID: r.id, Peer: netip.AddrPortFrom(r.peer, r.peerPort), Err: err}
	if err == nil {
		e.Payload = r.in.buf
	}
	h.event(e)
	timedOut := errors.Is(err, ErrTimeout)
	if timedOut && h.faults[FaultReuseTimedOutID] {
		h.reuseID = r.id
	}
	if err == nil && !h.faults[FaultAckPartialResponse] {
		// (FaultAckPartialResponse queued it at the response's first
		// packet, in handleData.)
		h.queueAck(r)
	}
}

// queueAck queues client RPC r's ack as a pending ack for its server's
// host (HomaModule homa_peer_add_ack, called as the application receives
// the whole response).
func (h *Machine) queueAck(r *rpc) {
	if h.faults[FaultNoAcks] {
		return
	}
	pr := h.peerOf(r)
	a := wire.AckEntry{ClientID: r.id, ServerPort: r.peerPort}
	if len(pr.acks) >= wire.MaxAcksPerPkt {
		// A 6th pending ack: send the five in an ACK whose header
		// names this RPC (homa_peer_add_ack).
		h.send(r.peer, h.topPriority(), &wire.AckFields{Common: h.control(r), Acks: pr.acks})
		pr.acks = pr.acks[:0]
		return
	}
	pr.acks = append(pr.acks, a)
	if h.faults[FaultUnpromptedAck] {
		h.send(r.peer, h.topPriority(), &wire.AckFields{Common: h.control(r)})
	}
}

// addClient enters client RPC r in the machine's tables.
func (h *Machine) addClient(r *rpc) {
	h.clients[r.id] = r
	h.clientList.push(r)
}

// dropClient takes client RPC r out of the machine's tables and queues.
func (h *Machine) dropClient(r *rpc) {
	delete(h.clients, r.id)
	h.clientList.remove(r)
	h.forget(r)
}

// addServer enters server RPC r in the machine's tables.
func (h *Machine) addServer(r *rpc) {
	h.servers[serverKey{r.peer, r.clientID()}] = r
	h.serverList.push(r)
}

// dropServer takes server RPC r out of the machine's tables and queues.
func (h *Machine) dropServer(r *rpc) {
	delete(h.servers, serverKey{r.peer, r.clientID()})
	h.serverList.remove(r)
	h.forget(r)
}
