package rawip

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// splitGSO returns the single-segment DATA packets carried by a HomaModule
// multi-segment frame (docs/homa-facts.md §1.7: doff 13, a 56-byte header
// whose seg.offset is the first segment's offset, then for each later
// segment a 4-byte seg header holding its offset and its data), or nil
// when pkt is not such a frame. A raw socket receives these whole when the
// sending kernel's GSO frame crosses veths and bridges unsegmented, or
// when the receiving kernel's GRO merged segments. Each packet gets the
// frame's header with sequence and seg.offset set to the segment's offset,
// as a segmented packet on the wire would carry; the protocol core then
// sees ordinary DATA packets. maxSegData is the sender's segment size
// (MTU - IP header - 56); a frame whose interleaved headers disagree with
// it is split at the size they show (wire.Data.Segments), and a frame no
// segmentation explains is returned as is (nil) for the core to judge.
func splitGSO(pkt []byte, maxSegData int) [][]byte {
	if len(pkt) <= wire.DataHeaderLen+maxSegData || wire.PacketType(pkt[11]) != wire.TypeData {
		return nil
	}
	p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
	if err != nil || p.Type() != wire.TypeData {
		return nil
	}
	d := p.Data()
	if !d.IsGSO(maxSegData) {
		return nil
	}
	segs, err := d.Segments(nil, maxSegData)
	if err != nil || len(segs) < 2 {
		return nil
	}
	out := make([][]byte, 0, len(segs))
	for _, s := range segs {
		if len(s.Data) != s.Length || s.Length == 0 {
			return nil // truncated: cannot happen for a socket read, but never guess
		}
		b := make([]byte, wire.DataHeaderLen+s.Length)
		copy(b, pkt[:wire.DataHeaderLen])
		binary.BigEndian.PutUint32(b[4:], s.Offset)  // common.sequence
		binary.BigEndian.PutUint32(b[52:], s.Offset) // seg.offset
		copy(b[wire.DataHeaderLen:], s.Data)
		out = append(out, b)
	}
	return out
}

// maxSegDataFor returns HomaModule's max_seg_data for addr's interface:
// its MTU less the IP header (20 bytes IPv4, 40 IPv6) and the 56-byte DATA
// header; 1500-byte MTU when the interface cannot be found.
func maxSegDataFor(addr netip.Addr) int {
	mtu := 1500
	if ifs, err := net.Interfaces(); err == nil {
	search:
		for _, ifi := range ifs {
			as, _ := ifi.Addrs()
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok {
					if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr.Unmap() {
						mtu = ifi.MTU
						break search
					}
				}
			}
		}
	}
	hdr := 20
	if addr.Is6() && !addr.Is4In6() {
		hdr = 40
	}
	return mtu - hdr - wire.DataHeaderLen
}
