package netem

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"
)

// Frame is one Ethernet frame inside the switch. Times are offsets on the
// switch clock (time.Duration since the clock's epoch; the socket backend
// uses kernel receive stamps, tests use a fake clock).
type Frame struct {
	// Data is the frame, from the destination MAC on (no FCS).
	Data []byte
	// Num is the switch's frame number (1-based, in order of arrival on
	// any port); duplicates keep the number of their original.
	Num uint64
	// In is the index of the port the frame entered by.
	In int
	// Arrival is when the frame entered the switch.
	Arrival time.Duration
	// Departure is when the frame is due to leave the egress port (after
	// serialisation and delay); set when it is serialised.
	Departure time.Duration
	// Comment lists what the switch did to the frame ("duplicate",
	// "corrupted bit 1234", "plan rule 2: delay 5ms", ...), for records.
	Comment string

	info       frameInfo
	queue      int           // priority queue on the egress port
	extraDelay time.Duration // from a plan rule
	hold       int           // frames that must leave before this one
	holdMax    time.Duration
	holdUntil  time.Duration
	seq        uint64 // tie-break in the delay line
}

func (f *Frame) note(s string) {
	if f.Comment == "" {
		f.Comment = s
	} else {
		f.Comment += "; " + s
	}
}

// clone copies the frame with its own Data.
func (f *Frame) clone() *Frame {
	g := *f
	g.Data = append([]byte(nil), f.Data...)
	return &g
}

// fifo is a queue of frames.
type fifo struct {
	buf  []*Frame
	head int
}

func (q *fifo) push(f *Frame) { q.buf = append(q.buf, f) }
func (q *fifo) empty() bool   { return q.head == len(q.buf) }
func (q *fifo) pop() *Frame {
	f := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return f
}

// delayLine orders frames by departure time (then by serialisation order).
type delayLine []*Frame

func (d delayLine) Len() int { return len(d) }
func (d delayLine) Less(i, j int) bool {
	return d[i].Departure < d[j].Departure || (d[i].Departure == d[j].Departure && d[i].seq < d[j].seq)
}
func (d delayLine) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *delayLine) Push(x any)   { *d = append(*d, x.(*Frame)) }
func (d *delayLine) Pop() any {
	old := *d
	f := old[len(old)-1]
	old[len(old)-1] = nil
	*d = old[:len(old)-1]
	return f
}

// Random streams of a port, one per purpose, so that turning one feature
// on does not change the choices of another.
const (
	streamLoss = iota
	streamJitter
	streamDuplicate
	streamCorrupt
	streamReorder
	numStreams
)

// Egress is one emulated egress port: strict-priority queues sharing a byte
// buffer (tail drop), a serialiser at the link rate, a delay line with
// jitter, and the loss, duplication, corruption and reordering models of its
// LinkConfig. It is driven by explicit times and has no goroutines or
// sockets: call Advance(now) before Enqueue(now, f), and Pop(now) to take the
// frames due by now. Times must not go backwards. Not safe for concurrent use.
type Egress struct {
	cfg      LinkConfig
	rng      [numStreams]*rand.Rand
	geBad    bool // Gilbert-Elliott state
	queues   [MaxPriorities]fifo
	queued   int // bytes waiting in queues
	nqueued  int
	linkFree time.Duration // when the serialiser is next idle
	txRem    uint64        // ns*rate remainder of linkFree (sub-ns part of the busy period)
	line     delayLine
	held     []*Frame
	seq      uint64
	ready    []*Frame // released held frames, sent next
	stats    PortStats
	onDrop   func(f *Frame, r DropReason, detail string)
}

// NewEgress returns an egress port for cfg (validated) whose random choices
// come from seed and the port index (PCG, math/rand/v2).
func NewEgress(cfg LinkConfig, seed uint64, index int) (*Egress, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Egress{cfg: cfg}
	for s := range e.rng {
		e.rng[s] = rand.New(rand.NewPCG(seed, splitmix(uint64(index)*numStreams+uint64(s))))
	}
	return e, nil
}

// splitmix spreads small integers over 64 bits (SplitMix64 finaliser).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Config returns the port's LinkConfig.
func (e *Egress) Config() LinkConfig { return e.cfg }

// Stats returns the port's counters (Name and Rx are filled in by Core).
func (e *Egress) Stats() PortStats { return e.stats }

// QueuedBytes is the backlog waiting for the serialiser, in bytes.
func (e *Egress) QueuedBytes() int { return e.queued }

func (e *Egress) drop(f *Frame, r DropReason, detail string) {
	e.stats.Drops.add(r)
	if e.onDrop != nil {
		e.onDrop(f, r, detail)
	}
}

// lost runs the loss model for one frame.
func (e *Egress) lost() (bool, string) {
	l := &e.cfg.Loss
	r := e.rng[streamLoss]
	switch l.Model {
	case "random":
		return r.Float64() < l.Probability, "random"
	case "gilbert-elliott", "ge":
		bad := e.geBad
		pl := l.LossGood
		if bad {
			pl = l.LossBad
		}
		lost := pl > 0 && r.Float64() < pl
		if bad {
			e.geBad = !(r.Float64() < l.R)
		} else {
			e.geBad = r.Float64() < l.P
		}
		if bad {
			return lost, "gilbert-elliott bad state"
		}
		return lost, "gilbert-elliott good state"
	}
	return false, ""
}

// Enqueue offers frame f to the port at time now (which must be >= the
// last time given). f.Arrival may be earlier than now (a kernel receive
// stamp of a frame read late): serialisation and delay then count from the
// arrival, so a late read does not add delay; an Arrival of 0 or after now
// means now. The frame may be dropped (MTU, loss, corrupt, buffer),
// duplicated, corrupted or marked for reordering on the way in.
func (e *Egress) Enqueue(now time.Duration, f *Frame) {
	if f.Arrival == 0 || f.Arrival > now {
		f.Arrival = now
	}
	if e.cfg.MTU > 0 && f.info.ipOff >= 0 && len(f.Data)-f.info.ipOff > e.cfg.MTU {
		e.drop(f, DropMTU, fmt.Sprintf("%d-byte IP packet > mtu %d", len(f.Data)-f.info.ipOff, e.cfg.MTU))
		return
	}
	if lost, how := e.lost(); lost {
		e.drop(f, DropLoss, how)
		return
	}
	copies := []*Frame{f}
	if e.cfg.Duplicate > 0 && e.rng[streamDuplicate].Float64() < e.cfg.Duplicate {
		d := f.clone()
		d.note("duplicate")
		copies = append(copies, d)
		e.stats.Duplicated++
	}
	if e.cfg.Corrupt > 0 && e.rng[streamCorrupt].Float64() < e.cfg.Corrupt {
		if e.cfg.CorruptMode == "drop" {
			e.drop(f, DropCorrupt, "corrupted on the link (bad FCS)")
			copies = copies[1:]
		} else if len(f.Data) > ethHeaderLen {
			bit := ethHeaderLen*8 + e.rng[streamCorrupt].IntN((len(f.Data)-ethHeaderLen)*8)
			f.Data[bit/8] ^= 1 << (bit % 8)
			f.note(fmt.Sprintf("corrupted bit %d", bit))
			e.stats.Corrupted++
		}
	}
	if e.cfg.Reorder.Probability > 0 && len(copies) > 0 && copies[0] == f &&
		e.rng[streamReorder].Float64() < e.cfg.Reorder.Probability {
		f.hold, f.holdMax = max(f.hold, e.cfg.Reorder.Gap), e.cfg.maxHold()
		f.note(fmt.Sprintf("reordered: held for %d frames", e.cfg.Reorder.Gap))
		e.stats.Reordered++
	}
	for _, c := range copies {
		e.queue(c)
	}
	e.Advance(now)
}

// queue puts f into its priority queue, or tail-drops it.
func (e *Egress) queue(f *Frame) {
	n := len(f.Data)
	if e.queued+n > e.cfg.buffer() {
		e.drop(f, DropBuffer, fmt.Sprintf("buffer full: %d + %d bytes > %d", e.queued, n, e.cfg.buffer()))
		return
	}
	f.queue = e.cfg.Queue(f.info.prio)
	e.queues[f.queue].push(f)
	e.queued += n
	e.nqueued++
	e.stats.MaxQueueBytes = max(e.stats.MaxQueueBytes, e.queued)
}

// Advance runs the serialiser up to time now: while the link is free by
// now, the head of the highest non-empty priority queue starts at
// max(link free, its arrival), occupies the link for TxTime, and enters the
// delay line due at the end of serialisation plus delay, jitter and any plan
// delay.
func (e *Egress) Advance(now time.Duration) {
	for e.nqueued > 0 && e.linkFree <= now {
		var f *Frame
		for q := MaxPriorities - 1; q >= 0; q-- {
			if !e.queues[q].empty() {
				f = e.queues[q].pop()
				break
			}
		}
		e.nqueued--
		e.queued -= len(f.Data)
		start := max(e.linkFree, f.Arrival)
		if start > e.linkFree {
			e.txRem = 0 // the link was idle: a new busy period
		}
		end := start
		if r := uint64(e.cfg.Rate); r > 0 {
			// Back to back, the sub-ns remainder carries over, so a busy
			// period keeps the exact rate (TxTime's rounding up would add
			// up to 1 ns a frame: -1.6% at 10 Gbit/s with 64-byte frames).
			num := uint64(len(f.Data))*8*uint64(time.Second) + e.txRem
			end += time.Duration(num / r)
			e.txRem = num % r
		}
		e.linkFree = end
		f.Departure = end + e.delay() + f.extraDelay
		e.seq++
		f.seq = e.seq
		if f.hold > 0 {
			hm := f.holdMax
			if hm == 0 {
				hm = DefaultMaxHold
			}
			f.holdUntil = f.Departure + hm
			e.held = append(e.held, f)
			continue
		}
		heap.Push(&e.line, f)
	}
}

// delay draws the link delay for one frame.
func (e *Egress) delay() time.Duration {
	d, j := e.cfg.Delay, e.cfg.Jitter
	if j == 0 {
		return d
	}
	r := e.rng[streamJitter]
	var x float64
	if e.cfg.JitterDist == "normal" {
		x = r.NormFloat64()
	} else {
		x = 2*r.Float64() - 1
	}
	return max(0, d+time.Duration(x*float64(j)))
}

// Next returns the earliest time at which Advance or Pop has work to do,
// and false when the port is idle (nothing queued, delayed or held).
func (e *Egress) Next() (time.Duration, bool) {
	t, ok := time.Duration(1<<63-1), false
	if len(e.ready) > 0 {
		return 0, true
	}
	if e.nqueued > 0 {
		t, ok = e.linkFree, true
	}
	if len(e.line) > 0 && e.line[0].Departure < t {
		t, ok = e.line[0].Departure, true
	}
	for _, h := range e.held {
		if h.holdUntil < t {
			t, ok = h.holdUntil, true
		}
	}
	return t, ok
}

// Pop returns the next frame due to leave the port by time now, or nil.
// It runs Advance(now) first. Every frame popped counts towards releasing
// held frames, which are then returned right after it.
func (e *Egress) Pop(now time.Duration) *Frame {
	e.Advance(now)
	if len(e.ready) > 0 {
		f := e.ready[0]
		e.ready = e.ready[1:]
		e.sent(f)
		return f
	}
	// A held frame whose hold timed out leaves now.
	for i, h := range e.held {
		if h.holdUntil <= now {
			e.held = append(e.held[:i], e.held[i+1:]...)
			h.note("released after max hold")
			e.sent(h)
			return h
		}
	}
	if len(e.line) == 0 || e.line[0].Departure > now {
		return nil
	}
	f := heap.Pop(&e.line).(*Frame)
	kept := e.held[:0]
	for _, h := range e.held {
		if h.hold--; h.hold <= 0 {
			e.ready = append(e.ready, h)
		} else {
			kept = append(kept, h)
		}
	}
	clear(e.held[len(kept):])
	e.held = kept
	e.sent(f)
	return f
}

func (e *Egress) sent(f *Frame) {
	e.stats.TxFrames++
	e.stats.TxBytes += uint64(len(f.Data))
}
