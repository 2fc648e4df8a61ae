package homa_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/spec/wire"
)

// TestResendForQueuedRetransmissionGetsBusy: a RESEND whose packets all
// already wait in the sender's retransmission queue is answered with BUSY
// at once. (Before, it got no answer until the queue reached them; with
// many RPCs retransmitting, a peer could hear nothing for timeout_ticks
// and abort.) The server is paced at 10 Mbit/s, so each packet occupies
// its link for 1.2 ms and the queue drains slowly; a tester client asks
// twice for the same five packets of a 30,000-byte response, the second
// time at another priority.
func TestResendForQueuedRetransmissionGetsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iut := iutAddr
		p := homa.DefaultParams()
		p.LinkRate = 10e6
		h, peer := hostWithPeer(t, p, time.Microsecond)
		srv, _ := h.Listen(4000)
		go func() {
			for {
				q, err := srv.Receive(context.Background())
				if err != nil {
					return
				}
				q.Reply(make([]byte, 30000))
			}
		}()
		ctx := context.Background()
		c := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}
		if err := peer.Send(iut, 7, &wire.DataFields{Common: c, MessageLength: 100, Incoming: 100,
			SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
		// Wait until five response packets (7,120 bytes) have left.
		for range 5 {
			if _, err := peer.Expect(ctx, tester.Match{Type: wire.TypeData, From: iut, RPC: 100}, 10*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		// The second RESEND asks for priority 5: the queued packets answer
		// it too, so they must go at 5 (RTX-06: retransmit at the
		// RESEND's priority).
		for _, prio := range []uint8{7, 5} {
			if err := peer.Send(iut, 7, &wire.ResendFields{Common: c, Offset: 0, Length: 7120, Priority: prio}); err != nil {
				t.Fatal(err)
			}
		}
		// The first RESEND queued the five packets; the second finds them
		// all queued and must be answered before the pacer lets the next
		// packet go (1.2 ms).
		if _, err := peer.Expect(ctx, tester.Match{Type: wire.TypeBusy, From: iut, RPC: 100}, 500*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		if err := peer.ExpectNone(ctx, tester.Match{Type: wire.TypeBusy, From: iut, RPC: 100}, time.Millisecond); err != nil {
			t.Errorf("the first RESEND (it queued packets) was answered with BUSY too: %v", err)
		}
		// The retransmissions still follow: the five packets, each once.
		for off := uint32(0); off < 7120; off += 1424 {
			if _, err := peer.Expect(ctx, tester.Match{Type: wire.TypeData, From: iut, RPC: 100,
				Checks: []tester.Check{tester.Is("retransmit", 1), tester.DataOffset(off), tester.IPPriority(5, 5)}}, 50*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		if err := peer.ExpectNone(ctx, tester.Match{Type: wire.TypeData, From: iut, RPC: 100,
			Checks: []tester.Check{tester.Is("retransmit", 1)}}, 50*time.Millisecond); err != nil {
			t.Errorf("a packet was retransmitted twice: %v", err)
		}
	})
}
