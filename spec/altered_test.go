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
