package netem

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/vishvananda/netns"
)

// SwitchFabric runs the user-space switch between the ports a topology
// builder hands it. Its Start(ctx, ns, ports) and Close() have the shape of
// the harness's Fabric interface (netem does not import harness), so a
// harness can use it in place of its kernel bridge.
type SwitchFabric struct {
	// Link is the egress link of every port, unless Links names the port.
	Link LinkConfig
	// Links overrides Link per port (by interface name).
	Links map[string]LinkConfig
	// Seed, Plan, Record and RecordPath are passed to SwitchConfig.
	Seed       uint64
	Plan       *Plan
	Record     io.Writer
	RecordPath string

	mu sync.Mutex
	sw *Switch
}

// Start starts the switch on the named interfaces in namespace ns.
func (f *SwitchFabric) Start(ctx context.Context, ns netns.NsHandle, ports []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sw != nil {
		return errors.New("netem: switch fabric already started")
	}
	cfg := SwitchConfig{Seed: f.Seed, Plan: f.Plan, Record: f.Record, RecordPath: f.RecordPath}
	for _, p := range ports {
		l, ok := f.Links[p]
		if !ok {
			l = f.Link
		}
		cfg.Ports = append(cfg.Ports, Port{Name: p, Link: l})
	}
	sw, err := StartSwitch(ctx, ns, cfg)
	if err != nil {
		return err
	}
	f.sw = sw
	return nil
}

// Stats returns the running (or closed) switch's counters; zero before Start.
func (f *SwitchFabric) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sw == nil {
		return Stats{}
	}
	return f.sw.Stats()
}

// Close stops the switch; it is safe to call more than once, and before Start.
func (f *SwitchFabric) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sw == nil {
		return nil
	}
	return f.sw.Close()
}
