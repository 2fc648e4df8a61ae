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
