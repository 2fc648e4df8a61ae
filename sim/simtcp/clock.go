package simtcp

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// clock is a host stack's tcpip.Clock on the simulator's virtual time. Now
// is the time of the simulator event being handled (sync sets it before
// every input), and every reading is at least 1 ns after the previous one,
// as a real clock moves on while a stack works: netstack's RACK tells
// which of two segments was sent first by their send times, and with
// equal times it takes the later one for the earlier (its
// RACK_sent_after compares sequence numbers the wrong way round), so a
// burst of segments stamped with one instant made every ACK look like a
// loss. A reading runs ahead of virtual time by 1 ns per reading of that
// instant, a few hundred ns at most. A timer is a simulator event,
// scheduled by the host's pump on the simulator's goroutine and fired
// there, so timers due at one instant fire in the order they were set
// (faketime.ManualClock fires them in map order, and zero-delay ones on
// new goroutines).
type clock struct {
	h     *Host
	mu    sync.Mutex
	now   time.Duration // the virtual time of the event being handled
	last  time.Duration // the last reading
	armed []armed       // timers set since the pump last took them
}

// armed is one setting of a timer: it fires at at unless the timer was
// set again or stopped since (gen moved on).
type armed struct {
	t   *timer
	gen uint64
	at  time.Duration
}

// timer is a tcpip.Timer of a clock.
type timer struct {
	c      *clock
	f      func()
	gen    uint64
	active bool
}

var _ tcpip.Clock = (*clock)(nil)

// sync sets the clock to the simulator's time (on its goroutine).
func (c *clock) sync() {
	now := c.h.s.Now()
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// read returns the next reading: the virtual time, or 1 ns after the
// last reading if that is not earlier.
func (c *clock) read() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = max(c.now, c.last+1)
	return c.last
}

// Now implements tcpip.Clock: the reading after epoch.
func (c *clock) Now() time.Time { return epoch.Add(c.read()) }

// NowMonotonic implements tcpip.Clock.
func (c *clock) NowMonotonic() tcpip.MonotonicTime {
	var m tcpip.MonotonicTime
	return m.Add(c.read())
}

// AfterFunc implements tcpip.Clock: f runs d from now (at once, as the
// next event, if d <= 0) on the simulator's goroutine.
func (c *clock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	t := &timer{c: c, f: f}
	c.mu.Lock()
	c.arm(t, d)
	c.mu.Unlock()
	return t
}

// arm sets t to fire d from now; c.mu is held.
func (c *clock) arm(t *timer, d time.Duration) {
	t.gen++
	t.active = true
	c.armed = append(c.armed, armed{t: t, gen: t.gen, at: c.now + max(d, 0)})
}

// takeArmed returns the timer settings made since the last call.
func (c *clock) takeArmed() []armed {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.armed
	c.armed = nil
	return a
}

// fire runs a's timer if it is still set as a says, then lets the stack
// finish what it started and the host act on it.
func (c *clock) fire(a armed) {
	c.mu.Lock()
	if a.t.gen != a.gen || !a.t.active {
		c.mu.Unlock()
		return
	}
	a.t.active = false
	c.mu.Unlock()
	c.sync()
	a.t.f()
	c.h.settle()
	c.h.pump()
}

// Reset implements tcpip.Timer.
func (t *timer) Reset(d time.Duration) {
	t.c.mu.Lock()
	t.c.arm(t, d)
	t.c.mu.Unlock()
}

// Stop implements tcpip.Timer: it reports whether the timer was set.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	t.gen++
	return was
}
