package check

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
)

// recordAs writes the frames of a real capture (Ethernet, classic
// pcap) to path as another capture tool would have recorded them: ng
// makes a pcapng of one Ethernet interface of resolution 2^-32 s (as a
// capture card writes), else each frame becomes two Linux cooked v2
// frames, as tcpdump -i any records a packet crossing a veth pair
// (outgoing on ifindex 2, then received on ifindex 3, 2 µs later).
func recordAs(t *testing.T, name, path string, ng bool) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(realDir, name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	var sll bytes.Buffer
	var w *pcapgo.Writer
	block := func(typ uint32, body []byte) {
		body = append(body, make([]byte, (4-len(body)%4)%4)...)
		b = binary.LittleEndian.AppendUint32(b, typ)
		b = binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
		b = append(b, body...)
		b = binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
	}
	if ng {
		block(0x0A0D0D0A, []byte{0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		block(1, []byte{1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0x80 | 32, 0, 0, 0, 0, 0, 0, 0}) // if_tsresol 2^-32
	} else {
		w = pcapgo.NewWriterNanos(&sll)
		if err := w.WriteFileHeader(262144, layers.LinkTypeLinuxSLL2); err != nil {
			t.Fatal(err)
		}
	}
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if ng {
			ns := uint64(ci.Timestamp.UnixNano())
			ts := ns/1e9<<32 | (ns%1e9<<32)/1e9
			body := binary.LittleEndian.AppendUint32(nil, 0)
			body = binary.LittleEndian.AppendUint32(body, uint32(ts>>32))
			body = binary.LittleEndian.AppendUint32(body, uint32(ts))
			body = binary.LittleEndian.AppendUint32(body, uint32(ci.CaptureLength))
			body = binary.LittleEndian.AppendUint32(body, uint32(ci.Length))
			block(6, append(body, data...))
			continue
		}
		for i, ifindex := range []uint32{2, 3} {
			h := make([]byte, 20, 20+len(data))
			copy(h[0:2], data[12:14])
			binary.BigEndian.PutUint32(h[4:], ifindex)
			binary.BigEndian.PutUint16(h[8:], 1)
			if i == 0 {
				h[10] = 4 // outgoing
			}
			h[11] = 6
			copy(h[12:18], data[6:12])
			f := append(h, data[14:]...)
			c := gopacket.CaptureInfo{Timestamp: ci.Timestamp.Add(time.Duration(i) * 2 * time.Microsecond), CaptureLength: len(f), Length: ci.Length + 6}
			if err := w.WritePacket(c, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !ng {
		b = sll.Bytes()
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFileCaptureForms: real captures as other tools record them are
// judged as the originals are. tcpdump -i any over a veth pair holds
// every packet twice, on both ends: counted once, it passes (it was
// INCOMPLETE, taken for a capture merged with a time-shifted copy of
// itself). A pcapng of binary timestamp resolution 2^-32 s passes (it
// had HOMA-RESEND-001 MUST violations: times read up to 70 ms slow).
func TestFileCaptureForms(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		ng   bool
	}{
		{"linux-6.13-proto146/a-small-rpcs.pcap", false},
		{"linux-6.13-proto146/c-500k-loss3pct-server-side.pcap", true},
	} {
		path := filepath.Join(dir, filepath.Base(c.name)+".pcapng")
		recordAs(t, c.name, path, c.ng)
		o := opts()
		o.CapturePoint = "host:10.0.0.1"
		fr := File(o, path)
		orig := File(o, filepath.Join(realDir, c.name))
		if fr.Error != "" || fr.Verdict != "pass" || fr.Must+fr.Should != 0 || fr.MergedHint != "" {
			t.Errorf("%s (pcapng %v): verdict %s, %d MUST, %d SHOULD, merged %q, error %q; want pass", c.name, c.ng, fr.Verdict, fr.Must, fr.Should, fr.MergedHint, fr.Error)
			continue
		}
		if fr.Stats.Homa != orig.Stats.Homa || fr.Report.RPCs != orig.Report.RPCs {
			t.Errorf("%s (pcapng %v): %d Homa packets, %d RPCs; want the original's %d, %d", c.name, c.ng, fr.Stats.Homa, fr.Report.RPCs, orig.Stats.Homa, orig.Report.RPCs)
		}
		if want := map[bool]int{false: orig.Stats.Homa, true: 0}[c.ng]; fr.Stats.Other[pcap.OtherCopy] != want {
			t.Errorf("%s (pcapng %v): %d copies, want %d", c.name, c.ng, fr.Stats.Other[pcap.OtherCopy], want)
		}
	}
}
