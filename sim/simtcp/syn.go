package simtcp

import "encoding/binary"

// stripSYNTimestamp removes the timestamp option from an outgoing SYN
// (IPv4 or IPv6 packet b, changed in place; anything else is left alone):
// its 10 bytes become NOPs and the TCP checksum is recomputed. netstack has
// no switch for timestamps, and with them it takes every RTT sample from
// the timestamp echo, whose unit is 1 ms: at datacenter round trips (µs)
// its SRTT is 0 or 1 ms, so HyStart leaves slow start after its first
// round and CUBIC's Reno-friendly growth runs per millisecond (a 512 KB
// message took 186 µs at 100 Gbit/s instead of 56). Linux measures RTT in
// µs whether or not timestamps are on. A SYN without the option makes
// both ends go without timestamps (RFC 7323), and netstack then times a
// round trip from a segment's send to its ACK on the simulator's clock.
func stripSYNTimestamp(b []byte) {
	var tcp, pseudo []byte
	switch {
	case len(b) >= 20 && b[0]>>4 == 4 && b[9] == 6:
		hl := int(b[0]&0x0f) * 4
		if hl < 20 || hl > len(b) {
			return
		}
		tcp, pseudo = b[hl:], b[12:20]
	case len(b) >= 40 && b[0]>>4 == 6 && b[6] == 6:
		tcp, pseudo = b[40:], b[8:40]
	default:
		return
	}
	if len(tcp) < 20 || tcp[13]&0x12 != 0x02 { // a SYN without ACK
		return
	}
	hl := int(tcp[12]>>4) * 4
	if hl < 20 || hl > len(tcp) {
		return
	}
	opts := tcp[20:hl]
	for i := 0; i < len(opts); {
		switch kind := opts[i]; {
		case kind == 0:
			return
		case kind == 1:
			i++
		case i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts):
			return
		case kind == 8 && opts[i+1] == 10:
			for j := i; j < i+10; j++ {
				opts[j] = 1
			}
			tcpChecksum(tcp, pseudo)
			return
		default:
			i += int(opts[i+1])
		}
	}
}

// tcpChecksum writes the checksum of TCP segment tcp whose IP addresses
// are pseudo (source then destination).
func tcpChecksum(tcp, pseudo []byte) {
	tcp[16], tcp[17] = 0, 0
	sum := uint32(6) + uint32(len(tcp))
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(pseudo)
	add(tcp)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(tcp[16:], ^uint16(sum))
}
