package spec

// Rules extended in red-team round 4: answers counted per RESEND
// (HOMA-RESEND-023, HOMA-RESEND-021), a client's RESEND after its own ack
// (HOMA-RESEND-012), a server's RESEND as proof that it holds the RPC
// (HOMA-RESEND-019).

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestResend023BusyPerResend: a server computing a response answers each
// of the client's RESENDs with one BUSY; a second BUSY for the same RESEND
// (later than a network duplicate could come) is a violation.
func TestResend023BusyPerResend(t *testing.T) {
	build := func(extra bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		b.after(20*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		bad := 0
		if extra {
			bad = b.after(300*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		}
		b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		b.after(20*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
		return b, bad
	}
	b, _ := build(false)
	rep := b.check("linux", "HOMA-RESEND-023")
	wantClean(t, rep, "HOMA-RESEND-023")
	wantCounts(t, rep, "HOMA-RESEND-023", 2, 2, 0, 0)
	b, bad := build(true)
	rep = b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-RESEND-023")
	// The second RESEND's BUSY is one more than the RESENDs too: each
	// earlier RESEND was answered.
	wantViolations(t, rep, "HOMA-RESEND-023", bad, bad+2)
	// At a switch the server may have got a copy of a RESEND the network
	// made after the capture point: one more answer per RESEND is
	// inconclusive there.
	rep = b.check("linux", "HOMA-RESEND-023")
	wantDowngraded(t, rep, "HOMA-RESEND-023", bad, CauseDuplicate)
	wantDowngraded(t, rep, "HOMA-RESEND-023", bad+2, CauseDuplicate)
}

// TestResend023UnknownPerResend: a server that lost the request answers
// the client's RESEND with RPC_UNKNOWN once. Where the capture sees what
// the server receives, three identical RPC_UNKNOWNs within jitter give one
// inconclusive finding (the second: the network may have copied the
// first) and one violation. At a switch the network may also have copied
// the RESEND after the capture point, and each answer on its way: up to
// four are inconclusive, the fifth is a violation (the simulator's lossy
// runs with duplication showed three at a client's link).
func TestResend023UnknownPerResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil) // lost after the capture point
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(20*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	dup := b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	third := b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	rep := b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-RESEND-023")
	wantViolations(t, rep, "HOMA-RESEND-023", third)
	wantDowngraded(t, rep, "HOMA-RESEND-023", dup, CauseDuplicate)
	fourth := b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	fifth := b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	rep = b.check("linux", "HOMA-RESEND-023")
	wantViolations(t, rep, "HOMA-RESEND-023", fifth)
	for _, f := range []int{dup, third, fourth} {
		wantDowngraded(t, rep, "HOMA-RESEND-023", f, CauseDuplicate)
	}
}

// TestResend021CopiesPerResend: a client answers the server's RESEND for
// one lost segment with one retransmission; a second copy of it (later
// than a network duplicate could come) is a violation, and a second
// RESEND for the segment allows a second copy.
func TestResend021CopiesPerResend(t *testing.T) {
	build := func(second, resendAgain bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 5000, 0, 5000, 5000, 5)
		b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
		retx := func(f *wire.DataFields) { f.Retransmit, f.SegOffset, f.Incoming = 1, 1424, 2848 }
		b.after(20*time.Microsecond).data(true, 2, 5000, 1424, 1424, 7, retx)
		if resendAgain {
			b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
		}
		bad := 0
		if second {
			bad = b.after(500*time.Microsecond).data(true, 2, 5000, 1424, 1424, 7, retx)
		}
		return b, bad
	}
	for _, c := range []struct {
		name                string
		second, again, fail bool
	}{
		{"one copy", false, false, false},
		{"two copies, two RESENDs", true, true, false},
		{"two copies, one RESEND", true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, bad := build(c.second, c.again)
			rep := b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-RESEND-021")
			if c.fail {
				wantViolations(t, rep, "HOMA-RESEND-021", bad)
				// At a switch, a copy of the RESEND made after the
				// capture point may have drawn it.
				wantDowngraded(t, b.check("linux", "HOMA-RESEND-021"), "HOMA-RESEND-021", bad, CauseDuplicate)
			} else {
				wantClean(t, rep, "HOMA-RESEND-021")
			}
		})
	}
}

// TestResend012AfterOwnAck: a client whose response was retransmitted
// (the capture shows loss after it) RESENDs for the response: inconclusive
// in general (the response may not have reached it), a violation once the
// client itself acknowledged the RPC more than slack before.
func TestResend012AfterOwnAck(t *testing.T) {
	build := func(acked bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, 2, 3000, 0, 1424, 5, nil)
		b.data(false, 2, 3000, 1424, 1424, 5, nil)
		b.data(false, 2, 3000, 2848, 152, 5, nil)
		// The client asks again for bytes the capture saw: loss after
		// the capture point, which the server answers.
		b.after(5*time.Millisecond).resend(true, 2, 1424, 1424, 7)
		b.after(20*time.Microsecond).data(false, 2, 3000, 1424, 1424, 7, func(f *wire.DataFields) { f.Retransmit, f.SegOffset, f.Incoming = 1, 1424, 2848 })
		if acked {
			b.after(2500*time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
			b.after(20 * time.Microsecond).ack(2)
		}
		late := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		return b, late
	}
	b, late := build(false)
	wantInconclusive(t, b.check("linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", late)
	b, late = build(true)
	wantViolations(t, b.check("linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", late)
}

// TestResend019ResendShowsHeld: a server RESENDs a request's lost bytes
// every 5 ms (it holds the RPC; the client's retransmissions are lost),
// and 1 ms after the last one answers the client's RESEND with
// RPC_UNKNOWN, while it still serves RPC 20 whose request came before the
// RESENDs: 16 ms of silence from the client are no timeout (timeout_ticks
// 100). Without the server's RESENDs its last packet for the RPC would be
// the GRANT before RPC 20's request, and no witness could rule out a close.
func TestResend019ResendShowsHeld(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 5000, 0, 1424, 5000, 5)
	b.message(true, 10, 5000, 2848, 5000, 5000, 5) // [1424, 2848) lost before the capture
	b.after(50*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
	for range 3 {
		b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	}
	b.after(time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
	u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	w := witness20(b)
	rep := b.check("linux", forgetRule)
	wantViolations(t, rep, forgetRule, u)
	if f := rep.Violations[0]; len(f.Frames) != 1 || f.Frames[0] != w {
		t.Errorf("frames %v, want the witness %d: %s", f.Frames, w, f.Why)
	}
}

// TestResend014BusyShowsOverdue: a server granted a 60000-byte request
// and one scheduled packet was lost before the capture. The client, which
// sent everything granted, RESENDs for its response every 5 ms and the
// server answers BUSY: it holds the RPC, so its own RESEND for the gap is
// due resend_ticks+1 ticks (stretched, plus slack) after the client's last
// DATA. Without it, a BUSY past that deadline is a violation; with a
// RESEND in time (and the next round due later) the BUSYs pass.
func TestResend014BusyShowsOverdue(t *testing.T) {
	build := func(serverResends bool) (*traceBuilder, []int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 60000, 0, 40000, 40000, 4)
		b.grant(false, 2, 60000, 0)
		b.message(true, 2, 60000, 40000, 40000+1424, 40000, 0)
		b.message(true, 2, 60000, 40000+2*1424, 60000, 40000, 0) // [41424, 42848) lost
		var busy []int
		for k := 0; k < 3; k++ {
			b.after(5 * time.Millisecond)
			if serverResends {
				b.resend(false, 2, 41424, 1424, 7) // the client's answer is lost too
			}
			b.after(100*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7)
			busy = append(busy, b.after(20*time.Microsecond).ctl(false, 2, wire.TypeBusy))
		}
		return b, busy
	}
	b, _ := build(true)
	wantClean(t, b.check("linux", "HOMA-RESEND-014"), "HOMA-RESEND-014")
	b, busy := build(false)
	// 6 ticks stretched by half plus 2 ms of slack allow 11 ms: the BUSYs
	// 5 and 10 ms after the last DATA pass, the one 15 ms after it fails.
	wantViolations(t, b.check("linux", "HOMA-RESEND-014"), "HOMA-RESEND-014", busy[2])
}

// TestResend014NeedAckAnswerShowsOverdue: a client lacks the head of a
// 20000-byte response it granted whole; the server, done sending, asks
// for an ack every tick from 2 ms. A client that never ran a timer round
// (HomaModule 9f23d56^ gave only one silent RPC per peer its RESENDs)
// answers a NEED_ACK 30 ms later with a RESEND at once
// (homa_need_ack_pkt): that answer shows it held the RPC, lacking bytes,
// long past its first round's deadline. With timer rounds every 5 ms the
// same answer passes.
func TestResend014NeedAckAnswerShowsOverdue(t *testing.T) {
	build := func(timerRounds bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 6, nil)
		b.after(10*time.Microsecond).data(false, 2, 20000, 2848, 1424, 6, nil) // [0, 2848) lost
		b.after(time.Microsecond).grant(true, 2, 20000, 0)
		for off := uint32(4272); off < 20000; off += 1424 {
			b.after(time.Microsecond).data(false, 2, 20000, off, int(min(1424, 20000-off)), 0, nil)
		}
		for range 6 {
			b.after(5 * time.Millisecond)
			if timerRounds {
				b.resend(true, 2, 0, 2848, 7) // lost on its way
			}
		}
		b.after(500*time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
		answer := b.after(time.Microsecond).resend(true, 2, 0, 2848, 7)
		return b, answer
	}
	b, _ := build(true)
	wantClean(t, b.check("linux", "HOMA-RESEND-014"), "HOMA-RESEND-014")
	b, answer := build(false)
	wantViolations(t, b.check("linux", "HOMA-RESEND-014"), "HOMA-RESEND-014", answer)
}

// TestResend023OneCopyPerResend: at a switch a second BUSY for one
// RESEND may answer a copy of the RESEND the network made after the
// capture point: inconclusive. A third is a violation: one copy per
// RESEND is assumed, not more.
func TestResend023OneCopyPerResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(20*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	second := b.after(300*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	third := b.after(300*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	rep := b.check("linux", "HOMA-RESEND-023")
	wantDowngraded(t, rep, "HOMA-RESEND-023", second, CauseDuplicate)
	wantViolations(t, rep, "HOMA-RESEND-023", third)
}

// TestResend021GrantResendAll2024: on linux_6.1.38's wire a GRANT with
// resend_all makes the sender retransmit every segment it has sent, once
// (homa_grant_pkt → homa_resend_data): a 5000-byte request of four
// packets retransmitted once after such a GRANT passes; a segment
// retransmitted twice for it is a violation.
func TestResend021GrantResendAll2024(t *testing.T) {
	const id = "HOMA-RESEND-021"
	build := func(twice bool) (*traceBuilder, int) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 50000, 0, 5696, 10000, 5)
		b.after(5*time.Millisecond).emit(false, 7, &wire.GrantFields{Common: wire.CommonFields{SenderID: sid(2, false)}, Offset: 20000, ResendAll: 1}, nil)
		b.after(20 * time.Microsecond)
		for off := uint32(0); off < 5696; off += 1424 {
			b.resent(true, 2, 50000, off, 1424, 5)
		}
		bad := 0
		if twice {
			bad = b.after(500*time.Microsecond).resent(true, 2, 50000, 1424, 1424, 5)
		}
		return b, bad
	}
	b, _ := build(false)
	cp := CapturePoint{Kind: CaptureDelivered}
	wantClean(t, b.checkAt(cp, "linux-2024", id), id)
	b, bad := build(true)
	wantViolations(t, b.checkAt(cp, "linux-2024", id), id, bad)
}

// TestResend012BeginsAtHeldByte: a 10000-byte request of which
// [4424, 5848) was lost. homa_request_retrans asks for the gap from its
// first byte; a RESEND {0, 10000} (HomaModule before d64066d: ranges from
// 0) asks again for bytes that arrived, though it covers the gap too. On
// the server's own link (at a switch the RESEND itself may show the
// bytes were lost after it).
func TestResend012BeginsAtHeldByte(t *testing.T) {
	const id = "HOMA-RESEND-012"
	build := func(from uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 10000, 0, 4424, 10000, 4)
		b.message(true, 2, 10000, 5848, 10000, 10000, 4)
		rs := b.after(5*time.Millisecond).resend(false, 2, from, 5848-from, 7)
		return b, rs
	}
	b, _ := build(4424)
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", id), id, 1, 1, 0, 0)
	b, rs := build(0)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", id), id, rs)
}

// TestResend014TimerRoundRightAfterNeedAckAnswer: HomaModule main, a
// client lacking the tail of a 3000-byte response (its retransmissions
// keep being dropped before the client's own link). The server sends
// NEED_ACK every tick; the client answers each at once (homa_need_ack_pkt
// -> homa_request_retrans) and its timer also RESENDs on schedule, at
// silent_ticks 5 and 10 (here 0.3 ms after a NEED_ACK answer: the two
// timers' phases are unrelated). A timer RESEND within Tick/2 of an answer
// was taken for part of it, so no round was recorded and the answer 11.01
// ms after the last DATA was judged as having no RESEND round since
// (helper-141): one call asks in ascending order, so a RESEND at or below
// the answer's offset with no NEED_ACK pending may be the timer's round
// (RPC.maybeRound), which HOMA-RESEND-014 counts.
func TestResend014TimerRoundRightAfterNeedAckAnswer(t *testing.T) {
	build := func(phase time.Duration) *traceBuilder {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(20*time.Microsecond).data(false, 2, 3000, 0, 1424, 5, nil)
		b.after(time.Microsecond).data(false, 2, 3000, 1424, 1424, 5, nil) // [2848, 3000) lost
		last := b.now
		for k := 2; k <= 11; k++ {
			b.now = last.Add(time.Duration(k) * time.Millisecond)
			b.ctl(false, 2, wire.TypeNeedAck)
			b.after(10*time.Microsecond).resend(true, 2, 2848, 152, 7) // the answer
			if k == 5 || k == 10 {
				b.now = last.Add(time.Duration(k)*time.Millisecond + phase)
				b.resend(true, 2, 2848, 152, 7) // timer round
			}
		}
		return b
	}
	cp := HostPoint(newTrace(t, wire.VersionCurrent).client)
	for _, phase := range []time.Duration{700 * time.Microsecond, 300 * time.Microsecond} {
		rep := build(phase).checkAt(cp, "linux", "HOMA-RESEND-014")
		if len(rep.Violations) > 0 {
			t.Errorf("timer %v after the answers: %v", phase, rep.Violations)
		}
	}
}

// TestResend008DuplicatedNeedAckAnsweredTwice: a NEED_ACK the network
// duplicated (before the capture point or after it, where the capture
// shows one) gets one homa_request_retrans call per copy, each asking the
// same range: not timer rounds (the explorer's seed 4; helper-143). Two
// RESENDs for it more than half a tick after the answer are the timer's,
// and two rounds 1 µs apart are a violation.
func TestResend008DuplicatedNeedAckAnsweredTwice(t *testing.T) {
	const id = "HOMA-RESEND-008"
	for _, tc := range []struct {
		needAcks int
		after    time.Duration
	}{{3, time.Microsecond}, {1, time.Microsecond}, {1, 600 * time.Microsecond}} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(20*time.Microsecond).data(false, 2, 3000, 0, 1424, 5, nil)
		b.after(time.Microsecond).data(false, 2, 3000, 1424, 1424, 5, nil) // [2848, 3000) lost
		b.after(4 * time.Millisecond)
		for range tc.needAcks {
			b.after(time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
		}
		b.after(time.Microsecond).resend(true, 2, 2848, 152, 7)
		b.after(tc.after).resend(true, 2, 2848, 152, 7)
		last := b.after(time.Microsecond).resend(true, 2, 2848, 152, 7)
		rep := b.checkAt(HostPoint(b.client), "linux", id)
		if tc.after < 500*time.Microsecond {
			wantCounts(t, rep, id, 0, 0, 0, 0) // no round at all
			continue
		}
		wantViolations(t, rep, id, last) // the second round, 1 µs after the first
	}
}

// TestResend008NeedAckCopiedAfterCapture: the server's NEED_ACK is duplicated by
// the network after the capture point (capture at the server's host): the
// client gets two and answers each with one homa_request_retrans call. The
// trace shows one NEED_ACK and two identical answers 1 µs apart. The
// second is no timer round (helper-143).
func TestResend008NeedAckCopiedAfterCapture(t *testing.T) {
	const id = "HOMA-RESEND-008"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(20*time.Microsecond).data(false, 2, 3000, 0, 1424, 5, nil)
	b.after(time.Microsecond).data(false, 2, 3000, 1424, 1424, 5, nil) // [2848, 3000) lost
	b.after(5*time.Millisecond).resend(true, 2, 2848, 152, 7)          // the client's first timer round
	b.after(1500*time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
	b.after(30*time.Microsecond).resend(true, 2, 2848, 152, 7)
	b.after(time.Microsecond).resend(true, 2, 2848, 152, 7)                         // answer to the network's copy
	b.after(5*time.Millisecond-1531*time.Microsecond).resend(true, 2, 2848, 152, 7) // the next timer round, resend_interval after the first
	for _, cp := range []CapturePoint{HostPoint(b.server), Switch} {
		rep := b.checkAt(cp, "linux", id)
		if len(rep.Violations) > 0 {
			t.Errorf("capture %v: %v", cp, rep.Violations)
		}
	}
}

// TestResend008NeedAckAnswerSwapped: one homa_request_retrans call answering a
// NEED_ACK sends RESENDs for gap [1424, 2848) then the tail [4272, 5000);
// the network swaps them before the switch capture. The lower one is still
// the answer, not a timer round, and the client's real timer round 300 µs
// later is no early round (helper-143).
func TestResend008NeedAckAnswerSwapped(t *testing.T) {
	const id = "HOMA-RESEND-008"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(20*time.Microsecond).data(false, 2, 5000, 0, 1424, 5, nil)
	b.after(time.Microsecond).data(false, 2, 5000, 2848, 1424, 5, nil) // [1424,2848) and [4272,5000) lost
	b.after(4 * time.Millisecond)
	b.after(time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
	b.after(30*time.Microsecond).resend(true, 2, 4272, 728, 7)
	b.after(2*time.Microsecond).resend(true, 2, 1424, 1424, 7)
	// the client's timer round, whose phase is unrelated
	b.after(300*time.Microsecond).resend(true, 2, 1424, 1424, 7)
	b.after(time.Microsecond).resend(true, 2, 4272, 728, 7)
	rep := b.check("linux", id)
	if len(rep.Violations) > 0 {
		t.Errorf("%v", rep.Violations)
	}
}

// TestResend001EarlyFromTheRPCsStart: at the client's link the capture
// shows a server's RESEND for request bytes it saw sent, 240 µs after the
// RPC's first request packet: they may have been lost after the capture
// point, but the server's RPC began when a request packet arrived, so no
// loss makes it silent for resend_ticks: early (helper-144's m06b,
// inconclusive before). Where the first packet seen is a retransmission
// the RPC may be older; and a client's RESEND seen at the server's link
// may have left long after its first DATA, which may have queued longer.
func TestResend001EarlyFromTheRPCsStart(t *testing.T) {
	const id = "HOMA-RESEND-001"
	for _, tc := range []struct {
		retx       uint8
		fromClient bool
		early      bool
	}{{0, false, true}, {1, false, false}, {0, true, false}} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 3000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit = tc.retx })
		b.after(time.Microsecond).data(true, 2, 3000, 1424, 1424, 7, nil)
		b.after(time.Microsecond).data(true, 2, 3000, 2848, 152, 7, nil)
		cp := HostPoint(b.client)
		var rs int
		if tc.fromClient {
			b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
			rs = b.after(190*time.Microsecond).resend(true, 2, 0, 100, 7)
			cp = HostPoint(b.server)
		} else {
			rs = b.after(240*time.Microsecond).resend(false, 2, 1424, 1576, 7)
		}
		rep := b.checkAt(cp, "linux", id)
		if tc.early {
			wantViolations(t, rep, id, rs)
			continue
		}
		wantInconclusive(t, rep, id, rs)
	}
}

// TestServerTimeoutBeforeLateBusy: the server holds [0, 40000) of a
// 100000-byte request and has granted to 50000; the client goes silent
// for 110 ms (past timeout_ticks 100 at tick 1 ms: the server's timer
// aborts the RPC), then BUSYs held up in the network arrive, then request
// DATA, which creates the RPC anew: the new incarnation's RESEND for
// [0, 40000) asks for bytes it lacks. A BUSY that arrives after the abort
// resets nothing (helper-145: 217 MUST findings of HOMA-RESEND-012 in one
// simulated run). With BUSYs at most 40 ms apart no timeout fits, and the
// same RESEND asks for bytes the server holds.
func TestServerTimeoutBeforeLateBusy(t *testing.T) {
	const id = "HOMA-RESEND-012"
	for _, busies := range [][]time.Duration{{40, 80, 110}, {110, 111}} {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 100000, 0, 40000, 40000, 4)
		g := b.now
		b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
		for _, at := range busies {
			b.now = g.Add(at * time.Millisecond)
			b.ctl(true, 2, wire.TypeBusy)
		}
		b.after(time.Millisecond).data(true, 2, 100000, 40000, 1424, 0, func(f *wire.DataFields) { f.Incoming = 50000 })
		rs := b.after(6*time.Millisecond).resend(false, 2, 0, 40000, 7)
		rep := b.checkAt(HostPoint(b.server), "linux", id)
		if len(busies) == 3 {
			wantViolations(t, rep, id, rs)
			continue
		}
		wantCounts(t, rep, id, 1, 1, 0, 0)
	}
}

// TestResend004PriorityAcrossServerTimeout: the server RESENDs at level 7,
// goes on waiting past timeout_ticks, and the client's retransmissions
// answering that RESEND, at level 7, arrive after the server's timer may
// have aborted the RPC: the trace starts the server's side afresh at the
// first,
// but the sender answered the old incarnation's RESEND (helper-145: the
// priority asked was forgotten, and HOMA-RESEND-004 wanted level 0).
func TestResend004PriorityAcrossServerTimeout(t *testing.T) {
	const id = "HOMA-RESEND-004"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
	b.after(6*time.Millisecond).resend(false, 2, 40000, 10000, 7)
	b.after(110*time.Millisecond).resent(true, 2, 100000, 40000, 1424, 7)
	b.after(time.Microsecond).resent(true, 2, 100000, 41424, 1424, 7)
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", id), id, 2, 2, 0, 0)
}

// TestResend026RoundAfterUncertainTimeout: request DATA reaches the server
// 99 ms after it last heard from the client, within RTX-10's tolerance of
// timeout_ticks: its timer may have aborted the RPC and that DATA created
// it anew, granting only the DATA's incoming, so its round asks for
// [0, 40000) and nothing up to the old incarnation's 50000. The trace
// keeps the old incarnation there, so the round's completeness is
// inconclusive (helper-145: 94 MUST findings in one simulated run).
func TestResend026RoundAfterUncertainTimeout(t *testing.T) {
	const id = "HOMA-RESEND-026"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
	b.after(99*time.Millisecond).data(true, 2, 100000, 41424, 1424, 0, func(f *wire.DataFields) { f.Incoming = 42848 })
	rs := b.after(5*time.Millisecond).resend(false, 2, 0, 40000, 7)
	b.after(3*time.Millisecond).ctl(true, 2, wire.TypeBusy) // past the round's deadline
	wantInconclusive(t, b.checkAt(HostPoint(b.server), "linux", id), id, rs)
}

// TestServerTimeoutNotAfterServerShowsIt: the client is silent 110 ms
// (BUSY at 110 ms), but the server then shows it still holds the RPC (a
// timer RESEND for [40000, 50000) 6 ms after the BUSY, with no request
// DATA in between: no abort happened, a new incarnation needs DATA). Its
// RESEND for [0, 40000) after the next request DATA asks for bytes it
// holds: a violation (helper-146: the 110 ms silence was still taken for
// a timeout at that DATA, which hid it).
func TestServerTimeoutNotAfterServerShowsIt(t *testing.T) {
	const id = "HOMA-RESEND-012"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	g := b.now
	b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
	for ms := 5; ms <= 95; ms += 5 { // the server's timer rounds, unanswered
		b.now = g.Add(time.Duration(ms) * time.Millisecond)
		b.resend(false, 2, 40000, 10000, 7)
	}
	b.now = g.Add(110 * time.Millisecond)
	b.ctl(true, 2, wire.TypeBusy)
	b.after(6*time.Millisecond).resend(false, 2, 40000, 10000, 7) // server alive
	b.after(time.Millisecond).data(true, 2, 100000, 40000, 1424, 0, func(f *wire.DataFields) { f.Incoming = 50000 })
	rs := b.after(6*time.Millisecond).resend(false, 2, 0, 40000, 7)
	rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-*")
	wantViolations(t, rep, id, rs)
}

// TestResend023AnswersOwedAcrossRecreation: a client that forgot its RPC
// answers the server's RESENDs with RPC_UNKNOWN, the first at once and
// the second late; a request packet the network held up reaches the
// server between the two and re-creates the RPC there (a new RPC for the
// trace; the late packet is a copy of its first bytes), whose own RESEND
// the client answers too. The late answer
// belongs to the old RPC's RESEND: two answers for the new RPC's one
// RESEND are no violation (the simulator's lossy all-to-all at full load
// showed this at a host's link).
func TestResend023AnswersOwedAcrossRecreation(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 5696, 40000, 4)
	b.after(5*time.Millisecond).resend(false, 2, 5696, 1424, 7)
	b.after(time.Millisecond).resend(false, 2, 5696, 1424, 7)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).data(true, 2, 100000, 0, 1424, 4, func(f *wire.DataFields) { f.Incoming = 40000 })
	b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	const id = "HOMA-RESEND-023"
	wantCounts(t, b.checkAt(HostPoint(b.client), "linux", id), id, 3, 3, 0, 0)
	// One more has no RESEND left to answer.
	extra := b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", id), id, extra)
}

// TestResend023OwedOnlyUnanswered: the RESENDs the client answered by
// retransmitting owe no answer after the server's RPC is re-created: only
// the last one, which the client answered with RPC_UNKNOWN late, is
// carried over, so four more RPC_UNKNOWNs are violations (helper-149).
func TestResend023OwedOnlyUnanswered(t *testing.T) {
	const id = "HOMA-RESEND-023"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 5696, 40000, 4)
	for i := uint32(0); i < 4; i++ {
		b.after(5*time.Millisecond).resend(false, 2, 5696+i*1424, 1424, 7)
		b.after(20*time.Microsecond).data(true, 2, 100000, 5696+i*1424, 1424, 4, func(f *wire.DataFields) { f.Incoming = 40000; f.Retransmit = 1 })
	}
	b.after(5*time.Millisecond).resend(false, 2, 11392, 1424, 7)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).data(true, 2, 100000, 0, 1424, 4, func(f *wire.DataFields) { f.Incoming = 40000 })
	b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	var extra []int
	for range 4 {
		extra = append(extra, b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown))
	}
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", id), id, extra...)
}

// TestResend021LateAfterClientForgot: the client said RPC_UNKNOWN for the
// RPC (it no longer has it), a request packet the network held up then
// re-created the RPC at the server, which asks for [2848, 4272); a client
// retransmission of [0, 1424) seen after that was sent before the client
// forgot the RPC (a restart) and delivered late: not judged at the
// server's link (the simulator's lossy all-to-all at full load showed 391
// such findings in host views), a violation on the client's own link,
// where nothing is late.
func TestResend021LateAfterClientForgot(t *testing.T) {
	const id = "HOMA-RESEND-021"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 5696, 40000, 4)
	b.after(5*time.Millisecond).resend(false, 2, 5696, 1424, 7)
	b.after(10*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).data(true, 2, 100000, 0, 1424, 4, func(f *wire.DataFields) { f.Incoming = 40000 })
	b.after(5*time.Millisecond).resend(false, 2, 2848, 1424, 7)
	late := b.after(10*time.Microsecond).data(true, 2, 100000, 0, 1424, 4, func(f *wire.DataFields) { f.Incoming = 40000; f.Retransmit = 1 })
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", id), id, 0, 0, 0, 0)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", id), id, late)
}

// TestResend012PastLength: the capture begins mid-RPC (its first DATA is
// at offset 10000 of a 20000-byte request), so what the server granted
// before it is unknown; a RESEND for [25000, 26424) still asks for bytes
// past the message_length every DATA carries, which no grant reaches
// (homa_request_retrans asks below msgin.granted, never past the length):
// a violation the capture's start does not excuse, nor a capture drop. A
// RESEND for [0, 10000), bytes the capture began after, is no violation.
func TestResend012PastLength(t *testing.T) {
	const id = "HOMA-RESEND-012"
	b := newTrace(t, wire.VersionCurrent)
	for off := uint32(10000); off < 18576; off += 1424 {
		b.after(time.Microsecond).data(true, 2, 20000, off, 1424, 4, func(f *wire.DataFields) { f.Incoming = 20000 })
	}
	b.after(10*time.Millisecond).resend(false, 2, 0, 10000, 7)
	past := b.after(10*time.Millisecond).resend(false, 2, 25000, 1424, 7)
	rep := b.check("linux", id)
	wantViolations(t, rep, id, past)
	if f := rep.Violations[0]; !strings.Contains(f.Why, "reaches past the message's end: its DATA give message_length 20000") {
		t.Errorf("finding %q", f.Why)
	}
	rep = checkDrops(b, id, 1, false)
	wantViolations(t, rep, id, past)
}

// TestResend024NextResendShowsUnsent: a client sends its 40000
// unscheduled bytes and 8544 bytes of a GRANT to 60000 (the packet at
// 47120 lies past what a 10000-byte skb started below 40000 could hold, so
// it got that GRANT), then takes a later, lower GRANT for its horizon and
// stops: it RESENDs for the response twice, 5 ms apart, with
// [48544, 60000) never sent. HomaModule's timer resets silent_ticks while tx_end is below
// msgout.granted (homa_timer_check_rpc), so the first RESEND was illegal,
// which the second shows on the client's link. A client that sent up to
// 60000 first passes; a capture elsewhere (which may miss DATA lost before
// it) does not judge it. Fails on the old rule (judged only at a later
// first transmission, which this client never sends).
func TestResend024NextResendShowsUnsent(t *testing.T) {
	build := func(sendAll bool) (*traceBuilder, int, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 70000, 0, 40000, 40000, 4)
		b.after(20*time.Microsecond).grant(false, 2, 60000, 0)
		b.after(time.Microsecond).grant(false, 2, 48544, 0)
		end := uint32(48544)
		if sendAll {
			end = 60000
		}
		b.after(10*time.Microsecond).message(true, 2, 70000, 40000, end, 40000, 0)
		first := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		second := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		return b, first, second
	}
	b, _, _ := build(true)
	wantClean(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-024"), "HOMA-RESEND-024")
	b, first, second := build(false)
	f := violationAt(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-024"), "HOMA-RESEND-024", second)
	if !slices.Contains(f.Frames, first) {
		t.Errorf("the violation names frames %v, want the first RESEND's %d among them", f.Frames, first)
	}
	wantViolations(t, b.check("linux", "HOMA-RESEND-024"), "HOMA-RESEND-024")
}
