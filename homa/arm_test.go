package homa_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
)

// TestArmFromStaleClock: a timer armed by a goroutine that read the clock
// 5 ms before arming (preempted in between, as a loaded machine does)
// still fires at the deadline: the host's first pass, due at 10 ms, has
// run by 12 ms. Armed from the stale reading (deadline less the reading),
// the timer fired 5 ms late, at 15 ms, and the pass with it: a stall
// before a pass delayed the pass too, after the stall had ended.
func TestArmFromStaleClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := homa.DefaultParams()
		p.Tick = 10 * time.Millisecond
		h, _ := hostWithPeer(t, p, time.Microsecond)
		time.Sleep(2 * time.Millisecond)
		stale := 2 * time.Millisecond // the clock as read before the preemption
		time.Sleep(5 * time.Millisecond)
		h.ArmFrom(stale)
		time.Sleep(5 * time.Millisecond) // 12 ms: 2 ms past the first tick
		synctest.Wait()
		if got := h.Passes(); got != 1 {
			t.Errorf("%d timer passes by 12 ms with the first due at 10 ms, want 1 (armed from the stale clock it fires at 15 ms)", got)
		}
		time.Sleep(4 * time.Millisecond) // 16 ms: no second pass before 20 ms
		synctest.Wait()
		if got := h.Passes(); got != 1 {
			t.Errorf("%d timer passes by 16 ms, want 1", got)
		}
	})
}
