package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// perPeerTrace: a client sends two 100000-byte requests (RPCs 2 and 4) to
// one server. The server grants RPC 2 in steps while RPC 4's unscheduled
// bytes sit there for 30 ms; RPC 4's first GRANT comes 10 µs after RPC
// 2's last byte. With another client for RPC 4 (otherHost) the two
// messages come from different hosts. RPC 4's request is len4 bytes. It
// returns the frame of RPC 4's last unscheduled packet.
func perPeerTrace(b *traceBuilder, otherHost bool, len4 uint32) (waits int) {
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 50000, 0)
	if otherHost {
		b.client = netipAddr("198.18.0.3")
	}
	w := b.message(true, 4, len4, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	for off := uint32(40000); off < 100000; off += 10000 {
		b.after(4*time.Millisecond).message(true, 2, 100000, off, off+10000, 40000, 0)
		if off+10000 < 100000 {
			b.after(10*time.Microsecond).grant(false, 2, off+20000, 0)
		}
	}
	if otherHost {
		b.client = netipAddr("198.18.0.3")
	}
	b.after(10*time.Microsecond).grant(false, 4, len4, 0)
	b.client = netipAddr("198.18.0.1")
	return w[len(w)-1]
}

// TestGrant010MaxRPCsPerPeer: HomaModule net-next, linux_6.13.9,
// linux_4.18.0 and main before 3daedc3 (2026-05-21) grant at most
// max_rpcs_per_peer (1) messages per sending host (homa_grant.c
// homa_grant_manage_rpc keeps a message whose host already has an active
// one it does not outrank out of the active set; homa_grant_unmanage_rpc
// promotes it when that one leaves). All of them are IP protocol 146 with
// the current wire format, so the linux profile spans them: a second
// message from the same host that waits for the first is legal there, as
// on linux_6.1.38 (before the fix, a MUST violation on the linux profile).
// Still violations: the same wait by a message from another host, by a
// message that clearly outranks the one being granted (it takes that one's
// place), and, with max_rpcs_per_peer 0 (main since 3daedc3), any wait
// while slots are free.
func TestGrant010MaxRPCsPerPeer(t *testing.T) {
	for _, profile := range []string{"linux", "linux-2024"} {
		v := wire.VersionCurrent
		if profile == "linux-2024" {
			v = wire.Version2024
		}
		params := []string{"unsched_bytes=40000", "window=0"}
		t.Run(profile, func(t *testing.T) {
			b := newTrace(t, v)
			waits := perPeerTrace(b, false, 100000)
			rep := b.check(profile, "HOMA-GRANT-010", params...)
			wantViolations(t, rep, "HOMA-GRANT-010")
			wantInconclusive(t, rep, "HOMA-GRANT-010", waits)
			if why := rep.Inconclusive[0].Why; !strings.Contains(why, "max_rpcs_per_peer 1") {
				t.Errorf("why %q", why)
			}
			wantViolations(t, b.check(profile, "HOMA-GRANT-010", append(params, "max_rpcs_per_peer=0")...), "HOMA-GRANT-010", waits)

			b = newTrace(t, v)
			waits = perPeerTrace(b, true, 100000)
			wantViolations(t, b.check(profile, "HOMA-GRANT-010", params...), "HOMA-GRANT-010", waits)

			// 1000 bytes left, against RPC 2's 60000 down to 10000 while
			// it waits: it outranks RPC 2 throughout.
			b = newTrace(t, v)
			waits = perPeerTrace(b, false, 41000)
			wantViolations(t, b.check(profile, "HOMA-GRANT-010", append(params, "rank_tolerance=0")...), "HOMA-GRANT-010", waits)
		})
	}
}

// TestWire009DataHeaderUnset: HomaModule zeroes the DATA header only since
// 2bb8413 (2026-06-26, homa_outgoing.c homa_tx_data_pkt_alloc) and
// control headers only since 71e14d8 (2026-03-20); net-next,
// linux_6.13.9, rhel8/rhel_9.5 and earlier main, all under the linux
// profile, send the common ack bytes, window, pad and a control packet's
// sequence as memory held them, so nonzero ones are inconclusive (before,
// MUST violations). Where the parameters say the implementation zeroes
// them (zeroed_headers 1: the reference implementation's hello, a build
// that does), all four are violations (the stale-header fault the rule
// exists for: fault knob control-sequence).
func TestWire009DataHeaderUnset(t *testing.T) {
	set := func(i int, v byte) func(*Event) { return func(e *Event) { e.Packet.Bytes()[i] = v } }
	b := newTrace(t, wire.VersionCurrent)
	d := &wire.DataFields{Common: wire.CommonFields{SenderID: 2}, MessageLength: 300, Incoming: 300,
		CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}
	pad := b.emit(true, 7, d, set(50, 0x5a))
	d.Common.Sequence, d.Common.Ack = 100, [3]byte{1, 2, 3}
	ack := b.emit(true, 7, d, nil)
	d.Common.Sequence, d.Common.Ack = 200, [3]byte{}
	win := b.emit(true, 7, d, set(14, 0x20))
	seq := b.emit(false, 7, &wire.BusyFields{Common: wire.CommonFields{SenderID: 3, Sequence: 111296}}, nil)
	rep := b.check("linux", "HOMA-WIRE-009")
	for _, f := range []int{pad, ack, win, seq} {
		wantInconclusive(t, rep, "HOMA-WIRE-009", f)
	}
	wantCounts(t, rep, "HOMA-WIRE-009", 4, 0, 0, 4)
	rep = b.check("linux", "HOMA-WIRE-009", "zeroed_headers=1")
	wantViolations(t, rep, "HOMA-WIRE-009", pad, ack, win, seq)
}

// TestGrant020UngrantedRanking: net-next and linux_6.13.9 (homa_grant.c
// homa_grant_outranks; main from 2025-04 to 3daedc3), all under the linux
// profile, rank messages by bytes still to grant, main HEAD and
// linux_6.1.38 by bytes still to receive. RPC 10's 300000-byte request is
// granted to 140000 with 100000 received (200000 to receive, 160000 to
// grant); RPC 20's 200000-byte request from another host has its 40000
// unscheduled bytes (160000 of each). Granting RPC 10 again 3 ms later is
// SRPT by bytes to grant: legal (before, a SHOULD violation). Granted to
// 100000 only (200000 to grant as well), RPC 20 is clearly ahead by both
// keys and the GRANT is still the fault.
func TestGrant020UngrantedRanking(t *testing.T) {
	build := func(horizon uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 300000, 0, 40000, 40000, 4)
		for k, off := range []uint32{60000, 80000, 100000, horizon} {
			b.after(10*time.Microsecond).grant(false, 10, off, 0)
			if k < 3 {
				b.message(true, 10, 300000, 40000+uint32(k)*20000, 60000+uint32(k)*20000, 40000, 0)
			}
		}
		b.client = netipAddr("198.18.0.3")
		b.message(true, 20, 200000, 0, 40000, 40000, 4)
		b.client = netipAddr("198.18.0.1")
		late := b.after(3*time.Millisecond).grant(false, 10, horizon+10000, 0)
		b.client = netipAddr("198.18.0.3")
		b.after(time.Millisecond).grant(false, 20, 50000, 0)
		return b, late
	}
	b, _ := build(140000)
	wantViolations(t, b.check("linux", "HOMA-GRANT-020", "max_overcommit=1"), "HOMA-GRANT-020")
	b, late := build(100000)
	wantViolations(t, b.check("linux", "HOMA-GRANT-020", "max_overcommit=1"), "HOMA-GRANT-020", late)
}

// TestGrant010UngrantedRanking: with max_overcommit 1 the receiver keeps
// granting RPC 10 (300000 bytes, 40000 granted ahead of the 100000..110000
// received) while RPC 20 (200000 bytes, another host) waits with its
// 40000 unscheduled bytes: by bytes to receive RPC 20 is clearly ahead
// (160000 against 190000 or more), by bytes to grant it is not (160000
// against 150000..160000), which is how net-next and linux_6.13.9 rank
// (homa_grant_outranks): the full slot excuses the wait (inconclusive;
// before, a MUST violation). With RPC 10 granted only what it received,
// RPC 20 is ahead by both keys and the wait is the fault.
func TestGrant010UngrantedRanking(t *testing.T) {
	build := func(ahead uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 300000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 10, 100000+ahead, 0)
		b.message(true, 10, 300000, 40000, 100000, 40000, 0)
		b.client = netipAddr("198.18.0.3")
		w := b.message(true, 20, 200000, 0, 40000, 40000, 4)
		b.client = netipAddr("198.18.0.1")
		for off := uint32(100000); off < 110000; off += 2000 {
			b.after(5*time.Millisecond).message(true, 10, 300000, off, off+2000, 40000, 0)
			b.after(10*time.Microsecond).grant(false, 10, off+2000+ahead, 0)
		}
		b.after(10*time.Millisecond).data(true, 30, 100, 0, 100, 7, nil)
		return b, w[len(w)-1]
	}
	b, waits := build(40000)
	rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-010")
	wantInconclusive(t, rep, "HOMA-GRANT-010", waits)
	b, waits = build(0)
	wantViolations(t, b.check("linux", "HOMA-GRANT-010", "max_overcommit=1"), "HOMA-GRANT-010", waits)
}

// TestGrant011UngrantedRanking: the receiver grants RPC 10 (300000 bytes,
// 100000 received) and RPC 20 (200000 bytes from another host, 40000
// received, granted to 60000). By bytes to receive RPC 20 ranks first, so
// main HEAD gives RPC 10 level 0; by bytes to grant, how net-next and
// linux_6.13.9 rank (homa_grant_outranks), RPC 10 granted to 250000 ranks
// first and gets level 1: legal under the linux profile (before, a SHOULD
// violation). Granted to 110000 it is behind by both keys and level 1 is
// still a violation.
func TestGrant011UngrantedRanking(t *testing.T) {
	build := func(offset uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 300000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 10, 100000, 0)
		b.message(true, 10, 300000, 40000, 100000, 40000, 0)
		b.client = netipAddr("198.18.0.3")
		b.message(true, 20, 200000, 0, 40000, 40000, 4)
		b.after(3*time.Millisecond).grant(false, 20, 60000, 0) // its bytes were in slack before
		b.client = netipAddr("198.18.0.1")
		return b, b.after(10*time.Microsecond).grant(false, 10, offset, 1)
	}
	b, _ := build(250000)
	wantViolations(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011")
	b, g := build(110000)
	wantViolations(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011", g)
}
