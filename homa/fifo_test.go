package homa_test

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/conformance/tester"
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
		hosts := fourLongRequests(t, n, homa.Params{})
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

// TestFIFOGrantOnlyAfterSRPTGrant: a FIFO grant follows an SRPT grant
// (homa_grant_check_fifo), never comes on its own. A tester sends the
// first packet of five long requests 1 ms apart (each arrival runs the
// grant decision) and never sends the granted bytes: after the first
// request's GRANT and FIFO grant the incoming budget stays full, so no
// further GRANT of either kind may follow. (Before, a FIFO grant went out
// on every arrival once the FIFO interval had passed, keeping the budget
// full and SRPT grants starved for good.)
func TestFIFOGrantOnlyAfterSRPTGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iut := iutAddr
		p := homa.DefaultParams()
		p.UnschedBytes, p.MaxIncoming = 1424, 5*1424
		p.FIFOGrantIncrement, p.GrantFIFOFraction, p.LinkRate = 10000, 500, 1e9 // a FIFO grant may follow every 160 µs
		h, peer := hostWithPeer(t, p, 0)
		if _, err := h.Listen(4000); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i := range 5 {
			c := wire.CommonFields{Sport: uint16(33000 + i), Dport: 4000, SenderID: uint64(100 + 2*i)}
			if err := peer.Send(iut, 4, &wire.DataFields{Common: c, MessageLength: 1000000, Incoming: 1424,
				SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 1424)}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // virtual time: several FIFO intervals
		}
		var srpt, fifo []string
		for {
			g, err := peer.Expect(ctx, tester.Match{Type: wire.TypeGrant, From: iut}, time.Millisecond)
			if err != nil {
				break
			}
			if g.Pkt.Grant().Priority() == 6 {
				fifo = append(fifo, g.String())
			} else {
				srpt = append(srpt, g.String())
			}
		}
		if len(srpt) != 1 || len(fifo) != 1 {
			t.Errorf("%d SRPT grants %v and %d FIFO grants %v; want one of each (for the first request only)", len(srpt), srpt, len(fifo), fifo)
		}
	})
}

// TestFIFOGrantsOneLevel: with a single priority level FIFO grants still
// go, at level 0 (homa_high_priority; homa_grant_check_fifo has no
// condition on the number of levels): four 1 MB requests, and the server's
// GRANTs that raise a message's offset by exactly fifo_grant_increment
// (50000) are FIFO grants; with the increment 0 there are none (before,
// there were none below two levels either way).
func TestFIFOGrantsOneLevel(t *testing.T) {
	fifoGrants := func(increment int) int {
		var n int
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			server := netip.AddrFrom4([4]byte{198, 18, 0, 5})
			last := map[netip.Addr]map[uint64]uint32{} // GRANT offset by client and RPC id
			net := memnet.New(memnet.Config{Rate: 1e9, Tap: func(_ time.Time, src, dst netip.Addr, _ uint8, pkt []byte) {
				p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
				if err != nil || p.Type() != wire.TypeGrant || src != server {
					return
				}
				g := p.Grant()
				if g.Priority() != 0 {
					t.Errorf("GRANT at level %d with one level", g.Priority())
				}
				mu.Lock()
				defer mu.Unlock()
				if last[dst] == nil {
					last[dst] = map[uint64]uint32{}
				}
				id := g.SenderID()
				if prev, ok := last[dst][id]; ok && g.Offset() == prev+50000 {
					n++
				}
				last[dst][id] = max(last[dst][id], g.Offset())
			}})
			defer net.Close()
			p := homa.DefaultParams()
			p.NumPriorities, p.MaxSchedPrio, p.FIFOGrantIncrement = 1, 0, increment
			p.UnschedCutoffs = [8]uint32{1000000}
			fourLongRequests(t, net, p)
		})
		return n
	}
	if on, off := fifoGrants(50000), fifoGrants(0); on < 3 || off != 0 {
		t.Fatalf("GRANTs adding exactly 50000 bytes: %d with fifo_grant_increment 50000, %d with 0; want several and none", on, off)
	}
}

// fourLongRequests starts hosts 198.18.0.1-5 on n with parameters p (the
// defaults if zero), an echo server on the fifth, and has each of the
// other four send it a 1 MB request; it returns once all four RPCs ended
// (each failure is a test error) and returns the hosts, which close when
// the test ends.
func fourLongRequests(t *testing.T, n *memnet.Network, p homa.Params) []*homa.Host {
	t.Helper()
	var hosts []*homa.Host
	for i := range 5 {
		h, err := homa.New(homa.Config{Params: p, Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
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
	return hosts
}
