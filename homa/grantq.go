package homa

import (
	"container/heap"
	"slices"
)

// grantable is an incoming message that needs GRANTs: longer than
// unsched_bytes, not complete, of a live RPC still receiving it.
type grantable struct {
	r   *rpc
	m   *msgIn
	seq uint64 // insertion order: the last tie-break, so the order is total
	// waitIdx is the index in grantQueue.waiting, or -1 while the message
	// is in grantQueue.active.
	waitIdx int
	fifoIdx int // index in grantQueue.fifo
	// outstanding is the message's share of grantQueue.outstanding:
	// granted but not yet received bytes, max(0, granted - received).
	outstanding int
	rank        int // remaining() when g was last placed
}

// remaining returns the bytes still to receive, the SRPT rank.
func (g *grantable) remaining() int { return g.m.length() - g.m.received() }

// srptLess orders grantable messages as the receiver ranks them: fewest
// bytes still to receive first, then older, then lower RPC id, then first
// added.
func srptLess(a, b *grantable) bool {
	if ra, rb := a.remaining(), b.remaining(); ra != rb {
		return ra < rb
	}
	return olderLess(a, b)
}

func olderLess(a, b *grantable) bool {
	if a.m.created != b.m.created {
		return a.m.created < b.m.created
	}
	if a.r.id != b.r.id {
		return a.r.id < b.r.id
	}
	return a.seq < b.seq
}

// fifoLess orders by age, oldest first; among messages created at the same
// time, in SRPT order (the first message of that age in the SRPT ranking).
func fifoLess(a, b *grantable) bool {
	if a.m.created != b.m.created {
		return a.m.created < b.m.created
	}
	return srptLess(a, b)
}

// grantQueue holds the host's grantable messages so that the grant
// decision costs O(max_overcommit + log n) per DATA packet for n
// grantable messages instead of a sort of all of them (HomaModule
// homa_grant.c keeps its grantable RPCs sorted too, and re-ranks one RPC
// as its bytes arrive):
//   - active: the best min(n, k) messages in SRPT order, k = max_overcommit
//     (all messages with FaultOvercommit);
//   - waiting: the others, a min-heap in SRPT order (non-empty only while
//     active is full);
//   - fifo: all of them, a min-heap by age (the FIFO grant's target);
//   - outstanding: granted but not received bytes over all of them, kept
//     as grants are sent and bytes arrive.
type grantQueue struct {
	k           int
	active      []*grantable
	waiting     indexedHeap[*grantable]
	fifo        indexedHeap[*grantable]
	outstanding int
	seq         uint64
}

// newGrantQueue returns an empty queue with k active places.
func newGrantQueue(k int) grantQueue {
	return grantQueue{k: k,
		waiting: indexedHeap[*grantable]{less: srptLess, setIdx: func(g *grantable, i int) { g.waitIdx = i }},
		fifo:    indexedHeap[*grantable]{less: fifoLess, setIdx: func(g *grantable, i int) { g.fifoIdx = i }}}
}

// len returns the number of grantable messages.
func (q *grantQueue) len() int { return q.fifo.Len() }

// add starts tracking m, the incoming message of r.
func (q *grantQueue) add(r *rpc, m *msgIn) {
	q.seq++
	g := &grantable{r: r, m: m, seq: q.seq, rank: m.length() - m.received()}
	m.g = g
	g.outstanding = max(0, m.granted-m.received())
	q.outstanding += g.outstanding
	heap.Push(&q.fifo, g)
	q.attach(g)
}

// remove stops tracking m (complete, or its RPC is gone); a message not
// tracked is ignored.
func (q *grantQueue) remove(m *msgIn) {
	g := m.g
	if g == nil {
		return
	}
	m.g = nil
	q.detach(g)
	heap.Remove(&q.fifo, g.fifoIdx)
	q.outstanding -= g.outstanding
}

// update re-ranks g and recounts its outstanding bytes after its received
// or granted bytes changed.
func (q *grantQueue) update(g *grantable) {
	q.outstanding -= g.outstanding
	g.outstanding = max(0, g.m.granted-g.m.received())
	q.outstanding += g.outstanding
	if rank := g.remaining(); rank != g.rank {
		g.rank = rank
		q.detach(g)
		q.attach(g)
		heap.Fix(&q.fifo, g.fifoIdx)
	}
}

// attach places g in active or waiting.
func (q *grantQueue) attach(g *grantable) {
	if len(q.active) < q.k {
		q.insertActive(g)
		return
	}
	if last := q.active[len(q.active)-1]; srptLess(g, last) {
		q.active = q.active[:len(q.active)-1]
		heap.Push(&q.waiting, last)
		q.insertActive(g)
		return
	}
	heap.Push(&q.waiting, g)
}

// detach takes g out of active or waiting; the best waiting message
// takes a place freed in active.
func (q *grantQueue) detach(g *grantable) {
	if g.waitIdx >= 0 {
		heap.Remove(&q.waiting, g.waitIdx)
		return
	}
	i := slices.Index(q.active, g)
	q.active = slices.Delete(q.active, i, i+1)
	if q.waiting.Len() > 0 {
		// Every waiting message ranks after every active one.
		q.active = append(q.active, heap.Pop(&q.waiting).(*grantable))
	}
}

func (q *grantQueue) insertActive(g *grantable) {
	i, _ := slices.BinarySearchFunc(q.active, g, func(a, b *grantable) int {
		if srptLess(a, b) {
			return -1
		}
		return 1
	})
	q.active = slices.Insert(q.active, i, g)
	g.waitIdx = -1
}

// oldest returns the oldest grantable message, or nil.
func (q *grantQueue) oldest() *grantable {
	if q.fifo.Len() == 0 {
		return nil
	}
	return q.fifo.items[0]
}
