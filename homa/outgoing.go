package homa

import (
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// outbound returns the RPC's outgoing message if it has something to send.
func outbound(r *rpc) *msgOut {
	switch {
	case r.client && r.state == clientSending:
	case !r.client && r.state == serverSending:
	default:
		return nil
	}
	if r.out == nil || !r.out.sendable() {
		return nil
	}
	return r.out
}

// sendOne builds one DATA packet (two with FaultDuplicateData), the next
// first transmission of the RPC with the fewest bytes left (SRPT), and
// returns its data length (0 if nothing was ready). Retransmissions do not
// wait here: a RESEND's and a restart's leave at once (resendNow).
func (h *Machine) sendOne() int {
	best := h.nextFresh()
	if best == nil {
		return 0
	}
	return h.sendFresh(best)
}

// sendFresh sends the next first transmission of best, the RPC at the
// head of the send queue, and returns its data length.
func (h *Machine) sendFresh(best *rpc) int {
	m := best.out
	off := m.next
	n := h.packetLen(m, off)
	var prio uint8
	if off < m.unsched {
		prio = h.unschedPriority(h.peerOf(best), m.length())
	} else {
		prio = m.prio
	}
	m.next += n
	h.sent(best)
	sent := h.sendData(best, off, n, prio, false, m.unsched)
	if h.faults[FaultDuplicateData] {
		h.sendData(best, off, n, prio, false, m.unsched)
	}
	if m.next >= m.length() && !best.client && best.state == serverSending {
		best.state, best.doneTick = serverAwaitAck, 0
	}
	return sent
}

// sendData builds and transmits DATA [off, off+n) of r's outgoing message.
func (h *Machine) sendData(r *rpc, off, n int, prio uint8, retransmit bool, incoming int) int {
	m := r.out
	pr := h.peerOf(r)
	f := &h.dataFields // send keeps nothing of it: no allocation per packet
	*f = wire.DataFields{
		Common:        wire.CommonFields{Sport: r.sock.port, Dport: r.peerPort, SenderID: r.wireID(), Sequence: uint32(off)},
		MessageLength: uint32(m.length()),
		Incoming:      uint32(incoming),
		CutoffVersion: pr.cutoffVersion,
		Payload:       m.data[off : off+n],
	}
	if retransmit && h.faults[FaultRetransmitWrongBytes] {
		f.Payload = wrongBytes(m.data, off, n)
	}
	if h.faults[FaultStaleCutoffVersion] {
		f.CutoffVersion = 0
	}
	if retransmit {
		// Retransmissions carry the true offset in seg.offset too
		// (homa_resend_data).
		f.SegOffset = uint32(off)
		f.Retransmit = 1
		if h.faults[FaultNoRetransmitFlag] {
			f.Retransmit = 0
		}
		h.stats.Retransmitted++
	} else {
		// A fresh single-segment packet: the offset is in sequence.
		f.SegOffset = wire.SegOffsetInSequence
		if len(pr.acks) > 0 && !h.faults[FaultNoAcks] {
			f.Ack = pr.acks[0]
			// Shifted down, not resliced: the array keeps its room, so
			// the next pending ack needs no allocation.
			pr.acks = pr.acks[:copy(pr.acks, pr.acks[1:])]
		}
	}
	h.send(r.peer, prio, f)
	return n
}

// wrongBytes returns n bytes of data read from off+20 instead of off,
// wrapping at the end of data (FaultRetransmitWrongBytes: BR-28's segment
// located off by the size of the headers in front of it).
func wrongBytes(data []byte, off, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = data[(off+20+i)%len(data)]
	}
	return out
}

// segLen returns the data bytes per DATA packet the sender cuts: max_seg_data,
// or with FaultOversizeSegment mtu-56 (BR-34's header arithmetic, the IP
// header forgotten).
func (h *Machine) segLen() int {
	if h.faults[FaultOversizeSegment] {
		return h.p.MTU - wire.DataHeaderLen
	}
	return h.p.maxSegData(h.v6)
}

// packetLen returns the length of the packet that starts at off: packets
// are max_seg_data long, with a boundary forced at U (HomaModule
// homa_message_out_fill builds them all when the message is created, so a
// GRANT lets whole packets go: the sender may overshoot a grant by less
// than one packet).
func (h *Machine) packetLen(m *msgOut, off int) int {
	seg := h.segLen()
	u := m.unsched
	if h.faults[FaultUnschedOverflow] {
		u = m.length() // no boundary at U
	}
	if off < u {
		return min(seg, u-off)
	}
	return min(seg, m.length()-off)
}

// packetStart returns the offset of the packet that holds byte x of m's
// outgoing message (see packetLen), or 0 for x < 0.
func (h *Machine) packetStart(m *msgOut, x int) int {
	seg := h.segLen()
	u := m.unsched
	if h.faults[FaultUnschedOverflow] {
		u = m.length()
	}
	switch {
	case x <= 0:
		return 0
	case x < u:
		return x / seg * seg
	default:
		return u + (x-u)/seg*seg
	}
}

// resendNow retransmits at once, at prio, the original packets of r's
// outgoing message that overlap [start, end), up to the bytes transmitted
// so far, with incoming set to the end of that range, and returns how many
// it sent. As HomaModule's homa_resend_data, it hands them out past the
// pacer but charges the pacer's link estimate with them
// (homa_pacer_check_nic_q with force), so new DATA waits for them.
func (h *Machine) resendNow(r *rpc, start, end int, prio uint8) int {
	m := r.out
	end = min(end, m.next)
	sent := 0
	for off := h.packetStart(m, start); off < end; {
		n := h.packetLen(m, off)
		if off+n > start {
			h.chargeLink(h.sendData(r, off, n, prio, true, end))
			sent++
		}
		off += n
	}
	return sent
}

// chargeLink adds one DATA packet of n data bytes to the pacer's estimate
// of when the link is next free (homa_pacer_check_nic_q).
func (h *Machine) chargeLink(n int) {
	if h.p.LinkRate <= 0 {
		return
	}
	// Ethernet, IP and Homa header bytes occupy the link too.
	wireBytes := n + 14 + 20 + wire.DataHeaderLen
	if h.linkFree < h.now {
		h.linkFree = h.now // the link went idle: no credit is saved up
	}
	h.linkFree += time.Duration(int64(wireBytes) * 8 * int64(time.Second) / h.p.LinkRate)
}

// live reports whether r is still one of the host's RPCs.
func (h *Machine) live(r *rpc) bool {
	if r.client {
		return h.clients[r.id] == r
	}
	return h.servers[serverKey{r.peer, r.clientID()}] == r
}
