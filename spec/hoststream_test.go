package spec

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// sliceStream is an EventStream over events (which own their bytes).
type sliceStream struct {
	evs []Event
	i   int
}

func (s *sliceStream) Next() (*Event, error) {
	if s.i >= len(s.evs) {
		return nil, io.EOF
	}
	s.i++
	return &s.evs[s.i-1], nil
}
func (s *sliceStream) Own(*Event)   {}
func (s *sliceStream) Close() error { return nil }

// streamOf opens evs as an EventStream.
func streamOf(evs []Event) func() (EventStream, error) {
	return func() (EventStream, error) { return &sliceStream{evs: evs}, nil }
}

// sameAsHosts fails unless HostsStream judges sent and delivered as
// Hosts does: the same reports, charged and excused findings, and the
// same source and event at every frame a finding names.
func sameAsHosts(t *testing.T, j Judge, sent, delivered []Event, hosts []netip.Addr) {
	t.Helper()
	want := j.Hosts(sent, delivered, hosts)
	got, err := j.HostsStream(context.Background(), streamOf(sent), streamOf(delivered), hosts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d reports, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if !reflect.DeepEqual(g.Report, w.Report) || !reflect.DeepEqual(g.Violations, w.Violations) || !reflect.DeepEqual(g.Excused, w.Excused) || !reflect.DeepEqual(g.Altered, w.Altered) ||
			g.Charged != w.Charged || g.NotCharged != w.NotCharged || g.Host != w.Host {
			t.Fatalf("host %v: streamed report\n%+v\nwant\n%+v", w.Host, g, w)
		}
		for _, v := range w.Report.Violations {
			for _, n := range append([]int{v.Frame}, v.Frames...) {
				ws, wok := w.Source(n)
				gs, gok := g.Source(n)
				we, _ := w.Event(n)
				ge, _ := g.Event(n)
				if ws != gs || wok != gok || (we == nil) != (ge == nil) || we != nil && (!we.Time.Equal(ge.Time) || we.Frame != ge.Frame || KeyOf(we) != KeyOf(ge)) {
					t.Errorf("host %v view frame %d: streamed %+v %v, want %+v %v", w.Host, n, gs, gok, ws, wok)
				}
			}
			if g.LocateText(v.Why, "s", "d") != w.LocateText(v.Why, "s", "d") {
				t.Errorf("host %v: streamed %q, want %q", w.Host, g.LocateText(v.Why, "s", "d"), w.LocateText(v.Why, "s", "d"))
			}
		}
	}
}

// TestHostsStreamSameAsHosts: HostsStream gives Hosts' reports on the
// host-view traces (a late BUSY charged to the server, one queued in the
// switch, a retransmission at the wrong level charged to the client),
// also when the as-sent capture interleaves its hosts out of time order
// (each host's own events in order, as the simulator's capture writes
// them), and with a reaction time that excuses timing findings.
func TestHostsStreamSameAsHosts(t *testing.T) {
	rules, p := hostViewRules(t)
	late, resend := lateBusy(t)
	level0 := newTrace(t, wire.VersionCurrent)
	level0.retransmitAtLevel0()
	cases := []struct {
		name      string
		b         *traceBuilder
		delivered []Event
	}{
		{"late BUSY", late, deliver(late.events, 10*time.Microsecond, nil)},
		{"queued RESEND", late, deliver(late.events, 10*time.Microsecond, map[int]time.Duration{resend: 24 * time.Millisecond})},
		{"retransmission at level 0", level0, deliver(level0.events, 5*time.Microsecond, nil)},
	}
	for _, c := range cases {
		hosts := []netip.Addr{c.b.client, c.b.server}
		// Each host's events in order, the hosts one after the other.
		var byHost []Event
		for _, h := range hosts {
			for _, e := range c.b.events {
				if e.Src == h {
					byHost = append(byHost, e)
				}
			}
		}
		for _, reaction := range []time.Duration{0, 30 * time.Millisecond} {
			j := Judge{Profile: "linux", Params: p, Rules: rules}
			j.Params.Reaction = reaction
			t.Run(c.name, func(t *testing.T) {
				sameAsHosts(t, j, c.b.events, c.delivered, hosts)
				sameAsHosts(t, j, byHost, c.delivered, hosts)
				sameAsHosts(t, j, c.b.events, c.delivered, hosts[1:])
			})
		}
	}
}

// TestHostsStreamUnordered: a host's events stepping back in time in
// either capture make HostsStream fail with ErrUnordered (Hosts' sort
// would reorder them).
func TestHostsStreamUnordered(t *testing.T) {
	rules, p := hostViewRules(t)
	b, _ := lateBusy(t)
	j := Judge{Profile: "linux", Params: p, Rules: rules}
	back := append([]Event{}, b.events...)
	back[0], back[1] = back[1], back[0] // the client's DATA after its RESEND
	hosts := []netip.Addr{b.client, b.server}
	if _, err := j.HostsStream(context.Background(), streamOf(back), streamOf(b.events), hosts); !errors.Is(err, ErrUnordered) {
		t.Errorf("sent out of order: err %v, want ErrUnordered", err)
	}
	if _, err := j.HostsStream(context.Background(), streamOf(b.events), streamOf(back), hosts); !errors.Is(err, ErrUnordered) {
		t.Errorf("delivered out of order: err %v, want ErrUnordered", err)
	}
}

// TestHostsStreamStartedElsewhere: a request whose offset 0 the switch
// lost on its way to the server (in the as-sent capture, not the
// as-delivered one): the server's view sees the RPC first at a later
// segment and RESENDs the first bytes; the client's link showed the RPC
// start, so Hosts' views judge it from its start (Judge.Started from the
// whole as-sent capture). HostsStream, which reads each capture once,
// learns the start in step with the server's view (Checker.NoteStarted)
// and gives the same reports, fed on one CPU or several (go test -cpu
// 1,2: the views' checkers fed directly or in batches by goroutines);
// without it, the server's view put the RPC's findings down to an RPC
// begun before the capture.
func TestHostsStreamStartedElsewhere(t *testing.T) {
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	b := newTrace(t, wire.VersionCurrent)
	b.after(time.Millisecond)
	first := b.data(true, 2, 3000, 0, 1424, 5, nil)
	b.after(10*time.Microsecond).data(true, 2, 3000, 1424, 1424, 5, nil)
	b.data(true, 2, 3000, 2848, 152, 5, nil)
	// The server asks for all of it again, late: a violation of a
	// receiver that had the RPC's history, inconclusive for one that
	// came in at a later segment.
	b.after(900*time.Millisecond).resend(false, 2, 0, 3000, 7)
	b.after(30*time.Microsecond).resent(true, 2, 3000, 0, 1424, 7)
	var delivered []Event
	for _, e := range deliver(b.events, 10*time.Microsecond, nil) {
		if e.Frame != first {
			delivered = append(delivered, e)
		}
	}
	hosts := []netip.Addr{b.client, b.server}
	j := Judge{Profile: "linux", Params: prof.Params, Rules: Rules()}
	want := j.Hosts(b.events, delivered, hosts)
	if len(want[1].Violations) == 0 {
		t.Fatalf("the server's view judged from the RPC's start finds no violation: %+v", want[1].Report)
	}
	sameAsHosts(t, j, b.events, delivered, hosts)
}
