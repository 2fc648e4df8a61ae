package harness

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/rawip"
	"github.com/homatest/homatest/spec/wire"
)

// TestSilencedTesterHost puts a listening reference implementation (the
// stack an IUT's agent runs) on tester host h2, and shows that once h2 is
// silenced only the tester's marked packets leave it: the ref's answer to
// a request and the kernel's ICMP port unreachable are dropped (the
// rules' counters prove they were produced), the tester's packet gets
// through. Before silencing, the same request and probe are answered,
// so the test can fail. No timing window: the drop counters tell when
// the answers were made.
func TestSilencedTesterHost(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 2})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	open := func(h *Host) *rawip.Transport {
		var tr *rawip.Transport
		if err := h.Do(func() (err error) { tr, err = rawip.Open(h.Addr4); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	// The stray stack on the tester host: a ref server on port 4000.
	ref, err := homa.New(homa.Config{Transport: open(h2), Params: homa.DefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	srv, err := ref.Listen(4000)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			q, err := srv.Receive(context.Background())
			if err != nil {
				return
			}
			q.Reply([]byte("stray answer"))
		}
	}()
	// h1 plays the IUT: a raw Homa socket, and a UDP socket connected to
	// a closed port of h2 (its kernel answers with ICMP port unreachable,
	// which a connected UDP socket reports as ECONNREFUSED).
	got := make(chan []byte, 64)
	iut := open(h1)
	iut.SetHandler(func(src netip.Addr, _ uint8, pkt []byte) {
		if src == h2.Addr4 {
			got <- pkt
		}
	})
	var udp int
	if err := h1.Do(func() (err error) {
		if udp, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err != nil {
			return err
		}
		return unix.Connect(udp, &unix.SockaddrInet4{Port: 9, Addr: h2.Addr4.As4()})
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)
	tv := unix.NsecToTimeval(int64(scaled(5 * time.Second)))
	unix.SetsockoptTimeval(udp, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	request := func(id uint64) {
		b, err := (&wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: id},
			MessageLength: 100, Incoming: 100, Payload: make([]byte, 100)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := iut.Send(h2.Addr4, 6, b); err != nil {
			t.Fatal(err)
		}
	}
	probe := func() error {
		if _, err := unix.Write(udp, []byte("x")); err != nil {
			return err
		}
		_, err := unix.Read(udp, make([]byte, 16))
		return err
	}
	// next returns the next packet from h2 that satisfies want.
	next := func(what string, want func(wire.Packet) bool) {
		t.Helper()
		for {
			select {
			case p := <-got:
				if pk, err := wire.Decode(p, wire.DecodeOptions{Version: wire.VersionCurrent}); err == nil && want(pk) {
					return
				}
			case <-time.After(scaled(10 * time.Second)):
				t.Fatalf("the ref on h2 never sent %s before silencing: the test cannot tell silence from a dead stack", what)
			}
		}
	}
	send := func(f wire.Fields) {
		b, err := f.AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err == nil {
			err = iut.Send(h2.Addr4, 7, b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Unsilenced: the ref answers, the kernel sends ICMP.
	request(100)
	next("the response", func(p wire.Packet) bool { return p.Type() == wire.TypeData && p.SenderID() == 101 })
	if err := probe(); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("unsilenced probe: %v, want ECONNREFUSED (ICMP port unreachable)", err)
	}
	// Quiesce the ref before silencing, so that nothing it sent earlier
	// arrives later: ACK the RPC (no more NEED_ACKs), then a RESEND for an
	// RPC that never existed, whose RPC_UNKNOWN the ref sends after every
	// packet it sent before (one machine, one raw socket, one veth).
	send(&wire.AckFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 100}})
	send(&wire.ResendFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 200}, Length: 1, Priority: 7})
	next("RPC_UNKNOWN for a barrier RESEND", func(p wire.Packet) bool { return p.Type() == wire.TypeRPCUnknown && p.SenderID() == 201 })
	for len(got) > 0 {
		<-got
	}
	// Silenced: the same again, then the tester speaks.
	if err := h2.Silence(TesterMark); err != nil {
		t.Fatal(err)
	}
	request(102)
	if _, err := unix.Write(udp, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool {
		homaDrops, icmpDrops, _ := h2.SilenceDrops()
		return homaDrops >= 1 && icmpDrops >= 1
	}) {
		hd, id, err := h2.SilenceDrops()
		t.Fatalf("silence rules dropped %d Homa and %d ICMP packets (%v); want at least one of each", hd, id, err)
	}
	// The ICMP was made and dropped, so no error is queued on the socket.
	if _, _, err := unix.Recvfrom(udp, make([]byte, 16), unix.MSG_DONTWAIT); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("silenced probe: %v, want EAGAIN (no ICMP reached h1)", err)
	}
	tester := open(h2)
	if err := tester.SetMark(TesterMark); err != nil {
		t.Fatal(err)
	}
	busy, _ := (&wire.BusyFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 103}}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	if err := tester.Send(h1.Addr4, 7, busy); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if pk, err := wire.Decode(p, wire.DecodeOptions{Version: wire.VersionCurrent}); err != nil || pk.Type() != wire.TypeBusy || pk.SenderID() != 103 {
			t.Errorf("the first packet from the silenced host is not the tester's BUSY: %x", p)
		}
	case <-time.After(scaled(10 * time.Second)):
		t.Fatal("the tester's marked packet did not leave the silenced host")
	}
	hd, id, _ := h2.SilenceDrops()
	t.Logf("silenced: %d Homa packets of the stray ref and %d ICMP unreachable dropped; the tester's BUSY passed", hd, id)
}
