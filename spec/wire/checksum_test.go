package wire

import (
	"net/netip"
	"testing"
)

// refChecksum is an independent RFC 1071 implementation: build the TCP
// pseudo-header (RFC 793 for IPv4, RFC 8200 §8.1 for IPv6) with protocol 6
// and length len(pkt), append pkt with its checksum field (offset 16)
// zeroed, pad to even length and fold a 16-bit ones'-complement sum.
func refChecksum(src, dst netip.Addr, pkt []byte) uint16 {
	var buf []byte
	n := len(pkt)
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		buf = append(buf, s[:]...)
		buf = append(buf, d[:]...)
		buf = append(buf, 0, 6, byte(n>>8), byte(n))
	} else {
		s, d := src.As16(), dst.As16()
		buf = append(buf, s[:]...)
		buf = append(buf, d[:]...)
		buf = append(buf, byte(n>>24), byte(n>>16), byte(n>>8), byte(n), 0, 0, 0, 6)
	}
	body := append([]byte(nil), pkt...)
	body[16], body[17] = 0, 0
	buf = append(buf, body...)
	if len(buf)%2 == 1 {
		buf = append(buf, 0)
	}
	var sum uint32
	for i := 0; i < len(buf); i += 2 {
		sum += uint32(buf[i])<<8 | uint32(buf[i+1])
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// onesSumWithChecksum sums pseudo-header and packet including the stored
// checksum; RFC 1071: a correct checksum makes it 0xFFFF.
func onesSumWithChecksum(src, dst netip.Addr, pkt []byte) uint16 {
	c := refChecksum(src, dst, pkt) // checksum over zeroed field
	stored := uint32(pkt[16])<<8 | uint32(pkt[17])
	s := uint32(^c) + stored
	s = s&0xffff + s>>16
	return uint16(s)
}

var (
	v4a = netip.MustParseAddr("10.0.0.1")
	v4b = netip.MustParseAddr("10.0.0.11")
	v6a = netip.MustParseAddr("fd00::1")
	v6b = netip.MustParseAddr("fd00::11")
)

func TestChecksumKnownValues(t *testing.T) {
	busy := hexBytes(t, realBusy613Hex)
	// 57-byte DATA (odd length: the last byte is padded with zero).
	odd := append(hexBytes(t, realData613Hex)[:56], 0xab)
	tests := []struct {
		name     string
		src, dst netip.Addr
		pkt      []byte
		want     uint16
	}{
		// By hand: pseudo-header 0a00+0001+0a00+000b+0006+001c = 0x142e;
		// BUSY words 0fa0+8000+0014+5006+b97d+0003 = 0x1993a; total
		// 0x1ad68 -> fold 0xad69 -> complement 0x5296.
		{"ipv4 BUSY", v4a, v4b, busy, 0x5296},
		{"ipv6 BUSY", v6a, v6b, busy, 0x6c8e},
		{"ipv4 odd DATA", v4b, v4a, odd, 0x16b5},
		{"ipv6 odd DATA", v6b, v6a, odd, 0x30ad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ref := refChecksum(tc.src, tc.dst, tc.pkt); ref != tc.want {
				t.Fatalf("reference checksum %#04x, want %#04x (test bug)", ref, tc.want)
			}
			if got := Checksum(tc.src, tc.dst, tc.pkt); got != tc.want {
				t.Errorf("Checksum: got %#04x, want %#04x", got, tc.want)
			}
			// The stored checksum field does not take part.
			pkt := append([]byte(nil), tc.pkt...)
			pkt[16], pkt[17] = 0xde, 0xad
			if got := Checksum(tc.src, tc.dst, pkt); got != tc.want {
				t.Errorf("Checksum with junk in the field: got %#04x, want %#04x", got, tc.want)
			}
			if ChecksumValid(tc.src, tc.dst, pkt) {
				t.Errorf("ChecksumValid with junk: got true, want false")
			}
			pkt[16], pkt[17] = byte(tc.want>>8), byte(tc.want)
			if !ChecksumValid(tc.src, tc.dst, pkt) {
				t.Errorf("ChecksumValid: got false, want true")
			}
			if s := onesSumWithChecksum(tc.src, tc.dst, pkt); s != 0xffff {
				t.Errorf("RFC 1071 verification sum: got %#04x, want 0xffff", s)
			}
			// Swapping source and destination does not change a ones'-
			// complement sum; changing an address does.
			if got := Checksum(tc.dst, tc.src, tc.pkt); got != tc.want {
				t.Errorf("swapped addresses: got %#04x, want %#04x", got, tc.want)
			}
			other := netip.MustParseAddr("10.0.0.99")
			if tc.src.Is6() {
				other = netip.MustParseAddr("fd00::99")
			}
			if Checksum(tc.src, other, tc.pkt) == tc.want {
				t.Errorf("changing dst did not change the checksum")
			}
		})
	}
}

func TestChecksumMatchesReference(t *testing.T) {
	// Many lengths and contents, both families, against the reference.
	pkt := make([]byte, 0, 2000)
	for i := range 2000 {
		pkt = append(pkt, byte(i*131+7))
	}
	for _, n := range []int{28, 29, 33, 37, 56, 57, 62, 80, 90, 157, 1480, 1481, 2000} {
		for _, pair := range [][2]netip.Addr{{v4a, v4b}, {v6a, v6b},
			{netip.MustParseAddr("255.255.255.255"), netip.MustParseAddr("255.255.255.254")},
			{netip.MustParseAddr("ffff:ffff::ffff"), netip.MustParseAddr("ffff::fffe")}} {
			want := refChecksum(pair[0], pair[1], pkt[:n])
			if got := Checksum(pair[0], pair[1], pkt[:n]); got != want {
				t.Errorf("len %d %v->%v: got %#04x, want %#04x", n, pair[0], pair[1], got, want)
			}
		}
	}
	// All-0xFF data stresses the carry folding.
	ff := make([]byte, 1500)
	for i := range ff {
		ff[i] = 0xff
	}
	if got, want := Checksum(v6a, v6b, ff), refChecksum(v6a, v6b, ff); got != want {
		t.Errorf("all-0xff: got %#04x, want %#04x", got, want)
	}
}

// TestChecksumMappedIPv4: IPv4-mapped IPv6 addresses count as IPv4 (a
// HomaModule AF_INET6 socket sends real IPv4 packets to v4-mapped peers).
func TestChecksumMappedIPv4(t *testing.T) {
	busy := hexBytes(t, realBusy613Hex)
	m1 := netip.MustParseAddr("::ffff:10.0.0.1")
	m2 := netip.MustParseAddr("::ffff:10.0.0.11")
	if got := Checksum(m1, m2, busy); got != 0x5296 {
		t.Errorf("mapped: got %#04x, want 0x5296 (the IPv4 value)", got)
	}
	if got := Checksum(v4a, m2, busy); got != 0x5296 {
		t.Errorf("v4 src, mapped dst: got %#04x, want 0x5296", got)
	}
}

// TestChecksumValidNoPanic: ChecksumValid is a checker over captured bytes
// and must not panic on input that one real IP header can produce.
func TestChecksumValidNoPanic(t *testing.T) {
	mapped := netip.MustParseAddr("::ffff:10.0.0.1")
	busy := hexBytes(t, realBusy613Hex)
	for _, tc := range []struct {
		name     string
		src, dst netip.Addr
		pkt      []byte
	}{
		{"short", v4a, v4b, busy[:27]},
		{"empty", v4a, v4b, nil},
		// An IPv6 header can carry a v4-mapped source and a native
		// destination; a checker fed from captures must survive it.
		{"ipv6 header with mapped src", mapped, v6a, busy},
		{"zero addrs", netip.Addr{}, netip.Addr{}, busy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("ChecksumValid panicked: %v", r)
				}
			}()
			if ChecksumValid(tc.src, tc.dst, tc.pkt) && len(tc.pkt) < 28 {
				t.Errorf("ChecksumValid on %d bytes: got true, want false", len(tc.pkt))
			}
		})
	}
}

// TestIPv4HeaderChecksum: the checksum of a header with its field zeroed
// is the one the sender stores (a header from RFC 1071's usual worked
// example, 0xB861), and a header carrying it sums to 0; a changed byte
// does not.
func TestIPv4HeaderChecksum(t *testing.T) {
	h := []byte{0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7}
	if got := IPv4HeaderChecksum(h); got != 0xb861 {
		t.Fatalf("checksum %#04x, want 0xb861", got)
	}
	h[10], h[11] = 0xb8, 0x61
	if got := IPv4HeaderChecksum(h); got != 0 {
		t.Errorf("a header carrying its checksum: %#04x, want 0", got)
	}
	h[8]-- // TTL 63, checksum not updated
	if IPv4HeaderChecksum(h) == 0 {
		t.Error("a changed header still verifies")
	}
	if IPv4HeaderChecksum(nil) != 0xffff {
		t.Error("an empty header: want the checksum of nothing, 0xffff")
	}
}
