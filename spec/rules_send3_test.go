package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestSend001RetransmittedPastSentEnd: a RESEND asks for bytes past what
// the capture saw sent, and the sender answers with retransmitted DATA
// that completes the message. Either the first transmissions were lost
// before the capture point (a 40000-byte request, all unscheduled, whose
// last two packets the switch never saw), or the sender predates be5081e
// and answers a RESEND past its horizon with homa_resend_data over the
// whole range (linux_6.1.38, linux_6.10.6: retransmit set, granted never
// raised). No new first transmission is owed: inconclusive, not a
// warning.
func TestSend001RetransmittedPastSentEnd(t *testing.T) {
	const id = "HOMA-SEND-001"
	retx := func(f *wire.DataFields) { f.Retransmit = 1 }
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 40000, 0, 37152, 40000, 4)
	rs := b.after(5*time.Millisecond).resend(false, 2, 37152, 2848, 7)
	b.after(20*time.Microsecond).data(true, 2, 40000, 37152, 1424, 4, retx)
	b.after(time.Microsecond).data(true, 2, 40000, 38576, 1424, 4, retx)
	b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	wantInconclusive(t, b.check("linux", id), id, rs)

	for _, prof := range []string{"linux-2024", "linux-2025"} {
		v := wire.Version2024
		if prof == "linux-2025" {
			v = wire.Version2025
		}
		b := newTrace(t, v)
		b.message(true, 2, 15000, 0, 10000, 10000, 4)
		rs := b.after(5*time.Millisecond).resend(false, 2, 10000, 5000, 7)
		for off := uint32(10000); off < 15000; off += 1424 {
			n := min(1424, 15000-int(off))
			b.after(time.Microsecond).data(true, 2, 15000, off, n, 3, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 15000 })
		}
		b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
		b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
		wantInconclusive(t, b.check(prof, id), id, rs)
	}
}

// TestSend001OpenCaptureJudgedAtDeadline: on the server's own link the
// capture cannot show what the client sends elsewhere, so a GRANT left
// unanswered past the bound is inconclusive (the client's pacer may
// prefer other messages), but one answered in time is still judged and
// passes: the excuse is asked at the missed deadline, not at the trigger.
func TestSend001OpenCaptureJudgedAtDeadline(t *testing.T) {
	const id = "HOMA-SEND-001"
	build := func(answer bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 100000, 0, 40000, 40000, 4)
		g := b.after(100*time.Microsecond).grant(false, 2, 60000, 0)
		if answer {
			b.after(50*time.Microsecond).message(true, 2, 100000, 40000, 60000, 60000, 0)
		}
		b.after(40*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
		return b, g
	}
	b, _ := build(true)
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", id), id, 1, 1, 0, 0)
	b, g := build(false)
	wantInconclusive(t, b.checkAt(HostPoint(b.server), "linux", id), id, g)
}

// TestSend001SrptFirstResponsePacket: a server stalled on response 2 (its
// GRANT to 60000 unanswered) is not excused by the first packet of a
// 1 MB response, which the pacer's SRPT order puts behind it: the rule
// runs before the trace takes that packet in, so the response's length
// comes from the packet, not from the RPC its request created.
func TestSend001SrptFirstResponsePacket(t *testing.T) {
	const id = "HOMA-SEND-001"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 4, 100, 0, 100, 7, nil) // request of RPC 4
	b.after(10*time.Microsecond).data(true, 2, 100, 0, 100, 7, nil)
	b.after(10*time.Microsecond).message(false, 2, 100000, 0, 40000, 40000, 4)
	g := b.after(100*time.Microsecond).grant(true, 2, 60000, 0)
	b.after(50*time.Microsecond).message(false, 4, 1000000, 0, 40000, 40000, 4)
	b.after(40*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	wantViolations(t, b.check("linux", id), id, g)
}
