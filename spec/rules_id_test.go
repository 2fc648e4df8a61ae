package spec

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// swapHosts makes the builder's server host the client and vice versa
// (both hosts run a client socket on their first default port 32768 and a
// server socket bound to 4000), so the next packets belong to RPCs that
// the other host started.
func (b *traceBuilder) swapHosts() { b.client, b.server = b.server, b.client }

// rpcRoundTrip plays one small RPC: request DATA, response DATA, ACK.
func (b *traceBuilder) rpcRoundTrip(cid uint64, reqLen, respLen uint32) {
	b.message(true, cid, reqLen, 0, reqLen, 40000, 6)
	b.after(20 * time.Microsecond)
	b.message(false, cid, respLen, 0, respLen, 40000, 6)
	b.after(20 * time.Microsecond)
}

// TestID001RoleBit: the two directions of an RPC differ in bit 0 of
// sender_id only.
func TestID001RoleBit(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.cutoffs(false, 2, 1)
		b.rpcRoundTrip(2, 1000, 3000)
		b.resend(true, 4, 0, wire.ResendAll, 7) // client asks for a response not started
		b.ctl(false, 4, wire.TypeBusy)
		b.ctl(false, 2, wire.TypeNeedAck)
		b.ack(2)
		// The other host is a client too: its id counter also starts at
		// 2, so it sends its own RPCs 2 and 4 to our server socket. Legal:
		// different sockets (32768 → 4000 the other way round).
		b.swapHosts()
		b.rpcRoundTrip(2, 500, 500)
		b.rpcRoundTrip(4, 500, 500)
		b.ctl(true, 0, wire.TypeFreeze) // debugging FREEZE: sender_id 0
		rep := b.check("linux", "HOMA-ID-001")
		wantClean(t, rep, "HOMA-ID-001")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		req := b.data(true, 4, 1000, 0, 1000, 6, nil)
		// The server answers with the client's even id instead of id+1.
		echo := b.emit(false, 6, &wire.DataFields{Common: wire.CommonFields{SenderID: 4, Sequence: 0},
			MessageLength: 500, Incoming: 500, CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 500)}, nil)
		// A client asks for its response with the server's (odd) id.
		b.data(true, 6, 1000, 0, 1000, 6, nil)
		odd := b.emit(true, 7, &wire.ResendFields{Common: wire.CommonFields{SenderID: 7}, Offset: 0, Length: wire.ResendAll, Priority: 7}, nil)
		rep := b.check("linux", "HOMA-ID-001")
		wantViolations(t, rep, "HOMA-ID-001", echo, odd)
		if f := rep.Violations[0].Frames; len(f) != 1 || f[0] != req {
			t.Errorf("violation names frames %v, want the request's first frame %d", f, req)
		}
		if why := rep.Violations[0].Why; !strings.Contains(why, "sender_id 4 has the role bit of the client") {
			t.Errorf("reason %q", why)
		}
	})
	t.Run("known from a RESEND", func(t *testing.T) {
		// The request's DATA never passed the capture point: the client's
		// RESEND {0, -1} is all the capture shows of the RPC, and the
		// server's RPC_UNKNOWN echoes its even id.
		b := newTrace(t, wire.VersionCurrent)
		rs := b.resend(true, 20, 0, wire.ResendAll, 7)
		echo := b.after(time.Microsecond).emit(false, 7, &wire.RPCUnknownFields{Common: wire.CommonFields{SenderID: 20}}, nil)
		rep := b.check("linux", "HOMA-ID-001")
		wantViolations(t, rep, "HOMA-ID-001", echo)
		if f := rep.Violations[0].Frames; len(f) != 1 || f[0] != rs {
			t.Errorf("violation names frames %v, want the RESEND %d", f, rs)
		}
	})
}

// TestID002RequestPort: requests never go to port 0; a request to a port
// from 32768 up is inconclusive on main (legal with SO_HOMA_SERVER) and
// legal on linux_6.1.38 (every socket serves).
func TestID002RequestPort(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.rpcRoundTrip(2, 100, 100)
		b.xferRequest(4, 100000, 40000, 200000, 4, 0)
		wantClean(t, b.check("linux", "HOMA-ID-002"), "HOMA-ID-002")

		b = newTrace(t, wire.Version2024)
		b.sport = 32769 // the server socket never called bind()
		b.rpcRoundTrip(2, 100, 100)
		rep := b.check("linux-2024", "HOMA-ID-002")
		wantClean(t, rep, "HOMA-ID-002")
	})
	t.Run("violation", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.rpcRoundTrip(2, 100, 100)
		b.sport = 0
		zero := b.message(true, 4, 3000, 0, 3000, 40000, 6) // every packet to port 0 violates
		rep := b.check("linux", "HOMA-ID-002")
		wantViolations(t, rep, "HOMA-ID-002", zero...)
	})
	t.Run("inconclusive", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.sport = 40000 // SO_HOMA_SERVER on an unbound socket, or a misdirected request
		first := b.message(true, 2, 3000, 0, 3000, 40000, 6)
		rep := b.check("linux", "HOMA-ID-002")
		wantInconclusive(t, rep, "HOMA-ID-002", first[0])
		if len(rep.Inconclusive) != 1 {
			t.Errorf("inconclusive %v, want one finding per RPC", rep.Inconclusive)
		}
		wantViolations(t, rep, "HOMA-ID-002")
	})
}

// TestID004PacedRequest: the first packet of a new RPC whose id is below
// one the host had acked more than response_timeout before, and not one
// it acked, is inconclusive: its sendmsg may have stalled between taking
// the id and sending (any length), or the sender's SRPT may have held a
// paced request (over defer_min_bytes) behind shorter messages (SND-04);
// the reason says which. The bound is the profile's: linux_6.1.38 paces
// from throttle_min_bytes 200 up, main above defer_min_bytes 1000. An id
// the host acked, begun again, stays a violation.
func TestID004PacedRequest(t *testing.T) {
	for _, c := range []struct {
		name    string
		profile string
		id      uint64
		reqLen  uint32
		want    Status
		why     string
	}{
		{"short", "linux", 8, 100, Inconclusive, "stalled"},
		{"paced", "linux", 8, 100000, Inconclusive, "is paced"},
		// The acked id itself (an ack named it before it began, as a
		// piggy-backed ack of a future RPC would): a violation.
		{"paced, the acked id", "linux", 14, 100000, Violated, ""},
		{"500 B on main: not paced", "linux", 8, 500, Inconclusive, "stalled"},
		{"500 B on linux_6.1.38: paced", "linux-2024", 8, 500, Inconclusive, "is paced"},
		{"200 B on linux_6.1.38: paced (>= throttle_min_bytes)", "linux-2024", 8, 200, Inconclusive, "is paced"},
		{"199 B on linux_6.1.38: not paced", "linux-2024", 8, 199, Inconclusive, "stalled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr, err := LookupProfile(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			b := newTrace(t, pr.Params.Wire)
			b.smallRPC(10, 100, 1)
			b.smallRPC(12, 100, 1)
			b.ack(12, 14) // names RPC 14, which has not begun
			late := b.after(30*time.Millisecond).data(true, c.id, c.reqLen, 0, int(min(c.reqLen, 1424)), 7, nil)
			rep := b.check(c.profile, "HOMA-ID-004")
			switch c.want {
			case Violated:
				wantViolations(t, rep, "HOMA-ID-004", late)
			default:
				wantInconclusive(t, rep, "HOMA-ID-004", late)
				if f := rep.Inconclusive; len(f) != 1 || !strings.Contains(f[0].Why, c.why) {
					t.Errorf("inconclusive %v: want one saying %q", f, c.why)
				}
			}
		})
	}
}

// TestID004AckHistory: a new RPC's id is judged against the host's
// largest acked id only once that ack is response_timeout old (a busy
// client's late first packet is not judged); an RPC whose first request
// bytes come after an ack of it is a violation at once, and an acked RPC
// that begins again is a reuse also once the trace has let it go (acked
// RPCs are forgotten EvictAfter after their last packet).
func TestID004AckHistory(t *testing.T) {
	t.Run("busy client, late first packet", func(t *testing.T) {
		// RPC 8 took its id before RPCs 10 and 12 and its first packet
		// left late (a sendmsg preempted while copying from user space):
		// while the host's latest ack is recent, a smaller id is not
		// judged, though RPC 10's ack is 30 ms old.
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(10, 100, 1)
		b.ack(10)
		b.after(25 * time.Millisecond)
		b.smallRPC(12, 100, 1)
		b.ack(12)
		b.after(5*time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)
		rep := b.check("linux", "HOMA-ID-004")
		wantClean(t, rep, "HOMA-ID-004")
	})
	t.Run("stalled sendmsg, then quiet", func(t *testing.T) {
		// RPC 8 took its id before RPCs 10 and 12 and left 25 ms after
		// their acks, the host quiet meanwhile: inconclusive (found by a
		// reviewer; a violation before).
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(10, 100, 1)
		b.smallRPC(12, 100, 1)
		late := b.after(25*time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)
		rep := b.check("linux", "HOMA-ID-004")
		wantViolations(t, rep, "HOMA-ID-004")
		wantInconclusive(t, rep, "HOMA-ID-004", late)
	})
	t.Run("acked before it began", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(6, 100, 1)
		b.dataAcking(true, 8, 100, 0, 100, 7, 10) // names RPC 10, not begun
		b.after(150*time.Microsecond).data(false, 8, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(true, 10, 100, 0, 100, 7, nil) // 200 µs after its ack: within jitter
		b.after(time.Millisecond).dataAcking(true, 12, 100, 0, 100, 7, 14)
		late := b.after(time.Millisecond).data(true, 14, 100, 0, 100, 7, nil)
		rep := b.check("linux", "HOMA-ID-004")
		wantViolations(t, rep, "HOMA-ID-004", late)
		if v := rep.Violations; len(v) != 1 || !strings.Contains(v[0].Why, "an ack of RPC 14 came 1ms earlier") {
			t.Errorf("violations %v: want one naming the ack of RPC 14", v)
		}
	})
	for _, gap := range []time.Duration{30 * time.Millisecond, EvictAfter + time.Second} {
		t.Run(fmt.Sprintf("acked RPC begins again %v later", gap), func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.smallRPC(10, 100, 1)
			b.ack(10)
			b.after(gap)
			b.smallRPC(12, 100, 1)
			b.ack(12)
			// The same length (different ones would be two module
			// instances' doing, which the merge detector reports).
			again := b.after(time.Millisecond).data(true, 10, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-ID-004")
			wantViolations(t, rep, "HOMA-ID-004", again)
			if v := rep.Violations; len(v) != 1 || !strings.Contains(v[0].Why, "RPC 10 was acknowledged") || !strings.Contains(v[0].Why, "ids are never reused") {
				t.Errorf("violations %v: want one saying RPC 10 itself was acked", v)
			}
		})
	}
}

// TestAckHistoryEntriesOnly: an ACK header may answer NEED_ACK for an RPC
// the client does not have (homa_need_ack_pkt; a module loaded again
// answers its predecessor's server), so only ack entries, RPCs the client
// completed, are remembered as used ids; the largest id counts both.
func TestAckHistoryEntriesOnly(t *testing.T) {
	var h ackHistory
	h.note(10, &Event{Frame: 1}, false)
	h.note(8, &Event{Frame: 2}, true)
	if _, ok := h.ackOf(10); ok {
		t.Error("an ACK header's id is remembered as used")
	}
	if a, ok := h.ackOf(8); !ok || a.frame != 2 {
		t.Errorf("ack entry 8: %+v %v, want frame 2", a, ok)
	}
	if h.max.id != 10 {
		t.Errorf("largest acked id %d, want 10", h.max.id)
	}
}

// TestID004IDOfAnEndedRPC: a client that takes the id of its RPC with
// another server again, after that RPC ended without an ack (it timed
// out, or its application aborted it: nothing on the wire says which),
// reuses it (rt3's t28: an aborted RPC's id given to the next RPC). Within
// timeout_ticks of the first RPC's last packet it is still live there,
// which HOMA-WIRE-011 judges; a new id is no reuse. (Id 2 again after
// timeout_ticks of silence would be a module restarted: a new section.)
func TestID004IDOfAnEndedRPC(t *testing.T) {
	other := netip.MustParseAddr("198.18.0.3")
	for _, c := range []struct {
		name  string
		gap   time.Duration
		id    uint64
		id004 bool
		w011  bool
	}{
		{"after timeout_ticks", 150 * time.Millisecond, 10, true, false},
		{"while live", 20 * time.Millisecond, 10, false, true},
		{"a new id", 150 * time.Millisecond, 12, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.data(true, 10, 100, 0, 100, 7, nil)
			b.server = other
			again := b.after(c.gap).data(true, c.id, 200, 0, 200, 7, nil)
			rep := b.check("linux", "HOMA-ID-004,HOMA-WIRE-011")
			var want004, want011 []int
			if c.id004 {
				want004 = []int{again}
			}
			if c.w011 {
				want011 = []int{again}
			}
			wantViolations(t, rep, "HOMA-ID-004", want004...)
			wantViolations(t, rep, "HOMA-WIRE-011", want011...)
		})
	}
}
