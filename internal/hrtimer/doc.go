// Package hrtimer is a one-shot timer that keeps sub-millisecond
// deadlines on the wall clock. Go's timers due in under a millisecond
// wait for the runtime's network poller, which sleeps in whole
// milliseconds when nothing else is runnable: a 200 µs time.Timer fired
// about every 1.1 ms on a 2-vCPU VM, idle or loaded. On Linux a Timer is
// a timerfd (CLOCK_MONOTONIC) in that poller, which wakes it at the
// kernel's hrtimer precision; elsewhere it is a time.Timer.
//
// Wall clock only: testing/synctest's virtual clock cannot drive a
// timerfd, so code that runs in a synctest bubble keeps time.Timer.
package hrtimer

import "time"

// Timer is a one-shot timer that runs a function when it expires:
// *time.Timer (time.AfterFunc) satisfies it too.
type Timer interface {
	// Reset arms the timer to expire once, d from now (at once when
	// d ≤ 0), replacing any earlier deadline.
	Reset(d time.Duration) bool
	// Stop disarms the timer for good.
	Stop() bool
}

// AfterFuncIf is AfterFunc when precise, else time.AfterFunc: code that
// runs on the wall clock in production and in a testing/synctest bubble
// in tests chooses with one flag.
func AfterFuncIf(precise bool, d time.Duration, fire func()) Timer {
	if precise {
		return AfterFunc(d, fire)
	}
	return time.AfterFunc(d, fire)
}
