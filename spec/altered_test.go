package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// alteredRun plays a 50000-byte request: 40000 unscheduled bytes, the
// server's GRANT of the rest at priority 0, the scheduled bytes at
// priority 0, the response. With corrupt the GRANT reaches the client
// with a bit flipped on the way, its priority 4: the capture cannot tell
// what the client made of it (Homa has no checksum).
func alteredRun(t *testing.T, corrupt bool) (sent, delivered []Event, b *traceBuilder) {
	b = newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 50000, 0, 40000, 40000, 4)
	g := b.after(20*time.Microsecond).grant(false, 2, 50000, 0)
	b.after(20*time.Microsecond).message(true, 2, 50000, 40000, 50000, 40000, 0)
	b.after(20*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	sent = b.events
	delivered = deliver(sent, 10*time.Microsecond, nil)
	if corrupt {
		odd := newTrace(t, wire.VersionCurrent)
		odd.now = delivered[g-1].Time
		odd.grant(false, 2, 50000, 4)
		bad := odd.events[0]
		bad.Frame = g
		delivered[g-1] = bad
	}
	return sent, delivered, b
}

// TestJudgeHostsAltered: the client's scheduled DATA after a GRANT
// altered on the way (no packet of the as-sent capture matches the one
// delivered), at another priority than the delivered GRANT says
// (HOMA-GRANT-008), is not charged to the client (HostReport.Altered,
// counted inconclusive), by Hosts and HostsStream alike; the run without
// the alteration charges nothing and alters nothing.
func TestJudgeHostsAltered(t *testing.T) {
	prof, _ := LookupProfile("linux")
	j := Judge{Profile: "linux", Params: prof.Params, Rules: Rules()}
	for _, corrupt := range []bool{false, true} {
		sent, delivered, b := alteredRun(t, corrupt)
		hosts := []netip.Addr{b.client, b.server}
		streamed, err := j.HostsStream(t.Context(), streamOf(sent), streamOf(delivered), hosts)
		if err != nil {
			t.Fatal(err)
		}
		for k, reps := range [][]HostReport{j.Hosts(sent, delivered, hosts), streamed} {
			c := reps[0]
			switch {
			case len(c.Violations) != 0:
				t.Errorf("corrupt %v, view %d: client charged %d, first %v", corrupt, k, len(c.Violations), c.Violations[0])
			case corrupt && len(c.Altered) == 0:
				t.Errorf("corrupt %v, view %d: nothing altered; want the client's scheduled DATA", corrupt, k)
			case !corrupt && len(c.Altered) != 0:
				t.Errorf("corrupt %v, view %d: altered %v, want none", corrupt, k, c.Altered)
			}
			inc, want := 0, 0
			for _, rr := range c.ChargedRules() {
				inc += rr.Inconclusive
			}
			for _, rr := range c.Report.Rules {
				want += rr.Inconclusive
			}
			if inc != want+len(c.Altered) {
				t.Errorf("corrupt %v, view %d: ChargedRules counts %d inconclusive, want %d and the %d altered", corrupt, k, inc, want, len(c.Altered))
			}
		}
	}
}

// TestAlteredTouchesAlso: a finding judged in one RPC's packet about
// another RPC (an ack naming it) rests on that RPC's packets too: once an
// altered packet of RPC 4 reached the host, a finding in RPC 6's packet
// about RPC 4 (Finding.Also) is not charged; one about RPC 8 is, and so is
// one about RPC 4 from before the altered packet came.
func TestAlteredTouchesAlso(t *testing.T) {
	c, s := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	at := time.Unix(100, 0)
	k4, k6, k8 := RPCKey{Client: c, Server: s, ClientID: 4}, RPCKey{Client: c, Server: s, ClientID: 6}, RPCKey{Client: c, Server: s, ClientID: 8}
	var a alteredSet
	a.note(7, k4, true, at)
	for _, tc := range []struct {
		also *RPCKey
		t    time.Time
		want bool
	}{
		{&k4, at.Add(time.Millisecond), true},
		{&k8, at.Add(time.Millisecond), false},
		{nil, at.Add(time.Millisecond), false},
		{&k4, at.Add(-time.Millisecond), false},
	} {
		f := Finding{Frame: 9, RPC: &k6, Also: tc.also, Time: tc.t}
		if got := a.touches(&f); got != tc.want {
			t.Errorf("also %v at %v: touches %v, want %v", tc.also, tc.t.Sub(at), got, tc.want)
		}
	}
	// ACK-004's finding about the acked RPC names it.
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(false, 2, 3000, 0, 1424, 6, nil)
	i := b.after(time.Millisecond).data(true, 4, 100, 0, 100, 7, func(f *wire.DataFields) { f.Ack = wire.AckEntry{ClientID: 2, ServerPort: 4000} })
	rep := b.check("linux", "HOMA-ACK-004")
	wantViolations(t, rep, "HOMA-ACK-004", i)
	if f := rep.Violations[0]; f.Also == nil || f.Also.ClientID != 2 || f.RPC.ClientID != 4 {
		t.Errorf("finding %+v: want RPC 4, also RPC 2", f)
	}
}
