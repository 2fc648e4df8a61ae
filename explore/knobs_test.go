package explore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/homa"
)

// knobParams are the IUT's parameters for the knob sessions: the ref's
// 1 Gbit/s settings (unsched_bytes 3000, as `homatest explore --param
// link_bps=1000000000`), so that messages which need grants are a few
// packets long.
var knobParams = agent.Params{"link_bps": int64(1e9)}

// knobCases bounds each knob's search, in sessions of knobSession cases
// with seeds 1, 2, ... (a multi-start search: one session's corpus and
// rewards can hold it in one region of the state space, as seed 1's did
// for no-busy once new rules changed its coverage feedback, and again
// once the tester hosts counted tx_end as HomaModule does, and again when
// HOMA-RESEND-026 made the IUT's RESEND rounds new coverage). A failure of
// the knob's rules that does not shrink to maxShrunkPackets counts its
// cases and the search goes on with the next seed. Since HOMA-RESEND-026,
// no-busy's HOMA-RESEND-002 first shows in seed 19 (case 1512, 42,912
// cases in all with 2300 per seed, shrunk to 6 packets; before it, seed 1),
// resend-past-grant's HOMA-RESEND-012 in seed 8 (17,621 cases in all) and
// forget-held-rpc's HOMA-RESEND-019 in seed 1 (case 406): hence a bound
// of 60,000 cases, 1.4x the slowest. The search is counted in
// cases, not wall time, so the test's verdict is the same on a loaded
// machine (the simulator is deterministic: a seed gives the same cases).
const (
	knobCases   = 60000
	knobSession = 2300
)

// beyondExplorer are the knobs the explorer cannot provoke, with why: a
// fault that shows only after the IUT timed a call out needs its server
// silent for timeout_ticks, and the explorer's tester hosts are legal
// peers, which answer every RESEND, while its network perturbs only the
// first DefaultWindow ticks. The conformance suite catches them
// (RESEND-timeout times a call out; RUN-capture judges what follows;
// GRANT-long-request holds back a packet) and TestFaultKnobsCaught
// (package homa) provokes them.
var beyondExplorer = map[string]string{
	string(homa.FaultReuseTimedOutID): "shows only after a call timed out",
	// HOMA-GRANT-024 judges a raise of more than 2·max_gro_skbs (40)
	// segments, a window's worth of one message alone at its receiver:
	// the knob sessions' messages are a few packets long.
	string(homa.FaultGrantStopAndWait): "shows only in a message longer than 40 segments past its window",
}

// maxShrunkPackets is issue 20's bound on the tester packets of a shrunk
// failure.
const maxShrunkPackets = 20

// TestKnobsFoundAndShrunk: with each fault knob on (but beyondExplorer's), a session finds a
// violation of one of the rules the fault catalogue says catch the knob
// (homa.FaultInfo.CaughtBy), shrinks it to at most 20 tester packets,
// and the shrunk failure's script replays to the same failure.
// KNOB=name runs one knob.
func TestKnobsFoundAndShrunk(t *testing.T) {
	for _, f := range homa.FaultNames() {
		if k := os.Getenv("KNOB"); k != "" && k != f.Name {
			continue
		}
		if why := beyondExplorer[f.Name]; why != "" {
			t.Logf("%s: not explored: %s", f.Name, why)
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			// The rules the fault catalogue says catch the knob: the
			// one table the homa test and the mutation matrix also use.
			rules := f.CaughtBy
			if len(rules) == 0 {
				t.Fatalf("knob %s is caught by no rule in the fault catalogue (homa/faults.go)", f.Name)
			}
			start := time.Now()
			var found *Found
			var got, big []string
			cases, seed := 0, uint64(0)
			for found == nil && cases < knobCases {
				seed++
				res, err := Explore(context.Background(), Config{Env: SimEnv([]string{f.Name}, knobParams), Budget: time.Hour,
					MaxCases: min(knobSession, knobCases-cases), Seed: seed, KeepGoing: true, StopAt: rules, ShrinkRuns: 600})
				if err != nil {
					t.Fatal(err)
				}
				stopped := false
				for _, x := range res.Failures {
					switch {
					case slices.Contains(rules, x.Rule) && x.Packets > maxShrunkPackets:
						big = append(big, fmt.Sprintf("%s in seed %d case %d shrunk to %d packets", x.Rule, seed, x.Case, x.Packets))
						cases += x.Case
						stopped = true
					case slices.Contains(rules, x.Rule):
						found = x
						cases += x.Case
						stopped = true
					default:
						got = append(got, x.Rule)
					}
				}
				if !stopped {
					cases += res.Cases
				}
			}
			if found == nil {
				t.Fatalf("%s: no failure of %v shrunk to at most %d packets in %d cases (found: %v; too big: %v)", f.Name, rules, maxShrunkPackets, cases, got, big)
			}
			t.Logf("%-22s %-16s seed %d case %5d (%5d in all) after %6.2fs  packets %4d -> %3d (%d shrink runs, %.1fs in all)",
				f.Name, found.Rule, seed, found.Case, cases, found.After.Seconds(), found.OriginalPackets, found.Packets, found.ShrinkRuns, time.Since(start).Seconds())
			if found.Packets > maxShrunkPackets {
				t.Errorf("%s: shrunk to %d tester packets, want at most %d", f.Name, found.Packets, maxShrunkPackets)
			}
			s, err := ParseScript(strings.NewReader(found.Script))
			if err != nil {
				t.Fatalf("the shrunk script does not parse: %v\n%s", err, found.Script)
			}
			rr, err := Replay(context.Background(), SimEnv(s.Faults, knobParams), s, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Reproduced {
				t.Errorf("%s: the shrunk script replays to %v, want %s; divergences %v", f.Name, rr.Failure, found.Rule, rr.Divergences)
			}
			if rr.ParamsDiffer != "" {
				t.Errorf("%s: replayed with the session's parameters, yet: %s", f.Name, rr.ParamsDiffer)
			}
			if f.Name == "control-sequence" {
				// Without the session's link_bps the ref's sizes differ:
				// the replay says so.
				other, err := Replay(context.Background(), SimEnv(s.Faults, nil), s, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(other.ParamsDiffer, "found with") {
					t.Errorf("replayed under other parameters without a warning (ParamsDiffer %q)", other.ParamsDiffer)
				}
			}
		})
	}
}
