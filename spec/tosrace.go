package spec

import (
	"fmt"
	"net/netip"
	"time"
)

// CauseTOSRace: not the network but the sender's own IPv4 path: HomaModule
// (main, linux_6.13.9, linux_6.1.38; homa_outgoing.c __homa_xmit_control,
// __homa_xmit_data) writes a packet's level into the socket's shared
// inet->tos and then calls ip_queue_xmit, which copies that field into the
// IP header. Two cores sending on one socket at once can interleave the
// two steps, so a packet may leave with the level another packet of the
// same socket, sent at about the same time, wanted. ip6_xmit takes the
// traffic class as an argument: IPv6 has no such race.
const CauseTOSRace Cause = "IPv4 TOS race"

// tosRaceCapture is the Capture text the rules that judge a packet's
// level (Each.JudgesLevel) share.
const tosRaceCapture = "on IPv4 HomaModule writes the level into the socket's shared TOS just before ip_queue_xmit, so a packet may leave with the level a concurrent packet of the socket wrote: a wrong level is inconclusive (cause: IPv4 TOS race) when another packet of the same socket (source address and port), less than jitter from it where the capture is on the sender's link and slack elsewhere, wanted and carried the level it carries and belongs to another RPC (the last writer reads its own level: two packets cannot swap, and a packet with a wrong level excuses none; one handler sends an RPC's packets in turn, a retransmission and the bytes its RESEND released say), each such packet excusing one wrong level (a level one write put in the TOS is read by the packets in flight on other cores, not by a run of one core's packets) and none that had left before the packet that prompted the other was seen (the RPC_UNKNOWN a restart answers, the RESEND a retransmission answers, the peer's packet of the same RPC a later packet may answer), and only while the socket's excuses number at most one in 100 of its packets whose level was judged so far (the race needs another core's write within nanoseconds of a packet's own; no floor: a socket with fewer than 100 such packets gets no excuse) and the socket has sent the packet's peer a packet that passed the same rule at a level it wanted (a level wrong on every packet of a kind to one peer is that peer's state, not a race); IPv6 passes the traffic class with each packet and has no such race"

// tosRaceOneIn bounds the IPv4 TOS race's error rate: a socket's wrong
// levels are excused only while, counting the one at hand, they number at
// most one in tosRaceOneIn of the socket's IPv4 packets whose level a rule
// has judged so far (passed or violated). There is no floor: a socket with
// fewer than tosRaceOneIn judged packets gets no excuse.
//
// Why one in 100: a packet takes another's level only when another core
// stores into the socket's TOS between this packet's store and its read.
// HomaModule stores on the line before it calls ip_queue_xmit, whose first
// act hands the socket's tos to __ip_queue_xmit: a gap of a few
// nanoseconds, a few microseconds only when an interrupt or softirq lands
// between the two (interrupts come some 10^5 times a second, so about one
// packet in 10^3 or fewer has such a gap). A core spends at least about a
// microsecond of CPU on each packet it sends (Homa's own work, routing and
// the IP header, the qdisc, the driver), so even one other core sending on
// the same socket without pause stores in a given packet's gap well under
// once in 100 tries; only several cores sending nonstop on one socket come
// near that. A sender at fault (a stale cutoff table, a GRANT's level
// ignored, control packets at a low level) is wrong on every packet the
// fault touches, far more than one in 100 of a busy socket's packets, and
// a short exchange shows too few packets to tell a race from a fault.
const tosRaceOneIn = 100

// tosRace holds what the Checker needs to excuse a wrong level as the
// IPv4 TOS race (CauseTOSRace): the levels recent IPv4 packets wanted, by
// socket, and the level violations waiting to see the packets after
// them. A violation of an Each rule that judges the level
// (Each.JudgesLevel) at an IPv4 packet P carrying level L is inconclusive
// when a packet of P's socket (source address and port) within the race
// window of P, before or after it, wanted and carried L and has excused
// no other wrong level (only the last writer of the TOS reads its own
// level, so the packet another read from carried what it wanted): each
// packet's write of the TOS is one chance to be read by another packet,
// so a sender that puts the wrong level on a run of packets is not
// excused by the one control packet beside them. P's
// violation waits until the window after it has passed to be recorded
// either way (at the section's end, as a violation: an excuse needs a
// packet that shows it). The window is bunchTol: jitter where the capture
// is on the sender's link (the two packets left through the NIC queues of
// two cores), slack elsewhere (queueing on the way can part them further).
//
// Two more conditions bound what a race can explain. The socket's excuses
// stay within its error-rate budget (tosRaceOneIn). And the sender must
// have shown it sends the wanted level to P's peer: a packet of P's socket
// to P's destination passed the same rule at a level P wanted, before P's
// excuse is decided. A race takes its level from whatever another core
// sends at that instant, to any peer, so it strikes a peer's packets among
// right ones; a sender that has put a wrong level on every packet of a
// kind it sent one peer (a cutoff table stale for that peer, a GRANT's
// level ignored) shows a fault of its state for that peer, not a race,
// however busy the socket is with right packets to others.
type tosRace struct {
	// want is the levels (bit p for level p) the current event wanted, as
	// the rules that judge its level said: the level it carries where one
	// passed it, the levels a violation names (Result.Wants).
	want uint16
	// after is the latest time a violation at the current event gave
	// with its wanted levels (Result.Wants): the capture saw the packet
	// that made its sender send it then.
	after time.Time
	// recent[head:] lists the IPv4 packets whose wanted levels are known,
	// oldest first, from at most the larger of jitter and slack ago.
	recent []raceEntry
	head   int
	// held lists the violations waiting for the window after them, in
	// the order they were found, which is the order they are recorded in.
	held []heldLevel
	// judged is set when a level rule found the current event's level
	// wrong (a pass sets want); right is the level rules it passed.
	judged bool
	right  ruleSet
	// rules lists the Checker's level rules (Each.JudgesLevel): rule
	// rules[k]'s passes are raceSock.right's k-th entry.
	rules []int
	// socks holds each IPv4 socket's budget and the levels it sent each
	// peer right; routes caches them by socket and peer (route), so that
	// a packet costs no map lookup.
	socks  map[HostPort]*raceSock
	routes *[raceRoutes]raceRoute
}

// raceRoutes is the number of tosRace.routes slots: a power of two above
// the sockets and peers a capture's packets alternate between.
const raceRoutes = 256

// raceRoute is a cached socket and peer: the socket's bookkeeping and
// the levels it sent the peer right (raceSock.right's entry, nil while
// it has none).
type raceRoute struct {
	sock HostPort
	peer netip.Addr
	s    *raceSock
	rs   []uint16
}

// raceSock is what tosRace knows of one IPv4 socket (source address and
// port): judged counts its packets whose level a rule judged (passed or
// violated), excused its wrong levels excused as the race (the budget,
// tosRaceOneIn); right[peer][k] has bit p when a packet of the socket to
// peer passed level rule tosRace.rules[k] at level p.
type raceSock struct {
	judged, excused uint32
	right           map[netip.Addr][]uint16
}

// passed notes that level rule i passed the current event e: e wanted the
// level it carries.
func (r *tosRace) passed(i int, e *Event) {
	r.want |= e.PriorityBits()
	r.right.add(i)
}

// sock returns the bookkeeping of socket k, made on first use.
func (r *tosRace) sock(k HostPort) *raceSock {
	s := r.socks[k]
	if s == nil {
		if r.socks == nil {
			r.socks = make(map[HostPort]*raceSock)
		}
		s = &raceSock{right: make(map[netip.Addr][]uint16)}
		r.socks[k] = s
	}
	return s
}

// route returns the routes slot of socket k and peer, filled (sock, and
// the socket's right entry for peer) on a miss. Entries are never
// replaced in socks or right, only all dropped (raceEnd, which drops the
// cache too), so a slot holds until it is taken by another pair.
func (r *tosRace) route(k HostPort, peer netip.Addr) *raceRoute {
	if r.routes == nil {
		r.routes = new([raceRoutes]raceRoute)
	}
	a, b := k.Addr.As16(), peer.As16()
	x := &r.routes[(uint(a[15])*31^uint(b[15])*7^uint(a[14])<<5^uint(k.Port))&(raceRoutes-1)]
	if x.s == nil || x.sock != k || x.peer != peer {
		s := r.sock(k)
		*x = raceRoute{sock: k, peer: peer, s: s, rs: s.right[peer]}
	}
	return x
}

// may reports whether socket s may have one more wrong level excused: a
// violation of rule at a packet to peer that wanted the levels wants,
// with extra packets judged that s does not count yet (the packet at
// hand, before raceNote counts it). The excuse must stay within the
// budget (tosRaceOneIn) and s must have sent peer a packet that passed
// rule at one of those levels (tosRace).
func (r *tosRace) may(s *raceSock, extra uint32, rule int, peer netip.Addr, wants uint16) bool {
	if uint64(s.excused+1)*tosRaceOneIn > uint64(s.judged+extra) {
		return false
	}
	rs := s.right[peer]
	for k, i := range r.rules {
		if i == rule {
			return k < len(rs) && rs[k]&wants != 0
		}
	}
	return false
}

// raceEntry is one IPv4 packet's socket, time (Checker.elapsed, and
// time, its timestamp), frame and wanted levels, and after
// (tosRace.after); used is set once it excused a wrong level.
type raceEntry struct {
	sock  HostPort
	at    time.Duration
	time  time.Time
	after time.Time
	frame int
	want  uint16
	used  bool
	// right is set when the packet carried a level it wanted: only such
	// a packet's write can be the one another packet read (each packet
	// writes the TOS just before its own read, so the last writer reads
	// its own level; two packets cannot swap, and a packet that read
	// another's level explains no third one).
	right bool
	// peer and id are the packet's destination and sender_id: a packet
	// of the same RPC explains no wrong level of another (one handler
	// sends an RPC's packets in turn, a retransmission and the new bytes
	// a RESEND releases say, each storing its level just before its own
	// read; two packets of one RPC on two cores at once are the pacer's
	// and a handler's, rare enough that detection is kept over them).
	peer netip.Addr
	id   uint64
}

// sameRPC reports whether x was sent by e's RPC (same socket, peer and
// sender_id).
func (x *raceEntry) sameRPC(e *Event) bool {
	return oneRPC(x.peer, x.id, e.Dst, e.Packet.Common().SenderID())
}

// oneRPC reports whether two packets of one socket, to peers a and b with
// sender_ids i and j, belong to one RPC (a sender_id of 0 names none).
func oneRPC(a netip.Addr, i uint64, b netip.Addr, j uint64) bool { return i != 0 && i == j && a == b }

// heldLevel is a level violation (res, with record's mayMiss and seq) of
// rule at a packet of sock that carried level (bits carried: the levels it
// may have been sent at), held from Checker.elapsed at until it passes
// until. Packets the capture saw before the packet's trigger
// (Result.Wants's after) cannot be the one it raced with.
type heldLevel struct {
	rule    int
	ref     frameRef
	rpc     *RPCKey
	res     Result
	mayMiss bool
	seq     uint64
	sock    HostPort
	at      time.Duration
	until   time.Duration
	carried uint16
	level   uint8
	after   time.Time
	peer    netip.Addr
	// id is the packet's sender_id: a later packet of the same RPC
	// (raceEntry.sameRPC) does not excuse it.
	id uint64
}

// raceSocket returns the socket that sent e: its source address and port.
func raceSocket(e *Event) HostPort { return HostPort{Addr: e.Src, Port: e.Packet.Common().Sport()} }

// raceExcuse returns res (a level violation of rule i at e, frame at)
// made inconclusive when a packet of e's socket less than the race window
// before e wanted and carried the level e carries and excused nothing yet,
// and the socket may have one more excuse (tosRace.may); otherwise, for an
// IPv4 packet, held is true and the violation waits for the packets after
// e (tosRace). IPv6 packets do not race.
func (c *Checker) raceExcuse(i int, e *Event, at frameRef, rpc *RPCKey, res Result, mayMiss bool, seq uint64) (Result, bool) {
	if e == nil || e.Frame != at.frame || e.IPv6() {
		return res, false
	}
	sock, carried, win, after := raceSocket(e), e.PriorityBits(), bunchTol(&c.ctx, e.Src), res.wantedAfter()
	r := &c.race
	if s := r.sock(sock); r.may(s, 1, i, e.Dst, res.wanted()) {
		for j := len(r.recent) - 1; j >= r.head && c.elapsed-r.recent[j].at <= win; j-- {
			if x := &r.recent[j]; x.right && !x.used && x.sock == sock && x.want&carried != 0 && x.frame != e.Frame && !x.time.Before(after) && !x.sameRPC(e) {
				x.used = true
				s.excused++
				return raced(res, x, s, 1, e.Priority, c.elapsed-x.at, "before"), false
			}
		}
	}
	r.held = append(r.held, heldLevel{rule: i, ref: at, rpc: rpc, res: res, mayMiss: mayMiss, seq: seq, sock: sock, at: c.elapsed, until: c.elapsed + win, carried: carried, level: e.Priority, after: after, peer: e.Dst, id: e.Packet.Common().SenderID()})
	return res, true
}

// raced is res excused by x, a packet of the same socket s d before or
// after (when) the one that carried level; s has counted the excuse, and
// extra packets it has not counted yet were judged.
func raced(res Result, x *raceEntry, s *raceSock, extra uint32, level uint8, d time.Duration, when string) Result {
	return Downgrade(CauseTOSRace, Evidence{Frame: x.frame, Why: fmt.Sprintf("the same socket %v:%d sent a packet that wanted level %d %v %s this one; on IPv4 the level goes through the socket's shared TOS just before ip_queue_xmit, so a packet may leave with the level another core wrote for its own (excuse %d of the socket's %d packets whose level was judged, at most one in %d)",
		x.sock.Addr, x.sock.Port, level, d.Round(time.Microsecond), when, s.excused, s.judged+extra, tosRaceOneIn)}, "%s", res.Why()).timingOf(res)
}

// raceExpire records, as violations, the held violations whose window
// has passed by the current event (no packet of their socket in it wanted
// their level), as long as every one found before them has been recorded:
// findings keep the order they were found in.
func (c *Checker) raceExpire() {
	r := &c.race
	n := 0
	for n < len(r.held) && c.elapsed > r.held[n].until {
		h := &r.held[n]
		c.file(h.rule, h.ref, h.rpc, h.res, h.mayMiss, h.seq)
		n++
	}
	if n > 0 {
		clear(r.held[copy(r.held, r.held[n:]):])
		r.held = r.held[:len(r.held)-n]
	}
}

// raceNote counts the current event e against its socket's budget when a
// level rule judged it, notes the levels it carried where a level rule
// passed it (raceSock.right), files the levels it wanted (tosRace.want)
// and lets e excuse the first held violation of its socket, still within
// its window, whose level it wanted and carried, while the socket may
// (tosRace.may).
func (c *Checker) raceNote(e *Event) {
	r := &c.race
	want, after, judged, right := r.want, r.after, r.judged, r.right
	r.want, r.after, r.judged, r.right = 0, time.Time{}, false, ruleSet{}
	if want == 0 && !judged || e.IPv6() {
		return
	}
	x := raceEntry{sock: raceSocket(e), at: c.elapsed, time: e.Time, after: after, frame: e.Frame, want: want, right: want&e.PriorityBits() != 0, peer: e.Dst, id: e.Packet.Common().SenderID()}
	rt := r.route(x.sock, e.Dst)
	s := rt.s
	s.judged++
	if right != (ruleSet{}) {
		rs := rt.rs
		if rs == nil {
			rs = make([]uint16, len(r.rules))
			s.right[e.Dst] = rs
			rt.rs = rs
		}
		for k, i := range r.rules {
			if right[i/64]&(1<<(i%64)) != 0 {
				rs[k] |= e.PriorityBits()
			}
		}
	}
	if want == 0 {
		return
	}
	for j := range r.held {
		if !x.right {
			break
		}
		if h := &r.held[j]; h.sock == x.sock && h.carried&want != 0 && h.ref.frame != e.Frame && c.elapsed <= h.until && !h.ref.time.Before(after) && !c.answersSince(e, h) && !oneRPC(h.peer, h.id, x.peer, x.id) && r.may(s, 0, h.rule, h.peer, h.res.wanted()) {
			s.excused++
			c.file(h.rule, h.ref, h.rpc, raced(h.res, &x, s, 0, h.level, c.elapsed-h.at, "after"), h.mayMiss, h.seq)
			copy(r.held[j:], r.held[j+1:])
			r.held[len(r.held)-1] = heldLevel{}
			r.held = r.held[:len(r.held)-1]
			x.used = true
			break
		}
	}
	keep := max(c.p.Jitter, c.p.Slack)
	for r.head < len(r.recent) && c.elapsed-r.recent[r.head].at > keep {
		r.head++
	}
	if r.head == len(r.recent) {
		r.recent, r.head = r.recent[:0], 0
	} else if r.head >= 64 && 2*r.head >= len(r.recent) {
		r.recent, r.head = r.recent[:copy(r.recent, r.recent[r.head:])], 0
	}
	r.recent = append(r.recent, x)
}

// answersSince reports whether e, a packet after held violation h, may
// answer its peer's packet of the same RPC that the capture saw after h
// (the latest DATA, GRANT or BUSY the peer sent, RPC.HeardFromClient or
// HeardFromServer): h had left its sender before that packet came, so e
// built in answer to it did not race with h (a restart's response and the
// CUTOFFS that answers its stale cutoff_version, say).
func (c *Checker) answersSince(e *Event, h *heldLevel) bool {
	if h.rpc == nil || e.Err != nil || e.ICMP != nil || KeyOf(e) != *h.rpc {
		return false // (a CUTOFFS names its RPC too, though findings do not)
	}
	r := c.trace.Lookup(e)
	if r == nil {
		return false
	}
	heard := r.HeardFromServer
	if !e.FromClient() {
		heard = r.HeardFromClient
	}
	return heard.After(h.ref.time)
}

// raceEnd ends the race's bookkeeping with the section: a violation still
// held stands, as no packet of its socket the capture holds wanted its
// level (an excuse needs a packet that shows the race).
func (c *Checker) raceEnd() {
	r := &c.race
	for _, h := range r.held {
		c.file(h.rule, h.ref, h.rpc, h.res, h.mayMiss, h.seq)
	}
	r.held, r.recent, r.head, r.want, r.after = nil, nil, 0, 0, time.Time{}
	r.judged, r.right, r.socks = false, ruleSet{}, nil
	if r.routes != nil {
		*r.routes = [raceRoutes]raceRoute{}
	}
}
