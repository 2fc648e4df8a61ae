package netem

import (
	"encoding/binary"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// gsoHoma builds the Homa bytes of a HomaModule multi-segment DATA frame
// (docs/homa-facts.md §1.7): the 56-byte header (doff 13, seg.offset =
// off), the first segment's data, then a 4-byte seg header and the data of
// each later segment; data byte i of the message is byte(i).
func gsoHoma(t testing.TB, msgLen, off, seg, nseg int) []byte {
	t.Helper()
	data := make([]byte, min(msgLen, off+seg*nseg)-off)
	for i := range data {
		data[i] = byte(off + i)
	}
	b, err := wire.AppendGSOFrame(nil, &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 20, Sequence: uint32(off)},
		MessageLength: uint32(msgLen), Incoming: 40000, SegOffset: uint32(off), Payload: data}, seg, wire.EncodeOptions{SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSegmentFrame(t *testing.T) {
	frame := ipv4Frame(macA, macB, addrA, addrB, 4, wire.IPProtoHoma, gsoHoma(t, 100000, 1424, 1424, 6))
	if len(frame) != 14+20+8620 {
		t.Fatalf("crafted frame %d bytes, want 14 + 20 + 8620", len(frame))
	}
	segs := SegmentFrame(frame, 1500)
	if len(segs) != 6 {
		t.Fatalf("%d frames, want 6", len(segs))
	}
	for i, f := range segs {
		ip := f[14:]
		if len(f) != 1514 || int(binary.BigEndian.Uint16(ip[2:])) != 1500 || wire.IPv4HeaderChecksum(ip[:20]) != 0 || ip[1] != 4<<5 {
			t.Errorf("frame %d: %d bytes, IP length %d, checksum ok %v, TOS %#x", i, len(f), binary.BigEndian.Uint16(ip[2:]), wire.IPv4HeaderChecksum(ip[:20]) == 0, ip[1])
		}
		p, err := wire.Decode(ip[20:], wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		d := p.Data()
		off := 1424 + i*1424
		if int(d.Offset()) != off || d.DataLen() != 1424 || d.Payload()[0] != byte(off) || d.Payload()[1423] != byte(off+1423) {
			t.Errorf("frame %d: offset %d len %d, want %d, 1424", i, d.Offset(), d.DataLen(), off)
		}
	}
	// Frames that fit the MTU, or are not Homa DATA, are left alone.
	if SegmentFrame(frame, 9000) != nil {
		t.Error("segmented a frame that fits a 9000-byte MTU")
	}
	tcp := ipv4Frame(macA, macB, addrA, addrB, 0, 6, make([]byte, 8000))
	if SegmentFrame(tcp, 1500) != nil {
		t.Error("segmented a TCP frame")
	}
}

func FuzzSegmentFrame(f *testing.F) {
	f.Add(ipv4Frame(macA, macB, addrA, addrB, 4, wire.IPProtoHoma, gsoHoma(f, 100000, 0, 1424, 6)), 1500)
	f.Fuzz(func(t *testing.T, b []byte, mtu int) {
		if mtu < 68 || mtu > 65535 {
			return
		}
		for _, s := range SegmentFrame(b, mtu) {
			if len(s) > mtu+ethHeaderRoom {
				t.Fatalf("segment of %d bytes for MTU %d", len(s), mtu)
			}
		}
	})
}
