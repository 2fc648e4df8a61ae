package rawip

import (
	"bytes"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// gsoFrame builds a DATA frame as HomaModule's sender hands it to a veth
// with GSO on (docs/homa-facts.md §1.7; the real capture of issue 13: 8620
// bytes holding 6 segments of 1424): the 56-byte header with doff 13 and
// the first segment's offset in seg.offset, its data, then for every later
// segment a 4-byte seg header (its offset) and its data. Data byte i of the
// message is byte(i*7+i/251).
func gsoFrame(t testing.TB, id uint64, msgLen, off, seg, nseg int) []byte {
	t.Helper()
	data := make([]byte, min(msgLen, off+seg*nseg)-off)
	for i := range data {
		data[i] = msgByte(off + i)
	}
	b, err := wire.AppendGSOFrame(nil, &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: id, Sequence: uint32(off)},
		MessageLength: uint32(msgLen), Incoming: uint32(min(msgLen, 40000)), CutoffVersion: 1, SegOffset: uint32(off), Payload: data}, seg, wire.EncodeOptions{SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func msgByte(i int) byte { return byte(i*7 + i/251) }

func TestSplitGSO(t *testing.T) {
	frame := gsoFrame(t, 10, 100000, 2848, 1424, 6)
	if len(frame) != 8620 {
		t.Fatalf("crafted frame is %d bytes, want 8620 (HomaModule's 6-segment frame)", len(frame))
	}
	segs := splitGSO(frame, 1424)
	if len(segs) != 6 {
		t.Fatalf("%d packets, want 6", len(segs))
	}
	for i, s := range segs {
		p, err := wire.Decode(s, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		d := p.Data()
		off := 2848 + i*1424
		if int(d.Offset()) != off || d.DataLen() != 1424 || d.MessageLength() != 100000 || p.SenderID() != 10 || d.CutoffVersion() != 1 {
			t.Errorf("packet %d: offset %d len %d msg %d id %d, want offset %d len 1424", i, d.Offset(), d.DataLen(), d.MessageLength(), p.SenderID(), off)
		}
		for j, c := range d.Payload() {
			if c != msgByte(off+j) {
				t.Fatalf("packet %d: payload byte %d (message byte %d) is %#x, want %#x", i, j, off+j, c, msgByte(off+j))
			}
		}
	}
	// The last frame of a message: a short last segment.
	last := gsoFrame(t, 10, 10000, 8544, 1424, 6) // 1456 bytes: 1424 + 32
	if segs := splitGSO(last, 1424); len(segs) != 2 || len(segs[1]) != wire.DataHeaderLen+32 {
		t.Errorf("last frame: %d packets", len(segs))
	}
	// Frames that are not multi-segment pass through (nil).
	single := gsoFrame(t, 10, 100000, 0, 1424, 1)
	if splitGSO(single, 1424) != nil {
		t.Error("a single-segment DATA packet was split")
	}
	grant, _ := (&wire.GrantFields{Common: wire.CommonFields{SenderID: 11}, Offset: 5000}).AppendTo(nil, wire.EncodeOptions{FixLengths: true})
	if splitGSO(grant, 1424) != nil {
		t.Error("a GRANT was split")
	}
	// IPv6 geometry (1404-byte segments) read with the IPv4 size: the
	// interleaved headers give the segment size.
	v6 := gsoFrame(t, 12, 100000, 0, 1404, 6)
	if segs := splitGSO(v6, 1424); len(segs) != 6 || !bytes.Equal(segs[5][wire.DataHeaderLen:wire.DataHeaderLen+4], []byte{msgByte(5 * 1404), msgByte(5*1404 + 1), msgByte(5*1404 + 2), msgByte(5*1404 + 3)}) {
		t.Errorf("IPv6-sized frame: %d packets", len(segs))
	}
}

func FuzzSplitGSO(f *testing.F) {
	f.Add(gsoFrame(f, 10, 100000, 2848, 1424, 6), 1424)
	f.Fuzz(func(t *testing.T, b []byte, seg int) {
		if seg < 1 || seg > 9000 {
			return
		}
		for _, p := range splitGSO(b, seg) {
			if _, err := wire.Decode(p, wire.DecodeOptions{Version: wire.VersionCurrent}); err != nil {
				t.Fatalf("split produced an undecodable packet: %v", err)
			}
		}
	})
}
