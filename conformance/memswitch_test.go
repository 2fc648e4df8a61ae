package conformance

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/spec/wire"
)

// switchPair starts a two-host memSwitch and returns it with a function
// that waits for n packets at host 2 and returns them in arrival order.
func switchPair(t *testing.T, link netem.LinkConfig, plan *netem.Plan) (*memSwitch, func(n int) [][]byte) {
	t.Helper()
	a, b := netip.MustParseAddr("198.18.9.1"), netip.MustParseAddr("198.18.9.2")
	s, err := newMemSwitch(memSwitchConfig{Addrs: []netip.Addr{a, b}, Link: link, Plan: plan, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	var mu sync.Mutex
	var got [][]byte
	arrived := make(chan struct{}, 1000)
	s.Transport(1).SetHandler(func(src netip.Addr, prio uint8, pkt []byte) {
		if src != a || prio != 7 {
			t.Errorf("packet from %v at priority %d, want %v at 7", src, prio, a)
		}
		mu.Lock()
		got = append(got, pkt)
		mu.Unlock()
		arrived <- struct{}{}
	})
	wait := func(n int) [][]byte {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-arrived:
			case <-time.After(timescale.D(2 * time.Second)):
				t.Fatalf("%d of %d packets arrived", i, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return s, wait
}

// grant encodes a GRANT with the given offset (client id 2, to the server).
func grant(t *testing.T, offset uint32) []byte {
	t.Helper()
	b, err := wire.Encode(&wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 40000, SenderID: 3}, Offset: offset}, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMemSwitchPlanDropsDuplicatesAndDelays(t *testing.T) {
	plan := &netem.Plan{Rules: []netem.Rule{
		{Name: "drop the 2nd GRANT", Match: netem.Match{Type: "GRANT", Nth: 2}, Action: netem.Action{Drop: true}},
		{Name: "duplicate the 3rd", Match: netem.Match{Type: "GRANT", Nth: 3}, Action: netem.Action{Duplicate: 1}},
		{Name: "delay the 4th", Match: netem.Match{Type: "GRANT", Nth: 4}, Action: netem.Action{Delay: 20 * time.Millisecond}},
	}}
	s, wait := switchPair(t, netem.LinkConfig{}, plan)
	dst := netip.MustParseAddr("198.18.9.2")
	for off := uint32(1); off <= 5; off++ {
		if err := s.Transport(0).Send(dst, 7, grant(t, off*10000)); err != nil {
			t.Fatal(err)
		}
	}
	var offs []uint32
	for _, b := range wait(5) {
		p, err := wire.Decode(b, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, p.Grant().Offset())
	}
	// 2nd dropped, 3rd twice, 4th delayed behind the 5th.
	want := []uint32{10000, 30000, 30000, 50000, 40000}
	if len(offs) != len(want) {
		t.Fatalf("offsets %v, want %v", offs, want)
	}
	for i := range want {
		if offs[i] != want[i] {
			t.Fatalf("offsets %v, want %v", offs, want)
		}
	}
	if h := s.Stats().Hits; len(h) != 3 || h[0].Rule != 0 || h[1].Rule != 1 || h[2].Rule != 2 {
		t.Errorf("hits %+v, want one of each rule in order", h)
	}
}

func TestMemSwitchLoss(t *testing.T) {
	s, wait := switchPair(t, netem.LinkConfig{Loss: netem.LossConfig{Model: "random", Probability: 0.5}}, nil)
	lost := 0 // Homa frames only: the learning frames may be lost too
	s.mu.Lock()
	s.core.OnDrop = func(_ int, f *netem.Frame, r netem.DropReason, _ string) {
		if _, _, _, _, ok := unframe(f.Data); ok && r == netem.DropLoss {
			lost++
		}
	}
	s.mu.Unlock()
	dst := netip.MustParseAddr("198.18.9.2")
	for i := 0; i < 200; i++ {
		if err := s.Transport(0).Send(dst, 7, grant(t, 20000)); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	n := lost
	s.mu.Unlock()
	if n < 60 || n > 140 {
		t.Fatalf("%d of 200 packets lost at 50%%", n)
	}
	if got := wait(200 - n); len(got) != 200-n {
		t.Errorf("%d packets arrived, want %d", len(got), 200-n)
	}
}

func TestUnframeRejectsOtherFrames(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 13), make([]byte, 60), append(make([]byte, 12), 0x08, 0x00, 0x45, 0, 0xff, 0xff)} {
		if _, _, _, _, ok := unframe(b); ok {
			t.Errorf("unframe(%x) ok, want not", b)
		}
	}
}
