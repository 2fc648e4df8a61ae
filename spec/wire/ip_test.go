package wire

import "testing"

// facts.md §1.1: IPv4 TOS = priority << 5 (IP precedence, ECN 0).
func TestPriorityFromTOS(t *testing.T) {
	for p := uint8(0); p < 8; p++ {
		tos := p << 5
		if got := TOSForPriority(p); got != tos {
			t.Errorf("TOSForPriority(%d): got %#02x, want %#02x", p, got, tos)
		}
		if got := PriorityFromTOS(tos); got != p {
			t.Errorf("PriorityFromTOS(%#02x): got %d, want %d", tos, got, p)
		}
		// ECN and the low DSCP bits do not change the priority.
		for _, low := range []uint8{0x01, 0x02, 0x03, 0x1f} {
			if got := PriorityFromTOS(tos | low); got != p {
				t.Errorf("PriorityFromTOS(%#02x): got %d, want %d", tos|low, got, p)
			}
		}
	}
	// Values seen in the captures: 0xE0 (7), 0xC0 (6), 0x80 (4), 0x20 (1).
	for tos, p := range map[uint8]uint8{0xE0: 7, 0xC0: 6, 0x80: 4, 0x20: 1, 0x00: 0} {
		if got := PriorityFromTOS(tos); got != p {
			t.Errorf("PriorityFromTOS(%#02x): got %d, want %d", tos, got, p)
		}
	}
	// Out-of-range priorities are masked to 3 bits.
	for in, want := range map[uint8]uint8{8: 0x00, 9: 0x20, 15: 0xE0, 0xFF: 0xE0} {
		if got := TOSForPriority(in); got != want {
			t.Errorf("TOSForPriority(%d): got %#02x, want %#02x", in, got, want)
		}
	}
}

// facts.md §1.1: IPv6 traffic class = priority << 5 on main since 548056f,
// << 4 on linux_6.1.38 (and older main); upstream carries no priorities.
func TestIPv6PriorityShift(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		want uint8
	}{
		{VersionAuto, 5}, {VersionCurrent, 5}, {Version2024, 4}, {VersionUpstream, 5},
	} {
		if got := IPv6PriorityShift(tc.v); got != tc.want {
			t.Errorf("IPv6PriorityShift(%v): got %d, want %d", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		tc    uint8
		shift uint8
		want  uint8
	}{
		{0x70, 4, 7}, // 6.1 f1-ipv6.pcap control packets
		{0x60, 4, 6},
		{0x40, 4, 4},
		{0x00, 4, 0},
		{0xE0, 5, 7}, // main after 548056f
		{0xC0, 5, 6},
		{0x20, 5, 1},
		{0x70, 5, 3}, // a <<4 value read with the <<5 rule is wrong by design
		{0xE0, 4, 6}, // and vice versa: bits above the 3-bit field are masked
		{0xFF, 4, 7},
		{0xFF, 5, 7},
	} {
		if got := PriorityFromTrafficClass(tc.tc, tc.shift); got != tc.want {
			t.Errorf("PriorityFromTrafficClass(%#02x, %d): got %d, want %d", tc.tc, tc.shift, got, tc.want)
		}
	}
	for p := uint8(0); p < 8; p++ {
		for _, v := range []Version{VersionCurrent, Version2024} {
			s := IPv6PriorityShift(v)
			if got := PriorityFromTrafficClass(p<<s, s); got != p {
				t.Errorf("%v: PriorityFromTrafficClass(%d<<%d): got %d", v, p, s, got)
			}
		}
	}
}

// facts.md §1.8: a TCP segment is Homa iff flags == 0x06 exactly and urgent
// == 0xB97D.
func TestIsHijacked(t *testing.T) {
	// linux-6.13-proto146/f4-hijack-tcp.pcap frame 17, first 64 of 1480
	// bytes: hijacked GSO-split DATA, IP protocol 6.
	real := hexBytes(t, realHijackedDataHex)
	if !IsHijacked(real) {
		t.Errorf("real hijacked frame: got false, want true")
	}
	if !IsHijacked(real[:20]) {
		t.Errorf("first 20 bytes of hijacked frame: got false, want true")
	}
	if IsHijacked(real[:19]) {
		t.Errorf("19 bytes: got true, want false")
	}
	if IsHijacked(nil) {
		t.Errorf("nil: got true, want false")
	}
	for _, tc := range []struct {
		name   string
		flags  uint8
		urgent uint16
		want   bool
	}{
		{"marks", 0x06, 0xB97D, true},
		{"SYN+RST+ACK", 0x16, 0xB97D, false},
		{"SYN+RST+URG", 0x26, 0xB97D, false},
		{"SYN only", 0x02, 0xB97D, false},
		{"urgent 0", 0x06, 0x0000, false},
		{"urgent swapped", 0x06, 0x7DB9, false},
		{"plain TCP", 0x18, 0x0000, false},
	} {
		b := append([]byte(nil), real[:20]...)
		b[13] = tc.flags
		b[18], b[19] = byte(tc.urgent>>8), byte(tc.urgent)
		if got := IsHijacked(b); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
