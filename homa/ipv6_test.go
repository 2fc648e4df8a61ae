package homa_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/spec/wire"
)

// TestIPv6: hosts with IPv6 addresses exchange RPCs of 1 B to 1,000,000 B;
// full DATA packets carry 1404 bytes (MTU 1500 - 40 - 56).
func TestIPv6(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var maxData int
		n := memnet.New(memnet.Config{Rate: 10e9, Delay: 2 * time.Microsecond, Loss: 0.02, Seed: 9,
			Tap: func(_ time.Time, _, _ netip.Addr, _ uint8, pkt []byte) {
				if p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent}); err == nil && p.Type() == wire.TypeData {
					maxData = max(maxData, p.Data().DataLen())
				}
			}})
		defer n.Close()
		var hosts []*homa.Host
		for _, a := range []string{"fd00::1", "fd00::2"} {
			h, err := homa.New(homa.Config{Transport: n.Attach(netip.MustParseAddr(a))})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			hosts = append(hosts, h)
		}
		echoServer(t, hosts[1], 4000)
		c, _ := hosts[0].Dial()
		rng := rand.New(rand.NewPCG(3, 4))
		for _, size := range []int{1, 1404, 1405, 40001, 1000000} {
			req := payload(rng, size)
			resp, err := c.Call(context.Background(), netip.AddrPortFrom(hosts[1].Addr(), 4000), req)
			if err != nil || !bytes.Equal(resp, reverse(req)) {
				t.Fatalf("%d bytes: err %v", size, err)
			}
		}
		if maxData != wire.MaxSegDataIPv6 {
			t.Errorf("largest DATA payload %d bytes, want %d over IPv6", maxData, wire.MaxSegDataIPv6)
		}
	})
}

// TestSlowLinkParams: on a 100 Mbit/s link with ParamsForLink (paced
// sender, unsched_bytes one packet, max_incoming eight), RPCs of 1 B to
// 200 KB from two clients complete intact.
func TestSlowLinkParams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTestNet(t, 3, memnet.Config{Rate: 100e6, Delay: 10 * time.Microsecond}, homa.ParamsForLink(100e6))
		defer tn.close()
		echoServer(t, tn.hosts[2], 4000)
		rng := rand.New(rand.NewPCG(7, 7))
		done := make(chan error, 8)
		for c := range 2 {
			sock, _ := tn.hosts[c].Dial()
			for _, size := range []int{1, 1500, 60000, 200000} {
				req := payload(rng, size)
				go func() {
					resp, err := sock.Call(context.Background(), netip.AddrPortFrom(tn.hosts[2].Addr(), 4000), req)
					if err == nil && !bytes.Equal(resp, reverse(req)) {
						err = context.Canceled
					}
					done <- err
				}()
			}
		}
		for range 8 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}
