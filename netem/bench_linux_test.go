package netem

import (
	"context"
	"fmt"
	"slices"
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
	// fps is the delivered frames per second, over the receive stamps of
	// the first and last frame received.
	fps float64
	// offered counts the frames the sender handed to its interface
	// (ENOBUFS refusals included: the switch port's side of the veth
	// dropped those, and the switch counts them as DropIngress);
	// received the test frames the receiving host's socket read, rxDrops
	// those its ring had no room for.
	offered, received int
	rxDrops           uint64
	// cpu is the CPU time the whole process used (every thread: sender,
	// forwarding, receiver) from the first frame sent to the last
	// received (plus the receiver's final idle wait, the same for both
	// fabrics): the machine's cost of forwarding, which a load that
	// shares the CPUs disturbs less than the rate.
	cpu      time.Duration
	p50, p99 time.Duration
	// burst is the time from the first frame received to the last;
	// fwdCPU the CPU time the user-space switch's forwarding thread ran
	// meanwhile (from the start of sending to the last frame received;
	// 0 for the bridge).
	burst, fwdCPU time.Duration
}

// processCPU returns the CPU time the process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runs numbers the measurements of a test binary: frames carry their
// measurement's number (seq>>20) and kind (bit 19: a probe), so that a
// frame of an earlier measurement that arrives late is not counted.
var runs uint32

// measureForwarding sends n frames of size bytes from a as fast as
// sendmmsg allows and counts them at b, then sends 200 probes 1 ms apart
// for the one-way latency. fwdCPU (nil for the bridge) reads the
// forwarding thread's CPU time.
func measureForwarding(tb testing.TB, tp *testTopo, a, b packetSock, n, size int, fwdCPU func() time.Duration) fwdResult {
	runs++
	tag := runs << 20
	b.kernelDrops() // reset
	done := make(chan []rxFrame)
	sent := make(chan struct{})
	go func() {
		done <- receiveUntil(b, n, sent, scaled(300*time.Millisecond), false, func(seq uint32) bool { return seq&^(1<<20-1) == tag })
	}()
	tx := newTxBatch(64)
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = testFrame(tp.macAHW, tp.macBHW, 0, tag|uint32(i), size)
	}
	var refused int
	fail := func(_ int, err error) {
		if err == unix.ENOBUFS {
			refused++
		}
	}
	offered := 0
	var fwd0 time.Duration
	if fwdCPU != nil {
		fwd0 = fwdCPU()
	}
	cpu0 := processCPU(tb)
	for offered < n {
		k := min(64, n-offered)
		for i := range k {
			tx.add(frames[i])
		}
		refused = 0
		s := tx.send(a.fd, fail) + refused
		if s == 0 {
			fds := []unix.PollFd{{Fd: int32(a.fd), Events: unix.POLLOUT}}
			unix.Poll(fds, 1)
		}
		offered += s
	}
	close(sent)
	got := <-done
	r := fwdResult{offered: n, received: len(got), rxDrops: b.kernelDrops(), cpu: processCPU(tb) - cpu0}
	if fwdCPU != nil {
		r.fwdCPU = fwdCPU() - fwd0
	}
	if len(got) > 1 {
		r.burst = time.Duration(got[len(got)-1].rx - got[0].rx)
		r.fps = float64(len(got)-1) / r.burst.Seconds()
	}
	const probes = 200
	probe := tag | 1<<19
	sent = make(chan struct{})
	go func() {
		done <- receiveUntil(b, probes, sent, scaled(300*time.Millisecond), false, func(seq uint32) bool { return seq&^(1<<19-1) == probe })
	}()
	tp.sendProbes(tb, a, probes, size, 0, probe)
	close(sent)
	var lat []time.Duration
	for _, f := range <-done {
		lat = append(lat, f.oneWay())
	}
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return r
}

// BenchmarkSwitch compares the user-space switch (no impairments) with the
// kernel bridge in the same topology, paired: each iteration forwards
// 20,000 frames of 100 or 1500 bytes through each fabric in turn (the
// order alternating), as fast as the sender can send them. Metrics:
// switch-fps and bridge-fps, delivered frames per second; switch/bridge,
// their ratio; switch-delivered and bridge-delivered, the fraction of the
// offered frames the receiving host read; switch-accounted, the fraction
// of offered frames either delivered or counted as a drop with a reason
// (by the switch, netem.Stats.Drops, or by the receiving socket, whose
// ring drops are rx-drops): 1 when the switch loses nothing silently;
// switch-drops, the switch's drops (their reasons are logged);
// fwd-thread-ns/frame, the switch's forwarding thread's CPU time per
// delivered frame, and fwd-thread-busy, that CPU time over the bursts'
// duration (near 1: the thread was the bottleneck, on a CPU of its own;
// well below 1 with drops: it waited for a CPU); and the one-way latency p50/p99 in µs of 200 probes sent 1 ms apart. With
// -benchtime Nx each run makes N pairs: switch/bridge is the median of the
// pairs' ratios (switch/bridge-min the lowest), so one pair that another
// job on the machine interrupted does not decide the run; the rates and
// latencies are the last pair's, the fractions and drops summed over all.
// Run with -count N for repetitions.
func BenchmarkSwitch(b *testing.B) {
	tp := newTestTopo(b)
	a, rb := hostSock(b, tp.nsA, tp.ifA), hostSock(b, tp.nsB, tp.ifB)
	for _, size := range []int{100, 1500} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			const n = 20000
			var br, sw fwdResult
			var drops DropCounts
			var ratios []float64
			// Summed over the pairs: offered, received, rxDrops of each
			// fabric, and the switch's drops.
			var swOff, swRecv, brOff, brRecv int
			var swRx, brRx, swDrops uint64
			var fwdCPU, swBurst time.Duration
			bridge := func() {
				stop := tp.bridgeFabric(b)
				br = measureForwarding(b, tp, a, rb, n, size, nil)
				stop()
			}
			user := func() {
				s, err := StartSwitch(context.Background(), tp.nsS, SwitchConfig{Ports: []Port{{Name: tp.swA}, {Name: tp.swB}}})
				if err != nil {
					b.Fatal(err)
				}
				sw = measureForwarding(b, tp, a, rb, n, size, func() time.Duration { return s.Stats().ForwardingCPU })
				s.Close()
				drops = s.Stats().Drops
				swDrops += drops.Total()
			}
			i := 0
			for b.Loop() {
				if i%2 == 0 {
					bridge()
					user()
				} else {
					user()
					bridge()
				}
				i++
				ratios = append(ratios, sw.fps/br.fps)
				swOff, swRecv, swRx = swOff+sw.offered, swRecv+sw.received, swRx+sw.rxDrops
				brOff, brRecv, brRx = brOff+br.offered, brRecv+br.received, brRx+br.rxDrops
				fwdCPU, swBurst = fwdCPU+sw.fwdCPU, swBurst+sw.burst
			}
			if drops.Total() > 0 {
				b.Logf("switch drops by reason (last pair): %v", drops.ByReason())
			}
			slices.Sort(ratios)
			b.ReportMetric(sw.fps, "switch-fps")
			b.ReportMetric(br.fps, "bridge-fps")
			b.ReportMetric(ratios[len(ratios)/2], "switch/bridge")
			b.ReportMetric(ratios[0], "switch/bridge-min")
			b.ReportMetric(float64(swRecv)/float64(swOff), "switch-delivered")
			b.ReportMetric(float64(brRecv)/float64(brOff), "bridge-delivered")
			b.ReportMetric(float64(uint64(swRecv)+swRx+swDrops)/float64(swOff), "switch-accounted")
			b.ReportMetric(float64(swDrops), "switch-drops")
			b.ReportMetric(float64(sw.cpu.Nanoseconds())/float64(sw.offered), "switch-cpu-ns/frame")
			b.ReportMetric(float64(br.cpu.Nanoseconds())/float64(br.offered), "bridge-cpu-ns/frame")
			b.ReportMetric(float64(fwdCPU.Nanoseconds())/float64(swRecv), "fwd-thread-ns/frame")
			b.ReportMetric(fwdCPU.Seconds()/swBurst.Seconds(), "fwd-thread-busy")
			b.ReportMetric(float64(swRx+brRx), "rx-drops")
			b.ReportMetric(float64(sw.p50.Nanoseconds())/1e3, "switch-p50-µs")
			b.ReportMetric(float64(sw.p99.Nanoseconds())/1e3, "switch-p99-µs")
			b.ReportMetric(float64(br.p50.Nanoseconds())/1e3, "bridge-p50-µs")
			b.ReportMetric(float64(br.p99.Nanoseconds())/1e3, "bridge-p99-µs")
		})
	}
}
