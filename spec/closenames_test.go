package spec

import (
	"slices"
	"testing"
)

// TestCloseNames: a typo's hint names the parameter meant. On the old
// code tik, TICK, Tick and linkbps got no hint (only substrings and
// shared words were matched).
func TestCloseNames(t *testing.T) {
	known := append(ParamNames(), "tick_ns", "link_bps")
	for _, c := range []struct {
		name string
		want []string
	}{
		{"tik", []string{"tick"}},
		{"TICK", []string{"tick"}},
		{"Tick", []string{"tick"}},
		{"linkbps", []string{"link_bps"}},
		{"resend_tiks", []string{"resend_interval", "resend_ticks"}},
		{"unsched", []string{"unsched_bytes", "unsched_cutoffs"}},
		{"zz", nil},
		{"quux_frobs", nil},
	} {
		got := CloseNames(c.name, known)
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("CloseNames(%q) = %v, want %v", c.name, got, c.want)
		}
	}
	if d := editDistance("resend_tiks", "resend_ticks"); d != 1 {
		t.Errorf("editDistance = %d, want 1", d)
	}
}

// TestTickBounded: a tick of hours is refused; times timeout_ticks it
// overflowed a Duration, and check charged "abort the RPC after -124095h".
func TestTickBounded(t *testing.T) {
	p := Profiles()[0].Params
	if err := p.Set("tick", "50000h"); err == nil {
		t.Error("tick=50000h accepted")
	}
	if err := p.Set("tick", "1h"); err != nil {
		t.Errorf("tick=1h: %v", err)
	}
}
