package netem

import (
	"encoding/binary"
	"fmt"
	"github.com/homatest/homatest/internal/nsexec"
	"net"
	"time"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// packetSock is an AF_PACKET socket bound to one interface.
type packetSock struct {
	fd      int
	ifindex int
	name    string
	mtu     int // the interface's MTU when opened
}

// DefaultSocketBuffer is the receive and send buffer of each AF_PACKET
// socket (SO_RCVBUFFORCE/SO_SNDBUFFORCE): 8 MiB, the size that avoided
// kernel drops at 50 kpps in the platform measurements.
const DefaultSocketBuffer = 8 << 20

// htons converts a 16-bit value to network order (AF_PACKET protocol field).
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openPacketSockets opens one non-blocking AF_PACKET socket per interface
// name inside namespace ns: bound to the interface for all protocols,
// promiscuous, ignoring the frames it sends itself (PACKET_IGNORE_OUTGOING),
// with kernel receive timestamps (SO_TIMESTAMPNS) and buf-byte buffers.
func openPacketSockets(ns netns.NsHandle, names []string, buf int) ([]packetSock, error) {
	var socks []packetSock
	err := nsexec.Do(ns, func() error {
		for _, name := range names {
			s, err := openPacketSocket(name, buf)
			if err != nil {
				return err
			}
			socks = append(socks, s)
		}
		return nil
	})
	if err != nil {
		for _, s := range socks {
			unix.Close(s.fd)
		}
		return nil, err
	}
	return socks, nil
}

func openPacketSocket(name string, buf int) (packetSock, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return packetSock{}, fmt.Errorf("netem: port %s: %w (is the interface in the switch namespace?)", name, err)
	}
	// No PACKET_QDISC_BYPASS: frames the switch sends go through the
	// device's transmit path, where packet taps (the harness's capture on
	// every switch port) see them; with the bypass, every delivered frame
	// was missing from the capture's "out" view.
	// Protocol 0 receives nothing until bind, so no frame of another
	// interface slips in between socket and bind.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return packetSock{}, fmt.Errorf("netem: port %s: AF_PACKET socket: %w (needs CAP_NET_RAW)", name, err)
	}
	s := packetSock{fd: fd, ifindex: ifi.Index, name: name, mtu: ifi.MTU}
	fail := func(what string, err error) (packetSock, error) {
		unix.Close(fd)
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
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("promiscuous mode", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	return s, nil
}

// maxFrame is the largest frame read: a 64 KiB GSO frame plus headers.
const maxFrame = 65536 + 256

// cmsgSpace is the control buffer per message, room for one timespec cmsg.
const cmsgSpace = 64

// rxBatch receives up to len(hdrs) frames per recvmmsg call, each with
// its kernel receive timestamp.
type rxBatch struct {
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	bufs [][]byte
	ctrl []byte
}

func newRxBatch(n int) *rxBatch {
	b := &rxBatch{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n), ctrl: make([]byte, n*cmsgSpace)}
	for i := range n {
		b.bufs[i] = make([]byte, maxFrame)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(maxFrame)
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.SetIovlen(1)
		b.hdrs[i].Hdr.Control = &b.ctrl[i*cmsgSpace]
	}
	return b
}

// recv reads up to len(b.hdrs) frames without blocking and returns how
// many; 0 with a nil error means nothing was waiting.
func (b *rxBatch) recv(fd int) (int, error) {
	for i := range b.hdrs {
		b.hdrs[i].Hdr.SetControllen(cmsgSpace)
		b.hdrs[i].Hdr.Flags = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		return int(n), nil
	case unix.EAGAIN, unix.EINTR:
		return 0, nil
	}
	return 0, errno
}

// frame returns message i's bytes and kernel timestamp (Unix ns; 0 if the
// kernel gave none).
func (b *rxBatch) frame(i int) ([]byte, int64) {
	n := min(int(b.hdrs[i].Len), maxFrame)
	return b.bufs[i][:n], cmsgTimestamp(b.ctrl[i*cmsgSpace : i*cmsgSpace+int(b.hdrs[i].Hdr.Controllen)])
}

// cmsgTimestamp finds an SCM_TIMESTAMPNS control message in c and returns
// its time in Unix ns, or 0.
func cmsgTimestamp(c []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(c) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(h.Len)
		if l < hdr || l > len(c) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS && l >= hdr+16 {
			sec := int64(binary.NativeEndian.Uint64(c[hdr:]))
			nsec := int64(binary.NativeEndian.Uint64(c[hdr+8:]))
			return sec*1e9 + nsec
		}
		c = c[(l+7)&^7:]
	}
	return 0
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

// send transmits the batch on fd; it returns how many frames the kernel
// took and the error that stopped the rest (the failing frame is skipped).
func (b *txBatch) send(fd int) (sent int, failed int, err error) {
	i := 0
	for i < b.n {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&b.hdrs[i])), uintptr(b.n-i), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			// Skip the frame the kernel refused (too big, buffer full).
			err = errno
			failed++
			i++
			continue
		}
		sent += int(n)
		i += int(n)
	}
	b.n = 0
	return sent, failed, err
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
