package sim_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// BenchmarkW4 measures the simulator's speed on the Homa paper's
// benchmark shape: 16 hosts under one switch with 8 priority queues, every
// link 10 Gbit/s, W4 message sizes all-to-all at 80% offered load of each
// host's downlink (Poisson arrivals), HomaModule's 10 Gbit/s parameters
// (homa.ParamsForLink). Each iteration simulates 20 ms. It reports
// packet events per second of wall time (a packet sent, entering the
// switch, leaving it and taken in by a host each count once) and
// simulated seconds per wall second, and packet events per second of
// this process's CPU time (all threads, the garbage collector's
// included), which a machine loaded by other work inflates less than the
// wall time. The first run (without a capture) is the simulator; the
// second adds the three pcapng captures, written to a discarding writer.
func BenchmarkW4(b *testing.B) {
	for _, capture := range []bool{false, true} {
		name := "nocapture"
		if capture {
			name = "capture"
		}
		b.Run(name, func(b *testing.B) {
			var events uint64
			var simulated time.Duration
			start, cpu0 := time.Now(), cpuTime()
			for b.Loop() {
				s, tr := w4Sim(b, 10*netem.Gbit, 16, 0.8, 20*time.Millisecond, capture)
				s.RunWhile(func() bool { return !tr.Done() })
				events += s.Stats().PacketEvents
				simulated += s.Now()
			}
			wall, cpu := time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds()
			b.ReportMetric(float64(events)/wall, "packet-events/s")
			b.ReportMetric(float64(events)/cpu, "packet-events/cpu-s")
			b.ReportMetric(simulated.Seconds()/wall, "sim-s/s")
		})
	}
}

// w4Sim builds n hosts at rate running W4 all-to-all at load for d.
func w4Sim(tb testing.TB, rate netem.BitRate, n int, load float64, d time.Duration, capture bool) (*sim.Sim, *sim.Traffic) {
	tb.Helper()
	s, err := sim.New(sim.Config{Seed: 1, Link: netem.LinkConfig{Rate: rate, Priorities: 8}})
	if err != nil {
		tb.Fatal(err)
	}
	var hosts []*sim.Host
	for i := range n {
		h, err := s.AddHost(sim.HostConfig{Addr: addr(i + 1), Params: homa.ParamsForLink(int64(rate))})
		if err != nil {
			tb.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	if capture {
		if err := s.Capture(sim.CaptureConfig{Sent: discard{}, Delivered: discard{}, Both: discard{}}); err != nil {
			tb.Fatal(err)
		}
	}
	w4, _ := workload.Parse("w4")
	tr, err := s.StartTraffic(hosts, traffic.Config{Requests: w4, Pattern: traffic.AllToAll, Load: load,
		LinkBps: float64(rate), Duration: d, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return s, tr
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// discard is io.Discard as a distinct type (no ReadFrom shortcuts).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
