package conformance

import (
	"sync"
	"time"

	"github.com/homatest/homatest/spec"
)

// Stall is a span of wall time in which this process did not run: a
// probe goroutine due at From woke only at To.
type Stall struct {
	From, To time.Time
}

// stallMin is the shortest lateness a stallProbe records: one tick of the
// bench hosts (10 ms). Shorter stalls make no host miss a tick, and the
// checks' own tolerances (two ticks early, three late) absorb them.
const stallMin = 10 * time.Millisecond

// stallProbe records when this process goes unscheduled: a goroutine
// wakes every period and records every wake-up later than stallMin. On a
// loaded machine the in-process hosts, their switch and its recorder all
// stop together for such stalls (tens of ms at a load of 10 on 2 cores):
// a packet recorded as delivered may reach its host's protocol code only
// after one, and timer ticks missed during one come in a bunch.
type stallProbe struct {
	mu     sync.Mutex
	stalls []Stall
	stop   chan struct{}
	done   chan struct{}
}

// startStallProbe starts a probe waking every period.
func startStallProbe(period time.Duration) *stallProbe {
	s := &stallProbe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case due := <-t.C:
				if now := time.Now(); now.Sub(due) >= stallMin {
					s.mu.Lock()
					s.stalls = append(s.stalls, Stall{due, now})
					s.mu.Unlock()
				}
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// Stalls returns the stalls seen so far, in time order.
func (s *stallProbe) Stalls() []Stall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Stall(nil), s.stalls...)
}

// Stop ends the probe; it is safe to call more than once.
func (s *stallProbe) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// duringStall reports whether timing finding f (one with a tolerance)
// spans a stall: one overlaps the time from the earliest of its frames in
// view (1-based) less the tolerance to the latest plus the tolerance (a
// deadline runs after its frames, a "too early" silence before them). Such a finding says
// more about this machine than about the hosts: they stood still in it.
// Findings without a tolerance (wrong fields, wrong order) never do.
func duringStall(f spec.Finding, view []spec.Event, stalls []Stall) bool {
	if f.Slack <= 0 || len(stalls) == 0 {
		return false
	}
	var from, to time.Time
	for _, n := range append([]int{f.Frame}, f.Frames...) {
		if n < 1 || n > len(view) {
			continue
		}
		t := view[n-1].Time
		if from.IsZero() || t.Before(from) {
			from = t
		}
		if t.After(to) {
			to = t
		}
	}
	if from.IsZero() {
		return false
	}
	from, to = from.Add(-f.Slack), to.Add(f.Slack)
	for _, s := range stalls {
		if s.From.Before(to) && s.To.After(from) {
			return true
		}
	}
	return false
}
