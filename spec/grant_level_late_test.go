package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// wantSince fails t unless timing finding f judges the time from since on
// (Finding.Since): a stall from there to its frame may explain it.
func wantSince(t *testing.T, f Finding, since time.Time) {
	t.Helper()
	if !f.Since.Equal(since) {
		t.Errorf("%s at frame %d: judged from %v, want from %v", f.Rule, f.Frame, f.Since, since)
	}
}

// TestGrantLevelLateFromEnds: a GRANT's level that needs more messages
// being granted than the capture shows (HOMA-GRANT-015; HOMA-GRANT-011's
// upper bound, whose n-1 it lowers) is a receiver's late view of the
// messages that ended: the trace keeps the latest ends per receiver
// (goneTimes), so the finding says how long past slack after the end it
// needs the GRANT came, and a stall must have lost that much. Two 50 KB
// requests complete 1 ms apart; 30 ms later the server grants a 500 KB
// request at level 2 beside a 100 KB one ahead of it. HOMA-GRANT-015 needs
// one more message (the later end), HOMA-GRANT-011 two more (the earlier:
// the 100 KB request is ahead by its whole length, which no lag hides).
// Fails on the old rules, whose findings carried no Late (any overlapping
// stall, a 1 ms one beside 30 ms of lateness, excused them).
func TestGrantLevelLateFromEnds(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	var ends []time.Time
	for i, c := range []string{"198.18.0.5", "198.18.0.6"} {
		b.client = netipAddr(c)
		id := uint64(8 + 2*i)
		b.message(true, id, 50000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, id, 50000, 0)
		last := b.after(10*time.Microsecond).message(true, id, 50000, 40000, 50000, 40000, 0)
		ends = append(ends, b.events[last[len(last)-1]-1].Time)
		b.after(time.Millisecond)
	}
	b.after(30 * time.Millisecond)
	b.client = netipAddr("198.18.0.1")
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	b.after(10*time.Microsecond).grant(false, 2, 60000, 1)
	b.client = netipAddr("198.18.0.3")
	g := b.after(10*time.Microsecond).grant(false, 4, 60000, 2)
	at := b.events[g-1].Time
	f := violationAt(t, b.check("linux", "HOMA-GRANT-015"), "HOMA-GRANT-015", g)
	wantLate(t, f, at.Sub(ends[1])-f.Slack)
	wantSince(t, f, ends[1])
	f = violationAt(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011", g)
	wantLate(t, f, at.Sub(ends[0])-f.Slack)
	wantSince(t, f, ends[0])
	if f.Late < 30*time.Millisecond-f.Slack {
		t.Errorf("HOMA-GRANT-011: late %v: a stall shorter than 30 ms less slack would excuse it", f.Late)
	}

	// Above max_sched_prio no count of messages allows the level: no
	// tolerance, and no stall excuses it.
	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	g = b.after(10*time.Microsecond).grant(false, 2, 60000, 5)
	if f := violationAt(t, b.check("linux", "HOMA-GRANT-015"), "HOMA-GRANT-015", g); f.Timing() {
		t.Errorf("HOMA-GRANT-015 at level 5 over max_sched_prio 3: tolerance %v, want none (no stall explains it)", f.Slack)
	}
}

// TestGrant011LateFromRank: HOMA-GRANT-011's findings say how long the
// receiver must have lagged for the level to be right. Upper bound
// (TestGrant011ReceiverLag at slack 500 µs): the 300 KB request is ahead
// since its 200000 bytes arrived, 500 µs before the receiver's view (its
// first GRANT less slack); a receiver lagging that long saw it behind,
// whereas raising n-1 would need an end before the capture (10.6 ms).
// Floor: three requests whose DATA began 10 ms before all are granted at
// level 0; the best one's floor of 2 falls only for a GRANT decided
// before the other two's first DATA (each then not counted as being
// granted), late by the time from there to the GRANT less slack. Fails on
// the old rules (no Late: any overlapping stall excused either).
func TestGrant011LateFromRank(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 300000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	b.message(true, 4, 250000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	bulk := b.after(10*time.Millisecond).message(true, 2, 300000, 40000, 240000, 40000, 3)
	b.after(time.Millisecond).grant(false, 2, 280000, 1)
	b.client = netipAddr("198.18.0.3")
	g := b.after(100*time.Microsecond).grant(false, 4, 60000, 1)
	f := violationAt(t, b.check("linux", "HOMA-GRANT-011", "slack=500us"), "HOMA-GRANT-011", g)
	wantLate(t, f, 500*time.Microsecond)
	wantSince(t, f, b.events[bulk[0]-1].Time)

	b = newTrace(t, wire.VersionCurrent)
	ids := [3]uint64{2, 4, 6}
	lens := [3]uint32{100000, 400000, 800000}
	for i := range ids {
		b.client = netipAddr(threeClients[i])
		b.message(true, ids[i], lens[i], 0, 40000, 40000, 4)
	}
	start := b.now
	b.after(10 * time.Millisecond)
	for i := range ids {
		b.client = netipAddr(threeClients[i])
		b.after(10*time.Microsecond).grant(false, ids[i], 60000, 0)
	}
	b.client = netipAddr(threeClients[0])
	g = b.after(10*time.Microsecond).grant(false, 2, 80000, 0)
	f = violationAt(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011", g)
	wantLate(t, f, b.events[g-1].Time.Sub(start)-f.Slack)
	wantSince(t, f, start)
}

// TestGrant008LevelLag: scheduled DATA at the level of a GRANT the
// sender should have left behind says how long past slack after the next
// GRANT reached the sender it came (a sender that lagged that long had
// not processed it), so a stall must have lost that much: 1.5 ms for DATA
// at level 2 3.5 ms after the GRANT to level 0 reached the client. DATA
// at a level no GRANT gave (the unscheduled level 4 kept) has no
// tolerance: no lag explains it. Fails on the old rule (no Late; a
// tolerance on both).
func TestGrant008LevelLag(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 100000, 0, 10000, 10000, 4)
	b.grant(false, 2, 30000, 2)
	b.message(true, 2, 100000, 10000, 15696, 10000, 2)
	g := b.grant(false, 2, 40000, 0)
	b.after(3500 * time.Microsecond)
	bad := b.data(true, 2, 100000, 15696, 1424, 2, nil)
	f := violationAt(t, b.checkAt(HostPoint(b.client), "linux-2024", "HOMA-GRANT-008"), "HOMA-GRANT-008", bad)
	wantLate(t, f, 3500*time.Microsecond-f.Slack)
	wantSince(t, f, b.events[g-1].Time)

	b = newTrace(t, wire.Version2024)
	b.message(true, 2, 100000, 0, 10000, 10000, 4)
	b.grant(false, 2, 20000, 0)
	kept := b.message(true, 2, 100000, 10000, 21392, 10000, 4)
	if f := violationAt(t, b.check("linux-2024", "HOMA-GRANT-008"), "HOMA-GRANT-008", kept[0]); f.Timing() {
		t.Errorf("HOMA-GRANT-008 at the unscheduled level no GRANT gave: tolerance %v, want none", f.Slack)
	}
}

// TestResend019WholeRequestLate: a server's RPC_UNKNOWN for an RPC whose
// whole request it had when the client's silence began is explained only
// by a stall that held those last bytes back from its protocol code until
// its timer fired, timeout_ticks (less RTX-10's two ticks and slack) after
// the RPC's first packet at the soonest: late by that less the time from
// the first packet to the last bytes (96 ms for a one-packet request). One
// for an RPC whose response had begun no stall explains (no timer counts
// silence past RPC_INCOMING): no tolerance. Fails on the old rule, whose
// findings carried neither (any overlapping stall excused both).
func TestResend019WholeRequestLate(t *testing.T) {
	p := new(linuxParams(t))
	for _, name := range []string{"in service", "response begun"} {
		b := newTrace(t, wire.VersionCurrent)
		if name == "in service" {
			heldPair(b)
		} else {
			b.data(true, 10, 100, 0, 100, 7, nil)
			b.after(300*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
			b.after(5*time.Millisecond).message(false, 10, 100000, 0, 40000, 40000, 4)
			b.after(4*time.Millisecond).resend(true, 20, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
		}
		b.now = t0.Add(96 * time.Millisecond)
		b.resend(true, 10, 0, wire.ResendAll, 7)
		u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
		witness20(b)
		f := violationAt(t, b.check("linux", forgetRule), forgetRule, u)
		if name == "response begun" {
			if f.Timing() {
				t.Errorf("%s, response begun: tolerance %v, want none", forgetRule, f.Slack)
			}
			continue
		}
		wantLate(t, f, p.Ticks(p.TimeoutTicks-2)-p.Slack)
		wantSince(t, f, t0)
	}
}

// TestGrant020PassedOverLate: an SRPT GRANT while a message clearly ahead
// waits ungranted is late by the time from the arrival that put that
// message ahead (here its first DATA: ahead by its whole length) to the
// GRANT, less slack: a receiver lagging that long had not seen it. The
// GRANT 3.4 ms after the short request's first DATA: 1.4 ms. Fails on the
// old rule (no Late: any overlapping stall excused it).
func TestGrant020PassedOverLate(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 500000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	short := b.message(true, 20, 60000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	for k := range 4 {
		b.after(100*time.Microsecond).grant(false, 10, 50000+uint32(k)*2000, 0)
	}
	late := b.after(3*time.Millisecond).grant(false, 10, 80000, 0)
	b.client = netipAddr("198.18.0.3")
	b.after(time.Millisecond).grant(false, 20, 60000, 0)
	f := violationAt(t, b.check("linux", "HOMA-GRANT-020", "max_overcommit=1"), "HOMA-GRANT-020", late)
	first := b.events[short[0]-1].Time
	wantLate(t, f, b.events[late-1].Time.Sub(first)-f.Slack)
	wantSince(t, f, first)
}

// TestGrant022OlderLate: a FIFO GRANT to a message younger than an
// eligible one (TestGrant022FIFOToYounger) is late by how much more than
// slack the older message's first DATA came before the younger's: a
// receiver that lagged that long behind the older one's first DATA took
// it to be born later. Fails on the old rule (no Late).
func TestGrant022OlderLate(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	c2 := olderAndYounger(b, shorterGranted)
	b.client = c2
	fifo := b.grant(false, 4, 90000, 6)
	f := violationAt(t, b.check("linux", "HOMA-GRANT-022"), "HOMA-GRANT-022", fifo)
	var older, younger time.Time
	for _, e := range b.events {
		if e.Type() == wire.TypeData && e.Offset == 0 {
			switch KeyOf(&e).ClientID {
			case 2:
				older = e.Time
			case 4:
				younger = e.Time
			}
		}
	}
	wantLate(t, f, younger.Sub(older)-f.Slack)
}

// TestResend008LateNeedAckAnswer: a client's RESEND after an unanswered
// NEED_ACK, too soon for a timer round (HOMA-RESEND-008), may be the
// answer to that NEED_ACK (homa_need_ack_pkt on main) held back by a
// stall: the finding says so (too soon from the peer's NEED_ACK, late by
// the time since it less slack), and only a stall between the two that
// lost that much excuses it, not one that held back the earlier round.
// Judged with the simulator's 1 µs, the IUT frozen 259 µs between a
// NEED_ACK and its answer failed TestHeldUpTesters. Fails on the old rule
// (measured from the earlier round, EarlyFromOwn).
func TestResend008LateNeedAckAnswer(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(50*time.Microsecond).data(false, 2, 4272, 0, 1424, 7, nil)
	b.data(false, 2, 4272, 2848, 1424, 7, nil)
	b.after(5*time.Millisecond).resend(true, 2, 1424, 1424, 7)
	na := b.after(2*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
	rs := b.after(259*time.Microsecond).resend(true, 2, 1424, 1424, 7)
	f := violationAt(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-RESEND-008", "slack=1us", "jitter=1us"), "HOMA-RESEND-008", rs)
	at := b.events[na-1].Time
	if f.EarlyRef != EarlyFromPeer || !f.EarlyAt.Equal(at) || f.Late != 259*time.Microsecond-f.Slack {
		t.Errorf("HOMA-RESEND-008: early %v from %v (%s), late %v: want from the NEED_ACK at %v, late 258µs", f.Early, f.EarlyAt, f.EarlyRef, f.Late, at)
	}
}
