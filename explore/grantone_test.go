package explore

import (
	"context"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/spec"
)

// TestGrantOnePastReceived: a "one-byte" (or "one-packet") GRANT counts
// from the bytes received when the sender went past the last GRANT (it
// sends whole packets). Made from what was granted, a 10 Mbit/s session
// (seed 3, case 2753) gave GRANT 1425, the clean ref sent [1424, 2848),
// and the next "one-byte" GRANT (1426) raised no horizon: with nothing
// more on its way no DATA came to grant again, the call never ended and
// the IUT was charged APP-STUCK. The first 3000 cases of that session
// (by count, so the verdict does not depend on the machine) fail nothing.
func TestGrantOnePastReceived(t *testing.T) {
	if testing.Short() {
		t.Skip("3000 simulated cases")
	}
	res, err := Explore(context.Background(), Config{Env: SimEnv(nil, agent.Params{"link_bps": int64(10_000_000)}), Budget: time.Hour,
		MaxCases: 3000, Seed: 3, Level: spec.Should, ShrinkRuns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cases < 3000 {
		t.Fatalf("%d cases, want 3000", res.Cases)
	}
	for _, f := range res.Failures {
		t.Errorf("the clean ref failed %s in case %d: %s", f.Rule, f.Case, f.Why)
	}
}
