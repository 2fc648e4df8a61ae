package spec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Timers in profile linux: tick 1 ms, resend_ticks 5, slack 2 ms, so a
// RESEND needs ≥ 2 ms of silence; response_timeout 20 ms.

// longComputation plays RTX-07 on main: a 100-byte request, then a server
// computation during which the client's RESEND {0, -1} is answered by BUSY
// every ~5 ms, then the response, NEED_ACK and ACK. It returns the RESENDs.
func (b *traceBuilder) longComputation(cid uint64, rounds int) []int {
	var rs []int
	b.data(true, cid, 100, 0, 100, 7, nil)
	for range rounds {
		rs = append(rs, b.after(5*time.Millisecond).resend(true, cid, 0, wire.ResendAll, 7))
		b.after(50*time.Microsecond).ctl(false, cid, wire.TypeBusy)
	}
	b.after(3*time.Millisecond).data(false, cid, 100, 0, 100, 7, nil)
	b.after(2*time.Millisecond).ctl(false, cid, wire.TypeNeedAck)
	b.after(30 * time.Microsecond).ack(cid)
	return rs
}

// lostPacket plays a 3000-byte request on main whose packet [1424, 2848)
// is lost: the server RESENDs it after 5 ticks and the client retransmits
// it at the RESEND's priority. It returns the RESEND and the
// retransmission.
func (b *traceBuilder) lostPacket(cid uint64) (resend, retx int) {
	b.data(true, cid, 3000, 0, 1424, 5, nil)
	b.data(true, cid, 3000, 2848, 152, 5, nil)
	resend = b.after(5*time.Millisecond).resend(false, cid, 1424, 1424, 7)
	retx = b.after(30*time.Microsecond).resent(true, cid, 3000, 1424, 1424, 7)
	return resend, retx
}

// clientRestart plays RTX-09 on main: the server lost a 3000-byte request (it
// restarted), the client's RESEND {0, -1} gets RPC_UNKNOWN and the client
// retransmits the request from offset 0 at its unscheduled priority 5 with
// retransmit=1; the server then answers. It returns the RPC_UNKNOWN.
func (b *traceBuilder) clientRestart(cid uint64) int {
	b.message(true, cid, 3000, 0, 3000, 3000, 5)
	b.after(5*time.Millisecond).resend(true, cid, 0, wire.ResendAll, 7)
	unknown := b.after(40*time.Microsecond).ctl(false, cid, wire.TypeRPCUnknown)
	b.after(30 * time.Microsecond)
	for off := uint32(0); off < 3000; off += 1424 {
		b.data(true, cid, 3000, off, int(min(1424, 3000-off)), 5, func(f *wire.DataFields) {
			f.Retransmit, f.SegOffset, f.Incoming = 1, off, 3000 // incoming = tx_end
		})
	}
	b.after(time.Millisecond).data(false, cid, 100, 0, 100, 7, nil)
	return unknown
}

// TestResend001SilenceBeforeResend: RESENDs from a client waiting on a long
// server computation (each 5 ms after the request or the last BUSY) and
// from a server missing a request packet (5 ms after the last DATA).
func TestResend001SilenceBeforeResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.longComputation(2, 4)
	b.lostPacket(4)
	rep := b.check("linux", "HOMA-RESEND-001")
	wantClean(t, rep, "HOMA-RESEND-001")
	wantCounts(t, rep, "HOMA-RESEND-001", 5, 5, 0, 0)
}

// TestResend001GrantWhileGapOpen: a 200000-byte request on main with a lost
// unscheduled packet. The server's FIFO grant (level 6) 0.5 ms before its
// resend round does not restart the silence, because the server is still
// missing granted bytes; the round is a gap RESEND and a tail RESEND for
// the newly granted bytes, 5 ms after the last DATA.
func TestResend001GrantWhileGapOpen(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 200000, 0, 2848, 40000, 4)
	b.message(true, 2, 200000, 4272, 40000, 40000, 4) // [2848, 4272) lost
	b.after(10*time.Microsecond).grant(false, 2, 120000, 0)
	b.after(10*time.Microsecond).message(true, 2, 200000, 40000, 120000, 40000, 0)
	b.after(4480*time.Microsecond).grant(false, 2, 170000, 6)      // FIFO grant; the client is stalled
	b.after(500*time.Microsecond).resend(false, 2, 2848, 1424, 7)  // the gap, first
	b.after(5*time.Microsecond).resend(false, 2, 120000, 50000, 7) // the tail, same round
	b.after(30*time.Microsecond).resent(true, 2, 200000, 2848, 1424, 7)
	b.message(true, 2, 200000, 120000, 170000, 40000, 6)
	rep := b.check("linux", "HOMA-RESEND-001")
	wantClean(t, rep, "HOMA-RESEND-001")
	wantCounts(t, rep, "HOMA-RESEND-001", 2, 2, 0, 0)
}

// TestResend001CaughtUpGrantThenResend: the server has all of U, grants
// more 3 ms later (the message was promoted when another completed), the
// client stays silent, and the server RESENDs the granted bytes 4.6 ms
// after its GRANT: silent_ticks counts from the GRANT. The client answers
// BUSY (RTX-06: nothing of it sent yet).
func TestResend001CaughtUpGrantThenResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(3*time.Millisecond).grant(false, 2, 80000, 0)
	b.after(4600*time.Microsecond).resend(false, 2, 40000, 40000, 7)
	b.after(30*time.Microsecond).ctl(true, 2, wire.TypeBusy)
	wantClean(t, b.check("linux", "HOMA-RESEND-001"), "HOMA-RESEND-001")
}

// TestResend001ResendRightAfterGrant reproduces BR-18 (@bf69583): a
// receiver whose silence counter kept running while it had received all it
// granted sends a GRANT and, at the next tick, a RESEND for the bytes the
// GRANT just authorised, although the sender could not have sent them yet.
// Second case: the RESEND follows a GRANT that incoming DATA triggered.
func TestResend001ResendRightAfterGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	grant := b.after(6*time.Millisecond).grant(false, 2, 80000, 0) // the last DATA was 6 ms ago
	early := b.after(20*time.Microsecond).resend(false, 2, 40000, 40000, 7)
	b.after(30*time.Microsecond).message(true, 2, 100000, 40000, 80000, 40000, 0)
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
	early2 := b.after(20*time.Microsecond).resend(false, 2, 80000, 20000, 7)
	b.after(30*time.Microsecond).message(true, 2, 100000, 80000, 100000, 40000, 0)
	rep := b.check("linux", "HOMA-RESEND-001")
	wantViolations(t, rep, "HOMA-RESEND-001", early, early2)
	f := rep.Violations[0]
	if len(f.Frames) != 1 || f.Frames[0] != grant || !strings.Contains(f.Why, "RESEND 20µs after its own GRANT (frame 30) authorised the bytes it asks for") {
		t.Errorf("finding %+v: want the GRANT frame %d", f, grant)
	}
}

// TestResend001BufferWakeup: on main a receiver that had no buffer space
// for a message sends RESEND {0, -1} at level num_priorities-2 as soon as
// space appears (GRANT-10), whatever the silence; the sender retransmits at
// that level. A timer RESEND (level 7) at the same moment is too early.
func TestResend001BufferWakeup(t *testing.T) {
	for _, c := range []struct {
		prio uint8
		bad  bool
	}{{6, false}, {7, true}} {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 10000, 0, 10000, 10000, 5) // dropped: no buffer
		r := b.after(time.Millisecond).resend(false, 2, 0, wire.ResendAll, c.prio)
		b.after(30 * time.Microsecond)
		for off := uint32(0); off < 10000; off += 1424 {
			b.resent(true, 2, 10000, off, int(min(1424, 10000-off)), c.prio)
		}
		rep := b.check("linux", "HOMA-RESEND-*")
		if c.bad {
			// A timer-priority RESEND 1 ms after data the capture saw:
			// the data may have been lost after the capture point, but
			// the RPC began at its first packet, 1 ms before: no
			// silence of resend_ticks fits (helper-144).
			wantViolations(t, rep, "HOMA-RESEND-001", r)
			continue
		}
		wantCounts(t, rep, "HOMA-RESEND-001", 0, 0, 0, 0) // not a timer RESEND
		for _, id := range []string{"HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-004"} {
			wantClean(t, rep, id)
		}
	}
}

// TestResend001EarlyResendUnknown reproduces BR-19 (@7f02e35): the client
// RESENDs 1 ms after its request, before the server has processed it; the
// server answers RPC_UNKNOWN, the client restarts, and the server runs the
// request twice (two responses from offset 0). The early RESEND is the
// violation; the RPC_UNKNOWN and the restart are what HomaModule does with
// a RESEND it cannot place, so HOMA-RESEND-006 and -007 hold.
func TestResend001EarlyResendUnknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	early := b.after(time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(50*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	b.after(50*time.Microsecond).resent(true, 2, 100, 0, 100, 7)
	b.after(200*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(200*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil) // executed again
	rep := b.check("linux", "HOMA-RESEND-*")
	wantViolations(t, rep, "HOMA-RESEND-001", early)
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "RESEND 1ms after the RPC's first packet; resend_ticks 5") {
		t.Errorf("why %q", f.Why)
	}
	for _, id := range []string{"HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-006", "HOMA-RESEND-007"} {
		wantClean(t, rep, id)
	}
}

// TestResend001NoHistory: a RESEND for an RPC the capture has not seen
// before, and one whose timestamp is before the packet it would count from.
func TestResend001NoHistory(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	first := b.resend(true, 2, 0, wire.ResendAll, 7)
	b.after(time.Second).data(true, 4, 100, 0, 100, 7, nil)
	back := b.after(-500*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7) // clock stepped back
	rep := b.check("linux", "HOMA-RESEND-001")
	wantInconclusive(t, rep, "HOMA-RESEND-001", first)
	wantInconclusive(t, rep, "HOMA-RESEND-001", back)
	wantCounts(t, rep, "HOMA-RESEND-001", 2, 0, 0, 2)
}

// TestResend002Answered: BUSY during a long computation, a retransmission
// for a lost packet, RPC_UNKNOWN from a server that lost the RPC.
func TestResend002Answered(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.longComputation(2, 3)
	b.lostPacket(4)
	b.clientRestart(6)
	rep := b.check("linux", "HOMA-RESEND-002")
	wantClean(t, rep, "HOMA-RESEND-002")
	wantCounts(t, rep, "HOMA-RESEND-002", 5, 5, 0, 0)
}

// TestResend002UnansweredProbe reproduces BR-23 (@fdf93eb) on linux_6.1.38:
// the server probes a stalled client with zero-length RESENDs every 5 ms
// and the client, having nothing to resend, answers nothing (it must send
// BUSY). The repeated probes do not postpone the first one's deadline.
func TestResend002UnansweredProbe(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 50000, 0, 10000, 10000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 20000, 0)
	first := b.after(5*time.Millisecond).resend(false, 2, 10000, 0, 7)
	for range 3 {
		b.after(5*time.Millisecond).resend(false, 2, 10000, 0, 7)
	}
	last := b.after(5500*time.Microsecond).resend(false, 2, 10000, 0, 7) // 20.5 ms after the first
	rep := b.check("linux-2024", "HOMA-RESEND-002", "slack=0s")
	wantViolations(t, rep, "HOMA-RESEND-002", first)
	wantInconclusive(t, rep, "HOMA-RESEND-002", last)
}

// TestResend002NoReplyForDiscardedID reproduces BR-48: the sender dropped
// a message the receiver still drives (the ns-3 model's sender timeout,
// BR-47) and has no RPC_UNKNOWN reply, so the receiver's RESENDs (and
// GRANTs) for the orphaned id go unanswered.
func TestResend002NoReplyForDiscardedID(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 200000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
	first := b.after(5*time.Millisecond).resend(false, 2, 40000, 60000, 7)
	b.after(5*time.Millisecond).grant(false, 2, 100000, 0)
	b.after(5*time.Millisecond).resend(false, 2, 40000, 60000, 7)
	b.after(5*time.Millisecond).resend(false, 2, 40000, 60000, 7)
	last := b.after(5500*time.Microsecond).resend(false, 2, 40000, 60000, 7) // 20.5 ms after the first
	rep := b.check("linux", "HOMA-RESEND-002", "slack=0s")
	wantViolations(t, rep, "HOMA-RESEND-002", first)
	wantInconclusive(t, rep, "HOMA-RESEND-002", last)
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "no DATA, BUSY or RPC_UNKNOWN answering the RESEND within 20ms") {
		t.Errorf("why %q", f.Why)
	}
}

// TestResend002LateBusy: a BUSY 25 ms after the RESEND, with nothing in
// between, is too late.
func TestResend002LateBusy(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	r := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(25*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	inc := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	rep := b.check("linux", "HOMA-RESEND-002")
	wantViolations(t, rep, "HOMA-RESEND-002", r)
	wantInconclusive(t, rep, "HOMA-RESEND-002", inc)
}

// TestResend003RequestedRetransmission: retransmissions after a RESEND and
// the client restart after RPC_UNKNOWN.
func TestResend003RequestedRetransmission(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.lostPacket(2)
	b.clientRestart(4)
	rep := b.check("linux", "HOMA-RESEND-003")
	wantClean(t, rep, "HOMA-RESEND-003")
	wantCounts(t, rep, "HOMA-RESEND-003", 4, 4, 0, 0)
}

// TestResend003ResendAllGrant2024: linux_6.1.38 wakes a message that waited
// for buffer space with a GRANT carrying resend_all; the sender retransmits
// everything it sent (retransmit=1, at the GRANT's priority) with no
// RESEND (homa_grant_pkt → homa_resend_data).
func TestResend003ResendAllGrant2024(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 30000, 0, 10000, 10000, 4) // dropped: no buffer
	b.after(2*time.Millisecond).emit(false, 7, &wire.GrantFields{Common: wire.CommonFields{SenderID: sid(2, false)},
		Offset: 20000, Priority: 0, ResendAll: 1}, nil)
	b.after(30 * time.Microsecond)
	for off := uint32(0); off < 10000; off += 1424 {
		b.resent(true, 2, 30000, off, int(min(1424, 10000-off)), 0)
	}
	b.message(true, 2, 30000, 10000, 20000, 10000, 0)
	rep := b.check("linux-2024", "HOMA-RESEND-003")
	wantClean(t, rep, "HOMA-RESEND-003")
	wantCounts(t, rep, "HOMA-RESEND-003", 8, 8, 0, 0)
}

// TestResend003UnrequestedRetransmit: a client retransmits a request packet
// on its own (a TCP-like retransmission timer), and a server takes the
// client's RPC_UNKNOWN (the client lost the RPC) for a restart and
// retransmits, where HomaModule discards the RPC.
func TestResend003UnrequestedRetransmit(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 3000, 0, 1424, 5, nil)
	b.data(true, 2, 3000, 2848, 152, 5, nil)
	own := b.after(3*time.Millisecond).resent(true, 2, 3000, 1424, 1424, 5)
	b.data(true, 4, 3000, 0, 1424, 5, nil)
	b.after(5*time.Millisecond).resend(false, 4, 1424, 1576, 7)
	b.after(30*time.Microsecond).ctl(true, 4, wire.TypeRPCUnknown)
	bogus := b.after(30*time.Microsecond).resent(false, 4, 100, 0, 100, 7)
	rep := b.check("linux", "HOMA-RESEND-003")
	wantViolations(t, rep, "HOMA-RESEND-003", own, bogus)
}

// TestResend003BR26OutOfScope: BR-26 (@c67deb4) — a RESEND reaching into
// packets the sender's pacer still held; the sender sent them as
// retransmissions and then again as first transmissions. Every
// retransmission here follows a RESEND, so HOMA-RESEND-003 holds: the
// fault is HOMA-RESEND-011's (TestResend011RetransmitBeforeFirst).
func TestResend003BR26OutOfScope(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 80000, 0)
	b.message(true, 2, 100000, 40000, 42848, 40000, 0) // the pacer holds the rest
	b.after(5*time.Millisecond).resend(false, 2, 42848, 37152, 7)
	b.after(30*time.Microsecond).resent(true, 2, 100000, 42848, 1424, 7)           // never sent before
	b.after(100*time.Microsecond).message(true, 2, 100000, 42848, 44272, 40000, 0) // and again
	wantClean(t, b.check("linux", "HOMA-RESEND-003"), "HOMA-RESEND-003")
}

// TestResend004RetransmitAtResendPriority: retransmissions at the RESEND's
// level 7, at level 6 for the buffer-wakeup RESEND, and a client restart at
// its unscheduled level after RPC_UNKNOWN although the server RESENT at 7
// before it lost the RPC.
func TestResend004RetransmitAtResendPriority(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.lostPacket(2)
	// The server restarts; the client, waiting for its response, RESENDs,
	// gets RPC_UNKNOWN and restarts its request at level 5.
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(40*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	b.after(30 * time.Microsecond)
	for off := uint32(0); off < 3000; off += 1424 {
		b.data(true, 2, 3000, off, int(min(1424, 3000-off)), 5, func(f *wire.DataFields) {
			f.Retransmit, f.SegOffset, f.Incoming = 1, off, 3000
		})
	}
	b.message(true, 4, 10000, 0, 10000, 10000, 5)
	b.after(time.Millisecond).resend(false, 4, 0, wire.ResendAll, 6)
	b.after(30*time.Microsecond).resent(true, 4, 10000, 0, 1424, 6)
	rep := b.check("linux", "HOMA-RESEND-004")
	wantClean(t, rep, "HOMA-RESEND-004")
	wantCounts(t, rep, "HOMA-RESEND-004", 2, 2, 0, 0) // the restart is not judged
}

// retransmitAtLevel0 plays a 100000-byte request whose scheduled packet
// [41424, 42848) is lost; the server RESENDs it at level 7 and the client
// retransmits it at the message's scheduled level 0. It returns the
// retransmission's frame.
func (b *traceBuilder) retransmitAtLevel0() int {
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
	b.message(true, 2, 100000, 40000, 41424, 40000, 0)
	b.message(true, 2, 100000, 42848, 100000, 40000, 0) // [41424, 42848) lost
	b.after(5*time.Millisecond).resend(false, 2, 41424, 1424, 7)
	return b.after(30*time.Microsecond).resent(true, 2, 100000, 41424, 1424, 0)
}

// TestResend004WrongPriority: a lost scheduled packet retransmitted at the
// message's scheduled level 0 instead of the RESEND's level 7 (CTRL-02).
func TestResend004WrongPriority(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	bad := b.retransmitAtLevel0()
	rep := b.check("linux", "HOMA-RESEND-004")
	wantViolations(t, rep, "HOMA-RESEND-004", bad)
	if f := rep.Violations[0]; f.Why != "retransmitted DATA at priority 0; the RESEND asked for 7" {
		t.Errorf("why %q", f.Why)
	}
}

// TestResend005BusyAnswersResend: the server's BUSYs during a long
// computation and a client's BUSY to a RESEND for bytes it has not sent
// for the first time yet (RTX-06).
func TestResend005BusyAnswersResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.longComputation(2, 3)
	b.message(true, 4, 100000, 0, 40000, 40000, 4)
	b.after(3*time.Millisecond).grant(false, 4, 80000, 0)
	b.after(5*time.Millisecond).resend(false, 4, 40000, 40000, 7)
	b.after(30*time.Microsecond).ctl(true, 4, wire.TypeBusy)
	rep := b.check("linux", "HOMA-RESEND-005")
	wantClean(t, rep, "HOMA-RESEND-005")
	wantCounts(t, rep, "HOMA-RESEND-005", 4, 4, 0, 0)
}

// TestResend005UnsolicitedBusy: a server sends BUSY as a keep-alive with no
// RESEND, and one after its own RESEND (which asks the client, not it).
func TestResend005UnsolicitedBusy(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	keepalive := b.after(3*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	b.data(true, 4, 3000, 0, 1424, 5, nil)
	b.after(5*time.Millisecond).resend(false, 4, 1424, 1576, 7)
	wrongSide := b.after(30*time.Microsecond).ctl(false, 4, wire.TypeBusy)
	rep := b.check("linux", "HOMA-RESEND-005")
	wantViolations(t, rep, "HOMA-RESEND-005", keepalive, wrongSide)
	if f := rep.Violations[1]; f.Why != "BUSY with no earlier RESEND from the peer for this RPC" {
		t.Errorf("why %q", f.Why)
	}
}

// TestResend006UnknownAnswersResend: RPC_UNKNOWN from a restarted server
// answering the client's RESEND, and from a client that aborted its RPC
// answering the server's RESEND for the rest of the request (ABT-01).
func TestResend006UnknownAnswersResend(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.clientRestart(2)
	b.data(true, 4, 3000, 0, 1424, 5, nil) // then the application aborts the RPC
	b.after(5*time.Millisecond).resend(false, 4, 1424, 1576, 7)
	b.after(30*time.Microsecond).ctl(true, 4, wire.TypeRPCUnknown)
	rep := b.check("linux", "HOMA-RESEND-006")
	wantClean(t, rep, "HOMA-RESEND-006")
	wantCounts(t, rep, "HOMA-RESEND-006", 2, 2, 0, 0)
}

// TestResend006UnsolicitedUnknown: RPC_UNKNOWN for an id the client never
// used, and one from a server after packets of its own only (the capture
// shows its response, but no packet from the client it could answer).
func TestResend006UnsolicitedUnknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	// A second later, past timeout_ticks: no RPC under way before the
	// capture began can still be answered (CauseCaptureStart).
	stray := b.after(time.Second).ctl(false, 4, wire.TypeRPCUnknown)
	b.data(false, 6, 100, 0, 100, 7, nil)
	own := b.after(time.Millisecond).ctl(false, 6, wire.TypeRPCUnknown)
	rep := b.check("linux", "HOMA-RESEND-006")
	wantViolations(t, rep, "HOMA-RESEND-006", stray, own)
}

// TestResend007ClientRestart: RTX-09, the client restarts from offset 0.
func TestResend007ClientRestart(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.clientRestart(2)
	b.after(2*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
	b.after(30 * time.Microsecond).ack(2)
	rep := b.check("linux", "HOMA-RESEND-*")
	wantClean(t, rep, "HOMA-RESEND-007")
	wantCounts(t, rep, "HOMA-RESEND-007", 1, 1, 0, 0)
	for _, id := range []string{"HOMA-RESEND-001", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-006"} {
		wantClean(t, rep, id)
	}
	// RPC_UNKNOWN once response DATA has arrived does not restart (the
	// client ignores it), so it asks nothing.
	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 4, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(false, 4, 3000, 0, 1424, 5, nil)
	b.after(5*time.Millisecond).resend(true, 4, 1424, 1576, 7)
	b.after(30*time.Microsecond).ctl(false, 4, wire.TypeRPCUnknown)
	wantCounts(t, b.check("linux", "HOMA-RESEND-007"), "HOMA-RESEND-007", 0, 0, 0, 0)
}

// TestResend007ClientIgnoresUnknown reproduces BR-48's livelock: the server
// no longer knows the RPC and answers each RESEND with RPC_UNKNOWN, but the
// client neither restarts nor gives up and keeps RESENDing.
func TestResend007ClientIgnoresUnknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	var unknowns []int
	for range 5 {
		b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		unknowns = append(unknowns, b.after(50*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown))
	}
	rep := b.check("linux", "HOMA-RESEND-00[27]", "slack=0s")
	// The 5th RESEND comes 20.15 ms after the first RPC_UNKNOWN; the last
	// RPC_UNKNOWN is still open when the capture ends.
	wantViolations(t, rep, "HOMA-RESEND-007", unknowns[0])
	wantInconclusive(t, rep, "HOMA-RESEND-007", unknowns[4])
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "no request DATA at offset 0 with retransmit=1 (client restart) within 20ms") {
		t.Errorf("why %q", f.Why)
	}
	wantClean(t, rep, "HOMA-RESEND-002") // every RESEND was answered
}

// TestResend007ScaledTimers: with timers scaled up (resend_interval 50
// ticks, as the shared real captures ran), a client that ignores
// RPC_UNKNOWN shows it still holds the RPC only by a timer RESEND 50 ms
// later: the obligation waits that long, so the missing restart is a
// violation, not excused as an RPC the application ended.
func TestResend007ScaledTimers(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	var unknowns []int
	for range 3 {
		b.after(50*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
		unknowns = append(unknowns, b.after(50*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown))
	}
	rep := b.check("linux", "HOMA-RESEND-007", "resend_ticks=50", "resend_interval=50", "timeout_ticks=1000")
	wantViolations(t, rep, "HOMA-RESEND-007", unknowns[0]) // the later ones are open when the capture ends
	wantInconclusive(t, rep, "HOMA-RESEND-007", unknowns[2])
}

// TestResend007LateRestart: the restart comes 25 ms after RPC_UNKNOWN.
func TestResend007LateRestart(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	unknown := b.after(50*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	b.after(25*time.Millisecond).resent(true, 2, 100, 0, 100, 7)
	b.data(true, 4, 100, 0, 100, 7, nil)
	b.after(5*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7)
	open := b.after(50*time.Microsecond).ctl(false, 4, wire.TypeRPCUnknown) // the capture ends
	rep := b.check("linux", "HOMA-RESEND-007")
	wantViolations(t, rep, "HOMA-RESEND-007", unknown)
	wantInconclusive(t, rep, "HOMA-RESEND-007", open)
}

// stalledRequest plays a 200000-byte request on main whose unscheduled
// packet [2848, 4272) is lost; the server grants to 100000 and the
// client's packets beyond 60000, like its answers to RESENDs, are lost
// before the capture point. The server's timer then sends RESEND rounds
// of two, the gap and the tail [60000, 100000), at the given times after
// the last DATA. It returns the first RESEND of each round.
func (b *traceBuilder) stalledRequest(cid uint64, rounds ...time.Duration) []int {
	b.message(true, cid, 200000, 0, 2848, 40000, 4)
	b.message(true, cid, 200000, 4272, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, cid, 100000, 0)
	b.after(10*time.Microsecond).message(true, cid, 200000, 40000, 60000, 40000, 0)
	var firsts []int
	var at time.Duration
	for _, r := range rounds {
		b.after(r - at)
		firsts = append(firsts, b.resend(false, cid, 2848, 1424, 7))
		b.after(5*time.Microsecond).resend(false, cid, 60000, 40000, 7)
		at = r + 5*time.Microsecond
	}
	return firsts
}

// TestResend008Rounds: RESEND rounds of two every 5 ms (and one after
// 4.1 ms, inside the tick of tolerance), a client waiting on a long
// computation whose rounds BUSY separates (not judged: the silence
// restarts, HOMA-RESEND-001), and a client that RESENDs at once on each
// NEED_ACK (main's homa_need_ack_pkt; not timer rounds, not judged).
func TestResend008Rounds(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.stalledRequest(2, 5*time.Millisecond, 10*time.Millisecond, 14100*time.Microsecond)
	b.longComputation(4, 4)
	b.data(true, 6, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(false, 6, 3000, 0, 1424, 5, nil)
	b.data(false, 6, 3000, 2848, 152, 5, nil) // [1424, 2848) lost
	for range 3 {                             // the server's retransmissions are lost too
		b.after(time.Millisecond).ctl(false, 6, wire.TypeNeedAck)
		b.after(30*time.Microsecond).resend(true, 6, 1424, 1424, 7)
	}
	rep := b.check("linux", "HOMA-RESEND-008")
	wantClean(t, rep, "HOMA-RESEND-008")
	wantCounts(t, rep, "HOMA-RESEND-008", 2, 2, 0, 0) // RPC 2's second and third rounds
}

// TestResend008Storm reproduces BR-24 (@12a06d7, @35c09b5): a receiver
// whose RESEND rounds come every tick instead of every resend_interval
// ticks, and one that repeats a round's RESEND within the tick (the
// offsets of a round ascend, so a repeat starts a new round). With
// resend_interval 10 the 5 ms rounds of a correct run are too early too.
func TestResend008Storm(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	storm := b.stalledRequest(2, 5*time.Millisecond, 6*time.Millisecond, 7*time.Millisecond)
	b.stalledRequest(4, 5*time.Millisecond)
	again := b.after(300*time.Microsecond).resend(false, 4, 2848, 1424, 7) // the gap again
	rep := b.check("linux", "HOMA-RESEND-008")
	wantViolations(t, rep, "HOMA-RESEND-008", storm[1], storm[2], again)
	f := rep.Violations[0]
	if len(f.Frames) != 1 || f.Frames[0] != storm[0] || f.Why != fmt.Sprintf("RESEND round 1ms after the previous round (frame %d) with no DATA, "+
		"GRANT or BUSY from the peer in between; resend_interval 5 (tick 1ms) needs ≥ 4ms less jitter 200µs", storm[0]) {
		t.Errorf("finding %+v: want the previous round's frame %d", f, storm[0])
	}

	b = newTrace(t, wire.VersionCurrent)
	rounds := b.stalledRequest(2, 5*time.Millisecond, 10*time.Millisecond, 15*time.Millisecond)
	wantClean(t, b.check("linux", "HOMA-RESEND-008"), "HOMA-RESEND-008")
	wantViolations(t, b.check("linux", "HOMA-RESEND-008", "resend_interval=10"), "HOMA-RESEND-008", rounds[1], rounds[2])
}

// TestResend008SwappedRound: a round's two RESENDs (2848 then 60000)
// seen in the other order 5 µs apart, as a switch that reordered them
// would show: at a tap the second is not a new round 5 µs later but
// possibly the network's swap (inconclusive); on the receiver's own link,
// where the order is the sender's, it is a violation.
func TestResend008SwappedRound(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.stalledRequest(2, 5*time.Millisecond)
	b.after(5*time.Millisecond).resend(false, 2, 60000, 40000, 7)
	swapped := b.after(5*time.Microsecond).resend(false, 2, 2848, 1424, 7)
	rep := b.check("linux", "HOMA-RESEND-008")
	wantViolations(t, rep, "HOMA-RESEND-008")
	wantInconclusive(t, rep, "HOMA-RESEND-008", swapped)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-008"), "HOMA-RESEND-008", swapped)
}

// TestResend008StepBack: a round whose timestamp is before the previous
// round's is inconclusive.
func TestResend008StepBack(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.stalledRequest(2, 5*time.Millisecond)
	back := b.after(-2*time.Millisecond).resend(false, 2, 2848, 1424, 7)
	rep := b.check("linux", "HOMA-RESEND-008")
	wantInconclusive(t, rep, "HOMA-RESEND-008", back)
	wantCounts(t, rep, "HOMA-RESEND-008", 1, 0, 0, 1)
}

// deadServer plays a 100-byte request on main to a server that never
// answers: the client RESENDs {0, -1} every 5 ms, at the given number of
// rounds. It returns the RESENDs.
func (b *traceBuilder) deadServer(cid uint64, rounds int) []int {
	b.data(true, cid, 100, 0, 100, 7, nil)
	var rs []int
	for range rounds {
		rs = append(rs, b.after(5*time.Millisecond).resend(true, cid, 0, wire.ResendAll, 7))
	}
	return rs
}

// TestResend009Timeout: a client whose server went silent RESENDs 19 times
// (silent_ticks 5..95) and then aborts the RPC (no packet); a long
// computation whose BUSYs restart the silence goes on for 300 ms; a
// receiver that waited 150 ms for buffer space RESENDs 5 ms after its
// buffer-wakeup RESEND (its silence count was held at 0).
func TestResend009Timeout(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.deadServer(2, 19)
	b.longComputation(4, 60)
	b.message(true, 6, 10000, 0, 10000, 10000, 5) // dropped: no buffer
	b.after(150*time.Millisecond).resend(false, 6, 0, wire.ResendAll, 6)
	b.after(5*time.Millisecond).resend(false, 6, 0, wire.ResendAll, 7) // the wakeup went unanswered
	rep := b.check("linux", "HOMA-RESEND-009")
	wantClean(t, rep, "HOMA-RESEND-009")
	wantCounts(t, rep, "HOMA-RESEND-009", 19+60+1, 19+60+1, 0, 0)
}

// TestResend009NoAbort reproduces BR-48 and BR-50's long tail: a client
// that neither gets an answer nor gives up keeps RESENDing past
// timeout_ticks (100 ms, 2 ms slack); RPC_UNKNOWN answers do not reset the
// silence (only DATA, GRANT and BUSY do), so a client that ignores them is
// caught too. With the captures' timeout_ticks 1000 the same trace passes.
func TestResend009NoAbort(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	// The 30th comes 150 ms after the request: timeout_ticks stretched by
	// timer_drift 0.5 (HomaModule's ticks run long under load); the
	// 31st, at 155 ms, is past that and the slack (2 ms).
	rs := b.deadServer(2, 34)
	b.data(true, 4, 100, 0, 100, 7, nil)
	var unknowns []int
	for range 31 {
		unknowns = append(unknowns, b.after(5*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7))
		b.after(50*time.Microsecond).ctl(false, 4, wire.TypeRPCUnknown)
	}
	rep := b.check("linux", "HOMA-RESEND-009")
	wantViolations(t, rep, "HOMA-RESEND-009", rs[30], rs[31], rs[32], rs[33], unknowns[30])
	if f := rep.Violations[0]; f.Why != "RESEND 155ms after the RPC's first packet; timeout_ticks 100 (tick 1ms) abort the RPC after 100ms, stretched by timer_drift 0.5 to 150ms, plus slack 2ms" {
		t.Errorf("why %q", f.Why)
	}
	wantClean(t, b.check("linux", "HOMA-RESEND-009", "timeout_ticks=1000"), "HOMA-RESEND-009")
}

// TestResend009NoHistory: a RESEND for an RPC the capture has not seen,
// and one timestamped before the packet its silence counts from.
func TestResend009NoHistory(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	first := b.resend(true, 2, 0, wire.ResendAll, 7)
	b.after(time.Second).data(true, 4, 100, 0, 100, 7, nil)
	back := b.after(-500*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7)
	rep := b.check("linux", "HOMA-RESEND-009")
	wantInconclusive(t, rep, "HOMA-RESEND-009", first)
	wantInconclusive(t, rep, "HOMA-RESEND-009", back)
	wantCounts(t, rep, "HOMA-RESEND-009", 2, 0, 0, 2)
}

// TestResend010011NoDuplicates: a retransmission after RESEND, a client
// restart after RPC_UNKNOWN (retransmit=1 from offset 0), a 500000-byte
// request granted in rounds, a server re-created by a request packet that
// arrives after the ACK (facts AMO-01: its response is new state, not a
// duplicate), and a packet held up before the capture point long enough
// for its retransmission to pass first (the bytes lay below later first
// transmissions, so the sender had sent them).
func TestResend010011NoDuplicates(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 10, 3000, 0, 1424, 5, nil)
	b.data(true, 10, 3000, 2848, 152, 5, nil) // [1424, 2848) is held up
	b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
	b.after(30*time.Microsecond).resent(true, 10, 3000, 1424, 1424, 7)
	b.after(10*time.Microsecond).data(true, 10, 3000, 1424, 1424, 5, nil) // the original, late
	b.lostPacket(2)
	b.clientRestart(4)
	b.xferRequest(6, 500000, 40000, 200000, 4, 0)
	b.data(true, 8, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(false, 8, 100, 0, 100, 7, nil)
	b.after(2*time.Millisecond).ctl(false, 8, wire.TypeNeedAck)
	b.after(30 * time.Microsecond).ack(8)
	b.after(time.Millisecond).data(false, 8, 100, 0, 100, 7, nil) // a late request copy re-created the RPC
	rep := b.check("linux", "HOMA-RESEND-01*")
	for _, id := range []string{"HOMA-RESEND-010", "HOMA-RESEND-011"} {
		wantClean(t, rep, id)
	}
}

// TestResend010RepeatedFirstTransmission reproduces BR-45
// (PlatformLab/Homa@0b12835): after a GRANT the sender transmits the same
// packet three times with retransmit=0 and skips the others. On the
// sender's link every repeat is a violation; at a tap between the hosts the
// first repeat may be the network's duplicate (inconclusive), the second
// cannot.
func TestResend010RepeatedFirstTransmission(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 44272, 0)
	b.after(10*time.Microsecond).data(true, 2, 100000, 40000, 1424, 0, nil)
	dup1 := b.data(true, 2, 100000, 40000, 1424, 0, nil)
	dup2 := b.data(true, 2, 100000, 40000, 1424, 0, nil)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-01*")
	wantViolations(t, rep, "HOMA-RESEND-010", dup1, dup2)
	wantViolations(t, rep, "HOMA-RESEND-011")
	if f := rep.Violations[0]; f.Why != "first-transmission DATA [40000, 41424) repeats 1424 bytes already sent with retransmit=0" {
		t.Errorf("why %q", f.Why)
	}
	rep = b.check("linux", "HOMA-RESEND-01*")
	wantViolations(t, rep, "HOMA-RESEND-010", dup2)
	wantDowngraded(t, rep, "HOMA-RESEND-010", dup1, CauseDuplicate)
	if rep.Downgraded() != 1 {
		t.Errorf("downgrades %+v, want one", rep.Downgrades)
	}
}

// TestResend011RetransmitBeforeFirst reproduces BR-26 (@c67deb4): a RESEND
// reaching into packets the sender's pacer still held; the sender sent
// them as retransmissions and then again as first transmissions. The
// linux-2024 profile does not judge it: linux_6.1.38 does this (see the
// rule's source; the shared capture linux-6.1 c shows it).
func TestResend011RetransmitBeforeFirst(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 80000, 0)
	b.message(true, 2, 100000, 40000, 42848, 40000, 0) // the pacer holds the rest
	b.after(5*time.Millisecond).resend(false, 2, 42848, 37152, 7)
	b.after(30*time.Microsecond).resent(true, 2, 100000, 42848, 1424, 7) // never sent before
	// More than slack later: not a first transmission another core had
	// begun when the RESEND came (TestResend011RetransmitRacesOriginal).
	again := b.after(3*time.Millisecond).message(true, 2, 100000, 42848, 45696, 40000, 0)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-01*")
	wantViolations(t, rep, "HOMA-RESEND-011", again[0])
	wantViolations(t, rep, "HOMA-RESEND-010")
	if f := rep.Violations[0]; f.Why != "first-transmission DATA [42848, 44272) repeats 1424 bytes the sender retransmitted before it had sent them" {
		t.Errorf("why %q", f.Why)
	}
	// Away from the sender's link the retransmission (priority 7) may
	// have overtaken first transmissions queued at priority 0.
	rep = b.check("linux", "HOMA-RESEND-01*")
	wantViolations(t, rep, "HOMA-RESEND-011")
	wantDowngraded(t, rep, "HOMA-RESEND-011", again[0], CauseReorder)

	b = newTrace(t, wire.Version2024)
	b.message(true, 2, 30000, 0, 10000, 10000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 20000, 0)
	b.after(5*time.Millisecond).resend(false, 2, 10000, 10000, 7)
	b.after(30*time.Microsecond).resent(true, 2, 30000, 10000, 1424, 7)
	b.after(100*time.Microsecond).message(true, 2, 30000, 10000, 11424, 10000, 0)
	rep = b.check("linux-2024", "HOMA-RESEND-01*")
	wantClean(t, rep, "HOMA-RESEND-010")
	for _, rr := range rep.Rules {
		if rr.ID == "HOMA-RESEND-011" {
			t.Errorf("HOMA-RESEND-011 judged a linux-2024 trace: %+v", rr)
		}
	}
}

// TestResend007ClientTimedOut: under overload a client waits timeout_ticks
// without DATA, GRANT or BUSY from the server, so its timer aborts the RPC
// (no packet); the server's answers to its queued RESENDs (a BUSY, then
// RPC_UNKNOWN once the server's own RPC timed out) reach a client that no
// longer has the RPC and discards them (homa_dispatch_pkts): no restart is
// owed, and the capture cannot tell, so it is inconclusive. A silence
// short of timeout_ticks still owes the restart.
func TestResend007ClientTimedOut(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	for range 19 {
		b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	}
	// 120 ms after the request: the client timed out at 100 ms; the BUSY
	// comes too late to show the RPC alive.
	b.after(25*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	late := b.after(5*time.Millisecond).ctl(false, 2, wire.TypeRPCUnknown)
	// Short of timeout_ticks: 50 ms of silence, then RPC_UNKNOWN.
	b.after(time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	for range 10 {
		b.after(5*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7)
	}
	short := b.after(50*time.Microsecond).ctl(false, 4, wire.TypeRPCUnknown)
	// The client still holds the RPC: its timer keeps asking.
	for range 6 {
		b.after(5*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7)
	}
	// Short of timeout_ticks too, but the client sends nothing more for
	// RPC 8: its application may have ended it (homa_rpc_abort).
	b.after(time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)
	for range 10 {
		b.after(5*time.Millisecond).resend(true, 8, 0, wire.ResendAll, 7)
	}
	ended := b.after(50*time.Microsecond).ctl(false, 8, wire.TypeRPCUnknown)
	b.after(30 * time.Millisecond)
	b.data(true, 6, 100, 0, 100, 7, nil) // the capture runs past the deadlines
	rep := b.check("linux", "HOMA-RESEND-007", "slack=0s")
	wantViolations(t, rep, "HOMA-RESEND-007", short)
	wantInconclusive(t, rep, "HOMA-RESEND-007", late)
	wantInconclusive(t, rep, "HOMA-RESEND-007", ended)
	for _, f := range rep.Inconclusive {
		if f.Frame == ended && !strings.Contains(f.Why, "sent nothing for the RPC") {
			t.Errorf("inconclusive why %q", f.Why)
		}
	}
	for _, f := range rep.Inconclusive {
		if f.Frame == late && !strings.Contains(f.Why, "may have aborted the RPC") {
			t.Errorf("inconclusive why %q", f.Why)
		}
	}
}

// TestResend001CaptureStartsMidRPC: a capture that begins inside an RPC
// (its first packet there is request DATA past offset 0) shows the
// client's RESEND 300 us later, nothing from the server between. The RPC
// began before the capture, so the client may have heard nothing from the
// server for long before: the silence counted from the RPC's first packet
// in the capture says nothing (inconclusive, capture start), while the
// same RESEND at an RPC the capture shows from its first byte is a
// violation.
func TestResend001CaptureStartsMidRPC(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100000, 50000, 1424, 7, nil)
	early := b.after(300*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7)
	rep := b.check("linux", "HOMA-RESEND-001")
	wantDowngraded(t, rep, "HOMA-RESEND-001", early, CauseCaptureStart)

	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100000, 0, 1424, 7, nil)
	early = b.after(300*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7)
	rep = b.check("linux", "HOMA-RESEND-001")
	wantViolations(t, rep, "HOMA-RESEND-001", early)
}

// TestResend017ClientIgnoresUnknown: RTX-09 on the client's side. The
// server forgot the RPC while sending its response; told RPC_UNKNOWN, the
// client, which holds part of the response, ignores it: each of its later
// RESENDs for the response is judged and passes. A client that restarts
// its request instead (DATA from offset 0 again) violates the rule.
func TestResend017ClientIgnoresUnknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(50*time.Microsecond).message(false, 2, 30000, 0, 4272, 30000, 4)
	b.after(5*time.Millisecond).resend(true, 2, 4272, 30000-4272, 7) // before the RPC_UNKNOWN: not judged
	b.after(20*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	b.after(5*time.Millisecond).resend(true, 2, 4272, 30000-4272, 7)
	b.after(5*time.Millisecond).resend(true, 2, 4272, 30000-4272, 7)
	rep := b.check("linux", "HOMA-RESEND-017")
	wantCounts(t, rep, "HOMA-RESEND-017", 2, 2, 0, 0)

	restart := b.after(20*time.Microsecond).resent(true, 2, 100, 0, 100, 7)
	rep = b.check("linux", "HOMA-RESEND-017")
	wantViolations(t, rep, "HOMA-RESEND-017", restart)
	wantCounts(t, rep, "HOMA-RESEND-017", 3, 2, 1, 0)
}

// TestResend001CrossedPeerPacket: a client waiting for GRANTs 20 ms
// sends RESEND {0, -1} 300 µs after the server's GRANT. With a reaction
// time of 1 ms (a real-time testbed's: the tester stamps its GRANT as it
// sends it) the two may have crossed, the GRANT not yet processed when
// the client's timer decided, so the finding is inconclusive (the silence
// before the GRANT was long enough); with none (a capture whose order is
// the hosts' own, as the simulator's) or the profile's 200 µs it is a
// violation. A RESEND 300 µs after a GRANT that came 1 ms after the one
// before it is early whichever it counts from.
func TestResend001CrossedPeerPacket(t *testing.T) {
	crossed := func() *traceBuilder {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 30000, 0, 10000, 10000, 4)
		b.after(20*time.Millisecond).grant(false, 2, 20000, 0)
		b.after(300*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7)
		b.after(10*time.Microsecond).message(true, 2, 30000, 10000, 20000, 10000, 0)
		return b
	}
	rep := crossed().check("linux", "HOMA-RESEND-001", "reaction=1ms")
	wantCounts(t, rep, "HOMA-RESEND-001", 1, 0, 0, 1)
	if why := rep.Inconclusive[0].Why; !strings.Contains(why, "may not have reached") || !strings.Contains(why, "20.3ms after the packet before it") {
		t.Errorf("inconclusive: %q", why)
	}
	wantCounts(t, crossed().check("linux", "HOMA-RESEND-001", "reaction=0s"), "HOMA-RESEND-001", 1, 0, 1, 0)
	wantCounts(t, crossed().check("linux", "HOMA-RESEND-001"), "HOMA-RESEND-001", 1, 0, 1, 0)
	// In a capture of packets as delivered the RESEND's stamp is its
	// arrival: queues may have held it up to slack (2 ms) after it left,
	// so it may have crossed the GRANT (helper-182: RESENDs 4-21 µs after
	// the peer's DATA in a simulated overload's delivered.pcapng).
	rep = crossed().checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-RESEND-001", "reaction=0s")
	wantCounts(t, rep, "HOMA-RESEND-001", 1, 0, 0, 1)
	// So on the server's link, which holds the RESEND as delivered (and
	// the GRANT as sent, before it reached the client); on the client's,
	// which holds both as the client met them, it stays a violation.
	b := crossed()
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-001", "reaction=0s"), "HOMA-RESEND-001", 1, 0, 0, 1)
	wantCounts(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-001", "reaction=0s"), "HOMA-RESEND-001", 1, 0, 1, 0)

	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 30000, 0, 10000, 10000, 4)
	b.after(time.Millisecond).grant(false, 2, 12000, 0)
	b.after(10*time.Microsecond).message(true, 2, 30000, 10000, 12000, 10000, 0)
	b.after(time.Millisecond).grant(false, 2, 14000, 0)
	early := b.after(300*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7)
	wantViolations(t, b.check("linux", "HOMA-RESEND-001", "reaction=1ms"), "HOMA-RESEND-001", early)
}

// TestResend010RepeatAfterAck: a client whose RPC ended (acknowledged) and
// that sends its request's bytes again with retransmit=0 repeats them: a
// copy 5 ms after the ack (offset 0) and one of a later segment 30 ms
// after are violations (the trace had forgotten what the client sent at
// the ack, so both passed; helper-174's dup-late-current). An offset-0
// DATA more than response_timeout after the ack begins a new RPC with the
// id, which HOMA-ID-004 judges, not this rule.
func TestResend010RepeatAfterAck(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 10, 3000, 0, 1424, 7, nil)
	b.data(true, 10, 3000, 1424, 1576, 7, nil)
	b.after(time.Millisecond).data(false, 10, 100, 0, 100, 7, nil)
	b.after(2*time.Millisecond).ctl(false, 10, wire.TypeNeedAck)
	b.after(30 * time.Microsecond).ack(10)
	early := b.after(5*time.Millisecond).data(true, 10, 3000, 0, 1424, 7, nil)
	late := b.after(25*time.Millisecond).data(true, 10, 3000, 1424, 1576, 7, nil)
	b.after(10*time.Millisecond).data(true, 10, 3000, 0, 1424, 7, nil) // the id reused (HOMA-ID-004)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-010")
	wantViolations(t, rep, "HOMA-RESEND-010", early, late)
}

// TestResend011RetransmitRacesOriginal: homa_xmit_data advances
// next_xmit_offset past an skb under the RPC's lock and releases the lock
// before handing the skb to the NIC; a RESEND handled meanwhile on another
// core (homa_resend_pkt: [offset, min(end, tx_end))) retransmits that skb's
// bytes, and its copy may reach the wire first, even on the sender's own
// link. A first transmission within one skb past what the sender had sent
// when the retransmission went out, less than slack after it, is then
// inconclusive; one further on, or later, is a violation.
func TestResend011RetransmitRacesOriginal(t *testing.T) {
	const id = "HOMA-RESEND-011"
	play := func(resent uint32, delay time.Duration) (*Report, []int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 100000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 2, 80000, 0)
		b.message(true, 2, 100000, 40000, 42848, 40000, 0)
		b.after(5*time.Millisecond).resend(false, 2, 42848, 37152, 7)
		for off := uint32(42848); off < 42848+resent; off += 1424 {
			b.after(time.Microsecond).resent(true, 2, 100000, off, 1424, 7)
		}
		orig := b.after(delay).message(true, 2, 100000, 42848, 45696, 40000, 0)
		return b.checkAt(HostPoint(b.client), "linux", id, "max_gso_size=0"), orig
	}
	rep, orig := play(1424, 3*time.Microsecond) // one skb, 3 µs later
	wantViolations(t, rep, id)
	wantInconclusive(t, rep, id, orig[0])
	rep, orig = play(2848, 3*time.Microsecond) // two skbs ahead
	wantViolations(t, rep, id, orig[1])
	wantInconclusive(t, rep, id, orig[0])
	rep, orig = play(1424, 3*time.Millisecond) // past slack
	wantViolations(t, rep, id, orig[0])
}

// restartAfterGrant plays a 60000-byte request on main: its unscheduled
// 40000 bytes, a GRANT to 45696 and the granted packets up to it, then,
// after quiet (the client's latest DATA that long before), the client's
// RESEND for its response and the server's RPC_UNKNOWN. The client then
// retransmits [0, upTo) with incoming. It returns the RPC_UNKNOWN's frame
// and the restart's frames.
func (b *traceBuilder) restartAfterGrant(cid uint64, quiet time.Duration, upTo, incoming uint32) (int, []int) {
	b.message(true, cid, 60000, 0, 40000, 40000, 5)
	b.after(10*time.Microsecond).grant(false, cid, 45696, 0)
	b.after(10*time.Microsecond).message(true, cid, 60000, 40000, 45696, 40000, 0)
	b.after(quiet).resend(true, cid, 0, wire.ResendAll, 7)
	unknown := b.after(40*time.Microsecond).ctl(false, cid, wire.TypeRPCUnknown)
	b.after(30 * time.Microsecond)
	var restart []int
	for off := uint32(0); off < upTo; off += 1424 {
		n := min(1424, upTo-off)
		if off < 40000 && off+n > 40000 {
			n = 40000 - off
		}
		restart = append(restart, b.data(true, cid, 60000, off, int(n), 5, func(f *wire.DataFields) {
			f.Retransmit, f.SegOffset, f.Incoming = 1, off, incoming
		}))
		off += n - 1424 // the loop adds 1424
	}
	return unknown, restart
}

// TestResend007RestartsEveryByteSent: a client restarting after the
// server's RPC_UNKNOWN resends every byte it had transmitted, [0, tx_end)
// (homa_rpc_unknown_pkt → homa_resend_data): a restart of the unscheduled
// bytes only, which leaves the granted ones to the re-created server's
// RESENDs, is a violation (helper-273's restart-unsched-only passed
// before: only offset 0 was owed). With the latest request DATA less than
// slack before the RPC_UNKNOWN (linux_6.13.9's tx_end counts a packet
// only once the driver has released it) only offset 0 is owed.
func TestResend007RestartsEveryByteSent(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.restartAfterGrant(2, 5*time.Millisecond, 45696, 45696)
	rep := b.check("linux", "HOMA-RESEND-007")
	wantClean(t, rep, "HOMA-RESEND-007")
	wantCounts(t, rep, "HOMA-RESEND-007", 1, 1, 0, 0)

	b = newTrace(t, wire.VersionCurrent)
	unknown, _ := b.restartAfterGrant(2, 5*time.Millisecond, 40000, 40000)
	b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil) // the RPC lives on
	b.after(30*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)  // past the bound
	rep = b.check("linux", "HOMA-RESEND-007")
	wantViolations(t, rep, "HOMA-RESEND-007", unknown)
	if why := rep.Violations[0].Why; !strings.Contains(why, "from offset 0 to byte 45696") {
		t.Errorf("why %q", why)
	}

	b = newTrace(t, wire.VersionCurrent)
	b.restartAfterGrant(2, 5*time.Millisecond, 40000, 40000)
	b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(30*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
	rep = b.check("linux", "HOMA-RESEND-007", "slack=6ms")
	wantClean(t, rep, "HOMA-RESEND-007")
	wantCounts(t, rep, "HOMA-RESEND-007", 1, 1, 0, 0)
}

// TestResend020RestartIncoming: a restart after the server's RPC_UNKNOWN
// writes tx_end (main), or the client's granted offset (linux_6.13.9,
// linux_6.1.38) in its incoming: 45696 or 40000 here, both within the
// grant horizon 45696; one writing the message length, 60000, claims
// bytes no GRANT gave (helper-273's restart-incoming-length passed
// before: restarts were not judged).
func TestResend020RestartIncoming(t *testing.T) {
	for _, inc := range []uint32{45696, 40000} {
		b := newTrace(t, wire.VersionCurrent)
		b.restartAfterGrant(2, 5*time.Millisecond, 45696, inc)
		rep := b.check("linux", "HOMA-RESEND-020")
		wantClean(t, rep, "HOMA-RESEND-020")
		wantCounts(t, rep, "HOMA-RESEND-020", 33, 33, 0, 0)
	}
	b := newTrace(t, wire.VersionCurrent)
	_, restart := b.restartAfterGrant(2, 5*time.Millisecond, 45696, 60000)
	wantViolations(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020", restart...)
}
