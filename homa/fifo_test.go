package homa_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/spec/wire"
)

// TestFIFOGrants: with one short and several long requests in flight, the
// receiver sends FIFO grants (level num_priorities-2) to the oldest
// message, spaced by fifo_grant_increment at grant_fifo_fraction of the
// link (320 µs at 25 Gbit/s), and every RPC completes.
func TestFIFOGrants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		fifo := map[netip.Addr][]time.Time{} // FIFO grants by granting host
		n := memnet.New(memnet.Config{Rate: 1e9, Tap: func(ts time.Time, src, _ netip.Addr, _ uint8, pkt []byte) {
			if p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent}); err == nil &&
				p.Type() == wire.TypeGrant && p.Grant().Priority() == 6 {
				mu.Lock()
				fifo[src] = append(fifo[src], ts)
				mu.Unlock()
			}
		}})
		defer n.Close()
		var hosts []*homa.Host
		for i := range 5 {
			h, _ := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}))})
			defer h.Close()
			hosts = append(hosts, h)
		}
		echoServer(t, hosts[4], 4000)
		var wg sync.WaitGroup
		for i := range 4 {
			c, _ := hosts[i].Dial()
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Call(context.Background(), netip.AddrPortFrom(hosts[4].Addr(), 4000), make([]byte, 1000000)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		server := fifo[hosts[4].Addr()]
		if len(server) < 3 {
			t.Fatalf("the server sent %d FIFO grants, want several", len(server))
		}
		iv := 320 * time.Microsecond
		for h, ts := range fifo {
			for i := 1; i < len(ts); i++ {
				if d := ts[i].Sub(ts[i-1]); d < iv {
					t.Errorf("%v: FIFO grants %d and %d only %v apart, want ≥ %v", h, i-1, i, d, iv)
				}
			}
		}
		t.Logf("server sent %d FIFO grants", len(server))
	})
}
