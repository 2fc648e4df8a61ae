package pcap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// samplePcapng returns a pcapng holding one frame of every packet type over
// IPv4 and IPv6, plus a hijacked frame.
func samplePcapng(t testing.TB) []byte {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1, 0)
	fields := sampleFields()
	fields[0].(*wire.DataFields).Payload = []byte("sixteen bytes!!!") // small seeds fuzz (and minimize) faster
	for _, f := range fields {
		w.WritePacket(0, ts, buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 7}, f, wire.EncodeOptions{FixLengths: true, SetMarks: true}), 0, "")
		w.WritePacket(0, ts, buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 3}, f, wire.EncodeOptions{FixLengths: true, SetMarks: true}), 0, "")
	}
	w.WritePacket(0, ts, buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, sampleFields()[0], wire.EncodeOptions{FixLengths: true, SetMarks: true}), 0, "")
	w.Flush()
	return buf.Bytes()
}

// FuzzReader feeds arbitrary bytes to NewReader and reads every frame,
// splitting DATA into segments, rendering text and JSON, and checking the
// events against every spec rule. It must never panic or loop forever;
// decoded frames must satisfy basic invariants.
func FuzzReader(f *testing.F) {
	f.Add(samplePcapng(f))
	f.Add(dropsPcapng(f, [2]int64{0, 3}, [2]int64{1, 2})) // interface statistics blocks
	longRec, _ := capLenOverLenPcap(f)
	f.Add(longRec)                                                       // a classic pcap record with incl_len > orig_len
	f.Add(encapPcapng(f))                                                // tunnels, tags, a bad IP version
	f.Add(copiesCapture(f, layers.LinkTypeLinuxSLL2, false, []copyFrame{ // tcpdump -i any: a packet on both ends of a veth
		{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 2, pkt: 0, ifindex: 3}, {us: 5, pkt: 1, ifindex: 2, out: true}}))
	v1 := samplePcapng(f)
	v2 := bytes.Clone(v1)
	v2[12] = 2               // major version 2
	f.Add(append(v1, v2...)) // a pcapng 2.0 section after a 1.0 one
	if b, err := os.ReadFile(filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap")); err == nil {
		f.Add(b[:1500]) // the pcap header and the first frames of a real capture
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{ICMP: len(data)%2 == 0})
		if err != nil {
			return
		}
		var line []byte
		prof, _ := spec.LookupProfile("linux")
		chk := spec.NewChecker(prof.Name, prof.Params, spec.Rules())
		var evs []spec.Event
		for i := 0; i < 1000; i++ {
			fr, err := r.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return
			}
			if fr.ICMP != nil {
				if !fr.ICMP.QSrc.IsValid() {
					t.Fatalf("frame %d: ICMP quoting no address", fr.Number)
				}
				evs = fr.Events(evs[:0])
				for i := range evs {
					chk.Feed(&evs[i])
				}
				continue
			}
			if fr.Err == nil {
				p := fr.Packet
				if len(p.Bytes()) < p.HeaderLen() {
					t.Fatalf("frame %d: %d bytes < header %d", fr.Number, len(p.Bytes()), p.HeaderLen())
				}
				if fr.Priority > 7 {
					t.Fatalf("priority %d", fr.Priority)
				}
				if p.Type() == wire.TypeData && len(fr.Segments) == 0 {
					t.Fatalf("frame %d: DATA without segments", fr.Number)
				}
				_ = p.Fields()
			}
			for i := range max(1, len(fr.Segments)) {
				line = fr.AppendText(line[:0], time.Time{}, i)
				_ = fr.JSON(time.Time{}, i)
			}
			evs = fr.Events(evs[:0])
			for i := range evs {
				chk.Feed(&evs[i])
			}
		}
		rep := chk.Finish()
		for _, rr := range rep.Rules {
			if rr.Passed+rr.Violated+rr.Inconclusive != rr.Checked {
				t.Fatalf("%s: counts do not add up: %+v", rr.ID, rr)
			}
		}
		st := r.Stats()
		var drops uint64
		for _, d := range st.IfaceDrops {
			drops = addSat(drops, d)
		}
		if drops != st.CaptureDrops {
			t.Fatalf("capture drops %d, by interface %v", st.CaptureDrops, st.IfaceDrops)
		}
		if st.Homa > st.Frames {
			t.Fatalf("homa %d > frames %d", st.Homa, st.Frames)
		}
	})
}
