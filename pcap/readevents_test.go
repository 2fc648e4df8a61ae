package pcap

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/spec"
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

// TestOwnEvent: the owned event no longer shares bytes with the buffer it
// was decoded from, and a packet the snap length cut stays cut (its wire
// length kept).
func TestOwnEvent(t *testing.T) {
	full, err := wire.Encode(&wire.DataFields{Common: wire.CommonFields{SenderID: 10}, MessageLength: 5000, Incoming: 5000,
		SegOffset: 0, Payload: make([]byte, 1400)}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	buf := append([]byte(nil), full[:100]...) // a 100-byte snap length
	p, err := wire.Decode(buf, wire.DecodeOptions{WireLen: len(full)})
	if err != nil {
		t.Fatal(err)
	}
	e := spec.Event{Packet: p}
	OwnEvent(&e)
	clear(buf)
	if e.Err != nil || e.Packet.Data().MessageLength() != 5000 {
		t.Fatalf("owned event: %v, message_length %d, want 5000 after the buffer was cleared", e.Err, e.Packet.Data().MessageLength())
	}
	if !e.Packet.Truncated() || e.Packet.WireLen() != len(full) || e.Packet.Data().DataLen() != 1400 {
		t.Errorf("truncated %v, wire length %d, data length %d: want cut, %d, 1400", e.Packet.Truncated(), e.Packet.WireLen(), e.Packet.Data().DataLen(), len(full))
	}
	bad := spec.Event{Err: wire.ErrTruncated}
	OwnEvent(&bad)
	if bad.Err != wire.ErrTruncated {
		t.Errorf("an event that did not decode changed: %v", bad.Err)
	}
}

// TestEventIPHeader: the reader passes the IP header's TTL (IPv6 hop
// limit) and whether the IPv4 header checksum verifies to the events
// (HOMA-WIRE-015): BuildFrame's frames carry TTL 64 and a good checksum;
// one with TTL 0 and one with a flipped checksum byte are read as such.
func TestEventIPHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ip.pcapng")
	f, err := Create(path, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i, spec6 := range []bool{false, false, false, true} {
		src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		if spec6 {
			src, dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
		}
		frame := buildFrame(t, FrameSpec{Src: src, Dst: dst}, &wire.GrantFields{Common: wire.CommonFields{SenderID: 11}, Offset: 1000},
			wire.EncodeOptions{FixLengths: true, SetMarks: true})
		switch i {
		case 1:
			frame[14+8] = 0 // TTL, with the checksum made right again
			frame[14+10], frame[14+11] = 0, 0
			sum := wire.IPv4HeaderChecksum(frame[14:34])
			frame[14+10], frame[14+11] = byte(sum>>8), byte(sum)
		case 2:
			frame[14+10] ^= 0x5a
		case 3:
			frame[14+7] = 0 // hop limit
		}
		if err := f.Writer.WritePacket(0, time.Unix(int64(i), 0), frame, len(frame), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadEvents(path, ReaderOptions{})
	if err != nil || len(evs) != 4 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	want := []spec.IPHeader{{Known: true, TTL: 64}, {Known: true, TTL: 0}, {Known: true, TTL: 64, BadChecksum: true}, {Known: true, TTL: 0}}
	for i, e := range evs {
		if e.IP != want[i] {
			t.Errorf("event %d: IP %+v, want %+v", i, e.IP, want[i])
		}
	}
}

// TestReadEventsContextStops: a context that has ended stops the reading
// within a batch (both the piped reader, on more than one CPU, and the
// plain one), with the context's error.
func TestReadEventsContextStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.pcapng")
	f, err := Create(path, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20 * batchEvents
	writeGrants(t, f.Writer, n)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		evs, err := ReadEventsContext(ctx, path, ReaderOptions{})
		runtime.GOMAXPROCS(old)
		if !errors.Is(err, context.Canceled) || len(evs) >= n/2 {
			t.Errorf("GOMAXPROCS %d: %d of %d events, error %v; want context.Canceled within a batch or two", procs, len(evs), n, err)
		}
	}
}

// TestEventStream: an EventStream gives ReadEvents' events in the same
// order (frames, times, packets); an owned copy outlives the next event;
// a file cut in a frame ends with an error naming the file, after the
// whole frames, never a panic.
func TestEventStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.pcapng")
	f, err := Create(path, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	writeGrants(t, f.Writer, 100)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := ReadEvents(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) ([]spec.Event, error) {
		s, err := OpenEventStream(path, ReaderOptions{})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		var got []spec.Event
		for {
			e, err := s.Next()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			c := *e
			s.Own(&c)
			got = append(got, c)
		}
	}
	got, err := read(path)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d events, error %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		if got[i].Frame != want[i].Frame || !got[i].Time.Equal(want[i].Time) || string(got[i].Packet.Bytes()) != string(want[i].Packet.Bytes()) {
			t.Fatalf("event %d: frame %d at %v, want frame %d at %v", i, got[i].Frame, got[i].Time, want[i].Frame, want[i].Time)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcapng")
	if err := os.WriteFile(cut, b[:len(b)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = read(cut)
	if err == nil || !strings.Contains(err.Error(), cut) || len(got) == 0 || len(got) >= len(want) {
		t.Errorf("cut file: %d of %d events, error %v; want the whole frames, then an error naming the file", len(got), len(want), err)
	}
}
