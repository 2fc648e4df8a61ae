package spec

// HOMA-RESEND-028: a BUSY answers a RESEND that let its sender BUSY
// (homa_resend_pkt, the only sender of BUSY), counted per message.

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// resend028Profiles pairs each profile judging HOMA-RESEND-028 with its
// wire format.
var resend028Profiles = []struct {
	name string
	v    wire.Version
}{{"linux", wire.VersionCurrent}, {"linux-2024", wire.Version2024}, {"linux-2025", wire.Version2025}}

// resend028Response starts RPC 2 with a 100-byte request and sends the
// first sent bytes of a 5000-byte, wholly unscheduled response.
func resend028Response(t *testing.T, v wire.Version, sent uint32) *traceBuilder {
	b := newTrace(t, v)
	b.data(true, 2, 100, 0, 100, 6, nil)
	b.after(100*time.Microsecond).message(false, 2, 5000, 0, sent, 5000, 6)
	return b
}

// resend028Computing starts RPC 2 with a 100-byte request the server is
// still computing when the client sends RESEND {0, -1} 5 ms later.
func resend028Computing(t *testing.T) *traceBuilder {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 6, nil)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	return b
}

// TestResend028BusyForSentBytes: a server that has sent its whole response
// answers a RESEND for bytes of it with BUSY and nothing else (helper-144's
// m11 edit of a linux-6.1 capture, which no MUST rule caught under
// linux-2024): every HomaModule version retransmits there.
func TestResend028BusyForSentBytes(t *testing.T) {
	const id = "HOMA-RESEND-028"
	for _, p := range resend028Profiles {
		b := resend028Response(t, p.v, 5000)
		b.after(5*time.Millisecond).resend(true, 2, 2848, 1424, 7)
		busy := b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		wantViolations(t, b.check(p.name, id), id, busy)
	}
}

// TestResend028BusyBeforeResponse: a server not yet sending its response
// BUSYs for every RESEND (not RPC_OUTGOING), one BUSY each; a third BUSY
// for two RESENDs is one too many where the capture sees what the server
// receives.
func TestResend028BusyBeforeResponse(t *testing.T) {
	const id = "HOMA-RESEND-028"
	for _, p := range resend028Profiles {
		b := newTrace(t, p.v)
		b.data(true, 2, 100, 0, 100, 6, nil)
		for i := 0; i < 2; i++ {
			b.after(5*time.Millisecond).resend(true, 2, 0, 1424, 7)
			b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		}
		wantCounts(t, b.check(p.name, id), id, 2, 2, 0, 0)
		extra := b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		wantViolations(t, b.checkAt(HostPoint(b.server), p.name, id), id, extra)
		// At a switch, a copy the network made of one of the RESENDs
		// after the capture point may have drawn it.
		wantCounts(t, b.check(p.name, id), id, 3, 2, 0, 1)
	}
}

// TestResend028LateBusyForEarlierResend: a RESEND for bytes not yet sent
// lets the sender BUSY; a loaded sender answers it only after it has sent
// the rest and a second RESEND (for bytes sent) has come, which it answers
// by retransmitting: the BUSY is the first one's, in every version. A
// second BUSY, seen on the server's link, has no RESEND left to answer.
func TestResend028LateBusyForEarlierResend(t *testing.T) {
	const id = "HOMA-RESEND-028"
	for _, p := range resend028Profiles {
		b := resend028Response(t, p.v, 2848)
		b.after(3*time.Millisecond).resend(true, 2, 2848, 2152, 7) // beyond what it sent
		b.after(10*time.Microsecond).message(false, 2, 5000, 2848, 5000, 5000, 6)
		b.after(3*time.Millisecond).resend(true, 2, 1424, 1424, 7)
		b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
		b.after(10*time.Microsecond).data(false, 2, 5000, 1424, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
		wantCounts(t, b.check(p.name, id), id, 1, 1, 0, 0)
		extra := b.after(3*time.Millisecond).ctl(false, 2, wire.TypeBusy)
		wantViolations(t, b.checkAt(HostPoint(b.server), p.name, id), id, extra)
	}
}

// TestResend028BeforeMain: two BUSYs only HomaModule before be5081e
// sends, judged a pass under linux-2024 and linux-2025 (which spans both)
// and a violation under linux (main). waiting: a message not yet sent
// whole (as the capture shows it) may have granted bytes waiting, and
// linux_6.1.38 BUSYs while next_xmit_offset is below granted, even for a
// RESEND of sent bytes. empty: linux_6.1.38 answers a RESEND of length 0
// (a server asking whether the client still cares) with BUSY. Main BUSYs
// only for an offset at or beyond tx_end, whatever the length.
func TestResend028BeforeMain(t *testing.T) {
	const id = "HOMA-RESEND-028"
	for _, empty := range []bool{false, true} {
		for _, p := range resend028Profiles {
			var b *traceBuilder
			var busy int
			if empty {
				b = newTrace(t, p.v)
				b.message(true, 2, 5000, 0, 5000, 5000, 6)
				b.after(5*time.Millisecond).resend(false, 2, 1424, 0, 7)
				busy = b.after(10*time.Microsecond).ctl(true, 2, wire.TypeBusy)
			} else {
				b = resend028Response(t, p.v, 2848)
				b.after(5*time.Millisecond).resend(true, 2, 0, 1424, 7)
				busy = b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
			}
			rep := b.check(p.name, id)
			if p.v == wire.VersionCurrent {
				wantViolations(t, rep, id, busy)
			} else {
				wantCounts(t, rep, id, 1, 1, 0, 0)
			}
		}
	}
}

// TestResend028ClientAfterUnknown: a client told RPC_UNKNOWN restarts its
// request (linux_6.1.38 from offset 0), so what it had sent before says
// nothing about what it has sent since: its BUSY is not judged.
func TestResend028ClientAfterUnknown(t *testing.T) {
	const id = "HOMA-RESEND-028"
	for _, unknown := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 5000, 0, 5000, 5000, 6)
		if unknown {
			b.after(time.Millisecond).ctl(false, 2, wire.TypeRPCUnknown)
		}
		b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
		busy := b.after(10*time.Microsecond).ctl(true, 2, wire.TypeBusy)
		rep := b.check("linux", id)
		if unknown {
			wantCounts(t, rep, id, 0, 0, 0, 0)
		} else {
			wantViolations(t, rep, id, busy)
		}
	}
}

// TestResend028CopiedResendAndBusy: the simulator's lossy run with
// duplication, at the client's link: the network copied the client's one
// RESEND after the capture point, the server (computing its response)
// answered both copies with BUSY, and the network copied one of those
// BUSYs: three identical BUSYs within jitter for one RESEND. Only the
// first is judged a pass; the others are inconclusive, not violations.
// On the server's link the capture sees both RESEND copies.
func TestResend028CopiedResendAndBusy(t *testing.T) {
	const id = "HOMA-RESEND-028"
	b := resend028Computing(t)
	b.after(200*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	b.after(500*time.Nanosecond).ctl(false, 2, wire.TypeBusy)
	b.after(500*time.Nanosecond).ctl(false, 2, wire.TypeBusy)
	wantCounts(t, b.checkAt(HostPoint(b.client), "linux", id), id, 3, 1, 0, 2)
	wantCounts(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-023"), "HOMA-RESEND-023", 3, 1, 0, 2)
}

// TestResend028DeferredRetransmission: on main since 2490a1a, a
// retransmission homa_qdisc defers sets the RPC's tx_left to the length
// less its offset, and homa_rpc_tx_end returns that offset while it
// waits: the second RESEND of a round (one per gap, back to back), at or
// beyond the first one's offset, draws BUSY though the whole response was
// sent (helper-147). The next round retransmits the second gap.
func TestResend028DeferredRetransmission(t *testing.T) {
	const id = "HOMA-RESEND-028"
	b := resend028Response(t, wire.VersionCurrent, 5000)
	b.after(5*time.Millisecond).resend(true, 2, 0, 1424, 7)
	b.after(time.Microsecond).resend(true, 2, 2848, 1424, 7)
	b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	b.after(50*time.Microsecond).data(false, 2, 5000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
	b.after(5*time.Millisecond).resend(true, 2, 2848, 1424, 7)
	b.after(10*time.Microsecond).data(false, 2, 5000, 2848, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
	wantCounts(t, b.checkAt(HostPoint(b.server), "linux", id), id, 1, 1, 0, 0)
}

// TestResend028CopyExcuseOnlyForLettingResends: one RESEND let the server
// BUSY while it computed the response; then three RESENDs for bytes it
// had sent, each below every earlier one (so no deferred retransmission
// lowers tx_end), each answered with BUSY alone. A copy the network made
// of the one letting RESEND may explain one of those BUSYs where the
// capture does not see what the server receives, not three (helper-147:
// the excuse counted every RESEND).
func TestResend028CopyExcuseOnlyForLettingResends(t *testing.T) {
	const id = "HOMA-RESEND-028"
	b := resend028Computing(t)
	b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	b.after(time.Millisecond).message(false, 2, 5000, 0, 5000, 5000, 6)
	var bad []int
	for i := 2; i >= 0; i-- {
		b.after(5*time.Millisecond).resend(true, 2, uint32(i)*1424, 1424, 7)
		bad = append(bad, b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy))
	}
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", id), id, bad...)
	wantViolations(t, b.check("linux", id), id, bad[1:]...)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", id), id, bad[1:]...)
}

// TestResend012WholeGap: main asks for one gap per RESEND (msgin.gaps),
// or the granted tail past recv_end, so every byte of a RESEND's range is
// one its sender lacks: a client that lacks [1424, 2848) of the response
// and asks {1424, 2848}, over bytes that arrived, breaks it (helper-148's
// edit of a linux-6.13 capture); {1424, 1424} does not. linux_6.1.38's
// one range per round is not judged so.
func TestResend012WholeGap(t *testing.T) {
	const id = "HOMA-RESEND-012"
	for _, length := range []uint32{1424, 2848} {
		for _, p := range []struct {
			name string
			v    wire.Version
		}{{"linux", wire.VersionCurrent}, {"linux-2024", wire.Version2024}} {
			b := newTrace(t, p.v)
			b.data(true, 2, 100, 0, 100, 6, nil)
			b.after(100*time.Microsecond).data(false, 2, 5000, 0, 1424, 6, func(f *wire.DataFields) { f.Incoming = 5000 })
			b.after(time.Microsecond).message(false, 2, 5000, 2848, 5000, 5000, 6)
			rs := b.after(5*time.Millisecond).resend(true, 2, 1424, length, 7)
			rep := b.checkAt(HostPoint(b.client), p.name, id)
			if length == 2848 && p.v == wire.VersionCurrent {
				wantViolations(t, rep, id, rs)
			} else {
				wantCounts(t, rep, id, 1, 1, 0, 0)
			}
		}
	}
}

// TestResend012WholeGapOneLevelWakeup: with one priority level the buffer
// wakeup RESEND {0, -1} carries level 0 like any RESEND, so the checker
// cannot tell it; the client dropped the response's packets while it had
// no buffers (the capture saw them), and after the wakeup, whose
// retransmissions were lost, its timer asks for [recv_end = 0, granted),
// bytes the capture saw. Not a violation (helper-149).
func TestResend012WholeGapOneLevelWakeup(t *testing.T) {
	const id = "HOMA-RESEND-012"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 0, nil)
	b.after(100*time.Microsecond).message(false, 2, 10000, 1424, 10000, 10000, 0)
	b.after(time.Millisecond).resend(true, 2, 0, wire.ResendAll, 0)
	b.after(10*time.Millisecond).resend(true, 2, 0, 10000, 0)
	wantClean(t, b.checkAt(HostPoint(b.client), "linux", id, "max_sched_prio=0", "num_priorities=1"), id)
}

// TestResend012GrantRaisedBeforeSent: HomaModule's receiver raises
// msgin.granted before it sends the GRANT, and its timer, on another core,
// may RESEND up to the new offset in between (linux_6.13.9 lab capture,
// December 7, 2026: RESEND [45568, 105568) 0.76 ms before the GRANTs to
// 55568 and 105568). A GRANT to the RESEND's end or beyond within slack
// after it shows the bytes were authorised; one that comes later than
// slack, one short of the end, none, or one after the sender's DATA past
// the earlier GRANTs (sent on the RESEND's own authority) leaves a RESEND
// asking for bytes never authorised.
func TestResend012GrantRaisedBeforeSent(t *testing.T) {
	const id = "HOMA-RESEND-012"
	for _, tc := range []struct {
		name   string
		grants []uint32      // GRANT offsets sent after the RESEND
		after  time.Duration // when the first of them leaves
		bad    bool
		data   bool // the sender's DATA past 45568 (the RESEND's own authority) come first
	}{
		{"data-before-grant", []uint32{55568, 105568}, 760 * time.Microsecond, true, true},
		{"grant-within-slack", []uint32{55568, 105568}, 760 * time.Microsecond, false, false},
		{"grant-after-slack", []uint32{55568, 105568}, 3 * time.Millisecond, true, false},
		{"grant-short-of-end", []uint32{55568}, 760 * time.Microsecond, true, false},
		{"no-grant", nil, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.message(true, 2, 200000, 0, 40000, 40000, 6)
			b.after(100*time.Microsecond).grant(false, 2, 45568, 5)
			b.after(100 * time.Microsecond)
			for o := uint32(40000); o < 45568; o += 1392 {
				b.after(time.Microsecond).data(true, 2, 200000, o, 1392, 5, func(f *wire.DataFields) { f.Incoming = 45568 })
			}
			rs := b.after(3*time.Millisecond).resend(false, 2, 45568, 60000, 7)
			if tc.data {
				b.after(20*time.Microsecond).data(true, 2, 200000, 45568, 1392, 7, func(f *wire.DataFields) { f.Incoming = 45568 })
			}
			b.after(tc.after)
			for _, g := range tc.grants {
				b.after(10*time.Microsecond).grant(false, 2, g, 5)
			}
			b.after(5*time.Millisecond).grant(false, 2, 105568, 5) // a later packet decides the held RESEND
			rep := b.check("linux", id)
			if tc.bad {
				wantViolations(t, rep, id, rs)
				return
			}
			wantClean(t, rep, id)
			wantCounts(t, rep, id, 1, 1, 0, 0)
		})
	}
}
