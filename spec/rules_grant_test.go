package spec

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// xfer lists the frames xferRequest emitted.
type xfer struct {
	unsched, sched, grants []int
}

// xferRequest plays a msgLen-byte request of RPC cid from client to server
// as HomaModule sends it: right after sendmsg the unscheduled packets
// [0, u) at uPrio (1424-byte packets with a boundary forced at u), then
// rounds in which the server, having received everything sent so far,
// grants min(received+window, msgLen) at gPrio and the client sends every
// packet that starts below the new offset (homa_xmit_data sends whole
// packets, so the last packet of a round may overshoot the offset by less
// than 1424 bytes). Packets are 10µs apart.
func (b *traceBuilder) xferRequest(cid uint64, msgLen, u, window uint32, uPrio, gPrio uint8) xfer {
	var x xfer
	x.unsched = b.message(true, cid, msgLen, 0, u, u, uPrio)
	sent := u
	for sent < msgLen {
		b.after(10 * time.Microsecond)
		g := min(sent+window, msgLen)
		x.grants = append(x.grants, b.grant(false, cid, g, gPrio))
		end := sent
		for end < g {
			end = min(end+1424, msgLen)
		}
		b.after(10 * time.Microsecond)
		x.sched = append(x.sched, b.message(true, cid, msgLen, sent, end, u, gPrio)...)
		sent = end
	}
	return x
}

// TestGrant001OnlyLongMessages: GRANTs go only to messages longer than
// unsched_bytes; a GRANT whose message has no DATA in the capture is
// inconclusive.
func TestGrant001OnlyLongMessages(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 100000, 40000, 200000, 4, 0) // main: one GRANT to 100000
		b.xferRequest(4, 500000, 40000, 200000, 4, 0) // three GRANTs
		b.message(true, 6, 30000, 0, 30000, 40000, 4) // short: no GRANT
		rep := b.check("linux", "HOMA-GRANT-001")
		wantClean(t, rep, "HOMA-GRANT-001")
		wantViolations(t, rep, "HOMA-GRANT-001")

		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 30000, 10000, 10000, 4, 0) // 30000 > unsched_bytes 10000 on 6.1.38
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-001"), "HOMA-GRANT-001")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 30000, 0, 30000, 40000, 4) // fits in unsched_bytes 40000
		bad := b.grant(false, 2, 30000, 0)
		b.message(true, 4, 40000, 0, 40000, 40000, 4) // exactly unsched_bytes: U = length
		edge := b.grant(false, 4, 40000, 0)
		rep := b.check("linux", "HOMA-GRANT-001")
		wantViolations(t, rep, "HOMA-GRANT-001", bad, edge)
	})
	t.Run("inconclusive", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		unknown := b.grant(false, 8, 50000, 0) // no DATA of RPC 8 captured
		rep := b.check("linux", "HOMA-GRANT-001")
		wantInconclusive(t, rep, "HOMA-GRANT-001", unknown)
		wantViolations(t, rep, "HOMA-GRANT-001")
	})
}

// TestGrant002OffsetInRange: U < GRANT offset ≤ message_length. The
// violation reproduces BR-06 (@312e4bd): grant offsets computed on rounded
// packet boundaries that overrun the message, and a GRANT that does not
// raise the offset above the unscheduled bytes.
func TestGrant002OffsetInRange(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		b.xferRequest(4, 10001, 10000, 10000, 4, 0) // one byte above U: GRANT 10001
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-002"), "HOMA-GRANT-002")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 30000, 0, 10000, 10000, 4)
		atU := b.grant(false, 2, 10000, 0) // not above U = 10000
		b.message(true, 2, 30000, 10000, 21392, 10000, 0)
		b.grant(false, 2, 22816, 0)
		b.message(true, 2, 30000, 21392, 30000, 10000, 0)
		past := b.grant(false, 2, 31328, 0) // rounded up to 22 packets of 1424: past the 30000-byte message
		rep := b.check("linux-2024", "HOMA-GRANT-002")
		wantViolations(t, rep, "HOMA-GRANT-002", atU, past)
	})
	// A client restarting its request after the server's RPC_UNKNOWN
	// resends what it had sent with incoming = tx_end (homa_rpc_unknown_pkt,
	// homa_resend_data), below U here; the server's new RPC starts its
	// horizon there (homa_grant_init_rpc) and may grant below U, never at
	// or below that incoming. A new-user trial (W4 at load 2.5 over a
	// 1 Gbit/s switch) saw the reference's such GRANTs flagged.
	restart := func(b *traceBuilder) {
		b.message(true, 2, 30000, 0, 2848, 10000, 4)
		b.ctl(false, 2, wire.TypeRPCUnknown)
		for _, o := range []uint32{0, 1424} {
			b.data(true, 2, 30000, o, 1424, 4, func(f *wire.DataFields) { f.Retransmit, f.SegOffset, f.Incoming = 1, o, 2848 })
		}
		b.message(true, 2, 30000, 2848, 10000, 10000, 4)
	}
	t.Run("restart clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		restart(b)
		b.grant(false, 2, 4272, 0) // above the restart's incoming 2848, below U
		b.grant(false, 2, 11424, 0)
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-002"), "HOMA-GRANT-002")
	})
	t.Run("restart violation", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		restart(b)
		g := b.grant(false, 2, 2848, 0) // not above the restart's incoming
		wantViolations(t, b.check("linux-2024", "HOMA-GRANT-002"), "HOMA-GRANT-002", g)
	})
	t.Run("inconclusive", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		g := b.grant(false, 2, 20000, 0)
		rep := b.check("linux-2024", "HOMA-GRANT-002")
		wantInconclusive(t, rep, "HOMA-GRANT-002", g)
		wantViolations(t, rep, "HOMA-GRANT-002")
	})
}

// TestGrant003NoRepeatedOffsets: GRANT offsets strictly increase. The
// BR-07 case (@7774497) is a receiver that keeps re-granting a fully
// granted message: identical GRANTs at offset = message_length, spaced by
// data arrivals. main may legitimately repeat the length (facts §8), so
// the fault shows on linux-2024 only.
func TestGrant003NoRepeatedOffsets(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		x := b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		if len(x.grants) < 5 {
			t.Fatalf("want several GRANTs, got %d", len(x.grants))
		}
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-003"), "HOMA-GRANT-003")

		b = newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 500000, 40000, 200000, 4, 0)
		wantClean(t, b.check("linux", "HOMA-GRANT-003"), "HOMA-GRANT-003")
	})
	// br07 plays a 40000-byte request on 6.1.38 settings whose receiver
	// re-sends GRANT(40000) after every DATA that arrives once the message
	// is fully granted. It returns the repeated GRANTs.
	br07 := func(b *traceBuilder) []int {
		b.message(true, 2, 40000, 0, 10000, 10000, 4)
		b.grant(false, 2, 20000, 0)
		b.message(true, 2, 40000, 10000, 21392, 10000, 0)
		b.grant(false, 2, 31392, 0)
		b.message(true, 2, 40000, 21392, 32784, 10000, 0)
		b.grant(false, 2, 40000, 0) // fully granted
		var repeats []int
		for off := uint32(32784); off < 40000; off += 1424 {
			b.after(10 * time.Microsecond)
			b.data(true, 2, 40000, off, int(min(1424, 40000-off)), 0, func(f *wire.DataFields) { f.Incoming = 10000 })
			if off+1424 < 40000 {
				repeats = append(repeats, b.grant(false, 2, 40000, 0))
			}
		}
		return repeats
	}
	t.Run("violation", func(t *testing.T) {
		// BR-07 on linux_6.1.38: every repeat is a violation on the
		// server's link. Elsewhere the first, an identical copy of the
		// full GRANT less than jitter later, may be the network's.
		b := newTrace(t, wire.Version2024)
		repeats := br07(b)
		if len(repeats) != 5 {
			t.Fatalf("built %d repeated GRANTs, want 5", len(repeats))
		}
		rep := b.checkAt(HostPoint(b.server), "linux-2024", "HOMA-GRANT-003")
		wantViolations(t, rep, "HOMA-GRANT-003", repeats...)
		rep = b.check("linux-2024", "HOMA-GRANT-003")
		wantViolations(t, rep, "HOMA-GRANT-003", repeats[1:]...)
		wantDowngraded(t, rep, "HOMA-GRANT-003", repeats[0], CauseDuplicate)

		// A decrease, and a repeat of an offset below the length.
		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		b.grant(false, 2, 240000, 0)
		down := b.grant(false, 2, 200000, 0) // reordered or recomputed downwards
		same := b.grant(false, 2, 240000, 0)
		b.grant(false, 2, 440000, 0)
		// On the server's link both may come from two cores: the lower
		// offset, set before the first GRANT above it and sent less than
		// slack after it, through another core's NIC queue; on main the
		// repeat of the latest offset, less than slack after the GRANT
		// that first carried it (homa_grant_send reads msgin.granted after
		// the RPC's lock is released). Inconclusive.
		rep = b.checkAt(HostPoint(b.server), "linux", "HOMA-GRANT-003")
		wantViolations(t, rep, "HOMA-GRANT-003")
		wantInconclusive(t, rep, "HOMA-GRANT-003", down)
		wantInconclusive(t, rep, "HOMA-GRANT-003", same)
		// More than slack apart, both are violations there.
		bs := newTrace(t, wire.VersionCurrent)
		bs.message(true, 2, 500000, 0, 40000, 40000, 4)
		bs.grant(false, 2, 240000, 0)
		late := []int{bs.after(3*time.Millisecond).grant(false, 2, 200000, 0), bs.after(3*time.Millisecond).grant(false, 2, 240000, 0)}
		rep = bs.checkAt(HostPoint(bs.server), "linux", "HOMA-GRANT-003")
		wantViolations(t, rep, "HOMA-GRANT-003", late...)
		if !strings.Contains(rep.Violations[0].Why, "does not exceed the earlier GRANT offset 240000") {
			t.Errorf("reason %q does not name the earlier offset", rep.Violations[0].Why)
		}
		// Between the hosts the fresh lower offset right after the higher
		// one may be an older GRANT the network reordered, and the repeat,
		// an identical copy of the first GRANT less than jitter after it,
		// a copy the network made that trailed the reordered one (the
		// simulator's runs with duplication and reordering show both).
		rep = b.check("linux", "HOMA-GRANT-003")
		wantDowngraded(t, rep, "HOMA-GRANT-003", down, CauseReorder)
		wantDowngraded(t, rep, "HOMA-GRANT-003", same, CauseDuplicate)
		// A repeat more than jitter later is no copy: on main, within
		// slack, it may be a second core's GRANT; past slack, or on
		// linux_6.1.38 (which computes and sends each GRANT under the
		// RPC's lock, only for a positive increment), it is a violation.
		for _, tc := range []struct {
			profile string
			v       wire.Version
			after   time.Duration
			race    bool
		}{
			{"linux", wire.VersionCurrent, 300 * time.Microsecond, true},
			{"linux", wire.VersionCurrent, 3 * time.Millisecond, false},
			{"linux-2024", wire.Version2024, 300 * time.Microsecond, false},
		} {
			b = newTrace(t, tc.v)
			b.message(true, 2, 500000, 0, 40000, 40000, 4)
			b.grant(false, 2, 240000, 0)
			down = b.grant(false, 2, 200000, 0)
			same = b.after(tc.after).grant(false, 2, 240000, 0)
			rep = b.check(tc.profile, "HOMA-GRANT-003")
			if tc.race {
				wantViolations(t, rep, "HOMA-GRANT-003")
				wantInconclusive(t, rep, "HOMA-GRANT-003", same)
			} else {
				wantViolations(t, rep, "HOMA-GRANT-003", same)
			}
			wantDowngraded(t, rep, "HOMA-GRANT-003", down, CauseReorder)
		}
	})
	t.Run("main repeats the length", func(t *testing.T) {
		// The same GRANT pattern on main is tolerated (homa_grant_try_send
		// may send a zero increment to a fully granted RPC).
		b := newTrace(t, wire.VersionCurrent)
		br07(b)
		rep := b.check("linux", "HOMA-GRANT-003", "unsched_bytes=10000")
		wantClean(t, rep, "HOMA-GRANT-003")
	})
}

// TestGrant004NoGrantAfterComplete reproduces BR-06 (@312e4bd): a receiver
// whose grant offsets do not line up with the sender's packets keeps
// sending GRANTs after the message has completely arrived.
func TestGrant004NoGrantAfterComplete(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.xferRequest(2, 30000, 10000, 10000, 4, 0)
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-004"), "HOMA-GRANT-004")

		// main may repeat GRANT(length) on a later incoming batch (facts
		// §8); one emitted before the last DATA arrived can reach the
		// capture point 20µs after that DATA: inside the slack.
		b = newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 500000, 40000, 200000, 4, 0)
		b.after(20 * time.Microsecond)
		b.grant(false, 2, 500000, 0)
		wantClean(t, b.check("linux", "HOMA-GRANT-004"), "HOMA-GRANT-004")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		x := b.xferRequest(2, 30000, 10000, 10000, 4, 0)
		done := x.sched[len(x.sched)-1] // the DATA that completes the message
		b.after(3 * time.Millisecond)
		late1 := b.grant(false, 2, 30000, 0)
		b.after(time.Millisecond)
		late2 := b.grant(false, 2, 30000, 0)
		rep := b.check("linux-2024", "HOMA-GRANT-004")
		wantViolations(t, rep, "HOMA-GRANT-004", late1, late2)
		if f := rep.Violations[0].Frames; len(f) != 1 || f[0] != done {
			t.Errorf("violation names frames %v, want the completing DATA %d", f, done)
		}

		// With a tight slack (capture on the receiver's link) a GRANT
		// 500µs after completion is already late.
		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 30000, 10000, 10000, 4, 0)
		b.after(500 * time.Microsecond)
		late := b.grant(false, 2, 30000, 0)
		rep = b.check("linux-2024", "HOMA-GRANT-004", "slack=100us")
		wantViolations(t, rep, "HOMA-GRANT-004", late)
	})
}

// TestGrant005WithinHorizon: new DATA stays within the grant horizon plus
// one skb.
func TestGrant005WithinHorizon(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-005"), "HOMA-GRANT-005")

		// main HEAD: max_gso_size 0 means one segment per skb; a packet
		// that starts below the GRANT offset may still end past it.
		b = newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 500000, 40000, 200000, 4, 0)
		wantClean(t, b.check("linux", "HOMA-GRANT-005", "max_gso_size=0"), "HOMA-GRANT-005")

		// RTX-08: a RESEND reaching past the horizon (lost GRANT) lets
		// the sender transmit new data up to its end.
		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 100000, 0, 40000, 40000, 4)
		b.after(5 * time.Millisecond)
		b.resend(false, 2, 40000, 20000, 7)
		b.message(true, 2, 100000, 40000, 60000, 40000, 0)
		wantClean(t, b.check("linux", "HOMA-GRANT-005", "max_gso_size=0"), "HOMA-GRANT-005")
	})
	t.Run("violation", func(t *testing.T) {
		// The sender ignores GRANT 20000 and keeps going: packets ending
		// past 20000 + max_gso_size 10000 are violations.
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 4)
		b.grant(false, 2, 20000, 0)
		frames := b.message(true, 2, 100000, 10000, 34208, 10000, 0)
		// With max_gso_size 10000 an IPv4 skb holds 6 segments, 8544
		// bytes, so the overshoot past 20000 must stay below 8544:
		// [26688, 28112) ends 8112 past it; [28512, 29936) and later do not
		// (the 7th segment of a batch is SND-03's violation).
		rep := b.check("linux-2024", "HOMA-GRANT-005")
		wantViolations(t, rep, "HOMA-GRANT-005", frames[len(frames)-4:]...)

		// main HEAD without GSO: one packet past the offset is the limit.
		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		b.grant(false, 2, 45000, 0)
		frames = b.message(true, 2, 500000, 40000, 48544, 40000, 0)
		// starts 40000, 41424, 42848, 44272 (ends 45696: overshoot < 1424),
		// 45696 (ends 47120 > 46424) and 47120.
		rep = b.check("linux", "HOMA-GRANT-005", "max_gso_size=0")
		wantViolations(t, rep, "HOMA-GRANT-005", frames[4:]...)
	})
}

// TestGrant006Overcommit: a receiver has granted-but-unreceived bytes
// outstanding for at most max_overcommit messages when a GRANT leaves.
func TestGrant006Overcommit(t *testing.T) {
	// three 100000-byte requests from different RPCs, unscheduled parts
	// sent; each later gets a GRANT.
	start := func(b *traceBuilder, msgLen, u uint32) {
		for _, cid := range []uint64{2, 4, 6} {
			b.message(true, cid, msgLen, 0, u, u, 4)
		}
	}
	t.Run("clean", func(t *testing.T) {
		// linux_6.1.38, max_overcommit 2: RPCs 2 and 4 are active (levels
		// 1 and 0); RPC 6 gets its first GRANT once RPC 2 has completed.
		b := newTrace(t, wire.Version2024)
		start(b, 30000, 10000)
		b.grant(false, 2, 20000, 1)
		b.grant(false, 4, 20000, 0)
		b.message(true, 2, 30000, 10000, 21392, 10000, 1)
		b.grant(false, 2, 30000, 1)
		b.message(true, 2, 30000, 21392, 30000, 10000, 1)
		b.grant(false, 6, 20000, 0)
		rep := b.check("linux-2024", "HOMA-GRANT-006", "max_overcommit=2")
		wantClean(t, rep, "HOMA-GRANT-006")

		// main: a FIFO grant (level 6) to the oldest message is outside
		// the overcommit limit.
		b = newTrace(t, wire.VersionCurrent)
		for _, cid := range []uint64{2, 4, 6} {
			b.message(true, cid, 500000, 0, 40000, 40000, 4)
		}
		b.grant(false, 4, 240000, 1)
		b.grant(false, 6, 240000, 0)
		b.grant(false, 2, 90000, 6) // FIFO: fifo_grant_increment 50000
		rep = b.check("linux", "HOMA-GRANT-006", "max_overcommit=2")
		wantClean(t, rep, "HOMA-GRANT-006")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		start(b, 100000, 10000)
		b.grant(false, 2, 20000, 1)
		b.grant(false, 4, 20000, 0)
		third := b.grant(false, 6, 20000, 0)
		rep := b.check("linux-2024", "HOMA-GRANT-006", "max_overcommit=2")
		wantViolations(t, rep, "HOMA-GRANT-006", third)
		if !strings.Contains(rep.Violations[0].Why, "the number of messages granted by ") || !strings.Contains(rep.Violations[0].Why, " is 3, above the limit 2") {
			t.Errorf("reason %q", rep.Violations[0].Why)
		}

		// max_overcommit 1, grants alternating between two messages: the
		// message granted may already have had GRANTs (and be caught up)
		// and still count once this GRANT is out.
		b = newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 4)
		b.message(true, 4, 100000, 0, 10000, 10000, 4)
		b.grant(false, 2, 20000, 0)
		b.message(true, 2, 100000, 10000, 21392, 10000, 0)
		b.grant(false, 4, 20000, 0)
		b.message(true, 4, 100000, 10000, 21392, 10000, 0)
		b.grant(false, 2, 31392, 0)
		both := b.grant(false, 4, 31392, 0) // RPC 2 still has 10000 bytes outstanding
		rep = b.check("linux-2024", "HOMA-GRANT-006", "max_overcommit=1")
		wantViolations(t, rep, "HOMA-GRANT-006", both)
	})
}

// TestGrant007ScheduledPriority: SRPT GRANTs use levels 0..max_sched_prio.
// The violation reproduces BR-10 (@e3cce74, @0fa4c1b): a GRANT to an RPC
// outside the active set (rank -1) gets homa_grant_priority(rank -1) =
// max_sched_prio + 1, i.e. level 4, above every scheduled level.
func TestGrant007ScheduledPriority(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		// main, five active 1 MB requests: ranks 0..4 get levels
		// max(0, min(3, 5-1) - rank) = 3, 2, 1, 0, 0; and a FIFO GRANT
		// at num_priorities-2 = 6.
		b := newTrace(t, wire.VersionCurrent)
		for i, p := range []uint8{3, 2, 1, 0, 0} {
			cid := uint64(2 + 2*i)
			b.message(true, cid, 1000000, 0, 40000, 40000, 4)
			b.grant(false, cid, 106666, p)
		}
		b.grant(false, 2, 156666, 6) // FIFO grant to the oldest
		wantClean(t, b.check("linux", "HOMA-GRANT-007"), "HOMA-GRANT-007")

		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-007"), "HOMA-GRANT-007")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		for i, p := range []uint8{3, 2, 1, 0, 0} {
			cid := uint64(2 + 2*i)
			b.message(true, cid, 1000000, 0, 40000, 40000, 4)
			b.grant(false, cid, 106666, p)
		}
		b.message(true, 12, 1000000, 0, 40000, 40000, 4) // sixth, not active
		br10 := b.grant(false, 12, 106666, 4)            // rank -1: level 4
		top := b.grant(false, 2, 173332, 7)
		rep := b.check("linux", "HOMA-GRANT-007")
		wantViolations(t, rep, "HOMA-GRANT-007", br10, top)

		// linux_6.1.38 has no FIFO grants: level 6 is a violation there.
		b = newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 4)
		fifo := b.grant(false, 2, 20000, 6)
		rep = b.check("linux-2024", "HOMA-GRANT-007")
		wantViolations(t, rep, "HOMA-GRANT-007", fifo)
	})
}

// TestGrant008ScheduledDataAtGrantPriority: scheduled DATA goes out at a
// priority some GRANT for the message carried.
func TestGrant008ScheduledDataAtGrantPriority(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 4)
		b.grant(false, 2, 20000, 1)
		b.message(true, 2, 100000, 10000, 21392, 10000, 1)
		b.grant(false, 2, 31392, 0) // a shorter message arrived: level drops
		b.message(true, 2, 100000, 21392, 32816, 10000, 0)
		// A retransmission of a scheduled packet goes at the RESEND's
		// level 7 and is not judged by this rule.
		b.after(5 * time.Millisecond)
		b.resend(false, 2, 31392, 1424, 7) // [31392, 32816) was lost
		b.data(true, 2, 100000, 31392, 1424, 7, func(f *wire.DataFields) {
			f.Retransmit, f.SegOffset, f.Incoming = 1, 31392, 32816
		})
		wantClean(t, b.check("linux-2024", "HOMA-GRANT-008"), "HOMA-GRANT-008")

		b = newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 500000, 40000, 200000, 4, 0)
		wantClean(t, b.check("linux", "HOMA-GRANT-008"), "HOMA-GRANT-008")
	})
	t.Run("violation", func(t *testing.T) {
		// The sender keeps the unscheduled level 4 for scheduled data.
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 4)
		b.grant(false, 2, 20000, 0)
		bad := b.message(true, 2, 100000, 10000, 21392, 10000, 4)
		rep := b.check("linux-2024", "HOMA-GRANT-008")
		wantViolations(t, rep, "HOMA-GRANT-008", bad...)
		if !strings.Contains(rep.Violations[0].Why, "priority 4; the latest GRANT the sender has processed says {0}") {
			t.Errorf("reason %q", rep.Violations[0].Why)
		}
	})
}

// TestGrant008LatestGrantPriority: after the receiver lowers a message's
// priority from 2 to 0, DATA may keep level 2 only while the new GRANT can
// still be in flight (slack); later DATA at 2 is a violation (CTRL-02) on
// the sender's link. At a tap between the hosts the new GRANT may not
// have reached the sender yet (a downgrade) until the sender sends bytes
// only it authorised; after that, level 2 is a violation there too. The
// downgrade's cause says what the capture shows: queueing (the GRANT on
// its way) in a loss-free trace, where it used to say loss after the
// capture point; loss after the capture point where the capture shows
// loss toward the sender (TestGrant008LossTowardSender).
func TestGrant008LatestGrantPriority(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 100000, 0, 10000, 10000, 4)
	b.grant(false, 2, 30000, 2)
	b.message(true, 2, 100000, 10000, 15696, 10000, 2)
	g := b.grant(false, 2, 40000, 0)
	b.after(500 * time.Microsecond)
	b.data(true, 2, 100000, 15696, 1424, 2, nil) // GRANT 0 still in flight: allowed
	b.after(3 * time.Millisecond)
	bad := b.data(true, 2, 100000, 17120, 1424, 2, nil)
	b.data(true, 2, 100000, 18544, 1424, 0, nil)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux-2024", "HOMA-GRANT-008"), "HOMA-GRANT-008", bad)
	rep := b.check("linux-2024", "HOMA-GRANT-008")
	wantViolations(t, rep, "HOMA-GRANT-008")
	wantDowngraded(t, rep, "HOMA-GRANT-008", bad, CauseQueueing)
	if f := rep.Inconclusive[0]; !strings.Contains(f.Why, fmt.Sprintf("frame %d: 198.18.0.1 sent no byte that only this GRANT (offset 40000, priority 0)", g)) {
		t.Errorf("reason %q", f.Why)
	}

	// A segment at 37120 or beyond (30000 plus the 7120 bytes after the
	// first segment of a 6-segment skb) needed the GRANT to 40000.
	b.message(true, 2, 100000, 19968, 39904, 10000, 0)
	late := b.data(true, 2, 100000, 39904, 96, 2, nil)
	rep = b.check("linux-2024", "HOMA-GRANT-008")
	wantViolations(t, rep, "HOMA-GRANT-008", late)
}

// TestGrant008LossTowardSender: where the capture shows loss toward the
// sender (it asked again for response bytes the capture saw sent to it),
// DATA at the older priority is downgraded for loss after the capture
// point, with that evidence.
func TestGrant008LossTowardSender(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.data(true, 4, 100, 0, 100, 7, nil)
	b.data(false, 4, 3000, 0, 1424, 7, nil)
	b.data(false, 4, 3000, 1424, 1424, 7, nil)
	b.data(false, 4, 3000, 2848, 152, 7, nil)
	lost := b.after(time.Millisecond).resend(true, 4, 0, 1424, 7) // the client lost response bytes the capture saw
	b.message(true, 2, 100000, 0, 10000, 10000, 4)
	b.grant(false, 2, 30000, 2)
	b.message(true, 2, 100000, 10000, 15696, 10000, 2)
	b.grant(false, 2, 40000, 0)
	b.after(3500 * time.Microsecond)
	bad := b.data(true, 2, 100000, 15696, 1424, 2, nil)
	rep := b.check("linux-2024", "HOMA-GRANT-008")
	wantViolations(t, rep, "HOMA-GRANT-008")
	wantDowngraded(t, rep, "HOMA-GRANT-008", bad, CauseLossAfter)
	if f := rep.Inconclusive[0]; !slices.Contains(f.Frames, lost) || !strings.Contains(f.Why, "198.18.0.1 asked again for bytes") {
		t.Errorf("frames %v, why %q: want the RESEND (frame %d) as the evidence", f.Frames, f.Why, lost)
	}
}

// TestGrant009WithinWindow: grants that keep received + window granted on
// main (dynamic: 200000 with one active message), on main with the
// captures' window 10000, and on linux_6.1.38 (window 10000); a FIFO grant
// (level 6) beyond the window is not judged.
func TestGrant009WithinWindow(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	x := b.xferRequest(2, 500000, 40000, 200000, 4, 0)
	rep := b.check("linux", "HOMA-GRANT-009")
	wantClean(t, rep, "HOMA-GRANT-009")
	wantCounts(t, rep, "HOMA-GRANT-009", len(x.grants), len(x.grants), 0, 0)

	b = newTrace(t, wire.VersionCurrent)
	x = b.xferRequest(2, 100000, 40000, 10000, 4, 0)
	b.message(true, 4, 200000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 4, 50000, 0)
	b.after(10*time.Microsecond).grant(false, 4, 100000, 6) // FIFO grant: +50000
	rep = b.check("linux", "HOMA-GRANT-009", "window=10000")
	wantClean(t, rep, "HOMA-GRANT-009")
	wantCounts(t, rep, "HOMA-GRANT-009", len(x.grants)+1, len(x.grants)+1, 0, 0)

	b = newTrace(t, wire.Version2024)
	b.xferRequest(2, 100000, 10000, 10000, 4, 0)
	wantClean(t, b.check("linux-2024", "HOMA-GRANT-009"), "HOMA-GRANT-009")
}

// TestGrant009BeyondWindow: a GRANT 210000 bytes past what arrived on main
// (more than the largest dynamic window, 200000), one 20000 past on main
// with window 10000 set (and within the dynamic window without it), and on
// linux_6.1.38 a GRANT that ignores a lost packet's gap.
func TestGrant009BeyondWindow(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	far := b.after(10*time.Microsecond).grant(false, 2, 250000, 0)
	rep := b.check("linux", "HOMA-GRANT-009")
	wantViolations(t, rep, "HOMA-GRANT-009", far)
	if f := rep.Violations[0]; f.Why != "GRANT offset 250000 is 210000 bytes beyond the 40000 bytes of the message seen so far; the window allows 200000 (dynamic window max_incoming/2 = 400000/2 with one active message)" {
		t.Errorf("why %q", f.Why)
	}

	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	wide := b.after(10*time.Microsecond).grant(false, 2, 60000, 0)
	wantViolations(t, b.check("linux", "HOMA-GRANT-009", "window=10000"), "HOMA-GRANT-009", wide)
	wantClean(t, b.check("linux", "HOMA-GRANT-009"), "HOMA-GRANT-009")

	b = newTrace(t, wire.Version2024)
	b.message(true, 2, 100000, 0, 2848, 10000, 4)
	b.message(true, 2, 100000, 4272, 10000, 10000, 4) // [2848, 4272) lost
	gap := b.after(10*time.Microsecond).grant(false, 2, 20000, 0)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-009"), "HOMA-GRANT-009", gap)
}

// TestGrant009Unknown: a GRANT for a message with no DATA in the capture,
// and one for a message whose first bytes are not in it (the capture
// started mid-message).
func TestGrant009Unknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	noData := b.grant(false, 2, 50000, 0)
	b.message(true, 4, 500000, 20000, 40000, 40000, 4)
	mid := b.after(10*time.Microsecond).grant(false, 4, 240000, 0)
	rep := b.check("linux", "HOMA-GRANT-009")
	wantInconclusive(t, rep, "HOMA-GRANT-009", noData)
	wantInconclusive(t, rep, "HOMA-GRANT-009", mid)
	wantCounts(t, rep, "HOMA-GRANT-009", 2, 0, 0, 2)
}

// TestGrant010FirstGrant: first GRANTs 3 ms after the unscheduled bytes
// (main) and right after them (linux_6.1.38); a message granted before
// its unscheduled bytes were all in (main's window lets the receiver grant
// at its first packets) is not judged.
func TestGrant010FirstGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(3*time.Millisecond).grant(false, 2, 100000, 0)
	b.message(true, 4, 300000, 0, 2848, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 4, 202848, 0)
	b.message(true, 4, 300000, 2848, 40000, 40000, 4)
	rep := b.check("linux", "HOMA-GRANT-010")
	wantClean(t, rep, "HOMA-GRANT-010")
	wantCounts(t, rep, "HOMA-GRANT-010", 1, 1, 0, 0)

	b = newTrace(t, wire.Version2024)
	b.xferRequest(2, 100000, 10000, 10000, 4, 0)
	wantClean(t, b.check("linux-2024", "HOMA-GRANT-010"), "HOMA-GRANT-010")
}

// TestGrant010NoGrant reproduces BR-09 (@2be2170, fixed @003213d): the
// receiver never grants a 500000-byte request (its incoming budget is 0);
// the finding names the packet that completed the unscheduled bytes. A
// first GRANT 25 ms late is a violation too.
func TestGrant010NoGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	u := b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.after(25*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	late := b.message(true, 6, 100000, 0, 40000, 40000, 4)
	b.after(25*time.Millisecond).grant(false, 6, 100000, 0)
	rep := b.check("linux", "HOMA-GRANT-010", "slack=0s")
	wantViolations(t, rep, "HOMA-GRANT-010", u[len(u)-1], late[len(late)-1])
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "no first GRANT for the message from its receiver within 20ms") {
		t.Errorf("why %q", f.Why)
	}
}

// TestGrant010Excused: no verdict while the receiver grants max_overcommit
// other messages (2 here; max_rpcs_per_peer 0, main since 3daedc3, as every
// message comes from one client host), whether they were granted before
// the trigger or the second one is granted while the message waits; while
// it grants another message from the same sender (max_rpcs_per_peer 1:
// linux_6.1.38, net-next, linux_6.13.9, main before 3daedc3; with 0 a
// violation); after a buffer-wakeup RESEND; and when the capture ends
// first.
func TestGrant010Excused(t *testing.T) {
	busy := func(b *traceBuilder, cids ...uint64) {
		for _, cid := range cids {
			b.message(true, cid, 200000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(false, cid, 100000, 0)
		}
	}
	b := newTrace(t, wire.VersionCurrent)
	busy(b, 4, 6)
	// 260000 bytes left: more than the 160000 of the granted ones, so
	// SRPT does not bump one of them for it.
	full := b.message(true, 2, 300000, 0, 40000, 40000, 4)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=2", "max_rpcs_per_peer=0")
	wantInconclusive(t, rep, "HOMA-GRANT-010", full[len(full)-1])
	wantViolations(t, rep, "HOMA-GRANT-010")
	if f := rep.Inconclusive[0]; f.Why != "198.18.0.2 is granting 2 other messages (max_overcommit 2)" {
		t.Errorf("why %q", f.Why)
	}

	b = newTrace(t, wire.VersionCurrent)
	busy(b, 4)
	waits := b.message(true, 2, 300000, 0, 40000, 40000, 4)
	b.message(true, 6, 200000, 0, 40000, 40000, 4)
	second := b.after(time.Millisecond).grant(false, 6, 100000, 0)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep = b.check("linux", "HOMA-GRANT-010", "max_overcommit=2", "max_rpcs_per_peer=0")
	wantInconclusive(t, rep, "HOMA-GRANT-010", waits[len(waits)-1])
	if f := rep.Inconclusive[0]; len(f.Frames) != 1 || f.Frames[0] != second {
		t.Errorf("finding %+v: want the GRANT frame %d", f, second)
	}
	// With max_overcommit 8 the receiver had room: a violation.
	wantViolations(t, b.check("linux", "HOMA-GRANT-010", "max_rpcs_per_peer=0"), "HOMA-GRANT-010", waits[len(waits)-1])

	for _, c := range []struct {
		v       wire.Version
		profile string
		u       uint32
		excused bool
		params  []string
	}{
		{wire.Version2024, "linux-2024", 10000, true, nil},
		{wire.VersionCurrent, "linux", 40000, true, nil},
		{wire.VersionCurrent, "linux", 40000, false, []string{"max_rpcs_per_peer=0"}},
	} {
		b = newTrace(t, c.v)
		u := c.u
		b.message(true, 4, 200000, 0, u, u, 4)
		b.after(10*time.Microsecond).grant(false, 4, u+10000, 0)
		peer := b.message(true, 2, 300000, 0, u, u, 4) // the same client host, more bytes left than 4
		b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
		rep = b.check(c.profile, "HOMA-GRANT-010", c.params...)
		if c.excused {
			wantInconclusive(t, rep, "HOMA-GRANT-010", peer[len(peer)-1])
			wantViolations(t, rep, "HOMA-GRANT-010")
		} else {
			wantViolations(t, rep, "HOMA-GRANT-010", peer[len(peer)-1])
		}
	}

	b = newTrace(t, wire.VersionCurrent)
	nobuf := b.message(true, 2, 100000, 0, 40000, 40000, 4) // dropped: no buffer
	b.after(5*time.Millisecond).resend(false, 2, 0, wire.ResendAll, 6)
	end := b.message(true, 4, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil) // the capture ends
	rep = b.check("linux", "HOMA-GRANT-010")
	wantInconclusive(t, rep, "HOMA-GRANT-010", nobuf[len(nobuf)-1])
	wantInconclusive(t, rep, "HOMA-GRANT-010", end[len(end)-1])
	wantCounts(t, rep, "HOMA-GRANT-010", 2, 0, 0, 2)
}

// TestGrantLateRequestAfterAck: under overload a scheduled request packet
// waits in a switch's low-priority queue until after the client's ACK has
// freed the server's RPC. It re-creates the RPC at the server
// (homa_dispatch_pkts allocates a server RPC for any DATA; facts AMO-01),
// which grants the new message from its own state and RESENDs the bytes it
// lacks: neither is judged against the freed RPC's GRANTs or its complete
// request. The same GRANT and RESEND after the ack with no such packet are
// still violations.
func TestGrantLateRequestAfterAck(t *testing.T) {
	// The client's side is unchanged: its late packets stay within the
	// horizon it had (GRANT-005, UNSCHED-001) and its ack named a
	// response it had received (ACK-004).
	rules := []string{"HOMA-GRANT-003", "HOMA-GRANT-004", "HOMA-RESEND-012", "HOMA-GRANT-005", "HOMA-UNSCHED-001", "HOMA-ACK-004"}
	run := func(late, retx bool, at ...func(b *traceBuilder) CapturePoint) (*Report, []int) {
		b := newTrace(t, wire.VersionCurrent)
		b.xferRequest(2, 100000, 40000, 200000, 4, 0)
		if retx {
			// A retransmission: a copy of these bytes may still be on
			// its way (an original held up in a low-priority queue).
			b.after(10*time.Microsecond).resent(true, 2, 100000, 60000, 1424, 7)
		}
		b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
		b.after(2*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
		b.after(30 * time.Microsecond).ack(2)
		if late {
			b.after(50*time.Millisecond).data(true, 2, 100000, 60000, 1424, 0, func(f *wire.DataFields) { f.Incoming = 40000 })
			b.after(10*time.Microsecond).data(true, 2, 100000, 61424, 1424, 0, func(f *wire.DataFields) { f.Incoming = 40000 })
			// The client, which has no RPC, acks the re-created one's
			// NEED_ACK... not here: a later DATA of another RPC
			// piggy-backs the ack it still had queued.
			b.after(10*time.Microsecond).dataAcking(true, 4, 100, 0, 100, 7, 2)
		}
		g := b.after(5*time.Millisecond).grant(false, 2, 70000, 0)
		rs := b.after(5*time.Millisecond).resend(false, 2, 0, 60000, 7)
		if len(at) > 0 {
			return b.checkAt(at[0](b), "linux", "HOMA-*"), []int{g, rs}
		}
		return b.check("linux", "HOMA-*"), []int{g, rs}
	}
	rep, _ := run(true, true)
	for _, id := range rules {
		wantClean(t, rep, id)
	}
	wantCounts(t, rep, "HOMA-RESEND-012", 1, 1, 0, 0)
	// Without the late packet: on the server's link the capture would
	// show one, so the GRANT and the RESEND are violations.
	rep, frames := run(false, true, func(b *traceBuilder) CapturePoint { return HostPoint(b.server) })
	wantViolations(t, rep, "HOMA-GRANT-003", frames[0])
	wantViolations(t, rep, "HOMA-GRANT-004", frames[0])
	wantViolations(t, rep, "HOMA-RESEND-012", frames[1])
	// At a switch or on the client's link the capture cannot show the
	// server getting a request packet after the ack (one seen earlier may
	// have been held up past it while its retransmission completed the
	// message): inconclusive; with no byte sent twice no copy can be on
	// its way, and they are violations (BR-06), except that the client's
	// link holds the GRANT as delivered, with the whole network before
	// it: its offset, which no GRANT carried before, may be an older
	// GRANT's, held there, sent before the request completed
	// (HOMA-GRANT-003 and HOMA-GRANT-004 inconclusive).
	for i, at := range []func(b *traceBuilder) CapturePoint{
		func(b *traceBuilder) CapturePoint { return Switch },
		func(b *traceBuilder) CapturePoint { return HostPoint(b.client) },
	} {
		rep, frames = run(false, true, at)
		wantInconclusive(t, rep, "HOMA-GRANT-003", frames[0])
		wantInconclusive(t, rep, "HOMA-GRANT-004", frames[0])
		wantInconclusive(t, rep, "HOMA-RESEND-012", frames[1])
		wantViolations(t, rep, "HOMA-GRANT-003")
		rep, frames = run(false, false, at)
		if i == 0 {
			wantViolations(t, rep, "HOMA-GRANT-003", frames[0])
			wantViolations(t, rep, "HOMA-GRANT-004", frames[0])
		} else {
			wantViolations(t, rep, "HOMA-GRANT-003")
			wantDowngraded(t, rep, "HOMA-GRANT-003", frames[0], CauseReorder)
			wantViolations(t, rep, "HOMA-GRANT-004")
			wantDowngraded(t, rep, "HOMA-GRANT-004", frames[0], CauseQueueing)
		}
	}
}

// TestGrant006Demoted: with max_overcommit 2 a shorter message joins a full
// active set and demotes one of the two it outranks (homa_grant_manage_rpc,
// homa_grant_find_victim), whose granted bytes are still on their way (an
// overloaded downlink holds them for milliseconds): it holds no slot. A
// third message as long as the two, granted alongside them, still counts.
func TestGrant006Demoted(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.grant(false, 2, 100000, 1)
	b.grant(false, 4, 100000, 0)
	b.after(100*time.Microsecond).message(true, 6, 90000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 6, 50000, 1)
	wantClean(t, b.check("linux", "HOMA-GRANT-006", "max_overcommit=2"), "HOMA-GRANT-006")

	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.grant(false, 2, 100000, 1)
	b.grant(false, 4, 100000, 0)
	b.after(100*time.Microsecond).message(true, 6, 500000, 0, 40000, 40000, 4)
	third := b.after(10*time.Microsecond).grant(false, 6, 100000, 0)
	wantViolations(t, b.check("linux", "HOMA-GRANT-006", "max_overcommit=2"), "HOMA-GRANT-006", third)
}

// TestGrant006TimedOut: with max_overcommit 2, a granted request's client
// goes silent (under overload: a stalled or dead client) and the
// receiver's timer aborts its RPC after timeout_ticks, freeing the slot
// with no packet; two other messages are then granted. The aborted
// message's granted bytes never arrive, but it holds no slot. Short of
// timeout_ticks it still does.
func TestGrant006TimedOut(t *testing.T) {
	run := func(quiet time.Duration) (*Report, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
		b.after(quiet).message(true, 4, 500000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 4, 100000, 1)
		b.after(100*time.Microsecond).message(true, 6, 500000, 0, 40000, 40000, 4)
		third := b.after(10*time.Microsecond).grant(false, 6, 100000, 0)
		return b.check("linux", "HOMA-GRANT-006", "max_overcommit=2"), third
	}
	rep, _ := run(110 * time.Millisecond)
	wantClean(t, rep, "HOMA-GRANT-006")
	rep, third := run(50 * time.Millisecond)
	wantViolations(t, rep, "HOMA-GRANT-006", third)
}

// TestGrant013TimedOut: a granted request's client goes silent; the
// receiver RESENDs every resend_interval (its own RESENDs do not reset
// silent_ticks) and its timer aborts the RPC after timeout_ticks, so the
// bytes granted to it no longer count against max_incoming when another
// message is granted. Short of timeout_ticks they still count.
func TestGrant013TimedOut(t *testing.T) {
	run := func(rounds int) (*Report, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
		for range rounds {
			b.after(5*time.Millisecond).resend(false, 2, 40000, 60000, 7)
		}
		b.after(time.Millisecond).message(true, 4, 500000, 0, 40000, 40000, 4)
		g := b.after(10*time.Microsecond).grant(false, 4, 100000, 0)
		return b.check("linux", "HOMA-GRANT-013", "max_incoming=100000"), g
	}
	rep, _ := run(22)
	wantClean(t, rep, "HOMA-GRANT-013")
	rep, g := run(10)
	wantViolations(t, rep, "HOMA-GRANT-013", g)
}

// TestGrant008Overtaken: scheduled DATA at an older GRANT's priority that
// arrives below bytes of its message already seen was overtaken on its
// way (a strict-priority queue holds the lower level back) and may have
// left before the sender processed the newer GRANT: at the receiver's
// link (a tcpdump on the server) that is inconclusive (cause reordering),
// on the sender's link a violation.
func TestGrant008Overtaken(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 100000, 0, 10000, 10000, 4)
	b.grant(false, 2, 20000, 2)
	b.message(true, 2, 100000, 10000, 15696, 10000, 2)
	b.after(100*time.Microsecond).grant(false, 2, 30000, 3)
	b.after(100*time.Microsecond).message(true, 2, 100000, 17120, 28544, 10000, 3) // at 27120 (20000 + one skb) or beyond: the GRANT at 3 arrived
	late := b.after(3*time.Millisecond).data(true, 2, 100000, 15696, 1424, 2, nil)
	rep := b.checkAt(HostPoint(b.server), "linux-2024", "HOMA-GRANT-008")
	wantViolations(t, rep, "HOMA-GRANT-008")
	wantDowngraded(t, rep, "HOMA-GRANT-008", late, CauseReorder)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux-2024", "HOMA-GRANT-008"), "HOMA-GRANT-008", late)
}

// TestGrant018FIFOWithoutSRPTNeedsEveryGrant: a FIFO GRANT with no SRPT
// GRANT from the receiver shortly before it is a violation at a tap that
// sees all the receiver's packets; at a switch inferred from the capture
// (Open) the SRPT GRANT may have gone to a host the tap does not show.
func TestGrant018FIFOWithoutSRPTNeedsEveryGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	fifo := b.after(time.Millisecond).grant(false, 2, 90000, 6)
	wantViolations(t, b.checkAt(Switch, "linux", "HOMA-GRANT-018"), "HOMA-GRANT-018", fifo)
	open := Switch
	open.Open = true
	rep := b.checkAt(open, "linux", "HOMA-GRANT-018")
	wantViolations(t, rep, "HOMA-GRANT-018")
	wantInconclusive(t, rep, "HOMA-GRANT-018", fifo)
}

// TestGrant018FIFOAddsTheIncrement: a GRANT at the FIFO level adds exactly
// fifo_grant_increment (50000) to what its message was granted
// (homa_grant_check_fifo), less only at the message's end. One that adds
// 17088 bytes 3 ms after an SRPT GRANT (an SRPT GRANT at the FIFO level:
// helper-178's grant-prio-fifo mutation) is a violation; one that takes a
// 60000-byte message to its end passes; one seen 300 µs after an SRPT
// GRANT that raised the horizon past it (another core may have built that
// one after this one's decision, and a stalled CPU held this one back:
// helper-182) is judged against the horizon slack (2 ms) before.
func TestGrant018FIFOAddsTheIncrement(t *testing.T) {
	const id = "HOMA-GRANT-018"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
	b.after(time.Millisecond).grant(false, 2, 60000, 0)
	short := b.after(3*time.Millisecond).grant(false, 2, 77088, 6)
	b.message(true, 4, 60000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 4, 50000, 0)
	end := b.after(10*time.Microsecond).grant(false, 4, 60000, 6)
	b.message(true, 6, 500000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 6, 50000, 0)
	b.after(3*time.Millisecond).grant(false, 6, 120000, 0)
	crossed := b.after(300*time.Microsecond).grant(false, 6, 100000, 6)
	rep := b.check("linux", id)
	wantViolations(t, rep, id, short)
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "GRANT at the FIFO level 6, offset 77088, adds 17088 bytes to the 60000") {
		t.Errorf("why %q", f.Why)
	}
	for _, f := range rep.Violations {
		if f.Frame == end || f.Frame == crossed {
			t.Errorf("frame %d flagged: %s", f.Frame, f.Why)
		}
	}
}

// TestGrant018LostGrantsBefore: a FIFO GRANT that seems to add more than
// fifo_grant_increment may follow GRANTs lost before the capture point:
// captured as delivered, with the client's packets to the server shown
// lost on the way, inconclusive; at a tap that saw no loss toward the
// client, a violation.
func TestGrant018LostGrantsBefore(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 4, 5000, 1424, 5000, 5000, 7)
	b.after(3*time.Millisecond).resend(false, 4, 0, 1424, 7)
	b.after(10*time.Microsecond).data(true, 4, 5000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1; f.Incoming = 5000 })
	b.after(time.Millisecond).message(true, 2, 500000, 0, 40000, 40000, 4)
	b.after(time.Millisecond).grant(false, 2, 50000, 0)
	fifo := b.grant(false, 2, 120000, 6) // 70000 more: fifo_grant_increment is 50000
	wantViolations(t, b.checkAt(Switch, "linux", "HOMA-GRANT-018"), "HOMA-GRANT-018", fifo)
	rep := b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-GRANT-018")
	wantViolations(t, rep, "HOMA-GRANT-018")
	wantDowngraded(t, rep, "HOMA-GRANT-018", fifo, CauseLossBefore)
}

// TestGrant018DeliveredLossToOtherPeer: captured as delivered, loss shown
// between the server and another client C2 may have taken the SRPT GRANT
// (to C2) that a FIFO GRANT to C1 followed: inconclusive, as with loss
// shown to C1 itself.
func TestGrant018DeliveredLossToOtherPeer(t *testing.T) {
	c2 := netip.MustParseAddr("198.18.0.3")
	for _, peer := range []netip.Addr{{}, c2} {
		b := newTrace(t, wire.VersionCurrent)
		c1 := b.client
		if peer.IsValid() {
			b.client = peer
		}
		b.message(true, 4, 5000, 1424, 5000, 5000, 7)
		b.after(3*time.Millisecond).resend(false, 4, 0, 1424, 7)
		b.after(10*time.Microsecond).data(true, 4, 5000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1; f.Incoming = 5000 })
		b.client = c1
		b.after(time.Millisecond).message(true, 2, 500000, 0, 40000, 40000, 4)
		fifo := b.after(time.Millisecond).grant(false, 2, 90000, 6)
		rep := b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-GRANT-018")
		wantViolations(t, rep, "HOMA-GRANT-018")
		wantDowngraded(t, rep, "HOMA-GRANT-018", fifo, CauseLossBefore)
	}
}

// TestGrant018SharedLevel: with num_priorities 4 and max_sched_prio 2
// (the table homa_prios_changed derives for cutoffs giving level 3 to
// every unscheduled length) the FIFO level, homa_high_priority 2, is also
// the top SRPT level: a GRANT there with no SRPT GRANT before it is
// inconclusive, not a violation (helper-135: 100-292 warnings a run).
// With at most two levels the FIFO level is 0 (homa_high_priority), not
// num_priorities-2 (-1 with one level).
func TestGrant018SharedLevel(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 3)
	g := b.after(time.Millisecond).grant(false, 2, 90000, 2)
	rep := b.checkAt(Switch, "linux", "HOMA-GRANT-018", "num_priorities=4", "max_sched_prio=2")
	wantViolations(t, rep, "HOMA-GRANT-018")
	wantInconclusive(t, rep, "HOMA-GRANT-018", g)
	rep = b.checkAt(Switch, "linux", "HOMA-GRANT-018", "num_priorities=4", "max_sched_prio=1")
	wantViolations(t, rep, "HOMA-GRANT-018", g)
	for n, want := range map[int]int{1: 0, 2: 0, 3: 1, 8: 6} {
		p := Params{NumPriorities: n}
		if got := p.HighPriority(); got != want {
			t.Errorf("HighPriority with %d levels = %d, want %d", n, got, want)
		}
	}
}

// TestGrant009SharedFIFOLevel: with one or two priority levels (or
// max_sched_prio reaching num_priorities-2) SRPT and FIFO GRANTs share a
// level. homa_grant_check_fifo adds fifo_grant_increment to msgin.granted
// (and homa_grant_send may carry more, raised meanwhile), so a GRANT
// there that adds less than that to what its message was authorised is
// no FIFO grant: a receiver that runs ahead 10000 bytes a GRANT with no
// DATA arriving is caught at every number of levels once it passes
// received + max_incoming/2. One that adds fifo_grant_increment may be a
// FIFO grant, judged only where level 0 is not the FIFO level.
func TestGrant009SharedFIFOLevel(t *testing.T) {
	const id = "HOMA-GRANT-009"
	for _, np := range []string{"8", "2", "1"} {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 0)
		var last int
		for off := uint32(50000); off <= 250000; off += 10000 {
			last = b.after(10*time.Microsecond).grant(false, 2, off, 0)
		}
		wantViolations(t, b.check("linux", id, "max_sched_prio=0", "num_priorities="+np), id, last)

		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 500000, 0, 40000, 40000, 0)
		b.after(10*time.Microsecond).grant(false, 2, 230000, 0)         // received + max_incoming/2 - 10000
		fifo := b.after(10*time.Microsecond).grant(false, 2, 280000, 0) // + fifo_grant_increment
		rep := b.check("linux", id, "max_sched_prio=0", "num_priorities="+np)
		if np == "8" {
			wantViolations(t, rep, id, fifo) // level 0 is no FIFO level with 8
		} else {
			wantViolations(t, rep, id)
		}
	}
}

// TestResend012LateRecreatedAgain: after the client's ack, request DATA
// held up in an overloaded switch's low-priority queue reaches the server
// in bursts tens of ms apart. The first burst re-creates the RPC (AMO-01);
// the server shows nothing of that incarnation (a server that remembers
// acknowledged ids drops the packets; the timer aborts an incomplete one),
// so a burst a timeout later may create it anew, and its RESEND from the
// first burst's bytes asks for bytes it lacks (a reference server did so
// in a collapse at tick 100 µs: 82 MUST findings). 20 ms apart, with no
// timeout between, the same RESEND begins at a byte the server holds.
func TestResend012LateRecreatedAgain(t *testing.T) {
	for _, gap := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
		b := newTrace(t, wire.VersionCurrent)
		ackedLongRequest(b)
		b.after(50*time.Millisecond).data(true, 2, 100000, 60000, 1424, 0, func(f *wire.DataFields) { f.Incoming = 40000 })
		b.after(gap).data(true, 2, 100000, 62848, 1424, 0, func(f *wire.DataFields) { f.Incoming = 40000 })
		b.after(10*time.Microsecond).grant(false, 2, 70000, 0)
		rs := b.after(2*time.Millisecond).resend(false, 2, 60000, 2848, 7)
		rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-012")
		if gap < 90*time.Millisecond {
			wantViolations(t, rep, "HOMA-RESEND-012", rs)
			continue
		}
		wantCounts(t, rep, "HOMA-RESEND-012", 1, 1, 0, 0)
	}
}

// ackedLongRequest has the builder's client send RPC 2's 100000-byte
// request (40000 unscheduled, the rest granted at once), get a 100-byte
// response and ack the RPC at the server's NEED_ACK.
func ackedLongRequest(b *traceBuilder) {
	b.xferRequest(2, 100000, 40000, 200000, 4, 0)
	b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(2*time.Millisecond).ctl(false, 2, wire.TypeNeedAck)
	b.after(30 * time.Microsecond).ack(2)
}

// TestGrant003RepeatBetweenOwnPackets: on the client's link, a server
// that repeats a GRANT 10 µs later with its own GRANT for another RPC in
// between is not excused as the network's copy: the copy would have had
// to overtake nothing but trail the sender's later packet, which needs a
// reordering the capture does not show (helper-149). Packets of the
// other direction in between need none (TestGrant003NoRepeatedOffsets).
//
// On linux_6.1.38, which sends each GRANT under the RPC's lock and only
// for a positive increment: main's second core may send the latest offset
// again (TestGrant003RepeatFromTwoCores).
func TestGrant003RepeatBetweenOwnPackets(t *testing.T) {
	const id = "HOMA-GRANT-003"
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.grant(false, 2, 240000, 0)
	b.after(5*time.Microsecond).grant(false, 4, 240000, 0)
	same := b.after(5*time.Microsecond).grant(false, 2, 240000, 0)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux-2024", id), id, same)
}

// TestGrant003RepeatFromTwoCores: on main (and linux_6.13.9, linux_6.10.6)
// homa_grant_send reads msgin.granted after the RPC's lock is released, so
// two cores that each raised a message's offset may both send the later
// value: the same GRANT offset twice, a few microseconds apart, on the
// receiver's own link, the first with the priority its core computed and
// the second with another. That is inconclusive within slack of the
// first, not a violation; later, and an older offset repeated, still are.
func TestGrant003RepeatFromTwoCores(t *testing.T) {
	const id = "HOMA-GRANT-003"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	b.grant(false, 2, 100000, 1)
	b.message(true, 2, 500000, 40000, 60000, 40000, 0)
	b.grant(false, 2, 240000, 1)
	twice := b.after(4*time.Microsecond).grant(false, 2, 240000, 0)
	lower := b.after(4*time.Microsecond).grant(false, 2, 150000, 0)
	older := b.after(4*time.Microsecond).grant(false, 2, 100000, 0)
	late := b.after(3*time.Millisecond).grant(false, 2, 240000, 0)
	lateLower := b.after(time.Microsecond).grant(false, 2, 200000, 0)
	rep := b.checkAt(HostPoint(b.server), "linux", id)
	wantViolations(t, rep, id, older, late, lateLower)
	wantInconclusive(t, rep, id, twice)
	// A fresh lower offset less than slack after the first GRANT above
	// it: the receiver may have set it first, on another core, whose NIC
	// queue sent it last (all versions: linux_6.1.38 sends under the
	// RPC's lock, but each core through its own queue).
	wantInconclusive(t, rep, id, lower)
	rep = b.checkAt(HostPoint(b.server), "linux-2024", id)
	wantInconclusive(t, rep, id, lower)
}
