//go:build linux

package rawip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// RecvBuffer is the socket receive buffer requested, in bytes.
const RecvBuffer = 16 << 20

// batchSize is how many packets one sendmmsg or recvmmsg call moves at
// most.
const batchSize = 32

// maxPacket is the largest packet read: a 64 KiB IP packet (a kernel
// peer's GSO frame) and room to spare.
const maxPacket = 65536 + 256

// cmsgSpace is the control buffer of one message: room for an
// IPV6_TCLASS and an IPV6_PKTINFO control message (an IP_TOS one when
// sending over IPv4).
const cmsgSpace = 128

// Transport sends and receives Homa packets on a raw IP socket for
// protocol 146, in batches: sendmmsg sends the packets a host's input
// produced in one system call (the IPv4 TOS or IPv6 traffic class per
// packet in a control message; the kernel writes the IP header, so the
// packets are never copied in user space), and each recvmmsg call takes up
// to batchSize packets into buffers that are reused. A homa.Host reads
// them itself, in the goroutine that waits for them (Pull,
// homa.PullTransport); a handler installed with SetBatchHandler or
// SetHandler (a plain homa.Transport, for peers that keep packets) is
// fed by a reader goroutine of the transport's, started then.
type Transport struct {
	addr   netip.Addr
	v6     bool
	pc     net.PacketConn // the *net.IPConn: bind, close and Go's poller
	rc     syscall.RawConn
	maxSeg int // HomaModule's max_seg_data on addr's interface (splitGSO)

	mu      sync.Mutex
	handler func(src netip.Addr, prio uint8, pkt []byte)
	batch   func(pkts []homa.Received)

	wmu sync.Mutex // serialises sends; guards tx
	tx  *txBatch

	// prx is Pull's receive state (one Pull at a time); pullGot its
	// batch; interrupted is set by Interrupt once it has put the read
	// deadline in the past, and Pull clears both.
	prx         *rxBatch
	pullGot     []homa.Received
	interrupted atomic.Bool

	// stamps is set by RecvTimestamps: received packets carry the
	// kernel's receive time (homa.Received.At).
	stamps atomic.Bool

	reading bool // readLoop started (under mu)
	closed  bool // Close called (under mu)
	done    chan struct{}
	wg      sync.WaitGroup
}

// Open opens a raw socket for IP protocol 146 bound to addr (an IPv4 or
// IPv6 address of this network namespace) and starts receiving. Errors:
// missing privileges (EPERM: run as root or with CAP_NET_RAW), or an
// address that is not local.
func Open(addr netip.Addr) (*Transport, error) { return OpenProto(addr, wire.IPProtoHoma) }

// OpenProto is Open for IP protocol proto: 253 (wire.IPProtoHoma2024)
// talks to HomaModule linux_6.1.38, whose Homa had that number.
func OpenProto(addr netip.Addr, proto uint8) (*Transport, error) {
	network := fmt.Sprintf("ip4:%d", proto)
	v6 := addr.Is6() && !addr.Is4In6()
	if v6 {
		network = fmt.Sprintf("ip6:%d", proto)
	} else if !addr.Is4() {
		return nil, fmt.Errorf("rawip: %v: not an IP address", addr)
	}
	pc, err := net.ListenPacket(network, addr.String())
	if err != nil {
		return nil, fmt.Errorf("rawip: open raw socket for IP protocol %d on %v (needs root or CAP_NET_RAW): %w", proto, addr, err)
	}
	rc, err := pc.(syscall.Conn).SyscallConn()
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("rawip: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setup(int(fd), v6) }); err != nil || serr != nil {
		pc.Close()
		return nil, fmt.Errorf("rawip: %w", errors.Join(err, serr))
	}
	t := &Transport{addr: addr, v6: v6, pc: pc, rc: rc, done: make(chan struct{}), maxSeg: maxSegDataFor(addr), tx: newTxBatch(),
		prx: newRxBatch(batchSize, v6)}
	return t, nil
}

// setup sets the socket options of a new raw socket: a large receive
// buffer (a burst of unscheduled packets from many senders must not
// overflow it: 5-14 % drops at 50 kpps with the default in the platform
// notes; SO_RCVBUFFORCE lifts rmem_max for root), and for IPv4 the
// header the kernel writes: DF set and no fragments (IP_PMTUDISC_PROBE: a
// packet above the device's MTU fails with EMSGSIZE), TTL 64; for IPv6
// the traffic class and destination of received packets.
//
// IPv4 packets do not carry a header of our own (IP_HDRINCL): with it the
// kernel routes each packet as a known next hop (FLOWI_FLAG_KNOWN_NH in
// net/ipv4/raw.c), and __mkroute_output in net/ipv4/route.c caches no such
// route to a directly attached host, so every packet sent allocated a
// route and freed it through RCU (8% of a 100-byte echo's CPU time, perf);
// without it the route is the next hop's cached one, and the TOS travels
// in an IP_TOS control message.
func setup(fd int, v6 bool) error {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, RecvBuffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, RecvBuffer)
	}
	if !v6 {
		for _, o := range [][2]int{{unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE}, {unix.IP_TTL, 64}} {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, o[0], o[1]); err != nil {
				return fmt.Errorf("IPv4 socket option %d: %w", o[0], err)
			}
		}
		return nil
	}
	for _, o := range []int{unix.IPV6_RECVTCLASS, unix.IPV6_RECVPKTINFO} {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, o, 1); err != nil {
			return fmt.Errorf("IPv6 socket option %d: %w", o, err)
		}
	}
	return nil
}

// SetMark sets the socket mark (SO_MARK, needs CAP_NET_ADMIN) of the
// packets this transport sends: a silenced harness host
// (harness.Host.Silence) lets only packets with its tester mark out.
func (t *Transport) SetMark(mark uint32) error {
	var serr error
	if err := t.rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark)) }); err != nil {
		return fmt.Errorf("rawip: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("rawip: SO_MARK: %w", serr)
	}
	return nil
}

// RecvTimestamps makes the kernel stamp each received packet
// (SO_TIMESTAMPNS) and the transport hand the stamp on
// (homa.Received.At): the time the packet entered this host's network
// namespace (netif_rx, with net.core.netdev_tstamp_prequeue at its
// default 1), before the softirq backlog, the socket queue and this
// process's scheduling delayed it. A tester judging the IUT's timing from
// its own log needs it: on a machine whose CPUs are busy, a packet that
// crossed the switch in 25 µs reached the tester's handler 9 ms later.
// Call it before SetHandler, SetBatchHandler or Pull.
func (t *Transport) RecvTimestamps() error {
	var serr error
	if err := t.rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil {
		return fmt.Errorf("rawip: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("rawip: SO_TIMESTAMPNS: %w", serr)
	}
	t.stamps.Store(true)
	return nil
}

// LocalAddr returns the bound address.
func (t *Transport) LocalAddr() netip.Addr { return t.addr }

// SetHandler installs the receive function, which may keep the packets
// it is given (each is a copy), and starts the reader goroutine that
// calls it. Pull must not be used then.
func (t *Transport) SetHandler(h func(src netip.Addr, prio uint8, pkt []byte)) {
	t.mu.Lock()
	t.handler, t.batch = h, nil
	t.mu.Unlock()
	t.startReader()
}

// SetBatchHandler installs the function that receives every batch of
// packets (homa.BatchTransport); the packets are the reader's buffers,
// valid until it returns. It starts the reader goroutine that calls it;
// Pull must not be used then.
func (t *Transport) SetBatchHandler(h func(pkts []homa.Received)) {
	t.mu.Lock()
	t.handler, t.batch = nil, h
	t.mu.Unlock()
	t.startReader()
}

// startReader starts readLoop once, unless the transport is closed.
func (t *Transport) startReader() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reading || t.closed {
		return
	}
	t.reading = true
	t.wg.Add(1)
	go t.readLoop()
}

// longAgo is a read deadline in the past: Interrupt's.
var longAgo = time.Unix(1, 0)

// Pull reads the packets waiting on the socket (up to batchSize, one
// recvmmsg call) in the calling goroutine and hands them to f as one
// batch, valid until f returns (homa.PullTransport). With wait it first
// waits until packets arrive (in Go's poller, as a read of a net.Conn
// does), or until Interrupt; without, it returns at once when none are
// waiting. It returns how many packets it handed to f. One Pull at a
// time, and none once a handler is set. Errors: net.ErrClosed after
// Close (a failed recvmmsg counts as a read of nothing, as the reader
// goroutine skips it).
func (t *Transport) Pull(wait bool, f func(pkts []homa.Received)) (int, error) {
	if t.interrupted.Swap(false) {
		// Interrupt put the deadline in the past before it set the flag:
		// a Pull that misses the flag returns at once and sees it next
		// time, so none repeats forever. This one returns without reading
		// at all: the interruption may have come after the caller last
		// looked at what it waits for, so it must look again.
		_ = t.pc.SetReadDeadline(time.Time{})
		return 0, nil
	}
	rx := t.prx
	var n int
	var err error
	if wait {
		n, err = rx.recv(t.rc, t.stamps.Load())
	} else {
		n, err = rx.recvNow(t.rc, t.stamps.Load())
	}
	if err != nil {
		if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
			return 0, err
		}
		return 0, nil // a deadline (Interrupt) or a failed read: nothing this time
	}
	t.pullGot = t.collect(rx, n, t.pullGot[:0])
	got := len(t.pullGot)
	if got > 0 {
		f(t.pullGot)
	}
	clear(t.pullGot)
	return got, nil
}

// Interrupt makes a Pull waiting for packets return soon without them
// (or the next Pull, if none waits now); safe from any goroutine.
func (t *Transport) Interrupt() {
	_ = t.pc.SetReadDeadline(longAgo)
	t.interrupted.Store(true)
}

// Headroom is 0: the kernel writes the IP header.
func (t *Transport) Headroom() int { return 0 }

// Send transmits pkt to dst with the priority in the IP precedence bits
// (IPv4 TOS, DF set; IPv6 traffic class, priority << 5 as HomaModule main).
func (t *Transport) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	return t.SendBatch([]homa.Transmit{{Dst: dst, Prio: prio, Packet: pkt}})
}

// SendBatch transmits pkts in order with as few sendmmsg calls as it can;
// a packet the kernel refuses (no route, a full buffer, a firewall) is
// skipped, and once the rest are sent a *homa.RefusedError says how many
// were and why the first was (an error of the socket itself is returned
// as it is).
func (t *Transport) SendBatch(pkts []homa.Transmit) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	var first error
	refused := 0
	for len(pkts) > 0 {
		n := min(len(pkts), batchSize)
		if err := t.tx.fill(pkts[:n], t.v6); err != nil && first == nil {
			first = err
		}
		if err := t.tx.send(t.rc); err != nil && first == nil {
			first = err
		}
		refused += t.tx.refused
		pkts = pkts[n:]
	}
	if refused > 0 {
		return &homa.RefusedError{N: refused, Err: first}
	}
	return first
}

// readLoop receives batches of packets until Close.
func (t *Transport) readLoop() {
	defer t.wg.Done()
	rx := newRxBatch(batchSize, t.v6)
	var got []homa.Received
	for {
		n, err := rx.recv(t.rc, t.stamps.Load())
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
				return
			}
			continue
		}
		got = t.collect(rx, n, got[:0])
		t.mu.Lock()
		hd, bh := t.handler, t.batch
		t.mu.Unlock()
		switch {
		case len(got) == 0:
		case bh != nil:
			bh(got)
		case hd != nil:
			for _, r := range got {
				hd(r.Src, r.Prio, append([]byte(nil), r.Packet...))
			}
		}
		clear(got)
	}
}

// collect appends the first n packets of rx that are ours to got.
func (t *Transport) collect(rx *rxBatch, n int, got []homa.Received) []homa.Received {
	for i := range n {
		src, dst, tos, p, at, ok := rx.packet(i)
		// Raw sockets are not demultiplexed by destination reliably:
		// with several hosts' addresses in one namespace, each socket
		// may see the others' packets. Keep only ours.
		if !ok || src == t.addr || dst != t.addr {
			continue
		}
		prio := wire.PriorityFromTOS(tos)
		if t.v6 {
			prio = wire.PriorityFromTrafficClass(tos, wire.IPv6PriorityShift(wire.VersionCurrent))
		}
		// A kernel Homa peer's multi-segment frame reaches the core
		// as the DATA packets it holds.
		if segs := splitGSO(p, t.maxSeg); segs != nil {
			for _, s := range segs {
				got = append(got, homa.Received{Src: src, Prio: prio, TOS: tos, HasTOS: true, Packet: s, At: at})
			}
			continue
		}
		got = append(got, homa.Received{Src: src, Prio: prio, TOS: tos, HasTOS: true, Packet: p, At: at})
	}
	return got
}

// txBatch is the sendmmsg state of a transport: per message an iovec
// for the packet, the destination and a control message for its
// priority.
type txBatch struct {
	n    int
	hdrs [batchSize]unix.Mmsghdr
	iovs [batchSize]unix.Iovec
	sa4  [batchSize]unix.RawSockaddrInet4
	sa6  [batchSize]unix.RawSockaddrInet6
	ctl  [batchSize][cmsgSpace]byte
	sent int
	err  error
	// refused counts the packets of the last fill and send the kernel
	// refused (fill: a wrong address family).
	refused int
	call    func(fd uintptr) bool // sendFn bound once: no allocation per send
}

func newTxBatch() *txBatch {
	b := &txBatch{}
	b.call = b.sendFn
	return b
}

// fill prepares pkts (at most batchSize) for one sendmmsg call; a packet
// whose destination is of the wrong family is left out and reported.
// The priority goes in a control message per packet: IP_TOS (IPv4) or
// IPV6_TCLASS (IPv6), as the precedence bits.
func (b *txBatch) fill(pkts []homa.Transmit, v6 bool) error {
	b.n, b.refused = 0, 0
	var bad error
	for _, p := range pkts {
		i := b.n
		h := &b.hdrs[i]
		*h = unix.Mmsghdr{}
		if len(p.Packet) == 0 {
			continue
		}
		level, typ := unix.IPPROTO_IP, unix.IP_TOS
		if v6 {
			if !p.Dst.Is6() || p.Dst.Is4In6() {
				bad = fmt.Errorf("rawip: %v: an IPv6 socket sends to IPv6 addresses", p.Dst)
				b.refused++
				continue
			}
			b.sa6[i] = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: p.Dst.As16()}
			h.Hdr.Name = (*byte)(unsafe.Pointer(&b.sa6[i]))
			h.Hdr.Namelen = unix.SizeofSockaddrInet6
			level, typ = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
		} else {
			if !p.Dst.Is4() {
				bad = fmt.Errorf("rawip: %v: an IPv4 socket sends to IPv4 addresses", p.Dst)
				b.refused++
				continue
			}
			b.sa4[i] = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: p.Dst.As4()}
			h.Hdr.Name = (*byte)(unsafe.Pointer(&b.sa4[i]))
			h.Hdr.Namelen = unix.SizeofSockaddrInet4
		}
		c := b.ctl[i][:unix.CmsgSpace(4)]
		ch := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		ch.Level, ch.Type = int32(level), int32(typ)
		ch.SetLen(unix.CmsgLen(4))
		binary.NativeEndian.PutUint32(c[unix.CmsgLen(0):], uint32(wire.TOSForPriority(p.Prio)))
		h.Hdr.Control = &c[0]
		h.Hdr.SetControllen(len(c))
		b.iovs[i].Base = &p.Packet[0]
		b.iovs[i].SetLen(len(p.Packet))
		h.Hdr.Iov = &b.iovs[i]
		h.Hdr.SetIovlen(1)
		b.n++
	}
	return bad
}

// send sends the prepared messages through rc, waiting for room when the
// socket buffer is full; a message the kernel refuses is skipped.
func (b *txBatch) send(rc syscall.RawConn) error {
	b.sent, b.err = 0, nil
	for b.sent < b.n {
		if err := rc.Write(b.call); err != nil {
			return err
		}
	}
	return b.err
}

// sendFn is one sendmmsg call from message b.sent on (rc.Write's
// function: false means wait until the socket is writable).
func (b *txBatch) sendFn(fd uintptr) bool {
	var n uintptr
	var errno syscall.Errno
	if b.n-b.sent == 1 {
		n, _, errno = unix.Syscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[b.sent].Hdr)), unix.MSG_DONTWAIT)
		if errno == 0 {
			n = 1
		}
	} else {
		n, _, errno = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[b.sent])), uintptr(b.n-b.sent), unix.MSG_DONTWAIT, 0, 0)
	}
	switch errno {
	case 0:
		b.sent += int(n)
	case unix.EAGAIN:
		return false
	case unix.EINTR:
	default:
		if b.err == nil {
			b.err = fmt.Errorf("rawip: sendmmsg: %w", errno)
		}
		b.sent++ // the kernel refused this one: skip it
		b.refused++
	}
	return true
}

// rxBatch is the recvmmsg state of the reader: batchSize buffers, source
// addresses and (IPv6) control buffers, reused for every call.
type rxBatch struct {
	v6      bool
	hdrs    []unix.Mmsghdr
	iovs    []unix.Iovec
	bufs    [][]byte
	sa6     []unix.RawSockaddrInet6
	ctl     [][cmsgSpace]byte
	n       int
	err     error
	call    func(fd uintptr) bool
	callNow func(fd uintptr) // recvFn for rc.Control
}

func newRxBatch(n int, v6 bool) *rxBatch {
	b := &rxBatch{v6: v6, hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n),
		ctl: make([][cmsgSpace]byte, n)}
	if v6 {
		b.sa6 = make([]unix.RawSockaddrInet6, n)
	}
	for i := range n {
		b.bufs[i] = make([]byte, maxPacket)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(maxPacket)
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
	}
	b.call = b.recvFn
	b.callNow = func(fd uintptr) {
		if !b.recvFn(fd) {
			b.err = unix.EAGAIN
		}
	}
	return b
}

// recv waits for packets and reads up to len(b.hdrs) of them (with their
// control messages when stamps: RecvTimestamps).
func (b *rxBatch) recv(rc syscall.RawConn, stamps bool) (int, error) {
	b.reset(stamps)
	if err := rc.Read(b.call); err != nil {
		return 0, err
	}
	return b.n, b.err
}

// recvNow reads up to len(b.hdrs) packets if some are waiting, without
// waiting.
func (b *rxBatch) recvNow(rc syscall.RawConn, stamps bool) (int, error) {
	b.reset(stamps)
	if err := rc.Control(b.callNow); err != nil {
		return 0, err
	}
	if b.err == unix.EAGAIN {
		return 0, nil
	}
	return b.n, b.err
}

// reset prepares the headers for a recvmmsg call, with room for control
// messages over IPv6 (traffic class, destination) and when stamps (the
// receive timestamp).
func (b *rxBatch) reset(stamps bool) {
	for i := range b.hdrs {
		h := &b.hdrs[i].Hdr
		h.Flags = 0
		if b.v6 {
			h.Name = (*byte)(unsafe.Pointer(&b.sa6[i]))
			h.Namelen = unix.SizeofSockaddrInet6
		}
		if b.v6 || stamps {
			h.Control = &b.ctl[i][0]
			h.SetControllen(cmsgSpace)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
	}
	b.n, b.err = 0, nil
}

// recvFn is one recvmmsg call (rc.Read's function: false means wait
// until the socket is readable).
func (b *rxBatch) recvFn(fd uintptr) bool {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		b.n = int(n)
	case unix.EAGAIN:
		return false
	default:
		b.err = errno
	}
	return true
}

// packet returns message i's source, destination, IPv4 TOS byte or IPv6
// traffic class, Homa bytes and kernel receive time (zero unless
// RecvTimestamps); ok is false for a packet that is not a whole IP packet
// of the socket's protocol.
func (b *rxBatch) packet(i int) (src, dst netip.Addr, tos uint8, pkt []byte, at time.Time, ok bool) {
	buf := b.bufs[i][:min(int(b.hdrs[i].Len), maxPacket)]
	var tc uint8
	var okDst bool
	c := b.ctl[i][:b.hdrs[i].Hdr.Controllen]
	for len(c) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(c) {
			break
		}
		data := c[unix.CmsgLen(0):l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			at = time.Unix(ts.Unix())
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(data) >= 4:
			tc = uint8(binary.NativeEndian.Uint32(data))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= 16:
			dst, okDst = netip.AddrFrom16([16]byte(data[:16])), true
		}
		c = c[min(len(c), unix.CmsgSpace(l-unix.SizeofCmsghdr)):]
	}
	if b.v6 {
		// The kernel strips the IPv6 header: the source is the message's
		// address, the destination and traffic class come in control
		// messages.
		src = netip.AddrFrom16(b.sa6[i].Addr)
		return src, dst, tc, buf, at, okDst
	}
	if len(buf) < ipv4.HeaderLen || buf[0]>>4 != 4 {
		return
	}
	ihl := int(buf[0]&0x0f) * 4
	if ihl < ipv4.HeaderLen || len(buf) < ihl {
		return
	}
	src = netip.AddrFrom4([4]byte(buf[12:16]))
	dst = netip.AddrFrom4([4]byte(buf[16:20]))
	return src, dst, buf[1], buf[ihl:], at, true
}

// RecvDrops returns the number of packets the kernel dropped for this
// socket since it was opened, mostly because the receive buffer
// (RecvBuffer bytes) was full: the socket's sk_drops, read with
// getsockopt SO_MEMINFO (index SK_MEMINFO_DROPS, include/uapi/linux/sock_diag.h).
func (t *Transport) RecvDrops() (uint64, error) {
	mi, err := t.meminfo()
	return uint64(mi[skMeminfoDrops]), err
}

// meminfo reads the socket's SO_MEMINFO counters.
func (t *Transport) meminfo() (mi [skMeminfoVars]uint32, err error) {
	var serr error
	if err := t.rc.Control(func(fd uintptr) {
		l := uint32(unsafe.Sizeof(mi))
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
		if e != 0 {
			serr = e
		}
	}); err != nil {
		return mi, fmt.Errorf("rawip: %w", err)
	}
	if serr != nil {
		return mi, fmt.Errorf("rawip: getsockopt SO_MEMINFO: %w", serr)
	}
	return mi, nil
}

// SO_MEMINFO layout (include/uapi/linux/sock_diag.h): SK_MEMINFO_DROPS is
// entry 8 of SK_MEMINFO_VARS = 9 (kernels since 4.x).
const (
	skMeminfoDrops = 8
	skMeminfoVars  = 9
)

// Close stops receiving and closes the socket.
func (t *Transport) Close() error {
	select {
	case <-t.done:
		return nil
	default:
	}
	close(t.done)
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	err := t.pc.Close()
	t.wg.Wait()
	return err
}
