package pcap

import (
	"path/filepath"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestDetectFormat: HomaModule's captures are detected in their own wire
// format (protocol 253 for Linux 6.1's module, 146 for 6.13's), with the
// IPv6 priority shift of an IPv6 capture.
func TestDetectFormat(t *testing.T) {
	for _, c := range []struct {
		file string
		v    wire.Version
		ipv6 bool
	}{
		{"linux-6.1-proto253/a-small-rpcs.pcap", wire.Version2024, false},
		{"linux-6.13-proto146/a-small-rpcs.pcap", wire.VersionCurrent, false},
		{"linux-6.1-proto253/f1-ipv6.pcap", wire.Version2024, true},
	} {
		r, err := Open(filepath.Join("testdata", "real", c.file), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, shift := DetectFormat(r)
		r.Close()
		if v != c.v || (shift != 0) != c.ipv6 {
			t.Errorf("%s: %v, shift %d; want %v, a shift %v", c.file, v, shift, c.v, c.ipv6)
		}
	}
}
