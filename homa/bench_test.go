package homa_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// BenchmarkEcho100BMemnet measures 100-byte echo round trips over the
// in-memory network in real time (no link delay or rate): the protocol's
// own per-RPC cost. Compare with BenchmarkEcho100B in homa/rawip (raw
// sockets and TCP between namespaces).
func BenchmarkEcho100BMemnet(b *testing.B) {
	homa.SetQueueChecks(false) // the tests' O(n) check per input
	defer homa.SetQueueChecks(true)
	n := memnet.New(memnet.Config{})
	defer n.Close()
	var hosts []*homa.Host
	for i := range 2 {
		h, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}))})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		hosts = append(hosts, h)
	}
	s, _ := hosts[1].Listen(4000)
	go func() {
		for {
			q, err := s.Receive(context.Background())
			if err != nil {
				return
			}
			q.Reply(q.Payload())
		}
	}()
	c, _ := hosts[0].Dial()
	dst := netip.AddrPortFrom(hosts[1].Addr(), 4000)
	req := make([]byte, 100)
	var lat []time.Duration
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Call(context.Background(), dst, req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	el := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/el.Seconds(), "rpc/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
