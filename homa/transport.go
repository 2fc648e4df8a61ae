package homa

import "net/netip"

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
// IP priority level it arrived with and the transport bytes (Homa header
// and payload).
type Received struct {
	Src    netip.Addr
	Prio   uint8
	Packet []byte
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
