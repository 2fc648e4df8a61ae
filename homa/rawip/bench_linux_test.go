//go:build linux

package rawip_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// echoBlock is how many round trips of one transport run back to back
// before the next one's turn.
const echoBlock = 100

// BenchmarkEcho100B compares 100-byte echo round trips between two network
// namespaces, paired: the reference implementation over raw IP sockets
// and Go's TCP (the baseline) in the same namespaces, in alternating
// blocks of 100 round trips per caller, so that both see the same machine
// load. outstanding is the number of callers, each with one round trip
// outstanding at a time: Homa's share one client socket, TCP's have a
// connection each (served by a goroutine each, as Go servers do). With 1
// the figure is the latency of one round trip; with 16 it is a rate, in
// which Homa's batches (one sendmmsg for the packets one input produced,
// one recvmmsg for up to 32 arrivals) can pay off. Each iteration is one
// round trip of each transport. Metrics: homa-rpc/s and tcp-rpc/s (round
// trips per second of time spent in that transport's blocks), homa/tcp
// (their ratio), each one's p50 and p99 latency, homa-cpu-ns/rpc and
// tcp-cpu-ns/rpc (the process's CPU time, user and system, in that
// transport's blocks per round trip: both ends and the kernel's work on
// their behalf, which other loads on a shared machine disturb less than
// wall time) and homa/tcp-cpu, TCP's CPU time over Homa's (above 1 when
// Homa needs less), and homa-fail/rpc and tcp-fail/rpc, the round trips
// that failed (counted, not fatal: a Homa RPC silent for timeout_ticks,
// 100 ms at the default 1 ms tick, ends with ErrTimeout, as in HomaModule,
// and on the loaded 2-core VM 3 runs in 24 saw one such stall; rates
// count the round trips that completed).
//
// The server is a Receive loop, as a thread blocked in recvmsg on
// HomaModule; like the callers, it reads the socket itself while it
// waits (homa.PullTransport: no goroutine handoff at either end, the
// same system calls and wake-ups per round trip as TCP). One Receive loop
// is no handicap against TCP's goroutine per connection: 16 loops at
// outstanding=16 gave the same CPU and rate (10 alternated runs, before
// the leader/follower path). Waiting goroutines busy-poll for poll_usecs
// before they sleep (homa.Params.PollUsecs: 0, no polling, in
// homa.DefaultParams; HomaModule's is 50 µs; set it with -poll-usecs).
func BenchmarkEcho100B(b *testing.B) {
	for _, outstanding := range []int{1, 16} {
		b.Run(fmt.Sprintf("outstanding=%d", outstanding), func(b *testing.B) { echo100B(b, outstanding) })
	}
}

func echo100B(b *testing.B, outstanding int) {
	a, bb := pairB(b)
	client, server := hostB(b, a, "198.18.0.1"), hostB(b, bb, "198.18.0.2")
	echoOn(b, server, false)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	homaRT := func(int) func() error {
		req := make([]byte, 100)
		return func() error { _, err := c.Call(context.Background(), dst, req); return err }
	}

	var ln net.Listener
	if err := bb.Do(func() (err error) { ln, err = net.Listen("tcp4", "198.18.0.2:4000"); return err }); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 100)
				for {
					if _, err := io.ReadFull(conn, buf); err != nil {
						return
					}
					conn.Write(buf)
				}
			}()
		}
	}()
	conns := make([]net.Conn, outstanding)
	for i := range conns {
		if err := a.Do(func() (err error) { conns[i], err = net.Dial("tcp4", "198.18.0.2:4000"); return err }); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}
	tcpRT := func(i int) func() error {
		req, resp := make([]byte, 100), make([]byte, 100)
		return func() error {
			if _, err := conns[i].Write(req); err != nil {
				return err
			}
			_, err := io.ReadFull(conns[i], resp)
			return err
		}
	}

	type side struct {
		rts   []func() error // one per caller
		lat   [][]time.Duration
		spent time.Duration
		cpu   time.Duration // the process's CPU time in this side's blocks
		fails []int         // round trips that failed, per caller
		err   error         // the last failure
	}
	sides := []*side{{}, {}}
	for i, mk := range []func(int) func() error{homaRT, tcpRT} {
		for w := range outstanding {
			sides[i].rts = append(sides[i].rts, mk(w))
		}
		sides[i].lat = make([][]time.Duration, outstanding)
		sides[i].fails = make([]int, outstanding)
	}
	// block runs k round trips on each of sd's callers at once.
	block := func(sd *side, k int) {
		var wg sync.WaitGroup
		errs := make([]error, outstanding)
		failsBefore := slices.Clone(sd.fails)
		t0, c0 := time.Now(), cpuTime(b)
		for w, rt := range sd.rts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range k {
					t := time.Now()
					if err := rt(); err != nil {
						errs[w] = err
						sd.fails[w]++
						continue
					}
					sd.lat[w] = append(sd.lat[w], time.Since(t))
				}
			}()
		}
		wg.Wait()
		sd.spent += time.Since(t0)
		sd.cpu += cpuTime(b) - c0
		for w, err := range errs {
			if err == nil {
				continue
			}
			sd.err = err
			if sd.fails[w]-failsBefore[w] == k {
				b.Fatal(err) // every round trip failed: a broken setup, not a stall
			}
		}
	}
	for _, sd := range sides { // warm up: first packets, CUTOFFS, ARP
		block(sd, 10)
		sd.spent, sd.cpu = 0, 0
		for w := range sd.lat {
			sd.lat[w] = sd.lat[w][:0]
			sd.fails[w] = 0
		}
	}
	b.ResetTimer()
	for done := 0; done < b.N; done += echoBlock {
		k := min(echoBlock, b.N-done)
		for i := range sides {
			sd := sides[i]
			if (done/echoBlock)%2 == 1 {
				sd = sides[1-i] // alternate which goes first
			}
			block(sd, k)
		}
	}
	rate := func(sd *side) float64 { return float64(len(slices.Concat(sd.lat...))) / sd.spent.Seconds() }
	for i, name := range []string{"homa", "tcp"} {
		if n := sumInts(sides[i].fails); n > 0 {
			b.Logf("%s: %d of %d round trips failed, last: %v", name, n, b.N*outstanding, sides[i].err)
		}
		b.ReportMetric(float64(sumInts(sides[i].fails))/float64(b.N*outstanding), name+"-fail/rpc")
		lat := slices.Concat(sides[i].lat...)
		slices.Sort(lat)
		b.ReportMetric(rate(sides[i]), name+"-rpc/s")
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, name+"-p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, name+"-p99-µs")
		b.ReportMetric(float64(sides[i].cpu.Nanoseconds())/float64(b.N*outstanding), name+"-cpu-ns/rpc")
	}
	b.ReportMetric(rate(sides[0])/rate(sides[1]), "homa/tcp")
	b.ReportMetric(float64(sides[1].cpu)/float64(sides[0].cpu), "homa/tcp-cpu")
}

// sumInts returns the sum of xs.
func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
