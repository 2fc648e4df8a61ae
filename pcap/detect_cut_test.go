package pcap

import (
	"bytes"
	"os"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/homatest/homatest/spec/wire"
)

// TestDetectFormatSnapCut: a linux-6.1 capture (IP protocol 253) whose
// snap length cut every Homa header still shows the 2024 format by its IP
// protocol; cut frames used to leave the guess at the current format, and
// the check then judged 2024 GRANTs' doff by the current layout.
func TestDetectFormatSnapCut(t *testing.T) {
	f, err := os.Open("testdata/real/linux-6.1-proto253/b-500k-grants.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(62, r.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if i < 200 { // past the capture's first whole control frames
			continue
		}
		if len(data) > 62 {
			data = data[:62]
			ci.CaptureLength = 62
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := NewReader(&buf, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := DetectFormat(rd); v != wire.Version2024 {
		t.Errorf("DetectFormat of a 253 capture cut at 62 bytes = %v, want %v", v, wire.Version2024)
	}
}
