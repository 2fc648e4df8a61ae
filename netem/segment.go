package netem

import (
	"encoding/binary"

	"github.com/homatest/homatest/spec/wire"
)

// ethHeaderRoom is the link-layer bytes a frame may carry beyond the
// interface MTU: Ethernet header and two VLAN tags.
const ethHeaderRoom = 14 + 8

// SegmentFrame splits an Ethernet frame holding a HomaModule multi-segment
// DATA frame (docs/homa-facts.md §1.7: doff 13, interleaved seg headers),
// larger than an interface of mtu bytes can carry, into one frame per
// segment, as HomaModule's GSO segmentation (homa_gso_segment) or a NIC
// would: each gets the link header, the IP header with its length (and
// for IPv4 a fresh ID and header checksum), the frame's first 52 Homa
// header bytes with sequence set to the segment's offset, the segment's
// 4-byte seg header (its offset) and its data. Frames that are not such
// Homa frames (TCP super-frames, IPv6 with extension headers) give nil.
// The segment size is the sender's max_seg_data for mtu (mtu - IP header -
// 56), or the one the interleaved headers show.
func SegmentFrame(frame []byte, mtu int) [][]byte {
	l2 := 14
	for l2+4 <= len(frame) {
		et := binary.BigEndian.Uint16(frame[l2-2:])
		if et != 0x8100 && et != 0x88a8 {
			break
		}
		l2 += 4
	}
	if l2+40 > len(frame) {
		return nil
	}
	var ipHdr int
	v6 := false
	switch binary.BigEndian.Uint16(frame[l2-2:]) {
	case 0x0800:
		ipHdr = int(frame[l2]&0x0f) * 4
		if frame[l2]>>4 != 4 || ipHdr < 20 || frame[l2+9] != wire.IPProtoHoma {
			return nil
		}
		if binary.BigEndian.Uint16(frame[l2+6:])&0x3fff != 0 {
			return nil // a fragment
		}
	case 0x86dd:
		ipHdr, v6 = 40, true
		if frame[l2]>>4 != 6 || frame[l2+6] != wire.IPProtoHoma {
			return nil
		}
	default:
		return nil
	}
	hoff := l2 + ipHdr
	if hoff+wire.DataHeaderLen > len(frame) {
		return nil
	}
	p, err := wire.Decode(frame[hoff:], wire.DecodeOptions{Version: wire.VersionCurrent})
	if err != nil || p.Type() != wire.TypeData {
		return nil
	}
	maxSeg := mtu - ipHdr - wire.DataHeaderLen
	d := p.Data()
	if maxSeg <= 0 || !d.IsGSO(maxSeg) {
		return nil
	}
	segs, err := d.Segments(nil, maxSeg)
	if err != nil || len(segs) < 2 {
		return nil
	}
	out := make([][]byte, 0, len(segs))
	id := uint16(0)
	if !v6 {
		id = binary.BigEndian.Uint16(frame[l2+4:])
	}
	for i, s := range segs {
		if len(s.Data) != s.Length || ipHdr+wire.DataHeaderLen+s.Length > mtu {
			return nil
		}
		b := make([]byte, hoff+wire.DataHeaderLen+s.Length)
		copy(b, frame[:hoff+wire.DataHeaderLen-wire.SegHeaderLen])
		binary.BigEndian.PutUint32(b[hoff+4:], s.Offset)  // common.sequence
		binary.BigEndian.PutUint32(b[hoff+52:], s.Offset) // seg.offset
		copy(b[hoff+wire.DataHeaderLen:], s.Data)
		ip := b[l2:]
		if v6 {
			binary.BigEndian.PutUint16(ip[4:], uint16(wire.DataHeaderLen+s.Length))
		} else {
			binary.BigEndian.PutUint16(ip[2:], uint16(ipHdr+wire.DataHeaderLen+s.Length))
			binary.BigEndian.PutUint16(ip[4:], id+uint16(i))
			ip[10], ip[11] = 0, 0
			binary.BigEndian.PutUint16(ip[10:], wire.IPv4HeaderChecksum(ip[:ipHdr]))
		}
		out = append(out, b)
	}
	return out
}
