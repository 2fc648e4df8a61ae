package homa_test

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// checkedNet returns a network whose every packet is fed to a spec checker
// with the linux profile (the tap sits on each sender's link).
func checkedNet(t *testing.T, n int, cfg memnet.Config, params homa.Params, rules string, faults ...homa.Fault) (*testNet, func() *spec.Report) {
	prof, _ := spec.LookupProfile("linux")
	sel, err := spec.Select(spec.Rules(), rules, 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	chk := spec.NewChecker("linux", prof.Params, sel)
	var mu sync.Mutex
	frame := 0
	cfg.Tap = func(ts time.Time, src, dst netip.Addr, prio uint8, pkt []byte) {
		mu.Lock()
		defer mu.Unlock()
		frame++
		b := append([]byte(nil), pkt...)
		e := spec.Event{Frame: frame, Time: ts, Src: src, Dst: dst, Priority: prio}
		p, err := wire.Decode(b, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			e.Err = err
		} else {
			e.Packet = p
			if p.Type() == wire.TypeData {
				e.Offset, e.Length = p.Data().Offset(), p.Data().DataLen()
			}
		}
		chk.Feed(&e)
	}
	tn := newTestNet(t, n, cfg, params, faults...)
	return tn, func() *spec.Report {
		mu.Lock()
		defer mu.Unlock()
		return chk.Finish()
	}
}

// runWorkload makes nc clients send rpcs requests each of random sizes up to
// maxLen to an echo server, and fails the test on any error.
func runWorkload(t *testing.T, tn *testNet, nc, rpcs, maxLen int, wantErr bool) int {
	server := tn.hosts[len(tn.hosts)-1]
	echoServer(t, server, 4000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for c := range nc {
		sock, _ := tn.hosts[c].Dial()
		for i := range rpcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(c), uint64(i)))
				req := payload(rng, 1+rng.IntN(maxLen))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := sock.Call(ctx, netip.AddrPortFrom(server.Addr(), 4000), req)
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					if !wantErr {
						t.Errorf("client %d rpc %d: %v", c, i, err)
					}
				}
			}()
		}
	}
	wg.Wait()
	return failed
}

// TestTrafficPassesChecker: the reference implementation's traffic (mixed
// sizes, 4 clients, one server, some contention) has no MUST violation of
// the linux profile.
func TestTrafficPassesChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tn, finish := checkedNet(t, 5, memnet.Config{Rate: 10e9, Delay: 5 * time.Microsecond}, homa.DefaultParams(), "")
		defer tn.close()
		runWorkload(t, tn, 4, 25, 300000, false)
		time.Sleep(50 * time.Millisecond) // NEED_ACK / ACK exchanges finish
		rep := finish()
		for _, v := range rep.Violations {
			if v.Level == spec.Must {
				t.Errorf("%v", v)
			}
		}
		for _, v := range rep.Violations {
			if v.Level == spec.Should {
				t.Logf("SHOULD: %v", v)
			}
		}
		checked := 0
		for _, rr := range rep.Rules {
			if rr.Checked > 0 {
				checked++
			}
		}
		t.Logf("%d events, %d RPCs, %d rules exercised", rep.Events, rep.RPCs, checked)
	})
}
