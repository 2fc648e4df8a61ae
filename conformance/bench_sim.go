package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/sim"
)

// benchTick is the reference hosts' timer tick in a bench: the plans'
// timings are written for it ("every ACK delayed by 30 ms, three ticks").
const benchTick = 10 * time.Millisecond

// benchDrain is how long a simulated bench runs on after its workload
// ended: the servers' NEED_ACKs (request_ack_ticks on) and the clients'
// ACKs, delayed ones included, finish within it.
const benchDrain = 50 * benchTick

// simBench builds a Bench of n reference hosts in the simulator (package
// sim: the reference implementation's protocol state machine on virtual
// time, netem's switch core applying imp, with its seed), with fault knobs
// faults on every host. Its workload runs through Bench.Simulate, from
// start to end on virtual time, so the captures (every packet as its host
// sent it and as it took it in, written into dir) and the verdicts are
// the same on every run and on any machine.
func simBench(n int, imp LinkImpairment, faults []string, dir string) (*Bench, error) {
	ap := agent.Params{"link_bps": int64(10e9), "tick_ns": benchTick.Nanoseconds()}
	p, err := agent.RefParams(ap)
	if err != nil {
		return nil, err
	}
	hello := agent.ParamsOf(p)
	sp, err := hello.Spec("linux")
	if err != nil {
		return nil, err
	}
	var hf []homa.Fault
	for _, f := range faults {
		hf = append(hf, homa.Fault(f))
	}
	sm, err := sim.New(sim.Config{Seed: imp.Seed, Link: imp.Link, Plan: imp.Plan})
	if err != nil {
		return nil, err
	}
	b := &Bench{Describe: fmt.Sprintf("%d reference hosts simulated (virtual time) behind netem's switch core, %s", n, imp),
		Params: sp, Switch: sm.Switch}
	var hosts []*sim.Host
	for i := range n {
		a := netip.AddrFrom4([4]byte{198, 18, 1, byte(1 + i)})
		h, err := sm.AddHost(sim.HostConfig{Name: fmt.Sprintf("h%d", i+1), Addr: a, Params: p, Faults: hf})
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
		b.Addrs = append(b.Addrs, a)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The captures are hidden temporaries (".sent-N.pcapng.tmp") until a
	// failed spec keeps them (Bench.Keep): a pass killed meanwhile (SIGKILL)
	// leaves nothing that passes for a capture, and the next run removes
	// them as it removes every temporary file of a killed run's folder.
	var files []*os.File
	var bufs []*bufio.Writer
	for _, name := range []string{"sent", "delivered"} {
		f, err := os.CreateTemp(dir, "."+name+"-*.pcapng.tmp")
		if err != nil {
			for _, f := range files {
				f.Close()
				os.Remove(f.Name())
			}
			return nil, err
		}
		files, bufs = append(files, f), append(bufs, bufio.NewWriter(f))
	}
	if err := sm.Capture(sim.CaptureConfig{Sent: bufs[0], Delivered: bufs[1]}); err != nil {
		return nil, err
	}
	b.Simulate = func(cfg traffic.Config) (*traffic.Result, error) {
		t, err := sm.StartTraffic(hosts, cfg)
		if err != nil {
			return nil, err
		}
		if !sm.RunWhile(func() bool { return !t.Done() }) {
			return nil, errors.New("the simulation ran out of events before the workload ended")
		}
		sm.RunFor(benchDrain)
		return t.Result(), nil
	}
	var once sync.Once
	var finishErr error
	closeFiles := func() {
		once.Do(func() {
			finishErr = sm.Flush()
			for i, f := range files {
				if err := bufs[i].Flush(); finishErr == nil {
					finishErr = err
				}
				if err := f.Close(); finishErr == nil {
					finishErr = err
				}
			}
			if finishErr != nil {
				// A capture cut short (a full disk: ENOSPC) would read as
				// the hosts' missing packets: nothing half-written stays.
				for _, f := range files {
					os.Remove(f.Name())
				}
			}
		})
	}
	b.Finish = func() (string, string, error) {
		closeFiles()
		if finishErr != nil {
			return "", "", finishErr
		}
		return files[0].Name(), files[1].Name(), nil
	}
	kept := false
	b.Keep = func() (string, string, error) {
		closeFiles()
		if finishErr != nil {
			return "", "", finishErr
		}
		var paths []string
		for _, f := range files {
			to := keptName(f.Name())
			if kept {
				paths = append(paths, to)
				continue
			}
			for _, side := range []string{"", ".params", ".stalls.json"} {
				if err := os.Rename(f.Name()+side, to+side); err != nil && (side == "" || !errors.Is(err, os.ErrNotExist)) {
					return "", "", err
				}
			}
			paths = append(paths, to)
		}
		kept = true
		return paths[0], paths[1], nil
	}
	b.Close = func() error {
		closeFiles()
		if !kept {
			for _, f := range files {
				removeWithSidecars(f.Name())
			}
		}
		return nil
	}
	return b, nil
}

// keptName is the name a simulated bench's temporary capture
// (".sent-N.pcapng.tmp") is kept under: "sent-N.pcapng", in its folder.
func keptName(tmp string) string {
	base := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(tmp), "."), ".tmp")
	return filepath.Join(filepath.Dir(tmp), base)
}
