package homa

import (
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// HandlePacket takes one packet (the transport bytes: Homa header and
// payload) that arrived from src at IP priority prio at now: it is
// decoded and dispatched (HomaModule homa_softirq, homa_dispatch_pkts).
// Malformed packets, and packets for unknown RPCs that need no answer,
// are dropped and counted. The machine keeps no reference to pkt.
func (h *Machine) HandlePacket(now time.Duration, src netip.Addr, prio uint8, pkt []byte) {
	h.advance(now)
	if h.closed {
		return
	}
	defer h.settled()
	p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
	if err != nil {
		h.stats.Dropped++
		return
	}
	h.stats.Received[p.Type()-wire.MinType]++
	switch p.Type() {
	case wire.TypeData:
		h.handleData(src, p.Data())
	case wire.TypeGrant:
		h.handleGrant(src, p.Grant())
	case wire.TypeResend:
		h.handleResend(src, p.Resend())
	case wire.TypeRPCUnknown:
		h.handleRPCUnknown(src, p)
	case wire.TypeBusy:
		if r := h.lookup(src, p); r != nil {
			r.silent = 0
		} else {
			h.stats.Dropped++
		}
	case wire.TypeCutoffs:
		c := p.Cutoffs()
		pr := h.peer(src)
		pr.cutoffs = c.UnschedCutoffs()
		pr.cutoffs[0] = 0x7fffffff // entry 0 is ignored and means "infinite"
		pr.cutoffVersion = c.CutoffVersion()
	case wire.TypeNeedAck:
		h.handleNeedAck(src, p)
	case wire.TypeAck:
		h.handleAck(src, p.Ack())
	default: // FREEZE: nothing to freeze
	}
}

// lookup finds the local RPC a packet from src belongs to, or nil.
func (h *Machine) lookup(src netip.Addr, p wire.Packet) *rpc {
	id := p.SenderID()
	if p.Role() == wire.RoleServer {
		// From a server: one of our client RPCs.
		r := h.clients[wire.LocalID(id)]
		if r == nil || r.peer != src {
			return nil
		}
		return r
	}
	return h.servers[serverKey{src, id}]
}

func (h *Machine) handleData(src netip.Addr, d wire.Data) {
	c := d.Common()
	length := int(d.MessageLength())
	off, n := int(d.Offset()), d.DataLen()
	if length < 1 || length > wire.MaxMessageLength || n < 1 || off+n > length || len(d.Payload()) < n {
		h.stats.Dropped++
		return
	}
	// Piggy-backed ack from the sender host (homa_data_pkt).
	if id := d.AckClientID(); id != 0 {
		h.ackRPC(src, id)
	}
	r := h.lookup(src, d.Packet)
	if r == nil {
		if d.Role() != wire.RoleClient {
			h.stats.Dropped++ // response DATA for an RPC we do not have
			if h.faults[FaultRPCUnknownAny] {
				h.send(src, h.topPriority(), &wire.RPCUnknownFields{Common: wire.CommonFields{Sport: c.Dport(), Dport: c.Sport(), SenderID: wire.LocalID(c.SenderID())}})
			}
			return
		}
		pr := h.peers[src]
		if pr != nil && pr.isAcked(c.SenderID()) {
			h.stats.Duplicates++ // a late packet of an RPC already executed and acked
			return
		}
		s := h.sockets[c.Dport()]
		if s == nil || !s.server {
			h.stats.Dropped++
			return
		}
		h.rpcSeq++
		r = newServerRPC()
		r.id, r.peer, r.pr, r.peerPort, r.sock, r.state, r.seq = wire.LocalID(c.SenderID()), src, pr, c.Sport(), s, serverReceiving, h.rpcSeq
		h.addServer(r)
	}
	if h.p.CutoffVersion != d.CutoffVersion() || h.faults[FaultCutoffsUnprompted] {
		h.sendCutoffs(src, r)
	}
	r.silent = 0
	if !r.client && r.state != serverReceiving {
		h.stats.Duplicates++ // request already delivered: at most once
		return
	}
	if r.client && r.state != clientSending {
		h.stats.Dropped++
		return
	}
	m := r.in
	if m == nil {
		var buf []byte
		if length <= len(r.small) {
			buf = r.small[:length:length]
		} else {
			buf = make([]byte, length)
		}
		r.inMsg = msgIn{buf: buf, granted: min(length, int(d.Incoming())), created: h.now}
		m = &r.inMsg
		m.recv = m.recv0[:0]
		if m.granted < 1 {
			m.granted = min(length, h.p.UnschedBytes)
		}
		r.in = m
		if r.client && h.faults[FaultAckPartialResponse] {
			// The ack queued as the response begins, not as it
			// completes: the next DATA to the server may tell it to
			// free an RPC whose response is still on its way.
			h.queueAck(r)
		}
		if m.grantable = m.granted < length; m.grantable {
			// Grantable when the first DATA's incoming falls short of the
			// length (homa_grant_init_rpc), not only past unsched_bytes:
			// a retransmission that re-creates an aborted RPC carries
			// incoming = the end of the RESEND's range, and a receiver
			// that never granted the rest would wait for itself forever.
			h.grants.add(r, m)
		}
	}
	if length != m.length() {
		h.stats.Dropped++
		return
	}
	if added := m.recv.Add(uint32(off), uint32(off+n)); added > 0 {
		m.nrecv += int(added)
		copy(m.buf[off:off+n], d.Payload()[:n])
		if m.g != nil {
			h.grants.update(m.g)
		}
	}
	if r.client && r.out != nil && r.out.next < r.out.length() {
		// The response has started: the server has the whole request.
		r.out.granted = r.out.length()
		h.queueSend(r)
	}
	if !m.complete && m.received() == length {
		m.complete, m.completeTick = true, h.tick
		h.grants.remove(m)
		if h.faults[FaultRepeatGrants] && length > h.p.UnschedBytes {
			h.lateGrants = append(h.lateGrants, lateGrant{tick: h.tick + 5, dst: src,
				f: wire.GrantFields{Common: h.control(r), Offset: uint32(length)}})
		}
		if r.client {
			h.finishClient(r, nil)
		} else {
			r.state = serverInService
			h.stats.Delivered++
			h.event(Event{Kind: EventRequest, Port: r.sock.port, ID: r.id, Peer: netip.AddrPortFrom(src, r.peerPort),
				Payload: m.buf, Request: RequestRef{r}})
		}
	}
	if m.grantable {
		// Only a message that needs grants changes the grant decision;
		// the timer re-runs it every tick anyway.
		h.grant()
	}
}

// jiffy is the kernel's clock tick at HZ 1000, the shortest: HomaModule's
// CUTOFFS limit counts jiffies, not its timer's ticks (tick_ns may be
// shorter). spec's minJiffy (HOMA-CUTOFF-005) is the same bound; homa,
// the protocol core, imports no checker.
const jiffy = time.Millisecond

// sendCutoffs tells src our cutoffs, at most once per jiffy per peer
// (homa_data_pkt: jiffies != peer->last_update_jiffies).
func (h *Machine) sendCutoffs(src netip.Addr, r *rpc) {
	pr := h.peer(src)
	j := int(h.now / jiffy)
	if pr.lastCutoffs == j {
		return
	}
	pr.lastCutoffs = j
	cut := h.p.UnschedCutoffs
	h.send(src, h.topPriority(), &wire.CutoffsFields{Common: h.control(r), UnschedCutoffs: cut, CutoffVersion: h.p.CutoffVersion})
}

func (h *Machine) handleGrant(src netip.Addr, g wire.Grant) {
	r := h.lookup(src, g.Packet)
	if r == nil || r.out == nil {
		h.stats.Dropped++
		return
	}
	r.silent = 0
	m := r.out
	if off := min(int(g.Offset()), m.length()); off > m.granted {
		m.granted = off
	}
	m.prio = g.Priority()
	h.trackUngranted(r)
	h.queueSend(r)
}

func (h *Machine) handleResend(src netip.Addr, rs wire.Resend) {
	r := h.lookup(src, rs.Packet)
	c := rs.Common()
	if r != nil && !r.client && r.busied && r.state < serverSending && h.faults[FaultForgetHeldRPC] {
		// BR-30: the server drops an RPC it has shown it holds (it
		// answered BUSY for it), as a timeout of another RPC of the
		// client did in 2019, and answers as for an RPC it never had.
		h.dropServer(r)
		r = nil
	}
	if r == nil {
		// Unknown RPC: RPC_UNKNOWN with ports swapped and the receiver's
		// view of the id (homa_resend_pkt).
		h.send(src, h.topPriority(), &wire.RPCUnknownFields{Common: wire.CommonFields{
			Sport: c.Dport(), Dport: c.Sport(), SenderID: wire.LocalID(c.SenderID())}})
		return
	}
	if r.out == nil || !r.client && r.state < serverSending {
		// A server still receiving the request or computing the response.
		if r.busied && h.faults[FaultBusySecondResend] {
			return // answered one RESEND: the later ones go unanswered
		}
		if !h.faults[FaultNoBusy] {
			h.send(src, h.topPriority(), &wire.BusyFields{Common: h.control(r)})
			r.busied = true
		}
		return
	}
	// Retransmit at once what was sent of the range (homa_resend_pkt →
	// homa_resend_data, which hands each packet to the NIC itself, past
	// the pacer): an answer queued behind a saturated pacer could wait
	// past response_timeout, and one the RPC's end overtook never left
	// (HOMA-RESEND-002/-016 in an overloaded simulation).
	m := r.out
	start, end := int(rs.Offset()), m.next
	if !rs.IsResendAll() {
		end = min(start+int(rs.Length()), m.length())
	}
	asked := end
	if h.faults[FaultPartialRetransmit] {
		end = min(end, start+1) // only the packet holding start
	}
	h.resendNow(r, start, end, rs.Priority())
	if asked > m.granted {
		// A RESEND past our horizon means a GRANT was lost (RTX-08).
		m.granted = asked
		h.trackUngranted(r)
		h.queueSend(r)
	}
	// BUSY when none of the requested data has been sent yet (RTX-06).
	if start >= m.next && !h.faults[FaultNoBusy] {
		h.send(src, h.topPriority(), &wire.BusyFields{Common: h.control(r)})
	}
}

func (h *Machine) handleRPCUnknown(src netip.Addr, p wire.Packet) {
	r := h.lookup(src, p)
	if r == nil {
		h.stats.Dropped++
		return
	}
	if !r.client {
		// The client forgot the RPC: discard ours (homa_rpc_unknown_pkt).
		h.dropServer(r)
		return
	}
	if h.faults[FaultIgnoreRPCUnknown] || r.in != nil {
		return // the response has started: nothing to restart
	}
	// Restart: retransmit everything sent so far at the unscheduled
	// priority, incoming = tx_end, at once from the handler, past the
	// pacer (homa_rpc_unknown_pkt calls homa_resend_data): queued behind
	// new data, the restart could come after response_timeout, or never
	// when the response completed the RPC first.
	h.stats.Restarts++
	m := r.out
	prio := h.unschedPriority(h.peerOf(r), m.length())
	if h.faults[FaultRestartPriority] {
		prio = h.topPriority()
	}
	h.resendNow(r, 0, m.next, prio)
}

func (h *Machine) handleNeedAck(src netip.Addr, p wire.Packet) {
	c := p.Common()
	id := wire.LocalID(c.SenderID())
	r := h.clients[id]
	if r != nil && r.peer == src && (r.in == nil || !r.in.complete) {
		// We still wait for (part of) the response: RESEND, never ACK,
		// or the server would free it (homa_need_ack_pkt).
		h.requestRetransmit(r)
		return
	}
	if h.faults[FaultNoAcks] {
		return
	}
	pr := h.peer(src)
	h.send(src, h.topPriority(), &wire.AckFields{Common: wire.CommonFields{Sport: c.Dport(), Dport: c.Sport(), SenderID: id}, Acks: pr.acks})
	pr.acks = pr.acks[:0] // send encoded them: the array is free again
}

func (h *Machine) handleAck(src netip.Addr, a wire.Ack) {
	h.ackRPC(src, a.SenderID())
	for i := range a.ValidAcks() {
		h.ackRPC(src, a.Entry(i).ClientID)
	}
}

// ackRPC frees the server RPC (src, client id) once it is acknowledged,
// whatever its state: HomaModule homa_rpc_acked ends the RPC it finds
// (homa_rpc_end). A client acks only RPCs whose response it received, so
// a server RPC still receiving its request here is one a late request
// packet re-created after the client forgot it (RPC_UNKNOWN, AMO-01);
// keeping it would leave it RESENDing for a request nobody will send.
func (h *Machine) ackRPC(src netip.Addr, clientID uint64) {
	id := wire.ClientID(clientID)
	if r := h.servers[serverKey{src, id}]; r != nil {
		h.dropServer(r)
		h.peerOf(r).addAcked(id, h.tick)
	}
}
