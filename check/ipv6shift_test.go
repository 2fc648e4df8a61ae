package check

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestFileIPv6ShiftFromProfile: a host whose IPv6 priority shift the
// capture never shows (only DATA at even levels) is read with the
// profile's ipv6_prio_shift, not as either shift. The first three frames
// of the linux-2024 f1-ipv6 capture (shift 4), the client's DATA of
// cutoff_version 0 set to traffic class 0x40: level 4 as linux_6.1.38
// writes it, where num_priorities=4 wants the new-peer level 2; read as
// either shift (level 2 or 4) the violation went unseen.
func TestFileIPv6ShiftFromProfile(t *testing.T) {
	in := openReal(t, "linux-6.1-proto253/f1-ipv6.pcap")
	p := filepath.Join(t.TempDir(), "ipv6-tc40.pcap")
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(in.Snaplen(), in.LinkType()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		data, ci, err := in.ReadPacketData()
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 { // traffic class 0x40
			v := binary.BigEndian.Uint32(data[14:18])
			binary.BigEndian.PutUint32(data[14:18], v&0xF00FFFFF|0x40<<20)
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()
	o := opts()
	o.Rules, o.Params = "HOMA-PRIO-002", append(o.Params, "num_priorities=4")
	fr := File(o, p)
	if fr.Error != "" {
		t.Fatal(fr.Error)
	}
	if fr.Profile != "linux-2024" || fr.Must != 1 {
		t.Errorf("profile %s, %d MUST violations; want linux-2024 and 1 (HOMA-PRIO-002: level 4, want 2)", fr.Profile, fr.Must)
	}
}
