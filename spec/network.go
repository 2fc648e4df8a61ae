package spec

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Cause names what between the capture point and a host can explain a
// finding that would otherwise be a violation: the network lost, reordered
// or duplicated packets on that stretch (or, CauseClose, a host event no
// packet shows). A rule downgrades a finding to inconclusive with a Cause
// only when the capture shows that effect (see Network) or cannot rule it
// out (CauseClose); Report.Downgrades counts them.
type Cause string

// Causes of downgrades.
const (
	// CauseLossAfter: packets seen by the capture may not have reached
	// their receiver (the capture shows such a loss toward it).
	CauseLossAfter Cause = "loss after the capture point"
	// CauseLossBefore: packets a host sent may not have reached the
	// capture point (the capture shows such a loss from that host).
	CauseLossBefore Cause = "loss before the capture point"
	// CauseReorder: the network reordered packets before the capture point.
	CauseReorder Cause = "reordering"
	// CauseDuplicate: the network duplicated a packet.
	CauseDuplicate Cause = "duplication"
	// CauseQueueing: a packet seen after an event at a capture point away
	// from its sender may have been sent before it (in flight, queued).
	CauseQueueing Cause = "queueing"
	// CauseClose: not the network but a host event no packet shows: the
	// host closed the socket or restarted (its Homa module reloaded),
	// which discards every RPC the socket held.
	CauseClose Cause = "socket closed or host restarted"
	// CauseCaptureStart: not the network but the capture's start: the
	// RPC's first packet in the capture is not the first bytes of its
	// request, so what its hosts did and heard before (GRANTs, RESENDs,
	// acks, cutoffs) is not in the capture (tcpdump started while the
	// RPC was under way, or its first packet was lost before the capture
	// point).
	CauseCaptureStart Cause = "RPC started before the capture"
	// CauseCaptureDrop: not the network but the capture itself: it says
	// it dropped packets (its buffer overflowed: a pcapng's interface
	// statistics, or check --capture-drops), packets that were delivered
	// but not recorded, so a finding that rests on a packet not being
	// seen (a GRANT, RESEND or ACK the capture missed) may be the
	// capture's doing (see Checker.SetCaptureDrops for the bound).
	CauseCaptureDrop Cause = "capture dropped packets"
	// CauseOneDirection: not the network but the capture itself: it
	// holds packets in one direction only between every two hosts
	// (tcpdump -Q out or -Q in, a filter on one source address), so a
	// finding that rests on the other side's packets, their absence or
	// their content (a GRANT, RESEND or ACK never seen, a DATA never
	// answered), may rest on packets sent but not recorded
	// (Report.OneDirection).
	CauseOneDirection Cause = "capture shows one direction only"
	// CauseOneEnd: not the network but the capture itself: it holds one
	// end of every host's link (every packet as its sender sent it, or as
	// it was delivered: a run's sent.pcapng or delivered.pcapng, told by
	// epb_flags), so it stamps a host's packets and the packets to it at
	// different ends of the path, and a finding that relates the two
	// (what a host had received when it sent, whether it answered) may
	// rest on when the other end saw them (Report.OneEnd).
	CauseOneEnd Cause = "capture is one end of every link"
	// CauseDoubled: not the network but the capture itself: a large
	// share of its frames repeat an earlier one byte for byte at the
	// same instant and capture point (a file merged with itself), and
	// the finding is gone when the capture is judged without those
	// copies: it stands only if a host sent its packets twice at once,
	// which no single link can carry (check's doubled diagnosis).
	CauseDoubled Cause = "capture doubles its frames"
	// CauseTimeOrder: not the network but the capture file: a record's
	// timestamp lies more than TimeJump before the record ahead of it,
	// within the time the file had shown (a record moved back by an
	// edit or a script), and the finding lies at or after that time
	// before the record: the record was missing where its time puts it,
	// and the finding may rest on its absence (Checker.excuseOutOfOrder;
	// reordercap sorts the file).
	CauseTimeOrder Cause = "capture's records out of time order"
	// CauseNoTime: not the network but the capture file: every Homa
	// frame carries one and the same timestamp (a writer or an editor
	// stamped them alike), so a finding that weighs time (a deadline,
	// an interval, a silence) weighs nothing the hosts did.
	CauseNoTime Cause = "capture's timestamps carry no time"
)

// Evidence is the observable that shows a network effect: a frame and
// what it shows.
type Evidence struct {
	Frame int
	Why   string
}

// String renders the evidence as "frame N: why".
func (ev Evidence) String() string { return fmt.Sprintf("frame %d: %s", ev.Frame, ev.Why) }

// Network is what a capture shows about the network between its capture
// point and the hosts: for each direction between two hosts, the first
// observable of loss after the capture point (a receiver asked again for
// bytes the capture saw), of loss before it (a sender retransmitted bytes
// the capture never saw, past which it had already sent), and of
// reordering before it (a first transmission filling a gap later); and
// identical copies of packets. Rules ask it before downgrading a finding:
// an effect the capture point rules out (nothing lies between a host and a
// tap on its own link) or that the capture does not show never excuses a
// finding. Checker and Judge.Hosts (a host view is a capture on that
// host's link) share it.
type Network struct {
	cp     CapturePoint
	jitter time.Duration
	// mtu is the hosts' MTU (Params.MTU): what one DATA segment holds.
	mtu        uint32
	lossAfter  map[hostPair]Evidence
	lossBefore map[hostPair]Evidence
	reorder    map[hostPair]Evidence
	// firstLoss tallies, per path, first transmissions and
	// retransmissions lost before the capture point (HOMA-SEND-003).
	firstLoss map[hostPair]*pathLoss
	// settling holds the paths of firstLoss waiting for the fate of
	// retransmissions (a capture at their sender); firedNow is the path
	// whose evidence crossed the threshold at the current event (nil:
	// none).
	settling map[hostPair]*pathLoss
	firedNow *pathLoss
	// last holds the latest frames seen between two hosts (either
	// direction), for duplicate detection.
	last map[pairKey]*pairFrames
	// dup is set while the event being fed is the second identical copy
	// of its pair's previous frame; copy while it is any later copy too.
	dup  Evidence
	copy bool
}

// pairKey is an unordered host pair.
type pairKey struct{ a, b netip.Addr }

func unordered(x, y netip.Addr) pairKey {
	if y.Less(x) {
		x, y = y, x
	}
	return pairKey{x, y}
}

// dupDepth is how many of a host pair's latest frames the duplicate
// detector compares a frame with: a network copy may trail its original
// behind a few others the network reordered (the simulator's lossy runs
// put a reordered GRANT between a GRANT and its copy 0.5 µs later).
const dupDepth = 4

// pairFrames is a ring of a host pair's latest frames; head indexes the
// latest.
type pairFrames struct {
	f    [dupDepth]lastFrame
	head int
}

// latest returns the pair's latest frame.
func (pf *pairFrames) latest() *lastFrame { return &pf.f[pf.head] }

type lastFrame struct {
	frame  int
	src    netip.Addr
	time   time.Time
	sum    uint64 // hash of the Homa bytes captured
	prio   uint8
	length int // Packet.WireLen
	copies int
	// orig is the frame of the first copy; dup is set for the second copy.
	orig int
	dup  Evidence
}

func newNetwork(cp CapturePoint, p *Params) *Network {
	return &Network{cp: cp, jitter: p.Jitter, mtu: p.MTU, lossAfter: map[hostPair]Evidence{}, lossBefore: map[hostPair]Evidence{},
		reorder: map[hostPair]Evidence{}, firstLoss: map[hostPair]*pathLoss{}, settling: map[hostPair]*pathLoss{}, last: map[pairKey]*pairFrames{}}
}

// CapturePoint returns the capture point the network model assumes.
func (n *Network) CapturePoint() CapturePoint { return n.cp }

// LostAfter returns the evidence that packets from → to seen by the
// capture may not all have reached to; ok is false when the capture point
// is on to's side (nothing lies between) or the capture shows no such loss.
func (n *Network) LostAfter(from, to netip.Addr) (Evidence, bool) {
	if n.atReceiver(to) {
		return Evidence{}, false
	}
	ev, ok := n.lossAfter[hostPair{from, to}]
	return ev, ok
}

// LostBefore returns the evidence that packets from sent toward to may
// not all have reached the capture point; ok is false when the capture
// point is on from's side or the capture shows no such loss.
func (n *Network) LostBefore(from, to netip.Addr) (Evidence, bool) {
	if n.atSender(from) {
		return Evidence{}, false
	}
	ev, ok := n.lossBefore[hostPair{from, to}]
	return ev, ok
}

// LostBetween is LostBefore(from, to), or else, where the capture point
// is at the hosts (delivered, sent, host:ADDR) so that the stretch of
// network before it is the whole network, evidence of loss there in the
// other direction: a control packet (GRANT, BUSY, RESEND ...) carries no
// sequence that would show its own loss, and both directions cross the
// same switch. A tap between the hosts sees each direction's stretch on
// its own, so there only evidence in the packet's direction counts. ok is
// false when the capture point is on from's side.
func (n *Network) LostBetween(from, to netip.Addr) (Evidence, bool) {
	if n.atSender(from) {
		return Evidence{}, false
	}
	if ev, ok := n.lossBefore[hostPair{from, to}]; ok {
		return ev, ok
	}
	if n.cp.Kind == CaptureSwitch {
		return Evidence{}, false
	}
	if ev, ok := n.lossBefore[hostPair{to, from}]; ok && !n.atSender(to) {
		return ev, ok
	}
	if ev, ok := n.lossAfter[hostPair{to, from}]; ok && !n.atReceiver(from) {
		return ev, ok
	}
	return Evidence{}, false
}

// LostFromAny is LostBetween(from, to) for any host to: evidence that
// packets from sent to some host may not all have reached the capture
// point (where a finding rests on a packet from to any of its peers, a
// GRANT to another host). ok is false when the capture point is on
// from's side or the capture shows no such loss. Only on a finding's
// path: it scans the pairs.
func (n *Network) LostFromAny(from netip.Addr) (Evidence, bool) {
	if n.atSender(from) {
		return Evidence{}, false
	}
	var best Evidence
	found := false
	try := func(peer netip.Addr) {
		// The earliest evidence, so that reports do not depend on the
		// map's order.
		if ev, ok := n.LostBetween(from, peer); ok && (!found || ev.Frame < best.Frame) {
			best, found = ev, true
		}
	}
	for _, m := range [...]map[hostPair]Evidence{n.lossBefore, n.lossAfter} {
		for k := range m {
			switch from {
			case k.from:
				try(k.to)
			case k.to:
				try(k.from)
			}
		}
	}
	return best, found
}

// LostAfterBetween is LostAfter(from, to), or else, where the capture
// point is at the hosts, evidence of loss in the network in the other
// direction (see LostBetween). ok is false when the capture point is on
// to's side.
func (n *Network) LostAfterBetween(from, to netip.Addr) (Evidence, bool) {
	if n.atReceiver(to) {
		return Evidence{}, false
	}
	if ev, ok := n.lossAfter[hostPair{from, to}]; ok {
		return ev, ok
	}
	if n.cp.Kind == CaptureSwitch {
		return Evidence{}, false
	}
	if ev, ok := n.lossAfter[hostPair{to, from}]; ok && !n.atReceiver(from) {
		return ev, ok
	}
	if ev, ok := n.lossBefore[hostPair{to, from}]; ok && !n.atSender(to) {
		return ev, ok
	}
	return Evidence{}, false
}

// MayLoseBefore returns why packets from sent toward to may not all have
// reached the capture point: the capture's evidence (LostBetween), or
// else, where the capture holds packets from → to as they were delivered
// (DeliveredAt: a capture of packets as delivered, or a tap on to's own
// link), the capture point itself: the whole network lies between from
// and it, so any packet from sent may be missing there without a trace.
// frame is the frame the latter evidence names (the finding's). ok is
// false when the capture point is on from's side or neither holds.
func (n *Network) MayLoseBefore(from, to netip.Addr, frame int) (Evidence, bool) {
	if ev, ok := n.LostBetween(from, to); ok {
		return ev, ok
	}
	if !n.DeliveredAt(from, to) {
		return Evidence{}, false
	}
	return Evidence{frame, fmt.Sprintf("%s, with the whole network from %v to %v before it: any packet %v sent may have been lost there", n.asDelivered(to), from, to, from)}, true
}

// MayReorderBefore returns, where the capture holds packets from → to as
// they were delivered (DeliveredAt), why they may have reached the
// capture point in another order than their sender's, for any time: the
// whole network lies before that capture point, and a queue there may
// hold one packet behind later ones for longer than any slack (a netem
// link held a GRANT 53 ms behind the next). frame is the frame the
// evidence names (the packet seen first). Elsewhere ok is false: a rule
// judges reordering by its own observable (Reordered) and bound there.
func (n *Network) MayReorderBefore(from, to netip.Addr, frame int) (Evidence, bool) {
	if !n.DeliveredAt(from, to) {
		return Evidence{}, false
	}
	return Evidence{frame, fmt.Sprintf("%s, with the whole network from %v to %v before it, which may deliver a packet after later ones however long it held it", n.asDelivered(to), from, to)}, true
}

// DeliveredAt reports whether the capture holds packets from → to as they
// were delivered, with the whole network between the two hosts before the
// capture point: at a capture of packets as delivered, and at a tap on
// to's own link (host:ADDR holds what ADDR sent as sent and what it
// received as delivered), but not for a host's packets to itself.
func (n *Network) DeliveredAt(from, to netip.Addr) bool {
	return n.atReceiver(to) && !n.atSender(from)
}

// asDelivered names the capture point that holds packets to host to as
// they were delivered, for DeliveredAt's evidence.
func (n *Network) asDelivered(to netip.Addr) string {
	if n.cp.Kind == CaptureHost {
		return fmt.Sprintf("the capture is on %v's link, which holds the packets to it as they were delivered", to)
	}
	return "the capture holds packets as they were delivered"
}

// Reordered returns the evidence that packets from → to were reordered
// before the capture point; ok is false when the capture point is on
// from's side or the capture shows no reordering.
func (n *Network) Reordered(from, to netip.Addr) (Evidence, bool) {
	if n.atSender(from) {
		return Evidence{}, false
	}
	ev, ok := n.reorder[hostPair{from, to}]
	return ev, ok
}

// Copy reports whether the event being checked is an identical copy of an
// earlier frame between its two hosts (the second or a later one; see
// observeDup for which count) and the capture point is not on its
// sender's side: the network may have copied one of several identical
// packets the sender sent back to back, which Duplicate does not excuse.
func (n *Network) Copy() bool { return n.copy }

// Duplicate returns, while the event being checked is the second
// identical copy of a frame between its two hosts (less than jitter
// later, with at most dupDepth-1 frames between them, none its sender
// sent unless the capture shows that path reordering: observeDup) and the
// capture point is not on its sender's side, the original's evidence.
func (n *Network) Duplicate() (Evidence, bool) { return n.dup, n.dup.Frame != 0 }

func (n *Network) atSender(h netip.Addr) bool {
	return n.cp.Kind == CaptureSent || n.cp.Kind == CaptureHost && n.cp.Host == h
}

func (n *Network) atReceiver(h netip.Addr) bool {
	return n.cp.Kind == CaptureDelivered || n.cp.Kind == CaptureHost && n.cp.Host == h
}

// observe records what e shows about the network, from the trace state
// before e (called by the Checker before the rules see e).
func (n *Network) observe(t *Trace, e *Event) {
	n.dup, n.copy, n.firedNow = Evidence{}, false, nil
	if e.Err != nil || e.ICMP != nil {
		return
	}
	n.observeSettling(e)
	r := t.Lookup(e)
	if e.Segment == 0 {
		n.observeDup(e, r)
	} else if pf := n.lastOf(e, r); pf != nil && pf.latest().frame == e.Frame {
		n.dup = pf.latest().dup // later segments of a duplicated GSO frame
	}
	if r == nil {
		return
	}
	switch e.Type() {
	case wire.TypeRPCUnknown:
		n.observeRequestLoss(r, e, t.P.Slack)
	case wire.TypeGrant:
		// A GRANT offset below the message's highest is an older GRANT
		// the network reordered (or the receiver's fault, which
		// HOMA-GRANT-003 judges).
		// The offset test comes first: GRANTs are frequent, decreases rare.
		if m := r.Msg(oppositeRole(e.Packet.Role())); e.Packet.Grant().Offset() < m.Granted && !n.atSender(e.Src) {
			k := hostPair{e.Src, e.Dst}
			if _, ok := n.reorder[k]; !ok {
				n.reorder[k] = Evidence{e.Frame, fmt.Sprintf("%v's GRANT offset %d came after one of %d", e.Src, e.Packet.Grant().Offset(), m.Granted)}
			}
		}
	case wire.TypeData:
		m := r.Msg(e.Packet.Role())
		n.observeFirstLoss(r, m, e)
		if m.Length == 0 {
			return
		}
		end := min(e.End(), m.Length)
		// Bytes of an earlier incarnation count as seen: a client's
		// restart after RPC_UNKNOWN retransmits them with no loss.
		unseen := e.Length > 0 && !m.captured(e.Offset, end)
		below := e.Offset < m.SentEnd
		k := hostPair{e.Src, e.Dst}
		switch {
		case !unseen || !below:
		case e.Retransmit():
			if _, ok := n.lossBefore[k]; !ok {
				n.lossBefore[k] = Evidence{e.Frame, fmt.Sprintf("%v retransmitted bytes [%d, %d) the capture never saw, though it had sent up to %d", e.Src, e.Offset, end, m.SentEnd)}
			}
		default:
			if _, ok := n.reorder[k]; !ok {
				n.reorder[k] = Evidence{e.Frame, fmt.Sprintf("%v's first transmission of [%d, %d) came after bytes up to %d", e.Src, e.Offset, end, m.SentEnd)}
			}
		}
	case wire.TypeResend:
		rs := e.Packet.Resend()
		if isBufferWakeup(t.P, rs) {
			return
		}
		if e.FromClient() {
			n.observeGrantLoss(r, e, t.P.Slack)
		}
		m := r.Msg(oppositeRole(e.Packet.Role()))
		n.observeRetxLoss(r, m, e, rs, t.P.Slack)
		if m.Length == 0 {
			return
		}
		from := e.Dst // the message's sender
		k := hostPair{from, e.Src}
		start, end := rs.Offset(), uint64(m.Length)
		if !rs.IsResendAll() {
			end = min(end, uint64(rs.Offset())+uint64(rs.Length()))
		}
		if uint64(start) >= end {
			return
		}
		if m.Seen.Overlaps(start, uint32(end)) {
			if _, ok := n.lossAfter[k]; !ok {
				n.lossAfter[k] = Evidence{e.Frame, fmt.Sprintf("%v asked again for bytes in [%d, %d) the capture had seen sent to it", e.Src, start, end)}
			}
		}
		if lim := min(uint32(end), m.SentEnd); start < lim && !m.Seen.Covers(start, lim) {
			if _, ok := n.lossBefore[k]; !ok {
				n.lossBefore[k] = Evidence{e.Frame, fmt.Sprintf("%v asked for bytes in [%d, %d) that %v had sent (it sent up to %d) and the capture never saw", e.Src, start, lim, from, m.SentEnd)}
			}
		}
	}
}

// observeGrantLoss records, at a client's RESEND e for RPC r's response
// before any response DATA, a GRANT from the server that did not reach
// the client: a client still sending its request sends RESENDs only once
// it has transmitted every byte it knows to be granted (HomaModule
// homa_timer.c homa_timer_check_rpc returns while tx_end <
// msgout.granted), so a request whose first transmissions stop short of
// a GRANT the capture saw more than slack before e shows that GRANT lost
// after the capture point.
func (n *Network) observeGrantLoss(r *RPC, e *Event, slack time.Duration) {
	req := &r.Request
	k := hostPair{r.Key.Server, r.Key.Client}
	if _, ok := n.lossAfter[k]; ok || r.Response.Length != 0 || req.Length == 0 || req.SentEnd >= req.Length {
		return
	}
	for i := len(req.RecentGrants) - 1; i >= 0; i-- {
		g := req.RecentGrants[i]
		if g.Offset > req.SentEnd && e.Time.Sub(g.Time) > slack {
			n.lossAfter[k] = Evidence{e.Frame, fmt.Sprintf("%v sent RESEND while its request's first transmissions stopped at %d, short of the GRANT to %d in frame %d: it had not received that GRANT", e.Src, req.SentEnd, g.Offset, g.Frame)}
			return
		}
	}
}

// observeRequestLoss records, at a server's RPC_UNKNOWN e for RPC r, the
// loss after the capture point of r's request DATA: the capture saw them
// sent to the server more than slack before e, and the server never
// showed it held r (no BUSY, GRANT, RESEND, response DATA or NEED_ACK) nor
// was r acknowledged. Any request DATA creates a server RPC
// (homa_dispatch_pkts → homa_rpc_alloc_server), so a server that answers
// RPC_UNKNOWN for it never got them (or its socket closed first). Their
// acks were lost with them: a NEED_ACK after such an ack is no fault
// (helper-182: a client's piggy-backed ack lost on the way, at a capture
// of packets as sent).
func (n *Network) observeRequestLoss(r *RPC, e *Event, slack time.Duration) {
	req := &r.Request
	if e.FromClient() || !r.HeldLast.IsZero() || r.Acked || req.FirstData.IsZero() || e.Time.Sub(req.FirstData) <= slack {
		return
	}
	k := hostPair{r.Key.Client, r.Key.Server}
	if _, ok := n.lossAfter[k]; !ok {
		n.lossAfter[k] = Evidence{e.Frame, fmt.Sprintf("%v answered RPC_UNKNOWN for RPC %d, whose request DATA the capture saw sent to it %v earlier: it never got them", e.Src, r.Key.ClientID, e.Time.Sub(req.FirstData).Round(time.Microsecond))}
	}
}

// dupSeed seeds the duplicate detector's frame hash (hash/maphash: fast,
// no allocation; equal frames hash equal within one process).
var dupSeed = maphash.MakeSeed()

// lastOf returns the latest frames between e's hosts (nil: none), from
// the cache of e's RPC r (nil: none) when it has one (entries are never
// removed, and an RPC's packets all travel between its two hosts).
func (n *Network) lastOf(e *Event, r *RPC) *pairFrames {
	if r != nil && r.dupLast != nil {
		return r.dupLast
	}
	pf := n.last[unordered(e.Src, e.Dst)]
	if r != nil {
		r.dupLast = pf
	}
	return pf
}

// observeDup updates the duplicate detector with the first event of frame
// e, of RPC r (nil: none).
func (n *Network) observeDup(e *Event, r *RPC) {
	// Identical frames: the same source (with the same unordered pair,
	// so the same destination), priority, length and bytes; only the
	// bytes are hashed, the rest compared.
	sum := maphash.Bytes(dupSeed, e.Packet.Bytes())
	cur := lastFrame{frame: e.Frame, src: e.Src, time: e.Time, sum: sum, prio: e.Priority, length: e.Packet.WireLen(), copies: 1, orig: e.Frame}
	pf := n.lastOf(e, r)
	if pf == nil {
		// Each pair's ring is updated in place: at most one map lookup
		// per frame, none when its RPC caches it.
		pf = &pairFrames{}
		n.last[unordered(e.Src, e.Dst)] = pf
		if r != nil {
			r.dupLast = pf
		}
	} else {
		// The latest identical frame less than jitter earlier, among the
		// pair's last dupDepth. Frames the other host sent may come
		// between a packet and its copy; one its sender sent later can
		// come before the copy only if the network reorders that path,
		// which the capture must show (helper-149: else a sender repeating
		// a packet between others would pass for the network).
		sameDir := 0
		for j := 0; j < dupDepth; j++ {
			prev := &pf.f[(pf.head-j+dupDepth)%dupDepth]
			if prev.frame == 0 || prev.sum != sum || prev.src != e.Src || prev.prio != cur.prio || prev.length != cur.length {
				if prev.frame != 0 && prev.src == e.Src {
					sameDir++
				}
				continue
			}
			d := e.Time.Sub(prev.time)
			if d < 0 || d > n.jitter {
				sameDir++
				continue
			}
			if _, reordered := n.reorder[hostPair{e.Src, e.Dst}]; sameDir > 0 && !reordered {
				break
			}
			cur.copies, cur.orig = prev.copies+1, prev.orig
			if cur.copies == 2 && !n.atSender(e.Src) {
				between := "with no other packet between"
				if j > 0 {
					between = fmt.Sprintf("with %d other packets between", j)
				}
				cur.dup = Evidence{prev.orig, fmt.Sprintf("an identical copy of frame %d came %v later %s %v and %v in between",
					prev.orig, d.Round(time.Microsecond), between, e.Src, e.Dst)}
			}
			break
		}
		pf.head = (pf.head + 1) % dupDepth
	}
	pf.f[pf.head] = cur
	n.dup, n.copy = cur.dup, cur.copies >= 2 && !n.atSender(e.Src)
}
