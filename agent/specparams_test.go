package agent

import (
	"strings"
	"testing"
	"time"
)

// TestParamsSpec: a hello's parameters (as JSON decodes them) become spec
// parameters over the profile's defaults; names the spec does not use are
// ignored and a bad value names the parameter.
func TestParamsSpec(t *testing.T) {
	ev, err := DecodeEvent([]byte(`{"event":"hello","seq":1,"params":{"tick_ns":10000000,"resend_ticks":7,"mtu":1500,"link_bps":1e9,` +
		`"unsched_cutoffs":[0,0,0,0,0,0,5000,100]}}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ev.Params.Spec("linux")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tick != 10*time.Millisecond || p.ResendTicks != 7 || p.UnschedCutoffs != [8]uint32{0, 0, 0, 0, 0, 0, 5000, 100} {
		t.Errorf("tick %v resend_ticks %d cutoffs %v", p.Tick, p.ResendTicks, p.UnschedCutoffs)
	}
	if p.TimeoutTicks == 0 || p.Wire.String() == "" {
		t.Errorf("profile defaults lost: %+v", p)
	}
	if mtu, err := ev.Params.MTU(); mtu != 1500 || err != nil {
		t.Errorf("MTU() = %d, %v; want 1500", mtu, err)
	}
	if mtu, err := (Params{}).MTU(); mtu != 0 || err != nil {
		t.Errorf("MTU() of no mtu = %d, %v; want 0", mtu, err)
	}
	if _, err := (Params{"mtu": "jumbo"}).MTU(); err == nil || !strings.Contains(err.Error(), "mtu") {
		t.Errorf("MTU() of a word: %v, want an error naming mtu", err)
	}
	for _, c := range []struct {
		params Params
		want   string
	}{
		{Params{"tick_ns": -1}, "tick_ns"},
		{Params{"resend_ticks": "soon"}, "resend_ticks"},
	} {
		if _, err := c.params.Spec("linux"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v", c.params, err)
		}
	}
	// link_bps, when set, is the rate the ref spaces FIFO grants by,
	// slower or faster than link_mbps.
	for _, c := range []struct {
		params Params
		want   int
	}{
		{Params{"link_mbps": 25000, "link_bps": 1e9}, 1000},
		{Params{"link_mbps": 25000, "link_bps": 1e9 + 1}, 1001},
		{Params{"link_mbps": 25000, "link_bps": 0}, 25000},
		{Params{"link_mbps": 25000, "link_bps": 100e9}, 100000},
		{Params{"link_bps": 40e9}, 40000},
		{Params{"link_mbps": 10000}, 10000},
	} {
		if p, err := c.params.Spec("linux"); err != nil || p.LinkMbps != c.want {
			t.Errorf("%v: link_mbps %d, %v; want %d", c.params, p.LinkMbps, err, c.want)
		}
	}
	if _, err := (Params{}).Spec("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

// TestMs: durations go out in whole milliseconds, rounded up, so that a
// sub-millisecond timeout or delay is not sent as 0 (none).
// TestParamsSpecInert: linux_6.1.38 has a fifo_grant_increment sysctl
// (10000) but never sends a FIFO GRANT; under its profile the hello's
// value does not override the profile's 0, while main's profile takes it.
func TestParamsSpecInert(t *testing.T) {
	hello := Params{"fifo_grant_increment": 10000, "window": 12000}
	for profile, want := range map[string]uint32{"linux-2024": 0, "linux-2025": 0, "linux": 10000} {
		p, err := hello.Spec(profile)
		if err != nil || p.FIFOGrantIncrement != want || p.Window != 12000 {
			t.Errorf("%s: fifo_grant_increment %d, window %d, %v; want %d and 12000", profile, p.FIFOGrantIncrement, p.Window, err, want)
		}
	}
}

func TestMs(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, time.Nanosecond: 1, time.Millisecond: 1, 1500 * time.Microsecond: 2, time.Second: 1000} {
		if got := Ms(d); got != want {
			t.Errorf("Ms(%v) = %d, want %d", d, got, want)
		}
	}
}
