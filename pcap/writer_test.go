package pcap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

func TestWriterInterfacesAndComments(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "sw-h1"}, Interface{Name: "sw-h2", Description: "port 2", LinkType: layers.LinkTypeRaw})
	if err != nil {
		t.Fatal(err)
	}
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 11}}, wire.EncodeOptions{})
	ts := time.Unix(1700000000, 987654321)
	if err := w.WritePacket(0, ts, fr, 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(1, ts.Add(time.Nanosecond), fr[14:], 0, "dropped: fault plan rule 1"); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(2, ts, fr, 0, ""); err == nil {
		t.Error("writing to undeclared interface 2 succeeded")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	ng, err := pcapgo.NewNgReader(bytes.NewReader(buf.Bytes()), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	data, ci, err := ng.ReadPacketData()
	if err != nil || ci.InterfaceIndex != 0 || !bytes.Equal(data, fr) || !ci.Timestamp.Equal(ts) {
		t.Fatalf("packet 1: err %v iface %d ts %v equal %v", err, ci.InterfaceIndex, ci.Timestamp, bytes.Equal(data, fr))
	}
	_, ci, err = ng.ReadPacketData()
	if err != nil || ci.InterfaceIndex != 1 {
		t.Fatalf("packet 2: err %v iface %d", err, ci.InterfaceIndex)
	}
	if i, _ := ng.Interface(1); i.Name != "sw-h2" || i.LinkType != layers.LinkTypeRaw || i.Description != "port 2" {
		t.Errorf("interface 1 = %+v", i)
	}
	// Both frames decode through our Reader, on their own link types.
	r, _ := NewReader(bytes.NewReader(buf.Bytes()), ReaderOptions{})
	for i := 0; i < 2; i++ {
		f, err := r.Next()
		if err != nil || f.Packet.Type() != wire.TypeNeedAck || f.Packet.SenderID() != 11 || f.Interface != i {
			t.Fatalf("frame %d: %v %v", i, err, f)
		}
	}
}

func TestFileWriterAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.pcapng")
	fw, err := Create(path, Interface{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	fw.WritePacket(0, time.Unix(1, 0), []byte{1, 2, 3}, 0, "")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("final file exists before Close: %v", err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	fw2, _ := Create(filepath.Join(dir, "aborted.pcapng"), Interface{Name: "x"})
	fw2.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "run.pcapng" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only run.pcapng", names)
	}
}

// TestEachEvent reads a written capture back event by event, in order, and
// reports the damage of a cut file after the events before it.
func TestEachEvent(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	writeGrants(t, w, 3)
	w.Flush()
	whole := buf.Bytes()
	read := func(b []byte) ([]uint32, error) {
		r, err := NewReader(bytes.NewReader(b), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var offs []uint32
		err = r.EachEvent(func(e *spec.Event) { offs = append(offs, e.Packet.Grant().Offset()) })
		return offs, err
	}
	offs, err := read(whole)
	if err != nil || len(offs) != 3 || offs[0] != 1000 || offs[2] != 3000 {
		t.Fatalf("EachEvent: offsets %v, %v; want [1000 2000 3000] and no error", offs, err)
	}
	offs, err = read(whole[:len(whole)-10])
	if err == nil || len(offs) != 2 {
		t.Fatalf("cut capture: offsets %v, error %v; want the first 2 and an error", offs, err)
	}
}
