//go:build linux

package rawip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

// RecvBuffer is the socket receive buffer requested, in bytes.
const RecvBuffer = 16 << 20

// Transport sends and receives Homa packets on a raw IPv4 socket.
type Transport struct {
	addr    netip.Addr
	pc      net.PacketConn
	raw     *ipv4.RawConn    // IPv4: header written by us (IP_HDRINCL)
	p6      *ipv6.PacketConn // IPv6: traffic class per packet (IPV6_TCLASS)
	mu      sync.Mutex
	wmu     sync.Mutex // serialises writes
	handler func(src netip.Addr, prio uint8, pkt []byte)
	maxSeg  int // HomaModule's max_seg_data on addr's interface (splitGSO)
	done    chan struct{}
	wg      sync.WaitGroup
}

// Open opens a raw socket for IP protocol 146 bound to addr (an IPv4
// address of this network namespace) and starts receiving. Errors: an IPv6
// address, missing privileges (EPERM: run as root or with CAP_NET_RAW), or
// an address that is not local.
func Open(addr netip.Addr) (*Transport, error) {
	network := fmt.Sprintf("ip4:%d", wire.IPProtoHoma)
	if addr.Is6() && !addr.Is4In6() {
		network = fmt.Sprintf("ip6:%d", wire.IPProtoHoma)
	} else if !addr.Is4() {
		return nil, fmt.Errorf("rawip: %v: not an IP address", addr)
	}
	pc, err := net.ListenPacket(network, addr.String())
	if err != nil {
		return nil, fmt.Errorf("rawip: open raw socket for IP protocol %d on %v (needs root or CAP_NET_RAW): %w", wire.IPProtoHoma, addr, err)
	}
	// A large receive buffer: a burst of unscheduled packets from many
	// senders must not overflow the socket (platform notes: 5-14 % drops
	// at 50 kpps with the default). SO_RCVBUFFORCE lifts rmem_max for root.
	if sc, ok := pc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, RecvBuffer) != nil {
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, RecvBuffer)
				}
			})
		}
	}
	t := &Transport{addr: addr, pc: pc, done: make(chan struct{}), maxSeg: maxSegDataFor(addr)}
	if addr.Is4() {
		if t.raw, err = ipv4.NewRawConn(pc); err != nil {
			pc.Close()
			return nil, fmt.Errorf("rawip: %w", err)
		}
	} else {
		t.p6 = ipv6.NewPacketConn(pc)
		if err := t.p6.SetControlMessage(ipv6.FlagTrafficClass|ipv6.FlagDst, true); err != nil {
			pc.Close()
			return nil, fmt.Errorf("rawip: %w", err)
		}
	}
	t.wg.Add(1)
	if t.p6 != nil {
		go t.readLoop(t.read6)
	} else {
		go t.readLoop(t.read4)
	}
	return t, nil
}

// SetMark sets the socket mark (SO_MARK, needs CAP_NET_ADMIN) of the
// packets this transport sends: a silenced harness host
// (harness.Host.Silence) lets only packets with its tester mark out.
func (t *Transport) SetMark(mark uint32) error {
	sc, ok := t.pc.(syscall.Conn)
	if !ok {
		return errors.New("rawip: socket has no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("rawip: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, int(mark)) }); err != nil {
		return fmt.Errorf("rawip: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("rawip: SO_MARK: %w", serr)
	}
	return nil
}

// LocalAddr returns the bound address.
func (t *Transport) LocalAddr() netip.Addr { return t.addr }

// SetHandler installs the receive function.
func (t *Transport) SetHandler(h func(src netip.Addr, prio uint8, pkt []byte)) {
	t.mu.Lock()
	t.handler = h
	t.mu.Unlock()
}

// Send transmits pkt to dst with the priority in the IP precedence bits
// (IPv4 TOS, DF set; IPv6 traffic class, priority << 5 as HomaModule main).
func (t *Transport) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.p6 != nil {
		if !dst.Is6() {
			return fmt.Errorf("rawip: %v: an IPv6 socket sends to IPv6 addresses", dst)
		}
		cm := &ipv6.ControlMessage{TrafficClass: int(wire.TOSForPriority(prio))}
		_, err := t.p6.WriteTo(pkt, cm, &net.IPAddr{IP: dst.AsSlice()})
		return err
	}
	if !dst.Is4() {
		return fmt.Errorf("rawip: %v: an IPv4 socket sends to IPv4 addresses", dst)
	}
	h := &ipv4.Header{Version: 4, Len: ipv4.HeaderLen, TOS: int(wire.TOSForPriority(prio)),
		TotalLen: ipv4.HeaderLen + len(pkt), TTL: 64, Protocol: wire.IPProtoHoma, Flags: ipv4.DontFragment,
		Src: t.addr.AsSlice(), Dst: dst.AsSlice()}
	return t.raw.WriteTo(h, pkt, nil)
}

// readLoop receives packets until Close: read returns one packet's
// source, destination, priority and payload (ok false to skip it).
func (t *Transport) readLoop(read func(buf []byte) (src, dst netip.Addr, prio uint8, payload []byte, ok bool, err error)) {
	defer t.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		src, dst, prio, p, ok, err := read(buf)
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		// Raw sockets are not demultiplexed by destination reliably: with
		// several hosts' addresses in one namespace, each socket may see
		// the others' packets. Keep only ours.
		if !ok || src == t.addr || dst != t.addr {
			continue
		}
		t.mu.Lock()
		hd := t.handler
		t.mu.Unlock()
		if hd == nil {
			continue
		}
		// A kernel Homa peer's multi-segment frame reaches the core as the
		// DATA packets it holds.
		if segs := splitGSO(p, t.maxSeg); segs != nil {
			for _, s := range segs {
				hd(src, prio, s)
			}
			continue
		}
		hd(src, prio, append([]byte(nil), p...))
	}
}

// read4 reads an IPv4 packet with its header (IP_HDRINCL sockets).
func (t *Transport) read4(buf []byte) (src, dst netip.Addr, prio uint8, payload []byte, ok bool, err error) {
	h, p, _, err := t.raw.ReadFrom(buf)
	if err != nil {
		return
	}
	src, ok1 := netip.AddrFromSlice(h.Src.To4())
	dst, ok2 := netip.AddrFromSlice(h.Dst.To4())
	return src, dst, wire.PriorityFromTOS(uint8(h.TOS)), p, ok1 && ok2, nil
}

// read6 reads an IPv6 packet: the kernel strips the header; destination
// and traffic class come from control messages.
func (t *Transport) read6(buf []byte) (src, dst netip.Addr, prio uint8, payload []byte, ok bool, err error) {
	n, cm, from, err := t.p6.ReadFrom(buf)
	if err != nil {
		return
	}
	ia, ok0 := from.(*net.IPAddr)
	if !ok0 || cm == nil {
		return
	}
	src, ok1 := netip.AddrFromSlice(ia.IP)
	dst, ok2 := netip.AddrFromSlice(cm.Dst)
	return src, dst, wire.PriorityFromTrafficClass(uint8(cm.TrafficClass), 5), buf[:n], ok1 && ok2, nil
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
	sc, ok := t.pc.(syscall.Conn)
	if !ok {
		return mi, errors.New("rawip: socket has no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return mi, fmt.Errorf("rawip: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
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
	err := t.pc.Close()
	t.wg.Wait()
	return err
}
