package simtcp

import (
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// TestClock: readings move on 1 ns per reading within an instant and
// jump to the simulator's time; timers fire on virtual time in the order
// they were set, a reset one at its new time only, a stopped one never.
func TestClock(t *testing.T) {
	s, err := sim.New(sim.Config{Seed: 1, Link: netem.LinkConfig{Rate: netem.Gbit}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Add(s, "h1", harness.Addr4(1), Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := h.clk
	a, b := c.NowMonotonic(), c.NowMonotonic()
	if d := b.Sub(a); d != time.Nanosecond {
		t.Errorf("two readings at one instant are %v apart, want 1ns", d)
	}
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, name+"@"+s.Now().String()) }
	}
	c.AfterFunc(2*time.Millisecond, at("first"))
	c.AfterFunc(2*time.Millisecond, at("second"))
	stopped := c.AfterFunc(time.Millisecond, at("stopped"))
	reset := c.AfterFunc(time.Millisecond, at("reset"))
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop: want true once, then false")
	}
	reset.Reset(3 * time.Millisecond)
	h.pump()
	s.RunUntil(10 * time.Millisecond)
	want := []string{"first@2ms", "second@2ms", "reset@3ms"}
	if len(fired) != len(want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	for i := range want {
		if fired[i] != want[i] {
			t.Errorf("fired %v, want %v", fired, want)
			break
		}
	}
	c.sync()
	if got := c.Now().Sub(epoch); got != 10*time.Millisecond {
		t.Errorf("Now after the clock ran to 10ms: %v", got)
	}
}
