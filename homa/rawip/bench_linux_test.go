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

// measure runs n sequential round trips with rt and reports RPC/s and
// latency percentiles.
func measure(b *testing.B, rt func() error) {
	b.Helper()
	var lat []time.Duration
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		if err := rt(); err != nil {
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

// BenchmarkEcho100B compares 100-byte echo round trips between two network
// namespaces: the reference implementation over raw IP sockets, and Go's
// TCP in the same namespaces (the baseline, measured in the same run).
func BenchmarkEcho100B(b *testing.B) {
	b.Run("homa-rawip", func(b *testing.B) {
		a, bb := pairB(b)
		client, server := hostB(b, a, "198.18.0.1"), hostB(b, bb, "198.18.0.2")
		s, _ := server.Listen(4000)
		go func() {
			for {
				q, err := s.Receive(context.Background())
				if err != nil {
					return
				}
				q.Reply(q.Payload())
			}
		}()
		c, _ := client.Dial()
		dst := netip.AddrPortFrom(server.Addr(), 4000)
		req := make([]byte, 100)
		measure(b, func() error { _, err := c.Call(context.Background(), dst, req); return err })
	})
	b.Run("tcp", func(b *testing.B) {
		a, bb := pairB(b)
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
		req, resp := make([]byte, 100), make([]byte, 100)
		measure(b, func() error {
			if _, err := conn.Write(req); err != nil {
				return err
			}
			_, err := io.ReadFull(conn, resp)
			return err
		})
	})
}
