package simtcp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// homaSim builds n Homa hosts at rate.
func homaSim(tb testing.TB, n int, rate netem.BitRate, seed uint64) (*sim.Sim, []sim.RPCHost) {
	tb.Helper()
	cost := sim.CostForLink(int64(rate))
	s, err := sim.New(sim.Config{Seed: seed, Link: netem.LinkConfig{Rate: rate, Priorities: 8}, Cost: &cost})
	if err != nil {
		tb.Fatal(err)
	}
	var hs []sim.RPCHost
	for i := 1; i <= n; i++ {
		h, err := s.AddHost(sim.HostConfig{Name: fmt.Sprintf("h%d", i), Addr: harness.Addr4(i), Params: homa.ParamsForLink(int64(rate))})
		if err != nil {
			tb.Fatal(err)
		}
		hs = append(hs, sim.HomaRPC(h))
	}
	return s, hs
}

// TestCollective runs a 4 MB ring all-reduce and a halving-doubling one
// over 8 hosts at 100 Gbit/s on both transports: each completes, no
// faster than its ideal (each host's 2(N-1)/N × 4 MB at the link rate,
// 587 µs) and within 3x of it on an otherwise idle network.
func TestCollective(t *testing.T) {
	for _, tr := range []string{"homa", "tcp"} {
		for _, alg := range []string{sim.Ring, sim.HalvingDoubling} {
			var s *sim.Sim
			var hs []sim.RPCHost
			if tr == "homa" {
				s, hs = homaSim(t, 8, 100*netem.Gbit, 1)
			} else {
				s, hs = tcpSim(t, 8, 100*netem.Gbit, 1)
			}
			c, err := s.StartCollective(hs, sim.CollectiveConfig{Algorithm: alg, Bytes: 4 << 20, Port: 5000, Iterations: 2})
			if err != nil {
				t.Fatal(err)
			}
			s.RunWhile(func() bool { return !c.Done() })
			ideal := c.Ideal(100e9)
			if want := 587202 * time.Nanosecond; ideal != want { // 14 × 512 KiB at 100 Gbit/s
				t.Errorf("%s: ideal %v, want %v", alg, ideal, want)
			}
			ts := c.Times()
			if c.Err() != "" || len(ts) != 2 {
				t.Fatalf("%s %s: times %v, err %q", tr, alg, ts, c.Err())
			}
			for _, d := range ts {
				if d < ideal || d > 3*ideal {
					t.Errorf("%s %s: completion %v, ideal %v: want within [1, 3] x ideal", tr, alg, d, ideal)
				}
			}
			t.Logf("%s %s: %v (ideal %v)", tr, alg, ts, ideal)
		}
	}
}

// TestCollectiveErrors: the configurations StartCollective refuses.
func TestCollectiveErrors(t *testing.T) {
	s, hs := homaSim(t, 6, 10*netem.Gbit, 1)
	for _, c := range []struct {
		hosts []sim.RPCHost
		cfg   sim.CollectiveConfig
		want  string
	}{
		{hs[:1], sim.CollectiveConfig{Bytes: 100}, "need at least 2"},
		{hs, sim.CollectiveConfig{Bytes: 5}, "at least one byte per host"},
		{hs, sim.CollectiveConfig{Bytes: 100, Algorithm: "tree"}, `algorithm "tree"`},
		{hs, sim.CollectiveConfig{Bytes: 100, Algorithm: sim.HalvingDoubling}, "power of two"},
	} {
		if _, err := s.StartCollective(c.hosts, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d hosts, %+v: err %v, want %q", len(c.hosts), c.cfg, err, c.want)
		}
	}
}

// TestTrafficStop: no RPC is issued after Stop, and those issued end.
func TestTrafficStop(t *testing.T) {
	s, hs := homaSim(t, 3, 10*netem.Gbit, 1)
	w3, _ := workload.Parse("w3")
	tr, err := s.StartRPC(hs, traffic.Config{Requests: w3, Load: 0.5, LinkBps: 10e9, Duration: time.Hour, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.RunUntil(time.Millisecond)
	tr.Stop()
	n := len(tr.Result().Records)
	s.RunWhile(func() bool { return !tr.Done() })
	res := tr.Result()
	if n < 10 || len(res.Records) != n {
		t.Fatalf("%d RPCs by the stop, %d at the end: want some, and none after", n, len(res.Records))
	}
	for _, r := range res.Records {
		if r.Err != "" || r.At > time.Millisecond {
			t.Errorf("RPC %d at %v: %q", r.Seq, r.At, r.Err)
		}
	}
}
