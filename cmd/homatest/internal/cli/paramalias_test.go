package cli

import (
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
)

// TestParamAliases: every command takes the names homatest spec params
// lists and the agents' names alike. On the old code run and explore
// refused tick=5ms ("not an integer") and check refused link_bps
// ("unknown parameter", no hint).
func TestParamAliases(t *testing.T) {
	p, err := parseParams([]string{"tick=5ms", "link_mbps=1000"})
	if err != nil || p["tick_ns"] != int64(5000000) || p["link_bps"] != int64(1000000000) {
		t.Errorf("parseParams(tick=5ms, link_mbps=1000) = %v, %v; want tick_ns 5000000, link_bps 1000000000", p, err)
	}
	sp := spec.Profiles()[0].Params
	if err := sp.Set("link_bps", "1000000000"); err != nil || sp.LinkMbps != 1000 {
		t.Errorf("check's link_bps=1000000000: %v, link_mbps %d; want 1000", err, sp.LinkMbps)
	}
	if err := sp.Set("tick_ns", "5000000"); err != nil || sp.Tick.Milliseconds() != 5 {
		t.Errorf("check's tick_ns=5000000: %v, tick %v; want 5ms", err, sp.Tick)
	}
	if err := sp.Set("unsched", "5"); err == nil || !strings.Contains(err.Error(), "did you mean unsched_bytes or unsched_cutoffs?") {
		t.Errorf("unknown parameter unsched: %v; want a hint naming unsched_bytes and unsched_cutoffs", err)
	}
}
