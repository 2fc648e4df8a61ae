package homa

import "container/heap"

// sendQueue holds the RPCs whose outgoing message may have first
// transmissions to send, in sender SRPT order (fewest bytes left to send
// first, then lower RPC id, then first queued), so that the sender picks
// its next packet in O(log n) for n RPCs instead of scanning all of them
// (HomaModule's pacer keeps its throttled RPCs in such an order,
// homa_pacer.c). It may also hold RPCs that cannot send right now (waiting
// for a GRANT): they leave when they reach the front, and come back when
// their grant horizon moves (Machine.queueSend). Every RPC that can send is in
// it, and every RPC in it is live: Machine.forget removes RPCs as they go.
type sendQueue = indexedHeap[*rpc]

// newSendQueue returns an empty send queue.
func newSendQueue() sendQueue {
	return sendQueue{less: sendLess, setIdx: func(r *rpc, i int) { r.sendIdx = i + 1 }}
}

// sendLess is the sender's SRPT order.
func sendLess(a, b *rpc) bool {
	la, lb := a.out.length()-a.out.next, b.out.length()-b.out.next
	if la != lb {
		return la < lb
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.seq < b.seq
}

// freshOut returns r's outgoing message if it has first transmissions
// that may go now, else nil.
func freshOut(r *rpc) *msgOut {
	m := outbound(r)
	if m == nil || m.next >= min(m.granted, m.length()) {
		return nil
	}
	return m
}

// queueSend puts r in the send queue after its message was created or its
// grant horizon moved.
func (h *Machine) queueSend(r *rpc) {
	if r.sendIdx == 0 && freshOut(r) != nil {
		heap.Push(&h.sendQ, r)
	}
}

// nextFresh returns the RPC whose first transmission goes next (sender
// SRPT), or nil, dropping RPCs that cannot send from the front of the
// queue.
func (h *Machine) nextFresh() *rpc {
	for h.sendQ.Len() > 0 {
		if r := h.sendQ.items[0]; freshOut(r) != nil {
			return r
		}
		heap.Pop(&h.sendQ)
	}
	return nil
}

// sent re-ranks r after its first transmissions advanced.
func (h *Machine) sent(r *rpc) {
	if freshOut(r) == nil {
		heap.Remove(&h.sendQ, r.sendIdx-1)
		return
	}
	heap.Fix(&h.sendQ, r.sendIdx-1)
}

// forget takes r out of the grant and send queues as it leaves the host's
// tables.
func (h *Machine) forget(r *rpc) {
	if r.ungranted {
		r.ungranted = false
		h.ungranted--
	}
	if r.in != nil {
		h.grants.remove(r.in)
	}
	if r.sendIdx != 0 {
		heap.Remove(&h.sendQ, r.sendIdx-1)
	}
}
