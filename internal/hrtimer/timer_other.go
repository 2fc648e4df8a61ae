//go:build !linux

package hrtimer

import "time"

// AfterFunc is time.AfterFunc where there is no timerfd.
func AfterFunc(d time.Duration, fire func()) Timer {
	return time.AfterFunc(d, fire)
}
