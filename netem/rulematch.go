package netem

import (
	"net/netip"

	"github.com/homatest/homatest/spec/wire"
)

// MatchesPacket reports whether rule r's match fields select Homa packet p
// sent from src to dst that entered the switch by port in and leaves it by
// port out ("" when unknown: then in_port / out_port never match), leaving
// aside what depends on a run's history: the RPC ordinal (match.rpc) and
// the Nth / Count selection. Every frame the rule fired on matches, so a
// report can tell which rules could have acted on a packet seen in a
// capture. It returns false when r does not validate (Plan.Validate).
func (r *Rule) MatchesPacket(src, dst netip.Addr, p wire.Packet, in, out string) bool {
	c, err := r.compile()
	if err != nil {
		return false
	}
	fi := frameInfo{src: src, dst: dst, homa: true, pkt: p}
	return c.matches(&fi, r.Match.RPC, in, out)
}
