package pcap

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// seenEvent is what a test keeps of an event: its numbers and copies of
// its bytes.
type seenEvent struct {
	frame, seg, length int
	offset             uint32
	pkt, payload       []byte
}

// collect reads path with read (a Reader's event loop) and keeps every
// event.
func collect(t *testing.T, path string, read func(*Reader, func(*spec.Event)) error) ([]seenEvent, error) {
	t.Helper()
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []seenEvent
	err = read(r, func(e *spec.Event) {
		out = append(out, seenEvent{e.Frame, e.Segment, e.Length, e.Offset,
			bytes.Clone(e.Packet.Bytes()), bytes.Clone(e.Payload)})
	})
	return out, err
}

// TestEachEventPiped: the piped loop hands fn the same events, bytes
// included, as the plain one, over batches cut by count and by bytes
// (frames of up to 60 KB), and returns a cut file's error after the
// events before the cut.
func TestEachEventPiped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pcapng")
	f, err := Create(path, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	sb := gopacket.NewSerializeBuffer()
	const n = 3 * batchEvents
	for i := range n {
		l := 100 + i*37%1300
		if i%50 == 7 {
			l = 60000 // a few batches end at batchBytes
		}
		p := make([]byte, l)
		for j := range p {
			p[j] = byte(i + j)
		}
		fr, err := BuildFrame(sb, FrameSpec{Src: src, Dst: dst}, &wire.DataFields{Common: wire.CommonFields{SenderID: uint64(2 * i)},
			MessageLength: 100000, Incoming: 100000, SegOffset: wire.SegOffsetInSequence, Payload: p}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WritePacket(0, time.Unix(int64(i), 0), fr, len(fr), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	plain := func(r *Reader, fn func(*spec.Event)) error {
		var evs []spec.Event
		for {
			f, err := r.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			evs = f.Events(evs[:0])
			for i := range evs {
				fn(&evs[i])
			}
		}
	}
	piped := func(r *Reader, fn func(*spec.Event)) error { return r.eachEventPiped(context.Background(), nil, fn) }
	for _, cut := range []int{0, 1000} {
		if cut > 0 {
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, b[:len(b)-cut], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, werr := collect(t, path, plain)
		got, gerr := collect(t, path, piped)
		if (werr == nil) != (gerr == nil) || (cut > 0) != (gerr != nil) {
			t.Errorf("cut %d: piped error %v, plain %v", cut, gerr, werr)
		}
		if len(want) < n-1 || len(got) != len(want) {
			t.Fatalf("cut %d: piped %d events, plain %d, want about %d", cut, len(got), len(want), n)
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.frame != g.frame || w.seg != g.seg || w.offset != g.offset || w.length != g.length ||
				!bytes.Equal(w.pkt, g.pkt) || !bytes.Equal(w.payload, g.payload) {
				t.Fatalf("cut %d: event %d differs: frame %d/%d, %d/%d payload bytes", cut, i, g.frame, w.frame, len(g.payload), len(w.payload))
			}
		}
	}
}

// TestEachEventPipedOtherTraffic: a long run of frames without Homa
// between two Homa packets (a mirror port's other traffic) is held and
// dropped batch by batch: the piped loop's allocations stay a small
// fraction of those bytes, and both Homa packets arrive whole.
func TestEachEventPipedOtherTraffic(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	sb := gopacket.NewSerializeBuffer()
	homa := func(id uint64) {
		fr, err := BuildFrame(sb, FrameSpec{Src: src, Dst: dst}, &wire.DataFields{Common: wire.CommonFields{SenderID: id},
			MessageLength: 100, Incoming: 100, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		w.WritePacket(0, time.Unix(1, 0), fr, len(fr), "")
	}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	udp.SetNetworkLayerForChecksum(ip)
	ub := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(ub, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload(make([]byte, 1000)))
	const others = 20000 // 20 MB of frames without Homa
	homa(2)
	for range others {
		w.WritePacket(0, time.Unix(1, 0), ub.Bytes(), 0, "")
	}
	homa(4)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	err = r.eachEventPiped(context.Background(), nil, func(e *spec.Event) {
		if len(e.Payload) == 100 {
			ids = append(ids, e.Packet.SenderID())
		}
	})
	runtime.ReadMemStats(&m1)
	if err != nil || len(ids) != 2 || ids[0] != 2 || ids[1] != 4 {
		t.Fatalf("events %v, %v: want RPCs 2 and 4 whole", ids, err)
	}
	held := others * len(ub.Bytes())
	if a := m1.TotalAlloc - m0.TotalAlloc; a > uint64(held/4) {
		t.Errorf("reading %d MB of other frames allocated %d MB: the batch grew with them", held>>20, a>>20)
	}
}
