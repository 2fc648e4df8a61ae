package explore

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
)

func TestDevOne(t *testing.T) {
	knob := os.Getenv("KNOB")
	var faults []string
	if knob != "" {
		faults = []string{knob}
	}
	stop := strings.Split(os.Getenv("STOP"), ",")
	res, err := Explore(context.Background(), Config{Env: SimEnv(faults, params()), Budget: 20 * time.Second, Seed: 1, KeepGoing: true, StopAt: stop, ShrinkRuns: 400})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Failures {
		t.Logf("found %-16s after %6.2fs case %4d packets %4d -> %3d (%d runs)", x.Rule, x.After.Seconds(), x.Case, x.OriginalPackets, x.Packets, x.ShrinkRuns)
		os.WriteFile("/tmp/one-"+x.Rule+".homa", []byte(x.Script), 0o644)
	}
}

func params() agent.Params {
	if os.Getenv("SMALL") != "" {
		return agent.Params{"link_bps": int64(1e9)}
	}
	return nil
}
