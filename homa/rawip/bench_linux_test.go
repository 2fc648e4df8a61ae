//go:build linux

package rawip_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// echoBlock is how many round trips of one transport run back to back
// before the other transport's turn.
const echoBlock = 100

// BenchmarkEcho100B compares 100-byte echo round trips between two network
// namespaces, paired: the reference implementation over raw IP sockets
// and Go's TCP (the baseline) in the same namespaces, in alternating
// blocks of 100 round trips, so that both see the same machine load.
// Each iteration is one round trip of each. Metrics: homa-rpc/s and
// tcp-rpc/s (round trips per second of time spent in that transport's
// blocks), homa/tcp (their ratio), and each one's p50 and p99 latency.
func BenchmarkEcho100B(b *testing.B) {
	a, bb := pairB(b)
	client, server := hostB(b, a, "198.18.0.1"), hostB(b, bb, "198.18.0.2")
	echoOn(b, server, false)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	req := make([]byte, 100)
	homaRT := func() error { _, err := c.Call(context.Background(), dst, req); return err }

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
	var conn net.Conn
	if err := a.Do(func() (err error) { conn, err = net.Dial("tcp4", "198.18.0.2:4000"); return err }); err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	resp := make([]byte, 100)
	tcpRT := func() error {
		if _, err := conn.Write(req); err != nil {
			return err
		}
		_, err := io.ReadFull(conn, resp)
		return err
	}

	type side struct {
		rt    func() error
		lat   []time.Duration
		spent time.Duration
	}
	sides := []*side{{rt: homaRT}, {rt: tcpRT}}

	for _, sd := range sides { // warm up: first packets, CUTOFFS, ARP
		for range 10 {
			if err := sd.rt(); err != nil {
				b.Fatal(err)
			}
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
			t0 := time.Now()
			for range k {
				t := time.Now()
				if err := sd.rt(); err != nil {
					b.Fatal(err)
				}
				sd.lat = append(sd.lat, time.Since(t))
			}
			sd.spent += time.Since(t0)
		}
	}
	for i, name := range []string{"homa", "tcp"} {
		sd := sides[i]
		slices.Sort(sd.lat)
		b.ReportMetric(float64(len(sd.lat))/sd.spent.Seconds(), name+"-rpc/s")
		b.ReportMetric(float64(sd.lat[len(sd.lat)/2].Nanoseconds())/1e3, name+"-p50-µs")
		b.ReportMetric(float64(sd.lat[len(sd.lat)*99/100].Nanoseconds())/1e3, name+"-p99-µs")
	}
	b.ReportMetric((float64(len(sides[0].lat))/sides[0].spent.Seconds())/(float64(len(sides[1].lat))/sides[1].spent.Seconds()), "homa/tcp")
}
