package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// slotTrace starts the BR-12 situation with max_overcommit 1: RPC 2's
// 100000-byte request is granted to 60000 and has sent up to it; RPC 4's
// request has its 40000 unscheduled bytes in while the only slot is taken
// (HOMA-GRANT-010 inconclusive at waits). It returns waits.
func slotTrace(b *traceBuilder) (waits int) {
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 60000, 0)
	w := b.message(true, 4, 100000, 0, 40000, 40000, 4)
	b.message(true, 2, 100000, 40000, 60000, 40000, 0)
	return w[len(w)-1]
}

// TestGrant010SlotFreedByUnknown (BR-12): RPC_UNKNOWN from RPC 2's client
// ends it at the server and frees the slot; the server must grant the
// waiting request within response_timeout: a GRANT 10 µs later passes,
// none within 30 ms is a violation at the RPC_UNKNOWN, a GRANT 25 ms later
// is late.
func TestGrant010SlotFreedByUnknown(t *testing.T) {
	for _, c := range []struct {
		name  string
		grant time.Duration // 0: none
		want  string        // "": pass
	}{
		{"granted", 10 * time.Microsecond, ""},
		{"never", 0, "no GRANT from 198.18.0.2 for a message it had not granted (one waited for the grant slot this packet freed)"},
		{"late", 25 * time.Millisecond, "GRANT from 198.18.0.2 for a message it had not granted (one waited for the grant slot this packet freed) came only 25ms later"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			waits := slotTrace(b)
			b.after(5*time.Millisecond).resend(false, 2, 60000, 20000, 7)
			freed := b.after(20*time.Microsecond).ctl(true, 2, wire.TypeRPCUnknown)
			if c.grant > 0 {
				b.after(c.grant).grant(false, 4, 60000, 0)
			}
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
			wantInconclusive(t, rep, "HOMA-GRANT-010", waits)
			if c.want == "" {
				wantViolations(t, rep, "HOMA-GRANT-010")
				wantCounts(t, rep, "HOMA-GRANT-010", 3, 2, 0, 1)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010", freed)
			if f := rep.Violations[0]; !strings.HasPrefix(f.Why, c.want) {
				t.Errorf("why %q, want prefix %q", f.Why, c.want)
			}
		})
	}
}

// TestGrant010SlotFreedByCompletion: the granted request's last byte
// frees the slot (homa_grant_check_rpc unmanages a message with no bytes
// remaining); a GRANT for the waiting request, or for a newer request
// the receiver prefers (SRPT), fills it; none is a violation at the last
// byte. With max_overcommit 2 the waiting request was never blocked: it is
// judged (and violated) at its own unscheduled bytes.
func TestGrant010SlotFreedByCompletion(t *testing.T) {
	for _, c := range []struct {
		name string
		fill func(b *traceBuilder)
		ok   bool
	}{
		{"waiting one", func(b *traceBuilder) { b.after(10*time.Microsecond).grant(false, 4, 60000, 0) }, true},
		{"newer one", func(b *traceBuilder) {
			b.message(true, 6, 50000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(false, 6, 50000, 0)
		}, true},
		{"none", func(b *traceBuilder) {}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			slotTrace(b)
			b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
			last := b.message(true, 2, 100000, 60000, 100000, 40000, 0)
			c.fill(b)
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
			if c.ok {
				wantViolations(t, rep, "HOMA-GRANT-010")
			} else {
				wantViolations(t, rep, "HOMA-GRANT-010", last[len(last)-1])
			}
		})
	}
}

// TestGrant010SlotExcused: no verdict when the waiting request ends
// (RPC_UNKNOWN from its client) or the receiver's buffer-wakeup RESEND
// shows it lacked buffers; no obligation when nothing waits (the waiting
// request was granted before the slot freed) or the receiver stays busy
// (max_incoming granted and not received by the other messages).
func TestGrant010SlotExcused(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	slotTrace(b)
	freed := b.after(5*time.Millisecond).ctl(true, 2, wire.TypeRPCUnknown)
	gone := b.after(time.Millisecond).ctl(true, 4, wire.TypeRPCUnknown)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-010")
	wantExcusedBy(t, rep, freed, gone, "every message waiting for the freed slot ended or completed")

	b = newTrace(t, wire.VersionCurrent)
	slotTrace(b)
	freed = b.after(5*time.Millisecond).ctl(true, 2, wire.TypeRPCUnknown)
	wake := b.after(time.Millisecond).resend(false, 4, 0, wire.ResendAll, 6)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep = b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-010")
	wantExcusedBy(t, rep, freed, wake, "buffer-wakeup RESEND")

	// Granted before the slot freed: nothing waits.
	b = newTrace(t, wire.VersionCurrent)
	slotTrace(b)
	b.after(time.Millisecond).grant(false, 4, 60000, 0)
	b.after(5*time.Millisecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep = b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
	wantViolations(t, rep, "HOMA-GRANT-010")
	wantCounts(t, rep, "HOMA-GRANT-010", 2, 1, 0, 1)

	// max_incoming 10000: RPC 6 still holds 20000 granted bytes it has
	// not sent, so the receiver may grant nothing more.
	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 6, 200000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 6, 60000, 0)
	slotTrace(b)
	freed = b.after(5*time.Millisecond).ctl(true, 2, wire.TypeRPCUnknown)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep = b.check("linux", "HOMA-GRANT-010", "max_overcommit=2", "max_incoming=10000")
	wantViolations(t, rep, "HOMA-GRANT-010")
	// With max_incoming 400000 the freed slot is free to use.
	wantViolations(t, b.check("linux", "HOMA-GRANT-010", "max_overcommit=2"), "HOMA-GRANT-010", freed)
}

// wantExcusedBy asserts that HOMA-GRANT-010's obligation opened at frame
// trigger closed inconclusive at frame by, with a reason containing why.
func wantExcusedBy(t *testing.T, rep *Report, trigger, by int, why string) {
	t.Helper()
	for _, f := range rep.Inconclusive {
		if f.Rule == "HOMA-GRANT-010" && f.Frame == trigger {
			if len(f.Frames) != 1 || f.Frames[0] != by || !strings.Contains(f.Why, why) {
				t.Fatalf("finding %+v: want frames [%d] and a reason with %q", f, by, why)
			}
			return
		}
	}
	t.Fatalf("HOMA-GRANT-010 not inconclusive at frame %d; inconclusive: %v", trigger, rep.Inconclusive)
}

// TestGrant010ResponseAfterClientTimeout: a client whose server was
// silent for timeout_ticks may have aborted the RPC (homa_timer_check_rpc,
// no packet), and then discards the response's DATA: a long response whose
// unscheduled bytes come after 100 ms of silence is owed no GRANT, neither
// as a message of its own nor as one waiting for a freed slot (an
// overloaded simulation with 10 ms timeouts had 10 MUST findings so). After
// 10 ms of silence the client still holds the RPC and must grant.
func TestGrant010ResponseAfterClientTimeout(t *testing.T) {
	for _, c := range []struct {
		name   string
		rounds int // RESEND rounds, 5 ms apart, before the response
		gone   bool
	}{
		{"after timeout", 20, true},
		{"within timeout", 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.deadServer(2, c.rounds)
			w := b.after(time.Millisecond).message(false, 2, 100000, 0, 40000, 40000, 4)
			trig := w[len(w)-1]
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010")
			if !c.gone {
				wantViolations(t, rep, "HOMA-GRANT-010", trig)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010")
			wantInconclusive(t, rep, "HOMA-GRANT-010", trig)
			for _, f := range rep.Inconclusive {
				if f.Frame == trig && !strings.Contains(f.Why, "may have aborted the RPC") {
					t.Errorf("why %q, want the client's timeout", f.Why)
				}
			}
		})
	}
}

// TestGrant010SlotWaiterTimedOut: a slot freed at the client (one response
// complete) finds the other response waiting, but that response came
// after 100 ms of silence from its server: the client may have aborted
// its RPC first, so nothing waits and no GRANT is owed.
func TestGrant010SlotWaiterTimedOut(t *testing.T) {
	for _, c := range []struct {
		name   string
		rounds int
		gone   bool
	}{
		{"after timeout", 20, true},
		{"within timeout", 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			// RPC 2's response is granted and in flight; the only slot
			// (max_overcommit 1) is taken.
			b.data(true, 2, 100, 0, 100, 7, nil)
			b.after(10*time.Microsecond).message(false, 2, 100000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(true, 2, 60000, 0)
			// RPC 4's server is silent for the rounds, then its response's
			// unscheduled bytes arrive while the slot is taken.
			b.deadServer(4, c.rounds)
			b.after(time.Millisecond).message(false, 4, 100000, 0, 40000, 40000, 4)
			b.message(false, 2, 100000, 40000, 60000, 40000, 0)
			b.after(10*time.Microsecond).grant(true, 2, 100000, 0)
			last := b.message(false, 2, 100000, 60000, 100000, 40000, 0)
			freed := last[len(last)-1]
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
			if c.gone {
				wantViolations(t, rep, "HOMA-GRANT-010")
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010", freed)
		})
	}
}

// TestGrant005JumboSegment: at MTU 9000 one segment holds 8924 bytes
// (max_seg_data, homa_message_out_fill), and homa_xmit_data sends a whole
// skb that starts below the horizon: a segment [8924, 17848) past a 9000-
// byte horizon is legal, one starting at the horizon is not (helper-135:
// the checker took 1424-byte segments at any MTU, so one jumbo segment
// overshot "one skb").
func TestGrant005JumboSegment(t *testing.T) {
	if got := skbData(10000, 9000, false); got != 8924 {
		t.Fatalf("skbData(10000, 9000, IPv4) = %d, want 8924", got)
	}
	if got := skbData(10000, 1500, false); got != 6*1424 {
		t.Fatalf("skbData(10000, 1500, IPv4) = %d, want %d", got, 6*1424)
	}
	const id = "HOMA-GRANT-005"
	seg := func(b *traceBuilder, off uint32) int {
		return b.after(10*time.Microsecond).data(true, 2, 40000, off, int(min(8924, 40000-off)), 4, func(f *wire.DataFields) { f.Incoming = 9000 })
	}
	b := newTrace(t, wire.VersionCurrent)
	seg(b, 0)
	seg(b, 8924)
	rep := b.check("linux", id, "mtu=9000", "max_gso_size=10000", "unsched_bytes=9000")
	wantClean(t, rep, id)
	bad := seg(b, 17848)
	rep = b.check("linux", id, "mtu=9000", "max_gso_size=10000", "unsched_bytes=9000")
	wantViolations(t, rep, id, bad)
}

// TestGrant010AfterAck: request packets held up past the client's ack
// reach the server (here its whole unscheduled part, restarted copies
// starved at a low priority level): HomaModule re-creates the RPC
// (homa_dispatch_pkts) and would grant it, but the ack told the server
// the RPC is done, and a server that remembers acknowledged ids (the ref)
// discards them: no GRANT is owed (helper-135: 1-5 MUST a run with
// num_priorities 2 or 4).
func TestGrant010AfterAck(t *testing.T) {
	const id = "HOMA-GRANT-010"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
	b.message(true, 2, 100000, 40000, 100000, 40000, 0)
	b.after(100*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(10 * time.Microsecond).ack(2)
	late := b.after(3*time.Millisecond).message(true, 2, 100000, 0, 40000, 40000, 0)
	b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
	rep := b.check("linux", id)
	wantViolations(t, rep, id)
	wantInconclusive(t, rep, id, late[len(late)-1])
	if f := rep.Inconclusive[len(rep.Inconclusive)-1]; !strings.Contains(f.Why, "acknowledged the RPC") {
		t.Errorf("why %q", f.Why)
	}
}

// TestGrant010OversizedMessageWaitsForNothing: a request one byte past
// max_message_length is refused by its receiver (homa_message_in_init),
// so its unscheduled bytes owe no first GRANT, and it does not wait for
// the grant slot a finished message frees; nor does a message known only
// by malformed DATA (bytes past its length), which its receiver drops (a
// run's capture charged the IUT these, after MALFORMED-ignored sent
// such packets).
func TestGrant010OversizedMessageWaitsForNothing(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 1000001, 0, 40000, 40000, 4) // refused
	b.after(time.Millisecond).message(true, 4, 60000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 4, 60000, 0)
	b.after(10*time.Microsecond).message(true, 4, 60000, 40000, 60000, 40000, 0) // frees the slot
	b.after(30*time.Millisecond).data(false, 4, 100, 0, 100, 7, nil)
	rep := b.check("linux", "HOMA-GRANT-010")
	wantViolations(t, rep, "HOMA-GRANT-010")

	// At unsched_bytes 1, MALFORMED-ignored's packets: bytes past the
	// length, then a length of 0 over the first bytes.
	b = newTrace(t, wire.VersionCurrent)
	b.data(true, 6, 1000, 900, 500, 4, func(f *wire.DataFields) { f.Incoming = 1000 })
	b.data(true, 6, 0, 0, 10, 4, func(f *wire.DataFields) { f.Incoming = 0 })
	b.after(time.Millisecond).message(true, 4, 3000, 0, 1, 1, 4)
	b.after(10*time.Microsecond).grant(false, 4, 3000, 0)
	b.after(10*time.Microsecond).message(true, 4, 3000, 1, 3000, 1, 0) // frees the slot
	b.after(30*time.Millisecond).data(false, 4, 100, 0, 100, 7, nil)
	wantViolations(t, b.check("linux", "HOMA-GRANT-010", "unsched_bytes=1"), "HOMA-GRANT-010")
}
