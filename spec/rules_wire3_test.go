package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestWire013SegmentSize: a one-segment DATA packet holds at most
// max_seg_data bytes: 1424 over IPv4 and 1404 over IPv6 at MTU 1500, 8924
// over IPv4 at MTU 9000.
func TestWire013SegmentSize(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100000, 0, 1424, 4, nil)
	big := b.data(true, 2, 100000, 1424, 1425, 4, nil)
	rep := b.check("linux", "HOMA-WIRE-013")
	wantViolations(t, rep, "HOMA-WIRE-013", big)
	if f := rep.Violations[0]; !strings.Contains(f.Why, "carries 1425 bytes, more than max_seg_data 1424 (mtu 1500 - 20-byte IP header") {
		t.Errorf("why %q", f.Why)
	}
	wantCounts(t, b.check("linux", "HOMA-WIRE-013", "mtu=9000"), "HOMA-WIRE-013", 2, 2, 0, 0)

	b = newTrace(t, wire.VersionCurrent)
	b.client, b.server = netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
	b.data(true, 2, 100000, 0, 1404, 4, nil)
	big = b.data(true, 2, 100000, 1404, 1424, 4, nil)
	wantViolations(t, b.check("linux", "HOMA-WIRE-013"), "HOMA-WIRE-013", big)
}

// TestWire013Hijacked: a hijacked DATA frame of 4 segments is a TSO batch
// before the NIC cut it: legal in a capture on its sender's host,
// inconclusive at a tap between the hosts, and the same frame not
// hijacked is a violation anywhere.
func TestWire013Hijacked(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	f := &wire.DataFields{Common: wire.CommonFields{SenderID: 2, Sequence: 0}, MessageLength: 100000, Incoming: 40000,
		CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 4*1424)}
	tso := b.emit(true, 4, f, func(e *Event) { e.Hijacked = true })
	wantCounts(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-WIRE-013"), "HOMA-WIRE-013", 1, 1, 0, 0)
	wantInconclusive(t, b.check("linux", "HOMA-WIRE-013"), "HOMA-WIRE-013", tso)
	// At the receiver's host the batch would have been cut already.
	wantInconclusive(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-WIRE-013"), "HOMA-WIRE-013", tso)

	b = newTrace(t, wire.VersionCurrent)
	b.emit(true, 4, f, nil)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-WIRE-013"), "HOMA-WIRE-013", 1)
}

// pattern returns n payload bytes for message offset off: byte i of the
// message is i mod 251, so that any shift shows.
func pattern(off uint32, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte((off + uint32(i)) % 251)
	}
	return p
}

// withPayload returns a DATA modifier that puts bytes [off, off+n) of the
// pattern in the payload, with retransmit set when retx.
func withPayload(off uint32, n int, retx bool, corrupt ...int) func(*wire.DataFields) {
	return func(f *wire.DataFields) {
		f.Payload = pattern(off, n)
		for _, i := range corrupt {
			f.Payload[i] ^= 0xFF
		}
		if retx {
			f.Retransmit, f.SegOffset = 1, off
		}
	}
}

// TestWire014Retransmission: a retransmission of the same bytes passes;
// one whose bytes differ from the first transmission (BR-28: taken 20
// bytes too far into the buffer; one flipped byte) is a violation naming
// the first copy's frame. The message's very first packet (seen before
// its RPC existed in the trace) is compared too.
func TestWire014Retransmission(t *testing.T) {
	for _, c := range []struct {
		name    string
		mod     func(*wire.DataFields)
		violate bool
	}{
		{"same", withPayload(0, 1424, true), false},
		{"shifted by 20", func(f *wire.DataFields) { withPayload(0, 1424, true)(f); f.Payload = pattern(20, 1424) }, true},
		{"one byte", withPayload(0, 1424, true, 1000), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			first := b.data(true, 2, 4000, 0, 1424, 6, withPayload(0, 1424, false))
			b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false))
			b.data(true, 2, 4000, 2848, 1152, 6, withPayload(2848, 1152, false))
			b.after(5*time.Millisecond).resend(false, 2, 0, 1424, 7)
			retx := b.after(20*time.Microsecond).data(true, 2, 4000, 0, 1424, 7, c.mod)
			rep := b.check("linux", "HOMA-WIRE-014")
			if !c.violate {
				wantCounts(t, rep, "HOMA-WIRE-014", 1, 1, 0, 0)
				return
			}
			wantViolations(t, rep, "HOMA-WIRE-014", retx)
			if f := rep.Violations[0]; len(f.Frames) != 1 || f.Frames[0] != first || !strings.Contains(f.Why, "retransmit 1") {
				t.Errorf("finding %+v: want the first copy's frame %d", f, first)
			}
		})
	}
}

// TestWire014Duplicates: any byte range seen twice is compared, whatever
// its retransmit flag and boundaries: a copy with retransmit 0 (a packet
// sent again, or duplicated by the network) and a retransmission cut at
// other boundaries, compared over the aligned 128-byte blocks both hold.
// A difference only in a block neither copy covers whole is not seen.
func TestWire014Duplicates(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 4000, 0, 1424, 6, withPayload(0, 1424, false))
	b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false))
	b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false)) // identical copy
	dup := b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false, 3))
	rep := b.check("linux", "HOMA-WIRE-014")
	wantViolations(t, rep, "HOMA-WIRE-014", dup)
	wantCounts(t, rep, "HOMA-WIRE-014", 2, 1, 1, 0)

	// [1000, 2000) overlaps both packets; blocks [1024, 1152) ... [1280,
	// 1408) and [1536, 1664) ... [1792, 1920) lie wholly inside it and in
	// a first copy ([1408, 1536) straddles the first copies' boundary).
	for _, c := range []struct {
		corrupt int // index in the retransmission's payload, -1: none
		violate bool
	}{{-1, false}, {600, true}, {10, false}} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 4000, 0, 1424, 6, withPayload(0, 1424, false))
		b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false))
		var mod func(*wire.DataFields)
		if c.corrupt >= 0 {
			mod = withPayload(1000, 1000, true, c.corrupt)
		} else {
			mod = withPayload(1000, 1000, true)
		}
		retx := b.data(true, 2, 4000, 1000, 1000, 7, mod)
		rep := b.check("linux", "HOMA-WIRE-014")
		if c.violate {
			wantViolations(t, rep, "HOMA-WIRE-014", retx)
			if f := rep.Violations[0]; !strings.Contains(f.Why, "bytes [1536, 1664)") {
				t.Errorf("corrupt %d: why %q, want the block [1536, 1664)", c.corrupt, f.Why)
			}
		} else {
			wantCounts(t, rep, "HOMA-WIRE-014", 1, 1, 0, 0)
		}
	}
}

// TestWire014SnapLength: with a short snap length only the captured
// prefixes are compared (38 bytes here); a later copy with fewer captured
// bytes than the first cannot be compared with it.
func TestWire014SnapLength(t *testing.T) {
	cut := func(n int) func(*Event) {
		return func(e *Event) { e.Payload, e.SnapCut = e.Payload[:n], true }
	}
	send := func(b *traceBuilder, off uint32, shift uint32, retx bool, capLen int) int {
		f := &wire.DataFields{Common: wire.CommonFields{SenderID: 2, Sequence: off}, MessageLength: 4000, Incoming: 4000,
			CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: pattern(off+shift, 1424)}
		if retx {
			f.Retransmit, f.SegOffset = 1, off
		}
		return b.emit(true, 6, f, cut(capLen))
	}
	b := newTrace(t, wire.VersionCurrent)
	send(b, 0, 0, false, 38)
	bad := send(b, 0, 20, true, 38)
	wantViolations(t, b.check("linux", "HOMA-WIRE-014"), "HOMA-WIRE-014", bad)

	b = newTrace(t, wire.VersionCurrent)
	send(b, 0, 0, false, 38)
	send(b, 0, 20, true, 30) // fewer bytes than the first copy: not compared
	wantCounts(t, b.check("linux", "HOMA-WIRE-014"), "HOMA-WIRE-014", 0, 0, 0, 0)
}

// TestWire014Incarnation: after RPC_UNKNOWN the server's RPC is new state
// (a restarted request may be served anew, a response computed again), so
// bytes sent before and after are not compared.
func TestWire014Incarnation(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(false, 2, 1000, 0, 1000, 6, withPayload(0, 1000, false))
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.ctl(true, 2, wire.TypeRPCUnknown)
	b.data(false, 2, 1000, 0, 1000, 6, withPayload(7, 1000, false))
	wantCounts(t, b.check("linux", "HOMA-WIRE-014"), "HOMA-WIRE-014", 0, 0, 0, 0)
}

// TestPrio004IPv6Shift: with ipv6_prio_shift 5 (main since 548056f) a
// traffic class with bit 4 set (a control packet at 0x70 = 7<<4) is a
// violation and 0xE0 passes; with 4 (linux_6.1.38, the linux-2024
// profile's value) bit 7 is; with 0 (the linux profile) and for IPv4 the
// rule does not judge.
func TestPrio004IPv6Shift(t *testing.T) {
	build := func(v6 bool, tos ...uint8) *traceBuilder {
		b := newTrace(t, wire.VersionCurrent)
		if v6 {
			b.client, b.server = netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
		}
		for i, tc := range tos { // distinct RPCs: a copy of a packet could be the network's
			b.emit(false, 7, &wire.BusyFields{Common: wire.CommonFields{SenderID: 3 + 2*uint64(i)}}, func(e *Event) { e.TOS = tc })
		}
		return b
	}
	b := build(true, 0xE0, 0x70, 0x60)
	wantViolations(t, b.check("linux", "HOMA-PRIO-004", "ipv6_prio_shift=5"), "HOMA-PRIO-004", 2)
	wantViolations(t, b.check("linux", "HOMA-PRIO-004", "ipv6_prio_shift=4"), "HOMA-PRIO-004", 1)
	wantCounts(t, b.check("linux", "HOMA-PRIO-004"), "HOMA-PRIO-004", 0, 0, 0, 0)
	wantCounts(t, build(false, 0x70).check("linux", "HOMA-PRIO-004", "ipv6_prio_shift=5"), "HOMA-PRIO-004", 0, 0, 0, 0)
	if p, _ := LookupProfile("linux-2024"); p.Params.IPv6PrioShift != 4 {
		t.Errorf("linux-2024 ipv6_prio_shift %d, want 4", p.Params.IPv6PrioShift)
	}
}

// TestWire014EventSlotReused: a reader hands every event over at one
// address (it reuses its slot); the first packet of an RPC, whose payload
// only Apply logs, must be logged even when the previous event at that
// address was compared by the rule, or a later copy goes unchecked.
func TestWire014EventSlotReused(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 4000, 0, 1424, 6, withPayload(0, 1424, false))
	b.data(true, 2, 4000, 1424, 1424, 6, withPayload(1424, 1424, false)) // compared by the rule
	b.data(true, 4, 4000, 0, 1424, 6, withPayload(0, 1424, false))       // RPC 4's first: Apply logs it
	bad := b.data(true, 4, 4000, 0, 1424, 7, withPayload(0, 1424, true, 5))
	prof, _ := LookupProfile("linux")
	rules, err := Select(Rules(), "HOMA-WIRE-014", 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	c := NewChecker("linux", prof.Params, rules)
	var slot Event
	for i := range b.events {
		slot = b.events[i]
		c.Feed(&slot)
	}
	wantViolations(t, c.Finish(), "HOMA-WIRE-014", bad)
}

// TestWire011OneIDTwoServers: a client sends request 10 to one server and,
// while that RPC is live, a request with the same id to another server: it
// would find either response under id 10 (homa_rpc_find_client). The
// second request is a violation; the same request after the first RPC was
// acknowledged, or under a new id, passes.
func TestWire011OneIDTwoServers(t *testing.T) {
	other := netip.MustParseAddr("198.18.0.3")
	build := func(secondID uint64, ackFirst bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
		if ackFirst {
			b.after(25*time.Millisecond).ctl(false, 10, wire.TypeNeedAck)
			b.after(20 * time.Microsecond).ack(10)
		}
		first := b.server
		b.server = other
		second := b.after(100*time.Microsecond).data(true, secondID, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, secondID, 100, 0, 100, 7, nil)
		b.server = first
		return b, second
	}
	b, second := build(10, false)
	wantViolations(t, b.check("linux", "HOMA-WIRE-011"), "HOMA-WIRE-011", second)
	b, _ = build(10, true)
	wantClean(t, b.check("linux", "HOMA-WIRE-011"), "HOMA-WIRE-011")
	b, _ = build(12, false)
	wantClean(t, b.check("linux", "HOMA-WIRE-011"), "HOMA-WIRE-011")
}

// TestWire015IPHeader: the IP layer writes a nonzero TTL and a valid IPv4
// header checksum, no IPv4 options, and does not fragment (WIRE-07): a
// frame read with TTL 0, hop limit 0, a bad IPv4 header checksum, IPv4
// options, as a fragment or with an IP length past the frame (IPv4 or
// IPv6) is a violation, one read with TTL 64 passes,
// and an
// event built without an IP header (IP.Known unset) is not judged.
func TestWire015IPHeader(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	ip := func(ttl uint8, bad bool) func(*Event) {
		return func(e *Event) { e.IP = IPHeader{Known: true, TTL: ttl, BadChecksum: bad} }
	}
	data := func(cid uint64, mod func(*Event)) int {
		return b.emit(true, 7, &wire.DataFields{Common: wire.CommonFields{SenderID: cid, Sequence: 0}, MessageLength: 100, Incoming: 100,
			CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, mod)
	}
	data(10, nil)
	data(12, ip(64, false))
	ttl0 := data(14, ip(0, false))
	bad := data(16, ip(64, true))
	b.client, b.server = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	hop0 := data(18, ip(0, false))
	data(20, ip(1, true)) // IPv6 has no header checksum
	b.client, b.server = netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	frag := data(22, func(e *Event) { e.IP = IPHeader{Known: true, TTL: 64, Fragment: true} })
	opts := data(24, func(e *Event) { e.IP = IPHeader{Known: true, TTL: 64, Options: true} })         // helper-148's m26
	long := data(26, func(e *Event) { e.IP = IPHeader{Known: true, TTL: 64, LengthPastFrame: true} }) // helper-174's ip-len
	b.client, b.server = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	long6 := data(28, func(e *Event) { e.IP = IPHeader{Known: true, TTL: 64, LengthPastFrame: true} })
	rep := b.check("linux", "HOMA-WIRE-015")
	wantViolations(t, rep, "HOMA-WIRE-015", ttl0, bad, hop0, frag, opts, long, long6)
	wantCounts(t, rep, "HOMA-WIRE-015", 9, 2, 7, 0)
}

// TestWire014Restart: a client told RPC_UNKNOWN by the server restarts
// the same request (homa_rpc_unknown_pkt resends its skbs): its copies
// are compared with the first ones across the RPC_UNKNOWN. Different
// bytes in the restart are a violation; the same bytes pass, and so does
// the server's response, which a new execution may change.
func TestWire014Restart(t *testing.T) {
	build := func(shift uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 3000, 0, 1424, 5, withPayload(0, 1424, false))
		b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		b.after(20*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
		restart := b.after(10*time.Microsecond).data(true, 2, 3000, 0, 1424, 5, func(f *wire.DataFields) { withPayload(0, 1424, true)(f); f.Payload = pattern(shift, 1424) })
		b.data(true, 2, 3000, 1424, 1424, 5, withPayload(1424, 1424, true))
		b.data(true, 2, 3000, 2848, 152, 5, withPayload(2848, 152, true))
		return b, restart
	}
	b, _ := build(0)
	rep := b.check("linux", "HOMA-WIRE-014")
	wantClean(t, rep, "HOMA-WIRE-014")
	wantCounts(t, rep, "HOMA-WIRE-014", 1, 1, 0, 0)
	b, restart := build(7)
	wantViolations(t, b.check("linux", "HOMA-WIRE-014"), "HOMA-WIRE-014", restart)
}

// TestWire015ShortFirstFragment: a Homa packet's first IP fragment may end
// inside its header (the header goes on in the next fragment, which the
// reader does not join): the fragmentation is HOMA-WIRE-015's violation,
// not a truncated header (HOMA-WIRE-001), which the same bytes unfragmented
// still are.
func TestWire015ShortFirstFragment(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	raw := encodeFields(t, &wire.DataFields{Common: wire.CommonFields{SenderID: 10}, MessageLength: 100, Incoming: 100,
		CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, wire.VersionCurrent)[:24]
	frag := b.malformedFrame(true, raw, wire.VersionCurrent)
	b.events[len(b.events)-1].IP = IPHeader{Known: true, TTL: 64, Fragment: true}
	whole := b.malformedFrame(true, raw, wire.VersionCurrent)
	b.events[len(b.events)-1].IP = IPHeader{Known: true, TTL: 64}
	rep := b.check("linux", "HOMA-WIRE-0[01][15]")
	wantViolations(t, rep, "HOMA-WIRE-015", frag)
	wantViolations(t, rep, "HOMA-WIRE-001", whole)
}

// TestWire011AfterServerUnknown: a 60000-byte request; the server loses
// the RPC and answers the client's RESEND with RPC_UNKNOWN; the client
// restarts the request from offset 0 (homa_rpc_unknown_pkt keeps the RPC
// and its ports) and the server's new incarnation GRANTs it. A GRANT to
// another client port is a violation, as before the RPC_UNKNOWN; after
// the client's own RPC_UNKNOWN (it no longer has the RPC) the ports are
// not judged.
func TestWire011AfterServerUnknown(t *testing.T) {
	const id = "HOMA-WIRE-011"
	build := func(unknownFromClient bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 60000, 0, 40000, 40000, 4)
		b.after(5*time.Millisecond).resend(false, 2, 40000, 10000, 7)
		if unknownFromClient {
			b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
		} else {
			b.after(10*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
			b.after(10*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
			b.after(10 * time.Microsecond)
			b.message(true, 2, 60000, 0, 40000, 40000, 4)
		}
		b.cport++
		bad := b.after(20*time.Microsecond).grant(false, 2, 50000, 0)
		b.cport--
		return b, bad
	}
	b, bad := build(false)
	rep := b.check("linux", id)
	wantViolations(t, rep, id, bad)
	b, _ = build(true)
	wantClean(t, b.check("linux", id), id)
}

// TestWire016SegmentGeometry: a 100,000-byte message cut as HomaModule
// cuts it (1424-byte segments, a short one ending at U = 40000, the
// scheduled part from U in 1424-byte segments, a short last one) passes;
// a scheduled part cut into 1000-byte segments (a sender that sized its
// scheduled packets apart from its unscheduled ones) fails at each
// 1000-byte segment that ends neither at U nor at the message's end; so
// does a segment longer than the earlier ones; a retransmission of any
// length and a hijacked TSO batch (which sets no segment size) are not
// judged.
func TestWire016SegmentGeometry(t *testing.T) {
	const msgLen, u = 100000, 40000
	b := newTrace(t, wire.VersionCurrent)
	off := uint32(0)
	for off < u {
		n := min(1424, u-off)
		b.data(true, 2, msgLen, off, int(n), 4, nil)
		off += n
	}
	for off < msgLen {
		n := min(1424, msgLen-off)
		b.data(true, 2, msgLen, off, int(n), 4, nil)
		off += n
	}
	// A RESEND's retransmission of part of a segment is not judged.
	b.resend(false, 2, 5000, 100, 7)
	b.data(true, 2, msgLen, 5000, 100, 7, withPayload(5000, 100, true))
	// Every first transmission but the message's first (72 in all) is
	// judged.
	wantCounts(t, b.check("linux", "HOMA-WIRE-016"), "HOMA-WIRE-016", 71, 71, 0, 0)

	b = newTrace(t, wire.VersionCurrent)
	off = 0
	for off < u {
		n := min(1424, u-off)
		b.data(true, 2, msgLen, off, int(n), 4, nil)
		off += n
	}
	var bad []int
	for off < msgLen {
		n := min(1000, msgLen-off)
		f := b.data(true, 2, msgLen, off, int(n), 4, nil)
		if off+n < msgLen {
			bad = append(bad, f)
		}
		off += n
	}
	rep := b.check("linux", "HOMA-WIRE-016")
	wantViolations(t, rep, "HOMA-WIRE-016", bad...)
	if f := rep.Violations[0]; !strings.Contains(f.Why, "DATA [40000, 41000) carries 1000 bytes, fewer than the 1424 of the message's earlier segments, and ends neither at U (40000)") {
		t.Errorf("why %q", f.Why)
	}
	// Upstream has no cut at U: the same packets break the rule there too.
	wantViolations(t, b.check("upstream", "HOMA-WIRE-016"), "HOMA-WIRE-016", bad...)

	// A sender that stops a segment at its grant horizon (as the
	// conformance testers do) sends nothing it was not granted: the
	// segment ending at the GRANT offset passes, the one after it, cut
	// short elsewhere, does not.
	b = newTrace(t, wire.VersionCurrent)
	for off := uint32(0); off < u; off += 1424 {
		b.data(true, 2, msgLen, off, int(min(1424, u-off)), 4, nil)
	}
	b.grant(false, 2, 41000, 0)
	b.data(true, 2, msgLen, u, 1000, 0, nil)
	short := b.data(true, 2, msgLen, 41000, 500, 0, nil)
	wantViolations(t, b.check("linux", "HOMA-WIRE-016"), "HOMA-WIRE-016", short)

	// Short first, full later: the sizes differ, and the later one is
	// reported. One segment twice the size among full ones (BR-34's
	// oversize frame, legal under --param mtu=2924 for HOMA-WIRE-013) is
	// reported, not the full ones after it.
	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 2, msgLen, 0, 1000, 4, nil)
	later := b.data(true, 2, msgLen, 1000, 1424, 4, nil)
	wantViolations(t, b.check("linux", "HOMA-WIRE-016"), "HOMA-WIRE-016", later)
	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 2, msgLen, 0, 1424, 4, nil)
	big := b.data(true, 2, msgLen, 1424, 2848, 4, nil)
	b.data(true, 2, msgLen, 4272, 1424, 4, nil)
	wantViolations(t, b.check("linux", "HOMA-WIRE-016", "mtu=2924"), "HOMA-WIRE-016", big)
	wantViolations(t, b.check("linux", "HOMA-WIRE-016"), "HOMA-WIRE-016") // past max_seg_data: HOMA-WIRE-013's

	// A hijacked TSO batch of 4 segments, seen on its sending host, sets
	// no segment size: the one-segment packets after it pass.
	b = newTrace(t, wire.VersionCurrent)
	f := &wire.DataFields{Common: wire.CommonFields{SenderID: 2, Sequence: 0}, MessageLength: msgLen, Incoming: u,
		CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 4*1424)}
	b.emit(true, 4, f, func(e *Event) { e.Hijacked = true })
	b.data(true, 2, msgLen, 4*1424, 1424, 4, nil)
	b.data(true, 2, msgLen, 5*1424, 1424, 4, nil)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-WIRE-016"), "HOMA-WIRE-016")
}
