package netem

import (
	"encoding/binary"
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// frameInfo is what the switch reads from an Ethernet frame: where the IP
// header is, the Homa priority, addresses and, for Homa frames, the decoded
// packet view (over the frame's own bytes).
type frameInfo struct {
	ipOff    int  // offset of the IP header; -1 when the frame is not IP
	v6       bool // IPv6 rather than IPv4
	prio     uint8
	src, dst netip.Addr
	homa     bool
	pkt      wire.Packet
}

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
	ethHeaderLen  = 14
)

// classify parses frame b. It never panics: short or non-IP frames give
// ipOff -1 (priority 0); IP frames that are not Homa give homa false.
func classify(b []byte) frameInfo {
	fi := frameInfo{ipOff: -1}
	if len(b) < ethHeaderLen {
		return fi
	}
	off, et := 12, binary.BigEndian.Uint16(b[12:])
	if et == etherTypeVLAN {
		if len(b) < 18 {
			return fi
		}
		off, et = 16, binary.BigEndian.Uint16(b[16:])
	}
	ip := off + 2
	var proto uint8
	var l4 []byte
	switch et {
	case etherTypeIPv4:
		if len(b) < ip+20 || b[ip]>>4 != 4 {
			return fi
		}
		ihl := int(b[ip]&0x0f) * 4
		fi.ipOff, fi.prio = ip, b[ip+1]>>5
		fi.src = netip.AddrFrom4([4]byte(b[ip+12 : ip+16]))
		fi.dst = netip.AddrFrom4([4]byte(b[ip+16 : ip+20]))
		proto = b[ip+9]
		if ihl < 20 || len(b) < ip+ihl {
			return fi
		}
		end := min(len(b), ip+int(binary.BigEndian.Uint16(b[ip+2:])))
		if end < ip+ihl {
			end = len(b)
		}
		l4 = b[ip+ihl : end]
	case etherTypeIPv6:
		if len(b) < ip+40 || b[ip]>>4 != 6 {
			return fi
		}
		tc := (b[ip]&0x0f)<<4 | b[ip+1]>>4
		fi.ipOff, fi.v6, fi.prio = ip, true, tc>>5
		fi.src = netip.AddrFrom16([16]byte(b[ip+8 : ip+24]))
		fi.dst = netip.AddrFrom16([16]byte(b[ip+24 : ip+40]))
		proto = b[ip+6]
		end := min(len(b), ip+40+int(binary.BigEndian.Uint16(b[ip+4:])))
		l4 = b[ip+40 : end]
	default:
		return fi
	}
	if proto != wire.IPProtoHoma && proto != wire.IPProtoHoma2024 {
		return fi
	}
	p, err := wire.Decode(l4, wire.DecodeOptions{IPProto: proto, WireLen: len(l4)})
	if err != nil {
		return fi
	}
	fi.homa, fi.pkt = true, p
	return fi
}

// setPriority rewrites the IP precedence of frame b (classified as fi) to
// Homa priority p, keeping the other TOS / traffic-class bits, and fixes the
// IPv4 header checksum. Non-IP frames are left alone.
func setPriority(b []byte, fi *frameInfo, p uint8) {
	ip := fi.ipOff
	if ip < 0 {
		return
	}
	p &= 7
	fi.prio = p
	if fi.v6 {
		// Traffic class spans the low nibble of byte 0 and the high nibble of byte 1.
		b[ip] = b[ip]&0xf0 | p<<1 | b[ip]&0x01
		return
	}
	b[ip+1] = b[ip+1]&0x1f | p<<5
	ihl := int(b[ip]&0x0f) * 4
	if ihl < 20 || ip+ihl > len(b) {
		return // a malformed header keeps its (wrong) checksum
	}
	b[ip+10], b[ip+11] = 0, 0
	binary.BigEndian.PutUint16(b[ip+10:], wire.IPv4HeaderChecksum(b[ip:ip+ihl]))
}
