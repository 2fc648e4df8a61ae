package netem

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fabric is what forwards between the switch namespace's two ports during
// a benchmark: the kernel bridge or the user-space switch.
type fabric struct {
	name  string
	start func(b *testing.B) (stop func())
}

// bridgeFabric enslaves both switch ports to a kernel bridge.
func (tp *testTopo) bridgeFabric(b *testing.B) func() {
	h, err := netlink.NewHandleAt(tp.nsS)
	if err != nil {
		b.Fatal(err)
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: tp.swA + "br"}}
	b.Cleanup(func() { _ = h.LinkDel(br); h.Close() })
	if err := h.LinkAdd(br); err != nil {
		b.Fatal(err)
	}
	if err := h.LinkSetUp(br); err != nil {
		b.Fatal(err)
	}
	var ports []netlink.Link
	for _, n := range []string{tp.swA, tp.swB} {
		l, err := h.LinkByName(n)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.LinkSetMaster(l, br); err != nil {
			b.Fatal(err)
		}
		ports = append(ports, l)
	}
	return func() {
		for _, l := range ports {
			_ = h.LinkSetNoMaster(l)
		}
		_ = h.LinkDel(br)
	}
}

// fwdResult is one forwarding measurement.
type fwdResult struct {
	pps      float64
	sent     int
	received int
	p50, p99 time.Duration
}

// measureForwarding sends n frames of size bytes from a as fast as
// sendmmsg allows and counts them at b (rate over the receive stamps of the
// first and last), then sends 200 probes 1 ms apart for the one-way
// latency.
func measureForwarding(tb testing.TB, tp *testTopo, a, b packetSock, n, size int) fwdResult {
	done := make(chan []rxFrame)
	go func() { done <- receive(b, n, scaled(300*time.Millisecond), false) }()
	tx := newTxBatch(64)
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = testFrame(tp.macAHW, tp.macBHW, 0, uint32(i), size)
	}
	for sent := 0; sent < n; {
		k := min(64, n-sent)
		for i := range k {
			tx.add(frames[i])
		}
		s, _, _ := tx.send(a.fd)
		if s == 0 {
			fds := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLOUT}}
			unix.Poll(fds, 1)
		}
		sent += s
	}
	got := <-done
	r := fwdResult{sent: n, received: len(got)}
	if len(got) > 1 {
		r.pps = float64(len(got)-1) / (float64(got[len(got)-1].rx-got[0].rx) / 1e9)
	}
	const probes = 200
	go func() { done <- receive(b, probes, scaled(300*time.Millisecond), false) }()
	tp.sendProbes(tb, a, probes, size, 0, 0)
	var lat []time.Duration
	for _, f := range <-done {
		lat = append(lat, f.oneWay())
	}
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return r
}

// BenchmarkSwitch compares the user-space switch (no impairments) with the
// kernel bridge in the same topology: forwarding rate in packets/s for
// 100-byte and 1500-byte frames, and added one-way latency p50/p99 (sender
// clock to kernel receive stamp). Each iteration forwards 20000 frames
// through each fabric. Metrics: switch-pps, bridge-pps, switch/bridge (the
// ratio of the rates), and the latencies in µs.
func BenchmarkSwitch(b *testing.B) {
	tp := newTestTopo(b)
	a, rb := hostSock(b, tp.nsA, tp.ifA), hostSock(b, tp.nsB, tp.ifB)
	for _, size := range []int{100, 1500} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			const n = 20000
			var br, sw fwdResult
			var swDrops uint64
			for b.Loop() {
				stop := tp.bridgeFabric(b)
				br = measureForwarding(b, tp, a, rb, n, size)
				stop()
				s, err := StartSwitch(context.Background(), tp.nsS, SwitchConfig{Ports: []Port{{Name: tp.swA}, {Name: tp.swB}}})
				if err != nil {
					b.Fatal(err)
				}
				sw = measureForwarding(b, tp, a, rb, n, size)
				s.Close()
				swDrops = s.Stats().Ports[0].RxKernelDrops
			}
			b.ReportMetric(sw.pps, "switch-pps")
			b.ReportMetric(br.pps, "bridge-pps")
			b.ReportMetric(sw.pps/br.pps, "switch/bridge")
			b.ReportMetric(float64(sw.received)/float64(sw.sent), "switch-delivered")
			b.ReportMetric(float64(br.received)/float64(br.sent), "bridge-delivered")
			b.ReportMetric(float64(swDrops), "switch-rx-kernel-drops")
			b.ReportMetric(float64(sw.p50.Nanoseconds())/1e3, "switch-p50-µs")
			b.ReportMetric(float64(sw.p99.Nanoseconds())/1e3, "switch-p99-µs")
			b.ReportMetric(float64(br.p50.Nanoseconds())/1e3, "bridge-p50-µs")
			b.ReportMetric(float64(br.p99.Nanoseconds())/1e3, "bridge-p99-µs")
		})
	}
}
