package homa

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Transport moves Homa packets (the transport bytes: Homa header and
// payload) between hosts. Implementations: homa/memnet (in memory) and raw
// IP sockets.
type Transport interface {
	// LocalAddr is the host's IP address.
	LocalAddr() netip.Addr
	// Send transmits pkt to dst with IP priority prio (0..7, written into
	// the IP precedence bits). It must not block for long and must not
	// call the handler synchronously. The transport may keep pkt only
	// until Send returns.
	Send(dst netip.Addr, prio uint8, pkt []byte) error
	// SetHandler installs the function called for every packet received
	// (from another goroutine). The handler may keep pkt.
	SetHandler(func(src netip.Addr, prio uint8, pkt []byte))
	// Close stops delivery.
	Close() error
}

// Received is one packet a BatchTransport received: its source host, the
// IP priority level it arrived with, the transport bytes (Homa header
// and payload) and, from a transport that reports it (rawip's
// RecvTimestamps), the kernel's receive time (zero otherwise; a Host
// keeps its own clock and ignores it).
type Received struct {
	Src  netip.Addr
	Prio uint8
	// TOS is the IPv4 TOS byte or the IPv6 traffic class the packet
	// arrived with, when HasTOS (rawip reports it). Prio is the
	// transport's reading of it: the precedence bits, for IPv6 with
	// HomaModule's current shift (priority<<5); a reader that knows the
	// sender wrote priority<<4 (HomaModule before 548056f) reads TOS
	// again (the conformance tester, by the IUT's profile).
	TOS    uint8
	HasTOS bool
	Packet []byte
	At     time.Time
}

// RefusedError is a send's error when the kernel refused N of its
// packets (no route, a full qdisc or buffer, a firewall): they are lost
// before the wire, with nothing in a capture to show it. Err is the
// first refusal. Host counts N in Stats.TxRefused.
type RefusedError struct {
	N   int
	Err error
}

// Error says how many packets were refused and why the first was.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%d packet(s) refused: %v", e.N, e.Err)
}

// Unwrap returns the first refusal's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// refusedCount is how many packets a failed send lost: a RefusedError's
// N, or the one packet of a plain error.
func refusedCount(err error) int {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.N
	}
	return 1
}

// BatchTransport is a Transport that moves packets in batches, so that a
// host pays one system call and one lock acquisition for many packets
// (homa/rawip: sendmmsg and recvmmsg). Host uses it when its transport
// has it.
type BatchTransport interface {
	Transport
	// Headroom is the number of bytes the transport wants free before
	// each packet it sends (Transmit.Frame), e.g. for the IP header it
	// writes there instead of copying the packet.
	Headroom() int
	// SendBatch transmits pkts in order; an error says why the first
	// packet that could not be sent failed (the others are still tried).
	// The transport may use each packet's Frame, headroom included, only
	// until SendBatch returns.
	SendBatch(pkts []Transmit) error
	// SetBatchHandler installs the function called with the packets
	// received (from another goroutine), in arrival order. It replaces the
	// SetHandler function. The handler must not keep the slice or the
	// packets' bytes after it returns: the transport reuses them.
	SetBatchHandler(func(pkts []Received))
}

// PullTransport is a BatchTransport whose packets the host reads itself,
// in the goroutines that wait for them (homa/rawip): a goroutine blocked
// in Call or Receive reads the socket while it waits (the leader; the
// others wait for it), so the packet that ends its wait needs no handoff
// from a reader goroutine. Host uses it when its transport has it, and
// then never calls SetHandler or SetBatchHandler.
type PullTransport interface {
	BatchTransport
	// Pull hands the packets waiting to f in the calling goroutine, as
	// one batch (the transport's buffers, valid until f returns), and
	// returns how many it handed. With wait it first waits until some
	// arrive or Interrupt is called (then it may return 0). The host
	// calls it from one goroutine at a time. An error means the
	// transport can read no more (closed).
	Pull(wait bool, f func(pkts []Received)) (int, error)
	// Interrupt makes a Pull waiting for packets return soon (or the next
	// one, if none waits now), so that its caller looks again at what it
	// waits for. Safe from any goroutine.
	Interrupt()
}

// DrainTransport is a Transport whose handler is fed from a queue of
// packets that have arrived (homa/memnet's delay line). Before a timer
// pass a Host over it has the transport hand over what has arrived
// (Drain), as over a PullTransport it reads what waits: HomaModule's
// softirq handles arrived packets before its timer thread runs, so a pass
// never counts silence for an RPC whose packets wait in the transport
// (a delivery goroutine starved of CPU).
type DrainTransport interface {
	Transport
	// Drain calls the handler, in the calling goroutine and in arrival
	// order, for every packet that has arrived and waits for delivery,
	// and returns how many. Deliveries never overlap, so the caller must
	// not hold a lock the handler takes.
	Drain() int
}
