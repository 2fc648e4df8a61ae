package scenario

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

var (
	hostA = netip.MustParseAddr("198.18.0.1")
	hostB = netip.MustParseAddr("198.18.0.2")
)

// frame builds an Ethernet frame of f from src to dst.
func frame(t *testing.T, src, dst netip.Addr, f wire.Fields) []byte {
	t.Helper()
	b, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: src, Dst: dst}, f, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

// TestNoteFilterAndDrops: the switch's record, written in odd-sized
// chunks, keeps only the commented frames; they become Drops with their
// Homa meaning and RPC ordinal, and two runs compare by that meaning.
func TestNoteFilterAndDrops(t *testing.T) {
	grant := frame(t, hostB, hostA, &wire.GrantFields{Common: wire.CommonFields{SenderID: 7, Sport: 4000, Dport: 32768}, Offset: 20000, Priority: 1})
	data := frame(t, hostA, hostB, &wire.DataFields{Common: wire.CommonFields{SenderID: 4, Sport: 32768, Dport: 4000, Sequence: 1424},
		MessageLength: 5000, Incoming: 5000, SegOffset: 1424, Retransmit: 1, Payload: make([]byte, 1424)})
	var stream bytes.Buffer
	w, err := pcap.NewWriter(&stream, pcap.Interface{Name: "p1"}, pcap.Interface{Name: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 123456789)
	for i, c := range []struct {
		port    int
		data    []byte
		comment string
	}{
		{1, data, ""},
		{0, grant, "dropped: plan (plan rule 1 (a GRANT))"},
		{1, data, ""},
		{1, data, "plan rules 0, 2: delay 5ms"},
		{0, data, "dropped: loss (random)"},
	} {
		if err := w.WritePacket(c.port, t0.Add(time.Duration(i)*time.Millisecond), c.data, len(c.data), c.comment); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var f noteFilter
	for b := stream.Bytes(); len(b) > 0; {
		n := min(len(b), 37)
		if k, err := f.Write(b[:n]); k != n || err != nil {
			t.Fatalf("Write: %d, %v", k, err)
		}
		b = b[n:]
	}
	notes := f.Notes()
	if len(notes) != 3 || notes[0].Port != 0 || !notes[0].Time.Equal(t0.Add(time.Millisecond)) || !bytes.Equal(notes[0].Data, grant) {
		t.Fatalf("notes %+v", notes)
	}
	ords := map[wire.RPCKey]int{{Client: hostA, Server: hostB, ClientID: 4}: 1, {Client: hostA, Server: hostB, ClientID: 6}: 2}
	var out bytes.Buffer
	ds, err := drops(notes, 2, ords, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"plan rule 1 dropped GRANT of RPC 2 request offset 20000",
		"plan rule 0,2 altered DATA of RPC 1 request offset 1424 (retransmission)",
		"loss dropped DATA of RPC 1 request offset 1424 (retransmission)",
	}
	for i, d := range ds {
		if d.Key() != want[i] {
			t.Errorf("drop %d: %q, want %q", i, d.Key(), want[i])
		}
	}
	if ds[0].Host != "h1" || !ds[0].Dropped || ds[0].Reason != "plan" || ds[2].Reason != "loss" || ds[1].Reason != "altered" || ds[1].Host != "h2" {
		t.Errorf("drops %+v", ds)
	}
	// The notes file reads back as a capture with the comments' frames.
	r, err := pcap.NewReader(bytes.NewReader(out.Bytes()), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := r.Next(); err == nil; _, err = r.Next() {
		n++
	}
	if n != 3 {
		t.Errorf("switch-notes.pcapng: %d frames, want 3", n)
	}

	if d := CompareDrops(ds, ds); d != nil {
		t.Errorf("a run differs from itself: %v", d)
	}
	other := append([]Drop(nil), ds...)
	other[0].RPC = 3
	d := CompareDrops(ds, other)
	if len(d) != 2 || !strings.Contains(d[0], "only in the original: plan rule 1 dropped GRANT of RPC 2") ||
		!strings.Contains(d[1], "only in the replay: plan rule 1 dropped GRANT of RPC 3") {
		t.Errorf("differences %q", d)
	}
	// A GRANT's offset follows arrival timing: the same GRANT dropped in
	// a replay may carry another one. A DATA packet is named by its offset.
	for i := range ds {
		moved := append([]Drop(nil), ds...)
		moved[i].Offset += 475
		d := CompareDrops(ds, moved)
		switch {
		case ds[i].Type == "DATA" && len(ds[i].Rules) > 0 && len(d) != 2:
			t.Errorf("a DATA drop at another offset compares %q, want 2 differences", d)
		case ds[i].Type != "DATA" && d != nil:
			t.Errorf("a %s drop at another offset compares %q, want the same", ds[i].Type, d)
		}
	}
	// Drops outside the plan (loss) are not compared.
	if d := CompareDrops(ds, ds[:2]); d != nil {
		t.Errorf("a loss drop was compared: %v", d)
	}
}

// TestNoteFilterGarbage: a stream that is not pcapng is ignored, never an
// error for the switch.
func TestNoteFilterGarbage(t *testing.T) {
	var f noteFilter
	if n, err := f.Write(bytes.Repeat([]byte{0xff}, 100)); n != 100 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if len(f.Notes()) != 0 {
		t.Fatal("notes from garbage")
	}
}
