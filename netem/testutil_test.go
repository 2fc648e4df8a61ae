package netem

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/spec/wire"
)

// Test addresses and MACs (198.18.0.0/15 is the benchmarking range).
var (
	addrA = netip.MustParseAddr("198.18.0.1")
	addrB = netip.MustParseAddr("198.18.0.2")
	macA  = [6]byte{0x02, 0, 0, 0, 0, 0x0a}
	macB  = [6]byte{0x02, 0, 0, 0, 0, 0x0b}
)

// ipv4Frame builds Ethernet + IPv4 (protocol proto, TOS prio<<5) around payload.
func ipv4Frame(srcMAC, dstMAC [6]byte, src, dst netip.Addr, prio uint8, proto uint8, payload []byte) []byte {
	b := make([]byte, 14+20, 14+20+len(payload))
	copy(b[0:6], dstMAC[:])
	copy(b[6:12], srcMAC[:])
	binary.BigEndian.PutUint16(b[12:], etherTypeIPv4)
	ip := b[14:]
	ip[0], ip[1] = 0x45, prio<<5
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(payload)))
	ip[6], ip[8], ip[9] = 0x40, 64, proto
	s, d := src.As4(), dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], wire.IPv4HeaderChecksum(ip[:20]))
	return append(b, payload...)
}

// homaFrame encodes f (current wire format) into an IPv4 frame.
func homaFrame(t testing.TB, srcMAC, dstMAC [6]byte, src, dst netip.Addr, prio uint8, f wire.Fields) []byte {
	t.Helper()
	pkt, err := wire.Encode(f, wire.EncodeOptions{FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: src, Dst: dst})
	if err != nil {
		t.Fatal(err)
	}
	return ipv4Frame(srcMAC, dstMAC, src, dst, prio, wire.IPProtoHoma, pkt)
}

// dataFrame is a DATA packet of RPC id (client id; the sender is the
// client when fromClient) at offset with n payload bytes.
func dataFrame(t testing.TB, fromClient bool, id uint64, offset uint32, n int, retransmit bool) []byte {
	sid, sm, dm, s, d, sp, dp := id, macA, macB, addrA, addrB, uint16(40000), uint16(99)
	if !fromClient {
		sid, sm, dm, s, d, sp, dp = id+1, macB, macA, addrB, addrA, dp, sp
	}
	f := &wire.DataFields{Common: wire.CommonFields{Sport: sp, Dport: dp, SenderID: sid, Sequence: offset},
		MessageLength: 100000, Incoming: 10000, SegOffset: offset, Payload: make([]byte, n)}
	if retransmit {
		f.Retransmit = 1
	} else {
		// As HomaModule and the reference implementation send a fresh
		// single-segment packet: the offset in sequence only.
		f.SegOffset = wire.SegOffsetInSequence
	}
	return homaFrame(t, sm, dm, s, d, 3, f)
}

// grantFrame is a GRANT for RPC id sent by the server (fromClient false) or client.
func grantFrame(t testing.TB, fromClient bool, id uint64, offset uint32) []byte {
	sid, sm, dm, s, d, sp, dp := id, macA, macB, addrA, addrB, uint16(40000), uint16(99)
	if !fromClient {
		sid, sm, dm, s, d, sp, dp = id+1, macB, macA, addrB, addrA, dp, sp
	}
	f := &wire.GrantFields{Common: wire.CommonFields{Sport: sp, Dport: dp, SenderID: sid}, Offset: offset, Priority: 2}
	return homaFrame(t, sm, dm, s, d, 7, f)
}

// timeScale is HOMATEST_TIME_SCALE (default 1): it multiplies every
// timeout and timing tolerance in the tests.
func timeScale() float64 { return timescale.Factor() }

// scaled multiplies d by timeScale.
func scaled(d time.Duration) time.Duration { return timescale.D(d) }

// netipDst is the destination of test frames: an address no namespace has.
var netipDst = netip.MustParseAddr("198.18.0.99")
