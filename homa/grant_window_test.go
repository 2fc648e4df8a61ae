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

// TestGrantWindowBelowOnePacket: with max_incoming only eight packets and
// eight messages active (twelve waiting), the window max_incoming/(n+1) is
// less than one packet. The receiver must still grant each message more once its
// granted bytes have arrived (a GRANT of less than a packet); holding
// GRANTs back until a whole packet's worth is due stalled every message
// for good (nothing in flight, so no arrival ever ran the grant decision
// again). A tester plays twelve clients, each sending what it is granted.
func TestGrantWindowBelowOnePacket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		iut := iutAddr
		p := homa.DefaultParams()
		p.UnschedBytes, p.MaxIncoming = 1424, 8*1424
		p.FIFOGrantIncrement = 0
		h, peer := hostWithPeer(t, p, 0)
		srv, err := h.Listen(4000)
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan int, 12)
		go func() {
			for {
				q, err := srv.Receive(context.Background())
				if err != nil {
					return
				}
				served <- len(q.Payload())
				q.Reply([]byte{1})
			}
		}()
		const msgLen = 30000
		sent := map[uint64]int{} // bytes sent per client id
		send := func(id uint64, to int) {
			for sent[id] < min(to, msgLen) {
				off := sent[id]
				l := min(1424, msgLen-off)
				c := wire.CommonFields{Sport: uint16(33000 + id), Dport: 4000, SenderID: id, Sequence: uint32(off)}
				if err := peer.Send(iut, 0, &wire.DataFields{Common: c, MessageLength: msgLen, Incoming: uint32(max(to, 1424)),
					SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, l)}); err != nil {
					t.Fatal(err)
				}
				sent[id] += l
			}
		}
		for i := range 12 {
			send(uint64(100+2*i), 1424) // the unscheduled packet
		}
		ctx := context.Background()
		done := 0
		for done < 12 {
			g, err := peer.Expect(ctx, tester.Match{Type: wire.TypeGrant, From: iut}, 50*time.Millisecond)
			if err != nil {
				var left []int
				for id, s := range sent {
					if s < msgLen {
						left = append(left, int(id))
					}
				}
				t.Fatalf("no GRANT within 50 ms; messages %v not fully granted (%d of 12 served): %v", left, done, err)
			}
			id := g.Pkt.SenderID() - 1 // the client's id
			before := sent[id]
			send(id, int(g.Pkt.Grant().Offset()))
			if before < msgLen && sent[id] == msgLen {
				select {
				case got := <-served:
					if got != msgLen {
						t.Fatalf("served a %d-byte request, want %d", got, msgLen)
					}
					done++
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	})
}
