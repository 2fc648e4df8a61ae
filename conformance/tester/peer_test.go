package tester

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

var (
	iutAddr    = netip.MustParseAddr("198.18.0.1")
	testerAddr = netip.MustParseAddr("198.18.0.2")
)

// setup builds a simulation with a reference-implementation server on
// port 4000 at iutAddr (answering "ok") behind a 10 Gbit/s switch with
// 1 µs of delay, and a Peer at testerAddr on its virtual clock.
func setup(t *testing.T) (*Peer, homa.Params) {
	s, err := sim.New(sim.Config{Link: netem.LinkConfig{Rate: 10 * netem.Gbit, Delay: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.AddHost(sim.HostConfig{Addr: iutAddr})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Listen(4000); err != nil {
		t.Fatal(err)
	}
	h.OnRequest(func(e homa.Event) { h.Reply(e.Request, []byte("ok")) })
	raw, err := s.AddRaw("tester", testerAddr)
	if err != nil {
		t.Fatal(err)
	}
	c := NewSimClock(s)
	p := New(SimTransport(c, raw), c)
	t.Cleanup(func() { p.Close() })
	return p, h.Machine().Params()
}

// sendUnscheduled sends the unscheduled DATA of a request of msgLen bytes
// for client RPC id from port 33000 to the server's port 4000.
func sendUnscheduled(t *testing.T, p *Peer, id uint64, msgLen, unsched, seg int) {
	for off := 0; off < min(msgLen, unsched); off += seg {
		n := min(seg, msgLen-off)
		err := p.Send(iutAddr, 6, &wire.DataFields{
			Common:        wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: id},
			MessageLength: uint32(msgLen), Incoming: uint32(min(msgLen, unsched)),
			SegOffset: uint32(off), Payload: make([]byte, n)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestExpectGrant(t *testing.T) {
	p, params := setup(t)
	ctx := context.Background()
	const msgLen = 200000
	sendUnscheduled(t, p, 100, msgLen, params.UnschedBytes, 1400)
	g, err := p.Expect(ctx, Match{Type: wire.TypeGrant, From: iutAddr, RPC: 100,
		Checks: []Check{In("priority", 0, uint64(params.MaxSchedPrio)), Is("sport", 4000), Is("dport", 33000)}}, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if off := g.Pkt.Grant().Offset(); off <= uint32(params.UnschedBytes) || off > msgLen {
		t.Errorf("first GRANT offset %d, want in (%d, %d]", off, params.UnschedBytes, msgLen)
	}
	if g.Pkt.SenderID() != 101 {
		t.Errorf("GRANT sender_id %d, want 101 (server side of RPC 100)", g.Pkt.SenderID())
	}
	// The same GRANT is not returned twice.
	_, err = p.Expect(ctx, Match{Type: wire.TypeGrant, RPC: 100, Checks: []Check{Is("offset", uint64(g.Pkt.Grant().Offset()))}}, 5*time.Millisecond)
	if err == nil {
		t.Error("Expect returned a consumed GRANT again")
	}
}

func TestExpectReportsCandidates(t *testing.T) {
	p, params := setup(t)
	sendUnscheduled(t, p, 200, 200000, params.UnschedBytes, 1400)
	_, err := p.Expect(context.Background(), Match{Type: wire.TypeGrant, RPC: 200, Checks: []Check{Is("offset", 7)}}, 20*time.Millisecond)
	if err == nil {
		t.Fatal("Expect matched a GRANT with offset 7")
	}
	for _, want := range []string{"no GRANT for RPC 200 within 20ms", "candidates: GRANT 198.18.0.1>198.18.0.2", "offset: want 7, got "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestExpectAnyTypeWording: a match of any type that times out says "no
// packet from …" (a trial read "no any packet from 198.18.0.1 …").
func TestExpectAnyTypeWording(t *testing.T) {
	p, _ := setup(t)
	_, err := p.Expect(context.Background(), Match{RPC: 300}, time.Millisecond)
	if err == nil || !strings.HasPrefix(err.Error(), "no packet for RPC 300 within 1ms") {
		t.Errorf("error %v, want it to begin \"no packet for RPC 300 within 1ms\"", err)
	}
}

func TestExpectNone(t *testing.T) {
	p, params := setup(t)
	ctx := context.Background()
	// A message that fits in unscheduled bytes needs no GRANT.
	sendUnscheduled(t, p, 300, 5000, params.UnschedBytes, 1400)
	if err := p.ExpectNone(ctx, Match{Type: wire.TypeGrant, RPC: 300}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// The response arrives instead.
	if _, err := p.Expect(ctx, Match{Type: wire.TypeData, RPC: 300}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sendUnscheduled(t, p, 400, 200000, params.UnschedBytes, 1400)
	err := p.ExpectNone(ctx, Match{Type: wire.TypeGrant, RPC: 400}, 20*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "unexpected GRANT for RPC 400: got GRANT") {
		t.Fatalf("ExpectNone = %v, want an unexpected-GRANT error", err)
	}
}

func TestPcapngAndCheck(t *testing.T) {
	p, params := setup(t)
	ctx := context.Background()
	sendUnscheduled(t, p, 500, 3000, params.UnschedBytes, 1400)
	if _, err := p.Expect(ctx, Match{Type: wire.TypeData, RPC: 500}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	p.SendRaw(iutAddr, 7, []byte{1, 2, 3}) // malformed on purpose
	var types []string
	eachCaptureFrame(t, func(f *pcap.Frame) {
		if f.Err != nil {
			types = append(types, "bad")
		} else {
			types = append(types, f.Packet.Type().String())
		}
	}, p)
	// Three request segments, the server's CUTOFFS (the tester sent
	// cutoff_version 0), the response, the malformed packet.
	if got := strings.Join(types, ","); got != "DATA,DATA,DATA,CUTOFFS,DATA,bad" {
		t.Errorf("pcapng holds %s, want DATA,DATA,DATA,CUTOFFS,DATA,bad", got)
	}
	prof, _ := spec.LookupProfile("linux")
	judge, _ := spec.NewJudge("linux", prof.Params, "HOMA-WIRE-*", spec.Must)
	rep, pkts, err := Verify(judge, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.RPCs != 1 {
		t.Errorf("checker saw %d RPCs, want 1", rep.RPCs)
	}
	bad := 0
	for _, v := range rep.Violations {
		if v.Frame == len(types) && v.Rule == "HOMA-WIRE-001" {
			bad++
		}
	}
	if !pkts[len(types)-1].Sent {
		t.Errorf("last frame not marked as sent by the tester")
	}
	if bad == 0 {
		t.Errorf("checker found no HOMA-WIRE-001 violation at the malformed last frame: %v", rep.Violations)
	}
}

// eachCaptureFrame writes the peers' per-test capture (WritePcapng) and
// calls fn with each of its frames, read back (the frame is valid during
// the call).
func eachCaptureFrame(t *testing.T, fn func(*pcap.Frame), peers ...*Peer) {
	t.Helper()
	var buf bytes.Buffer
	if err := WritePcapng(&buf, peers...); err != nil {
		t.Fatal(err)
	}
	r, err := pcap.NewReader(&buf, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := r.Next()
		if err != nil {
			return
		}
		fn(f)
	}
}

// TestMissingErrorArrivedBy: after an Expect whose window was too short,
// ArrivedBy tells a late packet (the response, which comes microseconds
// later) from an absent one (a GRANT a message within unscheduled bytes
// never draws), and leaves the late one for the next Expect.
func TestMissingErrorArrivedBy(t *testing.T) {
	p, params := setup(t)
	ctx := context.Background()
	sendUnscheduled(t, p, 600, 5000, params.UnschedBytes, 1400)
	_, err := p.Expect(ctx, Match{Type: wire.TypeData, RPC: 600}, time.Nanosecond)
	var m *MissingError
	if !errors.As(err, &m) {
		t.Fatalf("Expect within 1ns = %v, want a MissingError", err)
	}
	if came, err := m.ArrivedBy(ctx, m.To.Add(20*time.Millisecond)); !came || err != nil {
		t.Fatalf("ArrivedBy = %v, %v; want the late response", came, err)
	}
	if _, err := p.Expect(ctx, Match{Type: wire.TypeData, RPC: 600}, time.Nanosecond); err != nil {
		t.Errorf("the late response was consumed by ArrivedBy: %v", err)
	}
	_, err = p.Expect(ctx, Match{Type: wire.TypeGrant, RPC: 600}, time.Millisecond)
	if !errors.As(err, &m) {
		t.Fatalf("Expect GRANT = %v, want a MissingError", err)
	}
	if m.RPC() != 600 {
		t.Errorf("MissingError.RPC = %d, want the awaited RPC 600", m.RPC())
	}
	to := m.To.Add(20 * time.Millisecond)
	if came, err := m.ArrivedBy(ctx, to); came || err != nil {
		t.Fatalf("ArrivedBy = %v, %v; want no GRANT", came, err)
	}
	if now := p.clock.Now(); now.Before(to) {
		t.Errorf("ArrivedBy returned at %v, before its deadline %v", now, to)
	}
}
