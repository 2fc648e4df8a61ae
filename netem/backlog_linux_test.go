package netem

import (
	"math"
	"testing"
	"time"
)

// TestBacklogRate: frames queued behind each other give the dequeue rate
// whatever the sender did before; frames sent slower than the link is
// (nothing queued) give no measurable frames.
func TestBacklogRate(t *testing.T) {
	const size = 1514
	gap := int64(float64(size*8) / 100e6 * 1e9) // 121.12 µs at 100 Mbit/s
	var queued, sparse []rxFrame
	for i := range 100 {
		// All handed over at once, leaving one per gap; one receive stamp
		// 50 µs late shifts time between two gaps only.
		rx := int64(i) * gap
		if i == 40 {
			rx += 50_000
		}
		queued = append(queued, rxFrame{size: size, tx: 0, rx: rx})
		// One every 1.5 ms, each received 10 µs after it was sent.
		sparse = append(sparse, rxFrame{size: size, tx: int64(i) * 1_500_000, rx: int64(i)*1_500_000 + 10_000})
	}
	r, n, d := backlogRate(queued)
	if n != 99 || math.Abs(r-100e6)/100e6 > 0.001 || d != time.Duration(99*gap) {
		t.Errorf("backlogged: %.3f Mbit/s over %d frames in %v, want 100 over 99 in %v", r/1e6, n, d, time.Duration(99*gap))
	}
	if r, n, d := backlogRate(sparse); n != 0 || r != 0 || d != 0 {
		t.Errorf("sparse: %.3f Mbit/s over %d frames in %v, want nothing measurable", r/1e6, n, d)
	}
}
