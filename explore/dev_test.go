package explore

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestDevClean(t *testing.T) {
	res, err := Explore(context.Background(), Config{Env: SimEnv(nil, nil), Budget: 30 * time.Second, MaxCases: 1000, Seed: 1, KeepGoing: true, ShrinkRuns: 300,
		Progress: func(p Progress) { t.Log(p) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range res.Failures {
		t.Errorf("case %d: %s (packets %d -> %d)", f.Case, f.Failure.String(), f.OriginalPackets, f.Packets)
		os.WriteFile("/tmp/dev-"+f.Rule+".homa", []byte(f.Script), 0o644)
		os.WriteFile("/tmp/dev-"+f.Rule+".pcapng", f.Capture, 0o644)
		_ = i
	}
}
