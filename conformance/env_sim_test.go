package conformance

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
)

// TestSimEnvDescribesTick: the simulated pass header names the IUT's tick,
// not HomaModule's default whatever tick_ns is (helper-157 saw "1 ms tick"
// at tick_ns 200000).
func TestSimEnvDescribesTick(t *testing.T) {
	for _, c := range []struct {
		tick int64
		want string
	}{{0, "1 ms tick"}, {200000, "200µs tick"}, {5000000, "5 ms tick"}, {1500000, "1.5ms tick"}} {
		cfg := SimEnvConfig{}
		if c.tick != 0 {
			cfg.Params = agent.Params{"tick_ns": c.tick}
		}
		e, err := NewSimEnv(cfg)
		if err != nil {
			t.Fatalf("tick_ns %d: %v", c.tick, err)
		}
		if !strings.Contains(e.Describe, c.want) {
			t.Errorf("tick_ns %d: %q, want it to say %q", c.tick, e.Describe, c.want)
		}
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}
	if got := tickText(1500 * time.Microsecond); got != "1.5ms" {
		t.Errorf("tickText(1.5ms) = %q", got)
	}
}
