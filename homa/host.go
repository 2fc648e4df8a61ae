package homa

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/homatest/homatest/internal/hrtimer"
)

// Config configures a Host.
type Config struct {
	// Transport carries the packets; required.
	Transport Transport
	// Params are the protocol parameters (DefaultParams if zero).
	Params Params
	// Faults are deliberate misbehaviours (see FaultNames).
	Faults []Fault
	// PreciseTimer arms the host's timer with package hrtimer instead of
	// time.AfterFunc, so that a Tick under a few milliseconds is kept:
	// with a time.Timer a 200 µs Tick ran about every 1.1 ms, and the
	// ticks of timeout_ticks with it. For hosts on the wall clock (raw IP)
	// only: testing/synctest's clock cannot drive it.
	PreciseTimer bool
}

// Host is one Homa endpoint in real time, like one Linux host with the
// Homa module loaded: a Machine driven by the wall clock (time.Since the
// host was created, so testing/synctest's virtual time drives it too)
// over a Transport. One mutex serialises the machine; the transport's
// handler feeds it packets, one timer (time.AfterFunc, or package
// hrtimer's with Config.PreciseTimer) wakes it at its
// Deadline for timer ticks and the pacer, and application calls (Call,
// Reply, ...) feed it the rest. Packets leave in the order the machine
// built them, after the mutex is released.
//
// Over a PullTransport there is no handler: the goroutines waiting in
// Call and Receive read the transport themselves, one at a time (the
// leader; the others, followers, wait for their result or for the lead),
// so that the packet a caller waits for wakes that caller from the
// poller, with no handoff from a reader goroutine. A leader whose wait
// ends hands the lead to a follower; with none, the host's standby
// goroutine leads while the machine waits for input no call waits for
// (Machine.WantsInput), and the timer reads what waits at every pass, so
// nothing waits longer than a tick. There a timer pass runs only after
// the packets waiting in the transport have been handled (drain), as
// HomaModule's softirq handles arrived packets before its timer thread
// runs: a pass never counts silence for an RPC whose packets sit unread.
// The goroutine that reads (the leader) runs a pass that is due, and the
// timer is armed tickGrace later, so that it wakes nobody while packets
// come; a timer that finds a leader interrupts it to run the pass.
//
// Over a handler-fed transport the same holds for what the transport has
// handed over or can hand over: before a pass the timer has a
// DrainTransport (memnet) deliver the packets that have arrived, and a
// pass that finds a handler holding packets, waiting for the mutex, is
// left to that handler, which runs it once its packets are in the machine.
type Host struct {
	m     *Machine
	tr    Transport
	batch BatchTransport // tr, when it sends and receives in batches
	pull  PullTransport  // tr, when the host reads it itself
	drain DrainTransport // tr, when handler-fed from a queue it can drain
	epoch time.Time
	// onBatch is receiveBatch as a func value made once (Pull's argument).
	onBatch func([]Received)

	mu sync.Mutex
	// sendMu keeps packets leaving in the order they were built under mu:
	// unlock takes it before releasing mu and holds it while it hands the
	// packets to the transport, so a timer pass cannot send (say) a
	// NEED_ACK ahead of the response DATA an earlier input built.
	sendMu  sync.Mutex
	timer   hrtimer.Timer
	armedAt time.Duration // the deadline the timer is set for
	sockets map[uint16]*Socket
	calls   map[uint64]*waiter
	// waiters recycles the waiters of Call and Receive: one goes back with
	// its wake channel empty, once nothing can signal it. Per host, not
	// global: a channel made in a testing/synctest bubble belongs to it.
	waiters sync.Pool
	// Over a PullTransport (under mu): leader is the goroutine reading the
	// transport (nil: none), followers those waiting for it, standby the
	// host's own reader and drainer the timer's turn as leader; inBatch is
	// set while the leader's packets are handled, pullDead once Pull
	// failed (the transport is closed).
	leader    *waiter
	followers []*waiter
	standby   *waiter
	drainer   *waiter
	inBatch   bool
	pullDead  bool
	// drainFrom is when the running drain began (zero: none runs);
	// drainDone is set once it read a packet stamped at or after then,
	// drainStamped while its packets carry stamps (passIfDue).
	drainFrom    time.Time
	drainDone    bool
	drainStamped bool
	// passHanded is set while a pass the timer found due waits for the
	// leader it interrupted (onTimer, release).
	passHanded bool
	// handing counts the handler calls (receive, receiveBatch) that hold
	// packets and wait for mu or run under it; passLeft is set (under mu)
	// while a timer pass over a handler-fed transport, which found one,
	// waits for it to run the pass (onTimer, passAfter).
	handing  atomic.Int32
	passLeft bool
	dropped  int // requests a full receive queue refused
	// txRefused counts the packets the transport refused (Stats.TxRefused;
	// written after h.mu is released, under sendMu).
	txRefused atomic.Int64
	closed    bool
	// sent holds the buffers of the packets sent (under sendMu), given
	// back to the machine by the next unlock, which holds both locks.
	sent [][]byte
}

// outPool recycles the packet lists of Host.unlock: two unlocks may be
// filling and sending lists at once.
var outPool = sync.Pool{New: func() any { return new([]Transmit) }}

// callResult is the end of one Call.
type callResult struct {
	resp []byte
	err  error
}

// waiter is a goroutine waiting in Call or Receive. Its wake channel (one
// buffered slot) is signalled, under Host.mu, when its call's result is
// set or when it is given the lead; what happened is read under Host.mu.
type waiter struct {
	wake chan struct{}
	res  callResult // the call's result, once has
	has  bool
	sock *Socket  // Receive's socket
	req  *Request // a request handed to Receive's leader directly
	idx  int      // 1 + index in Host.followers; 0 when not following
}

// signal wakes w's goroutine (a signal already pending suffices).
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// New starts a host on cfg.Transport. It returns an error for bad
// parameters or fault names.
func New(cfg Config) (*Host, error) {
	if cfg.Transport == nil {
		return nil, errors.New("homa: Config.Transport is required")
	}
	mc := MachineConfig{Addr: cfg.Transport.LocalAddr(), Params: cfg.Params, Faults: cfg.Faults}
	bt, _ := cfg.Transport.(BatchTransport)
	if bt != nil {
		mc.Headroom = bt.Headroom()
	}
	m, err := NewMachine(mc, 0)
	if err != nil {
		return nil, err
	}
	h := &Host{m: m, tr: cfg.Transport, batch: bt, epoch: time.Now(), sockets: map[uint16]*Socket{}, calls: map[uint64]*waiter{}}
	h.pull, _ = cfg.Transport.(PullTransport)
	if h.pull == nil {
		h.drain, _ = cfg.Transport.(DrainTransport)
	}
	h.waiters.New = func() any { return &waiter{wake: make(chan struct{}, 1)} }
	h.onBatch = h.receiveBatch
	h.mu.Lock()
	h.armedAt = m.nextTick
	h.timer = hrtimer.AfterFuncIf(cfg.PreciseTimer, m.nextTick, h.onTimer)
	h.mu.Unlock()
	switch {
	case h.pull != nil:
		h.standby, h.drainer = h.newWaiter(), h.newWaiter()
		go h.standbyLoop()
	case bt != nil:
		bt.SetBatchHandler(h.receiveBatch)
	default:
		cfg.Transport.SetHandler(h.receive)
	}
	return h, nil
}

// newWaiter returns a waiter from the pool.
func (h *Host) newWaiter() *waiter { return h.waiters.Get().(*waiter) }

// putWaiter returns w to the pool; nothing may signal it any more.
func (h *Host) putWaiter(w *waiter) {
	w.res, w.has, w.sock, w.req = callResult{}, false, nil, nil
	h.waiters.Put(w)
}

// Addr returns the host's address.
func (h *Host) Addr() netip.Addr { return h.m.Addr() }

// Params returns the host's parameters.
func (h *Host) Params() Params { return h.m.Params() }

// Stats returns a copy of the host's counters.
func (h *Host) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.m.Stats()
	st.Dropped += h.dropped
	st.TxRefused = int(h.txRefused.Load())
	return st
}

// now is the host's clock: the time since it was created.
func (h *Host) now() time.Duration { return time.Since(h.epoch) }

// Close aborts every RPC, closes every socket, stops the host's timer and
// closes the transport.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.m.Close()
	h.dispatch()
	h.closed = true
	for _, s := range h.sockets {
		s.closed = true
		close(s.reqs)
	}
	h.sockets = nil
	h.timer.Stop()
	if h.pull != nil {
		close(h.standby.wake) // ends standbyLoop; nothing signals it once closed
		if h.leader != nil {
			h.pull.Interrupt()
		}
	}
	h.mu.Unlock()
	// Packets built before Close may still be on their way to the
	// transport: let them go before it closes.
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	return h.tr.Close()
}

// receive is the transport's handler.
func (h *Host) receive(src netip.Addr, prio uint8, pkt []byte) {
	h.handing.Add(1)
	h.mu.Lock()
	h.handing.Add(-1)
	if h.closed {
		h.mu.Unlock()
		return
	}
	now := h.now()
	h.m.HandlePacket(now, src, prio, pkt)
	h.unlockAt(h.passAfter(now))
}

// receiveBatch is a BatchTransport's handler: every packet of the batch
// goes into the machine under one lock, and what they provoke leaves in
// one batch.
func (h *Host) receiveBatch(pkts []Received) {
	h.handing.Add(1)
	h.mu.Lock()
	h.handing.Add(-1)
	if h.closed {
		h.mu.Unlock()
		return
	}
	now := h.now()
	for _, p := range pkts {
		h.m.HandlePacket(now, p.Src, p.Prio, p.Packet)
	}
	if !h.drainFrom.IsZero() && len(pkts) > 0 {
		at := pkts[len(pkts)-1].At
		h.drainStamped = !at.IsZero()
		h.drainDone = h.drainStamped && !at.Before(h.drainFrom) // read up to its start
	}
	if h.pull != nil {
		// Read by the leader: what it provokes needs no Interrupt. A
		// timer pass now due runs once what waits is read (passIfDue).
		h.inBatch = true
		h.dispatch()
		h.inBatch = false
	} else {
		now = h.passAfter(now)
	}
	h.unlockAt(now)
}

// passAfter runs, over a handler-fed transport, the timer pass that the
// timer left to the handler (onTimer found its packets handed over and
// waiting for h.mu) once they are in the machine, and returns the time it
// ran it at (now when none was left), as HomaModule's softirq handles the
// packets that arrived before its timer thread counts silence. Called
// with h.mu held.
func (h *Host) passAfter(now time.Duration) time.Duration {
	if !h.passLeft {
		return now
	}
	h.passLeft = false
	return h.timeoutAt(now)
}

// tickGrace is how much later than a timer tick a Host over a
// PullTransport arms its timer, in fractions of a tick (Tick/tickGrace):
// while packets come, the goroutine reading them runs the tick's pass
// first (passIfDue), so the timer's own wake-up (a goroutine and
// often a thread woken, a context switch: 0.1 per RPC of a 100-byte
// echo at 25k RPC/s) is spared. A pass then runs at most a quarter tick
// late when the host is idle, within what the checker allows a loaded
// timer (spec timer_drift 0.5); pacer deadlines are not delayed.
const tickGrace = 4

// drainMaxBatches bounds the batches one drain reads (a safety net on a
// clock that stands still while goroutines run, testing/synctest's: the
// drain's other ends are an empty transport and the time).
const drainMaxBatches = 1 << 12

// onTimer runs when the machine's deadline has come. Over a
// PullTransport, a timer pass runs only after what waits in the
// transport is read (drain): with nobody reading, the timer's goroutine
// reads it itself; with a leader, the leader is interrupted and runs the
// pass once it has read what waits (passIfDue), and a lead that ends
// before that leaves the pass to the timer again (release).
func (h *Host) onTimer() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	if h.pull != nil && !h.pullDead && h.leader != nil && h.now() >= h.m.nextTick {
		// The leader runs the pass: interrupted if it waits, and a
		// drain that runs (its Pulls must not be cut short) runs it
		// when it ends. The timer stays as armed: the pass moves the
		// deadline, which arms it again.
		if h.drainFrom.IsZero() {
			h.passHanded = true
			h.pull.Interrupt()
		}
		h.mu.Unlock()
		return
	}
	if h.pull == nil && h.now() >= h.m.nextTick {
		if h.drain != nil {
			// What has arrived goes into the machine first (the
			// handler takes h.mu).
			h.mu.Unlock()
			h.drain.Drain()
			h.mu.Lock()
			if h.closed {
				h.mu.Unlock()
				return
			}
		}
		if h.handedOver() {
			// A handler holds packets that arrived before this pass
			// and waits for h.mu: it runs the pass after them
			// (passAfter). The timer stays as armed (armedAt): the
			// pass arms it again.
			h.passLeft = true
			h.mu.Unlock()
			return
		}
	}
	h.armedAt, h.passHanded, h.passLeft = -1, false, false
	if h.pull != nil && !h.pullDead && h.leader == nil {
		h.leader = h.drainer
		h.passIfDue()
		h.release()
		if h.closed {
			h.mu.Unlock()
			return
		}
	}
	h.unlockAt(h.timeoutAt(h.now()))
}

// handedOver reports whether a handler call holds packets for the
// machine, waiting for h.mu, once the packets other goroutines took from
// the machine have reached the transport (the wait of timeoutAt, during
// which a handler may come). Called with h.mu held.
func (h *Host) handedOver() bool {
	if h.handing.Load() > 0 {
		return true
	}
	h.sendMu.Lock() // held by writers until their packets are out
	h.sendMu.Unlock()
	return h.handing.Load() > 0
}

// passIfDue runs the timer pass when it is due, after reading what waits
// in the transport: HomaModule handles arrived packets (softirq, NAPI)
// before its timer thread runs a pass, so its silence counts reflect the
// packets that arrived. Without this a host whose CPU does not keep up
// counted silence for RPCs whose packets waited in its socket (seconds,
// beside stress-ng), timed them out and answered RPC_UNKNOWN. The drain
// reads without waiting until the transport is empty, until a packet the
// transport stamped (Received.At) arrived after the drain began (the pass
// has seen all that came before it), or, for packets without stamps,
// until a tick has passed (a pass is then late by at most that; with
// stamps the backlog it reads is the finite one that came before it).
// Called by the leader with h.mu held, which it releases around the
// reads and the pass's sends; it returns with h.mu held.
func (h *Host) passIfDue() {
	if h.closed || h.pullDead || h.now() < h.m.nextTick {
		return
	}
	start := time.Now()
	h.drainFrom, h.drainDone, h.drainStamped = start, false, false
	h.mu.Unlock()
	for range drainMaxBatches {
		n, err := h.pull.Pull(false, h.onBatch)
		if err != nil {
			h.mu.Lock()
			h.pullDead = true
			h.mu.Unlock()
		}
		// drainDone and drainStamped are written by this goroutine
		// (Pull calls receiveBatch in it).
		if n == 0 || h.drainDone || !h.drainStamped && time.Since(start) >= h.m.p.Tick {
			break
		}
	}
	h.mu.Lock()
	h.drainFrom, h.passHanded = time.Time{}, false
	if h.closed {
		return
	}
	h.unlockAt(h.timeoutAt(h.now()))
	h.mu.Lock()
}

// timeoutAt runs the machine's timer work due at now (HandleTimeout) and
// returns the time it ran it at. Before a timer pass it waits until the
// packets other goroutines took from the machine have reached the
// transport: HomaModule's timer counts an RPC silent only once its
// granted bytes have left (homa_timer_check_rpc against homa_rpc_tx_end,
// which gives the offset homa_qdisc still holds), and a sender preempted
// between taking its packets (unlockAt) and writing them would let the
// pass count from bytes still unsent. Called with h.mu held; it takes
// sendMu under it, the order unlockAt takes them in.
func (h *Host) timeoutAt(now time.Duration) time.Duration {
	if now >= h.m.nextTick {
		h.sendMu.Lock() // held by writers until their packets are out
		h.sendMu.Unlock()
		now = max(now, h.now())
	}
	h.m.HandleTimeout(now)
	return now
}

// pollsPerUsec bounds the empty polls of one busy-wait to 8 per µs of
// Params.PollUsecs: no poll (a system call) takes less than 125 ns, so
// the bound is the time, except on a clock that does not move while
// goroutines run (testing/synctest's), where it ends the spin.
const pollsPerUsec = 8

// lead reads the transport in the calling goroutine, whose waiter is
// h.leader, until done, ctx ends or the host closes, then hands the lead
// on (release). With poll (a goroutine waiting in Call or Receive) it
// busy-polls for Params.PollUsecs before each sleep in the transport, as
// HomaModule's waiting threads do (homa_interest_wait), yielding between
// polls (yield); the budget starts again when packets arrive (in
// HomaModule each handoff ends one wait). A packet that comes within it
// wakes nobody: fewer sleeps and wake-ups when packets come often, more
// latency on a loaded machine where a yield hands the core to another
// process (docs/performance.md, BenchmarkEcho100B's echo5). Called and
// returns with h.mu held.
func (h *Host) lead(ctx context.Context, done func() bool, poll bool) {
	var stop func() bool
	budget := time.Duration(h.m.p.PollUsecs) * time.Microsecond
	if !poll {
		budget = 0
	}
	maxPolls := pollsPerUsec * h.m.p.PollUsecs
	var start time.Duration
	polls := 0
	if budget > 0 {
		start = h.now()
	}
	for {
		h.passIfDue() // before done: a lead ends with no pass overdue
		if done() || h.closed || h.pullDead || ctx.Err() != nil {
			break
		}
		if stop == nil && ctx.Done() != nil {
			stop = context.AfterFunc(ctx, h.pull.Interrupt)
		}
		wait := budget <= 0 || polls >= maxPolls || h.now()-start >= budget
		h.mu.Unlock()
		n, err := h.pull.Pull(wait, h.onBatch)
		if !wait {
			if n > 0 {
				start, polls = h.now(), 0
			} else {
				polls++
				yield()
			}
		}
		h.mu.Lock()
		if err != nil {
			h.pullDead = true
		}
	}
	if stop != nil {
		stop()
	}
	h.release()
}

// release ends the current lead: a follower gets it (the latest: its
// caches are the warmest), or else the standby reader when the machine
// waits for input no call waits for; otherwise nobody reads until a
// goroutine waits or the timer's next pass. Called with h.mu held.
func (h *Host) release() {
	h.leader = nil
	if h.closed || h.pullDead {
		return
	}
	if n := len(h.followers); n > 0 {
		w := h.followers[n-1]
		h.unfollow(w)
		h.leader = w
		w.signal()
		return
	}
	if h.m.WantsInput() {
		h.leader = h.standby
		h.standby.signal()
		return
	}
	if h.passHanded {
		// The timer handed a pass to a lead that ended without running
		// it (onTimer): the timer runs it, reading what waits first.
		h.passHanded = false
		h.armedAt = 0
		h.timer.Reset(0)
	}
}

// follow makes w a follower; a standby leader is asked to step down for
// it. Called with h.mu held.
func (h *Host) follow(w *waiter) {
	h.followers = append(h.followers, w)
	w.idx = len(h.followers)
	if h.leader == h.standby {
		h.pull.Interrupt()
	}
}

// unfollow takes w out of the followers, if it is one. Called with h.mu
// held.
func (h *Host) unfollow(w *waiter) {
	if w.idx == 0 {
		return
	}
	i, last := w.idx-1, len(h.followers)-1
	h.followers[i] = h.followers[last]
	h.followers[i].idx = i + 1
	h.followers[last] = nil
	h.followers = h.followers[:last]
	w.idx = 0
}

// endWait ends w's wait: it follows no more, a lead it holds goes on, and
// a pending signal is taken. Called with h.mu held.
func (h *Host) endWait(w *waiter) {
	h.unfollow(w)
	if h.leader == w {
		h.release()
	}
	select {
	case <-w.wake:
	default:
	}
}

// await waits once, as leader when nobody reads (until done) or as a
// follower until signalled, ctx ends or (reqs not nil: Receive) a request
// comes on reqs, which it returns with got set (ok false: reqs closed).
// Called and returns with h.mu held; the caller checks what happened.
func (h *Host) await(ctx context.Context, w *waiter, done func() bool, reqs chan *Request) (q *Request, ok, got bool) {
	if h.leader == nil && !h.pullDead {
		h.leader = w
	}
	if h.leader == w {
		h.lead(ctx, done, true)
		return nil, false, false
	}
	h.follow(w)
	h.mu.Unlock()
	select {
	case <-w.wake:
	case <-ctx.Done():
	case q, ok = <-reqs: // a nil reqs never delivers
		got = true
	}
	h.mu.Lock()
	h.unfollow(w)
	if h.leader == w && !got {
		h.lead(ctx, done, true)
	}
	return q, ok, got
}

// awaitCall waits for the result of call id over a PullTransport.
func (h *Host) awaitCall(ctx context.Context, id uint64, w *waiter) ([]byte, error) {
	h.mu.Lock()
	done := func() bool { return w.has }
	for !w.has {
		if err := ctx.Err(); err != nil {
			delete(h.calls, id)
			h.m.Abort(id)
			h.endWait(w)
			h.unlock()
			h.putWaiter(w)
			return nil, err
		}
		h.await(ctx, w, done, nil)
	}
	r := w.res
	h.endWait(w)
	h.mu.Unlock()
	h.putWaiter(w)
	return r.resp, r.err
}

// standbyLoop is the host's own reader over a PullTransport: it leads
// while the machine waits for input that no goroutine waiting in Call or
// Receive would read (nobody follows), until the host closes.
func (h *Host) standbyLoop() {
	sb := h.standby
	for range sb.wake {
		h.mu.Lock()
		if h.leader == sb {
			h.lead(context.Background(), func() bool { return len(h.followers) > 0 || !h.m.WantsInput() }, false)
		}
		h.mu.Unlock()
	}
}

// dispatch hands the machine's events to the sockets and callers. Called
// with h.mu held.
func (h *Host) dispatch() {
	for {
		e, ok := h.m.PollEvent()
		if !ok {
			return
		}
		switch e.Kind {
		case EventRequest:
			s := h.sockets[e.Port]
			if s == nil {
				continue
			}
			q := &e.Request.r.srv.req // allocated with its RPC
			*q = Request{s: s, ref: e.Request, id: e.ID, payload: e.Payload, client: e.Peer}
			if l := h.leader; l != nil && l.sock == s && l.req == nil && len(s.reqs) == 0 {
				// The leader waits in Receive on s: it takes the request
				// directly, in order (nothing is queued before it).
				l.req = q
				if !h.inBatch {
					h.pull.Interrupt()
				}
				continue
			}
			select {
			case s.reqs <- q:
				if h.leader != nil && h.leader.sock == s && !h.inBatch {
					h.pull.Interrupt()
				}
			default:
				h.dropped++ // receive queue full
			}
		case EventCallDone:
			if w := h.calls[e.ID]; w != nil {
				delete(h.calls, e.ID)
				w.res, w.has = callResult{e.Payload, e.Err}, true
				// A follower leaving is no candidate for the lead: a
				// release now goes to one still waiting.
				h.unfollow(w)
				switch {
				case w != h.leader:
					w.signal()
				case !h.inBatch:
					h.pull.Interrupt() // it reads, waiting for what came another way
				} // else the leader itself handles this batch: it looks next
			}
		}
	}
}

// unlock hands out the machine's events, takes the packets it wants sent
// now, sets the timer for its deadline, releases h.mu and then transmits
// the packets, in order (in one batch when the transport can).
func (h *Host) unlock() { h.unlockAt(h.now()) }

// unlockAt is unlock at now, the time of the input just given (a clock
// read costs 0.1 µs on a loaded VM, and a few µs of staleness change
// nothing the machine decides).
func (h *Host) unlockAt(now time.Duration) {
	h.dispatch()
	list := outPool.Get().(*[]Transmit)
	out := (*list)[:0]
	for {
		t, ok := h.m.PollTransmit(now)
		if !ok {
			break
		}
		out = append(out, t)
	}
	if d, ok := h.m.Deadline(); ok {
		if h.pull != nil && d >= h.m.nextTick {
			d += h.m.p.Tick / tickGrace
		}
		if d != h.armedAt {
			// Armed from a fresh clock read, not from now: a goroutine
			// preempted since now was read would set the timer late by
			// as long as it waited, and the next pass with it, though
			// the pass itself was never held up (timers armed up to 15
			// ms late beside other suites at load 25). Once a deadline,
			// not a tick; the staleness of now is fine for the rest.
			h.armedAt = d
			h.timer.Reset(max(0, d-h.now()))
		}
	}
	h.sendMu.Lock()
	for _, b := range h.sent {
		h.m.Reuse(b)
	}
	h.sent = h.sent[:0]
	h.mu.Unlock()
	if h.batch != nil {
		if len(out) > 0 {
			if err := h.batch.SendBatch(out); err != nil {
				h.txRefused.Add(int64(refusedCount(err)))
			}
		}
	} else {
		for _, t := range out {
			if err := h.tr.Send(t.Dst, t.Prio, t.Packet); err != nil {
				h.txRefused.Add(int64(refusedCount(err)))
			}
		}
	}
	for i, t := range out {
		h.sent = append(h.sent, t.Frame())
		out[i] = Transmit{}
	}
	h.sendMu.Unlock()
	*list = out[:0]
	outPool.Put(list)
}
