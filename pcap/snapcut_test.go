package pcap

import (
	"bytes"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// TestSnapCutHeaders: a frame the snap length cut inside its Homa header
// (captured length below the frame's length, as editcap -s 54 leaves one)
// counts in Stats.SnapCut with the bytes kept (SnapLen); a frame cut only
// in its payload is Truncated, not SnapCut; a short frame that the snap
// length did not cut (a malformed header) is a decode error, not SnapCut.
func TestSnapCutHeaders(t *testing.T) {
	data := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	grant := buildFrame(t, FrameSpec{Src: addrB, Dst: addrA, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	t1 := time.Unix(1, 0)
	capture := classicPcapOf(t, 54,
		rec{t1, data, 54},       // 20 bytes of the DATA header
		rec{t1, grant, 54},      // 20 bytes of the GRANT header
		rec{t1, data, 128},      // header whole, payload cut
		rec{t1, grant[:40], 40}) // not cut: the frame is that short
	st, err := readAll(t, capture)
	if err != nil {
		t.Fatal(err)
	}
	if st.Homa != 4 || st.SnapCut != 2 || st.SnapLen != 54 || st.DecodeErrors != 3 || st.Truncated != 1 {
		t.Fatalf("homa %d snap cut %d snap len %d decode errors %d truncated %d, want 4 2 54 3 1", st.Homa, st.SnapCut, st.SnapLen, st.DecodeErrors, st.Truncated)
	}
}

// rec is one frame for classicPcapOf: its timestamp, its bytes and how
// many of them the capture keeps.
type rec struct {
	ts    time.Time
	frame []byte
	keep  int
}

// classicPcapOf returns a classic pcap (Ethernet, nanosecond timestamps,
// snap length snap) holding recs, each cut to its keep bytes with its
// length on the wire kept.
func classicPcapOf(t testing.TB, snap uint32, recs ...rec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: r.ts, CaptureLength: r.keep, Length: len(r.frame)}, r.frame[:r.keep]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestSnapCutPartial: a frame the snap length cut inside its Homa header
// but after the common header (editcap -s 62: 28 bytes of Homa over
// Ethernet and IPv4) is still a decode error counted in SnapCut, and its
// Frame.Packet is the readable part (SnapPartial): type, ports and
// sender_id as sent, the cut fields absent. A frame cut before the end of
// the common header (-s 54), or sent short, has none; OwnEvent keeps a
// partial event's view on its own copy of the bytes.
func TestSnapCutPartial(t *testing.T) {
	data := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	grant := buildFrame(t, FrameSpec{Src: addrB, Dst: addrA, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	t1 := time.Unix(1, 0)
	capture := classicPcapOf(t, 128,
		rec{t1, data, 62},       // common header whole, DATA fields cut
		rec{t1, grant, 64},      // GRANT offset cut (needs 32 bytes of Homa, has 30)
		rec{t1, data, 54},       // common header cut
		rec{t1, grant[:62], 62}) // sent short: malformed, not cut
	r, err := NewReader(bytes.NewReader(capture), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		partial bool
		typ     wire.PacketType
		id      uint64
		offset  bool
	}
	for i, w := range []want{{true, wire.TypeData, 2, false}, {true, wire.TypeGrant, 3, false}, {}, {}} {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		p := f.Packet
		if f.Err == nil || p.Partial() != w.partial || p.Type() != w.typ || p.SenderID() != w.id || p.Has("offset") != w.offset {
			t.Errorf("frame %d: err %v partial %v type %v id %d has offset %v, want an error and %+v", i+1, f.Err, p.Partial(), p.Type(), p.SenderID(), p.Has("offset"), w)
		}
		if w.partial && (p.Common().Sport() != 32768 || p.Common().Dport() != 4000 || !p.Common().HasMarks()) {
			t.Errorf("frame %d: common header %+v", i+1, p.Common().Fields())
		}
		if w.partial {
			evs := f.Events(nil)
			e := evs[0]
			OwnEvent(&e)
			clear(f.Raw) // the reader's buffer is reused
			if len(evs) != 1 || !e.Packet.Partial() || e.Packet.SenderID() != w.id || e.Err == nil {
				t.Errorf("frame %d: owned event partial %v id %d err %v", i+1, e.Packet.Partial(), e.Packet.SenderID(), e.Err)
			}
		}
	}
	st := r.Stats()
	if st.SnapCut != 3 || st.SnapPartial != 2 || st.DecodeErrors != 4 {
		t.Errorf("snap cut %d partial %d decode errors %d, want 3 2 4", st.SnapCut, st.SnapPartial, st.DecodeErrors)
	}
}
