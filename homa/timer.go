package homa

import (
	"fmt"
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// onTick is the timer pass (HomaModule homa_timer.c homa_timer_check_rpc):
// silent RPCs waiting for data send RESENDs every resend_interval ticks from
// resend_ticks on and abort at timeout_ticks; servers whose response is
// fully sent ask for an ACK every tick from request_ack_ticks on.
func (h *Machine) onTick() {
	h.tick++
	first := h.p.ResendTicks
	if h.faults[FaultEarlyResend] {
		first = 1
	}
	if h.faults[FaultLateResend] {
		first = 4 * h.p.ResendTicks
	}
	h.clientList.each(func(r *rpc) {
		// A client waits once its request is sent up to the grant
		// horizon (or completely) and the response is not complete.
		waiting := r.out.next >= min(r.out.granted, r.out.length())
		if r.in != nil && r.in.received() >= r.in.granted {
			// The response is waiting for our own GRANTs (it is not in
			// the active set): nothing is owed by the server (RTX-12).
			waiting = false
		}
		if !waiting {
			r.silent = 0
			return
		}
		r.silent++
		if r.silent >= h.p.TimeoutTicks {
			h.stats.Timeouts++
			in := "no response bytes"
			if r.in != nil {
				in = fmt.Sprintf("response %d of %d bytes", r.in.received(), r.in.length())
			}
			h.finishClient(r, fmt.Errorf("%w: RPC %d to %v: request %d of %d bytes sent (horizon %d), %s",
				ErrTimeout, r.id, r.peer, r.out.next, r.out.length(), r.out.granted, in))
			return
		}
		if r.silent >= first && (r.silent-first)%h.p.ResendInterval == 0 {
			h.requestRetransmit(r)
		}
	})
	needAcks := map[needAckSlot]int{}
	h.serverList.each(func(r *rpc) {
		switch r.state {
		case serverReceiving:
			if r.in == nil || r.in.received() >= r.in.granted {
				r.silent = 0 // everything granted arrived: nothing to wait for
				return
			}
			r.silent++
			if r.silent >= h.p.TimeoutTicks {
				h.stats.Timeouts++
				h.dropServer(r)
				return
			}
			if r.silent >= first && (r.silent-first)%h.p.ResendInterval == 0 {
				h.requestRetransmit(r)
			}
		case serverAwaitAck:
			r.doneTick++
			// NEED_ACK every tick from request_ack_ticks on, but to at
			// most MaxAcksPerPkt RPCs of one client host per tick: its ACK
			// carries that many acks, and thousands of NEED_ACKs per tick
			// would swamp a user-space host (HomaModule sends one per RPC).
			// First NEED_ACKs have a cap of their own, so that RPCs long
			// unacknowledged, which come first in the list, cannot take
			// every slot each tick and keep a newer one from ever asking
			// (HOMA-ACK-013).
			k := needAckSlot{r.peer, r.needAcked}
			if r.doneTick >= h.p.RequestAckTicks && needAcks[k] < wire.MaxAcksPerPkt {
				needAcks[k]++
				r.needAcked = true
				h.send(r.peer, h.topPriority(), &wire.NeedAckFields{Common: h.control(r)})
			}
		default:
			r.silent = 0
		}
	})
	for len(h.lateGrants) > 0 && h.lateGrants[0].tick <= h.tick {
		g := h.lateGrants[0]
		h.lateGrants = h.lateGrants[1:]
		h.send(g.dst, h.topPriority(), &g.f) // FaultRepeatGrants: a GRANT for a complete message
	}
	for _, pr := range h.peers {
		pr.forgetAcked(h.tick - 10*h.p.TimeoutTicks)
	}
	h.grant()
}

// needAckSlot counts the NEED_ACKs of one timer pass to one client host,
// repeats and first ones apart (onTick).
type needAckSlot struct {
	peer   netip.Addr
	repeat bool
}

// requestRetransmit sends RESENDs for r's incoming message: {0, -1} when
// nothing has arrived, else one per gap below the granted offset
// (homa_request_retrans).
func (h *Machine) requestRetransmit(r *rpc) {
	c := h.control(r)
	prio, ask := h.topPriority(), h.topPriority()
	if h.faults[FaultResendPriorityZero] {
		ask = 0
	}
	if r.in == nil || r.in.received() == 0 {
		h.send(r.peer, prio, &wire.ResendFields{Common: c, Offset: 0, Length: wire.ResendAll, Priority: ask})
		return
	}
	upTo := r.in.granted
	if h.faults[FaultResendPastGrant] {
		upTo = r.in.length()
	}
	for _, g := range r.in.recv.Gaps(uint32(upTo)) {
		h.send(r.peer, prio, &wire.ResendFields{Common: c, Offset: g.Start, Length: g.End - g.Start, Priority: ask})
	}
}
