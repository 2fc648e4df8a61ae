package memnet

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TestDeliveryKeepsOrder sends packets of one priority through a port with
// a propagation delay in real time: they must arrive in the order sent (an
// earlier version delivered each packet from its own goroutine and
// reordered them).
func TestDeliveryKeepsOrder(t *testing.T) {
	n := New(Config{Delay: 20 * time.Microsecond})
	defer n.Close()
	a, b := n.Attach(netip.MustParseAddr("10.0.0.1")), n.Attach(netip.MustParseAddr("10.0.0.2"))
	const count = 2000
	var mu sync.Mutex
	var got []uint32
	done := make(chan struct{})
	b.SetHandler(func(_ netip.Addr, _ uint8, pkt []byte) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, binary.BigEndian.Uint32(pkt))
		if len(got) == count {
			close(done)
		}
	})
	for i := range count {
		if err := a.Send(b.LocalAddr(), 3, binary.BigEndian.AppendUint32(nil, uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("only %d of %d packets arrived", len(got), count)
	}
	for i, v := range got {
		if v != uint32(i) {
			t.Fatalf("packet %d arrived in position %d", v, i)
		}
	}
}

// TestTapAndDelivered: Tap sees every packet sent, Delivered only those the
// network did not drop, with the destination address.
func TestTapAndDelivered(t *testing.T) {
	var mu sync.Mutex
	var tapped, delivered []uint32
	rec := func(to *[]uint32) func(time.Time, netip.Addr, netip.Addr, uint8, []byte) {
		return func(_ time.Time, _, dst netip.Addr, _ uint8, pkt []byte) {
			if dst != netip.MustParseAddr("10.0.0.2") {
				t.Errorf("dst %v, want 10.0.0.2", dst)
			}
			mu.Lock()
			*to = append(*to, binary.BigEndian.Uint32(pkt))
			mu.Unlock()
		}
	}
	n := New(Config{Tap: rec(&tapped), Delivered: rec(&delivered),
		Drop: func(_, _ netip.Addr, _ uint8, pkt []byte) bool { return binary.BigEndian.Uint32(pkt)%3 == 0 }})
	defer n.Close()
	a, b := n.Attach(netip.MustParseAddr("10.0.0.1")), n.Attach(netip.MustParseAddr("10.0.0.2"))
	got := make(chan struct{}, 100)
	b.SetHandler(func(netip.Addr, uint8, []byte) { got <- struct{}{} })
	for i := range 30 {
		a.Send(b.LocalAddr(), 0, binary.BigEndian.AppendUint32(nil, uint32(i)))
	}
	for range 20 {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("packets missing")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tapped) != 30 || len(delivered) != 20 {
		t.Fatalf("tapped %d, delivered %d; want 30 and 20", len(tapped), len(delivered))
	}
	for _, v := range delivered {
		if v%3 == 0 {
			t.Errorf("dropped packet %d was delivered", v)
		}
	}
}

// TestDrainDeliversArrived: Endpoint.Drain delivers, in the calling
// goroutine and in order, the packets on the delay line whose time has
// come, and leaves the later ones (a port whose delivery goroutine does
// not run: a starved one). Drain did not exist before.
func TestDrainDeliversArrived(t *testing.T) {
	n := New(Config{})
	addr := netip.MustParseAddr("10.0.0.2")
	ep := &Endpoint{n: n, addr: addr}
	var got []int
	p := &port{ep: ep, handler: func(_ netip.Addr, _ uint8, pkt []byte) { got = append(got, int(pkt[0])) }}
	n.ports[addr] = p
	now := time.Now()
	for i, at := range []time.Duration{-3, -2, -1, time.Hour, -4} {
		pkt := []byte{byte(i)}
		p.line = append(p.line, delayed{at: now.Add(at * time.Millisecond), deliver: func() { p.handler(addr, 0, pkt) }})
	}
	if c := ep.Drain(); c != 3 || len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("Drain = %d, delivered %v; want 3, [0 1 2]", c, got)
	}
	if c := ep.Drain(); c != 0 || len(p.line) != 2 {
		t.Fatalf("second Drain = %d with %d left on the line; want 0, 2 (in order: one not yet due heads the line)", c, len(p.line))
	}
	if c := (&Endpoint{n: n, addr: netip.MustParseAddr("10.0.0.9")}).Drain(); c != 0 {
		t.Fatalf("Drain of a detached endpoint = %d, want 0", c)
	}
}
