package spec

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Priorities on main with the default cutoffs (version 1: 0,0,0,0,1000000,
// 15000,2800,200): unscheduled 100 B → 7, 2000 B → 6, 10000 B → 5,
// 100000 B → 4; control packets 7; a new peer's default (version 0) → 6.

// prioRPC plays one RPC on main with every control packet type: a
// 100000-byte request (unscheduled at level 4, then granted at level 0),
// a long server computation (RESEND/BUSY), a 100-byte response at level 7,
// NEED_ACK and ACK. It returns the control frames.
func (b *traceBuilder) prioRPC(cid uint64) []int {
	var ctl []int
	b.message(true, cid, 100000, 0, 40000, 40000, 4)
	ctl = append(ctl, b.after(10*time.Microsecond).grant(false, cid, 80000, 0))
	b.message(true, cid, 100000, 40000, 80000, 40000, 0)
	ctl = append(ctl, b.after(10*time.Microsecond).grant(false, cid, 100000, 0))
	b.message(true, cid, 100000, 80000, 100000, 40000, 0)
	ctl = append(ctl, b.after(5*time.Millisecond).resend(true, cid, 0, wire.ResendAll, 7))
	ctl = append(ctl, b.after(50*time.Microsecond).ctl(false, cid, wire.TypeBusy))
	b.after(2*time.Millisecond).data(false, cid, 100, 0, 100, 7, nil)
	ctl = append(ctl, b.after(2*time.Millisecond).ctl(false, cid, wire.TypeNeedAck))
	ctl = append(ctl, b.after(30*time.Microsecond).ack(cid))
	return ctl
}

func TestPrio001ControlAtTopLevel(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.prioRPC(2)
	rep := b.check("linux", "HOMA-PRIO-001")
	wantClean(t, rep, "HOMA-PRIO-001")
	wantCounts(t, rep, "HOMA-PRIO-001", 6, 6, 0, 0) // DATA is not judged

	b = newTrace(t, wire.Version2024) // linux_6.1.38: control at 7 too
	b.prioRPC(2)
	wantClean(t, b.check("linux-2024", "HOMA-PRIO-001"), "HOMA-PRIO-001")
}

// TestPrio001WrongTOSBits reproduces BR-01: the level shifted by 3 instead
// of 5 into the IPv4 TOS, so level 7 (TOS 0x38) reads as precedence 1.
func TestPrio001WrongTOSBits(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	ctl := b.prioRPC(2)
	for _, f := range ctl {
		b.withPrio(f, wire.PriorityFromTOS(7<<3))
	}
	rep := b.check("linux", "HOMA-PRIO-001")
	wantViolations(t, rep, "HOMA-PRIO-001", ctl...)
	if f := rep.Violations[0]; f.Why != "GRANT at priority 1, want 7" {
		t.Errorf("why %q", f.Why)
	}
}

// TestPrio001IPv6TrafficClass reproduces BR-02 on IPv6: the level shifted
// by 4 into the traffic class (2022-2025: control TC 0x70, precedence 3),
// and before that TC 0 on every packet.
func TestPrio001IPv6TrafficClass(t *testing.T) {
	for _, c := range []struct {
		name string
		tc   uint8
	}{{"shift 4", 7 << 4}, {"TC 0", 0}} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.client, b.server = netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
			ctl := b.prioRPC(2)
			for _, f := range ctl {
				b.withPrio(f, wire.PriorityFromTrafficClass(c.tc, wire.IPv6PriorityShift(wire.VersionCurrent)))
			}
			wantViolations(t, b.check("linux", "HOMA-PRIO-001"), "HOMA-PRIO-001", ctl...)
		})
	}
}

// TestPrio002UnschedLevelFromCutoffs: first contact between two hosts on
// main. The first DATA each way carries cutoff_version 0 and goes at the
// new-peer level 6; after the CUTOFFS exchange unscheduled DATA uses the
// level its length gets from the cutoffs; scheduled DATA and
// retransmissions are not judged.
func TestPrio002UnschedLevelFromCutoffs(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0)                             // new peer: level 6
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)                     // the server's CUTOFFS
	b.after(50*time.Microsecond).dataVersion(false, 2, 100, 0, 100, 6, 0) // response, server has none yet
	b.after(20*time.Microsecond).cutoffs(true, 2, 1)
	b.after(time.Millisecond).data(true, 4, 2000, 0, 1424, 6, nil) // 2000 B: level 6
	b.data(true, 4, 2000, 1424, 576, 6, nil)
	b.message(true, 6, 10000, 0, 10000, 10000, 5)  // 10000 B: level 5
	b.message(true, 8, 100000, 0, 40000, 40000, 4) // 100000 B: level 4 below U
	b.after(10*time.Microsecond).grant(false, 8, 60000, 0)
	b.message(true, 8, 100000, 40000, 60000, 40000, 0) // scheduled: GRANT priority
	b.after(5*time.Millisecond).resend(false, 8, 2848, 1424, 7)
	b.resent(true, 8, 100000, 2848, 1424, 7) // retransmission at the RESEND priority
	rep := b.check("linux", "HOMA-PRIO-002")
	wantClean(t, rep, "HOMA-PRIO-002")
	wantCounts(t, rep, "HOMA-PRIO-002", 2+2+8+29, 2+2+8+29, 0, 0)
}

// TestPrio002UsesCutoffsOfCarriedVersion: after a sysctl write the server
// sends new cutoffs (version 2, 5000 B at level 6). A 3000-byte message
// carrying version 2 goes at level 6; one still carrying version 1 (sent
// before the CUTOFFS arrived) at level 5 under the old cutoffs.
func TestPrio002UsesCutoffsOfCarriedVersion(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 3000, 0, 1424, 5, 1) // version 1: 2800 < 3000 ≤ 15000 → 5
	b.emit(false, 7, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: sid(2, false)},
		UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 50000, 5000, 500}, CutoffVersion: 2}, nil)
	b.after(10*time.Microsecond).dataVersion(true, 2, 3000, 1424, 1424, 5, 1) // in flight
	b.after(3*time.Millisecond).dataVersion(true, 4, 3000, 0, 1424, 6, 2)     // new cutoffs: 6
	stale := b.dataVersion(true, 6, 3000, 0, 1424, 5, 2)                      // version 2 but level 5
	rep := b.check("linux", "HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-PRIO-002", stale)
	wantCounts(t, rep, "HOMA-PRIO-002", 4, 3, 1, 0)
}

// TestPrio002WrongTOSBits reproduces BR-01 on DATA: with the level shifted
// by 3 into the TOS, unscheduled levels 4..7 all read as precedence 1.
func TestPrio002WrongTOSBits(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	var bad []int
	for i, n := range []uint32{100, 2000, 10000, 100000} {
		want := UnschedPriority([8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 8, n)
		f := b.data(true, uint64(2+2*i), n, 0, int(min(n, 1424)), wire.PriorityFromTOS(want<<3), nil)
		bad = append(bad, f)
	}
	b.after(10*time.Microsecond).grant(false, 8, 50000, wire.PriorityFromTOS(7<<3))
	b.data(true, 8, 100000, 40000, 1424, wire.PriorityFromTOS(0<<3), nil) // scheduled: not judged
	rep := b.check("linux", "HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-PRIO-002", bad...)
	if f := rep.Violations[0]; f.Why != "unscheduled DATA of a 100-byte message at priority 1, want 7 from cutoffs version 1 [0 0 0 0 1000000 15000 2800 200]" {
		t.Errorf("why %q", f.Why)
	}
}

// TestPrio002UnknownVersion: DATA carrying a cutoff_version that no
// CUTOFFS in the capture had and the profile does not have.
func TestPrio002UnknownVersion(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	f := b.dataVersion(true, 2, 100, 0, 100, 7, 3)
	rep := b.check("linux", "HOMA-PRIO-002")
	wantInconclusive(t, rep, "HOMA-PRIO-002", f)
	wantViolations(t, rep, "HOMA-PRIO-002")
	// With the hosts' version given as a parameter it is decided.
	wantClean(t, b.check("linux", "HOMA-PRIO-002", "cutoff_version=3"), "HOMA-PRIO-002")
}

// TestPrio002IPv6EitherShift: an IPv6 sender whose shift the capture has
// not shown (no class only one shift writes: PrioEither) may have written
// level 6 as 0x60 with shift 4 (HomaModule before 548056f, linux_6.13.9),
// which shift 5 reads as level 3: the lab's IPV6-response capture, where
// the tester's CUTOFFS fixed shift 5 for the whole capture and each of the
// module's 29 unscheduled DATA failed. Class 0x60 of such a sender passes
// at the new-peer level 6; 0x40 (level 2 or 4) fails; 0x60 from a sender
// known to use shift 5 fails.
func TestPrio002IPv6EitherShift(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.client, b.server = netip.MustParseAddr("fd00::11"), netip.MustParseAddr("fd00::1")
	tc := func(f int, class uint8, either bool) int {
		e := &b.events[f-1]
		e.TOS, e.PrioShift, e.PrioEither = class, 5, either
		e.Priority = wire.PriorityFromTrafficClass(class, 5)
		return f
	}
	tc(b.dataVersion(true, 2, 100, 0, 100, 6, 0), 0x60, true)
	low := tc(b.after(time.Millisecond).dataVersion(true, 4, 100, 0, 100, 6, 0), 0x40, true)
	known := tc(b.after(time.Millisecond).dataVersion(true, 6, 100, 0, 100, 6, 0), 0x60, false)
	rep := b.check("linux", "HOMA-PRIO-002")
	wantViolations(t, rep, "HOMA-PRIO-002", low, known)
	wantCounts(t, rep, "HOMA-PRIO-002", 3, 1, 2, 0)
	if e := b.events[0]; e.PriorityBits() != 1<<3|1<<6 || !e.AtPriority(6) || e.AtPriority(4) {
		t.Errorf("0x60 either: bits %b, want levels 3 and 6", e.PriorityBits())
	}
}

// TestPrio002NewPeerLevelFewerPriorities: a new peer's cutoffs are
// {[7]=0, [6]=INT_MAX} whatever num_priorities is (homa_peer_alloc), and
// homa_unsched_priority scans them from num_priorities-1 down: with 8 or 7
// levels unscheduled DATA before any CUTOFFS go at level 6 (not
// num_priorities-2 with 7); with fewer the scan finds no entry holding the
// message and reads past the table, so the level is undefined
// (inconclusive).
func TestPrio002NewPeerLevelFewerPriorities(t *testing.T) {
	const id = "HOMA-PRIO-002"
	play := func(prio uint8) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		f := b.data(true, 2, 1000, 0, 1000, prio, func(d *wire.DataFields) { d.CutoffVersion = 0 })
		return b, f
	}
	for _, tc := range []struct {
		numPrio  int
		prio     uint8
		violated bool
	}{
		{8, 6, false}, {8, 5, true},
		{7, 6, false}, {7, 5, true},
	} {
		b, f := play(tc.prio)
		rep := b.check("linux", id, fmt.Sprintf("num_priorities=%d", tc.numPrio), "max_sched_prio=3")
		if tc.violated {
			wantViolations(t, rep, id, f)
		} else {
			wantViolations(t, rep, id)
		}
	}
	for _, numPrio := range []int{6, 4, 2} {
		b, f := play(0)
		rep := b.check("linux", id, "max_sched_prio=0", fmt.Sprintf("num_priorities=%d", numPrio))
		wantViolations(t, rep, id)
		wantInconclusive(t, rep, id, f)
	}
}
