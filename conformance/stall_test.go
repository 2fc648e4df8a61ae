package conformance

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

func TestDuringStall(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	view := []spec.Event{{Time: at(0)}, {Time: at(10)}, {Time: at(100)}}
	stalls := []Stall{{From: at(40), To: at(80)}}
	cases := []struct {
		name string
		f    spec.Finding
		want bool
	}{
		{"answer late across the stall", spec.Finding{Frame: 2, Frames: []int{3}, Slack: time.Millisecond}, true},
		{"obligation whose deadline reaches the stall", spec.Finding{Frame: 2, Slack: 35 * time.Millisecond}, true},
		{"timing finding before the stall", spec.Finding{Frame: 1, Frames: []int{2}, Slack: 20 * time.Millisecond}, false},
		{"too early, the stall in the tolerance before it", spec.Finding{Frame: 3, Slack: 30 * time.Millisecond}, true},
		{"timing finding after the stall", spec.Finding{Frame: 3, Slack: 10 * time.Millisecond}, false},
		{"not a timing finding", spec.Finding{Frame: 2, Frames: []int{3}}, false},
		{"frames outside the view", spec.Finding{Frame: 9, Slack: time.Second}, false},
	}
	for _, c := range cases {
		if got := duringStall(c.f, view, stalls); got != c.want {
			t.Errorf("%s: duringStall = %v, want %v", c.name, got, c.want)
		}
	}
	if duringStall(cases[0].f, view, nil) {
		t.Error("a finding spans a stall when there was none")
	}
}
