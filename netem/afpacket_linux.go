package netem

import (
	"fmt"
	"github.com/homatest/homatest/internal/afpacket"
	"github.com/homatest/homatest/internal/nsexec"
	"net"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// packetSock is an AF_PACKET socket bound to one interface, with its
// receive ring when it has one.
type packetSock struct {
	fd      int
	ifindex int
	name    string
	mtu     int                // the interface's MTU when opened
	ring    *afpacket.SlotRing // its receive ring (afpacket.SlotRing)
}

// DefaultSocketBuffer is the receive and send buffer of each AF_PACKET
// socket (SO_RCVBUFFORCE/SO_SNDBUFFORCE): 8 MiB, the size that avoided
// kernel drops at 50 kpps in the platform measurements. With a receive
// ring it only holds the frames too large for a ring slot.
const DefaultSocketBuffer = 8 << 20

// DefaultRxRing is the receive ring of each switch port (SwitchConfig.RxRing):
// 16 MiB, 10,240 slots of 1,600 bytes at MTU 1500, about 100 ms of a
// 1 Gbit/s link's full-size frames, or the 20,000-frame burst of
// BenchmarkSwitch at 100 bytes while the forwarding thread keeps half the
// sender's pace.
const DefaultRxRing = 16 << 20

// openPacketSockets opens one non-blocking AF_PACKET socket per interface
// name inside namespace ns: bound to the interface for all protocols,
// promiscuous, ignoring the frames it sends itself (PACKET_IGNORE_OUTGOING),
// with kernel receive timestamps (SO_TIMESTAMPNS), buf-byte buffers and,
// when ring > 0, a TPACKET_V2 receive ring of about ring bytes
// (afpacket.SlotRing).
func openPacketSockets(ns netns.NsHandle, names []string, buf, ring int) ([]packetSock, error) {
	var socks []packetSock
	err := nsexec.Do(ns, func() error {
		for _, name := range names {
			s, err := openPacketSocket(name, buf, ring)
			if err != nil {
				return err
			}
			socks = append(socks, s)
		}
		return nil
	})
	if err != nil {
		closeSocks(socks)
		return nil, err
	}
	return socks, nil
}

func openPacketSocket(name string, buf, ring int) (packetSock, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return packetSock{}, fmt.Errorf("netem: port %s: %w (is the interface in the switch namespace?)", name, err)
	}
	// No PACKET_QDISC_BYPASS: frames the switch sends go through the
	// device's transmit path, where packet taps (the harness's capture on
	// every switch port) see them; with the bypass, every delivered frame
	// was missing from the capture's "out" view.
	fd, err := afpacket.Open()
	if err != nil {
		return packetSock{}, fmt.Errorf("netem: port %s: %w", name, err)
	}
	s := packetSock{fd: fd, ifindex: ifi.Index, name: name, mtu: ifi.MTU}
	fail := func(what string, err error) (packetSock, error) {
		s.close()
		return packetSock{}, fmt.Errorf("netem: port %s: %s: %w", name, what, err)
	}
	for _, o := range []struct {
		level, opt, v int
		what          string
	}{
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING"},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS"},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, buf, "SO_RCVBUFFORCE"},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, buf, "SO_SNDBUFFORCE"},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			return fail(o.what, err)
		}
	}
	if ring > 0 {
		if s.ring, err = afpacket.NewSlotRing(fd, ring, ifi.MTU); err != nil {
			return fail("receive ring", err)
		}
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("promiscuous mode", err)
	}
	if err := afpacket.Bind(fd, ifi.Index); err != nil {
		return fail("bind", err)
	}
	return s, nil
}

// close unmaps the socket's ring and closes it.
func (s *packetSock) close() {
	if s.ring != nil {
		s.ring.Unmap()
		s.ring = nil
	}
	unix.Close(s.fd)
}

// closeSocks closes every socket of socks.
func closeSocks(socks []packetSock) {
	for i := range socks {
		socks[i].close()
	}
}

// kernelDrops returns the frames the kernel dropped for the socket since
// the last call (PACKET_STATISTICS reads and resets its counters):
// receive buffer or ring full.
func (s *packetSock) kernelDrops() uint64 {
	st, err := unix.GetsockoptTpacketStats(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0
	}
	return uint64(st.Drops)
}

// txBatch sends frames with one sendmmsg call.
type txBatch struct {
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	n    int
}

func newTxBatch(n int) *txBatch {
	b := &txBatch{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n)}
	for i := range n {
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
	}
	return b
}

func (b *txBatch) full() bool { return b.n == len(b.hdrs) }

func (b *txBatch) add(p []byte) {
	b.iovs[b.n].Base = &p[0]
	b.iovs[b.n].SetLen(len(p))
	b.n++
}

// send transmits the batch on fd and returns how many frames the kernel
// took; failed, if set, is called with the index and error of each frame
// the kernel refused (the frame is skipped and the rest are sent).
func (b *txBatch) send(fd int, failed func(i int, err error)) (sent int) {
	i := 0
	for i < b.n {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[i])), uintptr(b.n-i), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			// Skip the frame the kernel refused (too big, buffer full).
			if failed != nil {
				failed(i, errno)
			}
			i++
			continue
		}
		sent += int(n)
		i += int(n)
	}
	b.n = 0
	return sent
}

// setTimerSlack asks for 1 ns timer slack on the calling thread, so ppoll
// timeouts wake as early as the kernel can.
func setTimerSlack() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) }

// ppoll waits for fds up to d (negative: forever).
func ppoll(fds []unix.PollFd, d time.Duration) error {
	var ts *unix.Timespec
	if d >= 0 {
		t := unix.NsecToTimespec(int64(d))
		ts = &t
	}
	_, err := unix.Ppoll(fds, ts, nil)
	if err == unix.EINTR {
		return nil
	}
	return err
}
