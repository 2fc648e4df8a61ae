package spec

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestSend004ResponseAfterWholeRequest: a 3000-byte request and a 100-byte
// response. Clean: the response follows the request's last byte, and a
// retransmission of request bytes after it (a RESEND from a server that
// lost them before the response began cannot happen, but a network
// duplicate can) is not judged. Faulty: the response leaves while the
// request's second packet has not been sent yet.
func TestSend004ResponseAfterWholeRequest(t *testing.T) {
	build := func(fault bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 3000, 0, 1424, 5, nil)
		if fault {
			b.after(20*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
		}
		late := b.after(time.Microsecond).data(true, 10, 3000, 1424, 1424, 5, nil)
		b.after(time.Microsecond).data(true, 10, 3000, 2848, 152, 5, nil)
		if !fault {
			b.after(20*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
			b.after(time.Microsecond).data(true, 10, 3000, 1424, 1424, 5, nil) // a duplicate
		}
		return b, late
	}
	b, _ := build(false)
	wantClean(t, b.check("linux", "HOMA-SEND-004"), "HOMA-SEND-004")
	b, late := build(true)
	rep := b.check("linux", "HOMA-SEND-004")
	wantViolations(t, rep, "HOMA-SEND-004", late, late+1)
	// The client's packets prove the server's fault (helper-138: the
	// finding was charged to the innocent client).
	for _, f := range rep.Violations {
		if f.ChargedTo != b.server {
			t.Errorf("frame %d charged to %v, want the server %v", f.Frame, f.ChargedTo, b.server)
		}
	}
}

// TestSend005ResponseWithoutWholeRequest: a 3000-byte request in three
// packets and a 100-byte response. Clean: every request byte shows before
// the response (the middle one as a retransmission: it counts). Faulty: the
// request's last packet never shows and the server responds; the same with
// the first packet missing (the capture began after it: inconclusive,
// RPC started before the capture) or the middle one (the capture shows it
// missed a packet the sender sent: inconclusive, capture dropped packets).
func TestSend005ResponseWithoutWholeRequest(t *testing.T) {
	const id = "HOMA-SEND-005"
	build := func(skip int) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		for i, off := range []uint32{0, 1424, 2848} {
			n := min(1424, 3000-int(off))
			switch {
			case i == skip:
			case skip < 0 && i == 1:
				b.after(time.Microsecond).data(true, 10, 3000, off, n, 5, func(f *wire.DataFields) { f.Retransmit = 1 })
			default:
				b.after(time.Microsecond).data(true, 10, 3000, off, n, 5, nil)
			}
		}
		resp := b.after(20*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
		return b, resp
	}
	for _, prof := range []string{"linux", "linux-2024"} {
		b, _ := build(-1)
		wantClean(t, b.check(prof, id), id)
		b, resp := build(2)
		wantViolations(t, b.check(prof, id), id, resp)
		b, resp = build(0)
		wantDowngraded(t, b.check(prof, id), id, resp, CauseCaptureStart)
		b, resp = build(1)
		wantDowngraded(t, b.check(prof, id), id, resp, CauseCaptureDrop)
	}
}

// TestSend005AfterServerUnknown: a server that answered RPC_UNKNOWN had
// lost the RPC (homa_resend_pkt), so the client's restart makes its next
// incarnation, which holds only the bytes that arrive after: a response
// after a restart of [10000, 20000) alone is a violation although the
// capture saw [0, 10000) before; a whole restart passes; a request byte
// seen less than slack before the RPC_UNKNOWN (at a switch) may have
// reached the new incarnation, so the earlier bytes count again.
func TestSend005AfterServerUnknown(t *testing.T) {
	const id = "HOMA-SEND-005"
	for _, c := range []struct {
		name    string
		from    uint32        // restart's first offset
		lastGap time.Duration // from the last first-transmission DATA to the RPC_UNKNOWN
		bad     bool
	}{
		{"partial restart", 10000, 5 * time.Millisecond, true},
		{"whole restart", 0, 5 * time.Millisecond, false},
		{"byte in flight", 10000, 100 * time.Microsecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.message(true, 2, 20000, 0, 20000, 20000, 4)
			b.after(c.lastGap).resend(true, 2, 0, 100, 7)
			b.after(5*time.Microsecond).ctl(false, 2, wire.TypeRPCUnknown)
			for off := c.from; off < 20000; off += 1424 {
				n := min(1424, 20000-int(off))
				b.after(time.Microsecond).data(true, 2, 20000, off, n, 4, func(f *wire.DataFields) { f.Retransmit, f.Incoming = 1, 20000 })
			}
			resp := b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
			rep := b.check("linux", id)
			if !c.bad {
				wantClean(t, rep, id)
				wantCounts(t, rep, id, 1, 1, 0, 0)
				return
			}
			wantViolations(t, rep, id, resp)
			if f := rep.Violations[0]; !strings.Contains(f.Why, "since the server's RPC_UNKNOWN") {
				t.Errorf("why %q", f.Why)
			}
		})
	}
}

// TestSend001ResendPastSent: the GRANT to 10000 never shows (lost), the
// server's RESEND asks for [3000, 10000), bytes the client never sent, and
// the client answers BUSY each time without sending them: HomaModule takes
// such a RESEND for a lost GRANT and sends (homa_resend_pkt), so no new
// bytes within response_timeout is a warning (helper-134's
// resend-no-grant-extend: a BUSY livelock with no finding). Another
// message of the client with far more bytes left does not excuse it (the
// pacer sends the fewest bytes left first); one with fewer does, until it
// too waits for a grant (the next RESEND's wait is a warning).
func TestSend001ResendPastSent(t *testing.T) {
	const id = "HOMA-SEND-001"
	for _, c := range []struct {
		name  string
		other uint32 // length of another request the client sends meanwhile (0: none)
		bad   bool
	}{
		{"busy only", 0, true},
		{"longer message sent", 500000, true},
		{"shorter message sent", 4000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.message(true, 2, 10000, 0, 3000, 3000, 4)
			var first, second int
			for i := range 6 {
				rs := b.after(5*time.Millisecond).resend(false, 2, 3000, 7000, 7)
				if i == 1 {
					second = rs
				}
				if i == 0 {
					first = rs
					if c.other > 0 {
						b.after(100*time.Microsecond).message(true, 4, c.other, 0, 3000, 3000, 4)
					}
				}
				b.after(10*time.Microsecond).ctl(true, 2, wire.TypeBusy)
			}
			b.after(5*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", id, "unsched_bytes=3000")
			if !c.bad {
				wantInconclusive(t, rep, id, first)
				if len(rep.Violations) == 0 || rep.Violations[0].Frame != second {
					t.Fatalf("want a warning at the second RESEND (frame %d): %v", second, rep.Violations)
				}
				return
			}
			if len(rep.Violations) == 0 || rep.Violations[0].Frame != first {
				t.Fatalf("want a warning at the first RESEND (frame %d): %v", first, rep.Violations)
			}
		})
	}
}

// TestSend001ArrivedDespiteLoss: the capture shows loss toward the client
// after the capture point (it asks again for response bytes of RPC 6 that
// the capture saw go to it), so a RESEND to it may not have arrived: a
// missed answer is inconclusive, unless the client's BUSY shows a RESEND
// asking past what it sent reached it (Arrival).
func TestSend001ArrivedDespiteLoss(t *testing.T) {
	const id = "HOMA-SEND-001"
	for _, busy := range []bool{true, false} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 6, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, 6, 1000, 0, 1000, 7, nil)
		b.after(3*time.Millisecond).resend(true, 6, 0, 1000, 7) // the response's bytes did not reach the client
		b.message(true, 2, 10000, 0, 3000, 3000, 4)
		rs := b.after(5*time.Millisecond).resend(false, 2, 3000, 7000, 7)
		if busy {
			b.after(10*time.Microsecond).ctl(true, 2, wire.TypeBusy)
		}
		b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
		rep := b.check("linux", id, "unsched_bytes=3000")
		if busy {
			wantViolations(t, rep, id, rs)
			continue
		}
		wantViolations(t, rep, id)
		wantDowngraded(t, rep, id, rs, CauseLossAfter)
	}
}

// TestSend001NotAfterAck: a GRANT that raises the horizon of a response
// its client has already acknowledged draws no obligation: the server
// ended the RPC on the ack (homa_rpc_acked), so nothing more is sent
// (ACK-held-response-ends). Without the ack, the missing bytes are a
// finding.
func TestSend001NotAfterAck(t *testing.T) {
	build := func(ack bool) *traceBuilder {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 6, nil)
		b.after(time.Microsecond).message(false, 2, 50000, 0, 40000, 40000, 6)
		if ack {
			b.after(time.Millisecond).ack(2)
		}
		b.after(time.Millisecond).grant(true, 2, 50000, 0)
		b.after(100*time.Millisecond).data(true, 4, 100, 0, 100, 6, nil) // time passes
		return b
	}
	wantViolations(t, build(true).check("linux", "HOMA-SEND-001"), "HOMA-SEND-001")
	rep := build(false).check("linux", "HOMA-SEND-001")
	if len(rep.Violations) == 0 {
		t.Errorf("no HOMA-SEND-001 finding for a GRANT the server left unanswered: %+v", rep)
	}
}

// TestSend005ResponseNeverRequested: the client's RPCs 2 and 20 (short
// requests, 20 well inside the capture) complete. A response for RPC 40,
// an id above 20 whose request never shows, is for an RPC the server
// cannot have (homa_rpc_alloc_server creates one only from request DATA,
// and id 40 began after 20, so its request would have passed the capture
// point): a violation the capture's start does not excuse, naming RPC 20's
// first packet. A response for RPC 18, below the newest, whose request may
// have come before the capture, is not judged; nor is one for 40 when the
// client's newest RPC began right at the capture's start.
func TestSend005ResponseNeverRequested(t *testing.T) {
	const id = "HOMA-SEND-005"
	b := newTrace(t, wire.VersionCurrent)
	b.rpcWithResponse(2, 100)
	first := b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	b.after(50*time.Microsecond).data(false, 20, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(false, 18, 100, 0, 100, 7, nil) // below the newest: not judged
	never := b.after(time.Millisecond).data(false, 40, 100, 0, 100, 7, nil)
	rep := b.check("linux", id)
	wantViolations(t, rep, id, never)
	wantCounts(t, rep, id, 3, 2, 1, 0)
	f := rep.Violations[0]
	if !strings.Contains(f.Why, "first response DATA for RPC 40, whose request never passed the capture point: the client's newest RPC, 20,") || !slices.Contains(f.Frames, first) || f.ChargedTo != b.server {
		t.Errorf("finding %q frames %v charged to %v", f.Why, f.Frames, f.ChargedTo)
	}
	b = newTrace(t, wire.VersionCurrent)
	b.rpcWithResponse(2, 100)
	b.after(time.Millisecond).data(false, 40, 100, 0, 100, 7, nil)
	rep = b.check("linux", id)
	wantClean(t, rep, id)
	wantCounts(t, rep, id, 1, 1, 0, 0)
}
