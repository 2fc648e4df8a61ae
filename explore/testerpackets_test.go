package explore

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestTesterPacketsFramed: the tester hosts play the protocol as
// HomaModule does, except where the case plays it otherwise on purpose,
// and say so. Over sessions of cases against the reference implementation
// (the simulator: counted in cases, so the verdict does not depend on
// load) every finding the checker charges to a tester host, at any level,
// is one of:
//   - at a tester packet marked deliberate (tester.DeliberatePrefix, as
//     the conformance tester marks its own): a copy the explored network
//     duplicated or delayed, a reaction to an IUT packet it duplicated or
//     delayed, a NEED_ACK or RESEND whose premise the network's losses
//     hid from the IUT, a packet of an RPC the host forgot on purpose;
//   - at an IUT packet whose answer the tester host owed, when the
//     explored network lost, duplicated or delayed a packet between the
//     two within the answer's bound (outcome.netDuring).
//
// Framing in particular: no HOMA-WIRE-* finding at all (seg.offset
// 0xFFFFFFFF in a first transmission, wire.NewData: it charged 12146
// findings to the tester hosts when the explorer wrote the offset there).
// Before the marks and the fixes to the peer model (tx_end, see
// run.txEnd) the session of seed 7 charged 544 unmarked findings to them
// (HOMA-RESEND-010 391, GRANT-008 30, CUTOFF-001 24, GRANT-003 22 ...).
func TestTesterPacketsFramed(t *testing.T) {
	ctx := context.Background()
	marked := map[string]int{}
	for _, seed := range []uint64{7, 13, 15} {
		s, release, err := newSession(ctx, Config{Env: SimEnv(nil, nil), Budget: time.Hour, Seed: seed, Level: spec.Should})
		if err != nil {
			t.Fatal(err)
		}
		iut, p := s.res.iutAddr, s.info.judged
		for i := range 300 {
			c, prob := s.next()
			out, err := s.play(c, prob, s.rng.Uint64(), false)
			if err != nil {
				release()
				t.Fatal(err)
			}
			s.absorb(c, prob, out)
			for _, f := range out.report.Violations {
				if !f.ChargedTo.IsValid() || f.ChargedTo == iut {
					continue
				}
				where := fmt.Sprintf("seed %d case %d: %s %s charged to %s at frame %d (%v>%v): %s", seed, i, f.Rule, f.Level, f.ChargedTo, f.Frame, f.Src, f.Dst, f.Why)
				switch {
				case strings.HasPrefix(f.Rule, "HOMA-WIRE-"):
					t.Errorf("%s (a framing finding is never deliberate here)", where)
				case f.Src != iut && f.Note == "":
					t.Errorf("%s: the tester's frame carries no note", where)
				case f.Src != iut && strings.HasPrefix(f.Note, tester.DeliberatePrefix):
					marked[f.Rule]++
				case f.Src != iut:
					t.Errorf("%s: not marked deliberate (%q)", where, f.Note)
				case out.netDuring(f.ChargedTo, f.Time, f.Time.Add(p.AnswerBound()+p.Ticks(1))):
					marked[f.Rule+" (answer)"]++
				default:
					t.Errorf("%s: an answer the host owed, and the network left the two alone", where)
				}
			}
		}
		release()
	}
	var rules []string
	for r := range marked {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		t.Logf("%s: %d findings at deliberate tester packets", r, marked[r])
	}
	// The sessions play duplicating and delaying networks: a test whose
	// marks went missing would see none.
	if marked["HOMA-RESEND-010"] == 0 {
		t.Errorf("no HOMA-RESEND-010 finding at a network duplicate: the marks are missing")
	}
}

// TestReplayKeepsMarks: a case's deliberate tester packets keep their
// mark through its script ("# deliberate: why") into the replay's
// capture, so that homatest check on that capture charges what the
// session charged to the tester to the tester as deliberate too.
func TestReplayKeepsMarks(t *testing.T) {
	ctx := context.Background()
	s, release, err := newSession(ctx, Config{Env: SimEnv(nil, nil), Budget: time.Hour, Seed: 7, Level: spec.Should})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var c *Case
	var out *outcome
	want := map[string]int{}
	for range 300 {
		cc, prob := s.next()
		o, err := s.play(cc, prob, s.rng.Uint64(), true)
		if err != nil {
			t.Fatal(err)
		}
		s.absorb(cc, prob, o)
		clear(want)
		for _, rec := range o.log {
			if rec.kind == recSent && strings.HasPrefix(rec.text, tester.DeliberatePrefix) {
				want[rec.text]++
			}
		}
		if o.fail == nil && len(want) >= 2 {
			cc.Choices = o.choices
			c, out = cc, o
			break
		}
	}
	if c == nil {
		t.Fatal("no passing case with deliberate tester packets in 300 cases")
	}
	sc, err := ParseScript(strings.NewReader(writeScript(s, &Found{Failure: Failure{Rule: AppStuck, Level: spec.Must}, Shrunk: c, Original: c}, out)))
	if err != nil {
		t.Fatal(err)
	}
	rr, err := Replay(ctx, SimEnv(nil, nil), sc, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "replay.pcapng")
	if err := os.WriteFile(path, rr.Capture, 0o644); err != nil {
		t.Fatal(err)
	}
	pr, err := pcap.Open(path, pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := map[string]int{}
	for {
		f, err := pr.Next()
		if err != nil {
			break
		}
		if strings.HasPrefix(f.Comment, tester.DeliberatePrefix) {
			got[f.Comment]++
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("the replay's capture marks %v deliberate, the case's log %v", got, want)
	}
}
