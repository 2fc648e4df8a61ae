package check

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestFileIPv6ShiftFromProfile: a host whose IPv6 priority shift the
// capture never shows (only packets at even levels) is read with the
// profile's ipv6_prio_shift, not as either shift. The first four frames
// of the linux-2024 f1-ipv6 capture (shift 4), the server's CUTOFFS set to
// traffic class 0x60: level 6 as linux_6.1.38 writes it, where
// num_priorities=4 wants control packets at level 3; read as either shift
// (level 3 or 6) the violation went unseen. (The client's DATA before it,
// cutoff_version 0, has no defined level with fewer than 7 levels.)
func TestFileIPv6ShiftFromProfile(t *testing.T) {
	in := openReal(t, "linux-6.1-proto253/f1-ipv6.pcap")
	p := filepath.Join(t.TempDir(), "ipv6-tc60.pcap")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(in.Snaplen(), in.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		data, ci, err := in.ReadPacketData()
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 { // the server's CUTOFFS: traffic class 0x60
			v := binary.BigEndian.Uint32(data[14:18])
			binary.BigEndian.PutUint32(data[14:18], v&0xF00FFFFF|0x60<<20)
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()
	o := opts()
	o.Rules, o.Params = "HOMA-PRIO-001", append(o.Params, "num_priorities=4")
	fr := File(o, p)
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	if fr.Profile != "linux-2024" || fr.Must != 1 {
		t.Errorf("profile %s, %d MUST violations; want linux-2024 and 1 (HOMA-PRIO-001: level 6, want 3)", fr.Profile, fr.Must)
	}
}
