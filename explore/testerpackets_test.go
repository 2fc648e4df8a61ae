package explore

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

// TestTesterPacketsFramed: the tester hosts frame their packets as
// HomaModule does (wire.NewData: seg.offset 0xFFFFFFFF in a first
// transmission, HOMA-WIRE-010; it charged 12146 findings to them when the
// explorer wrote the offset there). Over a session's cases against the
// reference implementation (the simulator: counted in cases, so the
// verdict does not depend on load) the checker charges no HOMA-WIRE-*
// finding to a tester host. Findings of other rules charged to them are
// logged: the network the case plays (duplicates, delays) and the
// explorer's deliberate timing make some.
func TestTesterPacketsFramed(t *testing.T) {
	ctx := context.Background()
	s, release, err := newSession(ctx, Config{Env: SimEnv(nil, nil), Budget: time.Hour, Seed: 7, Level: spec.Should})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	byRule := map[string]int{}
	examples := map[string]string{}
	for range 300 {
		c, prob := s.next()
		out, err := s.play(c, prob, s.rng.Uint64(), false)
		if err != nil {
			t.Fatal(err)
		}
		s.absorb(c, prob, out)
		for _, f := range out.report.Violations {
			if f.ChargedTo.IsValid() && f.ChargedTo != s.res.iutAddr {
				byRule[f.Rule]++
				if examples[f.Rule] == "" {
					examples[f.Rule] = fmt.Sprintf("%s: %s (frame %d)", f.ChargedTo, f.Why, f.Frame)
				}
			}
		}
	}
	var rules []string
	for r := range byRule {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		if strings.HasPrefix(r, "HOMA-WIRE-") {
			t.Errorf("%s: %d findings charged to tester hosts, e.g. %s", r, byRule[r], examples[r])
		} else {
			t.Logf("%s: %d findings charged to tester hosts, e.g. %s", r, byRule[r], examples[r])
		}
	}
}
