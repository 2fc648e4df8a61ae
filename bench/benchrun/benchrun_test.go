package benchrun

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
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
	sw0 := netem.Stats{Drops: netem.DropCounts{Buffer: 10, Ring: 1}, ForwardingCPU: 5 * time.Millisecond}
	sw1 := netem.Stats{Drops: netem.DropCounts{Buffer: 15, Ring: 3, Send: 1, Ingress: 4},
		ReadLagP50: time.Millisecond, ReadLagP99: 3 * time.Millisecond, SendLagP99: 2 * time.Millisecond, ForwardingCPU: 12 * time.Millisecond}
	got := counters(st, sw0, sw1)
	want := map[string]uint64{"retransmitted": 6, "timeouts": 1, "connections_broken": 1, "switch_buffer_drops": 5,
		"switch_ring_drops": 2, "switch_send_drops": 1, "switch_ingress_drops": 4, "switch_read_lag_p50_us": 1000, "switch_read_lag_p99_us": 3000, "switch_send_lag_p99_us": 2000, "switch_forwarding_cpu_us": 7000}
	if len(got) != len(want) {
		t.Errorf("counters = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("counters[%s] = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
}

// quiet is a Progress that shows nothing.
type quiet struct{}

func (quiet) Phase(string, int) {}
func (quiet) Set(int)           {}
func (quiet) SetMax(int, int)   {}
func (quiet) Note(string)       {}

// TestBenchSimSaturation: on the simulator's virtual clock (deterministic,
// whatever this machine's load), W1 at half of 10 Gbit/s into one server
// offers it about 2 M RPCs/s, at least 2 packets each, where its modelled
// cores carry 1.6 M packets/s: the report names homa as not keeping up,
// with the server's CPU as the cause, and marks it saturated; at a tenth
// of the load it names nothing.
func TestBenchSimSaturation(t *testing.T) {
	ref, err := agent.BuiltinManifest("ref", "homatest")
	if err != nil {
		t.Fatal(err)
	}
	w1, err := workload.Parse("w1")
	if err != nil {
		t.Fatal(err)
	}
	report := func(load float64) *bench.Report {
		t.Helper()
		arts, err := harness.NewArtifacts(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		b := &Bench{Config: Config{Env: EnvSim, Hosts: 8, RateBps: 10 * netem.Gbit, Dist: w1, Load: load,
			Duration: 2 * time.Millisecond, Buckets: 4, Unloaded: 2, Response: traffic.DefaultResponseBytes, Seed: 1,
			Transports: []string{"homa"}, Homa: ref, Artifacts: arts, Progress: quiet{}}}
		rep, err := b.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := report(0.5)
	s := rep.Transports[0]
	c := s.HostCPU
	if !s.Saturated || !slices.Equal(rep.Saturated, []string{"homa"}) || c == nil || !c.Saturated() || c.Host != "h8" || !c.Server ||
		c.CapacityPerSec != 1.6e6 || c.PacketsPerRPC < 2 || s.DeliveredBps >= bench.KeepUpFraction*s.OfferedBps || s.Issued != s.Count+s.Errors {
		t.Fatalf("load 0.5: saturated %v %q, cpu %+v, delivered %.3g of %.3g, issued %d = %d + %d; want homa saturated at h8",
			s.Saturated, rep.Saturated, c, s.DeliveredBps, s.OfferedBps, s.Issued, s.Count, s.Errors)
	}
	if len(rep.Warnings) == 0 || !strings.HasPrefix(rep.Warnings[0], "homa DID NOT KEEP UP: ") || !strings.Contains(rep.Warnings[0], "likely cause: the modelled CPU of host h8 (the server)") {
		t.Errorf("load 0.5: warnings %q", rep.Warnings)
	}
	rep = report(0.05)
	s = rep.Transports[0]
	if s.Saturated || len(rep.Saturated) != 0 || s.Errors != 0 || s.HostCPU == nil || s.HostCPU.Saturated() || s.HostCPU.Busy > 0.5 ||
		s.DeliveredBps < bench.KeepUpFraction*s.OfferedBps {
		t.Errorf("load 0.05: saturated %v %q, cpu %+v, delivered %.3g of %.3g; want nothing saturated", s.Saturated, rep.Saturated, s.HostCPU, s.DeliveredBps, s.OfferedBps)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "KEEP UP") || strings.Contains(w, "FAILED") {
			t.Errorf("load 0.05: warning %q", w)
		}
	}
}

// TestWallRate: the progress note's rate keeps two significant digits,
// so a simulation faster than real time is not "0.0 s per simulated
// second" (the old %.1f for any run under 0.05 s per second).
func TestWallRate(t *testing.T) {
	for _, c := range []struct {
		wall, sim time.Duration
		want      string
	}{
		{8 * time.Second, 120 * time.Second, "0.067 s per simulated second"},
		{40 * time.Millisecond, time.Second, "0.04 s per simulated second"},
		{3 * time.Second, 2 * time.Second, "1.5 s per simulated second"},
		{125 * time.Second, 10 * time.Second, "12 s per simulated second"},
		{time.Millisecond, 10 * time.Second, "under 0.001 s per simulated second"},
		{time.Second, 0, "no simulated time passed"},
	} {
		if got := wallRate(c.wall, c.sim); got != c.want {
			t.Errorf("wallRate(%v, %v) = %q, want %q", c.wall, c.sim, got, c.want)
		}
	}
}
