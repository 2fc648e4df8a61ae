package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/netem"
)

// benchCount numbers the benches of a run (their folders).
var benchCount atomic.Int64

// nsBench builds a Bench of n hosts in network namespaces behind netem's
// user-space switch (every egress port impaired by imp), the IUT's agent
// on each, and a capture of every switch port; Finish writes the as-sent
// (harness.DirIn) and as-delivered (harness.DirOut) views. Every agent's
// process is watched by stalls.
func nsBench(ctx context.Context, cfg NSEnvConfig, n int, imp LinkImpairment, stalls *stall.Monitor) (*Bench, error) {
	link := imp.Link
	if err := link.Validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Artifacts, fmt.Sprintf("bench-%d", benchCount.Add(1)))
	arts, err := harness.NewArtifacts(dir)
	if err != nil {
		return nil, err
	}
	fab := &netem.SwitchFabric{Link: link, Seed: imp.Seed, Plan: imp.Plan}
	topo, err := harness.Build(ctx, harness.Config{Hosts: n, Fabric: fab, Artifacts: arts})
	if err != nil {
		return nil, err
	}
	// Several user-space hosts and the switch share this machine's CPUs:
	// the built-in reference implementation gets a 10 ms tick (every timer
	// ratio kept, as homa/rawip's tests found necessary) so that CPU
	// starvation does not look like silence, and the plans' timings are
	// written for it (as in the simulated benches). Other implementations
	// get only the parameters their manifest gives (agent.Start sends a
	// default only where the implementation declares it: the linux agent,
	// HomaModule's sysctls, refuses tick_ns).
	defaults := agent.Params{"tick_ns": benchTick.Nanoseconds()}
	b := &Bench{Describe: fmt.Sprintf("%d hosts in namespaces %s behind netem's switch (%s), run folder %s", n, topo.ID, imp, dir), Switch: fab.Stats}
	closeAll := func() error {
		var err error
		for _, t := range b.IUTs {
			if e := t.Close(); err == nil {
				err = e
			}
		}
		if e := topo.Close(); err == nil {
			err = e
		}
		return err
	}
	capture, err := topo.StartCapture(ctx)
	if err != nil {
		closeAll()
		return nil, err
	}
	for _, h := range topo.Hosts {
		a, err := agent.Start(ctx, h, agent.StartConfig{Manifest: cfg.Manifest, Defaults: defaults, Faults: cfg.Faults})
		if err != nil {
			closeAll()
			return nil, err
		}
		stalls.Watch(a.Proc.Pid(), "agent on "+h.Name)
		t, err := newAgentTarget(a, "linux")
		if err != nil {
			a.Close()
			closeAll()
			return nil, err
		}
		b.IUTs = append(b.IUTs, t)
		b.Params = t.Info().Params
		b.Addrs = append(b.Addrs, h.Addr4)
	}
	b.Close = closeAll
	b.Finish = func() (string, string, error) {
		st, err := capture.Stop()
		if err != nil {
			return "", "", err
		}
		if st.ReadErrors > 0 || st.KernelDrops > 0 {
			// The checker would charge the missing frames to the IUT
			// (seen with HomaModule: "NEED_ACK while only 99808 of
			// 100000 response bytes were sent").
			first := ""
			for _, p := range st.Ports {
				if first == "" {
					first = p.FirstReadError
				}
			}
			return "", "", fmt.Errorf("the capture is incomplete, so the bench cannot be judged: %d frames the kernel could not copy out of the capture sockets (first: %s), %d dropped for a full socket buffer (run folder %s)",
				st.ReadErrors, first, st.KernelDrops, topo.Artifacts.Path("."))
		}
		if err := capture.WriteFile("sent.pcapng", harness.DirIn); err != nil {
			return "", "", err
		}
		if err := capture.WriteFile("delivered.pcapng", harness.DirOut); err != nil {
			return "", "", err
		}
		return topo.Artifacts.Path("sent.pcapng"), topo.Artifacts.Path("delivered.pcapng"), nil
	}
	return b, nil
}
