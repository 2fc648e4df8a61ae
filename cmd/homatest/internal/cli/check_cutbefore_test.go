package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestCheckCutBeforeHomaUnseen: frames the snap length cut before their
// IP header ended (editcap -s 20) may each have been a Homa packet: check
// counts them as unseen packets in its verdict (capture drops from the
// snap length, snap_hint), as it counts Homa frames whose header was cut.
// It only said so for a capture with no Homa packet at all. Fails on
// the old code (capture_drops 0, no hint).
func TestCheckCutBeforeHomaUnseen(t *testing.T) {
	f, err := os.Open(filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, r.LinkType()); err != nil {
		t.Fatal(err)
	}
	cut := 0
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if i%4 == 3 && len(data) > 20 {
			// Cut this frame inside its IPv4 header: no protocol byte.
			ci.CaptureLength, data = 20, data[:20]
			cut++
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	capture := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(capture, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ := run(t, "check", "-o", "json", capture)
	var rep struct {
		Files []struct {
			CaptureDrops     uint64 `json:"capture_drops"`
			CaptureDropsFrom string `json:"capture_drops_from"`
			SnapHint         string `json:"snap_hint"`
			Report           struct {
				CaptureDrops uint64 `json:"capture_drops"`
			} `json:"report"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); err != nil || len(rep.Files) != 1 {
		t.Fatalf("%v:\n%s", err, out)
	}
	fr := rep.Files[0]
	want := "frames before their Homa header (at most 20 bytes of each were captured), so any Homa packet among them is unseen"
	if cut == 0 || fr.CaptureDropsFrom != "snap length" || !strings.Contains(fr.SnapHint, want) || !strings.Contains(out, `"capture_drops": `) {
		t.Errorf("%d frames cut: capture_drops_from %q, snap_hint %q; want snap length and %q\n%s", cut, fr.CaptureDropsFrom, fr.SnapHint, want, out)
	}
}
