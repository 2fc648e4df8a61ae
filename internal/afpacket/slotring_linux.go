package afpacket

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SlotRing is an AF_PACKET TPACKET_V2 receive ring: the kernel copies
// each frame into the next free slot of a buffer mapped into this process
// and hands the slot over with its status word at once, so a frame waits
// for no block to fill (the netem switch forwards each as it comes: its
// per-frame latency is the link's), is read without a system call, and a
// burst fills slots sized to frames rather than socket memory charged at
// the skb's truesize. A frame larger than a slot (a GSO super-frame) is
// cut in its slot, marked TP_STATUS_COPY, and queued whole on the socket
// (PACKET_COPY_THRESH), where Read reads it. Slots are read and released
// in order; not safe for concurrent use.
type SlotRing struct {
	mem       []byte // the mapping (or a test's buffer)
	fd        int    // the socket, for TP_STATUS_COPY frames
	blockSize int
	perBlock  int // slots per block (slots do not cross blocks)
	frameSize int
	frames    int
	head      int    // next slot to read
	copyBuf   []byte // a TP_STATUS_COPY frame read from the socket
}

// MaxCopy is the largest frame SlotRing.Read takes from the socket: a
// 64 KiB GSO frame plus headers.
const MaxCopy = 65536 + 256

// tpacket2Hdrlen is TPACKET2_HDRLEN: the slot header and the sockaddr_ll
// after it; SlotNetOff is the kernel's offset of the network header in a
// slot (TPACKET_ALIGN(hdrlen + 16)): the frame starts at SlotNetOff
// minus its link header.
const (
	tpacket2Hdrlen = (unix.SizeofTpacket2Hdr+unix.TPACKET_ALIGNMENT-1)&^(unix.TPACKET_ALIGNMENT-1) + unix.SizeofSockaddrLinklayer
	SlotNetOff     = (tpacket2Hdrlen + 16 + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)
)

// SlotSize returns the slot size in bytes for frames of an interface with
// MTU mtu: the slot header, an Ethernet header with two VLAN tags and the
// IP packet, aligned to TPACKET_ALIGNMENT.
func SlotSize(mtu int) int {
	n := SlotNetOff + max(mtu, 1500) + 8
	return (n + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)
}

// NewSlotRing sets up a TPACKET_V2 receive ring of about size bytes on
// AF_PACKET socket fd, before it is bound, for frames of an interface
// with MTU mtu (SlotSize), with oversize frames copied to the socket
// (PACKET_COPY_THRESH), and maps it.
func NewSlotRing(fd, size, mtu int) (*SlotRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_COPY_THRESH, 1); err != nil {
		return nil, fmt.Errorf("PACKET_COPY_THRESH: %w", err)
	}
	frame := SlotSize(mtu)
	block := minBlock
	for block < frame {
		block *= 2
	}
	blocks := max(1, size/block)
	r := &SlotRing{fd: fd, blockSize: block, perBlock: block / frame, frameSize: frame}
	r.frames = blocks * r.perBlock
	req := unix.TpacketReq{Block_size: uint32(block), Block_nr: uint32(blocks), Frame_size: uint32(frame), Frame_nr: uint32(r.frames)}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", blocks, block, err)
	}
	var err error
	if r.mem, err = mapRing(fd, blocks*block); err != nil {
		return nil, err
	}
	return r, nil
}

// MemSlotRing returns a ring of n slots of slot bytes each in ordinary
// memory, on no socket (fd -1), for tests of a ring's reader: Put fills
// it as the kernel would.
func MemSlotRing(n, slot int) *SlotRing {
	return &SlotRing{mem: make([]byte, n*slot), fd: -1, blockSize: n * slot, perBlock: n, frameSize: slot, frames: n}
}

// Put writes frame into the ring's next free slot as the kernel does: cut
// to the slot, with status TP_STATUS_USER|extra, wire length wireLen and
// receive stamp 1 s. It reports false when every slot is the reader's.
// For tests (MemSlotRing).
func (r *SlotRing) Put(frame []byte, wireLen int, extra uint32) bool {
	for i := range r.frames {
		k := (r.head + i) % r.frames
		h := r.slot(k)
		if h.Status != unix.TP_STATUS_KERNEL {
			continue
		}
		mac := SlotNetOff - 14
		n := min(len(frame), r.frameSize-mac)
		off := k/r.perBlock*r.blockSize + k%r.perBlock*r.frameSize
		copy(r.mem[off+mac:], frame[:n])
		h.Len, h.Snaplen, h.Mac, h.Sec, h.Nsec = uint32(wireLen), uint32(n), uint16(mac), 1, 0
		h.Status = unix.TP_STATUS_USER | extra
		return true
	}
	return false
}

// Unmap releases the ring's mapping; the ring must not be read after.
func (r *SlotRing) Unmap() { unmapRing(&r.mem) }

// slot returns the header of slot i.
func (r *SlotRing) slot(i int) *unix.Tpacket2Hdr {
	off := i/r.perBlock*r.blockSize + i%r.perBlock*r.frameSize
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&r.mem[off]))
}

// next returns the head slot's header if the kernel has handed it over,
// else nil. The slot stays this process's until Release.
func (r *SlotRing) next() *unix.Tpacket2Hdr {
	h := r.slot(r.head)
	if atomic.LoadUint32(&h.Status)&unix.TP_STATUS_USER == 0 {
		return nil
	}
	return h
}

// Ready reports whether the kernel has handed the head slot over: Read
// has a frame to return.
func (r *SlotRing) Ready() bool { return r.next() != nil }

// frame returns the bytes the kernel put in slot header h (Snaplen of
// them; Len is the frame's length on the wire) and its receive stamp in
// Unix ns.
func (r *SlotRing) frame(h *unix.Tpacket2Hdr) ([]byte, int64) {
	base := uintptr(unsafe.Pointer(h)) - uintptr(unsafe.Pointer(&r.mem[0]))
	start := int(base) + int(h.Mac)
	end := start + int(h.Snaplen)
	if int(h.Mac) >= r.frameSize || end > int(base)+r.frameSize {
		return nil, 0 // a header the kernel would not write
	}
	return r.mem[start:end], int64(h.Sec)*1e9 + int64(h.Nsec)
}

// Read returns the head slot's frame and its receive stamp (Unix ns), or
// ok false when the kernel has not handed the slot over. A frame too
// large for a slot is read whole from the socket with copyFn (nil: a
// non-blocking recvmsg) into a buffer of MaxCopy bytes the ring keeps:
// valid until the next Read. err says why the frame cannot be had (its
// bytes are then nil): the copy's read failed, the slot's header is one
// the kernel would not write, or the frame was cut without a copy (the
// socket buffer was full). Either way the caller calls Release when done
// with the slot.
func (r *SlotRing) Read(copyFn func(fd int, buf []byte) (int, error)) (data []byte, ts int64, ok bool, err error) {
	h := r.next()
	if h == nil {
		return nil, 0, false, nil
	}
	data, ts = r.frame(h)
	switch {
	case h.Status&unix.TP_STATUS_COPY != 0:
		if copyFn == nil {
			copyFn = readCopy
		}
		if r.copyBuf == nil {
			r.copyBuf = make([]byte, MaxCopy)
		}
		n, err := copyFn(r.fd, r.copyBuf)
		if err != nil {
			return nil, ts, true, fmt.Errorf("recvmsg: %w", err)
		}
		return r.copyBuf[:n], ts, true, nil
	case data == nil:
		return nil, 0, true, fmt.Errorf("ring slot %d: bad header (mac offset %d, %d bytes)", r.head, h.Mac, h.Snaplen)
	case h.Snaplen < h.Len:
		return nil, ts, true, fmt.Errorf("a %d-byte frame larger than a ring slot (%d bytes) while the socket buffer was full", h.Len, r.frameSize)
	}
	return data, ts, true, nil
}

// Release hands the head slot back to the kernel and moves to the next.
func (r *SlotRing) Release() {
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

// mapRing maps the size-byte receive ring that PACKET_RX_RING set up on
// socket fd and prefaults it (prefault): the one way both rings map.
func mapRing(fd, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap of the receive ring: %w", err)
	}
	prefault(mem)
	return mem, nil
}

// unmapRing releases the ring mapping *mem, if any, and forgets it.
func unmapRing(mem *[]byte) {
	if *mem != nil {
		_ = unix.Munmap(*mem)
		*mem = nil
	}
}
