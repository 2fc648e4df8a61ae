package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
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

// TestCapLenOverLen: a classic pcap record whose captured length exceeds
// its original length (incl_len > orig_len, which no capture can take)
// does not end the read, as pcapgo's error did: the frame is read with
// its captured bytes and its original length taken as the captured one
// (as tshark reads it, flagging it), counted in Stats.CapLenOverLen with
// the first such frame's number, and the frames after it are read.
func TestCapLenOverLen(t *testing.T) {
	capture, grant := capLenOverLenPcap(t)
	rec2 := 24 + 16 + len(grant) // the second record's header
	r, err := NewReader(bytes.NewReader(capture), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Number != i || f.Err != nil || f.Packet.Grant().Offset() != 60000 || f.CaptureLen != len(grant) || f.Length != len(grant) {
			t.Errorf("frame %d: number %d err %v offset %d lengths %d/%d, want %d, a GRANT of offset 60000, %d/%d", i, f.Number, f.Err, f.Packet.Grant().Offset(), f.CaptureLen, f.Length, i, len(grant), len(grant))
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after frame 3: %v, want EOF", err)
	}
	st := r.Stats()
	if st.CapLenOverLen != 1 || st.CapLenOverLenFrame != 2 || st.Homa != 3 {
		t.Errorf("caplen over len %d (first frame %d), homa %d; want 1 (2), 3", st.CapLenOverLen, st.CapLenOverLenFrame, st.Homa)
	}
	if s := st.Summary("x.pcap", nil); !strings.Contains(s, "; 1 frame whose captured length exceeds its original length (first frame 2): read as captured") {
		t.Errorf("summary %q", s)
	}
	// Cut in the frame's bytes, or right after its header: the read ends
	// with an error naming it.
	for _, cut := range []int{rec2 + 16 + 20, rec2 + 16} {
		if _, err := readAll(t, capture[:cut]); err == nil || !strings.Contains(err.Error(), "read frame 2: ") {
			t.Errorf("cut %d bytes into the long record: %v, want an error for frame 2", cut-rec2-16, err)
		}
	}
	// A record claiming 3 GB, as a snap length of 4 GB lets it, in a
	// short file: an error for it, without allocating what it claims.
	huge := bytes.Clone(capture[:rec2+16+20])
	binary.LittleEndian.PutUint32(huge[16:], 0xffffffff) // snap length
	binary.LittleEndian.PutUint32(huge[rec2+8:], 3<<30)  // incl_len
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = readAll(t, huge)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "read frame 2: ") || after.TotalAlloc-before.TotalAlloc > 64<<20 {
		t.Errorf("3 GB record: %v, %d MB allocated; want an error for frame 2 and little memory", err, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
}

// capLenOverLenPcap returns a classic pcap of three GRANT frames, the
// second's record claiming an original length 10 bytes below its
// captured length, and the frame.
func capLenOverLenPcap(t testing.TB) ([]byte, []byte) {
	grant := buildFrame(t, FrameSpec{Src: addrB, Dst: addrA, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	t1 := time.Unix(1, 0)
	capture := classicPcapOf(t, 65535, rec{t1, grant, len(grant)}, rec{t1, grant, len(grant)}, rec{t1, grant, len(grant)})
	rec2 := 24 + 16 + len(grant) // the second record's header
	binary.LittleEndian.PutUint32(capture[rec2+12:], uint32(len(grant)-10))
	return capture, grant
}

// TestSnapCutBeforeHoma: a frame the snap length cut before its IPv4
// header ended (editcap -s 20 or -s 30 over Ethernet) counts as
// OtherCutBeforeHoma, with the bytes kept in SnapLen, when the cut hid
// the protocol byte or left one naming Homa; one whose protocol byte
// says UDP, or that the snap length did not cut, stays "not-ip". A
// capture of nothing else is ErrNoHoma, saying the frames were cut
// before their Homa header and how to re-capture (it said only "no Homa
// packets found").
func TestSnapCutBeforeHoma(t *testing.T) {
	data := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	udp := bytes.Clone(data)
	udp[14+9] = 17
	t1 := time.Unix(1, 0)
	capture := classicPcapOf(t, 30,
		rec{t1, data, 20},      // 6 bytes of the IPv4 header: no protocol byte
		rec{t1, data, 30},      // protocol 146, header cut
		rec{t1, udp, 30},       // protocol 17: not Homa
		rec{t1, data[:30], 30}) // not cut: the frame is that short
	st, err := readAll(t, capture)
	if st.Homa != 0 || st.Other[OtherCutBeforeHoma] != 2 || st.Other["not-ip"] != 2 || st.SnapLen != 30 {
		t.Fatalf("homa %d, other %v, snap len %d; want 0, 2 cut before the Homa header and 2 not-ip, 30", st.Homa, st.Other, st.SnapLen)
	}
	const want = "the snap length cut 2 frames before their Homa header (at most 30 bytes of each were captured), so any Homa packet among them is unseen: re-capture whole frames (tcpdump -s 0, dumpcap -s 0)"
	if h := st.CutBeforeHomaHint(); h != want {
		t.Errorf("hint %q, want %q", h, want)
	}
	if !strings.Contains(st.Summary("c.pcap", err), "; "+want) {
		t.Errorf("summary %q lacks the hint", st.Summary("c.pcap", err))
	}
	e := NoHomaError("c.pcap", st)
	if !errors.Is(e, ErrNoHoma) || e.Error() != "c.pcap: no Homa header could be read: "+want {
		t.Errorf("NoHomaError: %v (is ErrNoHoma: %v), want the hint", e, errors.Is(e, ErrNoHoma))
	}
}

// TestSnapCutShownAsCheckJudges: decode's text, JSON and summary show a
// frame the snap length cut as check judges it. An ACK cut only in its
// unused acks slots (editcap -s 84: 50 of its 80 bytes, num_acks 1) is
// the whole ACK, not a decode error, and the summary counts it as an
// ACK without the advice to re-capture; a DATA cut after its common
// header shows its type and id with what was cut. Fails on the old code
// ("decode error: truncated ACK header", "1 decode error", re-capture).
func TestSnapCutShownAsCheckJudges(t *testing.T) {
	ack := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 7},
		&wire.AckFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 2}, NumAcks: 1, Acks: []wire.AckEntry{{ClientID: 6, ServerPort: 4000}}},
		wire.EncodeOptions{FixLengths: true, SetMarks: true})
	data := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	t1 := time.Unix(1, 0)
	r, err := NewReader(bytes.NewReader(classicPcapOf(t, 84, rec{t1, ack, 84}, rec{t1, data, 62})), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var js []JSONPacket
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(f.AppendText(nil, t1, 0)))
		js = append(js, f.JSON(t1, 0))
	}
	want := []string{
		"1 0.000000000 " + addrA.String() + ":32768 > " + addrB.String() + ":4000 p7 ACK id 2 num_acks 1 6:4000 [snap length cut only unused acks slots]",
		"2 0.000000000 " + addrA.String() + ":32768 > " + addrB.String() + ":4000 p6 DATA id 2 [Homa header cut by the snap length: ",
	}
	if len(lines) != 2 || lines[0] != want[0] || !strings.HasPrefix(lines[1], want[1]) {
		t.Errorf("lines\n%s\nwant\n%s\n%s...", strings.Join(lines, "\n"), want[0], want[1])
	}
	if len(js) != 2 || js[0].Error != "" || js[0].Header == nil || !js[0].SnapCut || js[1].Error == "" || !js[1].SnapCut {
		t.Errorf("JSON: %+v", js)
	}
	st := r.Stats()
	sum := st.Summary("c.pcap", nil)
	for _, w := range []string{"ACK 1;", "; 1 decode error;", "; 1 ACK with only unused acks slots cut by the snap length (read whole)", "; 1 Homa frame (of the decode errors) with the Homa header cut by the snap length (84 bytes kept): re-capture"} {
		if !strings.Contains(sum, w) {
			t.Errorf("summary lacks %q:\n%s", w, sum)
		}
	}
	if j := st.JSONSummary("c.pcap", nil); j.DecodeErrors != 1 || j.SnapComplete != 1 || j.Types["ACK"] != 1 {
		t.Errorf("JSON summary: decode_errors %d snap_complete %d ACK %d, want 1 1 1", j.DecodeErrors, j.SnapComplete, j.Types["ACK"])
	}
	// The ACK alone: nothing to re-capture.
	r, err = NewReader(bytes.NewReader(classicPcapOf(t, 84, rec{t1, ack, 84})), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	st = r.Stats()
	if sum := st.Summary("c.pcap", nil); strings.Contains(sum, "re-capture") || !strings.Contains(sum, "0 decode errors") {
		t.Errorf("an ACK read whole: %s", sum)
	}
}
