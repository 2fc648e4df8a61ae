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
// with the linux profile. The tap sees each packet as its sender sends it
// (see memnet.Config.Tap).
func checkedNet(t *testing.T, n int, cfg memnet.Config, params homa.Params, rules string, faults ...homa.Fault) (*testNet, func() *spec.Report) {
	prof, _ := spec.LookupProfile("linux")
	sel, err := spec.Select(spec.Rules(), rules, 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	sp := prof.Params
	sp.ZeroedHeaders = 1 // the reference zeroes unused header bytes (its agent's hello says so)
	chk := spec.NewChecker("linux", sp, sel)
	var mu sync.Mutex
	frame := 0
	also := cfg.Tap // the test's own tap, if any, sees every packet too
	cfg.Tap = func(ts time.Time, src, dst netip.Addr, prio uint8, pkt []byte) {
		if also != nil {
			also(ts, src, dst, prio, pkt)
		}
		mu.Lock()
		defer mu.Unlock()
		frame++
		b := append([]byte(nil), pkt...)
		e := spec.DecodeEvent(ts, src, dst, prio, b, wire.VersionCurrent)
		e.Frame = frame
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
		// 100 Gbit/s keeps switch queues well below resend_ticks, so no
		// RESEND is due and a capture on the senders' links is exact.
		tn, finish := checkedNet(t, 5, memnet.Config{Rate: 100e9, Delay: 5 * time.Microsecond}, homa.DefaultParams(), "")
		defer tn.close()
		runWorkload(t, tn, 4, 10, 200000, false)
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

// TestLossyTrafficPassesChecker: with 3% loss the recovery traffic
// (RESEND, BUSY, retransmissions, RPC_UNKNOWN restarts) has no MUST
// violation either. The tap sits before the loss, so the checker sees
// packets that never arrived; the rules must not mistake that for
// misbehaviour.
func TestLossyTrafficPassesChecker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The tap sits before the loss (a capture on the senders' links),
		// so the checker sees packets that never arrived. Rules that judge
		// what a host had received (RESEND-001: its silence; GRANT-004:
		// its complete messages; GRANT-008 and CUTOFF-001: the GRANTs and
		// CUTOFFS that reached the sender; ACK-003: the ACK that reached
		// the server; RESEND-007: the RPC_UNKNOWN that reached the client)
		// need a capture after the loss, and are left out here.
		rules := "HOMA-WIRE-*,HOMA-ID-*,HOMA-UNSCHED-*,HOMA-PRIO-*,HOMA-CUTOFF-002,HOMA-ACK-001,HOMA-ACK-002,HOMA-ACK-004," +
			"HOMA-GRANT-001,HOMA-GRANT-002,HOMA-GRANT-003,HOMA-GRANT-005,HOMA-GRANT-007," +
			"HOMA-RESEND-002,HOMA-RESEND-003,HOMA-RESEND-004,HOMA-RESEND-005,HOMA-RESEND-006"
		tn, finish := checkedNet(t, 5, memnet.Config{Rate: 10e9, Delay: 5 * time.Microsecond, Loss: 0.03, Seed: 7}, homa.DefaultParams(), rules)
		defer tn.close()
		runWorkload(t, tn, 4, 25, 300000, false)
		time.Sleep(50 * time.Millisecond)
		rep := finish()
		for _, v := range rep.Violations {
			if v.Level == spec.Must {
				t.Errorf("%v", v)
			} else {
				t.Logf("SHOULD: %v", v)
			}
		}
		var resends int
		for _, rr := range rep.Rules {
			if rr.ID == "HOMA-RESEND-003" {
				resends = rr.Checked
			}
		}
		if resends == 0 {
			t.Error("no retransmission was checked: the loss did not exercise recovery")
		}
	})
}

// TestGrantLevelsFollowRank: three clients send requests of 400000,
// 700000 and 1000000 bytes at once; the server grants all three and gives
// each GRANT the level homa_grant_priority gives its rank,
// min(max_sched_prio, n-1) - rank: HOMA-GRANT-011 (both its ceiling and
// its floor) and HOMA-GRANT-015 find nothing, and the best of three
// messages gets level 2 (not every GRANT at one level).
func TestGrantLevelsFollowRank(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		levels := uint16(0)
		cfg := memnet.Config{Rate: 10e9, Delay: 5 * time.Microsecond}
		cfg.Tap = func(_ time.Time, _, _ netip.Addr, _ uint8, pkt []byte) {
			p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
			if err == nil && p.Type() == wire.TypeGrant {
				mu.Lock()
				levels |= 1 << (p.Grant().Priority() & 15)
				mu.Unlock()
			}
		}
		tn, finish := checkedNet(t, 4, cfg, homa.DefaultParams(), "HOMA-GRANT-011,HOMA-GRANT-015")
		defer tn.close()
		server := tn.hosts[3]
		echoServer(t, server, 4000)
		var wg sync.WaitGroup
		for c, n := range []int{400000, 700000, 1000000} {
			sock, _ := tn.hosts[c].Dial()
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := sock.Call(ctx, netip.AddrPortFrom(server.Addr(), 4000), make([]byte, n)); err != nil {
					t.Errorf("client %d: %v", c, err)
				}
			})
		}
		wg.Wait()
		rep := finish()
		for _, v := range rep.Violations {
			t.Errorf("%v", v)
		}
		for _, rr := range rep.Rules {
			if rr.Checked == 0 {
				t.Errorf("%s never checked", rr.ID)
			}
		}
		if levels&(1<<2) == 0 {
			t.Errorf("GRANT levels %b: none at 2 with three messages being granted", levels)
		}
	})
}
