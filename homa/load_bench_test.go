//go:build unix

package homa_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec/wire"
)

// BenchmarkLoadedServer measures a many-to-one load in real time over the
// in-memory network (no link rate or delay): 3 client hosts keep a fixed
// number of RPCs outstanding towards one server (closed loop), requests
// drawn from W4 (harness/workload), 100-byte responses, parameters for a
// 1 Gbit/s link (ParamsForLink: unsched_bytes 3000, max_incoming 40000) but
// without the pacer, and the 10 ms tick of the w4-half-load scenario. One
// iteration is one RPC. With many RPCs outstanding the server holds
// hundreds of messages waiting for grants and each client hundreds of
// requests waiting to be sent, so any per-packet work that grows with the
// number of RPCs a host holds shows as ns/pkt growing with "outstanding".
// Metrics: rpc/s; ns/pkt, wall time per packet the network delivered;
// cpu-ns/pkt, the process's CPU time (user and system) per packet, which
// the other loads on a shared machine disturb less; allocs/pkt, heap
// allocations of the whole process (hosts, network, callers) per packet;
// resend/rpc, RESENDs sent per RPC, split into keepalive/rpc, those the
// peer answered with BUSY (it had nothing to resend), and retransmit/rpc,
// DATA packets sent again because a RESEND asked for them; fail/rpc, RPCs
// that timed out; stall-max-ms, the longest time the process's goroutines
// were kept from running (internal/stall's probe: its 2 ms wake-up at
// least 5 ms late, 0 when none was): where the server's goroutines stand
// still for tens of ms, RPCs stay silent for resend_ticks (50 ms) and get
// RESENDs without loss, answered with BUSY, as HomaModule's would on a
// host whose application threads stood still.
//
// The open-load=N% runs start requests at Poisson arrivals instead
// (workload.Poisson), offering N% of the 1 Gbit/s link the parameters are
// for (about 400, 990 and 1590 RPC/s), below the 900-6000 RPC/s the closed
// loop completes here, so no queue builds beyond what the arrivals' bursts
// make: the loss-free loaded run. rpc/s is then the offered rate
// and ns/pkt mostly waiting; cpu-ns/pkt and allocs/pkt still count the
// work. RESENDs there are 0 at 20% and 50%; at 80% a burst of arrivals can
// keep a long request waiting for grants past resend_ticks (the protocol's
// RESEND again, answered with BUSY).
//
// Without loss, RESENDs here are the protocol's, not a fault (traced
// packet by packet in the simulator, where sim's TestLoadedNoResend pins
// the loss-free case to 0 RESENDs at 70% load on the virtual clock): the
// closed loop keeps more RPCs outstanding than the server completes in
// resend_ticks (5 ticks, 50 ms: about 200 RPCs at 4,000 RPC/s; by
// Little's law the mean RPC then waits outstanding/rate, 30-570 ms), so a
// request waiting for grants behind shorter ones (SRPT) is silent that
// long, and its client sends RESEND {0, -1} and hears BUSY every
// resend_interval, as HomaModule's timer does (homa_timer_check_rpc:
// a client whose request is sent up to its grant counts silent ticks;
// docs/homa-facts.md RTX-01 (b), RTX-07). And at 2000 outstanding
// granted bytes sent at priority 0 (the lowest-ranked active message)
// wait behind a higher-ranked message and unscheduled packets that fill
// the server's input alone; the server, which counts silent ticks for
// any RPC with granted bytes not yet received, asks for them again
// although nothing was lost (retransmit/rpc). They are the queue the
// benchmark builds on purpose, not a timer or pacing fault.
func BenchmarkLoadedServer(b *testing.B) {
	for _, outstanding := range []int{100, 500, 2000} {
		b.Run(fmt.Sprintf("outstanding=%d", outstanding), func(b *testing.B) {
			loadedServer(b, outstanding, 0)
		})
	}
	for _, load := range []float64{0.2, 0.5, 0.8} {
		b.Run(fmt.Sprintf("open-load=%.0f%%", 100*load), func(b *testing.B) {
			loadedServer(b, 0, load)
		})
	}
}

// loadedServer runs b.N RPCs: with outstanding > 0 in a closed loop that
// keeps that many outstanding, else in an open loop whose requests start
// at Poisson arrivals offering load (a fraction) of the 1 Gbit/s link the
// parameters are for (workload.Poisson), each in a goroutine of its own.
func loadedServer(b *testing.B, outstanding int, load float64) {
	const clients = 3
	homa.SetQueueChecks(false) // an O(n log n) check per packet
	defer homa.SetQueueChecks(true)
	dist, err := workload.Parse("w4")
	if err != nil {
		b.Fatal(err)
	}
	p := homa.ParamsForLink(1e9)
	p.LinkRate = 0
	p.Tick = 10 * time.Millisecond
	n := memnet.New(memnet.Config{})
	defer n.Close()
	var hosts []*homa.Host
	for i := range clients + 1 {
		h, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)})), Params: p})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		hosts = append(hosts, h)
	}
	server := hosts[clients]
	s, err := server.Listen(4000)
	if err != nil {
		b.Fatal(err)
	}
	response := make([]byte, 100)
	go func() {
		for {
			q, err := s.Receive(context.Background())
			if err != nil {
				return
			}
			q.Reply(response)
		}
	}()
	var socks []*homa.Socket
	for _, h := range hosts[:clients] {
		c, err := h.Dial()
		if err != nil {
			b.Fatal(err)
		}
		socks = append(socks, c)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	sizes := make([]int, b.N)
	for i := range sizes {
		sizes[i] = dist.Quantile(rng.Float64())
	}
	request := make([]byte, dist.Max())
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	jobs := make(chan int, b.N)
	for i := range b.N {
		jobs <- i
	}
	close(jobs)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   int
		errMsg error
	)
	b.ReportAllocs()
	b.ResetTimer()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	mon := stall.Start(stall.Config{}) // the probe only: this process's late wake-ups
	start, cpu0 := time.Now(), cpuTime(b)
	call := func(c *homa.Socket, i int) {
		if _, err := c.Call(context.Background(), dst, request[:sizes[i]]); err != nil {
			mu.Lock()
			errs++
			errMsg = err
			mu.Unlock()
		}
	}
	for w := range min(outstanding, b.N) {
		wg.Add(1)
		go func(c *homa.Socket) {
			defer wg.Done()
			for i := range jobs {
				call(c, i)
			}
		}(socks[w%clients])
	}
	if outstanding == 0 {
		arr, err := workload.Poisson(load, 1e9, dist, workload.HomaDataOverhead{})
		if err != nil {
			b.Fatal(err)
		}
		next := time.Now()
		for i := range jobs {
			next = next.Add(arr.Next(rng))
			time.Sleep(time.Until(next))
			wg.Add(1)
			go func() { defer wg.Done(); call(socks[i%clients], i) }()
		}
	}
	wg.Wait()
	el, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	mon.Stop()
	longest := time.Duration(0)
	for _, sp := range mon.Spans() {
		longest = max(longest, sp.Lost)
	}
	runtime.ReadMemStats(&ms1)
	if errs > 0 {
		// The baseline collapses into timeouts with thousands of RPCs
		// outstanding: count them rather than fail, so it can be compared.
		b.Logf("%d of %d RPCs failed, last: %v", errs, b.N, errMsg)
	}
	resends, busy, retx := 0, 0, 0
	for _, h := range hosts {
		st := h.Stats()
		resends += st.Sent[wire.TypeResend-wire.MinType]
		busy += st.Sent[wire.TypeBusy-wire.MinType]
		retx += st.Retransmitted
	}
	pkts := float64(max(1, n.Stats().Delivered))
	b.ReportMetric(float64(b.N)/el.Seconds(), "rpc/s")
	b.ReportMetric(float64(el.Nanoseconds())/pkts, "ns/pkt")
	b.ReportMetric(float64(cpu.Nanoseconds())/pkts, "cpu-ns/pkt")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/pkts, "allocs/pkt")
	b.ReportMetric(float64(resends)/float64(b.N), "resend/rpc")
	b.ReportMetric(float64(busy)/float64(b.N), "keepalive/rpc")
	b.ReportMetric(float64(retx)/float64(b.N), "retransmit/rpc")
	b.ReportMetric(float64(errs)/float64(b.N), "fail/rpc")
	b.ReportMetric(float64(longest)/1e6, "stall-max-ms")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
