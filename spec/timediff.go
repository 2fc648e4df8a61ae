package spec

import "time"

// subTime returns t.Sub(u) for the checker's per-packet paths. Capture
// timestamps carry no monotonic reading, so Sub's result is the wall
// difference; Sub also guards against overflow by adding the result back
// and comparing (an Add and an Equal, about half its cost at every
// packet). Within 2^32 s of 1970 (years 1834-2106) the difference cannot
// overflow a Duration and is computed directly; other times take Sub.
func subTime(t, u time.Time) time.Duration {
	ts, us := t.Unix(), u.Unix()
	if uint64(ts+1<<32) < 1<<33 && uint64(us+1<<32) < 1<<33 {
		return time.Duration(ts-us)*time.Second + time.Duration(t.Nanosecond()-u.Nanosecond())
	}
	return t.Sub(u)
}
