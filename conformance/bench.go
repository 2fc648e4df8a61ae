package conformance

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/homatest/homatest/spec"

	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/netem"
)

// LinkImpairment is what a passive spec's switch does to the packets of
// its bench: the same netem.LinkConfig on every egress port (loss, bursts,
// duplication, delay and jitter, reordering) and a fault plan that picks
// packets by their Homa meaning. Both benches run netem: simBench its
// socket-free core in the simulator, nsBench its user-space switch.
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
	// IUTs are the implementation's hosts (agents), in host order; empty
	// for a simulated bench.
	IUTs []Target
	// Simulate, set for a simulated bench (simBench), runs a workload on
	// its hosts (cfg.Hosts unused: host i is Addrs[i]) from start to end
	// on virtual time, and the hosts' timers on for a while after it (so
	// that acknowledgements finish); the switch's counters and the
	// captures are then final. Its timing is exact: checkBench applies no
	// slack.
	Simulate func(cfg traffic.Config) (*traffic.Result, error)
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
	// Keep, set for a bench whose Finish gives temporary files (simBench:
	// ".sent-N.pcapng.tmp", removed by Close), gives them, with their
	// sidecars, the names a failed spec reports ("sent-N.pcapng") and
	// returns those paths; Close then leaves them. Calling it again
	// returns the same paths. Nil: Finish's files are kept as they are.
	Keep func() (sent, delivered string, err error)
	// Switch returns the switch's counters: drops and alterations per
	// port, and the fault plan's hits.
	Switch func() netem.Stats
	// Close tears the bench down.
	Close func() error
}

// errNoBench is returned when an environment cannot build benches.
var errNoBench = errors.New("this environment builds no bench of IUT hosts for passive specs (homatest run --ns-workloads builds them in namespaces)")
