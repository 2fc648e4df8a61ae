package conformance

import (
	"net/netip"
	"testing"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec/wire"
)

// TestCaptureNoteSnapCut: a frame the capture's snap length cut still gets
// the note of the tester packet it holds the start of, and a conformant
// packet of the same length and header start is not taken for a
// deliberate one it differs from.
func TestCaptureNoteSnapCut(t *testing.T) {
	src, dst := netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.1")
	build := func(off uint32, fill byte) []byte {
		pl := make([]byte, 500)
		for i := range pl {
			pl[i] = fill
		}
		b, err := (&wire.DataFields{Common: wire.CommonFields{Sport: 41999, Dport: 4000, SenderID: 1018},
			MessageLength: 1000, Incoming: 1000, SegOffset: off, Payload: pl}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bad := &tester.Packet{Src: src, Dst: dst, Raw: build(900, 0), Note: "past message_length"}
	good := &tester.Packet{Src: src, Dst: dst, Raw: build(0, 0)}
	lookalike := &tester.Packet{Src: src, Dst: dst, Raw: build(900, 1)} // same header, other payload
	notes := map[string][]*tester.Packet{}
	for _, r := range []*tester.Packet{bad, good, lookalike} {
		k := markKey(r.Src, r.Dst, len(r.Raw), r.Raw)
		notes[k] = append(notes[k], r)
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"deliberate, cut at 94 bytes", bad.Raw[:94], bad.CaptureNote()},
		{"deliberate, whole", bad.Raw, bad.CaptureNote()},
		{"conformant, cut", good.Raw[:94], tester.SentNote},
		{"same header, other payload, whole", lookalike.Raw, tester.SentNote},
	} {
		if got := captureNote(notes[markKey(src, dst, len(bad.Raw), c.raw)], c.raw); got != c.want {
			t.Errorf("%s: note %q, want %q", c.name, got, c.want)
		}
	}
	if got := captureNote(notes[markKey(src, dst, 99, bad.Raw[:94])], bad.Raw[:94]); got != tester.SentNote {
		t.Errorf("another wire length: note %q, want %q", got, tester.SentNote)
	}
}
