package sim_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec/wire"
)

func addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}) }

// echo makes h answer every request on port with its payload.
func echo(t *testing.T, h *sim.Host, port uint16) {
	t.Helper()
	if err := h.Listen(port); err != nil {
		t.Fatal(err)
	}
	h.OnRequest(func(e homa.Event) {
		if err := h.Reply(e.Request, e.Payload); err != nil {
			t.Error(err)
		}
	})
}

// TestUnloadedLatency: a 100-byte RPC takes exactly what the model says:
// four packet processings (client send, server receive, server send,
// client receive) and four serialisations of the 190-byte frame (the
// client's uplink, the switch port to the server, the server's uplink,
// the switch port to the client) plus the switch's delay both ways. The
// first RPC's response waits behind the server's CUTOFFS (the client sent
// cutoff_version 0) on the server's uplink and the switch port; the
// second does not.
func TestUnloadedLatency(t *testing.T) {
	rate := netem.Gbit
	delay := 3 * time.Microsecond
	s, err := sim.New(sim.Config{Link: netem.LinkConfig{Rate: rate, Delay: delay}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.AddHost(sim.HostConfig{Addr: addr(1)})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := s.AddHost(sim.HostConfig{Addr: addr(2)})
	echo(t, srv, 4000)
	port, _ := c.Dial()
	var lat []time.Duration
	call := func() {
		start := s.Now()
		if _, err := c.Call(port, netip.AddrPortFrom(srv.Addr(), 4000), make([]byte, 100), func(e homa.Event) {
			if e.Err != nil || len(e.Payload) != 100 {
				t.Errorf("call: %v, %d bytes", e.Err, len(e.Payload))
			}
			lat = append(lat, s.Now()-start)
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.At(0, call)
	s.At(time.Millisecond/2, call)
	s.RunUntil(time.Millisecond)
	if len(lat) != 2 {
		t.Fatalf("%d calls done, want 2", len(lat))
	}
	frame := 14 + 20 + wire.DataHeaderLen + 100
	cost := sim.DefaultCost.PerPacket
	want := 4*cost + 4*rate.TxTime(frame) + 2*delay
	if lat[1] != want {
		t.Errorf("second RPC took %v, want %v", lat[1], want)
	}
	// CUTOFFS: common header and 8 cutoffs and a version (homa_wire.h),
	// padded as wire.Encode pads it.
	cut, err := wire.Encode(&wire.CutoffsFields{}, wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := want + rate.TxTime(14+20+len(cut)); lat[0] != w {
		t.Errorf("first RPC took %v, want %v (behind the CUTOFFS once)", lat[0], w)
	}
}

// TestRawEndpoint: a raw endpoint's RESEND for an RPC the host never had
// is answered with RPC_UNKNOWN (HomaModule homa_resend_pkt) exactly one
// round trip of the two 1-Gbit/s hops and the host's two packet costs
// later.
func TestRawEndpoint(t *testing.T) {
	s, _ := sim.New(sim.Config{Link: netem.LinkConfig{Rate: netem.Gbit}})
	h, _ := s.AddHost(sim.HostConfig{Addr: addr(1)})
	if err := h.Listen(4000); err != nil {
		t.Fatal(err)
	}
	r, err := s.AddRaw("tester", addr(2))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var at time.Duration
	r.OnPacket(func(src netip.Addr, prio uint8, pkt []byte) {
		p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Type().String())
		at = s.Now()
		// The id as the receiver of the RESEND sees the RPC: the
		// server's (odd) id.
		if src != h.Addr() || prio != 7 || p.SenderID() != 101 {
			t.Errorf("from %v prio %d id %d", src, prio, p.SenderID())
		}
	})
	pkt, err := wire.Encode(&wire.ResendFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}, Length: 1, Priority: 7},
		wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
	if err != nil {
		t.Fatal(err)
	}
	s.At(time.Microsecond, func() {
		if err := r.Send(h.Addr(), 7, pkt); err != nil {
			t.Fatal(err)
		}
	})
	s.RunUntil(time.Millisecond)
	if len(got) != 1 || got[0] != "RPC_UNKNOWN" {
		t.Fatalf("tester got %v, want one RPC_UNKNOWN", got)
	}
	unk, _ := wire.Encode(&wire.RPCUnknownFields{}, wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
	rate := netem.Gbit
	want := time.Microsecond + 2*rate.TxTime(14+20+len(pkt)) + 2*rate.TxTime(14+20+len(unk)) + 2*sim.DefaultCost.PerPacket
	if at != want {
		t.Errorf("RPC_UNKNOWN at %v, want %v", at, want)
	}
}

// runW4 runs W4 at 70% of 1 Gbit/s for 20 ms on 4 hosts (3 clients, one
// server) through a switch losing 1% of frames, with a plan that drops
// the first GRANT of RPC 3, and returns the three captures and the
// records as JSON.
func runW4(t *testing.T, seed uint64) (sent, delivered, both, recs []byte, res *traffic.Result) {
	t.Helper()
	plan := &netem.Plan{Rules: []netem.Rule{{Name: "1st GRANT of RPC 3",
		Match: netem.Match{Type: "GRANT", RPC: 3, Nth: 1}, Action: netem.Action{Drop: true}}}}
	s, err := sim.New(sim.Config{Seed: seed, Plan: plan,
		Link: netem.LinkConfig{Rate: netem.Gbit, Loss: netem.LossConfig{Model: "random", Probability: 0.01}}})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*sim.Host
	for i := range 4 {
		h, err := s.AddHost(sim.HostConfig{Addr: addr(i + 1), Params: homa.ParamsForLink(1e9)})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	var sb, db, bb bytes.Buffer
	if err := s.Capture(sim.CaptureConfig{Sent: &sb, Delivered: &db, Both: &bb}); err != nil {
		t.Fatal(err)
	}
	w4, _ := workload.Parse("w4")
	tr, err := s.StartTraffic(hosts, traffic.Config{Requests: w4, Load: 0.7, LinkBps: 1e9, Duration: 20 * time.Millisecond, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	if !s.RunWhile(func() bool { return !tr.Done() }) {
		t.Fatal("the simulation ran out of events before the workload ended")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	res = tr.Result()
	j, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return sb.Bytes(), db.Bytes(), bb.Bytes(), j, res
}

// TestDeterministic: the same seed gives byte-identical captures and
// results; another seed gives other ones. Every RPC completes despite
// the loss.
func TestDeterministic(t *testing.T) {
	s1, d1, b1, r1, res := runW4(t, 7)
	s2, d2, b2, r2, _ := runW4(t, 7)
	for _, c := range []struct {
		name string
		a, b []byte
	}{{"sent", s1, s2}, {"delivered", d1, d2}, {"both", b1, b2}, {"records", r1, r2}} {
		if !bytes.Equal(c.a, c.b) {
			t.Errorf("seed 7 twice: %s differs (%d and %d bytes)", c.name, len(c.a), len(c.b))
		}
	}
	if len(res.Records) < 10 || res.Failed() != 0 {
		t.Fatalf("%d RPCs, %d failed; want every one of at least 10 to complete", len(res.Records), res.Failed())
	}
	_, d3, _, _, _ := runW4(t, 8)
	if bytes.Equal(d1, d3) {
		t.Error("seeds 7 and 8 gave the same capture")
	}
	t.Logf("%d RPCs, capture %d bytes", len(res.Records), len(b1))
}

// TestClock: callbacks run at their virtual times, ties in the order they
// were scheduled; RunUntil stops at its time and sets the clock to it;
// Step and RunWhile report when no event is left; the topology is fixed
// once the clock ran.
func TestClock(t *testing.T) {
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	note := func(name string) func() {
		return func() { got = append(got, name+"@"+s.Now().String()) }
	}
	s.At(2*time.Millisecond, note("b"))
	s.At(time.Millisecond, note("a"))
	s.At(2*time.Millisecond, note("c"))
	s.At(5*time.Millisecond, func() {
		note("d")()
		s.After(time.Millisecond, note("e"))
		s.At(0, note("f")) // in the past: now
	})
	s.RunUntil(3 * time.Millisecond)
	if s.Now() != 3*time.Millisecond || len(got) != 3 {
		t.Fatalf("at %v: %v", s.Now(), got)
	}
	if s.RunWhile(func() bool { return true }) {
		t.Error("RunWhile ran out of events and said it stopped on its condition")
	}
	want := []string{"a@1ms", "b@2ms", "c@2ms", "d@5ms", "f@5ms", "e@6ms"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if s.Step() {
		t.Error("Step found an event in an empty queue")
	}
	if _, err := s.AddHost(sim.HostConfig{Addr: addr(1)}); err == nil {
		t.Error("AddHost after the clock ran succeeded")
	}
	if _, err := sim.New(sim.Config{Cost: &sim.Cost{PerPacket: time.Microsecond}}); err == nil {
		t.Error("a cost without cores was accepted")
	}
	if _, err := sim.New(sim.Config{Link: netem.LinkConfig{Priorities: 9}}); err == nil {
		t.Error("a link with 9 priority queues was accepted")
	}
}

// TestCorruptedIPHeaderDropped: a host's IP layer drops what Linux's
// ip_rcv drops, a frame whose IPv4 header checksum does not verify or
// that is for another address (a link corrupting every frame flips one
// bit of each): a capture on the host's link records it, the protocol
// never sees it, and Stats.IPDropped counts it.
func TestCorruptedIPHeaderDropped(t *testing.T) {
	s, err := sim.New(sim.Config{Seed: 3, Link: netem.LinkConfig{Rate: netem.Gbit, Corrupt: 1}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.AddRaw("a", addr(1))
	b, _ := s.AddRaw("b", addr(2))
	got := 0
	b.OnPacket(func(netip.Addr, uint8, []byte) { got++ })
	var db bytes.Buffer
	if err := s.Capture(sim.CaptureConfig{Delivered: &db}); err != nil {
		t.Fatal(err)
	}
	pkt, _ := wire.Encode(&wire.BusyFields{Common: wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101}}, wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
	for i := range 400 {
		s.At(time.Duration(i+1)*time.Microsecond, func() {
			if err := a.Send(b.Addr(), 7, pkt); err != nil {
				t.Fatal(err)
			}
		})
	}
	s.RunUntil(10 * time.Millisecond)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewNgReader(&db, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	delivered, bad := 0, 0
	for {
		f, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		delivered++
		ip := f[14:]
		if f[12] != 0x08 || f[13] != 0 || netip.AddrFrom4([4]byte(ip[16:20])) != b.Addr() || wire.IPv4HeaderChecksum(ip[:int(ip[0]&0x0f)*4]) != 0 {
			bad++
		}
	}
	st := s.Stats()
	if bad == 0 || uint64(bad) != st.IPDropped || got+bad != delivered {
		t.Errorf("delivered %d frames, %d with a bad IPv4 header or address; IP layer dropped %d, protocol got %d", delivered, bad, st.IPDropped, got)
	}
}

// TestFreeze: a frozen host answers a RESEND that came during the freeze
// only when it ends, and a timer due meanwhile (a client's RESEND to a
// silent server, resend_ticks after its request) fires then too; the
// same exchange unfrozen answers at once.
func TestFreeze(t *testing.T) {
	for _, freeze := range []time.Duration{0, 20 * time.Millisecond} {
		s, _ := sim.New(sim.Config{Link: netem.LinkConfig{Rate: netem.Gbit}, Cost: &sim.Cost{}})
		h, _ := s.AddHost(sim.HostConfig{Addr: addr(1)})
		if err := h.Listen(4000); err != nil {
			t.Fatal(err)
		}
		r, _ := s.AddRaw("tester", addr(2))
		var unknownAt, resendAt time.Duration = -1, -1
		r.OnPacket(func(src netip.Addr, prio uint8, pkt []byte) {
			p, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case p.Type() == wire.TypeRPCUnknown && unknownAt < 0:
				unknownAt = s.Now()
			case p.Type() == wire.TypeResend && resendAt < 0:
				resendAt = s.Now()
			}
		})
		port, _ := h.Dial()
		if _, err := h.Call(port, netip.AddrPortFrom(addr(2), 5000), make([]byte, 100), func(homa.Event) {}); err != nil {
			t.Fatal(err)
		}
		pkt, _ := wire.Encode(&wire.ResendFields{Common: wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}, Length: 1, Priority: 7},
			wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
		s.At(time.Millisecond, func() {
			h.Freeze(time.Millisecond + freeze)
			if err := r.Send(h.Addr(), 7, pkt); err != nil {
				t.Fatal(err)
			}
		})
		s.RunUntil(100 * time.Millisecond)
		tick := h.Machine().Params().Tick * time.Duration(h.Machine().Params().ResendTicks)
		if freeze == 0 && (unknownAt < time.Millisecond || unknownAt > 2*time.Millisecond) {
			t.Errorf("unfrozen: RPC_UNKNOWN at %v, want within a ms of the RESEND at 1ms", unknownAt)
		}
		if freeze > 0 && (unknownAt < time.Millisecond+freeze || unknownAt > time.Millisecond+freeze+time.Millisecond) {
			t.Errorf("frozen %v: RPC_UNKNOWN at %v, want just after the freeze ends at %v", freeze, unknownAt, time.Millisecond+freeze)
		}
		if freeze == 0 && (resendAt < tick || resendAt > tick+2*time.Millisecond) {
			t.Errorf("unfrozen: the client's first RESEND at %v, want about resend_ticks (%v) after the call", resendAt, tick)
		}
		// Timer passes missed during the freeze are not made up (as
		// HomaModule's homa_timer counts passes): the RESEND due at
		// resend_ticks comes after the freeze, later by about the freeze.
		if freeze > 0 && (resendAt < time.Millisecond+freeze || resendAt > tick+freeze+time.Millisecond) {
			t.Errorf("frozen until %v: the client's first RESEND at %v, want after the freeze and by %v (its timer was due at %v)", time.Millisecond+freeze, resendAt, tick+freeze+time.Millisecond, tick)
		}
	}
}
