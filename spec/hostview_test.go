package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// hostViewRules are the rules the host-view tests check: an obligation
// charged to the trigger's receiver and a per-packet rule charged to the
// sender.
func hostViewRules(t *testing.T) ([]*Rule, Params) {
	t.Helper()
	rules, err := Select(Rules(), "HOMA-RESEND-002,HOMA-RESEND-004", 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	return rules, prof.Params
}

// deliver returns the events as delivered: each one lag after it was sent,
// except those in late, which arrive late[i] after they were sent.
func deliver(sent []Event, lag time.Duration, late map[int]time.Duration) []Event {
	out := make([]Event, len(sent))
	for i, e := range sent {
		d := lag
		if l, ok := late[e.Frame]; ok {
			d = l
		}
		e.Time = e.Time.Add(d)
		out[i] = e
	}
	return out
}

// lateBusy plays a client's RESEND answered by the server's BUSY 25 ms
// later (HOMA-RESEND-002 allows 20 ms), then the response; it returns the
// trace and the RESEND's frame.
func lateBusy(t *testing.T) (*traceBuilder, int) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	resend := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(25*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	b.after(time.Millisecond).data(false, 2, 100, 0, 100, 7, nil)
	return b, resend
}

// charged returns the rule IDs charged to each host.
func charged(reps []HostReport) map[netip.Addr][]string {
	m := map[netip.Addr][]string{}
	for _, r := range reps {
		for _, v := range r.Violations {
			m[r.Host] = append(m[r.Host], v.Rule)
		}
	}
	return m
}

// TestJudgeHostsChargesReceiverOfObligation: the client's RESEND is
// answered by the server's BUSY 25 ms later (HOMA-RESEND-002 allows 20 ms).
// The finding is at the RESEND, which the client sent, but it is the
// server's doing: only the server's view is charged.
func TestJudgeHostsChargesReceiverOfObligation(t *testing.T) {
	b, resend := lateBusy(t)
	rules, p := hostViewRules(t)
	reps := Judge{Profile: "linux", Params: p, Rules: rules}.Hosts(b.events, deliver(b.events, 10*time.Microsecond, nil), nil)
	if len(reps) != 2 || reps[0].Host != b.client || reps[1].Host != b.server {
		t.Fatalf("hosts %v, want client then server", reps)
	}
	got := charged(reps)
	if len(got[b.client]) != 0 || len(got[b.server]) != 1 || got[b.server][0] != "HOMA-RESEND-002" {
		t.Fatalf("charged %v, want one HOMA-RESEND-002 for the server only", got)
	}
	// The server's view holds the RESEND as it was delivered to it.
	srv := reps[1]
	v := srv.Violations[0]
	if src := srv.Sources[v.Frame-1]; !src.Delivered || src.Frame != resend {
		t.Errorf("violation at view frame %d from %+v, want the delivered RESEND (frame %d)", v.Frame, src, resend)
	}
	if want := b.events[resend-1].Time.Add(10 * time.Microsecond); !v.Time.Equal(want) {
		t.Errorf("violation time %v, want the delivery time %v", v.Time, want)
	}
	// The client's view has the same finding (it saw the late BUSY too),
	// but it is not the client's doing.
	if !reps[0].Report.Violated() {
		t.Errorf("client view: no finding at all; the late BUSY should be visible there too")
	}
}

// TestJudgeHostsQueueingIsNotAViolation: the RESEND waits 24 ms in the
// switch and the server answers 1 ms after it arrived. As sent, the answer
// looks 25 ms late; each host's own link shows it in time at the server,
// so nobody is charged.
func TestJudgeHostsQueueingIsNotAViolation(t *testing.T) {
	b, resend := lateBusy(t)
	rules, p := hostViewRules(t)
	delivered := deliver(b.events, 10*time.Microsecond, map[int]time.Duration{resend: 24 * time.Millisecond})

	// The switch-wide as-sent capture reports it.
	c := NewChecker("linux", p, rules)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	wantViolations(t, c.Finish(), "HOMA-RESEND-002", resend)

	reps := Judge{Profile: "linux", Params: p, Rules: rules}.Hosts(b.events, delivered, []netip.Addr{b.server, b.client})
	if got := charged(reps); len(got) != 0 {
		t.Fatalf("charged %v, want nothing", got)
	}
	if reps[0].Host != b.server || reps[0].Report.Events != 4 {
		t.Errorf("first report: host %v with %d events, want the server with 4 (2 sent, 2 received)", reps[0].Host, reps[0].Report.Events)
	}
}

// TestJudgeHostsChargesSender: the client retransmits at level 0 when
// the server's RESEND asked for 7 (HOMA-RESEND-004, a per-packet rule): the
// client is charged once, though the server's view also shows the packet.
func TestJudgeHostsChargesSender(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	bad := b.retransmitAtLevel0()
	rules, p := hostViewRules(t)
	// Delivered 5 µs after sending: before the server's GRANT (10 µs), so
	// the server's view starts the RPC with its request.
	reps := Judge{Profile: "linux", Params: p, Rules: rules}.Hosts(b.events, deliver(b.events, 5*time.Microsecond, nil), nil)
	got := charged(reps)
	if len(got[b.server]) != 0 || len(got[b.client]) != 1 || got[b.client][0] != "HOMA-RESEND-004" {
		t.Fatalf("charged %v, want one HOMA-RESEND-004 for the client only", got)
	}
	cl := reps[0]
	if src := cl.Sources[cl.Violations[0].Frame-1]; src.Delivered || src.Frame != bad {
		t.Errorf("client violation from %+v, want the sent retransmission (frame %d)", src, bad)
	}
	wantViolations(t, reps[1].Report, "HOMA-RESEND-004", reps[1].Report.Violations[0].Frame) // seen, not charged
}

// TestJudgeHostsEmpty: hosts without events get empty reports; no
// events and no hosts give none.
func TestJudgeHostsEmpty(t *testing.T) {
	rules, p := hostViewRules(t)
	if r := (Judge{Profile: "linux", Params: p, Rules: rules}).Hosts(nil, nil, nil); len(r) != 0 {
		t.Fatalf("%d reports for no events", len(r))
	}
	h := netip.MustParseAddr("198.18.0.9")
	r := Judge{Profile: "linux", Params: p, Rules: rules}.Hosts(nil, nil, []netip.Addr{h})
	if len(r) != 1 || r[0].Host != h || r[0].Report.Events != 0 || len(r[0].Violations) != 0 {
		t.Fatalf("got %+v, want one empty report for %v", r, h)
	}
}

// TestHostReportCounts: the client's view of a late BUSY finds the
// HOMA-RESEND-002 violation too, but charges it to the server: the
// client's report lists it (Report.Violations) without counting it
// (Charged 0, NotCharged 1), and its charged rule table adds up: checked =
// passed + violated + inconclusive, the uncharged violation in none of
// them. The server's counts it.
func TestHostReportCounts(t *testing.T) {
	b, _ := lateBusy(t)
	rules, p := hostViewRules(t)
	reps := Judge{Profile: "linux", Params: p, Rules: rules}.Hosts(b.events, deliver(b.events, 10*time.Microsecond, nil), nil)
	client, server := reps[0], reps[1]
	if len(client.Report.Violations) != 1 || client.Report.Violations[0].ChargedTo != b.server {
		t.Fatalf("client view's report: %+v, want one finding charged to the server", client.Report.Violations)
	}
	if client.Charged != 0 || client.NotCharged != 1 || server.Charged != 1 || server.NotCharged != 0 {
		t.Fatalf("client charged %d not charged %d, server %d %d, want 0 1 1 0", client.Charged, client.NotCharged, server.Charged, server.NotCharged)
	}
	for _, hr := range reps {
		for _, rr := range hr.ChargedRules() {
			if rr.Checked != rr.Passed+rr.Violated+rr.Inconclusive {
				t.Errorf("%v %s: checked %d != passed %d + violated %d + inconclusive %d", hr.Host, rr.ID, rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive)
			}
			if want := map[bool]int{true: 1}[hr.Host == b.server && rr.ID == "HOMA-RESEND-002"]; rr.Violated != want {
				t.Errorf("%v %s: violated %d, want %d", hr.Host, rr.ID, rr.Violated, want)
			}
		}
	}
	for _, rr := range client.Report.Rules {
		if rr.ID == "HOMA-RESEND-002" && rr.Violated != 1 {
			t.Errorf("client view's own table: %s violated %d, want 1 (the view found it)", rr.ID, rr.Violated)
		}
	}
}

// TestLocateText: every frame number of a host view's finding names the
// capture its event came from; a number outside the view says it is a
// view position; a view without Sources (Judge.Host, numbered as its
// file) keeps its text.
func TestLocateText(t *testing.T) {
	hr := HostReport{Sources: []ViewSource{{Frame: 10}, {Delivered: true, Frame: 7}}}
	got := hr.LocateText("frame 2 answers frame 1 (frame 9; frames seen 12)", "sent.pcapng", "delivered.pcapng")
	if want := "delivered.pcapng frame 7 answers sent.pcapng frame 10 (view frame 9; frames seen 12)"; got != want {
		t.Errorf("LocateText = %q, want %q", got, want)
	}
	if got := (&HostReport{}).LocateText("frame 2", "s", "d"); got != "frame 2" {
		t.Errorf("without Sources: %q, want the text as it is", got)
	}
}
