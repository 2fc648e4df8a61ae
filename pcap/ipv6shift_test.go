package pcap

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// writeFrames returns a pcapng holding frames.
func writeFrames(t testing.TB, frames ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(0, time.Unix(int64(i), 0), f, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	return buf.Bytes()
}

// TestIPv6ShiftPerHost: each IPv6 host's shift is latched from its own
// first unambiguous traffic class, as one capture may hold HomaModule
// builds before and after 548056f (the lab's tester, shift 5, against
// linux_6.13.9, shift 4). Host A (shift 4) sends a DATA at priority 6
// (0x60, which shift 5 writes for priority 3); host B's CUTOFFS (0xE0)
// fixes B at 5 and leaves A's next DATA either (PrioEither, read with
// shift 5); A's own CUTOFFS (0x70) fixes A at 4. DetectIPv6Shifts finds
// both up front, and a forced shift applies to every host. Then B changes
// builds: its 0x70 switches it to shift 4, and its next 0x60 is level 6.
func TestIPv6ShiftPerHost(t *testing.T) {
	dataA := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 6, IPv6Shift: 4}, sampleFields()[0], wire.EncodeOptions{SetMarks: true})
	cutA := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 7, IPv6Shift: 4}, sampleFields()[5], wire.EncodeOptions{SetMarks: true})
	cutB := buildFrame(t, FrameSpec{Src: addr6B, Dst: addr6A, Priority: 7, IPv6Shift: 5}, sampleFields()[5], wire.EncodeOptions{SetMarks: true})
	dataB := buildFrame(t, FrameSpec{Src: addr6B, Dst: addr6A, Priority: 3, IPv6Shift: 5}, sampleFields()[0], wire.EncodeOptions{SetMarks: true})
	cutB4 := buildFrame(t, FrameSpec{Src: addr6B, Dst: addr6A, Priority: 7, IPv6Shift: 4}, sampleFields()[5], wire.EncodeOptions{SetMarks: true})
	capture := writeFrames(t, dataA, cutB, dataA, cutA, dataA, dataB, cutB4, dataB)
	type read struct {
		prio, shift uint8
		either      bool
	}
	readAll := func(o ReaderOptions) []read {
		r, _ := NewReader(bytes.NewReader(capture), o)
		var got []read
		for {
			f, err := r.Next()
			if err != nil {
				return got
			}
			got = append(got, read{f.Priority, f.PrioShift, f.PrioEither})
		}
	}
	want := []read{{3, 5, true}, {7, 5, false}, {3, 5, true}, {7, 4, false}, {6, 4, false}, {3, 5, false}, {7, 4, false}, {6, 4, false}}
	if got := readAll(ReaderOptions{}); !slices.Equal(got, want) {
		t.Errorf("latched host by host: {priority, shift} %v, want %v", got, want)
	}
	r, _ := NewReader(bytes.NewReader(capture), ReaderOptions{})
	shifts, err := DetectIPv6Shifts(r)
	if wantShifts := (IPv6Shifts{addr6A: 4, addr6B: 5}); err != nil || !maps.Equal(shifts, wantShifts) {
		t.Errorf("DetectIPv6Shifts = %v, %v; want %v", shifts, err, wantShifts)
	}
	want = []read{{6, 4, false}, {7, 5, false}, {6, 4, false}, {7, 4, false}, {6, 4, false}, {3, 5, false}, {7, 4, false}, {6, 4, false}}
	if got := readAll(ReaderOptions{IPv6HostShifts: shifts}); !slices.Equal(got, want) {
		t.Errorf("detected in advance: %v, want %v", got, want)
	}
	want = []read{{6, 4, false}, {14 & 7, 4, false}, {6, 4, false}, {7, 4, false}, {6, 4, false}, {6, 4, false}, {7, 4, false}, {6, 4, false}}
	if got := readAll(ReaderOptions{IPv6PriorityShift: 4}); !slices.Equal(got, want) {
		t.Errorf("forced shift 4: %v, want %v", got, want)
	}
	if IPv6ShiftOf(0xE0) != 5 || IPv6ShiftOf(0x70) != 4 || IPv6ShiftOf(0x40) != 0 {
		t.Errorf("ipv6ShiftOf wrong: %d %d %d", IPv6ShiftOf(0xE0), IPv6ShiftOf(0x70), IPv6ShiftOf(0x40))
	}
}

// TestIPLengthMismatch: an IPv4 total length larger than an uncut frame is
// counted as a mismatch, not as a snap-length cut, the frame and its
// events say so (HOMA-WIRE-015 judges it), and the packet decodes with its
// real length.
func TestIPLengthMismatch(t *testing.T) {
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, sampleFields()[0], wire.EncodeOptions{})
	fr[14+2], fr[14+3] = 0x05, 0xdc // total length 1500
	fr = fr[:14+20+56+100]          // but only 100 data bytes in the frame
	r, _ := NewReader(bytes.NewReader(writeFrames(t, fr)), ReaderOptions{})
	f, err := r.Next()
	if err != nil || f.Err != nil {
		t.Fatal(err, f.Err)
	}
	st := r.Stats()
	if st.IPLengthMismatch != 1 || st.Truncated != 0 || f.Packet.Data().DataLen() != 100 {
		t.Errorf("mismatch %d truncated %d len %d, want 1 0 100", st.IPLengthMismatch, st.Truncated, f.Packet.Data().DataLen())
	}
	if ev := f.Events(nil); !f.IPLengthPastFrame || len(ev) != 1 || !ev[0].IP.LengthPastFrame || f.SnapCut {
		t.Errorf("frame IPLengthPastFrame %v, snap cut %v, events %d (first's LengthPastFrame %v): want true, false, 1, true", f.IPLengthPastFrame, f.SnapCut, len(ev), len(ev) > 0 && ev[0].IP.LengthPastFrame)
	}
}

// TestReaderGSOSegments: a sender-side GSO frame (doff 0xD0, 52-byte prefix,
// interleaved seg headers) is split by the Reader; cut by a snap length
// before the second seg header, its segments are marked Assumed.
func TestReaderGSOSegments(t *testing.T) {
	payload := make([]byte, 0, 3*1424+8)
	payload = append(payload, make([]byte, 1424)...)
	payload = append(payload, 0, 0, 0x05, 0x90) // seg.offset 1424
	payload = append(payload, make([]byte, 1424)...)
	payload = append(payload, 0, 0, 0x0b, 0x20) // seg.offset 2848
	payload = append(payload, make([]byte, 500)...)
	df := &wire.DataFields{Common: wire.CommonFields{Doff: wire.DoffGSO, SenderID: 2}, MessageLength: 5000, Incoming: 5000, Payload: payload}
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, df, wire.EncodeOptions{SetMarks: true})
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Interface{Name: "x"})
	w.WritePacket(0, time.Unix(1, 0), fr, 0, "")
	w.WritePacket(0, time.Unix(2, 0), fr[:300], len(fr), "")
	w.Flush()
	r, _ := NewReader(&buf, ReaderOptions{})
	for i, wantAssumed := range []bool{false, true} {
		f, err := r.Next()
		if err != nil || f.Err != nil {
			t.Fatal(err, f.Err)
		}
		if len(f.Segments) != 3 {
			t.Fatalf("frame %d: %d segments, want 3", i+1, len(f.Segments))
		}
		for j, want := range []struct {
			off uint32
			n   int
		}{{0, 1424}, {1424, 1424}, {2848, 500}} {
			s := f.Segments[j]
			if s.Offset != want.off || s.Length != want.n || s.Assumed != wantAssumed {
				t.Errorf("frame %d segment %d: %+v, want offset %d length %d assumed %v", i+1, j, s, want.off, want.n, wantAssumed)
			}
		}
	}
	st := r.Stats()
	if st.GSOFrames != 2 || st.Segments != 6 || st.Count(wire.TypeData) != 2 {
		t.Errorf("gso %d segments %d data %d, want 2 6 2", st.GSOFrames, st.Segments, st.Count(wire.TypeData))
	}
}

// TestDetectFramesCountsEveryFrame: the detection passes read a capture's
// first DetectFrames frames of any kind, not its first DetectFrames Homa
// frames (which in a capture of mostly other traffic is the whole file):
// a CUTOFFS that would latch shift 4 right after them is not read, one
// just before them is.
func TestDetectFramesCountsEveryFrame(t *testing.T) {
	cut := buildFrame(t, FrameSpec{Src: addr6B, Dst: addr6A, Priority: 7, IPv6Shift: 4}, sampleFields()[5], wire.EncodeOptions{SetMarks: true})
	other := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, &wire.BusyFields{}, wire.EncodeOptions{}) // plain TCP
	for _, c := range []struct {
		before int
		want   IPv6Shifts
	}{{DetectFrames - 1, IPv6Shifts{addr6B: 4}}, {DetectFrames, IPv6Shifts{}}} {
		frames := make([][]byte, 0, c.before+1)
		for range c.before {
			frames = append(frames, other)
		}
		r, _ := NewReader(bytes.NewReader(writeFrames(t, append(frames, cut)...)), ReaderOptions{})
		if s, err := DetectIPv6Shifts(r); !maps.Equal(s, c.want) || err != nil {
			t.Errorf("CUTOFFS after %d other frames: DetectIPv6Shifts = %v, %v; want %v", c.before, s, err, c.want)
		}
	}
}

// TestSkipIPv6Ext: the walk past IPv6 extension headers to Homa
// (RFC 8200 4.1): routing and destination options by their length byte,
// a fragment header by its 8 bytes; an atomic fragment (offset 0, no more
// fragments) is a whole packet, a first fragment is read as one, a later
// one holds no Homa header; a cut header stops the walk.
func TestSkipIPv6Ext(t *testing.T) {
	homa := []byte{0x80, 0x01, 0x0f, 0xa0}
	ext := func(next byte, words int) []byte { // 8*(words+1) bytes
		b := make([]byte, 8*(words+1))
		b[0], b[1] = next, byte(words)
		return b
	}
	fragHdr := func(next byte, off uint16, more bool) []byte {
		b := []byte{next, 0, byte(off >> 5), byte(off<<3) & 0xf8, 0, 0, 0, 1}
		if more {
			b[3] |= 1
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		name        string
		next        uint8
		in          []byte
		proto       uint8
		skipped     int
		frag, later bool
	}{
		{"none", 146, homa, 146, 0, false, false},
		{"destination options", 60, cat(ext(146, 0), homa), 146, 8, false, false},
		{"routing then destination", 43, cat(ext(60, 1), ext(146, 0), homa), 146, 24, false, false},
		{"atomic fragment", 44, cat(fragHdr(146, 0, false), homa), 146, 8, false, false},
		{"first fragment", 44, cat(fragHdr(146, 0, true), homa), 146, 8, true, false},
		{"later fragment", 44, cat(fragHdr(146, 185, false), homa), 146, 8, true, true},
		{"cut", 60, ext(146, 1)[:8], 60, 0, false, false},
	} {
		proto, rest, skipped, frag, later := skipIPv6Ext(c.next, c.in)
		if proto != c.proto || skipped != c.skipped || frag != c.frag || later != c.later || len(rest) != len(c.in)-skipped {
			t.Errorf("%s: proto %d skipped %d frag %v later %v rest %d bytes; want %d %d %v %v", c.name, proto, skipped, frag, later, len(rest), c.proto, c.skipped, c.frag, c.later)
		}
	}
}

// TestPriorityOrPrinted: decode shows both readings of a level whose
// sender's shift is unknown ("p3/6": 0x60 is level 3 with shift 5, 6
// with shift 4), in JSON as priority_or; a forced shift prints one.
func TestPriorityOrPrinted(t *testing.T) {
	data := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 6, IPv6Shift: 4}, sampleFields()[0], wire.EncodeOptions{SetMarks: true})
	capture := writeFrames(t, data)
	for _, c := range []struct {
		o    ReaderOptions
		text string
		or   uint8
	}{{ReaderOptions{}, " p3/6 DATA ", 6}, {ReaderOptions{IPv6PriorityShift: 4}, " p6 DATA ", 0}} {
		r, _ := NewReader(bytes.NewReader(capture), c.o)
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if s := string(f.AppendText(nil, f.Time, 0)); !strings.Contains(s, c.text) {
			t.Errorf("shift %d: %q, want %q in it", c.o.IPv6PriorityShift, s, c.text)
		}
		if j := f.JSON(f.Time, 0); j.PriorityOr != c.or {
			t.Errorf("shift %d: priority_or %d, want %d", c.o.IPv6PriorityShift, j.PriorityOr, c.or)
		}
	}
}
