package simtcp

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// synPacket builds an IPv4 TCP segment with flags and options, its TCP
// checksum right.
func synPacket(t *testing.T, flags header.TCPFlags, opts []byte) []byte {
	t.Helper()
	tcpLen := header.TCPMinimumSize + len(opts)
	b := make([]byte, header.IPv4MinimumSize+tcpLen)
	ip := header.IPv4(b)
	src, dst := tcpip.AddrFrom4([4]byte{198, 18, 0, 1}), tcpip.AddrFrom4([4]byte{198, 18, 0, 2})
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: 6, SrcAddr: src, DstAddr: dst})
	tc := header.TCP(b[header.IPv4MinimumSize:])
	tc.Encode(&header.TCPFields{SrcPort: 40000, DstPort: 4000, SeqNum: 7, DataOffset: uint8(tcpLen), Flags: flags, WindowSize: 29184})
	copy(tc[header.TCPMinimumSize:], opts)
	xsum := header.PseudoHeaderChecksum(6, src, dst, uint16(tcpLen))
	tc.SetChecksum(^checksum.Checksum(tc, xsum))
	return b
}

// validTCP reports whether b's TCP checksum is right.
func validTCP(b []byte) bool {
	ip := header.IPv4(b)
	tc := header.TCP(ip.Payload())
	xsum := header.PseudoHeaderChecksum(6, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tc)))
	return checksum.Checksum(tc, xsum) == 0xffff
}

func TestStripSYNTimestamp(t *testing.T) {
	// MSS, SACK permitted, timestamps (at an odd and an even offset),
	// window scale: netstack's SYN options.
	opts := []byte{2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1, 3, 3, 7}
	syn := synPacket(t, header.TCPFlagSyn, opts)
	if !validTCP(syn) {
		t.Fatal("test SYN has a bad checksum")
	}
	stripSYNTimestamp(syn)
	tc := header.TCP(header.IPv4(syn).Payload())
	if got := header.ParseSynOptions(tc.Options(), false); got.TS || got.MSS != 1460 || !got.SACKPermitted || got.WS != 7 {
		t.Errorf("after strip: options %+v, want MSS 1460, SACK permitted, WS 7 and no timestamps", got)
	}
	if !validTCP(syn) {
		t.Error("after strip: bad TCP checksum")
	}
	odd := synPacket(t, header.TCPFlagSyn, []byte{1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8, 1})
	stripSYNTimestamp(odd)
	if o := header.ParseSynOptions(header.TCP(header.IPv4(odd).Payload()).Options(), false); o.TS || !validTCP(odd) {
		t.Errorf("timestamps at an odd offset: options %+v, checksum ok %v", o, validTCP(odd))
	}
	// A SYN-ACK, a plain ACK and garbage are left alone.
	for _, b := range [][]byte{synPacket(t, header.TCPFlagSyn|header.TCPFlagAck, opts), synPacket(t, header.TCPFlagAck, nil), {0x45, 1, 2}, nil} {
		c := bytes.Clone(b)
		stripSYNTimestamp(c)
		if !bytes.Equal(b, c) {
			t.Errorf("packet % x changed", b[:min(len(b), 20)])
		}
	}
	// Truncated options never panic.
	for n := range len(syn) {
		stripSYNTimestamp(bytes.Clone(synPacket(t, header.TCPFlagSyn, opts)[:n]))
	}
}
