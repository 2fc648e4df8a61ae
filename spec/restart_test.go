package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// restartTrace builds a 6000-byte request (unsched_bytes 3000) whose
// server lost its state (a host restart): the server had the first 4424
// bytes and had granted the whole message (a GRANT lost on its way, so the
// client stopped at 4424), answers the client's RESEND with RPC_UNKNOWN,
// and the client restarts (facts RTX-09): it retransmits [0, 4424) with
// retransmit=1, the first packet lost before the server. The server's new
// incarnation grants from scratch and asks for the lost packet. It returns
// the builder and the frame of the RPC_UNKNOWN.
func restartTrace(t *testing.T) (*traceBuilder, int) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 6000, 0, 3000, 3000, 6)
	b.after(10*time.Microsecond).grant(false, 2, 4424, 0)
	b.after(10*time.Microsecond).data(true, 2, 6000, 3000, 1424, 6, func(f *wire.DataFields) { f.Incoming = 3000 })
	b.after(10*time.Microsecond).grant(false, 2, 6000, 0) // lost before the client
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(10*time.Microsecond).ctl(false, 2, wire.TypeBusy)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	unknown := b.after(10*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	restart := func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 4424 }
	// [0, 1424) is lost before the server.
	b.after(10*time.Microsecond).data(true, 2, 6000, 1424, 1424, 6, restart)
	b.data(true, 2, 6000, 2848, 152, 6, restart)
	b.data(true, 2, 6000, 3000, 1424, 6, restart)
	return b, unknown
}

// TestServerRPCUnknownStartsNewIncarnation: after the server's RPC_UNKNOWN
// its receive side of the request starts afresh, so the restarted
// request's GRANTs (from below the old ones) and a RESEND for a byte range
// the old incarnation had received but the new one lost are legal
// (HOMA-GRANT-003, HOMA-RESEND-012), at the server's link and at a switch.
func TestServerRPCUnknownStartsNewIncarnation(t *testing.T) {
	b, _ := restartTrace(t)
	b.after(20*time.Microsecond).grant(false, 2, 5848, 0)
	b.after(10*time.Microsecond).data(true, 2, 6000, 4424, 1424, 6, func(f *wire.DataFields) { f.Incoming = 4424 })
	b.after(10*time.Microsecond).grant(false, 2, 6000, 0)
	b.after(5*time.Millisecond).resend(false, 2, 0, 1424, 7)
	for _, cp := range []CapturePoint{HostPoint(b.server), Switch} {
		for _, rule := range []string{"HOMA-GRANT-003", "HOMA-GRANT-004", "HOMA-GRANT-005", "HOMA-GRANT-015", "HOMA-RESEND-012"} {
			wantClean(t, b.checkAt(cp, "linux", rule, "unsched_bytes=3000"), rule)
		}
	}
}

// TestServerRPCUnknownNewIncarnationStillJudged: the new incarnation is
// judged like any RPC: a GRANT offset that does not exceed its own earlier
// one, a GRANT once it has every byte, and a RESEND for bytes it received
// are violations.
func TestServerRPCUnknownNewIncarnationStillJudged(t *testing.T) {
	b, _ := restartTrace(t)
	b.after(20*time.Microsecond).grant(false, 2, 5848, 0)
	// More than slack later: not a second core sending the same offset
	// (TestGrant003RepeatFromTwoCores).
	again := b.after(3*time.Millisecond).grant(false, 2, 5848, 0)
	b.after(10*time.Microsecond).data(true, 2, 6000, 4424, 1424, 6, func(f *wire.DataFields) { f.Incoming = 4424 })
	b.after(10*time.Microsecond).grant(false, 2, 6000, 0)
	b.data(true, 2, 6000, 5848, 152, 6, func(f *wire.DataFields) { f.Incoming = 6000 })
	b.after(5*time.Millisecond).resend(false, 2, 0, 1424, 7) // [0, 1424) is lost: legal
	b.after(10*time.Microsecond).data(true, 2, 6000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 6000 })
	late := b.after(5*time.Millisecond).grant(false, 2, 6000, 0)
	asked := b.after(10*time.Microsecond).resend(false, 2, 1424, 1424, 7)
	at := HostPoint(b.server)
	wantViolations(t, b.checkAt(at, "linux", "HOMA-GRANT-003", "unsched_bytes=3000"), "HOMA-GRANT-003", again)
	wantViolations(t, b.checkAt(at, "linux", "HOMA-GRANT-004", "unsched_bytes=3000"), "HOMA-GRANT-004", late)
	wantViolations(t, b.checkAt(at, "linux", "HOMA-RESEND-012", "unsched_bytes=3000"), "HOMA-RESEND-012", asked)
}

// TestServerRPCUnknownKeepsClientHorizon: the client that restarts keeps
// the grants it had received (homa_rpc_unknown_pkt only retransmits), so
// new bytes up to its old horizon need no GRANT of the new incarnation;
// past it they do (HOMA-GRANT-005).
func TestServerRPCUnknownKeepsClientHorizon(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 30000, 0, 3000, 3000, 6)
	b.after(10*time.Microsecond).grant(false, 2, 20000, 0)
	b.after(10*time.Microsecond).data(true, 2, 30000, 3000, 1424, 6, func(f *wire.DataFields) { f.Incoming = 3000 })
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(10*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).data(true, 2, 30000, 0, 1424, 6, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 4424 })
	b.after(10*time.Microsecond).data(true, 2, 30000, 17152, 1424, 6, func(f *wire.DataFields) { f.Incoming = 4424 }) // under GRANT 20000
	wantClean(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-GRANT-005", "unsched_bytes=3000"), "HOMA-GRANT-005")
	past := b.after(10*time.Microsecond).data(true, 2, 30000, 28576, 1424, 6, func(f *wire.DataFields) { f.Incoming = 4424 })
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-GRANT-005", "unsched_bytes=3000"), "HOMA-GRANT-005", past)
}

// TestServerRPCUnknownInFlightRequest: at a switch, a restart packet seen
// just before the server's RPC_UNKNOWN (the client restarted after an
// earlier RPC_UNKNOWN) may reach the server after it, or before it and be
// discarded with the RPC: the server's new incarnation asking for it again
// is legal (HOMA-RESEND-012), at a switch and at the server's link.
func TestServerRPCUnknownInFlightRequest(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 2900, 0, 2900, 3000, 6)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(2*time.Microsecond).resend(true, 2, 0, wire.ResendAll, 7) // a network duplicate
	b.after(10*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
	restart := func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 2900 }
	b.after(10*time.Microsecond).data(true, 2, 2900, 0, 1424, 6, restart) // in flight
	b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)        // answers the duplicate
	b.after(10*time.Microsecond).data(true, 2, 2900, 1424, 1424, 6, restart)
	b.data(true, 2, 2900, 2848, 52, 6, restart)
	b.after(5*time.Millisecond).resend(false, 2, 0, 1424, 7)
	for _, cp := range []CapturePoint{Switch, HostPoint(b.server)} {
		wantClean(t, b.checkAt(cp, "linux", "HOMA-RESEND-012", "unsched_bytes=3000"), "HOMA-RESEND-012")
	}
}

// TestRestartSeenMidway: a capture that begins at a restarted request (its
// first packet of the RPC is DATA at offset 0 with retransmit=1, as
// `editcap -r` of a capture after the RPC_UNKNOWN gives) missed the first
// transmission and whatever asked for the copy, so the RPC is judged as
// joined mid-way: "retransmitted DATA with no earlier RESEND" is
// inconclusive (the RESEND or RPC_UNKNOWN came before the capture), not a
// violation. The same copy within a capture that began before the RPC
// (SetCaptureFromStart) stays a violation.
func TestRestartSeenMidway(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	restart := func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 3000 }
	first := b.data(true, 2, 6000, 0, 1424, 6, restart)
	b.data(true, 2, 6000, 1424, 1424, 6, restart)
	b.data(true, 2, 6000, 2848, 152, 6, restart)
	for _, fromStart := range []bool{false, true} {
		prof, err := LookupProfile("linux")
		if err != nil {
			t.Fatal(err)
		}
		rules, err := Select(Rules(), "HOMA-RESEND-003", 0, "linux")
		if err != nil {
			t.Fatal(err)
		}
		c := NewChecker("linux", prof.Params, rules)
		if fromStart {
			c.SetCaptureFromStart()
		}
		for i := range b.events {
			c.Feed(&b.events[i])
		}
		rep := c.Finish()
		if fromStart {
			wantViolations(t, rep, "HOMA-RESEND-003", first, first+1, first+2)
			continue
		}
		wantViolations(t, rep, "HOMA-RESEND-003")
		wantDowngraded(t, rep, "HOMA-RESEND-003", first, CauseCaptureStart)
	}
}
