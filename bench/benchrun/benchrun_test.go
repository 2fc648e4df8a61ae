package benchrun

import (
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/netem"
)

func TestBenchHomaParams(t *testing.T) {
	ref, _ := agent.BuiltinManifest("ref", "homatest")
	ref.Params = agent.Params{"resend_ticks": 3}
	b := &Bench{Config: Config{Env: EnvNS, RateBps: 100e6, RTT: time.Millisecond, Homa: ref, HomaOver: agent.Params{"max_incoming": int64(9000)}}}
	p := b.HomaParams()
	// 100 Mbit/s × 1 ms = 12500 bytes; --param beats the sizing.
	if p["unsched_bytes"] != int64(12500) || p["max_incoming"] != int64(9000) || p["tick_ns"] != int64(50e6) || p["resend_ticks"] != 3 || p["link_bps"] != int64(100e6) {
		t.Errorf("ref params = %v", p)
	}
	linux, _ := agent.BuiltinManifest("linux", "homatest")
	linux.Params = agent.Params{"resend_ticks": 3}
	b.Homa, b.HomaOver = linux, nil
	if p := b.HomaParams(); len(p) != 1 || p["resend_ticks"] != 3 {
		t.Errorf("linux params = %v, want only the manifest's", p)
	}
}

func TestBenchCounters(t *testing.T) {
	st := []agent.Stats{{Retransmitted: 4, Timeouts: 1}, {Retransmitted: 2, Extra: map[string]uint64{"connections_broken": 1}}}
	sw0 := netem.Stats{Drops: netem.DropCounts{Buffer: 10, Ring: 1}}
	sw1 := netem.Stats{Drops: netem.DropCounts{Buffer: 15, Ring: 3, Send: 1, Ingress: 4},
		ReadLagP50: time.Millisecond, ReadLagP99: 3 * time.Millisecond, SendLagP99: 2 * time.Millisecond}
	got := counters(st, sw0, sw1)
	want := map[string]uint64{"retransmitted": 6, "timeouts": 1, "connections_broken": 1, "switch_buffer_drops": 5,
		"switch_ring_drops": 2, "switch_send_drops": 1, "switch_ingress_drops": 4, "switch_read_lag_p50_us": 1000, "switch_read_lag_p99_us": 3000, "switch_send_lag_p99_us": 2000}
	if len(got) != len(want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("counters[%s] = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}
