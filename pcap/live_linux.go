//go:build linux

package pcap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/homatest/homatest/internal/afpacket"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// LiveOptions configure a live capture socket.
type LiveOptions struct {
	// SnapLen is the most bytes kept of a frame; 0 means DefaultSnapLen
	// (whole GSO frames; pcapgo's old default of the MTU cut full frames).
	// The ring's blocks are sized to hold a frame this long.
	SnapLen int
	// BufferBytes is the size of the socket's receive ring in bytes (at
	// least two blocks; see afpacket.NewBlockRing); 0 means
	// DefaultRingBytes. Frames that arrive while every block waits to be
	// read are dropped and counted (Stats).
	BufferBytes int
	// Direction keeps only frames of one direction at the interface:
	// DirInbound (arriving: packet types other than PACKET_OUTGOING),
	// DirOutbound (PACKET_OUTGOING, sent by the interface), or DirUnknown
	// for both. The filter is a classic BPF program on the packet type, run
	// in the kernel.
	Direction Direction
}

// DefaultRingBytes is a live capture's receive ring when
// LiveOptions.BufferBytes is 0: 8 MiB.
const DefaultRingBytes = 8 << 20

// liveAfterBind, when set (tests), runs right after OpenLive binds the
// socket: a frame sent then is queued before OpenLive returns.
var liveAfterBind func()

// liveRetire is how long the kernel fills a ring block before it hands
// it over part-full: a frame waits at most this long to be read, and a
// reader stalled for blocks×liveRetire loses frames of a trickle.
const liveRetire = 100 * time.Millisecond

// Live is a live capture on one network interface: an AF_PACKET socket
// with a TPACKET_V3 receive ring (afpacket.BlockRing) and kernel
// nanosecond timestamps. The kernel copies each frame into the ring as
// it passes the interface, so the capture holds the bytes of that moment:
// a socket read with recvmsg copies from a clone of the skb later, and
// HomaModule takes back the pages of a reaped RPC's DATA skbs under such
// a clone (recvmsg then failed with EFAULT on 6-267 frames per port in
// every lab run with the module). The socket belongs to the network
// namespace of the thread that opened it; it can then be read from any
// goroutine. Not safe for concurrent reads.
type Live struct {
	f        *os.File
	rc       syscall.RawConn
	ring     *afpacket.BlockRing
	snap     int        // the snap length in bytes
	vlan     []byte     // a frame with its VLAN tag put back
	rmu      sync.Mutex // held by ReadFrame; Close unmaps the ring under it
	closed   atomic.Bool
	deadline atomic.Int64 // Unix ns of the read deadline; 0: none
}

// OpenLive opens a capture on interface ifname in the calling thread's
// network namespace. The socket takes no frame before its ring and
// direction filter are in place, and the kernel's counters start at zero
// (a new socket's) and count every frame from the bind on.
func OpenLive(ifname string, o LiveOptions) (*Live, error) {
	fail := func(err error) (*Live, error) {
		return nil, fmt.Errorf("pcap: capture on %s: %w", ifname, err)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fail(err)
	}
	snap := o.SnapLen
	if snap <= 0 {
		snap = DefaultSnapLen
	}
	size := o.BufferBytes
	if size <= 0 {
		size = DefaultRingBytes
	}
	fd, err := afpacket.Open()
	if err != nil {
		return fail(err)
	}
	var ring *afpacket.BlockRing
	setup := func() error {
		// SO_TIMESTAMPNS has the kernel stamp frames as they arrive (the
		// ring then takes the skb's stamp, not the time of its copy).
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
		}
		prog, err := directionFilter(o.Direction, snap)
		if err == nil {
			err = unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{
				Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))})
		}
		if err != nil {
			return fmt.Errorf("direction filter: %w", err)
		}
		if ring, err = afpacket.NewBlockRing(fd, size, snap, liveRetire); err != nil {
			return err
		}
		if err := afpacket.Bind(fd, ifi.Index); err != nil {
			return err
		}
		if liveAfterBind != nil {
			liveAfterBind()
		}
		return nil
	}
	if err := setup(); err != nil {
		if ring != nil {
			ring.Unmap()
		}
		unix.Close(fd)
		return fail(err)
	}
	l := &Live{f: os.NewFile(uintptr(fd), "packet:"+ifname), ring: ring, snap: snap}
	// No Stats call here to "reset" the counters: they are already zero,
	// and a reset would uncount frames queued since the bind that the
	// ring still holds; a stream stopping at the count then stops that
	// many frames short of the end (TestLiveCountsFramesSinceBind).
	if l.rc, err = l.f.SyscallConn(); err != nil {
		l.Close()
		return fail(err)
	}
	return l, nil
}

// directionFilter returns a BPF program that keeps frames of direction dir
// (see LiveOptions.Direction), snap bytes of each.
func directionFilter(dir Direction, snap int) ([]bpf.RawInstruction, error) {
	if dir == DirUnknown {
		return bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: uint32(snap)}})
	}
	// Outgoing frames fall through to "keep" for DirOutbound and skip to
	// "drop" for DirInbound.
	skipTrue, skipFalse := uint8(0), uint8(1)
	if dir == DirInbound {
		skipTrue, skipFalse = 1, 0
	}
	return bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipTrue: skipTrue, SkipFalse: skipFalse},
		bpf.RetConstant{Val: uint32(snap)},
		bpf.RetConstant{Val: 0},
	})
}

func (l *Live) control(f func(fd int) error) error {
	var ferr error
	if err := l.rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// ReadFrame returns the next frame, its kernel timestamp and its length on
// the wire in bytes (more than len(data) when the snap length cut it). data
// is valid until the next call. It blocks until a frame arrives, the read
// deadline passes or the capture is closed; errors after Close or past
// the deadline wrap os.ErrClosed or os.ErrDeadlineExceeded. A ring block
// that cannot be read (a *FrameError) is skipped: the caller counts it and
// reads on.
func (l *Live) ReadFrame() (data []byte, ts time.Time, length int, err error) {
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if l.closed.Load() {
		return nil, time.Time{}, 0, os.ErrClosed
	}
	var f afpacket.Frame
	var ok bool
	var ferr error
	for {
		// Wake at least every two retire timeouts to look at the ring:
		// a readiness event the poller missed (a block the timer retired)
		// then costs that wait, not the rest of the capture. The
		// caller's deadline (SetReadDeadline) bounds each wait.
		wait := time.Now().Add(2 * liveRetire).UnixNano()
		d := l.deadline.Load()
		if d != 0 && d < wait {
			wait = d
		}
		l.f.SetReadDeadline(time.Unix(0, wait))
		err = l.rc.Read(func(uintptr) bool {
			f, ok, ferr = l.ring.Next()
			return ok || ferr != nil
		})
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || l.closed.Load() {
			break
		}
		if d = l.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			break
		}
	}
	switch {
	case l.closed.Load():
		return nil, time.Time{}, 0, fmt.Errorf("pcap: live capture: %w", os.ErrClosed)
	case err != nil:
		return nil, time.Time{}, 0, err
	case ferr != nil:
		return nil, time.Time{}, 0, &FrameError{Err: ferr}
	}
	data = f.WithVLAN(l.vlan)
	if len(data) != len(f.Data) {
		l.vlan = data
		data = data[:min(len(data), l.snap)]
	}
	return data, time.Unix(0, f.Stamp), f.Len + len(data) - len(f.Data), nil
}

// SetReadDeadline makes a blocked or later ReadFrame return an error at t
// (a time in the past wakes a blocked read at once; the zero time: no
// deadline).
func (l *Live) SetReadDeadline(t time.Time) error {
	if t.IsZero() {
		l.deadline.Store(0)
	} else {
		l.deadline.Store(t.UnixNano())
	}
	return l.f.SetReadDeadline(t)
}

// Stats returns the frames the kernel passed to the socket (put in the
// ring plus dropped) and dropped because every ring block was waiting to
// be read, since the previous call (PACKET_STATISTICS resets on read).
func (l *Live) Stats() (packets, drops uint64, err error) {
	err = l.control(func(fd int) error {
		st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err == nil {
			packets, drops = uint64(st.Packets), uint64(st.Drops)
		}
		return err
	})
	return packets, drops, err
}

// Close closes the socket and unmaps its ring; a blocked ReadFrame
// returns an error.
func (l *Live) Close() error {
	l.closed.Store(true)
	err := l.f.Close()
	l.rmu.Lock()
	l.ring.Unmap()
	l.rmu.Unlock()
	return err
}
