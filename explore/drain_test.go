package explore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// sharedSimEnv is the simulator with one IUT for the whole session, as
// namespaces have it (tester ids, ports and the IUT's state carry over
// from case to case).
func sharedSimEnv() Env {
	return Env{Name: "sim", New: func() (*conformance.Env, error) {
		return conformance.NewSimEnv(conformance.SimEnvConfig{})
	}}
}

// TestDrainEndsLeftoverRPCs: with one IUT for the session, a case that a
// failure stops mid-exchange leaves the IUT receiving a long request the
// next case's view does not show; the IUT then ranks two messages and
// grants the next case's at priority 1, which that view judges a
// HOMA-GRANT-015 violation (one message in sight: priority 0). Namespace
// sessions reported exactly that against the clean ref. Winding each
// case down (drain) ends the leftover RPC before the next case starts.
func TestDrainEndsLeftoverRPCs(t *testing.T) {
	// A rule that fails at the IUT's first GRANT: case A stops there.
	stop := &spec.Rule{ID: "TEST-STOP-001", Level: spec.Must, Statement: "stops a case at the IUT's first GRANT",
		Property: spec.Each{Types: []wire.PacketType{wire.TypeGrant}, Check: func(*spec.Ctx, *spec.Event) spec.Result {
			return spec.Violation("stop here")
		}}}
	grant015 := spec.RuleByID("HOMA-GRANT-015")
	if grant015 == nil {
		t.Fatal("no rule HOMA-GRANT-015")
	}
	for _, drain := range []bool{false, true} {
		s, release, err := newSession(context.Background(), Config{Env: sharedSimEnv(), Budget: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		u := int(s.info.params.UnschedBytes)
		a := &Case{RPCs: []RPC{{Host: 0, Request: 5 * u, Response: 1}}}
		b := &Case{RPCs: []RPC{{Host: 1, Request: 3 * u, Response: 1}}}
		cfg := runConfig{rules: []*spec.Rule{stop}, level: spec.Should, drain: drain}
		outA := play(context.Background(), s.shared, &cfg, a, newDecider(nil, nil, [numKinds]float64{}))
		if outA.fail == nil || outA.fail.Rule != stop.ID {
			t.Fatalf("case A: %v, want %s", outA.fail, stop.ID)
		}
		cfg.rules = []*spec.Rule{grant015}
		outB := play(context.Background(), s.shared, &cfg, b, newDecider(nil, nil, [numKinds]float64{}))
		release()
		t.Logf("drain %v: case B %v", drain, outB.fail)
		switch {
		case drain && outB.fail != nil:
			t.Errorf("drained: case B fails %v, want none", outB.fail)
		case !drain && (outB.fail == nil || outB.fail.Rule != grant015.ID):
			// Without the wind-down the leftover shows: this pins down
			// that the test builds the situation drain is for.
			t.Errorf("not drained: case B fails %v, want %s (the leftover RPC)", outB.fail, grant015.ID)
		}
	}
}

// TestCheckDeliveryLoss: a failure in a case whose packets the IUT's
// counters say did not all arrive (the tester hosts sent more than the
// IUT received, or got fewer than it sent) is inconclusive, not charged;
// with the counts agreeing it stands.
func TestCheckDeliveryLoss(t *testing.T) {
	ctx := context.Background()
	w, err := newWorld(ctx, SimEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// A case first, so that the IUT's packet counters are running.
	cfg := &runConfig{level: spec.Should}
	if out := play(ctx, w, cfg, &Case{RPCs: []RPC{{Host: 0, Request: 100, Response: 100}}}, newDecider(nil, nil, [numKinds]float64{})); out.fail != nil {
		t.Fatalf("warm-up case: %v", out.fail)
	}
	st0, err := w.ce.IUT.Stats(ctx)
	if err != nil || st0["packets_received"] == 0 {
		t.Fatalf("IUT stats %v (%v): want packet counters", st0, err)
	}
	check := func(sent, arrived int) *outcome {
		r := &run{ctx: ctx, w: w, stats0: st0, out: &outcome{sent: sent, arrived: arrived,
			fail: &Failure{Rule: "HOMA-RESEND-002", Level: spec.Must, Why: "no answer"}}}
		r.checkDelivery()
		return r.out
	}
	if out := check(0, 0); out.fail == nil || len(out.inconclusive) != 0 {
		t.Errorf("counts agree: fail %v, inconclusive %v; want the failure charged", out.fail, out.inconclusive)
	}
	if out := check(3, 0); out.fail != nil || len(out.inconclusive) != 1 || !strings.Contains(out.inconclusive[0], "received 0 of the 3") {
		t.Errorf("3 packets sent, none received: fail %v, inconclusive %v; want inconclusive", out.fail, out.inconclusive)
	}
}
