package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// mergeCaptures writes the frames of the classic pcaps files one after
// another into one pcap (what mergecap does with captures taken at
// different times) and returns its path.
func mergeCaptures(t *testing.T, files ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "merged.pcap")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	for i, file := range files {
		in, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pcapgo.NewReader(in)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.WriteFileHeader(r.Snaplen(), r.LinkType()); err != nil {
				t.Fatal(err)
			}
		}
		for {
			data, ci, err := r.ReadPacketData()
			if err != nil {
				break
			}
			if err := w.WritePacket(ci, data); err != nil {
				t.Fatal(err)
			}
		}
		in.Close()
	}
	return path
}

// TestFileMixedWireFormats: a merge of a linux_6.1 capture (IP protocol
// 253, 2024 format) and a main one (146) is not judged under one profile
// (which made hundreds of MUST violations of the other format's packets
// misread): it is an error naming both protocols and how to split it.
func TestFileMixedWireFormats(t *testing.T) {
	path := mergeCaptures(t, filepath.Join(realDir, "linux-6.1-proto253/b-500k-grants.pcap"),
		filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap"))
	fr := File(opts(), path)
	for _, want := range []string{"mixes Homa wire formats", "IP protocol 253", "over 146", "tshark -r " + path, "ip.proto == 253"} {
		if !strings.Contains(fr.Error, want) {
			t.Errorf("error %q, want it to say %q", fr.Error, want)
		}
	}
	if fr.Report != nil {
		t.Errorf("a report of %d MUST violations, want none", fr.Must)
	}
	// Each part alone is read in its own format, without the error.
	for _, f := range []string{"linux-6.1-proto253/b-500k-grants.pcap", "linux-6.13-proto146/b-500k-grants.pcap"} {
		if fr := File(opts(), filepath.Join(realDir, f)); fr.Error != "" || fr.WireMismatch != "" {
			t.Errorf("%s: error %q, wire mismatch %q, want neither", f, fr.Error, fr.WireMismatch)
		}
	}
}

// TestFileProfileOtherWire: a profile given by name whose wire format is
// not the capture's (linux, IP protocol 146, on a linux_6.1 capture over
// 253) says so in the report, with both protocols and the way out.
func TestFileProfileOtherWire(t *testing.T) {
	o := opts()
	o.Profile = "linux"
	fr := File(o, filepath.Join(realDir, "linux-6.1-proto253/e2-server-forgets-request.pcap"))
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	for _, want := range []string{"73 of 73 Homa packets carry IP protocol 253", "current wire format's 146 (profile linux)", "--profile auto"} {
		if !strings.Contains(fr.WireMismatch, want) {
			t.Errorf("wire mismatch %q, want it to say %q", fr.WireMismatch, want)
		}
	}
}
