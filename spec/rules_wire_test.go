package spec

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

func TestWire002DataRange(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 1000, 0, 1000, 7, nil)
	bad := b.data(true, 4, 1000, 900, 200, 7, nil) // runs past the end
	zero := b.data(true, 6, 0, 0, 10, 7, nil)      // message_length 0
	rep := b.check("linux", "HOMA-WIRE-002")
	wantViolations(t, rep, "HOMA-WIRE-002", bad, zero)
}

func TestWire003SameLength(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 3000, 0, 1424, 7, nil)
	bad := b.data(true, 2, 3001, 1424, 1424, 7, nil)
	rep := b.check("linux", "HOMA-WIRE-003")
	wantViolations(t, rep, "HOMA-WIRE-003", bad)
}

// malformedFrame appends an event for raw bytes that fail to decode in version
// v (as the pcap reader reports a frame that is Homa but malformed),
// sent by the client or the server. It returns the frame number.
func (b *traceBuilder) malformedFrame(fromClient bool, raw []byte, v wire.Version) int {
	b.t.Helper()
	_, err := wire.Decode(raw, wire.DecodeOptions{Version: v})
	var de *wire.DecodeError
	if !errors.As(err, &de) {
		b.t.Fatalf("decoding %x: got %v, want a *wire.DecodeError", raw, err)
	}
	src, dst := b.server, b.client
	if fromClient {
		src, dst = b.client, b.server
	}
	b.frame++
	b.events = append(b.events, Event{Frame: b.frame, Time: b.now, Src: src, Dst: dst, Priority: 7, Err: err})
	return b.frame
}

// encodeFields returns f encoded as HomaModule main sends it.
func encodeFields(t *testing.T, f wire.Fields, v wire.Version) []byte {
	t.Helper()
	raw, err := wire.Encode(f, wire.EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// modCommon sends f like emit and then edits the encoded common header
// (to forge bytes the encoder would set right).
func (b *traceBuilder) modCommon(fromClient bool, prio uint8, f wire.Fields, mod func(c wire.Common)) int {
	return b.emit(fromClient, prio, f, func(e *Event) { mod(e.Packet.Common()) })
}

// retxData sends DATA [off, off+n) of RPC cid again as HomaModule's
// homa_resend_data does: retransmit=1, the true offset in seg.offset and
// sequence, incoming = end of the range, at the RESEND's priority.
func (b *traceBuilder) retxData(fromClient bool, cid uint64, msgLen, off uint32, n int, prio uint8) int {
	return b.data(fromClient, cid, msgLen, off, n, prio, func(f *wire.DataFields) {
		f.Retransmit, f.SegOffset, f.Incoming = 1, off, off+uint32(n)
	})
}

// lossyRequest plays a 100000-byte request on main whose unscheduled
// packet [2848, 4272) is lost: GRANT, the rest, a RESEND after 5 ticks and
// the retransmission. It returns the retransmission's frame.
func (b *traceBuilder) lossyRequest(cid uint64) int {
	b.message(true, cid, 100000, 0, 2848, 40000, 4)
	b.message(true, cid, 100000, 4272, 40000, 40000, 4)
	b.grant(false, cid, 100000, 0)
	b.message(true, cid, 100000, 40000, 100000, 40000, 0)
	b.after(5 * time.Millisecond)
	b.resend(false, cid, 2848, 1424, 7)
	return b.retxData(true, cid, 100000, 2848, 1424, 7)
}

// TestWire001Malformed: frames that are Homa but do not decode violate
// HOMA-WIRE-001 at their own frame, with the decode error as the reason.
func TestWire001Malformed(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.lossyRequest(2)
		b.message(false, 2, 200, 0, 200, 40000, 7)
		b.ctl(false, 2, wire.TypeNeedAck)
		b.ack(2)
		wantClean(t, b.check("linux", "HOMA-WIRE-001"), "HOMA-WIRE-001")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 100000, 40000, 200000, 4, 0)
		grant := encodeFields(t, &wire.GrantFields{Common: wire.CommonFields{SenderID: 3}, Offset: 100000}, wire.VersionCurrent)
		short := b.malformedFrame(false, grant[:32], wire.VersionCurrent) // priority byte missing
		bogus := encodeFields(t, &wire.BusyFields{Common: wire.CommonFields{SenderID: 3, Type: 0x19}}, wire.VersionCurrent)
		unknown := b.malformedFrame(false, bogus, wire.VersionCurrent) // BOGUS (0x19) is never on the wire
		ack := encodeFields(t, &wire.AckFields{Common: wire.CommonFields{SenderID: 2}}, wire.VersionCurrent)
		shortAck := b.malformedFrame(true, ack[:60], wire.VersionCurrent)
		rep := b.check("linux", "HOMA-WIRE-001")
		wantViolations(t, rep, "HOMA-WIRE-001", short, unknown, shortAck)
		for i, want := range []string{"truncated GRANT header: field priority needs 33 bytes, have 32",
			"unknown packet type 0x19", "truncated ACK header"} {
			if !strings.Contains(rep.Violations[i].Why, want) {
				t.Errorf("violation %d: reason %q, want %q", i, rep.Violations[i].Why, want)
			}
		}

		// upstream has no GRANT: a 33-byte GRANT in an upstream capture
		// is an unknown type there.
		b = newTrace(t, wire.VersionUpstream)
		b.message(true, 2, 100000, 0, 100000, 100000, 0)
		up := b.malformedFrame(false, grant, wire.VersionUpstream)
		rep = b.check("upstream", "HOMA-WIRE-001")
		wantViolations(t, rep, "HOMA-WIRE-001", up)
	})
}

// TestWire002Clean: realistic messages, including a 128-byte packet at U
// and a short last packet, keep their bytes inside the message.
func TestWire002Clean(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.lossyRequest(2)
	b.message(false, 2, 1000000, 0, 40000, 40000, 4)
	b.message(true, 4, 1, 0, 1, 40000, 7) // one-byte message
	wantClean(t, b.check("linux", "HOMA-WIRE-002"), "HOMA-WIRE-002")
}

// TestWire002Overflow reproduces BR-39 (@e62cd04, @16cd37a, @932c37a):
// injected DATA whose offset + length overflows, or whose message_length
// is negative as a signed int, above the 1 MB limit or 0.
func TestWire002Overflow(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.xferRequest(2, 100000, 40000, 200000, 4, 0)
	far := b.data(true, 4, 100000, 0x7FFFFF00, 0x200, 4, nil)  // past the message
	wrap := b.data(true, 6, 100000, 0xFFFFFF80, 0x100, 4, nil) // offset+len wraps to 0x80 in 32 bits
	neg := b.data(true, 8, 0x80000000, 0, 1424, 4, nil)        // message_length < 0 as int32
	big := b.data(true, 10, 2000000, 0, 1424, 4, nil)          // above HOMA_MAX_MESSAGE_LENGTH
	empty := b.data(true, 12, 0, 0, 0, 4, nil)                 // message_length 0, no data
	noData := b.data(true, 14, 1000, 0, 0, 4, nil)             // header only
	rep := b.check("linux", "HOMA-WIRE-002")
	wantViolations(t, rep, "HOMA-WIRE-002", far, wrap, neg, big, empty, noData)
	if why := rep.Violations[1].Why; !strings.Contains(why, "bytes [4294967168, 4294967424) run past message_length 100000") {
		t.Errorf("wrapped range reported as %q", why)
	}
}

// TestWire003Clean: every DATA of a message, retransmissions included,
// repeats message_length.
func TestWire003Clean(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.lossyRequest(2)
	b.message(false, 2, 3000, 0, 3000, 40000, 6)
	wantClean(t, b.check("linux", "HOMA-WIRE-003"), "HOMA-WIRE-003")
}

// TestWire003ResponseLength: the response of an RPC is a separate message
// with its own length; changing it mid-response is a violation.
func TestWire003ResponseLength(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100, 0, 100, 40000, 7)
	b.data(false, 2, 3000, 0, 1424, 6, nil)
	bad := b.data(false, 2, 2848, 1424, 1424, 6, nil)
	rep := b.check("linux", "HOMA-WIRE-003")
	wantViolations(t, rep, "HOMA-WIRE-003", bad)
}

// TestWire004Marks: flags 0x06 and urgent 0xB97D on every packet, DATA and
// control, on main and linux_6.1.38.
func TestWire004Marks(t *testing.T) {
	for _, tc := range []struct {
		profile string
		v       wire.Version
	}{{"linux", wire.VersionCurrent}, {"linux-2024", wire.Version2024}} {
		t.Run(tc.profile, func(t *testing.T) {
			b := newTrace(t, tc.v)
			b.cutoffs(false, 2, 1)
			b.xferRequest(2, 30000, 10000, 10000, 4, 0)
			b.message(false, 2, 200, 0, 200, 10000, 7)
			b.ctl(false, 2, wire.TypeNeedAck)
			b.ack(2)
			rep := b.check(tc.profile, "HOMA-WIRE-004")
			wantClean(t, rep, "HOMA-WIRE-004")

			noFlags := b.modCommon(true, 4, &wire.DataFields{Common: wire.CommonFields{SenderID: 4}, MessageLength: 100,
				Incoming: 100, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, func(c wire.Common) { c.SetFlags(0) })
			noUrgent := b.modCommon(false, 7, &wire.GrantFields{Common: wire.CommonFields{SenderID: 3}, Offset: 30000},
				func(c wire.Common) { c.SetUrgent(0) })
			urg := b.modCommon(true, 7, &wire.AckFields{Common: wire.CommonFields{SenderID: 2}},
				func(c wire.Common) { c.SetFlags(0x26) }) // URG set as well: real TCP would read the urgent pointer
			rep = b.check(tc.profile, "HOMA-WIRE-004")
			wantViolations(t, rep, "HOMA-WIRE-004", noFlags, noUrgent, urg)
		})
	}
}

// TestWire005ControlDoff reproduces BR-37 (@a1d713c): with TCP hijacking,
// ACK (answering NEED_ACK), RPC_UNKNOWN and FREEZE were built without doff,
// so they left with doff 0 and the receiving TCP stack dropped them; the
// NEED_ACK then repeats.
func TestWire005ControlDoff(t *testing.T) {
	hijacked := func(doff uint8) func(e *Event) {
		return func(e *Event) {
			e.Hijacked = true
			e.Packet.Common().SetDoff(doff)
		}
	}
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.cutoffs(false, 2, 1)
		b.lossyRequest(2)
		b.message(false, 2, 200, 0, 200, 40000, 7)
		b.ctl(false, 2, wire.TypeNeedAck)
		b.ack(2)
		b.resend(true, 4, 0, wire.ResendAll, 7)
		b.ctl(false, 4, wire.TypeRPCUnknown)
		b.ctl(false, 6, wire.TypeBusy)
		b.emit(true, 7, &wire.FreezeFields{}, hijacked(0x50))
		wantClean(t, b.check("linux", "HOMA-WIRE-005"), "HOMA-WIRE-005")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.emit(true, 7, &wire.DataFields{Common: wire.CommonFields{SenderID: 2}, MessageLength: 100, Incoming: 100,
			SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}, hijacked(0xE0))
		b.emit(false, 7, &wire.DataFields{Common: wire.CommonFields{SenderID: 3}, MessageLength: 200, Incoming: 200,
			SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 200)}, hijacked(0xE0))
		b.after(2 * time.Millisecond)
		b.emit(false, 7, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 3}}, hijacked(0x50))
		ack1 := b.emit(true, 7, &wire.AckFields{Common: wire.CommonFields{SenderID: 2}}, hijacked(0))
		b.after(time.Millisecond)
		b.emit(false, 7, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 3}}, hijacked(0x50)) // ACK was dropped
		ack2 := b.emit(true, 7, &wire.AckFields{Common: wire.CommonFields{SenderID: 2}}, hijacked(0))
		// An injected RESEND for an RPC the server never saw.
		b.emit(true, 7, &wire.ResendFields{Common: wire.CommonFields{SenderID: 10}, Length: wire.ResendAll, Priority: 7}, hijacked(0x50))
		unknown := b.emit(false, 7, &wire.RPCUnknownFields{Common: wire.CommonFields{SenderID: 11}}, hijacked(0))
		freeze := b.emit(true, 7, &wire.FreezeFields{}, hijacked(0))
		rep := b.check("linux", "HOMA-WIRE-005")
		wantViolations(t, rep, "HOMA-WIRE-005", ack1, ack2, unknown, freeze)
		if why := rep.Violations[0].Why; why != "ACK doff byte 0x00, want 0x50" {
			t.Errorf("reason %q", why)
		}
	})
}

// TestWire006RetransmitOffset: retransmitted DATA carries its offset in
// seg.offset; first transmissions may use the 0xFFFFFFFF sentinel.
func TestWire006RetransmitOffset(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.lossyRequest(2)
		wantClean(t, b.check("linux", "HOMA-WIRE-006"), "HOMA-WIRE-006")

		b = newTrace(t, wire.Version2024)
		b.message(true, 2, 5000, 0, 1424, 10000, 5)
		b.message(true, 2, 5000, 2848, 5000, 10000, 5)
		b.after(5 * time.Millisecond)
		b.resend(false, 2, 1424, 1424, 7)
		b.retxData(true, 2, 5000, 1424, 1424, 7)
		wantClean(t, b.check("linux-2024", "HOMA-WIRE-006"), "HOMA-WIRE-006")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 5000, 0, 1424, 40000, 5)
		b.message(true, 2, 5000, 2848, 5000, 40000, 5)
		b.after(5 * time.Millisecond)
		b.resend(false, 2, 1424, 1424, 7)
		bad := b.data(true, 2, 5000, 1424, 1424, 7, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 2848 })
		rep := b.check("linux", "HOMA-WIRE-006")
		wantViolations(t, rep, "HOMA-WIRE-006", bad)
	})
}

// TestWire007Incoming: first transmissions carry incoming = U.
func TestWire007Incoming(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.lossyRequest(2)                            // the retransmission carries incoming 4272: not judged
		b.message(false, 2, 1000, 0, 1000, 40000, 6) // U = length
		wantClean(t, b.check("linux", "HOMA-WIRE-007"), "HOMA-WIRE-007")

		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		wantClean(t, b.check("linux-2024", "HOMA-WIRE-007"), "HOMA-WIRE-007")
	})
	t.Run("violation", func(t *testing.T) {
		// BR-14 (@ca8782f): the rounded-up allowance 17088 is announced
		// in every unscheduled packet instead of U = 10000.
		b := newTrace(t, wire.Version2024)
		frames := br14(b)
		rep := b.check("linux-2024", "HOMA-WIRE-007")
		wantViolations(t, rep, "HOMA-WIRE-007", frames...)

		// Following the stale homa_wire.h comment (facts §7.10): incoming
		// grows with the grants.
		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		b.grant(false, 2, 240000, 0)
		var bad []int
		for off := uint32(40000); off < 44272; off += 1424 {
			bad = append(bad, b.data(true, 2, 500000, off, 1424, 0, func(f *wire.DataFields) { f.Incoming = 240000 }))
		}
		rep = b.check("linux", "HOMA-WIRE-007")
		wantViolations(t, rep, "HOMA-WIRE-007", bad...)
	})
}

// TestWire008NumAcks reproduces BR-40 (@aceb30b): injected ACKs whose
// num_acks exceeds the 5 slots of the packet.
func TestWire008NumAcks(t *testing.T) {
	numAcks := func(n uint16) func(e *Event) {
		return func(e *Event) { binary.BigEndian.PutUint16(e.Packet.Bytes()[28:30], n) }
	}
	ackOf := func(ids ...uint64) *wire.AckFields {
		f := &wire.AckFields{Common: wire.CommonFields{SenderID: 2}}
		for _, id := range ids {
			f.Acks = append(f.Acks, wire.AckEntry{ClientID: id, ServerPort: 4000})
		}
		return f
	}
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		for cid := uint64(2); cid <= 12; cid += 2 {
			b.rpcRoundTrip(cid, 100, 100)
		}
		b.ack(12, 2, 4, 6, 8, 10) // a sixth completed RPC: five acks plus the header
		b.ctl(false, 14, wire.TypeNeedAck)
		b.ack(14) // num_acks 0
		wantClean(t, b.check("linux", "HOMA-WIRE-008"), "HOMA-WIRE-008")
	})
	t.Run("violation", func(t *testing.T) {
		for _, tc := range []struct {
			profile string
			v       wire.Version
		}{{"linux", wire.VersionCurrent}, {"linux-2024", wire.Version2024}, {"upstream", wire.VersionUpstream}} {
			b := newTrace(t, tc.v)
			b.rpcRoundTrip(2, 100, 100)
			b.emit(true, 7, ackOf(2, 4, 6, 8, 10), numAcks(5))
			six := b.emit(true, 7, ackOf(2, 4, 6, 8, 10), numAcks(6))
			huge := b.emit(true, 7, ackOf(2), numAcks(65535))
			rep := b.check(tc.profile, "HOMA-WIRE-008")
			wantViolations(t, rep, "HOMA-WIRE-008", six, huge)
			if why := rep.Violations[0].Why; why != "num_acks is 6, above the limit 5" {
				t.Errorf("%s: reason %q", tc.profile, why)
			}
		}
	})
}

// TestWire001SnapCut: a header cut by the capture's snap length (the IP
// header says more was sent) is inconclusive, not a violation.
func TestWire001SnapCut(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	f := b.ack(2, 2)
	e := &b.events[f-1]
	_, err := wire.Decode(e.Packet.Bytes()[:74], wire.DecodeOptions{Version: wire.VersionCurrent})
	e.Err, e.SnapCut, e.Packet = err, true, wire.Packet{}
	rep := b.check("linux", "HOMA-WIRE-001")
	wantViolations(t, rep, "HOMA-WIRE-001")
	wantInconclusive(t, rep, "HOMA-WIRE-001", f)
}

// TestWire010GSOSequenceOnSegmentBoundary: a GSO segment's sequence is its
// batch's first offset, so a full (max_seg_data) segment lies a whole
// number of segments after it: 1424 bytes passes, 1 byte (a sequence
// that is no segment's offset) fails; a short segment (the batch's last,
// cut at the unscheduled bytes) is not judged by it.
func TestWire010GSOSequenceOnSegmentBoundary(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	seg := func(off uint32, n int, seq uint32) int { return b.gsoSegment(off, n, seq) }
	seg(0, 1424, 0)
	seg(1424, 1424, 0)
	seg(2848, 152, 1424) // short: not judged
	bad := seg(4272, 1424, 4271)
	wantViolations(t, b.check("linux", "HOMA-WIRE-010"), "HOMA-WIRE-010", bad)
}

// TestWire010TSOSequence: a NIC doing TSO on a GSO batch (HomaModule
// without TCP hijacking on a Mellanox NIC) treats the Homa header as TCP's
// and advances the sequence by gso_size, max_seg_data plus the 4-byte seg
// header, per segment: segment k of a batch starting at B carries sequence
// B + k·1428 over IPv4 at MTU 1500 (homa_wire.h: sequence is right only
// in the first segment). The receiver reads seg.offset alone, so those
// pass; a sequence that is neither the batch's first offset nor a TSO
// advance from it (not 4 bytes per segment, or, for a full segment, a
// batch that would start before offset 0) still fails.
func TestWire010TSOSequence(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	seg := func(off uint32, n int, seq uint32) int { return b.gsoSegment(off, n, seq) }
	for k := range uint32(6) {
		seg(8544+k*1424, 1424, 8544+k*1428) // TSO: sequence advanced by gso_size
	}
	seg(17088, 1424, 17088)
	seg(18512, 152, 18516) // short (the batch's last): one TSO advance
	bad := []int{
		seg(25632, 1424, 25634),   // 2 bytes past: no TSO advance
		seg(1424, 1424, 1424+4*2), // two advances: the batch would start at -1424
		seg(40000, 100, 40006),    // a short segment 6 bytes past: no TSO advance
	}
	wantViolations(t, b.check("linux", "HOMA-WIRE-010"), "HOMA-WIRE-010", bad...)
}

// TestWire010SegmentBeyondSkb: a GSO batch is one skb, which holds at most
// max_gso_size bytes (6 segments of 1424 bytes with the profile's 10000
// over IPv4), so no segment lies 6 segments or more past its batch's first
// offset, whether its sequence is that offset (software GSO) or a TSO
// advance of 4 bytes per segment; the 6th segment (index 5) passes.
func TestWire010SegmentBeyondSkb(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	seg := func(off uint32, n int, seq uint32) int { return b.gsoSegment(off, n, seq) }
	const start = 42720                   // 30 segments of 1424 bytes
	seg(start+5*1424, 1424, start+5*1428) // TSO segment 5: the skb's last
	seg(start+5*1424, 1424, start)        // software GSO segment 5
	seg(90000+5*1424, 7, 90000)           // a short 6th segment
	var bad []int
	for k := uint32(10); k < 30; k++ {
		bad = append(bad, seg(start+k*1424, 1424, start+k*1428)) // TSO segments 10-29 of one batch
	}
	bad = append(bad,
		seg(start+6*1424, 1424, start+6*1428), // TSO segment 6
		seg(start+6*1424, 1424, start),        // software GSO segment 6
	)
	wantViolations(t, b.check("linux", "HOMA-WIRE-010"), "HOMA-WIRE-010", bad...)
}

// gsoSegment sends the client's GSO segment (doff 0xD0) [off, off+n) of a
// 100000-byte request of RPC 2 with sequence seq, and returns its frame.
func (b *traceBuilder) gsoSegment(off uint32, n int, seq uint32) int {
	i := b.data(true, 2, 100000, off, n, 4, func(f *wire.DataFields) { f.SegOffset, f.Common.Sequence = off, seq })
	wire.Common(b.events[i-1].Packet.Bytes()).SetDoff(wire.DoffGSO) // the encoder writes 0xE0
	return i
}
