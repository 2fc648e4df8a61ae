package tester

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/hrtimer"
	"github.com/homatest/homatest/sim"
)

// Clock is the time a Peer stamps its packets with and waits on: the wall
// clock (NewWallClock), or a simulator's virtual clock that the waiting
// goroutine steps itself (SimClock). Every blocking call of a Peer, and
// of a test driving one, waits through its Clock, so the same test runs
// in real time and in the simulator.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Wait blocks until ready() reports true, the clock reaches deadline,
	// or ctx ends, whichever is first. It reports ready()'s last value,
	// and ctx's error when ctx ended first. ready is called on the
	// waiting goroutine: on the wall clock each time Notify is called,
	// on a virtual clock after every event of the simulation.
	Wait(ctx context.Context, deadline time.Time, ready func() bool) (bool, error)
	// Notify says that something a Wait's ready looks at may have
	// changed (a packet arrived, a call completed); call it after the
	// change, from any goroutine.
	Notify()
}

// NewWallClock returns a real-time clock (time.Now; testing/synctest's
// bubble time when made inside a bubble). Its Notify wakes every waiter
// on it, and each re-checks its own ready: share one among the peers and
// the IUT's calls a test waits on.
func NewWallClock() Clock { return &wallClock{changed: make(chan struct{})} }

// NewPreciseWallClock is NewWallClock whose waits end at package
// hrtimer's precision: a wait of a tick of 200 µs ends about 200 µs
// later, where a time.Timer's ends about 1.1 ms later (the runtime's
// whole-millisecond poller sleep). Not in a testing/synctest bubble,
// whose clock cannot drive it.
func NewPreciseWallClock() Clock {
	return &wallClock{changed: make(chan struct{}), precise: true}
}

type wallClock struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced by Notify
	precise bool          // waits on hrtimer, not time.Timer
}

func (c *wallClock) Now() time.Time { return time.Now() }

func (c *wallClock) Notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *wallClock) Wait(ctx context.Context, deadline time.Time, ready func() bool) (bool, error) {
	if ready() {
		return true, nil
	}
	if !time.Now().Before(deadline) {
		return false, nil // a look without a wait needs no timer
	}
	expired := make(chan struct{}, 1)
	fire := func() {
		select {
		case expired <- struct{}{}:
		default:
		}
	}
	t := hrtimer.AfterFuncIf(c.precise, time.Until(deadline), fire)
	defer t.Stop()
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if ready() {
			return true, nil
		}
		select {
		case <-changed:
		case <-expired:
			return ready(), nil
		case <-ctx.Done():
			return ready(), ctx.Err()
		}
	}
}

// SimClock is a simulator's virtual clock (package sim) as a Clock: Wait
// steps the simulation event by event on the calling goroutine until
// ready holds or the deadline comes, so a test's expectations advance
// virtual time exactly as far as they need, however loaded the machine
// is. Times are the simulation's virtual time since the Unix epoch (the
// stamps of its captures). Its methods are safe for concurrent use (a
// mutex keeps one goroutine in the simulation at a time), but a test
// should drive it from one goroutine: which of two goroutines steps first
// would decide the outcome.
type SimClock struct {
	s *sim.Sim
	// mu is held while the simulation runs (Wait, Do).
	mu sync.Mutex
	// stampMu guards last: Now is called inside the simulation's events
	// (a raw endpoint's handler) while mu is held.
	stampMu sync.Mutex
	last    time.Duration
	// hold, when set, holds the waiting goroutine up after a Wait (HoldUps).
	hold *holdUps
	// freeze, when set, freezes a simulated host at random (Freezes).
	freeze *holdUps
	frozen func(until time.Duration)
	// thawed is when the latest freeze ends (DoFrozen waits for it).
	thawed time.Duration
}

// holdUps is SimClock.HoldUps' configuration, random source and the
// virtual time of the next hold-up.
type holdUps struct {
	rng    *rand.Rand
	every  time.Duration
	most   time.Duration
	next   time.Duration
	record func(from, to time.Time)
}

// HoldUps makes the clock play a loaded machine's harness: hold-ups come
// at random, on average every of virtual time apart (exponentially
// distributed, as independent preemptions are), each lasting a time drawn
// uniformly from (0, most]. The first Wait to return once one is due
// (its condition met or its deadline come) keeps its goroutine held up
// that long before it returns, while the simulation runs on: the IUT's
// timers fire, and its packets arrive and are recorded, as when the
// kernel keeps a tester from running. Each hold-up is passed to record
// (from, to), for the suite to weigh as a measured stall. The same seed
// gives the same hold-ups. Call before the clock is used.
func (c *SimClock) HoldUps(seed uint64, every, most time.Duration, record func(from, to time.Time)) {
	h := &holdUps{rng: rand.New(rand.NewPCG(seed, 0)), every: every, most: most, record: record}
	h.next = c.s.Now() + h.gap()
	c.hold = h
}

// Freezes freezes a host of the simulation at random as HoldUps holds the
// testers up (on average every apart, up to most long, seeded with
// seed), by calling freeze with when the freeze ends (sim.Host.Freeze),
// as an operating system keeps the implementation under test from
// running; each freeze is passed to record (from, to). A freeze begins at
// the first event of the simulation a Wait steps once one is due. Call
// before the clock is used.
func (c *SimClock) Freezes(seed uint64, every, most time.Duration, freeze func(until time.Duration), record func(from, to time.Time)) {
	h := &holdUps{rng: rand.New(rand.NewPCG(seed, 1)), every: every, most: most, record: record}
	h.next = c.s.Now() + h.gap()
	c.freeze, c.frozen = h, freeze
}

// freezeDue freezes the host if a freeze is due (Freezes). Called with mu
// held.
func (c *SimClock) freezeDue() {
	if to, ok := c.freeze.due(c.s.Now()); ok {
		c.frozen(to)
		c.thawed = max(c.thawed, to)
	}
}

// holdUp runs the simulation on for a hold-up, if one is due (HoldUps).
// Called with mu held.
func (c *SimClock) holdUp() {
	if to, ok := c.hold.due(c.s.Now()); ok {
		c.s.RunUntil(to)
	}
}

// due draws the stall that is due at now, if one is (h may be nil):
// when it ends; it records the stall and draws the next one's time.
func (h *holdUps) due(now time.Duration) (time.Duration, bool) {
	if h == nil || h.every <= 0 || h.most <= 0 || now < h.next {
		return 0, false
	}
	to := now + 1 + time.Duration(h.rng.Int64N(int64(h.most)))
	h.record(time.Unix(0, int64(now)), time.Unix(0, int64(to)))
	h.next = to + h.gap()
	return to, true
}

// gap draws the time to the next hold-up.
func (h *holdUps) gap() time.Duration {
	return time.Duration(h.rng.ExpFloat64() * float64(h.every))
}

// NewSimClock returns the virtual clock of s.
func NewSimClock(s *sim.Sim) *SimClock { return &SimClock{s: s, last: -1} }

// Now returns the virtual time. Calls at one virtual instant return times
// 1 ns apart, so packets recorded at one instant keep, in time order, the
// order they were recorded in (as the simulator's captures stamp them).
func (c *SimClock) Now() time.Time {
	c.stampMu.Lock()
	defer c.stampMu.Unlock()
	c.last = max(c.s.Now(), c.last+1)
	return time.Unix(0, int64(c.last))
}

// Notify does nothing: Wait checks ready after every event.
func (c *SimClock) Notify() {}

// ctxEvery is how many events Wait processes between looks at its
// context, so an interrupt stops a long wait promptly and cheaply.
const ctxEvery = 1024

// Wait steps the simulation until ready holds, the next event lies past
// deadline (the clock then moves to deadline), or ctx ends.
func (c *SimClock) Wait(ctx context.Context, deadline time.Time, ready func() bool) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := time.Duration(deadline.UnixNano())
	for n := 0; ; n++ {
		if ready() {
			c.holdUp()
			return true, nil
		}
		if n%ctxEvery == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		c.freezeDue()
		at, ok := c.s.Next()
		if !ok || at > end {
			c.s.RunUntil(max(end, c.s.Now()))
			r := ready()
			c.holdUp()
			return r, nil
		}
		c.s.Step()
	}
}

// DoFrozen is Do for the frozen host's application (Freezes): a process
// kept from running acts only when it runs again, so fn waits, the
// simulation running on, until the host's freeze ends.
func (c *SimClock) DoFrozen(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.Now() < c.thawed {
		c.s.RunUntil(c.thawed)
	}
	fn()
}

// Do runs fn with the simulation held (no Wait runs meanwhile): for
// inputs to the simulation from outside its events, such as an
// application call on a simulated host.
func (c *SimClock) Do(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn()
}

// SimTransport returns raw endpoint h of a simulation (sim.Sim.AddRaw) as
// a homa.Transport for a Peer on c: Send sends now, the handler is called
// inside the simulation's events (on the goroutine stepping it), and
// Close detaches the handler, leaving the endpoint for the next Peer.
func SimTransport(c *SimClock, h *sim.Host) homa.Transport { return &simTransport{c: c, h: h} }

type simTransport struct {
	c *SimClock
	h *sim.Host
}

func (t *simTransport) LocalAddr() netip.Addr { return t.h.Addr() }

func (t *simTransport) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	var err error
	t.c.Do(func() { err = t.h.Send(dst, prio, pkt) })
	return err
}

// sendLogged runs log, which stamps and sends a packet, with the
// simulation held (loggedSender).
func (t *simTransport) sendLogged(_ netip.Addr, _ uint8, _ []byte, log func()) { t.c.Do(log) }

// sendInHandler sends from the handler, which runs inside the
// simulation's event with the clock's lock held (Send would take it).
func (t *simTransport) sendInHandler(dst netip.Addr, prio uint8, pkt []byte) error {
	return t.h.Send(dst, prio, pkt)
}

func (t *simTransport) SetHandler(fn func(src netip.Addr, prio uint8, pkt []byte)) {
	t.c.Do(func() { t.h.OnPacket(fn) })
}

func (t *simTransport) Close() error {
	t.c.Do(func() { t.h.OnPacket(nil) })
	return nil
}
