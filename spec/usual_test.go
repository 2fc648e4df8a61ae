package spec_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
)

// TestUsualVerified checks every capture the tests keep (real HomaModule
// captures, the fault captures) under two profiles, with the profile's
// timers and with a real run's (as the captures' READMEs give them),
// through a verifying Checker: at every DATA packet whose facts decide an
// Each rule's Usual result, the rule's Check is called too and must give
// that result (verifyUsual panics otherwise); and at every DATA packet
// a memo predicts (predict.go), the rules are called too and must do
// what the memo says (verifyPredicted), and the trace's lean update
// (Trace.applyPredicted) must leave the state the general Apply leaves
// (Checker.applyPredicted). It also requires that the facts decide
// results on ordinary traffic, and that long messages' DATA is predicted
// and applied on the lean path, so that every shortcut is taken and
// checked.
func TestUsualVerified(t *testing.T) {
	timers := []string{"resend_ticks", "50", "resend_interval", "50", "timeout_ticks", "1000", "request_ack_ticks", "20"}
	total, predicted, applied, bounded := 0, 0, 0, 0
	for _, path := range testCaptures(t) {
		for _, profile := range []string{"linux", "linux-2024"} {
			for _, params := range [][]string{nil, timers} {
				prof, err := spec.LookupProfile(profile)
				if err != nil {
					t.Fatal(err)
				}
				rules, err := spec.Select(spec.Rules(), "", spec.Should, profile)
				if err != nil {
					t.Fatal(err)
				}
				p := prof.Params
				for i := 0; i+1 < len(params); i += 2 {
					if err := p.Set(params[i], params[i+1]); err != nil {
						t.Fatal(err)
					}
				}
				c := spec.NewChecker(profile, p, rules)
				c.SetInferrer(spec.NewInferrer(p))
				if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, c.Feed); err != nil {
					t.Fatal(err)
				}
				c.Finish()
				n := spec.UsualVerified(c)
				if filepath.Base(path) == "a-small-rpcs.pcap" && n == 0 {
					t.Errorf("%s (%s): no Usual result decided on a capture of ordinary RPCs", path, profile)
				}
				total += n
				np, na := spec.PredictVerified(c), spec.ApplyVerified(c)
				if filepath.Base(path) == "b-500k-grants.pcap" && profile == "linux" && strings.Contains(path, "linux-6.13") && (np == 0 || na == 0) {
					t.Errorf("%s (%s): %d DATA predicted, %d applied on the lean path, in a capture of long granted messages", path, profile, np, na)
				}
				predicted += np
				applied += na
				nb := spec.BoundVerified(c)
				if filepath.Base(path) == "b-500k-grants.pcap" && profile == "linux" && strings.Contains(path, "linux-6.13") && nb == 0 {
					t.Errorf("%s (%s): no GRANT answered by the granting set's bounds, in a capture of long granted messages", path, profile)
				}
				bounded += nb
			}
		}
	}
	t.Logf("%d Usual results verified, %d predicted DATA packets, %d of them applied on the lean path, %d GRANT answers of the granting set's bounds", total, predicted, applied, bounded)
}

// TestUsualPassesCounted: the passes the facts decide are counted per
// set of rules and folded into the rules' counts (Checker.foldPasses)
// whenever those are read: a checker whose counts are read after every
// event (Results, as homatest explore does) and one read only at the end
// report the same counts; the counts read as the capture goes never
// fall, and those read after the last event hold every pass of the Each
// rules (Finish adds none), the decided ones included.
func TestUsualPassesCounted(t *testing.T) {
	path := filepath.Join("..", "pcap", "testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap")
	prof, err := spec.LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := spec.Select(spec.Rules(), "", spec.Should, "linux")
	if err != nil {
		t.Fatal(err)
	}
	var reps [2]*spec.Report
	for k := range reps {
		c := spec.NewChecker("linux", prof.Params, rules)
		var res []spec.RuleResult
		prev, grew := 0, 0
		feed := func(e *spec.Event) {
			c.Feed(e)
			if k == 0 {
				return
			}
			res = c.Results(res)
			n := 0
			for _, r := range res {
				n += r.Passed
			}
			if n < prev {
				t.Fatalf("frame %d: %d passes counted, %d before", e.Frame, n, prev)
			}
			if n > prev {
				grew++
			}
			prev = n
		}
		if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, feed); err != nil {
			t.Fatal(err)
		}
		if k == 1 && grew < 10 {
			t.Errorf("the passes counted grew at %d events", grew)
		}
		res = c.Results(res)
		reps[k] = c.Finish()
		// Finish adds no pass of an Each rule: the counts read before
		// it hold them all.
		for i, r := range reps[k].Rules {
			if _, each := r.Rule.Property.(spec.Each); each && res[i].Passed != r.Passed {
				t.Errorf("rule %s: %d passes read after the last event, %d in the report", r.ID, res[i].Passed, r.Passed)
			}
		}
	}
	for i := range reps[0].Rules {
		a, b := reps[0].Rules[i], reps[1].Rules[i]
		if a.ID != b.ID || a.Checked != b.Checked || a.Passed != b.Passed || a.Violated != b.Violated || a.Inconclusive != b.Inconclusive || a.MaxSlack != b.MaxSlack {
			t.Errorf("rule %s: counted at the end %+v, read after every event %+v", a.ID, a, b)
		}
	}
}
