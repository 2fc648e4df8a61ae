package sim_test

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// TestServerTimeoutLateRequest replays, on the virtual clock, what a
// CPU-saturated server showed in a simulated W3 overload run (RPC
// 17080@198.18.0.1 at h2): a request's unscheduled bytes arrive, the
// server grants the rest, and the rest arrives only after the server's
// timer has aborted the RPC (RTX-10: timeout_ticks without DATA, GRANT or
// BUSY from the client; the client's RESENDs do not count). The late DATA
// creates the RPC anew (RTX-11), and the new RPC asks for the unscheduled
// bytes the old one had (one RESEND per gap, RTX-03), as HomaModule's
// homa_dispatch_pkts and homa_request_retrans do. Judged in the server's
// view, as scenario run judges it, that RESEND breaks no MUST rule.
func TestServerTimeoutLateRequest(t *testing.T) {
	p := homa.DefaultParams()
	s, err := sim.New(sim.Config{Link: netem.LinkConfig{Rate: 10 * netem.Gbit, Priorities: 8}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.AddHost(sim.HostConfig{Addr: addr(2), Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Listen(4000); err != nil {
		t.Fatal(err)
	}
	h.OnRequest(func(e homa.Event) {
		if err := h.Reply(e.Request, []byte("ok")); err != nil {
			t.Error(err)
		}
	})
	c, err := s.AddRaw("client", addr(1))
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		at  time.Duration
		typ wire.PacketType
		off uint32
		n   uint32
	}
	var recv []got
	c.OnPacket(func(src netip.Addr, prio uint8, pkt []byte) {
		q, err := wire.Decode(pkt, wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		g := got{at: s.Now(), typ: q.Type()}
		if q.Type() == wire.TypeResend {
			g.off, g.n = q.Resend().Offset(), q.Resend().Length()
		}
		recv = append(recv, g)
	})
	var sent, delivered bytes.Buffer
	if err := s.Capture(sim.CaptureConfig{Sent: &sent, Delivered: &delivered}); err != nil {
		t.Fatal(err)
	}
	u := uint32(p.UnschedBytes)
	length := u + 3000
	send := func(from, to uint32) {
		for off := from; off < to; off += 1424 {
			n := min(1424, to-off)
			f := wire.NewData(wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 2}, length, u, p.CutoffVersion, off, make([]byte, n), false)
			pkt, err := wire.Encode(f, wire.EncodeOptions{Version: wire.VersionCurrent, FixLengths: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Send(h.Addr(), 4, pkt); err != nil {
				t.Fatal(err)
			}
		}
	}
	late := 130 * time.Millisecond // past timeout_ticks after the GRANT
	s.At(time.Microsecond, func() { send(0, u) })
	s.At(late, func() { send(u, length) })
	s.RunUntil(late + 20*time.Millisecond)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	// The reference implementation: a GRANT, RESENDs for the tail until
	// the timeout, none until the late DATA, then RESEND {0, U}.
	var tail, head, gap int
	for _, g := range recv {
		switch {
		case g.typ != wire.TypeResend:
		case g.off == u && g.n == length-u && g.at < late:
			tail++
		case g.off == 0 && g.n == u && g.at > late:
			head++
		default:
			gap++
		}
	}
	if tail != (p.TimeoutTicks-p.ResendTicks)/p.ResendInterval || head == 0 || gap != 0 {
		t.Fatalf("the client got %d RESENDs for [U, end) before the late DATA, %d for [0, U) after it, %d others (%+v); want %d, some, none",
			tail, head, gap, recv, (p.TimeoutTicks-p.ResendTicks)/p.ResendInterval)
	}

	// The check of the server's view.
	rd := func(b *bytes.Buffer) []spec.Event {
		r, err := pcap.NewReader(bytes.NewReader(b.Bytes()), pcap.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []spec.Event
		if err := r.EachEvent(func(e *spec.Event) { x := *e; pcap.OwnEvent(&x); out = append(out, x) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	sp, err := agent.ParamsOf(p).Spec("linux")
	if err != nil {
		t.Fatal(err)
	}
	sp.Slack, sp.Jitter, sp.Reaction = sim.ViewTolerance, sim.ViewTolerance, 0
	rules, err := spec.Select(spec.Rules(), "HOMA-RESEND-*", spec.Must, "linux")
	if err != nil {
		t.Fatal(err)
	}
	hr := (spec.Judge{Profile: "linux", Params: sp, Rules: rules}).Hosts(rd(&sent), rd(&delivered), []netip.Addr{h.Addr()})
	if len(hr) != 1 {
		t.Fatalf("%d host reports, want 1", len(hr))
	}
	for _, v := range hr[0].Violations {
		t.Errorf("server view: %s frame %d: %s", v.Rule, v.Frame, v.Why)
	}
}
