package explore

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestShrinkUnstable: in real time a failing case is rerun as found
// before it is shrunk. One that does not fail again (a flaky verdict) is
// not shrunk and is reported unstable, with how often it failed again;
// one that fails every time is shrunk as before, and in virtual time
// nothing is rerun. The old shrinker spent every shrink run on a case
// that never failed again (each smaller candidate rejected for not
// failing) and reported it "shrunk from 316 to 316 tester packets in 400
// runs", unstable only when its last run happened not to fail: it had no
// reruns, and this test fails on it (Reruns and ShrinkText did not exist).
func TestShrinkUnstable(t *testing.T) {
	rule := "HOMA-GRANT-013"
	found := &Case{RPCs: []RPC{{Host: 0, Request: 100000, Response: 100}, {Host: 1, Request: 200000, Response: 100}, {Host: 0, Request: 300, Response: 100}}}
	for _, c := range []struct {
		name    string
		virtual bool
		// fails says whether a run of case x fails with the rule (n: the
		// run's number, from 1).
		fails            func(x *Case, n int) bool
		reruns, refailed int
		unstable         bool
		// shrunk: the shrinking passes ran (candidates were tried).
		shrunk bool
		text   string
	}{
		{"never again", false, func(*Case, int) bool { return false }, 3, 0, true, false, "316 tester packets, not shrunk (3 runs)"},
		{"once in three", false, func(x *Case, n int) bool { return n == 2 && len(x.RPCs) == 3 }, 3, 1, true, true, "shrunk from 316 to 316"},
		{"every time", false, func(x *Case, _ int) bool { return len(x.RPCs) == 3 }, 3, 3, false, true, "shrunk from 316 to 316"},
		{"virtual", true, func(x *Case, _ int) bool { return len(x.RPCs) == 3 }, 0, 0, false, true, "shrunk from 316 to 316"},
	} {
		s := &session{ctx: context.Background(), info: worldInfo{virtual: c.virtual}, res: &Result{}}
		out := &outcome{fail: &Failure{Rule: rule}, sent: 316}
		runs := 0
		k := &shrinker{s: s, rule: rule, best: found, out: out, m: measureOf(found, out), max: 400,
			play: func(x *Case) (*outcome, error) {
				runs++
				o := &outcome{sent: 316}
				if c.fails(x, runs) {
					o.fail = &Failure{Rule: rule}
				}
				return o, nil
			}}
		f := &Found{Failure: *out.fail, Original: found, OriginalPackets: 316, Packets: 316}
		if err := k.search(f); err != nil {
			t.Fatal(err)
		}
		if f.Reruns != c.reruns || f.Refailed != c.refailed || f.Unstable != c.unstable {
			t.Errorf("%s: reruns %d, refailed %d, unstable %v; want %d, %d, %v", c.name, f.Reruns, f.Refailed, f.Unstable, c.reruns, c.refailed, c.unstable)
		}
		if tried := f.ShrinkRuns > f.Reruns; tried != c.shrunk || f.ShrinkRuns != runs {
			t.Errorf("%s: %d shrink runs (%d played) after %d reruns: candidates tried %v, want %v", c.name, f.ShrinkRuns, runs, f.Reruns, tried, c.shrunk)
		}
		if got := f.ShrinkText(); !strings.HasPrefix(got, c.text) {
			t.Errorf("%s: %q, want it to begin %q", c.name, got, c.text)
		}
		why := f.UnstableWhy()
		switch {
		case c.unstable && !strings.Contains(why, fmt.Sprintf("in %d of 3 reruns", c.refailed)):
			t.Errorf("%s: unstable because %q, want how often it failed again", c.name, why)
		case !c.unstable && why != "":
			t.Errorf("%s: stable, yet %q", c.name, why)
		}
	}
}

// TestShrinkOffText: with shrinking off (--shrink-runs 0) the case is
// reported not shrunk, and one run is "1 run". Before, it read "shrunk
// from 6 to 29 tester packets in 0 runs" (namespaces) or "shrunk from 6
// to 6 … in 0 runs" (sim), and one run "1 runs".
func TestShrinkOffText(t *testing.T) {
	rule := "HOMA-GRANT-013"
	c := &Case{RPCs: []RPC{{Host: 0, Request: 100000, Response: 100}}}
	for _, virtual := range []bool{false, true} {
		s := &session{ctx: context.Background(), info: worldInfo{virtual: virtual}, res: &Result{}}
		out := &outcome{fail: &Failure{Rule: rule}, sent: 6}
		played := 0
		k := &shrinker{s: s, rule: rule, best: c, out: out, m: measureOf(c, out), max: -1,
			play: func(*Case) (*outcome, error) { played++; return out, nil }}
		f := &Found{Failure: *out.fail, Original: c, OriginalPackets: 6, Packets: 29}
		if err := k.search(f); err != nil {
			t.Fatal(err)
		}
		if got, want := f.ShrinkText(), "29 tester packets, not shrunk (--shrink-runs 0)"; got != want || played != 0 {
			t.Errorf("virtual %v: %q after %d runs, want %q after none", virtual, got, played, want)
		}
	}
	for _, c := range []struct {
		f    Found
		want string
	}{
		{Found{OriginalPackets: 6, Packets: 4, ShrinkRuns: 1}, "shrunk from 6 to 4 tester packets in 1 run"},
		{Found{Packets: 6, ShrinkRuns: 1, Reruns: 1}, "6 tester packets, not shrunk (1 run)"},
	} {
		if got := c.f.ShrinkText(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
