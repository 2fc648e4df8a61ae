package afpacket

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BlockRing is an AF_PACKET TPACKET_V3 receive ring: the kernel copies
// each frame, whole up to the filter's snap length, into the current
// block of a buffer mapped into this process, frames packed one after
// another, and hands a block over when it is full or its retire timeout
// passes since its first frame. Unlike a TPACKET_V2 ring's fixed slots,
// a block holds a 64 KiB GSO frame as well as a run of small ones, so no
// frame takes the socket-queue path (TP_STATUS_COPY) that reads a clone
// later. Blocks are read and handed back in order; not safe for
// concurrent use.
type BlockRing struct {
	mem       []byte // the mapping (or a test's buffer)
	blockSize int
	blocks    int
	cur       int  // the block being read or waited for
	held      bool // cur is this process's: being read
	left      int  // frames of cur not yet returned
	next      int  // offset in mem of the next frame's header
}

// Frame is one frame of a BlockRing, as Next returns it.
type Frame struct {
	// Data is the bytes the kernel copied (the link header first): valid
	// until the next call to Next or Unmap.
	Data []byte
	// Len is the frame's length on the wire in bytes (more than len(Data)
	// when the snap length cut it).
	Len int
	// Stamp is the kernel's receive time in Unix ns.
	Stamp int64
	// Status is the frame's tp_status (TP_STATUS_VLAN_VALID: VLANTCI holds
	// a tag the device took off; TP_STATUS_VLAN_TPID_VALID: VLANTPID
	// holds its protocol).
	Status   uint32
	VLANTCI  uint16
	VLANTPID uint16
}

// Offsets of struct tpacket_block_desc's fields (linux/if_packet.h):
// version and offset_to_priv, then struct tpacket_hdr_v1.
const (
	blockStatusOff = 8
	blockNumOff    = 12
	blockFirstOff  = 16
	blockDescLen   = 48
	frameHdrLen    = int(unsafe.Sizeof(unix.Tpacket3Hdr{}))
	// frameRoom is what a block needs besides a frame's bytes: the block
	// descriptor, the frame's header, its sockaddr_ll and the link-header
	// room the kernel leaves (TPACKET_ALIGN(TPACKET3_HDRLEN + 16)),
	// rounded up.
	frameRoom = 256
	minBlock  = 64 << 10
)

// BlockSize returns the block size NewBlockRing uses for frames of up to
// maxFrame bytes: the smallest power of two of at least 64 KiB that holds
// such a frame with its headers.
func BlockSize(maxFrame int) int {
	b := minBlock
	for b < maxFrame+frameRoom {
		b *= 2
	}
	return b
}

// NewBlockRing sets up a TPACKET_V3 receive ring of about size bytes (at
// least two blocks of BlockSize(maxFrame)) on AF_PACKET socket fd, before
// it is bound, with blocks retired retire after their first frame (whole
// milliseconds, at least 1), and maps it.
func NewBlockRing(fd, size, maxFrame int, retire time.Duration) (*BlockRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	block := BlockSize(maxFrame)
	blocks := max(2, size/block)
	req := unix.TpacketReq3{
		Block_size: uint32(block), Block_nr: uint32(blocks),
		// V3 packs frames in a block; the frame fields only have to agree.
		Frame_size: uint32(block), Frame_nr: uint32(blocks),
		Retire_blk_tov: uint32(max(1, retire.Milliseconds())),
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", blocks, block, err)
	}
	mem, err := mapRing(fd, blocks*block)
	if err != nil {
		return nil, err
	}
	return &BlockRing{mem: mem, blockSize: block, blocks: blocks}, nil
}

// Unmap releases the ring's mapping; the ring must not be read after.
func (r *BlockRing) Unmap() { unmapRing(&r.mem) }

// status returns the word of block i's descriptor at offset off.
func (r *BlockRing) word(i, off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.mem[i*r.blockSize+off]))
}

// Next returns the next frame, or ok false when the kernel has handed no
// block over yet. A block whose frame headers point outside it (which
// the kernel does not write) is an error: the rest of that block is
// skipped and the next call goes on with the following block.
func (r *BlockRing) Next() (f Frame, ok bool, err error) {
	for {
		if r.held {
			if r.left > 0 {
				return r.frame()
			}
			atomic.StoreUint32(r.word(r.cur, blockStatusOff), unix.TP_STATUS_KERNEL)
			r.held = false
			if r.cur++; r.cur == r.blocks {
				r.cur = 0
			}
		}
		if atomic.LoadUint32(r.word(r.cur, blockStatusOff))&unix.TP_STATUS_USER == 0 {
			return Frame{}, false, nil
		}
		r.held = true
		r.left = int(*r.word(r.cur, blockNumOff))
		r.next = r.cur*r.blockSize + int(*r.word(r.cur, blockFirstOff))
	}
}

// frame returns the held block's next frame.
func (r *BlockRing) frame() (Frame, bool, error) {
	end := (r.cur + 1) * r.blockSize
	at := r.next
	if at < r.cur*r.blockSize+blockDescLen || at+frameHdrLen > end {
		r.left = 0
		return Frame{}, false, fmt.Errorf("ring block %d: a frame header at offset %d, outside the block", r.cur, at-r.cur*r.blockSize)
	}
	h := (*unix.Tpacket3Hdr)(unsafe.Pointer(&r.mem[at]))
	start, stop := at+int(h.Mac), at+int(h.Mac)+int(h.Snaplen)
	if stop > end || int(h.Mac) < frameHdrLen {
		r.left = 0
		return Frame{}, false, fmt.Errorf("ring block %d: a %d-byte frame at offset %d, outside the block", r.cur, h.Snaplen, start-r.cur*r.blockSize)
	}
	r.left--
	r.next = at + int(h.Next_offset)
	if r.left > 0 && h.Next_offset == 0 {
		r.left = 0 // the kernel links every frame but the last
	}
	return Frame{
		Data: r.mem[start:stop:stop], Len: int(h.Len),
		Stamp:  int64(h.Sec)*1e9 + int64(h.Nsec),
		Status: h.Status, VLANTCI: uint16(h.Hv1.Vlan_tci), VLANTPID: h.Hv1.Vlan_tpid,
	}, true, nil
}

// WithVLAN returns f's bytes with the VLAN tag the device took off put
// back after the MAC addresses (in buf, grown as needed), or f.Data when
// the frame had none.
func (f Frame) WithVLAN(buf []byte) []byte {
	if f.Status&unix.TP_STATUS_VLAN_VALID == 0 || len(f.Data) < 12 {
		return f.Data
	}
	tpid := uint16(0x8100)
	if f.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
		tpid = f.VLANTPID
	}
	buf = append(buf[:0], f.Data[:12]...)
	buf = binary.BigEndian.AppendUint16(buf, tpid)
	buf = binary.BigEndian.AppendUint16(buf, f.VLANTCI)
	return append(buf, f.Data[12:]...)
}
