package homa

import (
	"net/netip"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
)

// msgOut is a message being sent.
type msgOut struct {
	data    []byte
	unsched int   // U = min(length, unsched_bytes)
	granted int   // grant horizon: bytes below it may be sent
	next    int   // first byte not yet transmitted (tx_end)
	prio    uint8 // scheduled priority from the latest GRANT
}

func (m *msgOut) length() int { return len(m.data) }

// sendable reports whether first transmissions or retransmissions wait.
func (m *msgOut) sendable() bool {
	return m.next < min(m.granted, m.length())
}

// msgIn is a message being received.
type msgIn struct {
	buf          []byte
	recv         byteranges.Set // bytes that arrived
	nrecv        int            // recv.Total(), kept as DATA arrives
	granted      int            // bytes the sender may send (incoming of the first DATA, then GRANTs)
	prio         uint8
	complete     bool
	grantable    bool // its first DATA's incoming fell short of its length (homa_grant_init_rpc)
	completeTick int
	created      time.Duration // when its first packet arrived (Machine clock)
	g            *grantable    // its place in Machine.grants, nil when not grantable
	// recv0 backs recv's first range: a message that arrives in order
	// needs no other.
	recv0 [1]byteranges.Range
}

func (m *msgIn) length() int   { return len(m.buf) }
func (m *msgIn) received() int { return m.nrecv }

// rpcState is where an RPC is in its life.
type rpcState uint8

const (
	// client states
	clientSending rpcState = iota // request being transmitted / response not complete
	// server states
	serverReceiving // request incomplete
	serverInService // request delivered to the application
	serverSending   // response being transmitted
	serverAwaitAck  // response fully transmitted; NEED_ACK until acked
)

// rpc is one RPC at this host (client or server side).
type rpc struct {
	id       uint64 // local id: even at the client, odd at the server
	client   bool
	peer     netip.Addr
	pr       *peer // what the host knows of peer (Machine.peerOf)
	peerPort uint16
	sock     *sock
	state    rpcState
	out      *msgOut
	in       *msgIn
	silent   int  // silent_ticks
	doneTick int  // ticks since the response was fully transmitted
	busied   bool // a server RPC that answered a RESEND with BUSY (FaultForgetHeldRPC, FaultBusySecondResend)
	// needAcked: a server RPC that has sent its first NEED_ACK (first
	// ones and repeats each have their own cap per client host and
	// tick: onTick).
	needAcked bool
	// ungranted: a server RPC counted in Machine.ungranted (its response
	// is not granted to the end).
	ungranted bool
	seq       uint64 // creation order at this host: the last SRPT tie-break
	sendIdx   int    // 1 + index in Machine.sendQ; 0 when not queued
	// prev and next link the RPC into its machine's client or server
	// list, in creation order.
	prev, next *rpc
	// inMsg and outMsg are where in and out point once set: an RPC and
	// its two messages are one allocation.
	inMsg  msgIn
	outMsg msgOut
	// small holds an incoming message of up to smallMsg bytes, so that a
	// small RPC is still one allocation (the application keeps the bytes,
	// and with them this struct, as long as it keeps the payload).
	small [smallMsg]byte
	// srv is what only a server RPC has, allocated with it (newServerRPC).
	srv *serverExtra
}

// serverExtra is the part of a server RPC a Host uses: the Request it
// hands out, and room for a copy of a response of up to smallMsg bytes
// (Request.Reply copies the application's bytes). Both live as long as
// the RPC or the application's reference to either, with no allocation
// of their own; an rpc is never reused, so neither changes under a
// reference the application keeps.
type serverExtra struct {
	req      Request
	smallOut [smallMsg]byte
}

// serverRPC is a server RPC and its serverExtra as one allocation.
type serverRPC struct {
	rpc
	extra serverExtra
}

// newServerRPC returns a zero server RPC whose srv is set.
func newServerRPC() *rpc {
	s := &serverRPC{}
	s.srv = &s.extra
	return &s.rpc
}

// smallMsg is the longest incoming message kept inside its rpc.
const smallMsg = 128

// rpcList is a list of RPCs in the order they were added: the machine
// walks its RPCs in this order, never in a map's random order, so that the
// same inputs give the same packets in the same order.
type rpcList struct{ head, tail *rpc }

// push appends r.
func (l *rpcList) push(r *rpc) {
	r.prev, r.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
}

// remove takes r (in l) out of l.
func (l *rpcList) remove(r *rpc) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next = nil, nil
}

// each calls fn for every RPC of l in order; fn may remove the RPC it is
// given (and no other).
func (l *rpcList) each(fn func(r *rpc)) {
	for r := l.head; r != nil; {
		next := r.next
		fn(r)
		r = next
	}
}

// wireID returns the sender_id this host puts in packets of the RPC.
func (r *rpc) wireID() uint64 { return r.id }

// clientID returns the RPC's even client id.
func (r *rpc) clientID() uint64 { return r.id &^ 1 }
