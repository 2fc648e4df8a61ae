package wire

import (
	"encoding/binary"
	"net/netip"
)

// Checksum returns the TCP-style checksum HomaModule main (since 19f5dec,
// 2026-03-25) stores in common.checksum: the RFC 1071 ones'-complement sum
// over an IPv4 or IPv6 pseudo-header whose protocol is TCP (6) and length is
// len(pkt), followed by pkt (Homa header and payload) with its checksum field
// taken as zero. When both addresses are IPv4 (IPv4-mapped IPv6 addresses
// count as IPv4) the IPv4 pseudo-header is used, otherwise the IPv6 one with
// both addresses in 16-byte form; it never panics. Receivers do not verify
// the checksum; it lets segments pass NIC offload as TCP.
func Checksum(src, dst netip.Addr, pkt []byte) uint16 {
	var sum uint32
	if src.Unmap().Is4() && dst.Unmap().Is4() {
		s, d := src.Unmap().As4(), dst.Unmap().As4()
		sum = add16(sum, s[:])
		sum = add16(sum, d[:])
		sum += uint32(IPProtoTCP)
		sum += uint32(len(pkt) & 0xffff)
		sum += uint32(len(pkt) >> 16)
	} else {
		s, d := src.As16(), dst.As16()
		sum = add16(sum, s[:])
		sum = add16(sum, d[:])
		sum += uint32(len(pkt) >> 16)
		sum += uint32(len(pkt) & 0xffff)
		sum += uint32(IPProtoTCP)
	}
	for i := 0; i+1 < len(pkt); i += 2 {
		if i == commonHdr[commonChecksum].Off { // the checksum field itself counts as zero
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(pkt[i:]))
		if sum > 0xffff0000 {
			sum = (sum >> 16) + (sum & 0xffff)
		}
	}
	if len(pkt)%2 == 1 {
		sum += uint32(pkt[len(pkt)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = (sum >> 16) + (sum & 0xffff)
	}
	return ^uint16(sum)
}

func add16(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	return sum
}

// ChecksumValid reports whether pkt's common.checksum equals Checksum(src,
// dst, pkt).
func ChecksumValid(src, dst netip.Addr, pkt []byte) bool {
	return len(pkt) >= CommonHeaderLen && Common(pkt).Checksum() == Checksum(src, dst, pkt)
}

// IPv4HeaderChecksum returns the RFC 791 checksum of IPv4 header h
// (options included): the ones' complement of the RFC 1071 sum of its
// 16-bit words. Over a header whose checksum field is zero it is the value
// to store there; over a header as sent it is 0 when the stored checksum
// verifies, as every header Linux's IP layer writes does (ip_send_check;
// never offloaded). It never panics.
func IPv4HeaderChecksum(h []byte) uint16 {
	sum := add16(0, h)
	for sum>>16 != 0 {
		sum = (sum >> 16) + (sum & 0xffff)
	}
	return ^uint16(sum)
}
