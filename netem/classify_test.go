package netem

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// ipv6Frame builds Ethernet + IPv6 (traffic class prio<<5) around payload.
func ipv6Frame(prio, next uint8, payload []byte) []byte {
	b := make([]byte, 14+40, 14+40+len(payload))
	binary.BigEndian.PutUint16(b[12:], etherTypeIPv6)
	ip := b[14:]
	tc := prio << 5
	ip[0], ip[1] = 0x60|tc>>4, tc<<4|0x0a // flow label bits kept to check the rewrite
	binary.BigEndian.PutUint16(ip[4:], uint16(len(payload)))
	ip[6], ip[7] = next, 64
	s, d := netip.MustParseAddr("fd00::1").As16(), netip.MustParseAddr("fd00::2").As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
	return append(b, payload...)
}

func TestClassifyIPv6(t *testing.T) {
	pkt, err := wire.Encode(&wire.GrantFields{Common: wire.CommonFields{SenderID: 3}, Offset: 7000}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	f := ipv6Frame(5, wire.IPProtoHoma, pkt)
	fi := classify(f)
	if fi.ipOff != 14 || !fi.v6 || fi.prio != 5 || !fi.homa || fi.pkt.Type() != wire.TypeGrant || fi.pkt.Grant().Offset() != 7000 {
		t.Fatalf("classify = %+v", fi)
	}
	setPriority(f, &fi, 2)
	if again := classify(f); again.prio != 2 || f[14]>>4 != 6 || f[15]&0x0f != 0x0a {
		t.Errorf("after rewrite: prio %d, bytes % x", again.prio, f[14:16])
	}
	// VLAN-tagged IPv4.
	v4 := ipv4Frame(macA, macB, addrA, addrB, 6, 17, make([]byte, 8))
	tagged := append(append(append([]byte{}, v4[:12]...), 0x81, 0x00, 0x00, 0x05), v4[12:]...)
	if fi := classify(tagged); fi.ipOff != 18 || fi.prio != 6 || fi.homa {
		t.Errorf("VLAN frame: %+v", fi)
	}
	if fi := classify([]byte{1, 2, 3}); fi.ipOff != -1 {
		t.Errorf("runt frame: %+v", fi)
	}
}

// FuzzClassify: classify and setPriority never panic and never write past
// the frame.
func FuzzClassify(f *testing.F) {
	f.Add(ipv4Frame(macA, macB, addrA, addrB, 3, 17, []byte("hello")))
	f.Add(ipv6Frame(4, wire.IPProtoHoma, make([]byte, 40)))
	pkt, _ := wire.Encode(&wire.DataFields{Common: wire.CommonFields{SenderID: 2}, MessageLength: 10, Payload: make([]byte, 10)}, wire.EncodeOptions{FixLengths: true})
	f.Add(ipv4Frame(macA, macB, addrA, addrB, 3, wire.IPProtoHoma, pkt))
	f.Fuzz(func(t *testing.T, b []byte) {
		fi := classify(b)
		c := append([]byte(nil), b...)
		setPriority(c[:len(c):len(c)], &fi, 7)
		if fi.ipOff < 0 && string(c) != string(b) {
			t.Errorf("non-IP frame changed by setPriority")
		}
	})
}
