package explore

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// This file is the legal-peer model: each tester host plays a Homa host
// as docs/homa-facts.md states HomaModule's protocol (section numbers
// below are that file's), with the IUT's declared parameters, and every
// point where a correct peer or the network may act otherwise asks the
// decider.

// host is a tester host during one case.
type host struct {
	i  int
	st *hostState
	// port is the host's client socket for this case.
	port uint16
	// ticks counts the host's timer passes; cutoffsTick is the pass
	// during which it last sent CUTOFFS (one per tick, CUT-01).
	ticks, cutoffsTick int
	// rpcs are the case's RPCs of this host in creation order.
	rpcs []*rpc
	// nicFree is when the host's link is next idle: its DATA leaves at
	// the link rate, one packet after another (paced as HomaModule's
	// pacer keeps the NIC queue short).
	nicFree time.Duration
}

// linkRate is the tester hosts' link rate in bit/s (the simulator's IUT
// paces for 10 Gbit/s too).
const linkRate = 10e9

// frameOverhead is what a DATA packet costs on the wire besides its Homa
// bytes: IPv4 and Ethernet headers, preamble, FCS and gap (HomaModule's
// HOMA_ETH_OVERHEAD plus the IP header).
const frameOverhead = 20 + 42

// pace returns when a DATA packet of n Homa bytes leaves tester host h's
// link, and books the link.
func (r *run) pace(h *host, n int) time.Duration {
	start := max(r.now, h.nicFree)
	h.nicFree = start + time.Duration(float64((n+frameOverhead)*8)/linkRate*1e9)
	return start
}

// rpc states, for each side the tester plays.
type rpcState uint8

const (
	// A tester client.
	csActive   rpcState = iota + 1 // sending the request, waiting for or receiving the response
	csDone                         // the response arrived whole
	csAborted                      // the application aborted it (ABT-01)
	csTimedOut                     // silent for timeout_ticks (RTX-10)
	// A tester server.
	ssUnbound   // the IUT's call was made; none of its packets came yet
	ssReceiving // receiving the request
	ssService   // the request is complete; computing the response
	ssSending   // sending the response
	ssAwaitAck  // the response is sent; NEED_ACK until acknowledged
	ssAcked     // acknowledged: freed
	ssForgotten // the state is gone (discarded, timed out, RPC_UNKNOWN)
)

// rpc is one RPC of a case as its tester host sees it.
type rpc struct {
	n    int // 1-based case index
	spec RPC
	h    *host
	// client: the tester host is the client (the IUT serves).
	client bool
	// id is the client's (even) RPC id; 0 until the IUT's first packet
	// of its call names it.
	id      uint64
	myPort  uint16
	iutPort uint16
	callID  uint64
	state   rpcState
	out     *outMsg
	in      *inMsg
	inSeq   int // creation order of the incoming message (SRPT ties)
	// silent counts the host's timer passes without DATA, GRANT or BUSY
	// from the IUT while waiting (RTX: silent_ticks).
	silent int
	// doneTicks counts timer passes since the response was sent (ACK-01).
	doneTicks    int
	needAckExtra int
	// ignoreNeedAck: NEED_ACKs to leave unanswered (KindAck).
	ignoreNeedAck int
	// abortAfter: the model aborts (client) or forgets (server) the RPC
	// after this many packets from the IUT (KindAbort); handled counts.
	abortAfter, handled int
	// call is the IUT call's completion (IUT-client RPCs); callNo its
	// agent call id; result once done.
	call    <-chan conformance.CallResult
	callNo  uint64
	result  *conformance.CallResult
	callAt  time.Duration
	lastFed time.Duration // last DATA/GRANT/BUSY given to the IUT
	maxGap  time.Duration // longest silence the IUT saw from the tester
	lastIn  wire.PacketType
	outN    [16]uint32 // packets sent per type (control-packet keys)
	inN     [16]uint32 // packets received per type
	perturb bool       // a non-default network fate touched the RPC
	// fedOut are the bytes of the tester's outgoing message (a client's
	// request, a server's response) the IUT has been given.
	fedOut   byteranges.Set
	ackFed   bool
	restarts int
	// inCopies counts the IUT's DATA per offset as they arrive (keys).
	inCopies map[uint32]uint32
	// burstEnd is, per direction (0: to the IUT, 1: from it), when the
	// loss burst under way ends (KindBurst).
	burstEnd [2]time.Duration
	// holdEnd and holdAt: the RPC's packets to the IUT sent before
	// holdEnd wait behind a packet the network holds until holdAt
	// (KindBurst with B = 1).
	holdEnd, holdAt time.Duration
	// agentID is the IUT call's agent call id, from its request's
	// payload header.
	agentID uint64
	// ackOnLink: the IUT acknowledged this tester server's RPC on its
	// link, in a packet the explored network lost or still holds.
	ackOnLink bool
	// forgot says why the tester server dropped the RPC's state (abort,
	// timeout); reborn is set to it once the IUT's DATA re-created the RPC:
	// the note of its packets from then on (run.consequence).
	forgot, reborn string
	// unknownWhy is the reason of a deliberate RPC_UNKNOWN this tester
	// client sent for the RPC (run.consequence).
	unknownWhy string
	// netAt is when the explored network last lost, duplicated or
	// delayed a packet of this RPC (either direction; a delayed one's
	// delivery time), once perturb is set.
	netAt time.Duration
	// needAckAt is when this tester server last sent NEED_ACK (0: never).
	needAckAt time.Duration
}

// outMsg is a message the tester host sends.
type outMsg struct {
	length, unsched uint32
	payload         []byte
	// granted is the horizon (max of U, GRANT offsets, RESEND ends);
	// next is the first byte never queued for sending.
	granted, next uint32
	// left lists, in offset order, the end of each first transmission
	// queued and when it leaves the host's link (pace): the bytes below
	// next may still wait in the host's queue (txEnd).
	left []txMark
	// prio is the latest GRANT's priority (scheduled DATA).
	prio uint8
	// tx counts the transmissions of the segment at each offset; acks
	// the piggy-backed ack each first transmission carried.
	tx   map[uint32]uint32
	acks map[uint32]wire.AckEntry
}

// inMsg is a message the tester host receives.
type inMsg struct {
	length, unsched uint32
	buf             []byte
	recv            byteranges.Set
	received        uint32
	// granted is the receiver's horizon: the first DATA's incoming, then
	// the GRANTs it sent.
	granted uint32
	// incoming is the first DATA's incoming (what the IUT declared it
	// would send unasked).
	incoming uint32
	// grantFed is the highest GRANT offset the IUT has been given (GRANTs
	// the explored network lost or still holds are not in it).
	grantFed uint32
	grants   int
	prio     uint8 // the latest GRANT's priority
	complete bool
	// grantable: the first DATA seen promised fewer bytes than the
	// message holds (its incoming), so the receiver grants the rest.
	// That is every message longer than U, and also a shorter one
	// re-created from a retransmission whose incoming ends short of the
	// length (HomaModule homa_grant_init_rpc tests incoming, not U).
	grantable bool
}

// txMark is a first transmission of an outMsg: its end and when it
// leaves the host's link.
type txMark struct {
	end uint32
	at  time.Duration
}

// txEnd is m's tx_end at the run's now: the end of the first
// transmissions that have left the host's link, not those still queued
// behind its pacing (HomaModule homa_rpc_tx_end counts the pacer's
// deferred packets as not sent: a RESEND retransmits only bytes below it,
// and NEED_ACK waits until it reaches the length).
func (r *run) txEnd(m *outMsg) uint32 {
	for i := len(m.left) - 1; i >= 0; i-- {
		if m.left[i].at <= r.now {
			return m.left[i].end
		}
	}
	return 0
}

func newOutMsg(payload []byte, unschedBytes uint32) *outMsg {
	n := uint32(len(payload))
	u := min(n, unschedBytes)
	return &outMsg{length: n, unsched: u, payload: payload, granted: u, tx: map[uint32]uint32{}, acks: map[uint32]wire.AckEntry{}}
}

// segEnd is the end of the segment starting at off: segments of seg
// bytes from 0, a boundary forced at U, then seg bytes from U (UNS-02,
// §3.2).
func segEnd(off, seg, unsched, length uint32) uint32 {
	if off < unsched {
		return min(off+seg, unsched)
	}
	return min(off+seg, length)
}

// segStart is the start of the segment holding off.
func segStart(off, seg, unsched uint32) uint32 {
	if off < unsched {
		return off - off%seg
	}
	return unsched + (off-unsched)/seg*seg
}

// start sets the case up: hosts, their timers, the RPCs' starts, the
// cutoff changes and the hard end.
func (r *run) start() {
	r.t0 = r.w.clock.Now()
	r.now = 0
	last := time.Duration(0)
	for _, sp := range r.c.RPCs {
		last = max(last, sp.Start)
	}
	r.quiet = last + r.c.Window
	if r.c.Window == 0 {
		r.quiet = last + r.p.Ticks(DefaultWindow)
	}
	for i, st := range r.w.hosts {
		h := &host{i: i, st: st, port: st.nextPort, cutoffsTick: -1}
		r.firstID = append(r.firstID, st.nextID)
		r.iutMaxID0 = append(r.iutMaxID0, st.iutMaxID)
		st.nextPort++
		if st.nextPort < 40000 {
			st.nextPort = 40000
		}
		r.hosts = append(r.hosts, h)
		phase := tickPhases[r.choose(Key{Kind: KindTick, Host: i}, all(KindTick))]
		switch phase {
		case -1:
			phase = r.p.Tick / 2
		case -2:
			phase = -time.Microsecond
		}
		r.at(r.w.iutPhase+r.p.Tick+phase, func() { r.tick(h) })
	}
	for i := range r.c.RPCs {
		sp := r.c.RPCs[i]
		if sp.Host < 0 || sp.Host >= len(r.hosts) {
			sp.Host = 0
		}
		x := &rpc{n: i + 1, spec: sp, h: r.hosts[sp.Host], client: !sp.IUTClient, lastIn: 0}
		x.h.rpcs = append(x.h.rpcs, x)
		r.rpcs = append(r.rpcs, x)
		r.at(sp.Start, func() { r.begin(x) })
	}
	for _, cc := range r.c.Cutoffs {
		if cc.Host < 0 || cc.Host >= len(r.hosts) {
			continue
		}
		st := r.hosts[cc.Host].st
		r.at(cc.At, func() {
			st.myCut = cc.Cutoffs
			st.myVer++
			r.note(cc.Host, 0, fmt.Sprintf("%s takes cutoffs %s, version %d", st.name, cutoffList(cc.Cutoffs), st.myVer))
		})
	}
	tail := r.c.tail(r.p.Tick)
	r.hard = r.quiet + r.p.Ticks(2*(r.p.TimeoutTicks+r.p.ResendTicks)) + tail
	r.at(r.hard, func() { r.over = true })
}

func cutoffList(c [wire.NumCutoffs]uint32) string {
	s := ""
	for i, v := range c {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(v)
	}
	return s
}

// begin starts RPC x: a tester client sends its request; an IUT call is
// made through the agent protocol.
func (r *run) begin(x *rpc) {
	h := x.h
	r.out.events++
	x.lastFed = r.now
	if x.client {
		x.id = h.st.nextID
		h.st.nextID += 2
		x.myPort, x.iutPort = h.port, conformance.ServerPort
		x.callID = x.id
		x.state = csActive
		req := make([]byte, x.spec.Request)
		agent.FillPayload(req, x.callID, uint32(x.spec.Response))
		x.out = newOutMsg(req, r.p.UnschedBytes)
		x.abortAfter = r.choose(Key{Kind: KindAbort, RPC: x.n}, all(KindAbort))
		r.live[rkey{h.i, x.id, true}] = x
		r.note(h.i, x.n, fmt.Sprintf("%s calls the IUT: rpc %d id %d, request %d bytes, response %d", h.st.name, x.n, x.id, x.spec.Request, x.spec.Response))
		r.pump(x)
		return
	}
	x.state = ssUnbound
	x.myPort = serverPort
	x.callAt = r.now
	r.w.calls++
	x.callNo = r.w.calls
	ch, err := r.w.ce.IUT.Call(r.ctx, netip.AddrPortFrom(h.st.addr, serverPort), x.spec.Request, x.spec.Response, 0)
	if err != nil {
		r.fail(&Failure{Rule: AppError, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("the IUT refused call %d (%d bytes to %s, response %d): %v", x.n, x.spec.Request, h.st.name, x.spec.Response, err)})
		return
	}
	x.call = ch
	r.log(record{kind: recCall, at: r.now, host: h.i, rpc: x.n, text: fmt.Sprintf("request=%d response=%d", x.spec.Request, x.spec.Response)})
	x.abortAfter = r.choose(Key{Kind: KindAbort, RPC: x.n}, all(KindAbort))
}

// choose takes a decision within the case's perturbation window; after
// it every decision is the default, except the network losing a packet
// the case names (shrinking loses a repeated packet, such as NEED_ACK
// sent every tick, wherever it falls: a finite number of losses cannot
// keep an RPC from ending).
func (r *run) choose(k Key, allowed uint32) int {
	if r.draining {
		return 0
	}
	if r.now >= r.quiet && r.script == nil {
		if (k.Kind == KindOut || k.Kind == KindIn) && r.d.fixed[k] == FateDrop {
			return r.d.choose(k, allowed)
		}
		return 0
	}
	return r.d.choose(k, allowed)
}

// note logs what the model did.
func (r *run) note(host, n int, text string) {
	r.log(record{kind: recNote, at: r.now, host: host, rpc: n, text: text})
}

// common returns the common header of a packet of x from its tester host.
func (r *run) common(x *rpc) wire.CommonFields {
	id := x.id
	if !x.client {
		id |= 1
	}
	return wire.CommonFields{Sport: x.myPort, Dport: x.iutPort, SenderID: id}
}

// ctrlPrio is the level of control packets (CTRL-01).
func (r *run) ctrlPrio() uint8 { return uint8(max(0, r.p.NumPriorities-1)) }

// unschedPrio is the level of unscheduled DATA of a message of length n
// to the IUT: from the IUT's CUTOFFS as the conformance tester computes it
// (spec.UnschedPriority), or, before any, a new peer's table, which puts
// every message at num_priorities-2 (CUT-03; homa_peer_alloc).
func (r *run) unschedPrio(h *host, n uint32) uint8 {
	if h.st.iutVer == 0 {
		return uint8(max(0, r.p.NumPriorities-2))
	}
	return spec.UnschedPriority(h.st.iutCut, r.p.NumPriorities, n)
}

// pump sends the first transmissions x's message may send now: every
// segment starting below the horizon (SND-01), in offset order.
func (r *run) pump(x *rpc) {
	m := x.out
	if m == nil {
		return
	}
	for m.next < m.granted && m.next < m.length && !r.over {
		off := m.next
		m.next = segEnd(off, r.seg, m.unsched, m.length)
		prio := m.prio
		if off < m.unsched {
			prio = r.unschedPrio(x.h, m.length)
		}
		at := r.sendData(x, off, false, prio, m.unsched)
		m.left = append(m.left, txMark{end: m.next, at: at})
	}
	if !x.client && x.state == ssSending && m.next >= m.length {
		x.state, x.doneTicks = ssAwaitAck, 0
	}
}

// sendData sends the segment of x's message at off: a first transmission
// (carrying a pending ack, ACK-03) or a retransmission (retransmit=1, the
// original's ack, RTX-06). It returns when the packet leaves the host's
// link.
func (r *run) sendData(x *rpc, off uint32, retx bool, prio uint8, incoming uint32) time.Duration {
	m := x.out
	end := segEnd(off, r.seg, m.unsched, m.length)
	var ack wire.AckEntry
	if retx {
		ack = m.acks[off]
	} else if st := x.h.st; len(st.acks) > 0 {
		ack = st.acks[0]
		st.acks = st.acks[1:]
		m.acks[off] = ack
	}
	f := wire.NewData(r.common(x), m.length, incoming, x.h.st.iutVer, off, m.payload[off:end], retx)
	f.Ack = ack
	k := Key{Kind: KindOut, RPC: x.n, Type: uint8(wire.TypeData), A: off, B: m.tx[off]}
	m.tx[off]++
	return r.emit(x, x.h, f, prio, k, all(KindOut), "")
}

// sendControl sends control packet f of x (nil x: an RPC the case does
// not know, keyed by the host); note, when set, says why the IUT sees it
// break the protocol (a deliberate packet, see outPkt.note).
func (r *run) sendControl(x *rpc, h *host, f wire.Fields, note string) {
	t := f.PacketType()
	k := Key{Kind: KindOut, Host: h.i, Type: uint8(t)}
	if x != nil {
		k.RPC = x.n
		k.A = x.outN[t&15]
		x.outN[t&15]++
	}
	// Control packets are not worth the deadline and tick alignments, but
	// one held into the IUT's RESEND round is: a GRANT held there stalls
	// a sender that has sent all it may (HOMA-RESEND-024), a CUTOFFS
	// reaches it after a newer one, which it then takes back
	// (homa_cutoffs_pkt keeps the last to arrive), an RPC_UNKNOWN or
	// RESEND meets the RPC a round later.
	mask := uint32(1<<FateDeliver | 1<<FateDrop | 1<<FateDup | 1<<FateDelay | 1<<FateLong | 1<<FateMidRound)
	r.emit(x, h, f, r.ctrlPrio(), k, mask, note)
}

// emit encodes f and hands it to the explored network: the fate decision
// delivers it now, later, twice or never. It returns when the packet
// leaves the host's link (DATA is paced). note is the packet's
// deliberate-packet note ("" for none; see outPkt.note).
func (r *run) emit(x *rpc, h *host, f wire.Fields, prio uint8, k Key, allowed uint32, note string) time.Duration {
	iut := r.w.info.Addr
	b, err := f.AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: h.st.addr, Dst: iut})
	if err != nil {
		panic(fmt.Sprintf("explore: encoding our own %s: %v", f.PacketType(), err)) // our fields are valid
	}
	r.out.emitted++
	// DATA leaves at the link rate; control packets at once.
	base := r.now
	if f.PacketType() == wire.TypeData {
		base = r.pace(h, len(b))
	}
	if note == "" {
		note = r.consequence(x, h, f)
	}
	fate := r.fate(x, 0, k, allowed)
	// at delivers the packet at t; a delivery later than base is the
	// explored network's delay, marked as such (netDelayed).
	at := func(t time.Duration, why string) {
		if why == "" {
			why = note
		}
		if t > base && why == "" {
			why = netDelayed(t - base)
		}
		if t > base && x != nil {
			x.netAt = max(x.netAt, t)
		}
		note := why
		deliver := func() { r.deliver(x, h, prio, b, k, note) }
		if t <= r.now {
			deliver()
		} else {
			r.at(t, deliver)
		}
	}
	switch fate {
	case FateDrop:
		n := 0
		if x != nil {
			n = x.n
		}
		r.log(record{kind: recDropped, at: base, host: h.i, rpc: n, prio: prio, raw: b})
	case FateDup:
		at(base, "")
		at(base+20*time.Microsecond, netDuplicate)
	case FateDelay:
		at(base+30*time.Microsecond, "")
	case FateTickBefore:
		at(max(base, r.nextIUTTick(base)-time.Microsecond), "")
	case FateTickAfter:
		at(r.nextIUTTick(base)+time.Microsecond, "")
	case FateDeadlineBefore:
		at(max(base, r.resendDeadline(x)-time.Microsecond), "")
	case FateDeadlineAfter:
		at(max(base, r.resendDeadline(x)+time.Microsecond), "")
	case FateLong:
		r.hold(x, base+r.p.Ticks(r.p.ResendTicks+1))
		at(base+r.p.Ticks(r.p.ResendTicks+1), "")
	case FateMidRound:
		t := max(base, r.resendDeadline(x)+r.p.Ticks(r.p.ResendInterval)*3/4)
		r.hold(x, t)
		at(t, "")
	default:
		if x != nil && base < x.holdEnd && base < x.holdAt {
			r.perturbed(x)
			at(x.holdAt, "")
		} else {
			at(base, "")
		}
	}
	return base
}

// hold may stall x's packets to the IUT behind one the network holds
// until t (KindBurst with B = 1): those x's host sends in the burst's
// length from now arrive no earlier than t, in order, as from a queue
// that releases them together.
func (r *run) hold(x *rpc, t time.Duration) {
	if x == nil || r.now < x.holdEnd {
		return
	}
	if v := r.choose(Key{Kind: KindBurst, RPC: x.n, B: 1}, all(KindBurst)); v > 0 {
		bt := burstTicks[v]
		x.holdEnd, x.holdAt = r.now+r.p.Ticks(bt[0]*r.p.ResendTicks+bt[1]), t
	}
}

// consequence returns the deliberate-packet note of packet f of x (nil:
// none known) from host h when the packet is what an earlier network
// effect or deliberate act makes the host send ("" for none): a reaction
// to an IUT packet the network duplicated or delayed (run.because), any
// packet of a server RPC the host forgot and took anew, an ack of an RPC
// the host answered RPC_UNKNOWN for in such a reaction.
func (r *run) consequence(x *rpc, h *host, f wire.Fields) string {
	switch {
	case r.because != "":
		if x != nil && f.PacketType() == wire.TypeRPCUnknown {
			x.unknownWhy = r.because
		}
		return r.because
	case x != nil && x.reborn != "":
		return x.reborn
	}
	var ids []uint64
	switch a := f.(type) {
	case *wire.DataFields:
		ids = append(ids, a.Ack.ClientID)
	case *wire.AckFields:
		ids = append(ids, a.Common.SenderID)
		for _, e := range a.Acks {
			ids = append(ids, e.ClientID)
		}
	}
	for _, id := range ids {
		if y := r.live[rkey{h.i, id, true}]; id != 0 && y != nil && y.unknownWhy != "" {
			return fmt.Sprintf("acknowledges rpc %d, which this host answered RPC_UNKNOWN for (%s)", y.n, y.unknownWhy)
		}
	}
	return ""
}

// netDuplicate is the deliberate-packet note (tester.DeliberatePrefix) of
// the second copy of a packet the explored network duplicated
// (FateDup): on the IUT's link it looks like its sender sent the bytes
// twice (HOMA-RESEND-010), which the peer did not.
const netDuplicate = "network duplicate: the explored network delivered this packet a second time"

// netDelayed is the deliberate-packet note of a packet the explored
// network delivered d after its tester host sent it: on the IUT's link it
// arrives after packets its host sent later (an older GRANT after a newer
// one, DATA with the cutoff_version its host had when it sent it).
func netDelayed(d time.Duration) string {
	return fmt.Sprintf("network delay: the explored network delivered this packet %v after its host sent it", d)
}

// fate decides what the network does to a packet of x in direction dir
// (0: to the IUT, 1: from it): a loss burst under way drops it; a drop
// may open a burst (KindBurst).
func (r *run) fate(x *rpc, dir int, k Key, allowed uint32) int {
	if x == nil {
		return r.choose(k, allowed)
	}
	if r.now < x.burstEnd[dir] {
		r.perturbed(x)
		return FateDrop
	}
	fate := r.choose(k, allowed)
	if fate != FateDeliver {
		r.perturbed(x)
	}
	if fate == FateDrop {
		if v := r.choose(Key{Kind: KindBurst, RPC: x.n, Type: uint8(dir)}, all(KindBurst)); v > 0 {
			bt := burstTicks[v]
			x.burstEnd[dir] = r.now + r.p.Ticks(bt[0]*r.p.ResendTicks+bt[1])
		}
	}
	return fate
}

// perturbed notes that the explored network lost, duplicated or delayed
// a packet of x now (rpc.netAt, outcome.netTimes).
func (r *run) perturbed(x *rpc) {
	x.perturb = true
	x.netAt = max(x.netAt, r.now)
	if r.out.netTimes == nil {
		r.out.netTimes = map[netip.Addr][]time.Time{}
	}
	a := x.h.st.addr
	r.out.netTimes[a] = append(r.out.netTimes[a], r.t0.Add(r.now))
}

// nextIUTTick is the IUT's first timer pass after t.
func (r *run) nextIUTTick(t time.Duration) time.Duration {
	tick := r.p.Tick
	base := r.w.iutPhase % tick
	k := (t - base) / tick
	next := base + k*tick
	for next <= t {
		next += tick
	}
	return next
}

// resendDeadline is the IUT timer pass at which its silence for x reaches
// resend_ticks, counted from the last DATA, GRANT or BUSY it was given
// (§4.9: silent_ticks grows once per pass).
func (r *run) resendDeadline(x *rpc) time.Duration {
	last := r.now
	if x != nil {
		last = x.lastFed
	}
	d := r.nextIUTTick(last) + r.p.Ticks(r.p.ResendTicks-1)
	if d <= r.now {
		d = r.nextIUTTick(r.now)
	}
	return d
}

// deliver gives packet b from tester host h to the IUT at the end of this
// instant (flush).
func (r *run) deliver(x *rpc, h *host, prio uint8, b []byte, k Key, note string) {
	if !r.over {
		r.outbox = append(r.outbox, outPkt{x: x, h: h, prio: prio, b: b, key: k, note: note})
	}
}

// send gives a packet to the IUT: the oracle sees it first (the IUT's
// view), then the transport sends it.
func (r *run) send(o outPkt) {
	x, h, prio, b := o.x, o.h, o.prio, o.b
	if r.over {
		return
	}
	at, stamp := r.stamp()
	iut := r.w.info.Addr
	var evs [1]spec.Event
	ev := viewEvents(evs[:0], stamp, h.st.addr, iut, prio, b, r.p.Wire)
	note := tester.SentNote
	if o.note != "" {
		note = tester.DeliberatePrefix + o.note
	}
	for i := range ev {
		ev[i].Note = note
	}
	n := 0
	if x != nil {
		n = x.n
	}
	frame := 0
	r.out.events++
	if r.draining {
		r.out.drained++
	} else {
		for i := range ev {
			if f := r.o.feed(&ev[i]); f != nil {
				r.failFinding(f)
			}
			frame = ev[i].Frame
		}
		r.out.sent++
		if o.key.Kind == KindOut {
			r.out.sentKeys = append(r.out.sentKeys, o.key)
		}
	}
	r.log(record{kind: recSent, at: at, stamp: stamp, host: h.i, rpc: n, prio: prio, raw: b, frame: frame, text: note})
	if x != nil && len(ev) == 1 && ev[0].Err == nil {
		t := ev[0].Type()
		r.coverState(x, t)
		x.lastIn = t
		switch t {
		case wire.TypeData, wire.TypeGrant, wire.TypeBusy:
			x.maxGap = max(x.maxGap, at-x.lastFed)
			x.lastFed = at
			switch {
			case t == wire.TypeData:
				x.fedOut.Add(ev[0].Offset, ev[0].End())
			case t == wire.TypeGrant && x.in != nil:
				x.in.grantFed = max(x.in.grantFed, ev[0].Packet.Grant().Offset())
			}
		case wire.TypeAck:
			x.ackFed = true
		}
	}
	if err := r.w.trs[h.i].Send(iut, prio, b); err != nil && !r.over {
		r.fail(&Failure{Rule: AppError, Level: spec.Must, Why: fmt.Sprintf("tester host %s cannot send: %v", h.st.name, err)})
	}
}

// arrive takes a packet the IUT sent to a tester host: the oracle judges
// it, then the explored network decides whether, when and how often the
// host's protocol code gets it.
func (r *run) arrive(a arrival) {
	r.out.events++
	iut := r.w.info.Addr
	if a.src != iut {
		return // not the IUT's (nothing else speaks here)
	}
	r.lastIUT = max(r.lastIUT, a.at.Sub(r.t0))
	r.out.arrived++
	h := r.hosts[a.host]
	var evs [1]spec.Event
	ev := viewEvents(evs[:0], a.at, iut, h.st.addr, a.prio, a.pkt, r.p.Wire)
	if ev[0].Err == nil && r.earlier(a.host, ev[0].Packet) {
		// An earlier case's RPC (a shared environment: the IUT still
		// retransmits or asks for acks): not this case's exchange, and
		// the network loses it.
		r.out.stale++
		return
	}
	frame := 0
	for i := range ev {
		if r.draining {
			break
		}
		if f := r.o.feed(&ev[i]); f != nil {
			r.failFinding(f)
		}
		frame = ev[i].Frame
	}
	if ev[0].Err != nil {
		r.log(record{kind: recRecv, at: a.at.Sub(r.t0), stamp: a.at, host: a.host, prio: a.prio, raw: a.pkt, frame: frame})
		return
	}
	p := ev[0].Packet
	t := p.Type()
	if !r.w.virtual && (t == wire.TypeResend || t == wire.TypeNeedAck) {
		// Timer-driven packets show the IUT's tick phase.
		r.w.iutPhase = a.at.Sub(r.t0) % r.p.Tick
	}
	x := r.rpcFor(h, p)
	n := 0
	if x != nil {
		n = x.n
		r.feat(fmt.Sprintf("pair:%s:%s>%s", x.iutRole(), typeName(x.lastIn), t))
	}
	r.log(record{kind: recRecv, at: a.at.Sub(r.t0), stamp: a.at, host: a.host, rpc: n, prio: a.prio, raw: a.pkt, frame: frame})
	if r.script != nil {
		if x != nil && !x.client && t == wire.TypeData && p.Data().Offset() == 0 {
			if _, id, ok := agent.PayloadHeader(p.Data().Payload()); ok {
				x.agentID = id
			}
		}
		r.script.expect(a.host, x, p)
		return
	}
	if r.over {
		return
	}
	k := Key{Kind: KindIn, Host: a.host, Type: uint8(t)}
	if x != nil {
		k.RPC = n
		if t == wire.TypeData {
			// Keyed by offset and arrival count: a retransmission is a
			// decision of its own.
			k.A = p.Data().Offset()
			if x.inCopies == nil {
				x.inCopies = map[uint32]uint32{}
			}
			k.B = x.inCopies[k.A]
			x.inCopies[k.A]++
		} else {
			k.A = x.inN[t&15]
		}
		x.inN[t&15]++
	}
	mask := uint32(1<<FateDeliver | 1<<FateDrop | 1<<FateDup | 1<<FateDelay | 1<<FateLong)
	fate := r.fate(x, 1, k, mask)
	if fate != FateDeliver && fate != FateDup {
		r.acksOnLink(h, p) // the IUT's acks the host does not have yet
	}
	// handle gives the host's protocol code the packet; what it sends in
	// reaction to a copy the network duplicated or delayed is marked
	// (run.because): on the IUT's link it answers a packet the IUT sent
	// once, or earlier.
	handle := func(because string) func() {
		return func() {
			r.because = because
			r.handle(h, p, a.prio)
			r.because = ""
		}
	}
	late := fmt.Sprintf("network delay: sent in reaction to the IUT's frame %d, which the explored network delivered to this host late", frame)
	switch fate {
	case FateDrop:
	case FateDup:
		handle("")()
		r.at(r.now+20*time.Microsecond, handle(fmt.Sprintf("network duplicate: sent in reaction to the second copy of the IUT's frame %d, which the explored network duplicated", frame)))
	case FateDelay, FateLong:
		d := 30 * time.Microsecond
		if fate == FateLong {
			d = r.p.Ticks(r.p.ResendTicks + 1)
		}
		r.at(r.now+d, handle(late))
		// A packet of no RPC of the case's (x nil: the explored network
		// decides its fate all the same) has no RPC to note it on: a
		// namespaces session panicked here.
		if x != nil {
			x.netAt = max(x.netAt, r.now+d)
		}
	default:
		handle("")()
	}
}

// acksOnLink notes the acks the IUT's packet p to host h carries (a
// piggy-backed ack in DATA, an ACK) on the server RPCs they name: the
// explored network lost or holds p, so a NEED_ACK the host sends for them
// meanwhile follows the IUT's ack on its link.
func (r *run) acksOnLink(h *host, p wire.Packet) {
	for _, id := range ackedIDs(p) {
		if x := r.live[rkey{h.i, wire.ClientID(id), false}]; x != nil {
			x.ackOnLink = true
		}
	}
}

// ackedIDs returns the client ids of the RPCs IUT packet p acknowledges:
// a DATA's piggy-backed ack, an ACK's own RPC and its entries (ACK-03).
func ackedIDs(p wire.Packet) []uint64 {
	var ids []uint64
	switch p.Type() {
	case wire.TypeData:
		if id := p.Data().AckClientID(); id != 0 {
			ids = append(ids, id)
		}
	case wire.TypeAck:
		a := p.Ack()
		ids = append(ids, a.SenderID())
		for i := range a.ValidAcks() {
			ids = append(ids, a.Entry(i).ClientID)
		}
	}
	return ids
}

func typeName(t wire.PacketType) string {
	if t == 0 {
		return "start"
	}
	return t.String()
}

// iutRole names the IUT's side of x ("srv": the IUT serves).
func (x *rpc) iutRole() string {
	if x.client {
		return "srv"
	}
	return "cli"
}

// feat records a coverage feature.
func (r *run) feat(s string) { r.feats[s] = true }

// coverState records the IUT's state (as far as the tester knows it)
// when it is given a packet of type t for x.
func (r *run) coverState(x *rpc, t wire.PacketType) {
	var phase string
	if x.client {
		switch {
		case x.out == nil || !x.fedOut.Covers(0, x.out.length):
			phase = "receiving"
		case x.in == nil:
			phase = "serving"
		case !x.in.complete:
			phase = "responding"
		case !x.ackFed:
			phase = "await-ack"
		default:
			phase = "freed"
		}
	} else {
		switch {
		case x.in == nil || !x.in.complete:
			phase = "requesting"
		case x.out == nil:
			phase = "waiting"
		case x.out.next < x.out.length:
			phase = "receiving"
		case x.result == nil:
			phase = "completing"
		default:
			phase = "done"
		}
	}
	r.feat(fmt.Sprintf("state:%s:%s:%s", x.iutRole(), phase, t))
}

// earlier reports whether the IUT's packet p to tester host i belongs to
// an RPC of an earlier case of the same environment (a namespace
// environment serves a whole session): a tester client's id allocated
// before this case began, or an IUT call's id not above those bound in
// earlier cases.
func (r *run) earlier(i int, p wire.Packet) bool {
	if i >= len(r.firstID) {
		return false // a replay: one case in its own environment
	}
	id := p.SenderID()
	if p.Role() == wire.RoleServer {
		return wire.ClientID(id) < r.firstID[i]
	}
	return r.iutMaxID0[i] != 0 && id <= r.iutMaxID0[i]
}

// rpcFor finds the case RPC a packet from the IUT belongs to. The first
// request DATA of an IUT call binds the call to the IUT's RPC id: the
// unbound call to this host whose agent call id the request's payload
// header names (a DATA at offset 0), else the earliest made unbound call
// with that request length, else the earliest made unbound call. (Case
// order is not call order: binding by it gave a call's request to
// another call of the same length, a false APP-PAYLOAD.)
func (r *run) rpcFor(h *host, p wire.Packet) *rpc {
	id := p.SenderID()
	if p.Role() == wire.RoleServer {
		return r.live[rkey{h.i, wire.ClientID(id), true}]
	}
	if x := r.live[rkey{h.i, id, false}]; x != nil {
		return x
	}
	if p.Type() != wire.TypeData {
		return nil
	}
	d := p.Data()
	var callID uint64
	if d.Offset() == 0 {
		if _, id, ok := agent.PayloadHeader(d.Payload()); ok {
			callID = id
		}
	}
	var pick, sameLen *rpc
	for _, x := range h.rpcs {
		if x.client || x.id != 0 || x.call == nil && x.result == nil {
			continue
		}
		if callID != 0 && x.callNo == callID {
			pick = x
			break
		}
		if x.spec.Request == int(d.MessageLength()) && (sameLen == nil || x.callNo < sameLen.callNo) {
			sameLen = x
		}
		if pick == nil || x.callNo < pick.callNo {
			pick = x
		}
	}
	if (pick == nil || pick.callNo != callID || callID == 0) && sameLen != nil {
		pick = sameLen
	}
	if pick != nil {
		// Bound, but the server knows the RPC only once a DATA of it
		// reaches its protocol code (onData).
		pick.id = id
		h.st.iutMaxID = max(h.st.iutMaxID, id)
		pick.iutPort = p.Common().Sport()
		r.live[rkey{h.i, id, false}] = pick
	}
	return pick
}

// handle is a tester host's protocol code taking packet p from the IUT.
func (r *run) handle(h *host, p wire.Packet, prio uint8) {
	if r.over {
		return
	}
	x := r.rpcFor(h, p)
	switch p.Type() {
	case wire.TypeData:
		r.onData(h, x, p.Data())
	case wire.TypeGrant:
		r.onGrant(x, p.Grant())
	case wire.TypeResend:
		r.onResend(h, x, p.Resend())
	case wire.TypeRPCUnknown:
		r.onRPCUnknown(x)
	case wire.TypeBusy:
		if x != nil {
			x.silent = 0
		}
	case wire.TypeCutoffs:
		c := p.Cutoffs()
		h.st.iutCut = c.UnschedCutoffs()
		h.st.iutVer = c.CutoffVersion()
	case wire.TypeNeedAck:
		r.onNeedAck(h, x, p)
	case wire.TypeAck:
		for _, id := range ackedIDs(p) {
			r.acked(h, id)
		}
	}
	if x != nil {
		x.handled++
		if x.abortAfter > 0 && x.handled == x.abortAfter {
			r.abort(x)
		}
	}
}

// abort ends x on the tester's side without telling the IUT: a client's
// application aborts it (ABT-01), a server loses its state (a crash).
func (r *run) abort(x *rpc) {
	switch {
	case x.client && x.state == csActive:
		x.state = csAborted
		r.note(x.h.i, x.n, fmt.Sprintf("%s aborts rpc %d", x.h.st.name, x.n))
	case !x.client && x.state >= ssReceiving && x.state <= ssAwaitAck:
		x.state = ssForgotten
		x.in, x.out = nil, nil
		x.forgot = "the host forgot this RPC on purpose (the model's server crash) and took it anew from the IUT's DATA"
		r.note(x.h.i, x.n, fmt.Sprintf("%s forgets rpc %d", x.h.st.name, x.n))
	}
}

// onData: DATA of the IUT's message (§4.3-4.6).
func (r *run) onData(h *host, x *rpc, d wire.Data) {
	if id := d.AckClientID(); id != 0 {
		r.acked(h, id) // piggy-backed ack (ACK-03)
	}
	if x == nil {
		return // no such RPC here: dropped (RTX-11)
	}
	length := d.MessageLength()
	off, n := d.Offset(), uint32(d.DataLen())
	if length < 1 || length > wire.MaxMessageLength || n < 1 || off+n > length || len(d.Payload()) < int(n) {
		return // malformed: the checker judges it
	}
	if x.client {
		if x.state != csActive {
			return
		}
	} else {
		if x.state == ssForgotten || x.state == ssUnbound {
			// DATA for an RPC the server no longer has creates it anew.
			// On the IUT's link the new RPC's packets follow the old
			// one's (its grants start again).
			x.reborn = x.forgot
			x.state = ssReceiving
			x.in, x.out, x.silent = nil, nil, 0
		}
		if x.state != ssReceiving {
			return // a request already complete: executed at most once
		}
	}
	if d.CutoffVersion() != h.st.myVer {
		r.sendCutoffs(h, x)
	}
	x.silent = 0
	if x.in == nil {
		inc := min(length, d.Incoming())
		if inc == 0 {
			inc = min(length, r.p.UnschedBytes)
		}
		x.in = &inMsg{length: length, unsched: min(length, r.p.UnschedBytes), buf: make([]byte, length), granted: inc, incoming: inc, grantable: inc < length}
		x.inSeq = int(r.out.events)
	}
	m := x.in
	if length != m.length || m.complete {
		return
	}
	if added := m.recv.Add(off, off+n); added > 0 {
		m.received += added
		copy(m.buf[off:off+n], d.Payload()[:n])
	}
	if m.grantable {
		r.grantPass(h)
	}
	if m.received == m.length {
		m.complete = true
		r.complete(x)
	}
}

// complete: x's incoming message is whole.
func (r *run) complete(x *rpc) {
	m := x.in
	if x.client {
		c := agent.Call{ID: x.callID, Request: x.spec.Request, Response: x.spec.Response}
		if err := agent.CheckResponse(m.buf, c); err != nil {
			r.fail(&Failure{Rule: AppPayload, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the response the IUT sent is wrong: %v", x.n, err)})
			return
		}
		x.state = csDone
		r.queueAck(x)
		if r.choose(Key{Kind: KindAck, RPC: x.n}, all(KindAck)) == AckNoAnswer {
			x.ignoreNeedAck = 1
		}
		return
	}
	respLen, id, ok := agent.PayloadHeader(m.buf)
	if err := agent.CheckPayload(m.buf, id); err != nil || ok && int(respLen) != x.spec.Response {
		why := fmt.Sprintf("asks for a %d-byte response, the call asked for %d", respLen, x.spec.Response)
		if err != nil {
			why = err.Error()
		}
		r.fail(&Failure{Rule: AppPayload, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the request the IUT sent is wrong: %s", x.n, why)})
		return
	}
	x.agentID = id
	x.state = ssService
	var delay time.Duration
	switch r.choose(Key{Kind: KindService, RPC: x.n}, all(KindService)) {
	case ServiceTick:
		delay = r.p.Tick
	case ServiceBeforeResend:
		delay = r.p.Ticks(r.p.ResendTicks) - 10*time.Microsecond
	case ServiceAfterResend:
		delay = r.p.Ticks(r.p.ResendTicks) + 10*time.Microsecond
	case ServiceLong:
		delay = r.p.Ticks(2*r.p.ResendTicks + 1)
	}
	resp := make([]byte, respLen)
	agent.FillPayload(resp, id, respLen)
	respond := func() {
		if x.state != ssService {
			return
		}
		x.state = ssSending
		x.out = newOutMsg(resp, r.p.UnschedBytes)
		x.fedOut = byteranges.Set{}
		r.pump(x)
	}
	if delay == 0 {
		respond()
	} else {
		r.at(r.now+delay, respond)
	}
}

// queueAck queues x's ack for the IUT host (ACK-03): at most
// max_acks_per_pkt wait; the next completion then goes out at once in an
// ACK naming it, carrying the others.
func (r *run) queueAck(x *rpc) {
	st := x.h.st
	e := wire.AckEntry{ClientID: x.id, ServerPort: x.iutPort}
	if len(st.acks) < wire.MaxAcksPerPkt {
		st.acks = append(st.acks, e)
		return
	}
	acks := st.acks
	st.acks = nil
	r.sendControl(x, x.h, &wire.AckFields{Common: r.common(x), Acks: acks}, "")
}

// acked: the IUT acknowledged the tester server's RPC (client id).
func (r *run) acked(h *host, clientID uint64) {
	x := r.live[rkey{h.i, wire.ClientID(clientID), false}]
	if x == nil {
		return
	}
	if x.state >= ssReceiving && x.state <= ssAwaitAck {
		x.state = ssAcked
	}
}

// onGrant: a GRANT for the tester host's message (§4.7 CTRL-02, SND-01).
func (r *run) onGrant(x *rpc, g wire.Grant) {
	if x == nil || x.out == nil || x.client && x.state != csActive || !x.client && x.state != ssSending && x.state != ssAwaitAck {
		return
	}
	x.silent = 0
	m := x.out
	if off := min(g.Offset(), m.length); off > m.granted {
		m.granted = off
	}
	m.prio = g.Priority()
	r.pump(x)
}

// onResend answers a RESEND as its message's sender (RTX-06, RTX-08).
func (r *run) onResend(h *host, x *rpc, rs wire.Resend) {
	c := rs.Common()
	unknown := x == nil || x.client && x.state != csActive || !x.client && (x.state == ssForgotten || x.state == ssAcked || x.state == ssUnbound)
	if unknown {
		r.sendControl(x, h, &wire.RPCUnknownFields{Common: wire.CommonFields{Sport: c.Dport(), Dport: c.Sport(), SenderID: wire.LocalID(c.SenderID())}}, "")
		return
	}
	if !x.client && (x.state == ssReceiving || x.state == ssService) {
		r.sendControl(x, h, &wire.BusyFields{Common: r.common(x)}, "")
		return
	}
	m := x.out
	tx := r.txEnd(m)
	start, end := rs.Offset(), tx
	if !rs.IsResendAll() {
		end = min(uint64Min(uint64(start)+uint64(rs.Length()), uint64(m.length)), m.length)
		if end > m.granted {
			m.granted = end // a GRANT was lost (RTX-08)
		}
	}
	if start >= tx {
		r.sendControl(x, h, &wire.BusyFields{Common: r.common(x)}, "")
	} else {
		hi := min(end, tx)
		for off := segStart(start, r.seg, m.unsched); off < hi; off = segEnd(off, r.seg, m.unsched, m.length) {
			r.sendData(x, off, true, rs.Priority(), hi)
		}
	}
	r.pump(x)
}

func uint64Min(a, b uint64) uint32 { return uint32(min(a, b)) }

// onRPCUnknown (RTX-09): a client still sending its request restarts it;
// a server discards the RPC; otherwise it is ignored.
func (r *run) onRPCUnknown(x *rpc) {
	if x == nil {
		return
	}
	if !x.client {
		if x.state >= ssReceiving && x.state <= ssAwaitAck {
			x.state = ssForgotten
			x.in, x.out = nil, nil
		}
		return
	}
	if x.state != csActive || x.in != nil {
		return
	}
	m := x.out
	x.restarts++
	r.note(x.h.i, x.n, fmt.Sprintf("%s restarts rpc %d after RPC_UNKNOWN", x.h.st.name, x.n))
	prio := r.unschedPrio(x.h, m.length)
	tx := r.txEnd(m)
	for off := uint32(0); off < tx; off = segEnd(off, r.seg, m.unsched, m.length) {
		r.sendData(x, off, true, prio, tx)
	}
}

// onNeedAck (ACK-02): a client with the whole response (or none of the
// RPC) acknowledges; one still missing response bytes asks for them.
func (r *run) onNeedAck(h *host, x *rpc, p wire.Packet) {
	c := p.Common()
	if x != nil && x.state == csActive {
		r.requestRetrans(x)
		return
	}
	if x != nil && x.ignoreNeedAck > 0 {
		x.ignoreNeedAck--
		return
	}
	id := wire.LocalID(c.SenderID())
	var acks []wire.AckEntry
	for _, e := range h.st.acks {
		if e.ClientID != id {
			acks = append(acks, e)
		}
	}
	h.st.acks = nil
	r.sendControl(x, h, &wire.AckFields{Common: wire.CommonFields{Sport: c.Dport(), Dport: c.Sport(), SenderID: id}, Acks: acks}, "")
}

// sendCutoffs answers DATA with a stale cutoff_version, at most once per
// timer tick of the host (CUT-01).
func (r *run) sendCutoffs(h *host, x *rpc) {
	if h.cutoffsTick == h.ticks {
		return
	}
	h.cutoffsTick = h.ticks
	r.sendControl(x, h, &wire.CutoffsFields{Common: r.common(x), UnschedCutoffs: h.st.myCut, CutoffVersion: h.st.myVer}, "")
}

// grantPass is the tester host's grant decision after a DATA arrived for
// a message it may grant (§4.4): the grantable messages (inMsg.grantable)
// still incomplete and not granted to their end, ranked by bytes still to
// receive (fewest first, then oldest); the first max_overcommit are
// active, each granted up to received + window (window, or max_incoming
// over active+1), within max_incoming outstanding, at priority
// max(0, min(max_sched_prio, n-1) - rank) (GRANT-09). The decider may
// grant less, or nothing while granted bytes are still on their way, or
// at level 0 (never above a better-ranked message's latest GRANT).
func (r *run) grantPass(h *host) {
	var cand []*rpc
	for _, x := range h.rpcs {
		m := x.in
		if m == nil || m.complete || !m.grantable || m.granted >= m.length {
			continue
		}
		if x.client && x.state != csActive || !x.client && x.state != ssReceiving {
			continue
		}
		cand = append(cand, x)
	}
	if len(cand) == 0 {
		return
	}
	slices.SortStableFunc(cand, func(a, b *rpc) int {
		ra, rb := a.in.length-a.in.received, b.in.length-b.in.received
		if ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return a.inSeq - b.inSeq
	})
	n := min(len(cand), max(1, r.p.MaxOvercommit))
	active := cand[:n]
	window := r.p.Window
	if window == 0 {
		window = r.p.MaxIncoming / uint32(n+1)
	}
	var outstanding uint32
	for _, x := range active {
		if x.in.granted > x.in.received {
			outstanding += x.in.granted - x.in.received
		}
	}
	ceiling := uint8(r.p.MaxSchedPrio)
	for rank, x := range active {
		m := x.in
		target := min(m.length, m.received+window)
		if budget := r.p.MaxIncoming; outstanding < budget {
			target = min(target, m.granted+(budget-outstanding))
		} else {
			target = m.granted
		}
		prio := uint8(max(0, min(r.p.MaxSchedPrio, n-1)-rank))
		if target <= m.granted {
			ceiling = min(ceiling, m.prio)
			continue
		}
		allowed := uint32(1<<GrantOne | 1<<GrantPacket)
		if m.received < m.granted {
			allowed |= 1 << GrantNone
		}
		if m.length <= m.received+window {
			allowed |= 1 << GrantLength
		}
		switch r.choose(Key{Kind: KindGrant, RPC: x.n, A: m.received}, allowed) {
		case GrantNone:
			ceiling = min(ceiling, m.prio)
			continue
		case GrantOne:
			// From what arrived when the sender went past the last
			// GRANT (it sends whole packets): a GRANT below the bytes
			// received raises no horizon, and with nothing more on its
			// way no DATA would come to grant again (a 10 Mbit/s
			// session's "one-byte" after a packet past offset 1425
			// granted 1426 and left the call stuck: APP-STUCK charged
			// to the IUT).
			target = max(m.granted, m.received) + 1
		case GrantPacket:
			target = min(target, max(m.granted, m.received)+r.seg)
		case GrantLength:
			target = m.length
		}
		if r.choose(Key{Kind: KindGrantPrio, RPC: x.n, A: m.received}, all(KindGrantPrio)) == 1 {
			prio = 0
		}
		prio = min(prio, ceiling)
		ceiling = prio
		outstanding += target - m.granted
		m.granted, m.prio = target, prio
		m.grants++
		r.sendControl(x, h, &wire.GrantFields{Common: r.common(x), Offset: target, Priority: prio}, "")
	}
}

// waiting reports whether x's tester host waits for data from the IUT
// (RTX-01, RTX-12): a receiver missing granted bytes, or a client whose
// request is sent up to its horizon and whose response is not complete
// (and does not wait for its own GRANT).
func (r *run) waiting(x *rpc) bool {
	switch {
	case x.client && x.state == csActive:
		if r.txEnd(x.out) < min(x.out.granted, x.out.length) {
			return false
		}
		return x.in == nil || !x.in.complete && x.in.received < x.in.granted
	case !x.client && x.state == ssReceiving:
		return x.in != nil && !x.in.complete && x.in.received < x.in.granted
	}
	return false
}

// tick is tester host h's timer pass (§4.9, §4.10): RESEND rounds for
// silent RPCs at resend_ticks and every resend_interval, aborts at
// timeout_ticks, NEED_ACK every tick from request_ack_ticks after a
// response was sent.
func (r *run) tick(h *host) {
	h.ticks++
	for _, x := range h.rpcs {
		if r.over {
			return
		}
		if r.waiting(x) {
			x.silent++
			switch {
			case x.silent >= r.p.TimeoutTicks:
				r.timeout(x)
			case x.silent >= r.p.ResendTicks && (x.silent-r.p.ResendTicks)%max(1, r.p.ResendInterval) == 0:
				round := uint32((x.silent - r.p.ResendTicks) / max(1, r.p.ResendInterval))
				if r.choose(Key{Kind: KindResend, RPC: x.n, A: round}, all(KindResend)) == 0 {
					r.requestRetrans(x)
				}
			}
		} else {
			x.silent = 0
		}
		if !x.client && x.state == ssAwaitAck && r.txEnd(x.out) >= x.out.length {
			x.doneTicks++
			if x.doneTicks == 1 {
				x.needAckExtra = r.choose(Key{Kind: KindNeedAck, RPC: x.n}, all(KindNeedAck))
			}
			if x.doneTicks > r.p.RequestAckTicks+x.needAckExtra {
				var note string
				switch {
				case x.ackOnLink:
					note = "network loss: NEED_ACK for an RPC the IUT acknowledged, in a packet the explored network lost or still holds"
				case !x.fedOut.Covers(0, x.out.length):
					// HomaModule asks once its response has left
					// (homa_timer_check_rpc); the IUT has not got it all.
					note = "network loss: NEED_ACK after the whole response was sent, but the explored network lost or still holds some of its DATA"
				case x.needAckAt > 0 && x.perturb && x.netAt >= x.needAckAt:
					// The host asks every tick; the IUT's link shows
					// the asks the network delivered, when it did.
					note = "network loss or delay: the explored network lost or delayed packets of this RPC since the previous NEED_ACK, so the spacing of NEED_ACKs on the IUT's link is the network's"
				}
				x.needAckAt = r.now
				r.sendControl(x, h, &wire.NeedAckFields{Common: r.common(x)}, note)
			}
		}
	}
	if !r.over {
		r.at(r.now+r.p.Tick, func() { r.tick(h) })
	}
	r.checkEnd()
}

// timeout: x was silent for timeout_ticks (RTX-10): aborted, no packet.
func (r *run) timeout(x *rpc) {
	r.note(x.h.i, x.n, fmt.Sprintf("%s times rpc %d out after %d silent ticks", x.h.st.name, x.n, x.silent))
	if x.client {
		x.state = csTimedOut
		if !x.perturb {
			r.fail(&Failure{Rule: AppStuck, Level: spec.Must, RPC: x.n,
				Why: fmt.Sprintf("rpc %d: the tester client heard nothing for %d ticks although the network lost nothing of the RPC (RESENDs every %d ticks went unanswered)", x.n, x.silent, r.p.ResendInterval)})
		}
		return
	}
	x.state = ssForgotten
	x.in, x.out = nil, nil
	x.forgot = "the host timed this RPC out in a silence and took it anew from the IUT's DATA"
}

// requestRetrans sends x's RESENDs (RTX-03): {0, -1} when nothing of the
// message arrived, else one per gap below the granted offset.
func (r *run) requestRetrans(x *rpc) {
	prio := r.ctrlPrio()
	// The host times its rounds by the packets it heard and sent; the
	// IUT's link shows them only as the explored network delivered them.
	// Where the network lost, duplicated or delayed a packet of the RPC
	// within the silence a round ends (resend_ticks or resend_interval
	// and a tick), the round's timing on that link is the network's.
	lost := ""
	if window := r.p.Ticks(max(r.p.ResendTicks, r.p.ResendInterval)+1) + r.w.params.Slack; x.perturb && r.now-x.netAt <= window {
		lost = "network loss or delay: the explored network lost or delayed packets of this RPC during the silence this RESEND ends, so its timing on the IUT's link is the network's"
	}
	m := x.in
	if m == nil || m.received == 0 {
		r.sendControl(x, x.h, &wire.ResendFields{Common: r.common(x), Offset: 0, Length: wire.ResendAll, Priority: prio}, lost)
	} else {
		// What the IUT knows it may send: U, the first DATA's incoming,
		// the GRANTs it was given.
		auth := max(m.unsched, m.grantFed, m.incoming)
		for _, g := range m.recv.Gaps(m.granted) {
			note := lost
			if g.End > auth {
				// HomaModule asks for [recv_end, granted) too
				// (homa_request_retrans); a lost GRANT makes the sender
				// take the RESEND as one (RTX-08).
				note = fmt.Sprintf("network loss: RESEND up to %d, which this host granted, but the explored network lost or still holds the GRANT", g.End)
			}
			r.sendControl(x, x.h, &wire.ResendFields{Common: r.common(x), Offset: g.Start, Length: g.End - g.Start, Priority: prio}, note)
		}
	}
	r.burstAfterResend(x)
}

// burstAfterResend may open a loss burst on x's packets from the IUT as
// the tester's RESEND round goes out (KindBurst, A: the silent ticks of
// the round, so each round decides apart). A RESEND obliges its receiver
// to answer on its own (HOMA-RESEND-002, -016); while the tester hears
// the IUT's other packets the RPC progresses and that progress answers
// the RESEND as well, so an IUT that ignores RESENDs shows only when the
// network is losing its packets just then.
func (r *run) burstAfterResend(x *rpc) {
	if r.now < x.burstEnd[1] {
		return
	}
	if v := r.choose(Key{Kind: KindBurst, RPC: x.n, Type: 1, A: uint32(x.silent)}, all(KindBurst)); v > 0 {
		bt := burstTicks[v]
		x.burstEnd[1] = r.now + r.p.Ticks(bt[0]*r.p.ResendTicks+bt[1])
		x.perturb = true
	}
}

// callDone: an IUT call completed.
func (r *run) callDone(x *rpc, res conformance.CallResult) {
	r.out.events++
	x.result = &res
	x.call = nil
	r.log(record{kind: recDone, at: r.now, host: x.h.i, rpc: x.n, text: callText(res)})
	x.maxGap = max(x.maxGap, r.now-x.lastFed)
	if res.Err != "" && !r.mayFail(x) {
		r.fail(&Failure{Rule: AppError, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the IUT's call failed (%s) although the tester server never left it silent for %d ticks (longest silence %v)",
			x.n, res.Err, r.p.TimeoutTicks-1, x.maxGap.Round(time.Microsecond))})
		return
	}
	if res.Err == "" && res.Response != x.spec.Response {
		r.fail(&Failure{Rule: AppPayload, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the IUT's call got %d response bytes, want %d", x.n, res.Response, x.spec.Response)})
		return
	}
	r.checkEnd()
}

func callText(res conformance.CallResult) string {
	if res.Err != "" {
		return "error " + res.Err
	}
	return fmt.Sprintf("ok response=%d", res.Response)
}

// mayFail reports whether the IUT's call x may fail with a timeout: the
// IUT was given no DATA, GRANT or BUSY of it for timeout_ticks-1 ticks
// (less slack) at some point (the first silent tick can come at once).
func (r *run) mayFail(x *rpc) bool {
	return x.maxGap >= r.p.Ticks(r.p.TimeoutTicks-1)-r.w.params.Slack
}

// ended reports whether x is over on both sides as far as the case waits
// for it.
func (x *rpc) ended() bool {
	if x.client {
		return x.state != csActive && x.state != 0
	}
	if x.result == nil {
		return false
	}
	return x.state == ssAcked || x.state == ssForgotten || x.state == ssUnbound
}

// checkEnd starts the tail once every RPC has ended.
func (r *run) checkEnd() {
	if r.ending || r.over || r.script != nil {
		return
	}
	for _, x := range r.rpcs {
		if !x.ended() {
			return
		}
	}
	r.ending = true
	r.at(r.now+r.c.tail(r.p.Tick), func() { r.over = true })
}

// judgeApplication checks the IUT's application results at the end: every
// RPC ended (or may not have), and the IUT's agent executed no request
// twice and saw no corrupted request.
func (r *run) judgeApplication() {
	for _, x := range r.rpcs {
		if r.script != nil {
			break // a replay ends with its script: its calls may still be running
		}
		switch {
		case !x.client && x.result == nil && x.call != nil:
			// An IUT client must end every call: with its response, or
			// with a timeout after timeout_ticks of silence.
			r.fail(&Failure{Rule: AppStuck, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the IUT's call never completed (%v after it started)", x.n, (r.now - x.callAt).Round(time.Millisecond))})
			return
		case x.client && x.state == csActive && !x.perturb && x.out != nil:
			r.fail(&Failure{Rule: AppStuck, Level: spec.Must, RPC: x.n, Why: fmt.Sprintf("rpc %d: the response never arrived although the network lost nothing of the RPC", x.n)})
			return
		}
	}
	st, err := r.w.ce.IUT.Stats(r.ctx)
	if err != nil {
		return
	}
	if d := st["served_duplicates"] - r.stats0["served_duplicates"]; d > 0 {
		r.fail(&Failure{Rule: AppOnce, Level: spec.Must, Why: fmt.Sprintf("the IUT executed %d requests a second time (served_duplicates)", d)})
		return
	}
	if d := st["payload_errors"] - r.stats0["payload_errors"]; d > 0 {
		r.fail(&Failure{Rule: AppPayload, Level: spec.Must, Why: fmt.Sprintf("the IUT's agent found %d requests or responses with wrong bytes (payload_errors)", d)})
	}
}
