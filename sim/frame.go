package sim

import (
	"encoding/binary"
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// Ethernet and IP framing of the packets a simulated host sends: the
// switch core forwards Ethernet frames, and captures hold them.
const (
	ethLen  = 14
	ipv4Len = 20
	ipv6Len = 40
)

// hostMAC is the locally administered MAC of the host on switch port i.
func hostMAC(i int) [6]byte {
	return [6]byte{0x02, 0x00, 0x00, 0x00, byte(i >> 8), byte(i)}
}

// headerLen returns the Ethernet and IP header bytes of a frame from src.
func headerLen(src netip.Addr) int {
	if src.Is6() && !src.Is4In6() {
		return ethLen + ipv6Len
	}
	return ethLen + ipv4Len
}

// buildFrame wraps Homa packet pkt in a new Ethernet frame (see
// putHeaders).
func buildFrame(sm, dm [6]byte, src, dst netip.Addr, prio uint8, pkt []byte) []byte {
	n := headerLen(src)
	b := make([]byte, n+len(pkt))
	copy(b[n:], pkt)
	putHeaders(b, sm, dm, src, dst, prio)
	return b
}

// putHeaders writes the Ethernet and IP headers of frame b, whose Homa
// packet from src to dst at priority prio follows them (headerLen(src)
// bytes in): Ethernet from MAC sm to MAC dm, then IPv4 (DF, TTL 64, header
// checksum) with priority<<5 in the TOS, or IPv6 with priority<<5 in the
// traffic class (HomaModule's current shift), IP protocol 146.
func putHeaders(b []byte, sm, dm [6]byte, src, dst netip.Addr, prio uint8) {
	v6 := src.Is6() && !src.Is4In6()
	plen := len(b) - headerLen(src)
	copy(b[0:6], dm[:])
	copy(b[6:12], sm[:])
	ip := b[ethLen:]
	if v6 {
		binary.BigEndian.PutUint16(b[12:], 0x86DD)
		tc := uint32(prio&7) << wire.IPv6PriorityShift(wire.VersionCurrent)
		binary.BigEndian.PutUint32(ip, 6<<28|tc<<20)
		binary.BigEndian.PutUint16(ip[4:], uint16(plen))
		ip[6], ip[7] = wire.IPProtoHoma, 64
		s, d := src.As16(), dst.As16()
		copy(ip[8:24], s[:])
		copy(ip[24:40], d[:])
		return
	}
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	clear(ip[:ipv4Len])
	ip[0], ip[1] = 0x45, wire.TOSForPriority(prio)
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4Len+plen))
	ip[6] = 0x40 // DF
	ip[8], ip[9] = 64, wire.IPProtoHoma
	s, d := src.Unmap().As4(), dst.Unmap().As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4HeaderChecksum(ip[:ipv4Len]))
}

// unframe reads the addresses, Homa priority and transport bytes of an
// Ethernet frame buildFrame wrote (after the switch, which may have
// rewritten the priority or corrupted bits); ok is false for any other
// frame. It never panics.
func unframe(b []byte) (src, dst netip.Addr, prio uint8, pkt []byte, ok bool) {
	if len(b) < ethLen+ipv4Len {
		return
	}
	ip := b[ethLen:]
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x0800:
		hl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:]))
		if ip[0]>>4 != 4 || hl < ipv4Len || total < hl || total > len(ip) || ip[9] != wire.IPProtoHoma {
			return
		}
		return netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])), ip[1] >> 5, ip[hl:total], true
	case 0x86DD:
		if len(ip) < ipv6Len || ip[0]>>4 != 6 || ip[6] != wire.IPProtoHoma {
			return
		}
		n := int(binary.BigEndian.Uint16(ip[4:]))
		if ipv6Len+n > len(ip) {
			return
		}
		tc := uint8(binary.BigEndian.Uint32(ip) >> 20)
		return netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40])),
			tc >> wire.IPv6PriorityShift(wire.VersionCurrent) & 7, ip[ipv6Len : ipv6Len+n], true
	}
	return
}

// ipDst returns the destination address of IP packet b (IPv4 or IPv6, of
// any protocol); ok is false when b is not one. It never panics.
func ipDst(b []byte) (dst netip.Addr, ok bool) {
	switch {
	case len(b) >= ipv4Len && b[0]>>4 == 4:
		return netip.AddrFrom4([4]byte(b[16:20])), true
	case len(b) >= ipv6Len && b[0]>>4 == 6:
		return netip.AddrFrom16([16]byte(b[24:40])), true
	}
	return netip.Addr{}, false
}
