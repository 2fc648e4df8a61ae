package check

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

// TestWholeGaps: a port's silence is kept only where the whole capture
// was silent past the bound too, and then named by the frames around the
// whole silence; a host's link silent while another carries packets is
// dropped.
func TestWholeGaps(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	at := func(ms int, frame int) spec.Event {
		return spec.Event{Time: t0.Add(time.Duration(ms) * time.Millisecond), Frame: frame}
	}
	views := map[int][]spec.Event{
		0: {at(0, 1), at(5000, 6)},
		1: {at(10, 2), at(20, 3), at(4990, 5)},
		2: {at(30, 4)},
	}
	gaps := []spec.TimeGap{{Frame: 6, After: 1, From: t0, Gap: 5 * time.Second, Continued: 6}}
	bound := 152 * time.Millisecond
	got := wholeGaps(append([]spec.TimeGap(nil), gaps...), views, bound)
	if len(got) != 1 || got[0].After != 4 || got[0].Frame != 5 || got[0].Gap != 4960*time.Millisecond || got[0].Continued != 6 {
		t.Fatalf("whole gaps %+v, want the silence from frame 4 to frame 5 (4.96s)", got)
	}
	for ms := 100; ms < 5000; ms += 100 {
		views[2] = append(views[2], at(ms, 7+ms/100))
	}
	if got := wholeGaps(append([]spec.TimeGap(nil), gaps...), views, bound); len(got) != 0 {
		t.Fatalf("whole gaps %+v, want none: no silence of the whole capture is longer than %v", got, bound)
	}
}
