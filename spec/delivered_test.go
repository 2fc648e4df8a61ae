package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// delivered is the capture point of a run's delivered.pcapng: every packet
// as it was delivered, with the whole network before it.
var delivered = CapturePoint{Kind: CaptureDelivered}

// wantExcusedAt asserts that rule id judges frame of b's trace
// inconclusive for cause at capture point cp, with no violation, and that
// the reason contains why and names evidence frame ev first (0: any);
// and that at each of judged the frame is a violation.
func wantExcusedAt(t *testing.T, b *traceBuilder, cp CapturePoint, profile, id string, frame int, cause Cause, why string, ev int, judged ...CapturePoint) {
	t.Helper()
	rep := b.checkAt(cp, profile, id)
	wantViolations(t, rep, id)
	wantDowngraded(t, rep, id, frame, cause)
	for _, f := range rep.Inconclusive {
		if f.Rule != id || f.Frame != frame {
			continue
		}
		if !strings.Contains(f.Why, why) {
			t.Errorf("%s at frame %d: reason %q, want it to contain %q", id, frame, f.Why, why)
		}
		if ev != 0 && (len(f.Frames) == 0 || f.Frames[0] != ev) {
			t.Errorf("%s at frame %d: evidence frames %v, want %d first", id, frame, f.Frames, ev)
		}
	}
	for _, at := range judged {
		wantViolations(t, b.checkAt(at, profile, id), id, frame)
	}
}

// wantLossExcused wants rule id's finding (linux profile) at the frame
// build returns excused for loss before the capture point, its reason
// containing why: on build(false), a trace that shows no loss, at a
// capture of packets as delivered and on the receiver's link, which holds
// the packets to it as delivered (the capture point its evidence); on
// build(true), a trace that shows loss on the path, at a switch too. On
// its sender's link (the client's if fromClient, else the server's), and
// at a switch without the loss, it stays a violation.
func wantLossExcused(t *testing.T, id, why string, fromClient bool, build func(lossBefore bool) (*traceBuilder, int)) {
	t.Helper()
	sender := func(b *traceBuilder) CapturePoint {
		if fromClient {
			return HostPoint(b.client)
		}
		return HostPoint(b.server)
	}
	receiver := func(b *traceBuilder) CapturePoint {
		if fromClient {
			return HostPoint(b.server)
		}
		return HostPoint(b.client)
	}
	b, at := build(false)
	wantExcusedAt(t, b, delivered, "linux", id, at, CauseLossBefore, why, at, Switch, sender(b))
	wantExcusedAt(t, b, receiver(b), "linux", id, at, CauseLossBefore, why, at)
	b, at = build(true)
	wantExcusedAt(t, b, Switch, "linux", id, at, CauseLossBefore, why, 0, sender(b))
}

// rpcLosingPacket adds RPC cid whose 3000-byte message from the client
// (fromClient) or the server lost its second packet before the capture
// point: the capture sees that packet's bytes only retransmitted, after
// its receiver's RESEND, which shows the loss (Network.LostBefore). The
// other message is 100 bytes; the client acks the RPC.
func (b *traceBuilder) rpcLosingPacket(cid uint64, fromClient bool) {
	long := func() {
		b.data(fromClient, cid, 3000, 0, 1424, 7, nil)
		b.data(fromClient, cid, 3000, 2848, 152, 7, nil)
		b.after(20*time.Millisecond).resend(!fromClient, cid, 1424, 1424, 7)
		b.after(50*time.Microsecond).data(fromClient, cid, 3000, 1424, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1 })
	}
	if fromClient {
		long()
		b.after(time.Millisecond).data(false, cid, 100, 0, 100, 7, nil)
	} else {
		b.data(true, cid, 100, 0, 100, 7, nil)
		b.after(time.Millisecond)
		long()
	}
	b.after(time.Millisecond).ack(cid, cid)
}

// TestDeliveredGrant003LateOlderGrant: at a capture of packets as
// delivered the network before it may hold a GRANT behind later ones for
// longer than slack (a netem link of the lab, c-netem against
// linux_6.13.9, delivered the GRANT to 116928 53 ms after the one to
// 118352, sent 117 ms after it): a fresh lower offset is reordering
// however late, while a repeated offset, which no reordering makes, stays
// a violation. So on the GRANT's receiver's link (the same lab run's port
// to 198.18.0.4, extracted with tshark and checked at host:198.18.0.4),
// which holds the packets to it as delivered. Elsewhere (a switch, the
// GRANT's sender's link) the fresh one past slack stays a violation.
func TestDeliveredGrant003LateOlderGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 500000, 0, 40000, 40000, 4)
	high := b.grant(false, 2, 240000, 0)
	older := b.after(53*time.Millisecond).grant(false, 2, 200000, 0)
	wantExcusedAt(t, b, delivered, "linux", "HOMA-GRANT-003", older, CauseReorder, "arrived 53ms after GRANT offset 240000", high,
		Switch, HostPoint(b.server))
	wantExcusedAt(t, b, HostPoint(b.client), "linux", "HOMA-GRANT-003", older, CauseReorder, "arrived 53ms after GRANT offset 240000", high)
	repeat := b.after(50*time.Millisecond).grant(false, 2, 240000, 0)
	for _, cp := range []CapturePoint{delivered, HostPoint(b.client)} {
		wantViolations(t, b.checkAt(cp, "linux", "HOMA-GRANT-003"), "HOMA-GRANT-003", repeat)
	}
	wantViolations(t, b.check("linux", "HOMA-GRANT-003"), "HOMA-GRANT-003", older, repeat)
}

// TestDeliveredGrant004HeldGrant: at a capture of packets as delivered
// the network before it may hold a GRANT for longer than slack, so one the
// receiver sent before the message's last byte arrived can be seen 53 ms
// after it (the hold HOMA-GRANT-003's lab run showed): inconclusive there
// and on the link of the message's sender, which holds the GRANTs to it as
// delivered, naming the DATA that completed the message. At a switch and
// on the receiver's own link, where GRANTs are seen as sent, it stays a
// violation.
func TestDeliveredGrant004HeldGrant(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	x := b.xferRequest(2, 30000, 10000, 10000, 4, 0)
	done := x.sched[len(x.sched)-1]
	late := b.after(53*time.Millisecond).grant(false, 2, 30000, 0)
	wantExcusedAt(t, b, delivered, "linux", "HOMA-GRANT-004", late, CauseQueueing, "may have held the GRANT however long", done,
		Switch, HostPoint(b.server))
	wantExcusedAt(t, b, HostPoint(b.client), "linux", "HOMA-GRANT-004", late, CauseQueueing, "on "+b.client.String()+"'s link", done)
}

// TestDeliveredID004RequestLost: an RPC whose only request packet was lost
// before the capture point shows up first with its client's RESEND for
// the response, after RPCs with larger ids were acknowledged (lab:
// c-netem against linux_6.13.9, RPC 36 first seen 630 ms after RPC 68's
// ack). At a capture of packets as delivered, or where the capture shows
// loss between the hosts before it, the request may have left in time:
// inconclusive. A RESEND seen there without such a sign stays a violation.
func TestDeliveredID004RequestLost(t *testing.T) {
	build := func(lossBefore bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(4, 100, 1)
		// Later than timeout_ticks after the capture's start: no RPC
		// can have begun before the capture.
		b.after(2 * time.Second)
		if lossBefore {
			b.rpcLosingPacket(6, true)
		}
		b.smallRPC(10, 100, 1)
		b.smallRPC(12, 100, 1)
		return b, b.after(30*time.Millisecond).resend(true, 8, 0, wire.ResendAll, 7)
	}
	wantLossExcused(t, "HOMA-ID-004", "first seen by its RESEND", true, build)
}

// TestDeliveredAck001ResponseLost: a NEED_ACK after part of the response,
// its last packet lost before the capture point (lab: c-netem against
// linux_6.13.9, NEED_ACK after 1424 of 2185 response bytes, the rest
// retransmitted later). At a capture of packets as delivered, or where the
// capture shows loss from the server before it, inconclusive; on the
// server's link, and at a switch with no sign of such loss, a violation.
func TestDeliveredAck001ResponseLost(t *testing.T) {
	build := func(lossBefore bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		if lossBefore {
			b.rpcLosingPacket(2, false)
		}
		b.data(true, 4, 100, 0, 100, 7, nil)
		b.after(time.Millisecond).data(false, 4, 2185, 0, 1424, 7, nil)
		return b, b.after(2*time.Millisecond).ctl(false, 4, wire.TypeNeedAck)
	}
	wantLossExcused(t, "HOMA-ACK-001", "only 1424 of 2185 response bytes were seen", false, build)
}

// TestDeliveredGrant014GrantsReordered: linux_6.1.38 granted message A,
// then message B of the same sender, but the network delivered A's GRANT
// after B's first one (lab: c-netem against linux_6.1.38), so as
// delivered the receiver seems to go back to B while A is being granted.
// At a capture of packets as delivered, and on the sender's link, which
// holds the GRANTs to it as delivered, that return is inconclusive; on
// the receiver's link, and at a switch, it stays a finding.
func TestDeliveredGrant014GrantsReordered(t *testing.T) {
	b := newTrace(t, wire.Version2024)
	b.message(true, 2, 30000, 0, 10000, 10000, 6)
	b.message(true, 4, 20000, 0, 10000, 10000, 6)
	b.after(time.Millisecond).grant(false, 4, 12000, 0) // sent after A's GRANT below
	a := b.after(time.Millisecond).grant(false, 2, 12000, 0)
	back := b.after(time.Millisecond).grant(false, 4, 16000, 0)
	wantExcusedAt(t, b, delivered, "linux-2024", "HOMA-GRANT-014", back, CauseReorder, "also being granted", a, Switch, HostPoint(b.server))
	wantExcusedAt(t, b, HostPoint(b.client), "linux-2024", "HOMA-GRANT-014", back, CauseReorder, "also being granted", a)
}

// TestDeliveredAt: the direction a capture point holds as delivered, the
// whole network before it: every direction at the delivered point; on a
// host's link, the packets to it (those from it are as sent); nowhere at
// a switch or the sent point.
func TestDeliveredAt(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	c, s := b.client, b.server
	for _, x := range []struct {
		cp       CapturePoint
		toServer bool
		toClient bool
	}{
		{delivered, true, true},
		{HostPoint(s), true, false},
		{HostPoint(c), false, true},
		{Switch, false, false},
		{CapturePoint{Kind: CaptureSent}, false, false},
	} {
		n := newNetwork(x.cp, &Params{})
		if got := n.DeliveredAt(c, s); got != x.toServer {
			t.Errorf("%v: DeliveredAt(%v, %v) = %v, want %v", x.cp, c, s, got, x.toServer)
		}
		if got := n.DeliveredAt(s, c); got != x.toClient {
			t.Errorf("%v: DeliveredAt(%v, %v) = %v, want %v", x.cp, s, c, got, x.toClient)
		}
		if ev, ok := n.MayReorderBefore(s, c, 7); ok != x.toClient || ok && (ev.Frame != 7 || !strings.Contains(ev.Why, "whole network from "+s.String())) {
			t.Errorf("%v: MayReorderBefore(%v, %v) = %v, %v", x.cp, s, c, ev, ok)
		}
	}
	if ev, _ := newNetwork(HostPoint(c), &Params{}).MayLoseBefore(s, c, 3); !strings.Contains(ev.Why, "the capture is on "+c.String()+"'s link, which holds the packets to it as they were delivered") {
		t.Errorf("host point's evidence: %q", ev.Why)
	}
}

// TestDeliveredGrant013FIFOGrantAhead: a receiver's FIFO GRANT adds
// fifo_grant_increment whatever the bytes granted and not received
// (homa_grant_check_fifo, homa_choose_fifo_grant on linux_6.1.38: it may
// take the sum past max_incoming), and on main it follows the SRPT GRANT
// whose send checks for it (homa_grant_try_send). At a capture of packets
// as delivered the network may hold that SRPT GRANT for any time and
// deliver the FIFO GRANT to another host first: the SRPT GRANT, seen 20 ms
// (past slack) after the FIFO one, then seems to go past max_incoming,
// which it may not have done when it left: inconclusive. At a switch, and
// on the receiver's link, which holds the receiver's order, it stays a
// finding; so at the delivered point with an SRPT GRANT of 12000 bytes
// in place of the FIFO one: the receiver sent both, and the sum of both
// is past the limit whichever left first.
func TestDeliveredGrant013FIFOGrantAhead(t *testing.T) {
	const id = "HOMA-GRANT-013"
	build := func(off uint32, prio uint8) (*traceBuilder, int, int) {
		b := newTrace(t, wire.VersionCurrent)
		a := b.client
		b.message(true, 2, 300000, 0, 40000, 40000, 4)
		b.client = netip.MustParseAddr("198.18.0.9")
		b.message(true, 4, 300000, 0, 40000, 40000, 4)
		other := b.after(10*time.Microsecond).grant(false, 4, off, prio)
		b.client = a
		return b, other, b.after(20*time.Millisecond).grant(false, 2, 52000, 0)
	}
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	fifo := uint8(prof.Params.HighPriority())
	b, ahead, g := build(90000, fifo)
	rep := b.checkAt(delivered, "linux", id, "max_incoming=20000")
	wantViolations(t, rep, id)
	wantDowngraded(t, rep, id, g, CauseReorder)
	if f := rep.Inconclusive[0]; len(f.Frames) == 0 || f.Frames[0] != ahead || !strings.Contains(f.Why, "50000 of them granted by FIFO GRANTs seen before this one") {
		t.Errorf("inconclusive %s (evidence %v), want the FIFO GRANT's 50000 bytes and frame %d", f.Why, f.Frames, ahead)
	}
	for _, cp := range []CapturePoint{Switch, HostPoint(b.server)} {
		wantViolations(t, b.checkAt(cp, "linux", id, "max_incoming=20000"), id, g)
	}
	b, _, g = build(52000, 1)
	wantViolations(t, b.checkAt(delivered, "linux", id, "max_incoming=20000"), id, g)
}
