package conformance

import (
	"context"
	"errors"
	"fmt"
	"github.com/homatest/homatest/spec"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/homa/memnet"
	"github.com/homatest/homatest/pcap"
)

// LinkImpairment is the loss a passive spec puts on every switch egress
// port of its bench.
type LinkImpairment struct {
	// Loss is the probability (0..1) that a packet is dropped at random.
	Loss float64
	// BurstEvery, when positive, drops BurstLen packets in a row once every
	// BurstEvery packets (bursts of loss).
	BurstEvery, BurstLen int
	// Seed makes the drops repeatable.
	Seed uint64
}

// Bench is a fresh set of IUT hosts behind a switch for one passive spec:
// IUT hosts that call each other, and a capture of what the switch
// delivered to each host (after the impairment).
type Bench struct {
	// IUTs are the implementation's hosts (agents), in host order.
	IUTs []Target
	// Addrs are their IPv4 addresses.
	Addrs []netip.Addr
	// Describe names the bench in failure messages.
	Describe string
	// Params are the IUT hosts' parameters (zero: the suite IUT's).
	Params spec.Params
	// Finish stops the capture and returns the paths of two pcapng files:
	// every packet as its host sent it (before the impairment), and every
	// packet as delivered to its destination host (after it).
	Finish func() (sent, delivered string, err error)
	// Close tears the bench down.
	Close func() error
}

// memBench builds a Bench of n reference hosts (agents in this process)
// on an in-memory network whose drop hook applies imp; it records every
// packet as sent (memnet Tap) and as handed to its destination (memnet
// Delivered), written into dir by Finish.
func memBench(n int, imp LinkImpairment, faults []string, dir string) (*Bench, error) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(imp.Seed, imp.Seed^0x5bd1e995))
	count := 0
	type rec struct {
		t        time.Time
		src, dst netip.Addr
		prio     uint8
		pkt      []byte
	}
	var sent, kept []rec
	record := func(to *[]rec) func(time.Time, netip.Addr, netip.Addr, uint8, []byte) {
		return func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte) {
			mu.Lock()
			*to = append(*to, rec{t, src, dst, prio, append([]byte(nil), pkt...)})
			mu.Unlock()
		}
	}
	drop := func(src, dst netip.Addr, prio uint8, pkt []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		count++
		lost := imp.Loss > 0 && rng.Float64() < imp.Loss
		if imp.BurstEvery > 0 && count%imp.BurstEvery < imp.BurstLen {
			lost = true
		}
		return lost
	}
	net := memnet.New(memnet.Config{Drop: drop, Tap: record(&sent), Delivered: record(&kept)})
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bench{Describe: fmt.Sprintf("%d reference hosts in-process, in-memory network, %+v", n, imp)}
	closeAll := func() error {
		var err error
		for _, t := range b.IUTs {
			if e := t.Close(); err == nil {
				err = e
			}
		}
		cancel()
		net.Close()
		return err
	}
	for i := 0; i < n; i++ {
		a := netip.AddrFrom4([4]byte{198, 18, 1, byte(1 + i)})
		c, _ := agent.PipeRef(ctx, agent.RefOptions{Version: "in-process",
			Transport: func(x netip.Addr) (homa.Transport, error) { return net.Attach(x), nil }}, agent.ClientOptions{})
		// A 10 ms tick: with 1 ms ticks, a loaded machine wakes the timers
		// late, Go's tickers drop the missed ticks, and tick-counted
		// timeouts drift far from wall time (the ratios between the
		// timers are HomaModule's).
		t, err := NewAgentTarget(ctx, c, fmt.Sprintf("h%d", i+1), []netip.Addr{a},
			agent.Params{"link_bps": 10e9, "tick_ns": int64(10e6)}, faults, "linux")
		if err != nil {
			c.Close()
			closeAll()
			return nil, err
		}
		b.IUTs = append(b.IUTs, t)
		b.Addrs = append(b.Addrs, a)
		b.Params = t.Info().Params
	}
	b.Close = closeAll
	write := func(name string, recs []rec) (string, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		f, err := os.CreateTemp(dir, name+"-*.pcapng")
		if err != nil {
			return "", err
		}
		w, err := pcap.NewWriter(f, pcap.Interface{Name: "switch", Description: "in-memory switch, " + name + " packets"})
		if err == nil {
			for _, r := range recs {
				var fr []byte
				if fr, err = tester.Frame(r.src, r.dst, r.prio, r.pkt); err != nil {
					break
				}
				if err = w.WritePacket(0, r.t, fr, len(fr), ""); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = w.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			return "", err
		}
		return f.Name(), nil
	}
	b.Finish = func() (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		s, err := write("sent", sent)
		if err != nil {
			return "", "", err
		}
		d, err := write("delivered", kept)
		return s, d, err
	}
	return b, nil
}

// errNoBench is returned when an environment cannot build benches.
var errNoBench = errors.New("this environment builds no bench of IUT hosts for passive specs (homatest run --ns-workloads builds them in namespaces)")
