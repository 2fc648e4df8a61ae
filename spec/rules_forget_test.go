package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// HOMA-RESEND-019: a server forgets an RPC it showed it holds only for a
// reason the protocol gives.

const forgetRule = "HOMA-RESEND-019"

// heldPair starts RPCs 10 and 20 of the builder's client on the same
// server port, 100-byte requests in service: each client RESENDs every
// 5 ms and the server answers BUSY, twice (the last BUSY for 10 at about
// 10 ms). Then comes the client's third RESEND for 10.
func heldPair(b *traceBuilder) {
	b.data(true, 10, 100, 0, 100, 7, nil)
	b.after(300*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
	for range 2 {
		b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
		b.after(20*time.Microsecond).ctl(false, 10, wire.TypeBusy)
		b.after(300*time.Microsecond).resend(true, 20, 0, wire.ResendAll, 7)
		b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
	}
	b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
}

// witness20 has the server go on serving RPC 20 after the RPC_UNKNOWN:
// BUSY 3 ms later (past slack, 2 ms), then the response. It returns the
// BUSY's frame.
func witness20(b *traceBuilder) int {
	b.after(3*time.Millisecond).resend(true, 20, 0, wire.ResendAll, 7)
	w := b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
	b.after(2*time.Millisecond).data(false, 20, 100, 0, 100, 7, nil)
	return w
}

// judgeForgot has the server answer RPC_UNKNOWN for RPC 10 20 µs on and
// go on serving RPC 20 (witness20), then checks HOMA-RESEND-019: no
// finding when legal, else one violation, at the RPC_UNKNOWN, which it
// returns (nil when legal).
func judgeForgot(t *testing.T, b *traceBuilder, legal bool) *Finding {
	t.Helper()
	u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	witness20(b)
	rep := b.check("linux", forgetRule)
	if legal {
		noFinding(t, rep, forgetRule)
		return nil
	}
	wantViolations(t, rep, forgetRule, u)
	if len(rep.Violations) == 0 {
		return nil
	}
	return &rep.Violations[0]
}

// noFinding asserts that rule id neither failed nor was inconclusive.
func noFinding(t *testing.T, rep *Report, id string) {
	t.Helper()
	for _, f := range append(rep.Violations, rep.Inconclusive...) {
		if f.Rule == id {
			t.Fatalf("%s finding, want none: %v", id, f)
		}
	}
}

// TestResend019ForgetsHeldRPC: RPC_UNKNOWN for an RPC answered with BUSY
// 5 ms earlier, no ack, no RPC_UNKNOWN from the client, 15 ms of silence,
// while the server socket still serves RPC 20: a violation at the
// RPC_UNKNOWN, charged to the server, showing the witness frame.
func TestResend019ForgetsHeldRPC(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	heldPair(b)
	u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	b.after(10*time.Microsecond).data(true, 10, 100, 0, 100, 7, func(f *wire.DataFields) { f.Retransmit, f.SegOffset = 1, 0 })
	w := witness20(b)
	rep := b.check("linux", forgetRule)
	wantViolations(t, rep, forgetRule, u)
	f := rep.Violations[0]
	if f.ChargedTo != b.server {
		t.Errorf("charged to %v, want the server %v", f.ChargedTo, b.server)
	}
	if len(f.Frames) != 1 || f.Frames[0] != w {
		t.Errorf("frames %v, want the witness %d: %s", f.Frames, w, f.Why)
	}
}

// TestResend019TimeoutOnlyWhileRequestComes: a server's timer counts
// silence only while the request is still coming (homa_timer_check_rpc
// returns at once for a server RPC past RPC_INCOMING, in every HomaModule
// branch). 96 ms without DATA, GRANT or BUSY from the client (98 ticks
// less slack: RTX-10 allows 2 ticks) excuse an RPC_UNKNOWN for a request
// the server was still receiving (it RESENT for its missing bytes), not
// one for a request in service (its 100 bytes all came, the server answered
// the client's RESENDs with BUSY: rt4's u19, a server that timed out while
// its application computed) nor one whose response had begun (u20, a
// response waiting for GRANTs). The server still serves RPC 20 after each.
func TestResend019TimeoutOnlyWhileRequestComes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		legal bool
	}{{"request coming", true}, {"in service", false}, {"response begun", false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			switch tc.name {
			case "request coming":
				b.data(true, 10, 3000, 0, 1424, 7, nil)
				b.after(300*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
				for range 2 {
					b.after(5*time.Millisecond).resend(false, 10, 1424, 1576, 7)
					b.after(300*time.Microsecond).resend(true, 20, 0, wire.ResendAll, 7)
					b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
				}
			case "in service":
				heldPair(b)
			case "response begun":
				b.data(true, 10, 100, 0, 100, 7, nil)
				b.after(300*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
				b.after(5*time.Millisecond).message(false, 10, 100000, 0, 40000, 40000, 4)
				b.after(4*time.Millisecond).resend(true, 20, 0, wire.ResendAll, 7)
				b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
			}
			b.now = t0.Add(96 * time.Millisecond) // the client's last DATA was at 0
			b.resend(true, 10, 0, wire.ResendAll, 7)
			if f := judgeForgot(t, b, tc.legal); f != nil && !strings.Contains(f.Why, "so its timer no longer counted silence") {
				t.Errorf("why %q", f.Why)
			}
		})
	}
}

// TestResend019LegalReasons: each reason the protocol gives for the server
// to forget the RPC makes the same exchange legal; without it the
// RPC_UNKNOWN is a violation.
func TestResend019LegalReasons(t *testing.T) {
	cases := []struct {
		name string
		// reason adds the legal reason after heldPair.
		reason func(b *traceBuilder)
		_      time.Duration
	}{
		{"ack", func(b *traceBuilder) { b.after(10 * time.Microsecond).ack(10) }, 0},
		{"ack entry", func(b *traceBuilder) { b.after(10*time.Microsecond).ack(30, 10) }, 0},
		{"piggy-backed ack", func(b *traceBuilder) {
			b.after(10*time.Microsecond).data(true, 30, 100, 0, 100, 7, func(f *wire.DataFields) {
				f.Ack = wire.AckEntry{ClientID: 10, ServerPort: b.sport}
			})
		}, 0},
		{"client RPC_UNKNOWN", func(b *traceBuilder) { b.after(10*time.Microsecond).ctl(true, 10, wire.TypeRPCUnknown) }, 0},
	}
	for _, tc := range cases {
		for _, legal := range []bool{false, true} {
			name := tc.name + "/without"
			if legal {
				name = tc.name + "/with"
			}
			t.Run(name, func(t *testing.T) {
				b := newTrace(t, wire.VersionCurrent)
				heldPair(b)
				quiet := 17 * time.Millisecond // short of a timeout
				if legal {
					tc.reason(b)
				}
				// The client's last DATA was at 0.
				b.now = t0.Add(quiet)
				b.resend(true, 10, 0, wire.ResendAll, 7)
				u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
				witness20(b)
				rep := b.check("linux", forgetRule)
				if legal {
					noFinding(t, rep, forgetRule)
				} else {
					wantViolations(t, rep, forgetRule, u)
				}
			})
		}
	}
}

// TestResend019NeverHeld: RPC_UNKNOWN for an RPC the server never showed
// it held (no BUSY, GRANT, response DATA or NEED_ACK: HOMA-RESEND-007's
// restart, BR-19's early RESEND) is not judged.
func TestResend019NeverHeld(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 20, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(true, 10, 5000, 0, 1424, 7, nil)
	b.after(5*time.Millisecond).resend(true, 20, 0, wire.ResendAll, 7)
	b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
	b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
	b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	witness20(b)
	noFinding(t, b.check("linux", forgetRule), forgetRule)
}

// TestResend019Restart: a close of the server socket or a restart of its
// host ends every RPC it holds and shows no packet: with no witness the
// RPC_UNKNOWN is inconclusive (cause CauseClose), whether the other RPCs
// are never heard of again or die too.
func TestResend019Restart(t *testing.T) {
	restarted := func(f *wire.DataFields) { f.Retransmit, f.SegOffset = 1, 0 }
	cases := []struct {
		name string
		// after adds what follows heldPair and returns the RPC_UNKNOWN's
		// frame.
		after func(b *traceBuilder) int
		// served: RPC 20 still held, so its response 3 ms later is a
		// witness.
		served bool
	}{
		{"no witness", func(b *traceBuilder) int {
			return b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
		}, true},
		{"all RPCs die", func(b *traceBuilder) int {
			u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
			b.after(10*time.Microsecond).data(true, 10, 100, 0, 100, 7, restarted)
			b.after(300*time.Microsecond).resend(true, 20, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 20, wire.TypeRPCUnknown)
			// Both requests restart and the new server serves both: the
			// restarts re-created them, so neither is a witness.
			b.after(10*time.Microsecond).data(true, 20, 100, 0, 100, 7, restarted)
			b.after(5*time.Millisecond).resend(true, 20, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
			b.after(time.Millisecond).data(false, 10, 100, 0, 100, 7, nil)
			b.after(time.Millisecond).data(false, 20, 100, 0, 100, 7, nil)
			return u
		}, false},
		{"other RPC held only after", func(b *traceBuilder) int {
			// RPC 30 arrives after the server's last packet for 10: a
			// server that restarted in between could hold it.
			b.after(10*time.Microsecond).data(true, 30, 100, 0, 100, 7, nil)
			u := b.after(5*time.Millisecond).ctl(false, 10, wire.TypeRPCUnknown)
			b.after(time.Millisecond).resend(true, 30, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 30, wire.TypeBusy)
			b.after(3*time.Millisecond).data(false, 30, 100, 0, 100, 7, nil)
			return u
		}, false},
		{"duplicated witness", func(b *traceBuilder) int {
			// A BUSY for RPC 20 just short of slack after the RPC_UNKNOWN,
			// then an identical copy within jitter: the copy's original
			// may have left before the close.
			u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
			b.after(1900*time.Microsecond).ctl(false, 20, wire.TypeBusy)
			b.after(150*time.Microsecond).ctl(false, 20, wire.TypeBusy)
			return u
		}, true},
		{"witness within slack", func(b *traceBuilder) int {
			// A packet for RPC 20 less than slack after the RPC_UNKNOWN
			// may have left before the close.
			u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
			b.after(time.Millisecond).ctl(false, 20, wire.TypeBusy)
			return u
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			heldPair(b)
			u := tc.after(b)
			rep := b.check("linux", forgetRule)
			wantViolations(t, rep, forgetRule)
			wantDowngraded(t, rep, forgetRule, u, CauseClose)
			if len(rep.Downgrades) != 1 || rep.Downgrades[0].Cause != CauseClose || rep.Downgrades[0].Count != 1 {
				t.Errorf("downgrades %+v, want one %q", rep.Downgrades, CauseClose)
			}
			if tc.served {
				b.after(3*time.Millisecond).data(false, 20, 100, 0, 100, 7, nil)
				wantViolations(t, b.check("linux", forgetRule), forgetRule, u)
			}
		})
	}
}

// TestResend019CapturePoint: the witness is another client's RPC. A
// capture that sees all of the server's or of that client's packets shows
// whether a request re-created it; one on the first client's link does
// not, so there is no witness. Loss after the capture point toward the
// server (the server RESENDs request bytes the capture saw) may have made
// the client's silence long enough for a timeout.
func TestResend019CapturePoint(t *testing.T) {
	client2 := netip.MustParseAddr("198.18.0.3")
	build := func(t *testing.T, lossy bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		client1 := b.client
		if lossy {
			b.data(true, 30, 3000, 0, 1424, 7, nil)
			b.data(true, 30, 3000, 1424, 1424, 7, nil)
			b.data(true, 30, 3000, 2848, 152, 7, nil)
			b.after(5*time.Millisecond).resend(false, 30, 1424, 1424, 7)
		}
		b.data(true, 10, 100, 0, 100, 7, nil)
		b.client = client2
		b.after(300*time.Microsecond).data(true, 20, 100, 0, 100, 7, nil)
		for range 2 {
			b.client = client1
			b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 10, wire.TypeBusy)
			b.client = client2
			b.after(300*time.Microsecond).resend(true, 20, 0, wire.ResendAll, 7)
			b.after(20*time.Microsecond).ctl(false, 20, wire.TypeBusy)
		}
		b.client = client1
		b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
		u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
		b.client = client2
		witness20(b)
		b.client = client1
		return b, u
	}
	b, u := build(t, false)
	wantViolations(t, b.checkAt(Switch, "linux", forgetRule), forgetRule, u)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", forgetRule), forgetRule, u)
	wantViolations(t, b.checkAt(CapturePoint{Kind: CaptureSent}, "linux", forgetRule), forgetRule, u)
	rep := b.checkAt(HostPoint(b.client), "linux", forgetRule)
	wantViolations(t, rep, forgetRule)
	wantDowngraded(t, rep, forgetRule, u, CauseClose)

	b, u = build(t, true)
	rep = b.checkAt(Switch, "linux", forgetRule)
	wantViolations(t, rep, forgetRule)
	wantDowngraded(t, rep, forgetRule, u, CauseLossAfter)
	// At the server's own link nothing lies between: the RESEND shows
	// the server missed nothing the capture saw reach it.
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", forgetRule), forgetRule, u)
}

// TestResend019GrantShowsHeld: a server that GRANTed a request holds its
// RPC (homa_grant sends only for an RPC it has): RPC_UNKNOWN for it 5 ms
// later, with the client's DATA 5 ms before and RPC 20 still served after,
// is a violation; without the GRANT it is not judged (TestResend019NeverHeld).
func TestResend019GrantShowsHeld(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 20, 100, 0, 100, 7, nil)
	b.after(5*time.Millisecond).data(true, 10, 60000, 0, 40000, 7, func(f *wire.DataFields) { f.Incoming = 40000 })
	b.after(10*time.Microsecond).grant(false, 10, 60000, 0)
	b.after(10*time.Microsecond).data(true, 10, 60000, 40000, 20000, 0, func(f *wire.DataFields) { f.Incoming = 40000 })
	b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
	u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
	witness20(b)
	wantViolations(t, b.check("linux", forgetRule), forgetRule, u)
}

// TestResend019PacketsAfterTimeout: the server's timer may abort the RPC
// at any time after its last packet for it, and a client packet that
// arrives after the abort resets nothing (a ref server aborted an RPC 9.5
// ms after its GRANT, then got the client's BUSYs for 6 ms and answered
// its RESEND with RPC_UNKNOWN: a collapse at tick 100 µs). Silent 96 ms
// after its last DATA, then a BUSY and the RPC_UNKNOWN 100 µs later:
// legal. BUSYs 50 ms apart: no timeout fits, a violation.
func TestResend019PacketsAfterTimeout(t *testing.T) {
	for _, legal := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		heldPair(b)
		// The client's last DATA was at 0.
		if legal {
			b.now = t0.Add(96 * time.Millisecond)
			b.ctl(true, 10, wire.TypeBusy)
		} else {
			b.now = t0.Add(50 * time.Millisecond)
			b.ctl(true, 10, wire.TypeBusy)
			b.after(46*time.Millisecond).ctl(true, 10, wire.TypeBusy)
		}
		b.after(80*time.Microsecond).resend(true, 10, 0, wire.ResendAll, 7)
		u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
		witness20(b)
		rep := b.check("linux", forgetRule)
		if legal {
			noFinding(t, rep, forgetRule)
			continue
		}
		wantViolations(t, rep, forgetRule, u)
		if f := rep.Violations[0]; !strings.Contains(f.Why, "at most 50ms without DATA, GRANT or BUSY from the client since") {
			t.Errorf("why: %s", f.Why)
		}
	}
}

// TestResend019ICMPUnreachable: an ICMP host unreachable (type 3 code 1,
// from a router) about the server's packet to the client aborts every RPC
// the server has with the client (homa_err_handler_v4 → homa_abort_rpcs):
// the RPC_UNKNOWN after it is legal (helper-182's server-icmp-abort). A
// port unreachable aborts nothing there; nor does one older than the
// server's last packet for the RPC.
func TestResend019ICMPUnreachable(t *testing.T) {
	router := netip.MustParseAddr("198.18.0.254")
	for _, tc := range []struct {
		name  string
		code  uint8
		early bool
		legal bool
	}{{"host unreachable", 1, false, true}, {"port unreachable", 3, false, false}, {"before the server held it", 1, true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			icmp := func() {
				b.frame++
				b.events = append(b.events, Event{Frame: b.frame, Time: b.now, Src: router, Dst: b.server,
					ICMP: &ICMP{PortUnreachable: tc.code == 3, Type: 3, Code: tc.code, QSrc: b.server, QDst: b.client, QSport: b.sport, QDport: b.cport}})
			}
			if tc.early {
				icmp()
			}
			heldPair(b)
			if !tc.early {
				b.after(20 * time.Microsecond)
				icmp()
			}
			judgeForgot(t, b, tc.legal)
		})
	}
}

// TestResend019WholeRequestShowsHeld: response DATA or a NEED_ACK comes
// only from a server holding its RPC's whole request, so it witnesses
// that the socket was not closed after the server's last packet for the
// forgotten RPC though request DATA of its RPC came after that packet,
// when the bytes of its first request DATA came no other time: a close
// lost them, and no later DATA gave them back. RPC 20's request begins
// before RPC 10's last BUSY (about 10 ms), its second segment comes after
// it, its last after the RPC_UNKNOWN for 10, then the response (or, with
// the response sent before, a NEED_ACK). A retransmission of the first
// segment after the BUSY, or a witness packet that needs no whole request
// (a GRANT, a BUSY), leaves it inconclusive (CauseClose).
func TestResend019WholeRequestShowsHeld(t *testing.T) {
	retx := func(f *wire.DataFields) { f.Retransmit, f.SegOffset = 1, 0 }
	response := func(b *traceBuilder) int { return b.after(3*time.Millisecond).data(false, 20, 100, 0, 100, 7, nil) }
	for _, tc := range []struct {
		name    string
		witness func(b *traceBuilder) int
		retx    bool
		legal   bool
	}{
		{"response", response, false, false},
		{"need ack", func(b *traceBuilder) int {
			// The response within slack of the RPC_UNKNOWN witnesses
			// nothing (it may have left before a close).
			b.after(time.Millisecond).data(false, 20, 100, 0, 100, 7, nil)
			return b.after(3*time.Millisecond).ctl(false, 20, wire.TypeNeedAck)
		}, false, false},
		{"request bytes retransmitted", response, true, true},
		{"busy", func(b *traceBuilder) int { return b.after(3*time.Millisecond).ctl(false, 20, wire.TypeBusy) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.data(true, 20, 3000, 0, 1424, 7, nil)
			b.after(300*time.Microsecond).data(true, 10, 100, 0, 100, 7, nil)
			for range 2 {
				b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
				b.after(20*time.Microsecond).ctl(false, 10, wire.TypeBusy)
			}
			if tc.retx {
				b.after(time.Millisecond).data(true, 20, 3000, 0, 1424, 7, retx)
			}
			b.after(time.Millisecond).data(true, 20, 3000, 1424, 1424, 7, nil)
			b.after(3*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
			u := b.after(20*time.Microsecond).ctl(false, 10, wire.TypeRPCUnknown)
			b.after(100*time.Microsecond).data(true, 20, 3000, 2848, 152, 7, nil)
			w := tc.witness(b)
			rep := b.check("linux", forgetRule)
			if tc.legal {
				wantViolations(t, rep, forgetRule)
				wantDowngraded(t, rep, forgetRule, u, CauseClose)
				return
			}
			wantViolations(t, rep, forgetRule, u)
			if f := rep.Violations[0]; len(f.Frames) != 1 || f.Frames[0] != w || !strings.Contains(f.Why, "no request byte twice") {
				t.Errorf("frames %v, want the witness %d; why %q", f.Frames, w, f.Why)
			}
		})
	}
}
