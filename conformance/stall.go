package conformance

import (
	"sync"
	"time"
)

// stallProbe measures how long this process goes unscheduled: a goroutine
// wakes every period and records the worst lateness of a wake-up. On a
// loaded machine the in-process hosts, their switch and its recorder all
// stop together for such stalls (tens of ms at a load of 12 on 2 cores),
// and a packet recorded as delivered may reach its host's protocol code
// only after one, and timer ticks missed during one come in a bunch: the
// bench's checks widen their timing bounds by the worst stall seen.
type stallProbe struct {
	mu    sync.Mutex
	worst time.Duration
	stop  chan struct{}
	done  chan struct{}
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
				late := time.Since(due)
				s.mu.Lock()
				s.worst = max(s.worst, late)
				s.mu.Unlock()
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// Worst returns the worst lateness seen so far.
func (s *stallProbe) Worst() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worst
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
