package simtcp_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/sim/simtcp"
)

// tcpSim builds n TCP hosts at rate.
func tcpSim(tb testing.TB, n int, rate netem.BitRate, seed uint64) (*sim.Sim, []sim.RPCHost) {
	tb.Helper()
	cost := sim.CostForLink(int64(rate))
	s, err := sim.New(sim.Config{Seed: seed, Link: netem.LinkConfig{Rate: rate, Priorities: 8}, Cost: &cost})
	if err != nil {
		tb.Fatal(err)
	}
	var hs []sim.RPCHost
	for i := 1; i <= n; i++ {
		h, err := simtcp.Add(s, fmt.Sprintf("h%d", i), harness.Addr4(i), simtcp.Config{Seed: seed + uint64(i)})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(h.Close)
		hs = append(hs, h)
	}
	return s, hs
}

func TestCalls(t *testing.T) {
	s, hs := tcpSim(t, 2, netem.Gbit, 1)
	var rpcs []traffic.RPC
	for i, size := range []int{1, 100, 1500, 100000, 1000000, 7} {
		rpcs = append(rpcs, traffic.RPC{At: time.Duration(i) * time.Microsecond, Client: 0, Server: 1, Request: size, Response: size})
	}
	tr, err := s.StartRPC(hs, traffic.Config{RPCs: rpcs})
	if err != nil {
		t.Fatal(err)
	}
	s.RunWhile(func() bool { return !tr.Done() })
	res := tr.Result()
	for _, r := range res.Records {
		if r.Err != "" || r.Latency <= 0 {
			t.Errorf("rpc %d (%d bytes): latency %v, err %q", r.Seq, r.Request, r.Latency, r.Err)
		}
	}
	t.Logf("records %+v stats %+v", res.Records, res.Stats)
	t.Logf("switch %+v", s.Switch().Drops)
	for _, h := range hs {
		st := h.(*simtcp.Host).Stack().Stats()
		t.Logf("tcp %+v", st.TCP)
	}
}

// TestDeterministic runs W4 at 0.8 of 10 Gbit/s over 4 TCP hosts for 2 ms
// three times, the last with GOMAXPROCS 1 (netstack then starts one TCP
// processor goroutine per stack instead of one per CPU): the records,
// counters and clock agree exactly.
func TestDeterministic(t *testing.T) {
	run := func() string {
		s, hs := tcpSim(t, 4, 10*netem.Gbit, 3)
		w4, _ := workload.Parse("w4")
		tr, err := s.StartRPC(hs, traffic.Config{Requests: w4, Load: 0.8, LinkBps: 10e9, Duration: 2 * time.Millisecond, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		s.RunWhile(func() bool { return !tr.Done() })
		res := tr.Result()
		if len(res.Records) < 10 {
			t.Fatalf("%d RPCs, want a dozen or more", len(res.Records))
		}
		for _, r := range res.Records {
			if r.Err != "" {
				t.Fatalf("RPC %d: %s", r.Seq, r.Err)
			}
		}
		return fmt.Sprint(res.Records, res.Stats, s.Stats(), s.Now())
	}
	a, b := run(), run()
	prev := runtime.GOMAXPROCS(1)
	c := run()
	runtime.GOMAXPROCS(prev)
	if a != b || a != c {
		t.Errorf("runs differ:\n%s\n%s\n%s", a, b, c)
	}
}

func BenchmarkHeadline(b *testing.B) {
	for _, tr := range []string{"homa", "tcp"} {
		b.Run(tr, func(b *testing.B) {
			var simulated time.Duration
			var events uint64
			start := time.Now()
			for b.Loop() {
				var s *sim.Sim
				var hs []sim.RPCHost
				if tr == "homa" {
					s, hs = homaSim(b, 16, 10*netem.Gbit, 1)
				} else {
					s, hs = tcpSim(b, 16, 10*netem.Gbit, 1)
				}
				w4, _ := workload.Parse("w4")
				t, err := s.StartRPC(hs, traffic.Config{Requests: w4, Load: 0.8, LinkBps: 10e9, Duration: 20 * time.Millisecond, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				s.RunWhile(func() bool { return !t.Done() })
				simulated += s.Now()
				events += s.Stats().PacketEvents
			}
			wall := time.Since(start).Seconds()
			b.ReportMetric(simulated.Seconds()/wall, "sim-s/s")
			b.ReportMetric(float64(events)/wall, "packet-events/s")
		})
	}
}
