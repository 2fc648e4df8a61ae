package explore

import (
	"context"
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
	grant015 := ruleByID("HOMA-GRANT-015")
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
