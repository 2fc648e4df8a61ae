package hrtimer

import (
	"testing"
	"time"
)

// TestAfterFunc: the timerfd fires once per Reset, a Reset of 0 fires
// at once, and after Stop a Reset does nothing and says so.
func TestAfterFunc(t *testing.T) {
	fired := make(chan struct{}, 4)
	tm := AfterFunc(time.Millisecond, func() { fired <- struct{}{} })
	if _, ok := tm.(*fdTimer); !ok {
		t.Fatalf("AfterFunc gave a %T, want a timerfd", tm)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the timer never fired", what)
		}
	}
	wait("armed at creation")
	if !tm.Reset(0) {
		t.Fatal("Reset(0) of a live timer reported false")
	}
	wait("Reset(0)")
	if !tm.Reset(time.Hour) {
		t.Fatal("Reset(1h) reported false")
	}
	if !tm.Stop() {
		t.Fatal("the first Stop reported false")
	}
	if tm.Stop() {
		t.Fatal("a second Stop reported true")
	}
	if tm.Reset(0) {
		t.Fatal("Reset after Stop reported true")
	}
	if len(fired) != 0 {
		t.Fatalf("%d fires after two Resets and a creation's", 3+len(fired))
	}
}

// BenchmarkTimer arms a 200 µs timer and waits for it, with
// time.AfterFunc and with the timerfd: ns/op is the time from arming to
// the fire, 200 µs for a timer that keeps a 200 µs tick.
func BenchmarkTimer(b *testing.B) {
	const d = 200 * time.Microsecond
	for _, c := range []struct {
		name string
		make func(func()) Timer
	}{
		{"time.Timer", func(f func()) Timer { return time.AfterFunc(time.Hour, f) }},
		{"timerfd", func(f func()) Timer { return AfterFunc(time.Hour, f) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			fired := make(chan struct{}, 1)
			tm := c.make(func() { fired <- struct{}{} })
			defer tm.Stop()
			for b.Loop() {
				tm.Reset(d)
				<-fired
			}
		})
	}
}
