package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestResend020RetransmissionIncoming: a 100000-byte request whose
// second packet is lost; the server RESENDs [1424, 2848). The
// retransmission carries incoming 2848 (the RESEND's end, main since
// 2025-05) or 40000 (the granted offset, the unscheduled bytes: main
// before 2025-05); one carrying the message length, 100000, claims bytes
// nobody asked for or granted.
func TestResend020RetransmissionIncoming(t *testing.T) {
	build := func(incoming uint32) (*traceBuilder, int) { return buildResend020(t, wire.VersionCurrent, incoming) }
	for _, inc := range []uint32{2848, 40000} {
		b, _ := build(inc)
		wantClean(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020")
	}
	b, rx := build(100000)
	wantViolations(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020", rx)
	// linux_6.1.38 writes the granted offset (U, 10000, here) or the
	// segment's end: both pass, the message length does not.
	for _, inc := range []uint32{2848, 10000} {
		b, _ := buildResend020(t, wire.Version2024, inc)
		wantClean(t, b.check("linux-2024", "HOMA-RESEND-020"), "HOMA-RESEND-020")
	}
	b, rx = buildResend020(t, wire.Version2024, 100000)
	wantViolations(t, b.check("linux-2024", "HOMA-RESEND-020"), "HOMA-RESEND-020", rx)
}

// buildResend020 is TestResend020RetransmissionIncoming's exchange on wire
// format v, the retransmission carrying incoming.
func buildResend020(t *testing.T, v wire.Version, incoming uint32) (*traceBuilder, int) {
	b := newTrace(t, v)
	b.data(true, 10, 100000, 0, 1424, 5, nil)
	b.after(time.Microsecond).data(true, 10, 100000, 2848, 1424, 5, nil)
	b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	rx := b.after(20*time.Microsecond).data(true, 10, 100000, 1424, 1424, 7, func(f *wire.DataFields) {
		f.Retransmit, f.SegOffset, f.Incoming = 1, 1424, incoming
	})
	return b, rx
}

// TestResend021RetransmitOnlyAsked: the server RESENDs [1424, 2848) of a
// 5696-byte request; the client retransmits that packet (clean) or also
// the packets at 2848 and 4272, which nobody asked for.
func TestResend021RetransmitOnlyAsked(t *testing.T) {
	build := func(extra bool) (*traceBuilder, []int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 5696, 0, 1424, 40000, 5)
		b.after(time.Microsecond).message(true, 10, 5696, 2848, 5696, 40000, 5)
		b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
		b.after(20*time.Microsecond).resent(true, 10, 5696, 1424, 1424, 7)
		var bad []int
		if extra {
			bad = append(bad, b.resent(true, 10, 5696, 2848, 1424, 7), b.resent(true, 10, 5696, 4272, 1424, 7))
		}
		return b, bad
	}
	b, _ := build(false)
	wantClean(t, b.check("linux", "HOMA-RESEND-021"), "HOMA-RESEND-021")
	b, bad := build(true)
	wantViolations(t, b.check("linux", "HOMA-RESEND-021"), "HOMA-RESEND-021", bad...)
}

// TestResend006UnknownAnswersAtOnce: a server answers the client's RESEND
// with RPC_UNKNOWN as it processes the RESEND (homa_resend_pkt calls
// homa_xmit_unknown); one that comes 80 ms after the client's last RESEND,
// which BUSY had answered, answers nothing and is a violation. Its twin,
// 300 µs after a RESEND, passes.
func TestResend006UnknownAnswersAtOnce(t *testing.T) {
	build := func(gap time.Duration) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 100, 0, 100, 7, nil)
		b.after(60*time.Millisecond).resend(true, 10, 0, 100, 7)
		b.after(200*time.Microsecond).ctl(false, 10, wire.TypeBusy)
		unk := b.after(gap).ctl(false, 10, wire.TypeRPCUnknown)
		return b, unk
	}
	b, _ := build(300 * time.Microsecond)
	wantClean(t, b.check("linux", "HOMA-RESEND-006"), "HOMA-RESEND-006")
	b, unk := build(80 * time.Millisecond)
	wantViolations(t, b.check("linux", "HOMA-RESEND-006"), "HOMA-RESEND-006", unk)
}

// TestResend001PeerPacketInsideRound: a server's timer pass sends a round
// of RESENDs for three gaps of a request; the client's BUSY (or any packet)
// crosses them, so a switch sees it between the first and the others. The
// round was decided before the BUSY could arrive: no violation for the
// later RESENDs of the round. A RESEND a tick later after the BUSY is
// still a violation.
func TestResend001PeerPacketInsideRound(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 30000, 0, 1424, 30000, 5) // the rest is lost before the capture point
	b.after(100*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	b.after(5*time.Microsecond).ctl(true, 10, wire.TypeBusy)
	b.after(10*time.Microsecond).resend(false, 10, 5696, 1424, 7)
	b.after(10*time.Microsecond).resend(false, 10, 9968, 1424, 7)
	late := b.after(2*time.Millisecond).resend(false, 10, 14240, 1424, 7)
	rep := b.check("linux", "HOMA-RESEND-001")
	wantViolations(t, rep, "HOMA-RESEND-001", late)

	// Microsecond stamps: the BUSY stamped the same instant as the round's
	// first RESEND may have come after it too.
	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 30000, 0, 1424, 30000, 5)
	b.after(100*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	b.ctl(true, 10, wire.TypeBusy)
	b.after(time.Microsecond).resend(false, 10, 5696, 1424, 7)
	wantClean(t, b.check("linux", "HOMA-RESEND-001"), "HOMA-RESEND-001")
}

// TestResend022NothingAfterOwnUnknown: a client answers the server's
// RESEND for its request with RPC_UNKNOWN, which it sends only for an RPC
// it does not have, yet 60 ms later RESENDs for the response: a violation.
// A BUSY within slack of the RPC_UNKNOWN (sent before it, in flight) and an
// ACK answering a later NEED_ACK pass.
func TestResend022NothingAfterOwnUnknown(t *testing.T) {
	build := func(late bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 60000, 0, 40000, 40000, 4)
		b.after(60*time.Millisecond).resend(false, 10, 40000, 20000, 7)
		b.after(100*time.Microsecond).ctl(true, 10, wire.TypeRPCUnknown)
		b.after(100*time.Microsecond).ctl(true, 10, wire.TypeBusy)
		bad := 0
		if late {
			bad = b.after(60*time.Millisecond).resend(true, 10, 0, 0xFFFFFFFF, 7)
		}
		b.after(time.Millisecond).ctl(false, 10, wire.TypeNeedAck)
		b.after(20 * time.Microsecond).ack(10)
		return b, bad
	}
	b, _ := build(false)
	wantClean(t, b.check("linux", "HOMA-RESEND-022"), "HOMA-RESEND-022")
	b, bad := build(true)
	wantViolations(t, b.check("linux", "HOMA-RESEND-022"), "HOMA-RESEND-022", bad)
}

// TestResend022AfterRequestDataGoesOn: the client keeps sending its request
// after its RPC_UNKNOWN (which starts a new incarnation in the trace, as a
// held-back request packet would); its RESEND for the response 60 ms later
// is still a violation.
func TestResend022AfterRequestDataGoesOn(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 60000, 0, 40000, 40000, 4)
	b.after(60*time.Millisecond).resend(false, 10, 40000, 20000, 7)
	b.after(100*time.Microsecond).ctl(true, 10, wire.TypeRPCUnknown)
	b.after(100*time.Microsecond).message(true, 10, 60000, 40000, 60000, 40000, 0)
	bad := b.after(60*time.Millisecond).resend(true, 10, 0, 0xFFFFFFFF, 7)
	wantViolations(t, b.check("linux", "HOMA-RESEND-022"), "HOMA-RESEND-022", bad)
}

// TestResend020IncomingPastOffset: a retransmission's incoming lies past
// its own offset in every form HomaModule writes; incoming 1 for the
// segment at 1424 is a violation.
func TestResend020IncomingPastOffset(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 5000, 0, 5000, 5000, 7)
	b.after(3*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	bad := b.after(10*time.Microsecond).data(true, 10, 5000, 1424, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1; f.Incoming = 1 })
	wantViolations(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020", bad)
}

// TestResend012OwnFieldsWithoutResponse: a RESEND's own fields are judged
// also where no byte of the message it asks for is in the capture: {5000,
// -1} from a client with no response byte is a violation.
func TestResend012OwnFieldsWithoutResponse(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	bad := b.after(10*time.Millisecond).resend(true, 2, 5000, wire.ResendAll, 7)
	b.after(10*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	wantViolations(t, b.check("linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", bad)
}

// TestResend012ClientNoResponseAsksAll: a client with no byte of its
// response asks {0, -1} on main (homa_request_retrans since be5081e);
// {0, 100} is linux_6.1.38's and main's before it, legal under those
// profiles only.
func TestResend012ClientNoResponseAsksAll(t *testing.T) {
	const id = "HOMA-RESEND-012"
	build := func(v wire.Version) (*traceBuilder, int) {
		b := newTrace(t, v)
		b.data(true, 2, 100, 0, 100, 7, nil)
		old := b.after(10*time.Millisecond).resend(true, 2, 0, 100, 7)
		b.after(10*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		return b, old
	}
	b, old := build(wire.VersionCurrent)
	wantViolations(t, b.check("linux", id), id, old)
	b, _ = build(wire.Version2025)
	wantViolations(t, b.check("linux-2025", id), id)
}

// A round that omits the granted tail [8544, 10000), which the capture
// never saw. Variant a: the round's other RESEND asks for a gap the
// capture never saw either; variant b: for bytes the capture saw (lost
// after the capture point). Both rounds leave the tail out: loss after
// the capture point can only make the receiver ask for more, so it
// excuses neither (helper-133).
func TestResend026LossAfterNoExcuse(t *testing.T) {
	for _, seenGap := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		for o := uint32(0); o < 8544; o += 1424 {
			if o == 1424 && !seenGap {
				continue // lost before the capture point
			}
			b.after(2*time.Microsecond).data(true, 2, 10000, o, 1424, 4, func(f *wire.DataFields) { f.Incoming = 10000 })
		}
		first := b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
		b.after(20*time.Microsecond).data(true, 2, 10000, 1424, 1424, 4, func(f *wire.DataFields) { f.Incoming = 10000; f.Retransmit = 1 })
		b.after(3*time.Millisecond).data(true, 4, 100, 0, 100, 4, nil)
		rep := b.check("linux", "HOMA-RESEND-026")
		wantViolations(t, rep, "HOMA-RESEND-026", first)
	}
}

// TestResend026RoundsATickApart: with resend_ticks 1 timer rounds may
// come a tick apart (DATA restarts silent_ticks, and the round comes at
// the first tick of silence), and an RPC's place in the timer pass varies:
// here the second round begins 1 ns less than a tick after the first, with
// a gap above the first round's offset, then the granted tail. It is a
// round of its own and whole (helper-135: the gap's RESEND was taken into
// the first round, and the tail's opened a round that seemed to lack it).
// The same second round without its gap RESEND is a violation.
func TestResend026RoundsATickApart(t *testing.T) {
	for _, whole := range []bool{true, false} {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 20000, 0, 5696, 10000, 4)
		b.after(2*time.Millisecond).resend(false, 2, 5696, 4304, 7)
		start := b.now
		b.after(100*time.Microsecond).grant(false, 2, 20000, 0)
		for o := uint32(5696); o < 10000; o += 1424 {
			b.after(time.Microsecond).data(true, 2, 20000, o, int(min(1424, 10000-o)), 4, func(f *wire.DataFields) { f.Incoming, f.Retransmit = 10000, 1 })
		}
		for o := uint32(11392); o < 16000; o += 1424 {
			b.after(time.Microsecond).data(true, 2, 20000, o, int(min(1424, 16000-o)), 0, func(f *wire.DataFields) { f.Incoming = 20000 })
		}
		b.now = start.Add(time.Millisecond - time.Nanosecond)
		if whole {
			b.resend(false, 2, 10000, 1392, 7)
		}
		tail := b.after(2*time.Nanosecond).resend(false, 2, 16000, 4000, 7)
		b.after(3*time.Millisecond).data(true, 4, 100, 0, 100, 4, nil)
		rep := b.check("linux", "HOMA-RESEND-026", "resend_ticks=1", "resend_interval=3")
		if whole {
			wantViolations(t, rep, "HOMA-RESEND-026")
			continue
		}
		wantViolations(t, rep, "HOMA-RESEND-026", tail)
	}
}

// TestResend027BusyAfterRetransmission: homa_resend_pkt retransmits what a
// RESEND asks for that it had sent, then BUSYs only if it retransmitted
// nothing: a sender that BUSYs after its retransmission breaks RTX-06
// (helper-142's mutant answered every RESEND with both). A BUSY before
// the retransmission may answer while it waits in the sender's queue
// (HOMA-RESEND-015's allowance), and one for a repeat of an earlier
// RESEND may answer the copy.
func TestResend027BusyAfterRetransmission(t *testing.T) {
	const id = "HOMA-RESEND-027"
	build := func(busyFirst, repeat bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 6, nil)
		b.message(false, 2, 5000, 0, 5000, 5000, 6)
		if repeat {
			b.after(5*time.Millisecond).resend(true, 2, 2848, 1424, 7)
			b.after(time.Microsecond).data(false, 2, 5000, 2848, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
		}
		b.after(5*time.Millisecond).resend(true, 2, 2848, 1424, 7)
		var busy int
		if busyFirst {
			busy = b.after(time.Microsecond).ctl(false, 2, wire.TypeBusy)
		}
		b.after(time.Microsecond).data(false, 2, 5000, 2848, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
		if !busyFirst {
			busy = b.after(time.Microsecond).ctl(false, 2, wire.TypeBusy)
		}
		return b, busy
	}
	b, busy := build(false, false)
	wantViolations(t, b.check("linux", id), id, busy)
	b, _ = build(true, false)
	wantCounts(t, b.check("linux", id), id, 1, 1, 0, 0)
	b, _ = build(false, true)
	wantCounts(t, b.check("linux", id), id, 1, 1, 0, 0)
	// Not judged under linux_6.1.38, which BUSYs while granted bytes wait.
	b, _ = build(false, false)
	if rep := b.check("linux-2024", id); len(rep.Violations) != 0 {
		t.Errorf("linux-2024: %v", rep.Violations)
	}
}

// TestResend012RecreatedIncarnationShown: after the ack, a late burst
// re-creates the server's RPC with the whole unscheduled prefix [0, 40000)
// (it then holds every byte it granted: homa_timer_check_rpc keeps
// silent_ticks at 0, so no timeout). 120 ms later the server GRANTs
// (it shows it holds the incarnation), and a late packet arrives 1 ms
// after that, which joins that incarnation: the server's RESEND asking
// for byte 1424, which it holds, is a violation whether the GRANT came
// 20 or 120 ms after the burst (helper-143: the server's packets after
// the ack were not counted as showing the re-created incarnation).
func TestResend012RecreatedIncarnationShown(t *testing.T) {
	for _, grantGap := range []time.Duration{20 * time.Millisecond, 120 * time.Millisecond} {
		b := newTrace(t, wire.VersionCurrent)
		ackedLongRequest(b)
		// late burst re-creates: a retransmission of [0, 1424) (incoming
		// 1424: the server's granted) and [1424, 2848): it holds all it granted
		b.after(50*time.Millisecond).data(true, 2, 100000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 1424 })
		b.after(time.Microsecond).data(true, 2, 100000, 1424, 1424, 4, nil)
		b.after(grantGap).grant(false, 2, 50000, 0) // the incarnation holds
		b.after(time.Millisecond).data(true, 2, 100000, 2848, 1424, 0, nil)
		rs := b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7) // asks a byte it holds
		rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-012")
		if len(rep.Violations) != 1 || rep.Violations[0].Frame != rs {
			t.Errorf("GRANT %v after the burst: want a violation at frame %d, got %v", grantGap, rs, rep.Violations)
		}
	}
}

// TestResend012StartAfterWakeup: HomaModule main, capture on the client's
// own link. The client has no receive buffers when the 40000-byte response
// (all unscheduled) starts: homa_data_pkt drops every packet (num_bpages
// == 0) though the capture saw [0, 20000) of them ([20000, 40000) was lost
// before the client's link). Buffers free up: homa_pool_check_waiting sends
// the wakeup RESEND {0, -1}; the server retransmits [0, 40000), of which
// only [0, 9968) arrives. The client's timer then asks [recv_end, granted)
// = [9968, 40000): byte 9968 was seen, but dropped, so it lacks it
// (helper-141). A RESEND {0, 30000} begins at a byte it holds since the
// wakeup: homa_request_retrans never begins one there (helper-143).
func TestResend012StartAfterWakeup(t *testing.T) {
	const id = "HOMA-RESEND-012"
	for _, off := range []uint32{9968, 0} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(50 * time.Microsecond)
		b.message(false, 2, 40000, 0, 20000, 40000, 4)                    // dropped: no buffers
		b.after(3*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 6) // buffer wakeup (homa_high_priority)
		b.after(20 * time.Microsecond)
		for o := uint32(0); o < 9968; o += 1424 {
			b.after(time.Microsecond).data(false, 2, 40000, o, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
		}
		rs := b.after(6*time.Millisecond).resend(true, 2, off, 40000-off, 7)
		rep := b.checkAt(HostPoint(b.client), "linux", id)
		if off != 0 {
			wantCounts(t, rep, id, 2, 2, 0, 0)
			continue
		}
		wantViolations(t, rep, id, rs)
	}
}

// TestResend012NothingProbe: linux_6.1.38's client, holding no byte of
// an 8-byte response (its handling delayed under emulation, lab run
// December 7, 2026), asks RESEND {0, 100}, as it does for every message
// of which nothing arrived: not a RESEND past what the server authorised
// (HOMA-RESEND-012 charged two such in a lab capture). A RESEND {0, 200}
// asks for more than that probe and is still one; so is {0, 100} in the
// current format, whose client asks {0, -1}.
func TestResend012NothingProbe(t *testing.T) {
	const id = "HOMA-RESEND-012"
	build := func(v wire.Version, length uint32) (*traceBuilder, int) {
		b := newTrace(t, v)
		b.data(true, 10, 205, 0, 205, 6, nil)
		b.after(time.Millisecond).data(false, 10, 8, 0, 8, 7, nil)
		return b, b.after(time.Millisecond).resend(true, 10, 0, length, 7)
	}
	b, _ := build(wire.Version2024, 100)
	wantClean(t, b.check("linux-2024", id), id)
	b, _ = build(wire.Version2025, 100)
	wantClean(t, b.check("linux-2025", id), id)
	b, rs := build(wire.Version2024, 200)
	wantViolations(t, b.check("linux-2024", id), id, rs)
	b, rs = build(wire.VersionCurrent, 100)
	wantViolations(t, b.check("linux", id), id, rs)
}

// TestResend029RetransmitsFirstCut: a sender retransmits the segments it
// first cut the message into (homa_resend_data in main, linux_6.13.9 and
// linux_6.1.38). A 10000-byte request cut at 1424 bytes with a boundary at
// U = 5000: a RESEND from 1425 draws [1424, 2848) and [2848, 4272), which
// pass; recut at the RESEND's offset ([1425, 2849), [2849, 3425)) both
// are violations, as is [6000, 7424), inside the segment from 5000 (the
// one phase besides 0 the capture saw). A retransmission whose start the
// capture saw no first transmission around is judged by its end only; a
// message first sent in a TSO batch, whose cut the capture does not show,
// is not judged.
func TestResend029RetransmitsFirstCut(t *testing.T) {
	build := func(unseen, tso bool, retx ...[2]uint32) (*traceBuilder, []int) {
		b := newTrace(t, wire.VersionCurrent)
		for off := uint32(0); off < 10000; {
			n := min(1424, 10000-off)
			if off < 5000 {
				n = min(n, 5000-off)
			}
			if !unseen || off != 1424 {
				b.emit(true, 4, &wire.DataFields{Common: wire.CommonFields{SenderID: 2, Sequence: off}, MessageLength: 10000, Incoming: 10000,
					CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, n)}, func(e *Event) { e.Hijacked = tso })
			}
			off += n
		}
		b.after(5*time.Millisecond).resend(false, 2, 1425, 2000, 7)
		var frames []int
		for _, x := range retx {
			frames = append(frames, b.after(10*time.Microsecond).resent(true, 2, 10000, x[0], int(x[1]-x[0]), 7))
		}
		b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
		return b, frames
	}
	const id = "HOMA-RESEND-029"
	b, _ := build(false, false, [2]uint32{1424, 2848}, [2]uint32{2848, 4272}, [2]uint32{5000, 6424})
	wantClean(t, b.check("linux", id), id)
	wantCounts(t, b.check("linux", id), id, 3, 3, 0, 0)
	b, bad := build(false, false, [2]uint32{1425, 2849}, [2]uint32{2849, 3425}, [2]uint32{6000, 7424})
	rep := b.check("linux", id)
	wantViolations(t, rep, id, bad...)
	if len(rep.Violations) > 0 && !strings.Contains(rep.Violations[0].Why, "begins at 1425, inside a segment") || len(rep.Violations) > 2 && !strings.Contains(rep.Violations[2].Why, "multiples of 1424 and those plus 728") {
		t.Errorf("violations %v: want the start inside a segment and the grid with U's phase 728", rep.Violations)
	}
	for _, p := range []string{"linux-2024", "upstream"} {
		wantViolations(t, b.check(p, id), id, bad...)
	}
	// [1424, 2848) unseen: a retransmission from 1500 is judged by its end.
	b, frames := build(true, false, [2]uint32{1424, 2848}, [2]uint32{1500, 2848}, [2]uint32{1500, 2924})
	wantViolations(t, b.check("linux", id), id, frames[2])
	b, _ = build(false, true, [2]uint32{1425, 2849}, [2]uint32{6000, 7424})
	wantCounts(t, b.check("linux", id), id, 0, 0, 0, 0)
}
