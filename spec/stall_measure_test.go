package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// violationAt returns rep's violation of rule at frame, failing t when
// there is none.
func violationAt(t *testing.T, rep *Report, rule string, frame int) Finding {
	t.Helper()
	for _, f := range rep.Violations {
		if f.Rule == rule && f.Frame == frame {
			return f
		}
	}
	t.Fatalf("%s: no violation at frame %d: %+v", rule, frame, rep.Violations)
	return Finding{}
}

// wantLate fails t unless timing finding f says it came late past its
// tolerance, and a stall must lose that much to excuse it
// (stall.Accounting took any overlapping stall for a finding without
// Late).
func wantLate(t *testing.T, f Finding, late time.Duration) {
	t.Helper()
	if f.Slack <= 0 || f.Late != late {
		t.Errorf("%s at frame %d: late %v with tolerance %v, want late %v: %s", f.Rule, f.Frame, f.Late, f.Slack, late, f.Why)
	}
}

// TestNewsProcessedLate: a packet a host sends after news that makes it
// wrong reached the capture point (the client's ack for a RESEND, HOMA-ACK-012
// and -RESEND-012; a CUTOFFS for a stale cutoff_version, HOMA-CUTOFF-001; a
// CUTOFFS of another table for the version, HOMA-CUTOFF-006; the message's
// last byte for a GRANT, HOMA-GRANT-004; the last SRPT GRANT for a FIFO
// GRANT, HOMA-GRANT-018; the client's own RESEND for its request DATA,
// HOMA-RESEND-024) is late processing of that news: its finding says how
// far past the tolerance it came, so a stall that lost less (a 1 ms stall
// beside a 5 ms lateness) no longer excuses it. Fails on the old rules,
// whose findings carried no Late (any overlapping stall excused them).
func TestNewsProcessedLate(t *testing.T) {
	t.Run("ACK-012 and RESEND-012", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 4, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, 4, 3000, 0, 1424, 5, nil)
		b.after(time.Microsecond).data(false, 4, 3000, 1424, 1424, 5, nil)
		b.after(time.Microsecond).data(false, 4, 3000, 2848, 152, 5, nil)
		b.after(3*time.Millisecond).ctl(false, 4, wire.TypeNeedAck)
		b.after(10 * time.Microsecond).ack(4)
		rs := b.after(5*time.Millisecond).resend(true, 4, 1424, 1424, 7)
		for _, id := range []string{"HOMA-ACK-012", "HOMA-RESEND-012"} {
			f := violationAt(t, b.check("linux", id), id, rs)
			wantLate(t, f, 5*time.Millisecond-f.Slack)
		}
	})
	t.Run("CUTOFF-001", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100000, 0, 1424, 6, func(f *wire.DataFields) { f.CutoffVersion = 0 })
		b.after(20*time.Microsecond).cutoffs(false, 2, 1)
		stale := b.after(5*time.Millisecond).data(true, 2, 100000, 1424, 1424, 6, func(f *wire.DataFields) { f.CutoffVersion = 0 })
		f := violationAt(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001", stale)
		wantLate(t, f, 5*time.Millisecond-f.Slack)
	})
	t.Run("CUTOFF-006", func(t *testing.T) {
		other := [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 300}
		b := newTrace(t, wire.VersionCurrent)
		b.cutoffs(false, 2, 1)
		b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
		again := b.after(5*time.Millisecond).cutoffsTable(false, 2, 1, other)
		f := violationAt(t, b.check("linux", "HOMA-CUTOFF-006"), "HOMA-CUTOFF-006", again)
		wantLate(t, f, 5*time.Millisecond-f.Slack)
	})
	t.Run("GRANT-004", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.xferRequest(2, 30000, 10000, 10000, 4, 0)
		late := b.after(3*time.Millisecond).grant(false, 2, 30000, 0)
		f := violationAt(t, b.check("linux-2024", "HOMA-GRANT-004"), "HOMA-GRANT-004", late)
		wantLate(t, f, 3*time.Millisecond-f.Slack)
	})
	t.Run("GRANT-018", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		srpt := b.after(time.Millisecond).grant(false, 2, 60000, 3)
		fifo := b.after(6*time.Millisecond).grant(false, 2, 110000, 6)
		f := violationAt(t, b.checkAt(Switch, "linux", "HOMA-GRANT-018"), "HOMA-GRANT-018", fifo)
		wantLate(t, f, b.events[fifo-1].Time.Sub(b.events[srpt-1].Time)-f.Slack)
	})
	t.Run("RESEND-024", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 5000, 0, 1424, 7, nil)
		b.after(time.Millisecond).data(false, 2, 100000, 0, 1424, 7, nil)
		rs := b.after(20*time.Millisecond).resend(true, 2, 1424, 1424, 7)
		late := b.after(5*time.Millisecond).data(true, 2, 5000, 1424, 1424, 7, nil)
		f := violationAt(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-024"), "HOMA-RESEND-024", late)
		wantLate(t, f, b.events[late-1].Time.Sub(b.events[rs-1].Time)-f.Slack)
	})
}

// TestTooSoonFromOwnPacket: a NEED_ACK repeat (HOMA-ACK-006), a CUTOFFS
// (HOMA-CUTOFF-005) or a run of FIFO GRANTs (HOMA-GRANT-023) too soon after the host's own earlier one says by how
// much and from which packet, so only a stall that held that packet back
// on its way out by as much excuses it (stall.Accounting, EarlyFromOwn),
// not any stall overlapping the two. Fails on the old rules (no Early).
func TestTooSoonFromOwnPacket(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.rpcWithResponse(2, 100)
	first := b.after(2*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
	twice := b.after(10*time.Microsecond).ctl(false, 2, wire.TypeNeedAck)
	f := violationAt(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-ACK-006"), "HOMA-ACK-006", twice)
	// need: a tick (1 ms) less timer_drift 0.5 of it and jitter 200 µs.
	if want := 300*time.Microsecond - 10*time.Microsecond; f.Early != want || f.EarlyRef != EarlyFromOwn || !f.EarlyAt.Equal(b.events[first-1].Time) {
		t.Errorf("HOMA-ACK-006: early %v from %v (%s), want %v from the first NEED_ACK at %v", f.Early, f.EarlyAt, f.EarlyRef, want, b.events[first-1].Time)
	}

	b = newTrace(t, wire.VersionCurrent)
	var cut []int
	for i := range 4 {
		b.after(time.Microsecond).data(true, 2, 30000, uint32(i)*1424, 1424, 6, func(f *wire.DataFields) { f.CutoffVersion = 0 })
		cut = append(cut, b.after(time.Microsecond).cutoffs(false, 2, 1))
	}
	f = violationAt(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-CUTOFF-005"), "HOMA-CUTOFF-005", cut[2])
	if f.Early <= 0 || f.EarlyRef != EarlyFromOwn || len(f.Frames) != 1 || !f.EarlyAt.Equal(b.events[f.Frames[0]-1].Time) {
		t.Errorf("HOMA-CUTOFF-005: early %v from %v (%s), frames %v: want it measured from the earlier CUTOFFS", f.Early, f.EarlyAt, f.EarlyRef, f.Frames)
	}
	// One jiffy less the tolerance after the first, for the third.
	if want := minJiffy - f.Slack - b.events[cut[2]-1].Time.Sub(f.EarlyAt); f.Early != want {
		t.Errorf("HOMA-CUTOFF-005: early %v, want %v", f.Early, want)
	}

	// 64 FIFO GRANTs 16 µs apart span 1.008 ms where 15 fifo_grant
	// intervals (4.8 ms) less slack and jitter (2.2 ms) are due: 1.592 ms
	// too soon after the receiver's own first one (HOMA-GRANT-023).
	b, fifo := fifoPaceTrace(t, func(int) time.Duration { return 16 * time.Microsecond })
	f = violationAt(t, b.check("linux", "HOMA-GRANT-023"), "HOMA-GRANT-023", fifo[63])
	if f.Early != 1592*time.Microsecond || f.EarlyRef != EarlyFromOwn || !f.EarlyAt.Equal(b.events[fifo[0]-1].Time) {
		t.Errorf("HOMA-GRANT-023: early %v from %v (%s), want 1.592ms from the first FIFO GRANT at %v", f.Early, f.EarlyAt, f.EarlyRef, b.events[fifo[0]-1].Time)
	}
}

// TestWitnessedFindingsMeasured: a missing NEED_ACK a witness proves
// (HOMA-ACK-013) is at least as late as the witness came past the
// deadline; a server's RPC_UNKNOWN short of a timeout (HOMA-RESEND-019)
// came too soon by what the silence lacked, after the client's packet
// that began it (EarlyFromPeer: only a stall from its arrival on may
// have kept the server from processing it; here the request DATA that
// created the RPC, EarlyFromStart: no stall). Fails on the old rules.
func TestWitnessedFindingsMeasured(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	a := b.client
	b.client = otherClient
	b.ctl(false, 4, wire.TypeBusy)
	b.client = a
	b.after(time.Millisecond).data(true, 2, 100, 0, 100, 7, nil)
	resp := b.after(10*time.Millisecond).data(false, 2, 200, 0, 200, 7, nil)
	b.client = otherClient
	b.after(40*time.Millisecond).ctl(false, 4, wire.TypeBusy)
	f := violationAt(t, b.check("linux", "HOMA-ACK-013"), "HOMA-ACK-013", resp)
	wantLate(t, f, 40*time.Millisecond-needAckDeadline(new(linuxParams(t))))

	b = newTrace(t, wire.VersionCurrent)
	heldPair(b)
	u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	witness20(b)
	rep := b.check("linux", forgetRule)
	f = violationAt(t, rep, forgetRule, u)
	p := new(linuxParams(t))
	// RESENDs do not end a silence (homa_dispatch_pkts resets
	// silent_ticks for DATA, GRANT and BUSY): it ran from the request.
	if want := p.Ticks(p.TimeoutTicks-2) - p.Slack - b.events[u-1].Time.Sub(t0); f.Early != want || f.EarlyRef != EarlyFromStart || !f.EarlyAt.Equal(t0) {
		t.Errorf("%s: early %v from %v (%s), want %v from the request DATA at %v", forgetRule, f.Early, f.EarlyAt, f.EarlyRef, want, t0)
	}
}

// otherClient is a second client host for tests that need a witness RPC.
var otherClient = netip.MustParseAddr("198.18.0.3")

// TestDowngradeKeepsMeasure: a finding a TOS race makes inconclusive
// keeps the lateness and earliness of the violation it stands for, so
// a stall explains it only as it would that violation.
func TestDowngradeKeepsMeasure(t *testing.T) {
	v := Violation("late").WithSlack(time.Millisecond).WithLate(3*time.Millisecond).WithEarly(time.Millisecond, t0, EarlyFromOwn)
	d := Downgrade(CauseTOSRace, Evidence{Frame: 1, Why: "race"}, "%s", v.Why()).timingOf(v)
	early, at, ref := d.Early()
	if d.Slack != time.Millisecond || d.Late() != 3*time.Millisecond || early != time.Millisecond || !at.Equal(t0) || ref != EarlyFromOwn {
		t.Errorf("downgraded: slack %v late %v early %v at %v (%s)", d.Slack, d.Late(), early, at, ref)
	}
}

// TestDeclaredDropsTrusted: a capture that declares the packets it
// dropped itself (pcapng interface statistics, 0 included) is not charged
// with request bytes a server shows it holds (its response began) that it
// never saw: they never passed it, and HOMA-SEND-005 stands. Without the
// declaration the capture's own evidence makes them 1 packet it missed
// and the finding inconclusive (CauseCaptureDrop), as before. Fails on
// the old checker, which took the evidence over a declared 0 (a
// simulated server that counted duplicate bytes as new was INCOMPLETE).
func TestDeclaredDropsTrusted(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 4272, 0, 1424, 7, nil)
	b.after(time.Microsecond).data(true, 2, 4272, 2848, 1424, 7, nil) // [1424, 2848) never seen
	resp := b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	rules, err := Select(Rules(), "HOMA-SEND-005", 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	for _, declared := range []bool{false, true} {
		j := Judge{Profile: "linux", Params: linuxParams(t), Rules: rules, CaptureDropsDeclared: declared}
		rep := j.Capture(Switch, b.events)
		if declared {
			wantViolations(t, rep, "HOMA-SEND-005", resp)
			if rep.CaptureDrops != 0 || rep.CaptureDropsShown != "" {
				t.Errorf("declared 0 drops: report says %d dropped (%q)", rep.CaptureDrops, rep.CaptureDropsShown)
			}
			continue
		}
		wantViolations(t, rep, "HOMA-SEND-005")
		wantInconclusive(t, rep, "HOMA-SEND-005", resp)
		if rep.CaptureDrops != 1 || rep.CaptureDropsShown == "" {
			t.Errorf("undeclared drops: report says %d dropped (%q), want the 1 the capture shows it missed", rep.CaptureDrops, rep.CaptureDropsShown)
		}
	}
}
