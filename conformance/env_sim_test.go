package conformance

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/pcap"
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

// TestSimCaptureDeclaresNoDrops: the capture a simulated pass writes
// declares that it dropped nothing (pcapng interface statistics,
// isb_ifdrop 0 on every port), so check blames no missing bytes on it
// (spec.Checker.SetCaptureDropsDeclared: a simulated server that counted
// duplicate bytes as new made its run's capture INCOMPLETE, 2 packets
// "missed"). Fails on the old simulator (no statistics blocks).
func TestSimCaptureDeclaresNoDrops(t *testing.T) {
	dir := t.TempDir()
	e, err := NewSimEnv(SimEnvConfig{Artifacts: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := pcap.Open(filepath.Join(dir, "capture.pcapng"), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	if st := r.Stats(); len(st.IfaceDrops) == 0 || st.CaptureDrops != 0 {
		t.Errorf("capture declares drops %v (total %d), want 0 on every port", st.IfaceDrops, st.CaptureDrops)
	}
}
