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
