//go:build linux

package rawip_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
)

func BenchmarkZZHomaOnly(b *testing.B) {
	a, bb := pairB(b)
	client, server := hostB(b, a, "198.18.0.1"), hostB(b, bb, "198.18.0.2")
	echoOn(b, server, false)
	c, _ := client.Dial()
	dst := netip.AddrPortFrom(server.Addr(), 4000)
	req := make([]byte, 100)
	for range 100 {
		c.Call(context.Background(), dst, req)
	}
	b.ResetTimer()
	c0 := cpuTime(b)
	var wg sync.WaitGroup
	for range 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range b.N {
				if _, err := c.Call(context.Background(), dst, req); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N), "cpu-ns/rpc")
}

func BenchmarkZZTCPOnly(b *testing.B) {
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
	req, resp := make([]byte, 100), make([]byte, 100)
	b.ResetTimer()
	c0 := cpuTime(b)
	for range b.N {
		conn.Write(req)
		io.ReadFull(conn, resp)
	}
	b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N), "cpu-ns/rpc")
}
