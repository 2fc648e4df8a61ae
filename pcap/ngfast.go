package pcap

import (
	"bufio"
	"encoding/binary"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// ngFast reads a pcapng's plainest packet blocks itself, straight from
// the buffered input pcapgo reads: an enhanced packet block with no
// options, for an interface of the first section, whole in the buffer.
// Every other block, and any block whose lengths disagree, is left to
// pcapgo, which reads the same bytes the same way (held to it by
// TestNgFastAsPcapgo and FuzzNgFast). Such blocks are most of a capture;
// reading them in place (no copy of the frame, no option parsing) cut
// Reader.Next on BenchmarkCheck1M's capture from 214 to 155 ns a frame.
type ngFast struct {
	br *bufio.Reader
	// off is set once the fast path may no longer read: a second
	// section began (its byte order and interfaces are pcapgo's to
	// know) or pcapgo failed (its position in the file is unknown).
	off       bool
	bigEndian bool
	ifaces    []ngFastIface
	// lost is set once the byte order may no longer be bigEndian's (a
	// second section began) or pcapgo's position is unknown (it failed):
	// peekTime no longer reads.
	lost bool
}

// ngFastIface is what the fast path needs of an interface: its link
// type (boxed as pcapgo's CaptureInfo.AncillaryData holds it) and its
// timestamp conversion, computed as pcapgo computes it from if_tsresol
// and if_tsoffset.
type ngFastIface struct {
	ancil                        []any
	secondMask, scaleUp, scaleDn uint64
	offset                       uint64
	// binExp is e of a binary resolution 2^-e, whose fraction next
	// converts exactly (tsresol.go), 0 for a decimal one.
	binExp uint8
}

// ngFastMaxCap is the longest frame the fast path reads: its block must
// fit in the input's buffer (readBuffer).
const ngFastMaxCap = 1 << 15

func (f *ngFast) u32(b []byte) uint32 {
	if f.bigEndian {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// next returns the frame of the block at the input's position and sets
// ci when the fast path reads it (ok), as pcapgo's
// ZeroCopyReadPacketDataWithOptions would (the block has no options);
// data stays valid until the input is read again. Otherwise it consumes
// nothing.
func (f *ngFast) next(ci *gopacket.CaptureInfo) (data []byte, ok bool) {
	if f.off {
		return nil, false
	}
	h, err := f.br.Peek(28)
	if err != nil || f.u32(h[0:4]) != ngBlockEnhancedPacket {
		return nil, false
	}
	l, idx, caplen := f.u32(h[4:8]), f.u32(h[8:12]), f.u32(h[20:24])
	// The block holds exactly its header, the padded frame and its
	// trailing length: no options.
	if uint64(idx) >= uint64(len(f.ifaces)) || caplen > ngFastMaxCap || l != 32+(caplen+3)&^3 {
		return nil, false
	}
	h, err = f.br.Peek(int(l)) // may move the buffer's bytes: read h afresh
	if err != nil {
		return nil, false
	}
	ifc := &f.ifaces[idx]
	ts := uint64(f.u32(h[12:16]))<<32 | uint64(f.u32(h[16:20]))
	var at time.Time
	if ifc.binExp != 0 {
		at = exactBinaryTime(ts, ifc.binExp, ifc.offset)
	} else {
		at = time.Unix(int64(ts/ifc.secondMask+ifc.offset), int64(ts%ifc.secondMask*ifc.scaleUp/ifc.scaleDn)).UTC()
	}
	*ci = gopacket.CaptureInfo{
		Timestamp:      at,
		CaptureLength:  int(caplen),
		Length:         int(f.u32(h[24:28])),
		InterfaceIndex: int(idx),
		AncillaryData:  ifc.ancil,
	}
	data = h[28 : 28+caplen]
	f.br.Discard(int(l))
	return data, true
}

// sync brings the fast path up to date after pcapgo read a block
// (err: what it returned): its interfaces, or off after a failure.
func (f *ngFast) sync(ng *pcapgo.NgReader, err error) {
	if err != nil {
		f.off, f.lost = true, true
		return
	}
	for i := len(f.ifaces); i < ng.NInterfaces() && !f.off; i++ {
		ifc, err := ng.Interface(i)
		if err != nil {
			f.off = true
			return
		}
		fi, ok := ngFastIfaceOf(ifc)
		if !ok {
			f.off = true
			return
		}
		f.ifaces = append(f.ifaces, fi)
	}
}

// ngFastIfaceOf returns ifc's conversion as pcapgo's
// readInterfaceDescriptor computes it (ok false: one the fast path
// leaves to pcapgo).
func ngFastIfaceOf(ifc pcapgo.NgInterface) (ngFastIface, bool) {
	res := ifc.TimestampResolution
	if res.Exponent() > 63 {
		return ngFastIface{}, false
	}
	fi := ngFastIface{ancil: []any{ifc.LinkType}, offset: ifc.TimestampOffset, scaleUp: 1, scaleDn: 1}
	if res.Binary() {
		fi.secondMask = 1 << res.Exponent()
		fi.binExp = res.Exponent()
	} else {
		fi.secondMask = 1
		for range res.Exponent() {
			fi.secondMask *= 10
		}
	}
	if fi.secondMask < 1e9 {
		fi.scaleUp = 1e9 / fi.secondMask
	} else {
		fi.scaleDn = fi.secondMask / 1e9
	}
	if fi.secondMask == 0 || fi.scaleUp == 0 || fi.scaleDn == 0 {
		return ngFastIface{}, false
	}
	return fi, true
}

// peekTime returns the interface index and raw timestamp of the block at
// the input's position, which pcapgo is about to read, when it is an
// enhanced packet block in the byte order f knows (ok); it consumes
// nothing. Reader.read converts a binary resolution's timestamp exactly
// from it (tsresol.go) for the blocks pcapgo reads.
func (f *ngFast) peekTime() (idx uint32, ts uint64, ok bool) {
	if f.lost {
		return 0, 0, false
	}
	h, err := f.br.Peek(20)
	if err != nil || f.u32(h[0:4]) != ngBlockEnhancedPacket {
		return 0, 0, false
	}
	return f.u32(h[8:12]), uint64(f.u32(h[12:16]))<<32 | uint64(f.u32(h[16:20])), true
}
