package netem

import (
	"fmt"
	"github.com/homatest/homatest/internal/afpacket"
	"github.com/homatest/homatest/internal/nsexec"
	"net"
	"sync/atomic"
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
	mtu     int     // the interface's MTU when opened
	ring    *rxRing // nil: frames are read with recvmmsg
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

// htons converts a 16-bit value to network order (AF_PACKET protocol field).
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openPacketSockets opens one non-blocking AF_PACKET socket per interface
// name inside namespace ns: bound to the interface for all protocols,
// promiscuous, ignoring the frames it sends itself (PACKET_IGNORE_OUTGOING),
// with kernel receive timestamps (SO_TIMESTAMPNS), buf-byte buffers and,
// when ring > 0, a TPACKET_V2 receive ring of about ring bytes.
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
	// Protocol 0 receives nothing until bind, so no frame of another
	// interface slips in between socket and bind, and none reaches the
	// socket's queue before the ring is set up.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return packetSock{}, fmt.Errorf("netem: port %s: AF_PACKET socket: %w (needs CAP_NET_RAW)", name, err)
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
		if s.ring, err = newRxRing(fd, ring, ifi.MTU); err != nil {
			return fail("receive ring", err)
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

// close unmaps the socket's ring and closes it.
func (s *packetSock) close() {
	if s.ring != nil {
		s.ring.unmap()
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

// rxRing is an AF_PACKET TPACKET_V2 receive ring (Documentation/
// networking/packet_mmap.rst): the kernel copies each frame into the
// next free slot of a buffer mapped into this process and hands the slot
// over with its status word, so frames are read without a system call
// or a socket buffer per frame, and a burst fills slots sized to frames
// rather than socket memory charged at the skb's truesize. A frame larger
// than a slot (a GSO super-frame) is cut in its slot, marked
// TP_STATUS_COPY, and queued whole on the socket (PACKET_COPY_THRESH),
// where readCopy reads it. Slots are read and released in order.
type rxRing struct {
	mem       []byte // the mapping (or a test's buffer)
	blockSize int
	perBlock  int // slots per block (slots do not cross blocks)
	frameSize int
	frames    int
	head      int // next slot to read
}

// tpacket2Hdrlen is TPACKET2_HDRLEN: the slot header and the sockaddr_ll
// after it; ringNetOff is the kernel's offset of the network header in a
// slot (TPACKET_ALIGN(hdrlen + 16)): the frame starts at ringNetOff
// minus its link header.
const (
	tpacket2Hdrlen = (unix.SizeofTpacket2Hdr+unix.TPACKET_ALIGNMENT-1)&^(unix.TPACKET_ALIGNMENT-1) + unix.SizeofSockaddrLinklayer
	ringNetOff     = (tpacket2Hdrlen + 16 + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)
	ringBlock      = 64 << 10 // block size: an order-4 allocation
)

// ringSlot returns the slot size for frames of an interface with MTU mtu:
// the slot header, an Ethernet header with two VLAN tags and the IP
// packet, aligned to TPACKET_ALIGNMENT.
func ringSlot(mtu int) int {
	n := ringNetOff + max(mtu, 1500) + 8
	return (n + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)
}

// newRxRing sets up a TPACKET_V2 receive ring of about size bytes on fd
// (before bind) for frames of an interface with MTU mtu, with oversize
// frames copied to the socket (PACKET_COPY_THRESH), and maps it.
func newRxRing(fd, size, mtu int) (*rxRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_COPY_THRESH, 1); err != nil {
		return nil, fmt.Errorf("PACKET_COPY_THRESH: %w", err)
	}
	frame := ringSlot(mtu)
	block := ringBlock
	for block < frame {
		block *= 2
	}
	blocks := max(1, size/block)
	r := &rxRing{blockSize: block, perBlock: block / frame, frameSize: frame}
	r.frames = blocks * r.perBlock
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks), Frame_size: uint32(frame), Frame_nr: uint32(r.frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", blocks, block, err)
	}
	mem, err := unix.Mmap(fd, 0, blocks*block, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap of the receive ring: %w", err)
	}
	r.mem = mem
	afpacket.Prefault(mem)
	return r, nil
}

// unmap releases the ring's mapping.
func (r *rxRing) unmap() {
	if r.mem != nil {
		_ = unix.Munmap(r.mem)
		r.mem = nil
	}
}

// slot returns the header of slot i.
func (r *rxRing) slot(i int) *unix.Tpacket2Hdr {
	off := i/r.perBlock*r.blockSize + i%r.perBlock*r.frameSize
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&r.mem[off]))
}

// next returns the head slot's header if the kernel has handed it over,
// else nil. The slot stays this process's until release.
func (r *rxRing) next() *unix.Tpacket2Hdr {
	h := r.slot(r.head)
	if atomic.LoadUint32(&h.Status)&unix.TP_STATUS_USER == 0 {
		return nil
	}
	return h
}

// frame returns the bytes the kernel put in slot header h (Snaplen of
// them; Len is the frame's length on the wire) and its receive stamp in
// Unix ns.
func (r *rxRing) frame(h *unix.Tpacket2Hdr) ([]byte, int64) {
	base := uintptr(unsafe.Pointer(h)) - uintptr(unsafe.Pointer(&r.mem[0]))
	start := int(base) + int(h.Mac)
	end := start + int(h.Snaplen)
	if int(h.Mac) >= r.frameSize || end > int(base)+r.frameSize {
		return nil, 0 // a header the kernel would not write
	}
	return r.mem[start:end], int64(h.Sec)*1e9 + int64(h.Nsec)
}

// read returns the head slot's frame and its receive stamp (Unix ns), or
// ok false when the kernel has not handed the slot over. A frame too
// large for a slot is read whole from socket fd into buf with readCopy
// (nil: readCopy the function). err says why the frame cannot be had
// (its bytes are then nil): the copy's read failed, or the frame was cut
// without a copy (the socket buffer was full). Either way the caller
// calls release when done with the slot.
func (r *rxRing) read(fd int, buf []byte, copyFn func(int, []byte) (int, error)) (data []byte, ts int64, err error, ok bool) {
	h := r.next()
	if h == nil {
		return nil, 0, nil, false
	}
	data, ts = r.frame(h)
	switch {
	case h.Status&unix.TP_STATUS_COPY != 0:
		if copyFn == nil {
			copyFn = readCopy
		}
		n, err := copyFn(fd, buf)
		if err != nil {
			return nil, ts, fmt.Errorf("recvmsg: %w", err), true
		}
		return buf[:n], ts, nil, true
	case data == nil:
		return nil, 0, fmt.Errorf("ring slot %d: bad header (mac offset %d, %d bytes)", r.head, h.Mac, h.Snaplen), true
	case h.Snaplen < h.Len:
		return nil, ts, fmt.Errorf("a %d-byte frame larger than a ring slot (%d bytes) while the socket buffer was full", h.Len, r.frameSize), true
	}
	return data, ts, nil, true
}

// release hands the head slot back to the kernel and moves to the next.
func (r *rxRing) release() {
	atomic.StoreUint32(&r.slot(r.head).Status, unix.TP_STATUS_KERNEL)
	if r.head++; r.head == r.frames {
		r.head = 0
	}
}

// readCopy reads the next frame queued on socket fd (a ring's
// TP_STATUS_COPY frame) into buf without blocking and returns its length
// (the frame is cut to len(buf)).
func readCopy(fd int, buf []byte) (int, error) {
	for {
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		return min(n, len(buf)), err
	}
}

// maxFrame is the largest frame read: a 64 KiB GSO frame plus headers.
const maxFrame = 65536 + 256

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
