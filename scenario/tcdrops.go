package scenario

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// ReasonTC is Drop.Reason for a frame the tc backend dropped that no drop
// rule of the plan matches: the switch port's buffer (bfifo) or random
// loss; the capture does not say which.
const ReasonTC = "tc"

// tcDrops describes frames lost on the tc backend (findLost) as Drops. The
// kernel bridge writes no notes, so the plan rule is attributed by
// evaluating the plan: Rules are the drop rules whose match fields select
// the packet on the switch port to its destination (netem's
// Rule.MatchesPacket; hosts[i] is h<i+1>, behind ports[i]), Reason "plan"
// when there is one, else ReasonTC. Nth and Count are not evaluated again:
// a packet a drop rule matches that the port's buffer or random loss
// dropped is attributed to the rule too (summarize cross-checks the
// attributed drops against the rules' nftables counters). RPC ordinals come
// from ords.
func tcDrops(lost []lostFrame, hosts []netip.Addr, ports []string, plan *netem.Plan, ords map[wire.RPCKey]int) []Drop {
	out := make([]Drop, 0, len(lost))
	for _, l := range lost {
		d := Drop{Time: l.Time, Host: l.Dst.String(), Dropped: true, Reason: ReasonTC, SentFrame: l.Number}
		port := ""
		for i, a := range hosts {
			if a == l.Dst && i < len(ports) {
				d.Host, port = hostName(i), ports[i]
			}
		}
		if l.Err != nil {
			d.Comment = "dropped: not delivered (malformed Homa: " + l.Err.Error() + ")"
			out = append(out, d)
			continue
		}
		describe(&d, l.Src, l.Dst, l.Packet, ords)
		var names []string
		if plan != nil {
			for i := range plan.Rules {
				r := &plan.Rules[i]
				if r.Action.Drop && r.MatchesPacket(l.Src, l.Dst, l.Packet, "", port) {
					d.Rules = append(d.Rules, i)
					names = append(names, strconv.Itoa(i))
				}
			}
		}
		if len(d.Rules) > 0 {
			d.Reason = "plan"
			d.Comment = fmt.Sprintf("dropped: plan (not delivered; matches drop rule %s)", strings.Join(names, ", "))
		} else {
			d.Comment = "dropped: tc (not delivered: the port's buffer or random loss)"
		}
		out = append(out, d)
	}
	return out
}

// tcPlanHits sums the tc backend's plan counters (netem.TCPlanHits) over
// the switch ports of topo: per rule, in index order, for a plan of n
// rules. Errors: nftables cannot be read, or a counter names no rule.
func tcPlanHits(topo *harness.Topology, n int) ([]uint64, error) {
	hits := make([]uint64, n)
	for _, p := range topo.Ports {
		hs, err := netem.TCPlanHits(topo.Switch, p)
		if err != nil {
			return nil, fmt.Errorf("plan hits on port %s: %w", p, err)
		}
		for _, h := range hs {
			num, _, _ := strings.Cut(strings.TrimPrefix(h.Rule, "rule "), ":")
			i, err := strconv.Atoi(num)
			if err != nil || i < 0 || i >= n {
				return nil, fmt.Errorf("plan hits on port %s: counter %q names no rule of the plan's %d", p, h.Rule, n)
			}
			hits[i] += h.Packets
		}
	}
	return hits, nil
}

// lostDrops finds the frames the tc backend dropped (findLost over
// sent.pcapng and delivered.pcapng of the run folder) and describes them
// (tcDrops); it sets the Result's DeliveredBytes.
func (r *run) lostDrops(hosts []netip.Addr, ports []string, v wire.Version, ords map[wire.RPCKey]int) ([]Drop, error) {
	sent, err := os.Open(r.arts.Path("sent.pcapng"))
	if err != nil {
		return nil, err
	}
	defer sent.Close()
	delivered, err := os.Open(r.arts.Path("delivered.pcapng"))
	if err != nil {
		return nil, err
	}
	defer delivered.Close()
	lost, bytes, err := findLost(bufio.NewReaderSize(sent, 1<<20), bufio.NewReaderSize(delivered, 1<<20), pcap.ReaderOptions{Version: v})
	if err != nil {
		return nil, fmt.Errorf("finding the tc backend's drops: %w", err)
	}
	for _, h := range hosts {
		r.res.DeliveredBytes = append(r.res.DeliveredBytes, bytes[h])
	}
	return tcDrops(lost, hosts, ports, r.s.Plan, ords), nil
}
