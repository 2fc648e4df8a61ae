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

// TestResendAnsweredAtOncePastThePacer: every RESEND for bytes already
// sent is answered at once with their retransmission, at the priority it
// asks for, even while the pacer holds new DATA back (HomaModule
// homa_resend_pkt → homa_resend_data hands the packets to the NIC from
// the handler, charging the pacer's estimate, homa_pacer_check_nic_q
// with force). Before, the packets waited in a retransmission queue served
// by the pacer: a saturated sender answered after response_timeout or
// not at all when the RPC ended first (HOMA-RESEND-002/-016 in an
// overloaded simulation, TestSimOverloadAnswersResends in package sim);
// a RESEND whose packets all waited there got BUSY. The server is paced
// at 10 Mbit/s, so each packet occupies its link for 1.2 ms; a tester
// client asks twice for the same five packets of a 30,000-byte response,
// the second time at another priority.
func TestResendAnsweredAtOncePastThePacer(t *testing.T) {
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
		// Each RESEND gets the five packets (HomaModule sends a copy per
		// RESEND) at its priority, long before the pacer's next packet
		// (1.2 ms), and no BUSY: the bytes had been sent.
		for _, prio := range []uint8{7, 5} {
			if err := peer.Send(iut, 7, &wire.ResendFields{Common: c, Offset: 0, Length: 7120, Priority: prio}); err != nil {
				t.Fatal(err)
			}
			for off := uint32(0); off < 7120; off += 1424 {
				if _, err := peer.Expect(ctx, tester.Match{Type: wire.TypeData, From: iut, RPC: 100,
					Checks: []tester.Check{tester.Is("retransmit", 1), tester.DataOffset(off), tester.IPPriority(prio, prio)}}, 100*time.Microsecond); err != nil {
					t.Fatalf("RESEND at priority %d: %v", prio, err)
				}
			}
		}
		if err := peer.ExpectNone(ctx, tester.Match{Type: wire.TypeBusy, From: iut, RPC: 100}, time.Millisecond); err != nil {
			t.Errorf("a RESEND for bytes already sent was answered with BUSY: %v", err)
		}
		if err := peer.ExpectNone(ctx, tester.Match{Type: wire.TypeData, From: iut, RPC: 100,
			Checks: []tester.Check{tester.Is("retransmit", 1)}}, 50*time.Millisecond); err != nil {
			t.Errorf("a packet was retransmitted again: %v", err)
		}
	})
}
