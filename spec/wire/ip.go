package wire

// PriorityFromTOS returns the Homa priority level 0..7 carried in an IPv4 TOS
// byte: the IP precedence bits (TOS >> 5). HomaModule writes
// priority_map[p] << 5 (homa_outgoing.c).
func PriorityFromTOS(tos uint8) uint8 { return tos >> 5 }

// TOSForPriority returns the IPv4 TOS byte HomaModule uses for priority p
// (identity priority_map): p << 5, ECN bits 0.
func TOSForPriority(p uint8) uint8 { return (p & 7) << 5 }

// IPv6PriorityShift returns the left shift HomaModule applies to the priority
// in the IPv6 traffic class for version v: 4 on the 2024 branch and on main
// before 548056f (2025-11-18, also linux_6.13.9 and all of Version2025), 5
// afterwards (the IP precedence bits, as in IPv4). VersionAuto and
// VersionCurrent give 5.
func IPv6PriorityShift(v Version) uint8 {
	if v == Version2024 || v == Version2025 {
		return 4
	}
	return 5
}

// PriorityFromTrafficClass returns the priority carried in an IPv6 traffic
// class written with the given shift (4 or 5): (tc >> shift) & 7.
func PriorityFromTrafficClass(tc uint8, shift uint8) uint8 { return (tc >> shift) & 7 }

// IsHijacked reports whether a TCP segment (starting at the TCP header) is a
// TCP-hijacked Homa packet: flags byte (offset 13) exactly 0x06 and urgent
// pointer (offset 18) 0xB97D (HomaModule homa_hijack.h). It never panics.
func IsHijacked(tcp []byte) bool {
	c := Common(tcp) // a field past the end reads 0, which is not a mark
	return c.Flags() == HijackFlags && c.Urgent() == HijackUrgent
}
