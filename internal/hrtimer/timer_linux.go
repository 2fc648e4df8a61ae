//go:build linux

package hrtimer

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdTimer is a Timer on a Linux timerfd (CLOCK_MONOTONIC) read in Go's
// network poller, which wakes when the timerfd fires.
type fdTimer struct {
	f  *os.File        // non-blocking, so its reads wait in the poller
	rc syscall.RawConn // f's descriptor for Reset, made once
}

// AfterFunc returns a Timer armed to expire d from now, which runs fire
// in a goroutine of its own each time it expires (one goroutine for the
// Timer's life, so two runs never overlap). It falls back to
// time.AfterFunc when no timerfd can be made.
func AfterFunc(d time.Duration, fire func()) Timer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return time.AfterFunc(d, fire)
	}
	f := os.NewFile(uintptr(fd), "hrtimer")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return time.AfterFunc(d, fire)
	}
	t := &fdTimer{f: f, rc: rc}
	t.Reset(d)
	go func() {
		var n [8]byte // the count of expirations since the last read
		for {
			if _, err := t.f.Read(n[:]); err != nil {
				return // Stop closed the file
			}
			fire()
		}
	}()
	return t
}

// Reset arms the timer to expire once, d from now (at once when d ≤ 0).
// It reports false when the timer was stopped (then it does nothing).
func (t *fdTimer) Reset(d time.Duration) bool {
	// An it_value of 0 would disarm the timer: 1 ns is "now".
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	// Control keeps the descriptor open while it is used (a Stop racing
	// this Reset cannot hand its number to another file) and fails once
	// Stop closed it.
	var serr error
	if err := t.rc.Control(func(fd uintptr) {
		serr = unix.TimerfdSettime(int(fd), 0, &spec, nil)
	}); err != nil {
		return false
	}
	return serr == nil
}

// Stop disarms the timer for good and ends its goroutine; it reports
// false when the timer was already stopped.
func (t *fdTimer) Stop() bool {
	return t.f.Close() == nil
}
