package pcap

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/gopacket/gopacket/pcapgo"
)

// SectionCut says that a pcapng section ends in mid-block and another
// section header follows (cat of a capture cut short, by tcpdump killed
// mid-write or a partial copy, and another capture): the reader reads on
// from that header (Reader.resync).
type SectionCut struct {
	// Section (1-based) ends after frame AfterFrame (a frame number of
	// the file) with a block cut short at byte Offset; Skipped bytes of
	// it lie before the next section header. Whole is the last frame
	// read whole: AfterFrame when the read failed at the cut block, one
	// more when pcapgo read that block as a frame (its last bytes the
	// next header's).
	Section    int   `json:"section"`
	AfterFrame int   `json:"after_frame"`
	Whole      int   `json:"whole_frames_to"`
	Offset     int64 `json:"offset"`
	Skipped    int64 `json:"skipped_bytes"`
}

// ngPacketBlock reports whether a pcapng block type carries a frame
// (enhanced, simple, or obsolete packet block).
func ngPacketBlock(t uint32) bool { return t == 6 || t == 3 || t == 2 }

// ngCut walks the pcapng blocks of the input open returns from its start
// and returns the
// offset of the first block that is not whole (a length out of range, a
// trailing length that differs, or the input ending inside it), the
// frames (packet blocks) before it, base those before start (a section
// header's offset, where the walk starts), and the offset of the next section
// header after it (its block type and byte-order magic in either order);
// ok is false when every block is whole or no section header follows. It
// reads the input twice (the cut block's length may span the header).
func ngCut(open func() (io.ReadCloser, error), start int64, base int) (cut int64, frames int, next int64, ok bool) {
	in, err := open()
	if err != nil {
		return 0, 0, 0, false
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, readBuffer)
	if _, err := io.CopyN(io.Discard, br, start); err != nil {
		return 0, 0, 0, false
	}
	frames = base
	var (
		off                    = start
		order binary.ByteOrder = binary.LittleEndian
		hdr   [8]byte
	)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, 0, 0, false // ends at a block boundary
			}
			break
		}
		typ := order.Uint32(hdr[:4])
		if binary.BigEndian.Uint32(hdr[:4]) == ngSectionHeader {
			bom, err := br.Peek(4)
			if err != nil {
				break
			}
			switch {
			case binary.BigEndian.Uint32(bom) == ngByteOrderMagic:
				order = binary.BigEndian
			case binary.LittleEndian.Uint32(bom) == ngByteOrderMagic:
				order = binary.LittleEndian
			}
			typ = ngSectionHeader
		}
		n := int64(order.Uint32(hdr[4:]))
		if n < 12 || n%4 != 0 {
			break
		}
		if m, _ := br.Discard(int(n - 12)); int64(m) < n-12 {
			break
		}
		var tr [4]byte
		if _, err := io.ReadFull(br, tr[:]); err != nil || int64(order.Uint32(tr[:])) != n {
			break
		}
		if ngPacketBlock(typ) {
			frames++
		}
		off += n
	}
	// The block at off is cut: find the next section header after it,
	// reading again from there.
	again, err := open()
	if err != nil {
		return off, frames, 0, false
	}
	defer again.Close()
	br = bufio.NewReaderSize(again, readBuffer)
	pos := off + 1
	if _, err := io.CopyN(io.Discard, br, pos); err != nil {
		return off, frames, 0, false
	}
	for {
		b, _ := br.Peek(12)
		if len(b) < 12 {
			return off, frames, 0, false
		}
		if binary.BigEndian.Uint32(b[:4]) == ngSectionHeader {
			m := b[8:12]
			if binary.BigEndian.Uint32(m) == ngByteOrderMagic || binary.LittleEndian.Uint32(m) == ngByteOrderMagic {
				return off, frames, pos, true
			}
		}
		// On to the next byte that may start one.
		i := bytes.IndexByte(b[1:], 0x0a) + 1
		if i == 0 {
			i = len(b)
		}
		if _, err := br.Discard(i); err != nil {
			return off, frames, 0, false
		}
		pos += int64(i)
	}
}

// resync, after Next's read failed (err) in a pcapng that can be read
// again, finds whether the failure is a section cut in mid-block with
// another section header after it, and if so reads on from that header
// as a new section (SectionCut): cat of a capture cut short and a whole
// one was reported "cut short" though the whole capture followed. It
// reports whether the read goes on; it does not when fewer frames were
// read than lie before the cut block. (pcapgo may have read the cut
// block as a frame, its length running into the next header: that
// frame counts as the cut section's last.)
func (r *Reader) resync(err error) bool {
	if r.ng == nil || r.raw == nil || errors.Is(err, ErrPcapngVersion) {
		return false
	}
	cut, frames, next, ok := ngCut(r.raw, r.resumed, r.resumedAt)
	if !ok || frames > r.n {
		return false
	}
	in, err := r.raw()
	if err != nil {
		return false
	}
	br := bufio.NewReaderSize(in, readBuffer)
	if _, err := io.CopyN(io.Discard, br, next); err != nil {
		in.Close()
		return false
	}
	ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true,
		StatisticsCallback: r.interfaceStats, SectionEndCallback: r.sectionEnd})
	if err != nil {
		in.Close()
		return false
	}
	r.sec.cutShort(SectionCut{AfterFrame: r.n, Whole: frames, Offset: cut, Skipped: next - cut}, frames)
	r.sectionEnd(nil, pcapgo.NgSectionInfo{})
	if r.closer != nil {
		r.closer.Close()
	}
	r.closer, r.src, r.ng = in, ng, ng
	r.fast = &ngFast{br: br, off: true, lost: true}
	r.resumed, r.resumedAt = next, r.n
	return true
}
