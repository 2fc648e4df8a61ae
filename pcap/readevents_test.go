package pcap

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/spec/wire"
)

// writeGrants writes n GRANTs from 10.0.0.1 to 10.0.0.2 at seconds 0, 1,
// ... with offsets 1000, 2000, ...
func writeGrants(t *testing.T, w *Writer, n int) {
	t.Helper()
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	for i := range n {
		frame, err := BuildFrame(gopacket.NewSerializeBuffer(), FrameSpec{Src: src, Dst: dst},
			&wire.GrantFields{Common: wire.CommonFields{SenderID: 11}, Offset: uint32(1000 * (i + 1))},
			wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WritePacket(0, time.Unix(int64(i), 0), frame, len(frame), ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadEvents: the events outlive the reader (each has its own bytes),
// and a cut file gives the events before the cut and an error naming it.
func TestReadEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.pcapng")
	f, err := Create(path, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	writeGrants(t, f.Writer, 3)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(path, ReaderOptions{})
	if err != nil || len(evs) != 3 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Packet.Grant().Offset() != uint32(1000*(i+1)) || e.Frame != i+1 {
			t.Errorf("event %d: frame %d offset %d", i, e.Frame, e.Packet.Grant().Offset())
		}
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err = ReadEvents(path, ReaderOptions{})
	if len(evs) != 2 || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("cut file: %d events, %v; want 2 and an error naming the file", len(evs), err)
	}
}
