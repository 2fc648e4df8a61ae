package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantStallTrace: a 100000-byte request, its 40000 unscheduled bytes,
// a GRANT to 60000 and the granted bytes. It returns the frame of the
// packet that completes [0, 60000).
func grantStallTrace(b *traceBuilder) int {
	b.message(true, 10, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 10, 60000, 0)
	f := b.after(10*time.Microsecond).message(true, 10, 100000, 40000, 60000, 40000, 0)
	return f[len(f)-1]
}

// TestGrant019KeepsGranting: once the bytes up to 60000 have arrived the
// receiver, granting nothing else, grants on (clean); with no GRANT for
// 300 ms (past timeout_ticks) the message stalls: a violation at the
// packet that completed the granted bytes. With max_overcommit other
// messages granted, each with fewer bytes left (a message with more left
// would lose its slot to this one: homa_grant_find_victim), the stall is
// excused (inconclusive).
func TestGrant019KeepsGranting(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	grantStallTrace(b)
	b.after(10*time.Microsecond).grant(false, 10, 100000, 0)
	b.after(10*time.Microsecond).message(true, 10, 100000, 60000, 100000, 40000, 0)
	wantClean(t, b.check("linux", "HOMA-GRANT-019"), "HOMA-GRANT-019")

	// The stalled client RESENDs and the live server answers BUSY, but
	// grants nothing.
	b = newTrace(t, wire.VersionCurrent)
	last := grantStallTrace(b)
	b.after(15*time.Millisecond).resend(true, 10, 0, 100, 7)
	b.after(10*time.Microsecond).ctl(false, 10, wire.TypeBusy)
	b.after(300*time.Millisecond).ctl(true, 10, wire.TypeBusy) // any later packet
	wantViolations(t, b.check("linux", "HOMA-GRANT-019"), "HOMA-GRANT-019", last)

	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 12, 70000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 12, 60000, 0)
	last = grantStallTrace(b)
	b.after(15*time.Millisecond).resend(true, 10, 0, 100, 7)
	b.after(10*time.Microsecond).ctl(false, 10, wire.TypeBusy)
	b.after(300*time.Millisecond).ctl(true, 10, wire.TypeBusy)
	rep := b.check("linux", "HOMA-GRANT-019", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-019")
	wantInconclusive(t, rep, "HOMA-GRANT-019", last)
}

// TestGrant019SilentReceiver: a receiver that sends nothing more for the
// RPC after the stall may be a client whose application ended the RPC
// (HomaModule sends nothing then, and a server never RESENDs a response),
// a closed socket or a host gone: inconclusive, not a violation. A GRANT
// lost before a capture point at the sender shows as the receiver's
// RESEND for [received, granted) beyond the horizon, which the sender
// takes as the grant (homa_resend_pkt): clean.
func TestGrant019SilentReceiver(t *testing.T) {
	// The response of RPC 10 stalls at the client, which sends nothing
	// more for it; the server sends a later packet of another RPC.
	b := newTrace(t, wire.VersionCurrent)
	b.message(false, 10, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(true, 10, 60000, 0)
	f := b.after(10*time.Microsecond).message(false, 10, 100000, 40000, 60000, 40000, 0)
	b.after(300*time.Millisecond).ctl(false, 12, wire.TypeBusy)
	rep := b.check("linux", "HOMA-GRANT-019")
	wantViolations(t, rep, "HOMA-GRANT-019")
	wantInconclusive(t, rep, "HOMA-GRANT-019", f[len(f)-1])

	// The same for a request whose server went silent (the client's
	// RESENDs unanswered).
	b = newTrace(t, wire.VersionCurrent)
	last := grantStallTrace(b)
	b.after(15*time.Millisecond).resend(true, 10, 0, 100, 7)
	b.after(300*time.Millisecond).resend(true, 10, 0, 100, 7)
	rep = b.check("linux", "HOMA-GRANT-019")
	wantViolations(t, rep, "HOMA-GRANT-019")
	wantInconclusive(t, rep, "HOMA-GRANT-019", last)

	// Capture at the client: the GRANT to 100000 was lost before it; the
	// server's timer RESENDs [60000, 100000) and the client sends it.
	b = newTrace(t, wire.VersionCurrent)
	grantStallTrace(b)
	b.after(15*time.Millisecond).resend(false, 10, 60000, 40000, 7)
	b.after(10*time.Microsecond).message(true, 10, 100000, 60000, 100000, 40000, 0)
	b.after(300*time.Millisecond).ctl(true, 12, wire.TypeBusy)
	wantClean(t, b.check("linux", "HOMA-GRANT-019"), "HOMA-GRANT-019")
}

// TestGrant020SRPT: with max_overcommit 1 the receiver has the unscheduled
// bytes of a 500000-byte request (client 198.18.0.1) and of a 60000-byte
// one (client 198.18.0.3). Granting the long one 3 ms later, while the
// short one (20000 bytes left, never granted, its host granted nothing)
// waits, violates SRPT; granting the short one first is clean, and so is
// GRANTs to the long one within slack of the short one's arrival. (The
// rule judges a message's first GRANT and every fourth: the late GRANT is
// the long message's fifth.)
func TestGrant020SRPT(t *testing.T) {
	build := func(shortFirst bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 500000, 0, 40000, 40000, 4)
		b.client = netipAddr("198.18.0.3")
		b.message(true, 20, 60000, 0, 40000, 40000, 4)
		if shortFirst {
			b.after(3*time.Millisecond).grant(false, 20, 60000, 0)
		}
		b.client = netipAddr("198.18.0.1")
		if !shortFirst {
			for k := range 4 { // within slack: not judged
				b.after(100*time.Microsecond).grant(false, 10, 50000+uint32(k)*2000, 0)
			}
		}
		late := b.after(3*time.Millisecond).grant(false, 10, 80000, 0)
		return b, late
	}
	b, _ := build(true)
	wantViolations(t, b.check("linux", "HOMA-GRANT-020", "max_overcommit=1"), "HOMA-GRANT-020")
	// The short one's GRANT, when it comes, confirms the violation.
	b, late := build(false)
	b.client = netipAddr("198.18.0.3")
	b.after(time.Millisecond).grant(false, 20, 60000, 0)
	rep := b.check("linux", "HOMA-GRANT-020", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-020", late)
	// Until then the short one may be waiting for receive buffers.
	b, late = build(false)
	rep = b.check("linux", "HOMA-GRANT-020", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-020")
	wantInconclusive(t, rep, "HOMA-GRANT-020", late)
	// The receiver had no buffers for it (homa_pool): its buffer-wakeup
	// RESEND (length -1 at level num_priorities-2) comes before its GRANT.
	// Legal, and a SHOULD violation before the rule waited for it.
	b, late = build(false)
	b.client = netipAddr("198.18.0.3")
	b.after(time.Millisecond).resend(false, 20, 0, wire.ResendAll, 6)
	b.after(time.Millisecond).grant(false, 20, 60000, 0)
	rep = b.check("linux", "HOMA-GRANT-020", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-020")
	wantInconclusive(t, rep, "HOMA-GRANT-020", late)
	// Within rank_tolerance the two count as a near-tie (stale ranking).
	b, _ = build(false)
	wantViolations(t, b.check("linux", "HOMA-GRANT-020", "max_overcommit=1", "rank_tolerance=500000"), "HOMA-GRANT-020")
}

// TestGrant020PicksShortest: two messages from distinct hosts wait,
// never granted, while the receiver grants a long one. The finding names
// the one with the fewest bytes left (RPC 30, 10000), whichever order the
// receiver's message set iterates in: 30 checks give one text (the rule
// once took the first candidate of a map, and reports varied run to run).
func TestGrant020PicksShortest(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 500000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	b.message(true, 20, 60000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.4")
	b.message(true, 30, 50000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	late := b.after(3*time.Millisecond).grant(false, 10, 80000, 0)
	b.client = netipAddr("198.18.0.3")
	b.after(time.Millisecond).grant(false, 20, 60000, 0)
	b.client = netipAddr("198.18.0.4")
	b.after(time.Millisecond).grant(false, 30, 50000, 0)
	seen := map[string]int{}
	for range 30 {
		rep := b.check("linux", "HOMA-GRANT-020", "max_overcommit=1")
		for _, f := range rep.Violations {
			if f.Rule == "HOMA-GRANT-020" && f.Frame == late {
				seen[f.Why]++
			}
		}
	}
	if len(seen) != 1 {
		t.Fatalf("HOMA-GRANT-020 at frame %d gave %d different texts in 30 checks: %v", late, len(seen), seen)
	}
	for m := range seen {
		if !strings.Contains(m, "RPC 30 from 198.18.0.4, 10000 bytes left") {
			t.Errorf("finding names %q, want RPC 30 (10000 bytes left)", m)
		}
	}
}

// TestGrant019OvershootToEnd: the packet that completes the granted bytes
// also completes the message (its skb overshot the horizon to the end, as
// HOMA-GRANT-005 allows): nothing is left to grant, however long the
// receiver then sends no GRANT.
func TestGrant019OvershootToEnd(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, 61000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 10, 60000, 0)
	b.after(10*time.Microsecond).message(true, 10, 61000, 40000, 61000, 40000, 0)
	b.after(300*time.Millisecond).ctl(false, 10, wire.TypeBusy) // any later packet of the RPC
	rep := b.check("linux", "HOMA-GRANT-019")
	wantViolations(t, rep, "HOMA-GRANT-019")
	if len(rep.Inconclusive) != 0 {
		t.Errorf("inconclusive %v, want none", rep.Inconclusive)
	}
}

// TestGrant021GrantBeforeFirstData: a GRANT for a 50000-byte request
// passes the capture point before the request's first DATA (offset 0,
// retransmit=0): the server had nothing of the message to grant. Within
// jitter of it, timestamp noise; after it, the ordinary order; before a
// retransmission of offset 0 (the first transmission came before the
// capture began), not judged.
func TestGrant021GrantBeforeFirstData(t *testing.T) {
	const id = "HOMA-GRANT-021"
	build := func(gap time.Duration, retx bool) (*traceBuilder, int, int) {
		b := newTrace(t, wire.VersionCurrent)
		g := b.grant(false, 10, 20000, 0)
		d := b.after(gap).data(true, 10, 50000, 0, 1424, 5, func(f *wire.DataFields) {
			f.Incoming = 10000
			if retx {
				f.Retransmit = 1
			}
		})
		b.after(time.Microsecond).data(true, 10, 50000, 1424, 1424, 5, func(f *wire.DataFields) { f.Incoming = 10000 })
		return b, g, d
	}
	for _, prof := range []string{"linux", "linux-2024"} {
		b, g, d := build(time.Millisecond, false)
		rep := b.check(prof, id)
		wantViolations(t, rep, id, d)
		if v := rep.Violations[0]; len(v.Frames) != 1 || v.Frames[0] != g {
			t.Errorf("%s: finding names frames %v, want the GRANT %d", prof, v.Frames, g)
		}
		b, _, d = build(100*time.Microsecond, false)
		wantClean(t, b.check(prof, id), id)
		// On either end's own link the stamps keep the order the
		// packets passed: 100 µs is not timestamp noise there
		// (helper-178's grant-before-data mutation, 30 µs, passed).
		wantViolations(t, b.checkAt(HostPoint(b.server), prof, id), id, d)
		wantViolations(t, b.checkAt(HostPoint(b.client), prof, id), id, d)
		b, _, _ = build(time.Millisecond, true)
		wantCounts(t, b.check(prof, id), id, 0, 0, 0, 0)
	}
	// A capture that declares a drop: the packet it dropped may be a later
	// offset that overtook offset 0 and made the receiver grant, so the
	// finding is inconclusive; with none declared it stands (a capture
	// that began mid-RPC is no excuse: the GRANT shows it ran before).
	b, _, d := build(time.Millisecond, false)
	wantViolations(t, checkDrops(b, id, 0, false), id, d)
	rep := checkDrops(b, id, 1, false)
	wantViolations(t, rep, id)
	wantCounts(t, rep, id, 1, 0, 0, 1)
	// The ordinary order: DATA, then the GRANT.
	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 10, 50000, 0, 1424, 5, func(f *wire.DataFields) { f.Incoming = 10000 })
	b.after(10*time.Microsecond).grant(false, 10, 20000, 0)
	b.after(10*time.Microsecond).data(true, 10, 50000, 1424, 1424, 5, func(f *wire.DataFields) { f.Incoming = 10000 })
	rep = b.check("linux", id)
	wantCounts(t, rep, id, 1, 1, 0, 0)
}

// GRANT-021 on a one-end capture (all as sent): the GRANT is stamped at
// the server's send, after the DATA it answers could arrive, so a GRANT
// stamped 1 ms before the first DATA is still a violation (Rule.AnyEnd:
// the one-end excuse does not touch it; helper-133).
func TestGrant021OneEnd(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.grant(false, 10, 20000, 0)
	d := b.after(time.Millisecond).data(true, 10, 50000, 0, 1424, 5, func(f *wire.DataFields) { f.Incoming = 10000 })
	b.after(time.Microsecond).data(true, 10, 50000, 1424, 1424, 5, func(f *wire.DataFields) { f.Incoming = 10000 })
	prof, _ := LookupProfile("linux")
	rules, _ := Select(Rules(), "HOMA-GRANT-021", 0, "linux")
	c := NewChecker("linux", prof.Params, rules)
	c.SetOneEndExcuse(nil)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	rep := c.Finish()
	wantViolations(t, rep, "HOMA-GRANT-021", d)
}

// TestGrant024StopAndWait: a receiver granting a 1 MB request, its only
// long message, window max_incoming/2 = 200000. One that grants after
// every batch (a GRANT each 10 segments, received + window) is clean; one
// that grants only once every byte it authorised is in (stop-and-wait:
// GRANT 240000, then 440000 once [0, 240000) arrived) raises the horizon
// by a whole window, 140 segments, with no GRANT: a violation at that
// GRANT. With a second long request coming to the server the window may
// have changed: not judged.
func TestGrant024StopAndWait(t *testing.T) {
	const n, u, w = 1000000, 40000, 200000
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 10, n, 0, u, u, 4)
	b.after(10*time.Microsecond).grant(false, 10, u+w, 0)
	for o := uint32(u); o < 640000; o += 10 * 1424 {
		b.after(10*time.Microsecond).message(true, 10, n, o, o+10*1424, u, 0)
		b.after(10*time.Microsecond).grant(false, 10, o+10*1424+w, 0)
	}
	wantClean(t, b.check("linux", "HOMA-GRANT-024"), "HOMA-GRANT-024")

	stopAndWait := func(other bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		if other {
			b.message(true, 12, n, 0, u, u, 4)
		}
		b.after(10*time.Microsecond).message(true, 10, n, 0, u, u, 4)
		b.after(10*time.Microsecond).grant(false, 10, u+w, 0)
		b.after(10*time.Microsecond).message(true, 10, n, u, u+w, u, 0)
		g := b.after(10*time.Microsecond).grant(false, 10, u+2*w, 0)
		b.after(10*time.Microsecond).message(true, 10, n, u+w, u+2*w, u, 0)
		return b, g
	}
	b, g := stopAndWait(false)
	rep := b.check("linux", "HOMA-GRANT-024")
	wantViolations(t, rep, "HOMA-GRANT-024", g)
	if v := rep.Violations[0]; !strings.Contains(v.Why, "raises the message's horizon 240000") || !strings.Contains(v.Why, "by 200000 bytes") {
		t.Errorf("reason %q", v.Why)
	}
	b, _ = stopAndWait(true)
	if rep := b.check("linux", "HOMA-GRANT-024"); len(rep.Violations) != 0 {
		t.Errorf("with a second long request to the server: %v, want no finding", rep.Violations)
	}
}

// TestGrant024MaxGROSkbs: a receiver that grants a 1 MB request, its only
// long message, after every 50 segments (a raise of 71200 bytes per
// GRANT) merges more than two batches of max_gro_skbs 20 (56960 bytes)
// allow: a violation at the default (and at 0, which stands for it),
// clean where the parameter says the receiver merges 50 packets.
func TestGrant024MaxGROSkbs(t *testing.T) {
	const n, u, w, per = 1000000, 40000, 200000, 50 * 1424
	build := func() (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, n, 0, u, u, 4)
		b.after(10*time.Microsecond).grant(false, 10, u+w, 0)
		first := 0
		for o := uint32(u); o+per < 600000; o += per {
			b.after(10*time.Microsecond).message(true, 10, n, o, o+per, u, 0)
			g := b.after(10*time.Microsecond).grant(false, 10, o+per+w, 0)
			if first == 0 {
				first = g
			}
		}
		return b, first
	}
	for _, gro := range []string{"", "max_gro_skbs=20", "max_gro_skbs=0"} {
		b, g := build()
		var params []string
		if gro != "" {
			params = []string{gro}
		}
		rep := b.check("linux", "HOMA-GRANT-024", params...)
		if len(rep.Violations) == 0 || rep.Violations[0].Frame != g {
			t.Errorf("%q: violations %v, want the first at frame %d", gro, rep.Violations, g)
		} else if !strings.Contains(rep.Violations[0].Why, "2 × max_gro_skbs 20 skbs") {
			t.Errorf("%q: reason %q", gro, rep.Violations[0].Why)
		}
	}
	b, _ := build()
	wantClean(t, b.check("linux", "HOMA-GRANT-024", "max_gro_skbs=50"), "HOMA-GRANT-024")
}

// TestGrant024AfterEarlierLongMessage: a receiver that had a second long
// message, complete 10 ms (more than slack) before its only one starts,
// grants it stop-and-wait: judged, a violation. The complete message once
// stayed among the receiver's long messages until some other rule asked
// (Trace.Grantable), so the receiver looked crowded for the rest of the
// capture and HOMA-GRANT-024 judged nothing in a whole conformance pass's
// capture (0 of its GRANTs; 3656 since).
func TestGrant024AfterEarlierLongMessage(t *testing.T) {
	const n, u, w = 1000000, 40000, 200000
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 12, 100000, 0, u, u, 4)
	b.after(10*time.Microsecond).grant(false, 12, 100000, 0)
	b.after(10*time.Microsecond).message(true, 12, 100000, u, 100000, u, 0)
	b.after(10*time.Millisecond).message(true, 10, n, 0, u, u, 4)
	b.after(10*time.Microsecond).grant(false, 10, u+w, 0)
	b.after(10*time.Microsecond).message(true, 10, n, u, u+w, u, 0)
	g := b.after(10*time.Microsecond).grant(false, 10, u+2*w, 0)
	b.after(10*time.Microsecond).message(true, 10, n, u+w, u+2*w, u, 0)
	wantViolations(t, b.check("linux", "HOMA-GRANT-024"), "HOMA-GRANT-024", g)
}
