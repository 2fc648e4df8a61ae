package pcap

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
)

// TestDamagedHintOnlyForTruncation: a pcapng whose third packet names
// an interface no IDB declared is damaged, not cut short: its error says
// "damaged: <what>" without the truncation advice (copy again, stop
// tcpdump with Ctrl-C), which a file ending mid-record still gets.
func TestDamagedHintOnlyForTruncation(t *testing.T) {
	b, err := os.ReadFile("../cmd/homatest/internal/cli/testdata/faults/BR-24-resend-storm.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(b[8:]) != 0x1A2B3C4D {
		t.Fatal("test capture is not little-endian pcapng")
	}
	bad := append([]byte(nil), b...)
	epb := 0
	for off := 0; off+12 <= len(bad); {
		typ, n := binary.LittleEndian.Uint32(bad[off:]), int(binary.LittleEndian.Uint32(bad[off+4:]))
		if typ == 6 {
			if epb++; epb == 3 {
				binary.LittleEndian.PutUint32(bad[off+8:], 5) // interface id 5
				break
			}
		}
		off += n
	}
	if epb != 3 {
		t.Fatalf("found %d enhanced packet blocks, want 3", epb)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name      string
		data      []byte
		want, not string
	}{
		{"badif.pcapng", bad, ": capture damaged: read frame 3: ", "Ctrl-C"},
		{"cut.pcapng", b[:1000], ": capture damaged or cut short after frame", "capture damaged:"},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := StreamPath(path, ReaderOptions{}, func(*spec.Event) {})
		var d *DamagedError
		if !errors.As(err, &d) {
			t.Fatalf("%s: %v, want a DamagedError", c.name, err)
		}
		if msg := d.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, c.not) {
			t.Errorf("%s: %q, want %q and not %q", c.name, msg, c.want, c.not)
		}
	}
}
