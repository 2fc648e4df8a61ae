package pcap

import (
	"container/heap"
	"time"

	"github.com/homatest/homatest/spec"
)

// MaxReorder is the most a frame's timestamp may lie before an earlier
// frame's (in file order) for a check to judge the capture in timestamp
// order (ReaderOptions.Reorder): tcpdump on several CPUs writes each CPU's
// packets in turn, a mirror port may reorder by microseconds. Further
// out of order is no writer's jitter but a merged or re-timed file, which
// is judged in file order and reported (Stats.Backwards).
const MaxReorder = 10 * time.Millisecond

// noteTime files frame n's timestamp t for Stats.Backwards: a frame
// earlier than the latest timestamp before it. A frame more than
// spec.TimeJump before it starts a new stretch of time (captures joined
// end to end: the checker judges it as a new section) and counts only
// if a later frame lies before it. It also notes whether the frames'
// timestamps differ at all (Stats.TimeVaries).
func (r *Reader) noteTime(n int, t time.Time) {
	if !r.timed {
		r.first, r.timed = t, true
	} else if !r.stats.TimeVaries && !t.Equal(r.first) {
		r.stats.TimeVaries = true
	}
	if r.latest.IsZero() || !t.Before(r.latest) || r.latest.Sub(t) > spec.TimeJump {
		r.latest = t
		return
	}
	if r.stats.Backwards == 0 {
		r.stats.BackwardsFrame = n
	}
	r.stats.Backwards++
	r.stats.BackwardsMax = max(r.stats.BackwardsMax, r.latest.Sub(t))
}

// reorderBuf passes events on in timestamp order when no event is more
// than window older than one before it (ReaderOptions.Reorder): it holds
// each event (with its own copy of the packet bytes, OwnEvent) until an
// event more than window newer has come, since no later one can then be
// older. Events with equal timestamps keep their file order; each keeps
// its frame number.
type reorderBuf struct {
	window time.Duration
	out    func(*spec.Event)
	held   reorderHeap
	newest time.Time
	seq    uint64
	own    EventOwner
}

// push takes e (valid only during the call, as EachEvent's are). An
// event more than spec.TimeJump before the newest starts a new stretch
// of time (a new section for the checker): every event held goes first.
func (b *reorderBuf) push(e *spec.Event) {
	if b.newest.Sub(e.Time) > spec.TimeJump {
		b.flush()
		b.newest = e.Time
	}
	c := *e
	b.own.Own(&c)
	heap.Push(&b.held, heldEvent{e: c, seq: b.seq})
	b.seq++
	if e.Time.After(b.newest) {
		b.newest = e.Time
	}
	for b.held.Len() > 0 && b.newest.Sub(b.held[0].e.Time) > b.window {
		b.pop()
	}
}

// flush passes on every event held.
func (b *reorderBuf) flush() {
	for b.held.Len() > 0 {
		b.pop()
	}
}

func (b *reorderBuf) pop() {
	h := heap.Pop(&b.held).(heldEvent)
	b.out(&h.e)
}

// heldEvent is an event reorderBuf holds, seq its place in the file.
type heldEvent struct {
	e   spec.Event
	seq uint64
}

// reorderHeap orders held events by timestamp, then file order
// (container/heap.Interface).
type reorderHeap []heldEvent

func (h reorderHeap) Len() int { return len(h) }
func (h reorderHeap) Less(i, j int) bool {
	if !h[i].e.Time.Equal(h[j].e.Time) {
		return h[i].e.Time.Before(h[j].e.Time)
	}
	return h[i].seq < h[j].seq
}
func (h reorderHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *reorderHeap) Push(x any)   { *h = append(*h, x.(heldEvent)) }
func (h *reorderHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = heldEvent{}
	*h = old[:len(old)-1]
	return x
}
