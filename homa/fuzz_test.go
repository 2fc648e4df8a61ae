package homa_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/spec/wire"
)

// hostileSeeds are valid packets of every type aimed at the server's port.
func hostileSeeds() [][]byte {
	c := wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 2}
	fs := []wire.Fields{
		&wire.DataFields{Common: c, MessageLength: 1000000, Incoming: 40000, Payload: make([]byte, 100)},
		&wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 3}, Offset: 0xFFFFFFFF, Priority: 200},
		&wire.ResendFields{Common: c, Offset: 0xFFFFFF00, Length: 0xFFFFFFFF, Priority: 7},
		&wire.RPCUnknownFields{Common: c},
		&wire.BusyFields{Common: c},
		&wire.CutoffsFields{Common: c, UnschedCutoffs: [8]uint32{0xFFFFFFFF, 0, 0, 0, 0, 0, 0, 0}, CutoffVersion: 65535},
		&wire.NeedAckFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 3}},
		&wire.AckFields{Common: c, NumAcks: 65535, Acks: []wire.AckEntry{{ClientID: 2, ServerPort: 4000}}},
	}
	var out [][]byte
	for _, f := range fs {
		b, _ := wire.Encode(f, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		out = append(out, b)
	}
	return out
}

// FuzzHostilePeer sends arbitrary packets from a third host to a client and
// a server while they run an RPC. The hosts must not crash, and the RPC
// must still complete with the right payload: a peer can only affect RPCs
// with its own address.
func FuzzHostilePeer(f *testing.F) {
	for _, s := range hostileSeeds() {
		f.Add(s, uint64(2))
	}
	f.Fuzz(func(t *testing.T, pkt []byte, id uint64) {
		synctest.Test(t, func(t *testing.T) {
			n := memnet.New(memnet.Config{Rate: 10e9, Delay: time.Microsecond})
			defer n.Close()
			var hosts []*homa.Host
			for i := range 2 {
				h, err := homa.New(homa.Config{Transport: n.Attach(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}))})
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				hosts = append(hosts, h)
			}
			evil := n.Attach(netip.MustParseAddr("198.18.0.66"))
			srv, _ := hosts[1].Listen(4000)
			go func() {
				for {
					q, err := srv.Receive(context.Background())
					if err != nil {
						return
					}
					q.Reply(reverse(q.Payload()))
				}
			}()
			// Also aim the packet at the live RPC's ids.
			variants := [][]byte{pkt}
			if len(pkt) >= wire.CommonHeaderLen {
				for _, sid := range []uint64{id, 2, 3} {
					v := append([]byte(nil), pkt...)
					binary.BigEndian.PutUint64(v[20:], sid)
					variants = append(variants, v)
				}
			}
			attackDone := make(chan struct{})
			go func() {
				defer close(attackDone)
				for i := 0; i < 20; i++ {
					for _, v := range variants {
						evil.Send(hosts[0].Addr(), 7, v)
						evil.Send(hosts[1].Addr(), 7, v)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}()
			defer func() { <-attackDone }()
			c, _ := hosts[0].Dial()
			req := bytes.Repeat([]byte{1, 2, 3}, 30000)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := c.Call(ctx, netip.AddrPortFrom(hosts[1].Addr(), 4000), req)
			if err != nil || !bytes.Equal(resp, reverse(req)) {
				t.Fatalf("RPC under attack: err %v, response ok %v", err, err == nil && bytes.Equal(resp, reverse(req)))
			}
		})
	})
}
