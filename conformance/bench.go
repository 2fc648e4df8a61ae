package conformance

import (
	"context"
	"errors"
	"fmt"
	"github.com/homatest/homatest/spec"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
)

// LinkImpairment is what a passive spec's switch does to the packets of
// its bench: the same netem.LinkConfig on every egress port (loss, bursts,
// duplication, delay and jitter, reordering) and a fault plan that picks
// packets by their Homa meaning. Both benches run netem: memBench its
// socket-free core in process, nsBench its user-space switch.
type LinkImpairment struct {
	// Link is every egress port's link (zero: a perfect link).
	Link netem.LinkConfig
	// Plan is the fault plan (nil: none).
	Plan *netem.Plan
	// Seed makes every random choice repeatable (netem's PCG streams).
	Seed uint64
}

// String names the impairment in failure messages: the link features
// asked for, the plan's rules and the seed.
func (i LinkImpairment) String() string {
	s := "perfect links"
	f := slices.DeleteFunc(i.Link.Features(), func(s string) bool { return s == "priorities" }) // 8 levels: no impairment
	if len(f) > 0 {
		s = "links with " + strings.Join(f, ", ")
	}
	if i.Plan != nil {
		var rules []string
		for _, r := range i.Plan.Rules {
			rules = append(rules, fmt.Sprintf("%s (%s)", r.Name, r.Action))
		}
		s += ", plan: " + strings.Join(rules, "; ")
	}
	return fmt.Sprintf("%s, seed %d", s, i.Seed)
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
	// Switch returns the switch's counters: drops and alterations per
	// port, and the fault plan's hits.
	Switch func() netem.Stats
	// Close tears the bench down.
	Close func() error
}

// memBench builds a Bench of n reference hosts (agents in this process)
// behind an in-process netem switch core applying imp (memSwitch); it
// records every packet as sent and as handed to its destination (with the
// switch's note on altered frames), written into dir by Finish.
func memBench(n int, imp LinkImpairment, faults []string, dir string) (*Bench, error) {
	var mu sync.Mutex
	type rec struct {
		t        time.Time
		src, dst netip.Addr
		prio     uint8
		pkt      []byte
		note     string
	}
	var sent, kept []rec
	record := func(to *[]rec) func(time.Time, netip.Addr, netip.Addr, uint8, []byte, string) {
		return func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte, note string) {
			mu.Lock()
			*to = append(*to, rec{t, src, dst, prio, append([]byte(nil), pkt...), note})
			mu.Unlock()
		}
	}
	var addrs []netip.Addr
	for i := 0; i < n; i++ {
		addrs = append(addrs, netip.AddrFrom4([4]byte{198, 18, 1, byte(1 + i)}))
	}
	net, err := newMemSwitch(memSwitchConfig{Addrs: addrs, Link: imp.Link, Plan: imp.Plan, Seed: imp.Seed,
		Tap: record(&sent), Delivered: record(&kept)})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bench{Describe: fmt.Sprintf("%d reference hosts in-process behind an in-process netem switch core, %s", n, imp), Switch: net.Stats}
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
		a, tr := addrs[i], net.Transport(i)
		c, _ := agent.PipeRef(ctx, agent.RefOptions{Version: "in-process",
			Transport: func(netip.Addr) (homa.Transport, error) { return tr, nil }}, agent.ClientOptions{})
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
				if err = w.WritePacket(0, r.t, fr, len(fr), r.note); err != nil {
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
