//go:build linux

package rawip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

// RecvBuffer is the socket receive buffer requested, in bytes.
const RecvBuffer = 16 << 20

// Transport sends and receives Homa packets on a raw IPv4 socket.
type Transport struct {
	addr    netip.Addr
	pc      net.PacketConn
	raw     *ipv4.RawConn
	mu      sync.Mutex
	wmu     sync.Mutex // serialises writes
	handler func(src netip.Addr, prio uint8, pkt []byte)
	done    chan struct{}
	wg      sync.WaitGroup
}

// Open opens a raw socket for IP protocol 146 bound to addr (an IPv4
// address of this network namespace) and starts receiving. Errors: an IPv6
// address, missing privileges (EPERM: run as root or with CAP_NET_RAW), or
// an address that is not local.
func Open(addr netip.Addr) (*Transport, error) {
	if !addr.Is4() {
		return nil, fmt.Errorf("rawip: %v: only IPv4 is supported", addr)
	}
	pc, err := net.ListenPacket(fmt.Sprintf("ip4:%d", wire.IPProtoHoma), addr.String())
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
	raw, err := ipv4.NewRawConn(pc)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("rawip: %w", err)
	}
	t := &Transport{addr: addr, pc: pc, raw: raw, done: make(chan struct{})}
	t.wg.Add(1)
	go t.readLoop()
	return t, nil
}

// LocalAddr returns the bound address.
func (t *Transport) LocalAddr() netip.Addr { return t.addr }

// SetHandler installs the receive function.
func (t *Transport) SetHandler(h func(src netip.Addr, prio uint8, pkt []byte)) {
	t.mu.Lock()
	t.handler = h
	t.mu.Unlock()
}

// Send transmits pkt to dst with the priority in the TOS precedence bits
// and DF set.
func (t *Transport) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	if !dst.Is4() {
		return fmt.Errorf("rawip: %v: only IPv4 is supported", dst)
	}
	h := &ipv4.Header{Version: 4, Len: ipv4.HeaderLen, TOS: int(wire.TOSForPriority(prio)),
		TotalLen: ipv4.HeaderLen + len(pkt), TTL: 64, Protocol: wire.IPProtoHoma, Flags: ipv4.DontFragment,
		Src: t.addr.AsSlice(), Dst: dst.AsSlice()}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.raw.WriteTo(h, pkt, nil)
}

func (t *Transport) readLoop() {
	defer t.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		h, p, _, err := t.raw.ReadFrom(buf)
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
		src, ok := netip.AddrFromSlice(h.Src.To4())
		dst, ok2 := netip.AddrFromSlice(h.Dst.To4())
		// Raw sockets are not demultiplexed by destination reliably: with
		// several hosts' addresses in one namespace, each socket may see
		// the others' packets. Keep only ours.
		if !ok || !ok2 || src == t.addr || dst != t.addr {
			continue
		}
		t.mu.Lock()
		hd := t.handler
		t.mu.Unlock()
		if hd != nil {
			hd(src, wire.PriorityFromTOS(uint8(h.TOS)), append([]byte(nil), p...))
		}
	}
}

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
