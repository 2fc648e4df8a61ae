package spec

import "time"

// subTime returns a.Sub(b) as time.Time.Sub computes it (the seconds
// apart in Seconds plus the nanoseconds apart), without Sub's overflow
// test (an Add and an Equal: most of the time arithmetic Feed does per
// packet) when the two cannot overflow a Duration: both within about
// 34,000 years of 1970 and less than 9e9 s apart. Times with a monotonic
// reading, which Sub takes instead, and any others go through Sub.
func subTime(a, b time.Time) time.Duration {
	const near = 1 << 40 // seconds: |a - b| below 2^41 fits an int64
	as, bs := a.Unix(), b.Unix()
	if as > -near && as < near && bs > -near && bs < near {
		if ds := as - bs; ds > -9e9 && ds < 9e9 && a == a.Round(0) && b == b.Round(0) {
			return time.Duration(ds)*time.Second + time.Duration(a.Nanosecond()-b.Nanosecond())
		}
	}
	return a.Sub(b)
}
