package spec

import (
	"encoding/json"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Levels with the default cutoffs (version 1): a 100-byte message goes at
// level 7, a 1000-byte one at 6.

// busy has the client's socket (or the server's, !fromClient) send n
// packets right, 20µs apart, and then waits 10 ms (past every race
// window): one-packet messages of 100 bytes at 7 and 1000 bytes at 6 in
// turn, every fifth packet a control packet at 7 (an ACK from the client,
// a BUSY from the server). The socket then has n packets whose level was
// judged (the TOS race's budget, tosRaceOneIn) and has shown the peer
// levels 6 and 7 of HOMA-PRIO-002 and 7 of HOMA-PRIO-001.
func busy(b *traceBuilder, fromClient bool, n int) {
	for k := range n {
		cid := uint64(1000 + 2*k)
		switch {
		case k%5 == 4 && fromClient:
			b.ack(cid)
		case k%5 == 4:
			b.ctl(false, cid, wire.TypeBusy)
		case k%2 == 0:
			b.data(fromClient, cid, 100, 0, 100, 7, nil)
		default:
			b.data(fromClient, cid, 1000, 0, 1000, 6, nil)
		}
		b.after(20 * time.Microsecond)
	}
	b.after(10 * time.Millisecond)
}

// raceSwap has the client send two one-packet requests gap apart, each at
// the level the other wanted: RPC 2's 100 bytes at 6, RPC 4's 1000 bytes
// at 7. It returns their frames.
func raceSwap(b *traceBuilder, gap time.Duration) (int, int) {
	x := b.data(true, 2, 100, 0, 100, 6, nil)
	y := b.after(gap).data(true, 4, 1000, 0, 1000, 7, nil)
	b.after(10*time.Millisecond).data(true, 6, 100, 0, 100, 7, nil) // past every window
	return x, y
}

// raceRead has the client send two one-packet requests gap apart at the
// level the second wanted: RPC 2's 100 bytes (wants 7) and RPC 4's 1000
// bytes (wants 6), both at 6, as when the first packet's core read the
// TOS after the second's core wrote it. It returns their frames.
func raceRead(b *traceBuilder, gap time.Duration) (int, int) {
	x := b.data(true, 2, 100, 0, 100, 6, nil)
	y := b.after(gap).data(true, 4, 1000, 0, 1000, 6, nil)
	b.after(10*time.Millisecond).data(true, 6, 100, 0, 100, 7, nil) // past every window
	return x, y
}

// twoLevels are the parameters of interleaved: 200000 unscheduled bytes
// and cutoffs that put a 400000-byte message at level 4 and a 1000000-byte
// one at level 3.
var twoLevels = []string{"unsched_bytes=200000", "unsched_cutoffs=0,0,0,1000000,500000,15000,2800,200"}

// interleaved has the client's socket send, 2µs apart, n packets of RPC
// 2's 400000-byte request (level 4) and RPC 4's 1000000-byte one (level
// 3) in turn, as two cores sending on one socket do; A's packets whose
// index is in wrong leave at level 3, the level of B's packet just before
// them. It returns the frames of A's wrong packets.
func interleaved(b *traceBuilder, n int, wrong ...int) []int {
	var frames []int
	for k := range n {
		cid, size, prio, off := uint64(2), uint32(400000), uint8(4), uint32(k/2*1424)
		if k%2 == 1 {
			cid, size, prio = 4, 1000000, 3
		}
		if slices.Contains(wrong, k) {
			prio = 3
		}
		f := b.data(true, cid, size, off, 1424, prio, func(f *wire.DataFields) { f.Incoming = 200000 })
		if slices.Contains(wrong, k) {
			frames = append(frames, f)
		}
		b.after(2 * time.Microsecond)
	}
	b.after(10 * time.Millisecond)
	return frames
}

// TestTOSRaceBusySocket: in a busy IPv4 socket (282 packets of two
// interleaved requests of levels 4 and 3) a packet of the level-4 request
// at level 3, just after a packet of the other that wanted and carried 3,
// may be HomaModule's TOS race: the 121st and the 241st packets are
// inconclusive, each within the socket's budget of one excuse per 100
// packets whose level was judged. The 261st is a violation: with 261
// packets judged the socket has spent its two excuses. Without the race
// excuse all three are HOMA-PRIO-002 violations.
func TestTOSRaceBusySocket(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	w := interleaved(b, 282, 120, 240, 260)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-002", twoLevels...)
	wantViolations(t, rep, "HOMA-PRIO-002", w[2])
	wantDowngraded(t, rep, "HOMA-PRIO-002", w[0], CauseTOSRace)
	wantDowngraded(t, rep, "HOMA-PRIO-002", w[1], CauseTOSRace)
	wantCounts(t, rep, "HOMA-PRIO-002", 282, 279, 1, 2)
	if f := rep.Inconclusive[1]; f.Frame != w[1] || f.Frames[0] != w[1]-1 || f.Why != "unscheduled DATA of a 400000-byte message at priority 3, want 4 from cutoffs version 1 [0 0 0 1000000 500000 15000 2800 200] (IPv4 TOS race: frame 240: the same socket 198.18.0.1:32768 sent a packet that wanted level 3 2µs before this one; on IPv4 the level goes through the socket's shared TOS just before ip_queue_xmit, so a packet may leave with the level another core wrote for its own (excuse 2 of the socket's 241 packets whose level was judged, at most one in 100))" {
		t.Errorf("frame %d frames %v why %q", f.Frame, f.Frames, f.Why)
	}
}

// TestTOSRaceSmallSocket: the race-shaped wrong level of
// TestTOSRaceBusySocket in a socket of 30 packets is a violation: the
// budget has no floor, and 30 packets buy no excuse. Before the budget it
// was inconclusive.
func TestTOSRaceSmallSocket(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	w := interleaved(b, 30, 20)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-002", twoLevels...)
	wantViolations(t, rep, "HOMA-PRIO-002", w...)
	wantCounts(t, rep, "HOMA-PRIO-002", 30, 29, 1, 0)
}

// TestTOSRaceReadAnothersLevel: in a busy socket, a packet at the level
// another packet of the socket 10µs later wanted and carried may be
// HomaModule's TOS race (the level goes through the socket's shared
// inet->tos just before ip_queue_xmit): it is inconclusive, on the
// client's own link and at a switch. Without the race excuse it is a
// HOMA-PRIO-002 violation.
func TestTOSRaceReadAnothersLevel(t *testing.T) {
	for _, at := range []func(b *traceBuilder) CapturePoint{
		func(b *traceBuilder) CapturePoint { return HostPoint(b.client) },
		func(b *traceBuilder) CapturePoint { return Switch },
	} {
		b := newTrace(t, wire.VersionCurrent)
		busy(b, true, 150)
		x, y := raceRead(b, 10*time.Microsecond)
		cp := at(b)
		rep := b.checkAt(cp, "linux", "HOMA-PRIO-00[12]")
		wantViolations(t, rep, "HOMA-PRIO-002")
		wantDowngraded(t, rep, "HOMA-PRIO-002", x, CauseTOSRace)
		wantCounts(t, rep, "HOMA-PRIO-002", 123, 122, 0, 1)
		if f := rep.Inconclusive[0]; f.Frames[0] != y || f.Why != "unscheduled DATA of a 100-byte message at priority 6, want 7 from cutoffs version 1 [0 0 0 0 1000000 15000 2800 200] (IPv4 TOS race: frame 152: the same socket 198.18.0.1:32768 sent a packet that wanted level 6 10µs after this one; on IPv4 the level goes through the socket's shared TOS just before ip_queue_xmit, so a packet may leave with the level another core wrote for its own (excuse 1 of the socket's 152 packets whose level was judged, at most one in 100))" {
			t.Errorf("%v: frames %v why %q", cp, f.Frames, f.Why)
		}
	}
}

// TestTOSRaceNoSwap: each packet writes the TOS just before it reads it,
// so the last writer reads its own level and two packets cannot each
// carry the level the other wanted: both stay violations, as does a run
// of packets each at the level the one before it wanted (all but the
// first wrong one, which may have read the right first packet's level),
// even in a busy socket. Before the excuse required a right packet, all
// were inconclusive.
func TestTOSRaceNoSwap(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	busy(b, true, 150)
	x, y := raceSwap(b, 10*time.Microsecond)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-PRIO-002", x, y)

	b = newTrace(t, wire.VersionCurrent)
	busy(b, true, 150)
	var lag []int
	prev := uint8(7)
	for i := range 10 {
		size, want := 100, uint8(7)
		if i%2 == 1 {
			size, want = 1000, 6
		}
		lag = append(lag, b.after(5*time.Microsecond).data(true, uint64(2+2*i), uint32(size), 0, size, prev, nil))
		prev = want
	}
	rep = b.checkAt(Switch, "linux", "HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-PRIO-002", lag[2:]...)
	wantDowngraded(t, rep, "HOMA-PRIO-002", lag[1], CauseTOSRace) // it may have read the first packet's level
}

// TestTOSRaceStaleRun: a sender whose cutoffs put a message at the wrong
// level puts every packet of it there, beside right packets of another
// message at that level. Toward the peer the socket has sent the wanted
// level right (RPC 2's packets at 4), the budget caps the excuses: of the
// 40 wrong packets of RPC 6 (400000 bytes, wants 4, at 3), interleaved
// with RPC 8's (1000000 bytes, at 3, right) after 282 packets of
// TestTOSRaceBusySocket's two requests, the first two are inconclusive
// (284 packets judged buy two excuses), the ninth too (300 buy three),
// 37 are violations. Toward a second server, to which the socket never sent
// level 4 right, all 40 are violations: a level wrong on every packet of
// a kind to one peer is that peer's state, not a race. Before the budget
// and the per-peer check all 80 were inconclusive.
func TestTOSRaceStaleRun(t *testing.T) {
	for _, other := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		interleaved(b, 282)
		var run []int
		for k := range 40 {
			b.data(true, 8, 1000000, uint32(k)*1424, 1424, 3, func(f *wire.DataFields) { f.Incoming = 200000 })
			b.after(2 * time.Microsecond)
			if other {
				b.server = netip.MustParseAddr("198.18.0.3")
			}
			run = append(run, b.data(true, 6, 400000, uint32(k)*1424, 1424, 3, func(f *wire.DataFields) { f.Incoming = 200000 }))
			b.server = netip.MustParseAddr("198.18.0.2")
			b.after(2 * time.Microsecond)
		}
		rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-002", twoLevels...)
		if other {
			wantViolations(t, rep, "HOMA-PRIO-002", run...)
			wantCounts(t, rep, "HOMA-PRIO-002", 362, 322, 40, 0)
			continue
		}
		for _, k := range []int{0, 1, 8} {
			wantDowngraded(t, rep, "HOMA-PRIO-002", run[k], CauseTOSRace)
		}
		wantViolations(t, rep, "HOMA-PRIO-002", slices.Concat(run[2:8], run[9:])...)
		wantCounts(t, rep, "HOMA-PRIO-002", 362, 322, 37, 3)
	}
}

// TestTOSRacePeerConsistent: after 150 right packets to the server, the
// client's first request to a second server, at level 6 where its 100
// bytes want 7, just before a request at 6 to the first server, is a
// violation: the socket has not shown it sends that peer level 7, and a
// table that is wrong for one peer makes every such packet wrong. Once it
// has (a 100-byte request at 7 to the second server), the same packet is
// inconclusive. Without the per-peer check both are inconclusive.
func TestTOSRacePeerConsistent(t *testing.T) {
	for _, shown := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		busy(b, true, 150)
		b.server = netip.MustParseAddr("198.18.0.3")
		if shown {
			b.data(true, 2, 100, 0, 100, 7, nil)
			b.after(10 * time.Millisecond)
		}
		x := b.data(true, 4, 100, 0, 100, 6, nil)
		b.server = netip.MustParseAddr("198.18.0.2")
		b.after(10*time.Microsecond).data(true, 6, 1000, 0, 1000, 6, nil)
		b.after(10*time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)
		rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-002")
		if shown {
			wantViolations(t, rep, "HOMA-PRIO-002")
			wantDowngraded(t, rep, "HOMA-PRIO-002", x, CauseTOSRace)
		} else {
			wantViolations(t, rep, "HOMA-PRIO-002", x)
		}
	}
}

// TestTOSRaceFarApart: the read of TestTOSRaceReadAnothersLevel 300µs
// apart is more than jitter on the client's own link, so it stays a
// violation there, but within slack at a switch, where queueing may have
// parted two packets that left together; 5 ms apart it is a violation
// wherever the capture is.
func TestTOSRaceFarApart(t *testing.T) {
	for _, c := range []struct {
		gap      time.Duration
		atSwitch bool
		raced    bool
	}{
		{300 * time.Microsecond, false, false},
		{300 * time.Microsecond, true, true},
		{5 * time.Millisecond, false, false},
		{5 * time.Millisecond, true, false},
	} {
		b := newTrace(t, wire.VersionCurrent)
		busy(b, true, 150)
		x, _ := raceRead(b, c.gap)
		cp := HostPoint(b.client)
		if c.atSwitch {
			cp = Switch
		}
		rep := b.checkAt(cp, "linux", "HOMA-PRIO-002")
		if c.raced {
			wantViolations(t, rep, "HOMA-PRIO-002")
			wantDowngraded(t, rep, "HOMA-PRIO-002", x, CauseTOSRace)
		} else {
			wantViolations(t, rep, "HOMA-PRIO-002", x)
			wantCounts(t, rep, "HOMA-PRIO-002", 123, 122, 1, 0)
		}
	}
}

// TestTOSRaceNoNeighbourWanted: a wrong level is a violation when no
// packet of its socket near it wanted that level: level 3 beside packets
// that wanted 6 and 7; a level another socket of the same host wanted
// (client port 32770); and a sender that puts the wrong level on a run of
// packets (five ACKs at 6 beside one DATA at 6): one packet's write of the
// TOS excuses one wrong level, so four ACKs stay violations. Without the
// race excuse the last ACK run has five violations, not four.
func TestTOSRaceNoNeighbourWanted(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	busy(b, true, 150)
	b.data(true, 2, 1000, 0, 1000, 6, nil)
	odd := b.after(5*time.Microsecond).data(true, 4, 100, 0, 100, 3, nil) // nobody wanted 3
	b.after(5*time.Microsecond).data(true, 6, 100, 0, 100, 7, nil)
	b.cport = 32770
	other := b.after(5*time.Microsecond).data(true, 8, 100, 0, 100, 6, nil) // port 32768 wanted 6
	b.cport = 32768
	b.after(time.Millisecond).data(true, 10, 1000, 0, 1000, 6, nil)
	var acks []int
	for cid := uint64(12); cid < 22; cid += 2 {
		acks = append(acks, b.after(10*time.Microsecond).withPrio(b.ack(cid), 6))
	}
	b.after(10*time.Millisecond).data(true, 22, 100, 0, 100, 7, nil)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-PRIO-00[12]")
	wantViolations(t, rep, "HOMA-PRIO-002", odd, other)
	wantViolations(t, rep, "HOMA-PRIO-001", acks[1:]...)
	wantDowngraded(t, rep, "HOMA-PRIO-001", acks[0], CauseTOSRace)
	wantCounts(t, rep, "HOMA-PRIO-001", 35, 30, 4, 1)
}

// TestTOSRaceNotOnIPv6: ip6_xmit takes the traffic class with each packet,
// so the read of TestTOSRaceReadAnothersLevel over IPv6, in a socket as
// busy, is a violation. Without IPv6's exclusion it would be inconclusive.
func TestTOSRaceNotOnIPv6(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.client, b.server = netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
	busy(b, true, 150)
	x, _ := raceRead(b, 10*time.Microsecond)
	for _, cp := range []CapturePoint{HostPoint(b.client), Switch} {
		rep := b.checkAt(cp, "linux", "HOMA-PRIO-002")
		wantViolations(t, rep, "HOMA-PRIO-002", x)
		wantCounts(t, rep, "HOMA-PRIO-002", 123, 122, 1, 0)
	}
}

// TestTOSRaceAcrossRules: the excuse is one mechanism for every rule that
// judges a level: in busy sockets, a GRANT (HOMA-PRIO-001, wants 7) at
// level 4 beside the server's response DATA that wanted and carried 4
// (HOMA-PRIO-002) is inconclusive. Scheduled DATA at the level a RESEND's
// retransmission of the same RPC wanted and carried (HOMA-GRANT-008
// beside HOMA-RESEND-004) is not: one handler sends the retransmission and
// the bytes the RESEND released in turn, each storing its level just
// before its own read (raceEntry.sameRPC; helper-221 found it excused).
// The budget counts the packets the rules checked judged (HOMA-PRIO-002
// judges the busy ones).
func TestTOSRaceAcrossRules(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	busy(b, false, 150)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.message(true, 4, 200000, 0, 40000, 40000, 4)
	g := b.after(10*time.Microsecond).withPrio(b.grant(false, 4, 50000, 0), 4) // wants 7
	b.after(5*time.Microsecond).data(false, 2, 100000, 0, 1424, 4, nil)        // wants 4
	rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-PRIO-00[12]")
	wantViolations(t, rep, "HOMA-PRIO-001")
	wantViolations(t, rep, "HOMA-PRIO-002")
	wantDowngraded(t, rep, "HOMA-PRIO-001", g, CauseTOSRace)

	b = newTrace(t, wire.VersionCurrent)
	busy(b, true, 150)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 60000, 2)
	b.after(3*time.Millisecond).data(true, 2, 100000, 40000, 1424, 2, nil) // the GRANT's level, right
	b.after(5*time.Millisecond).resend(false, 2, 1424, 1424, 7)
	sched := b.after(10*time.Microsecond).data(true, 2, 100000, 41424, 1424, 7, nil) // wants 2
	b.after(5*time.Microsecond).resent(true, 2, 100000, 1424, 1424, 7)               // wants 7
	b.after(10*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	rep = b.checkAt(HostPoint(b.client), "linux", "HOMA-GRANT-008,HOMA-RESEND-004,HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-GRANT-008", sched)
	wantViolations(t, rep, "HOMA-RESEND-004")
}

// TestTOSRaceNotWithCause: packets that cannot have been in flight at
// the sender together do not race. A client restarts its 500-byte request
// (level 6) at level 7 after RPC_UNKNOWN: its RESEND at 7 just before had
// left before the RPC_UNKNOWN that prompted the restart came (Result.Wants
// after), and its CUTOFFS at 7 just after answers the server's response,
// sent after the restart arrived (answersSince): HOMA-PRIO-003 stays
// violated. Without either it is inconclusive.
func TestTOSRaceNotWithCause(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 500, 0, 500, 6, nil)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(20*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	restart := b.after(20*time.Microsecond).resent(true, 2, 500, 0, 500, 7)
	b.after(5*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(5*time.Microsecond).cutoffs(true, 2, 1)
	b.after(10*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	for _, cp := range []CapturePoint{HostPoint(b.client), Switch} {
		rep := b.checkAt(cp, "linux", "HOMA-PRIO-00[13]")
		wantViolations(t, rep, "HOMA-PRIO-003", restart)
	}
}

// TestTOSRacePredicted: the DATA prediction (predict.go) feeds the race's
// bookkeeping what the general path feeds it. The spec tests verify each
// predicted packet by running the general path instead, so this test
// checks TestTOSRaceBusySocket's trace with verifyPrefilters off (the
// predicted path taken, as homatest check takes it) against the same
// trace checked with it on: the reports must be equal, with packets
// predicted.
func TestTOSRacePredicted(t *testing.T) {
	run := func(verify bool) (*Report, int) {
		b := newTrace(t, wire.VersionCurrent)
		interleaved(b, 282, 120, 240, 260)
		rep, c := b.checkVerify(HostPoint(b.client), "linux", "HOMA-PRIO-002", verify, twoLevels...)
		return rep, c.predicted
	}
	want, _ := run(true)
	got, predicted := run(false)
	if predicted == 0 {
		t.Fatal("no packet predicted: the test does not reach the predicted path")
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("predicted path (%d packets predicted) reports\n%s\nthe general path\n%s", predicted, gj, wj)
	}
}
