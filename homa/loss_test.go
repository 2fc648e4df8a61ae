package homa_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
)

// lossWorkload runs 8 clients x 25 RPCs of up to 200 KB through a lossy
// network and checks that every RPC completes with the right payload and
// no request executes twice.
func lossWorkload(t *testing.T, cfg memnet.Config) {
	synctest.Test(t, func(t *testing.T) {
		tn := newTestNet(t, 9, cfg, homa.DefaultParams())
		defer tn.close()
		if failed := runWorkload(t, tn, 8, 25, 200000, false); failed != 0 {
			t.Fatalf("%d RPCs failed", failed)
		}
		st := tn.hosts[8].Stats()
		if st.Delivered != 200 {
			t.Errorf("server executed %d requests for 200 RPCs (duplicates dropped: %d)", st.Delivered, st.Duplicates)
		}
		ns := tn.net.Stats()
		if ns.Lost+ns.Dropped == 0 {
			t.Errorf("no packet was lost: the test tests nothing (%+v)", ns)
		}
		var retx int
		for _, h := range tn.hosts {
			retx += h.Stats().Retransmitted
		}
		t.Logf("network %+v; retransmitted %d packets", ns, retx)
	})
}

// TestRandomLoss: 5% random loss in every direction.
func TestRandomLoss(t *testing.T) {
	lossWorkload(t, memnet.Config{Rate: 10e9, Delay: 5 * time.Microsecond, Loss: 0.05, Seed: 42})
}

// TestBurstLoss: every 200th packet starts a burst of 10 lost packets.
func TestBurstLoss(t *testing.T) {
	var mu sync.Mutex
	n, burst := 0, 0
	lossWorkload(t, memnet.Config{Rate: 10e9, Delay: 5 * time.Microsecond, Drop: func(src, dst netip.Addr, prio uint8, pkt []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n%200 == 0 {
			burst = 10
		}
		if burst > 0 {
			burst--
			return true
		}
		return false
	}})
}

// TestServerCrashTimeout: when the server host dies mid-RPC, the client
// aborts with ErrTimeout after timeout_ticks of silence, not before.
func TestServerCrashTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := homa.DefaultParams()
		tn := newTestNet(t, 2, memnet.Config{Rate: 10e9}, p)
		defer tn.close()
		srv, _ := tn.hosts[1].Listen(4000)
		go func() {
			q, err := srv.Receive(context.Background())
			if err == nil {
				_ = q // never answered: the server "computes" until it crashes
				time.Sleep(20 * time.Millisecond)
				tn.hosts[1].Close()
			}
		}()
		c, _ := tn.hosts[0].Dial()
		start := time.Now()
		_, err := c.Call(context.Background(), netip.AddrPortFrom(tn.hosts[1].Addr(), 4000), make([]byte, 5000))
		el := time.Since(start)
		if !errors.Is(err, homa.ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
		// Silence starts when the last BUSY arrives (≤ 20 ms + one RESEND
		// round); the abort comes timeout_ticks later.
		min := 20*time.Millisecond + time.Duration(p.TimeoutTicks-1)*p.Tick - time.Duration(p.ResendInterval)*p.Tick
		max := 20*time.Millisecond + time.Duration(p.TimeoutTicks+p.ResendInterval+1)*p.Tick
		if el < min || el > max {
			t.Errorf("timed out after %v, want between %v and %v", el, min, max)
		}
	})
}
