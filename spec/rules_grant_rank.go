package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantRankRules: SRPT ranking of scheduled priorities (HomaModule
// homa_grant.c homa_grant_priority, homa_grant_outranks).
func grantRankRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-GRANT-011", Level: Should,
			Facts:     []string{"GRANT-08", "GRANT-09"},
			Statement: "A GRANT's scheduled priority follows its message's SRPT rank: at most min(max_sched_prio, n-1) minus the number of other messages the receiver is granting that clearly have fewer bytes left to receive (SRPT rank, within rank_tolerance bytes; under the linux profile also fewer to grant, as net-next and linux_6.13.9 rank), n being the messages it is granting; and at least min(max_sched_prio, n-1) minus the number of other messages that may rank ahead of it (not clearly behind by both bytes left to receive and bytes left to grant).",
			Source:    "HomaModule homa_grant.c homa_grant_try_send (main: rank = active RPCs with fewer bytes_remaining), homa_grant_update_granted (net-next, linux_6.13.9: rank = place in active_rpcs, ordered by ungranted bytes), homa_grant_priority (max_sched_prio - rank, less the levels num_active leaves unused, never below 0); linux_6.1.38 homa_grant.c homa_grant_recalc (the same formula)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "main ranks the other messages by the bytes they had left when they entered the active set (a copy never refreshed), so there another message counts as ahead only by the bytes it had left slack before its first GRANT (its whole length when the capture holds no longer that GRANT); near-ties can invert (rank_tolerance), and a loaded receiver processes packets late: another message counts as ahead only if it had fewer bytes left, by rank_tolerance, already slack before the GRANT; only messages with a GRANT less than slack earlier count as being granted; a message granted to its end has left the active set. The lower bound needs every packet to the receiver: n counts only the messages surely active (the GRANTed one and those with an SRPT GRANT less than slack earlier, neither complete nor granted to their end nor ended by an ack or RPC_UNKNOWN; at most max_rpcs_per_peer from one host), and every other message longer than unsched_bytes it has counts as ahead unless it has more bytes left to receive than the GRANTed one had slack earlier and more left to grant than it had at its first DATA, each by rank_tolerance",
			Property: Each{Types: []wire.PacketType{wire.TypeGrant}, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				p := int(g.Priority())
				if maybeFIFO(c, e) {
					return Skip // FIFO grants are outside SRPT
				}
				mr, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Skip
				}
				if p == 0 {
					// Level 0 is below no upper bound; only the floor
					// can find it too low.
					return rankFloor(c, e, mr, m, p)
				}
				left := int64(m.Length) - int64(m.Received())
				// firstLeft: the fewest bytes left of those ahead (the
				// clearest evidence; not the first of a map, whose order
				// varies run to run).
				ahead := 0
				var firstLeft int64
				for o := range c.T.granting[e.Src] {
					if o == m || o.Length == 0 || len(o.RecentGrants) == 0 || o.Granted >= o.Length {
						// A fully granted message has left the active set
						// (homa_grant_check_rpc).
						continue
					}
					last := o.RecentGrants[len(o.RecentGrants)-1]
					if e.Time.Sub(last.Time) > c.P.Slack {
						continue
					}
					// The receiver had processed at least the bytes seen
					// slack ago: the most o can have had left in its view.
					oLeft := int64(o.Length) - int64(o.ReceivedBy(e.Time.Add(-c.P.Slack)))
					if c.P.Wire == wire.VersionCurrent {
						// main ranks o by the bytes it had left when it
						// entered the active set (active_remaining is
						// written only by homa_grant_add_active): at the
						// latest by its first GRANT, or, with that GRANT
						// out of sight, at any time since its first byte.
						oLeft = int64(o.Length)
						if o.Grants > 0 && o.Grants <= len(o.RecentGrants) {
							oLeft -= int64(o.ReceivedBy(o.RecentGrants[0].Time.Add(-c.P.Slack)))
						}
					}
					if oLeft+int64(c.P.RankTolerance) < left && (c.P.Wire != wire.VersionCurrent || ungrantedAhead(o, m, g.Offset(), c.P.RankTolerance)) {
						if ahead == 0 || oLeft < firstLeft {
							firstLeft = oLeft
						}
						ahead++
					}
				}
				// homa_grant_priority gives min(max_sched_prio, n-1) - rank:
				// where the capture holds every message the receiver gets,
				// n is bounded by its grantable messages (as in
				// HOMA-GRANT-015), so the top level n leaves unused is
				// taken off too.
				// With no message ahead the bound is HOMA-GRANT-015's alone.
				top, topWhy := c.P.MaxSchedPrio, fmt.Sprintf("max_sched_prio %d", c.P.MaxSchedPrio)
				if ahead > 0 && c.Net.cp.TimesArrivalsAt(e.Src) {
					if n := min(c.T.Grantable(e.Src, e.Time)+c.T.RecentlyEnded(e.Src, e.Time), c.P.MaxOvercommit); n-1 < top {
						top, topWhy = max(n, 1)-1, fmt.Sprintf("n-1 = %d (at most %s being granted)", max(n, 1)-1, plural.Of(max(n, 1), "message", "messages"))
					}
				}
				if max := top - ahead; p > max {
					return Violation("GRANT priority %d for a message with %d bytes left, while %d other messages it is granting had fewer left (the fewest %d, slack earlier): rank %d below %s allows at most %d",
						p, left, ahead, firstLeft, ahead, topWhy, max).WithSlack(c.P.Slack)
				}
				if r := rankFloor(c, e, mr, m, p); r.Status == Violated {
					return r
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
	}
}

// ungrantedAhead reports whether message o has fewer bytes still to grant
// than m (granted now to offset) by more than tol: net-next and
// linux_6.13.9, which the linux profile spans with main HEAD, rank the
// active messages by those (homa_grant.c homa_grant_outranks on length -
// granted), so o ranks ahead of m in every version only if it is ahead by
// both keys.
func ungrantedAhead(o, m *Message, offset, tol uint32) bool {
	mu := int64(m.Length) - int64(max(m.Granted, m.MaxIncoming, offset))
	return int64(ungrantedBytes(o))+int64(tol) < max(mu, 0)
}

// rankFloor is HOMA-GRANT-011's lower bound on the priority p of an SRPT
// GRANT for message m (of RPC mr): homa_grant_priority gives
// min(max_sched_prio, n-1) - rank, which is at least min(max_sched_prio,
// nLo-1) - aheadHi for nLo at most the messages active at the receiver
// and aheadHi at least the active messages ranked ahead of m. nLo counts
// the messages surely active: m, and every other message with an SRPT
// GRANT from the receiver less than slack earlier that is neither complete
// nor granted to its end (linux_6.1.38 and net-next drop a fully granted
// message from the active set), at most max_rpcs_per_peer per sending host
// (where that limit holds a newer message of the host may have taken an
// older one's place), and at most max_overcommit in all. aheadHi counts every other message longer than
// unsched_bytes the receiver has (which needs a capture of every packet
// to it) unless it is clearly behind m by both SRPT keys, by more than
// rank_tolerance, with m's bytes counted as the receiver had them slack
// earlier. Skip when the capture cannot bound both, or the bound is not
// above p; a Violation when p is below it.
func rankFloor(c *Ctx, e *Event, mr *RPC, m *Message, p int) Result {
	if p >= c.P.MaxSchedPrio || !c.Net.cp.TimesArrivalsAt(e.Src) {
		return Skip
	}
	since := e.Time.Add(-c.P.Slack)
	// The hosts of the messages counted, with how many each: nLo stops
	// mattering past max_sched_prio+1 (min caps it).
	var hosts [8]netip.Addr
	var counts [8]int
	nh, nLo := 0, 0
	count := func(h netip.Addr) {
		for i := range nh {
			if hosts[i] == h {
				if c.P.MaxRPCsPerPeer <= 0 || counts[i] < c.P.MaxRPCsPerPeer {
					counts[i]++
					nLo++
				}
				return
			}
		}
		if nh < len(hosts) {
			hosts[nh], counts[nh] = h, 1
			nh++
			nLo++
		}
	}
	count(msgSender(mr, m))
	for o, r := range c.T.granting[e.Src] {
		if nLo > c.P.MaxSchedPrio {
			break
		}
		if o == m || o.Length == 0 || o.Complete || o.Granted >= o.Length || r.Unknown || r.Acked || !srptGrantSince(c.P, o, since) {
			continue
		}
		count(msgSender(r, o))
	}
	if c.P.MaxOvercommit > 0 {
		// A receiver grants at most max_overcommit messages at once: more
		// with GRANTs within slack means one was demoted meanwhile, its
		// slot taken, not emptied (homa_grant_manage_rpc).
		nLo = min(nLo, c.P.MaxOvercommit)
	}
	top := min(c.P.MaxSchedPrio, nLo-1)
	if top <= p {
		return Skip // not enough messages surely active for a floor above p
	}
	if c.T.Grantable(e.Src, e.Time) > maxSRPTScan {
		return Skip // too many messages at the receiver to rank per GRANT
	}
	mLeft := int64(m.Length) - int64(m.ReceivedBy(since))
	// The receiver's granted offset starts at the incoming of the first
	// DATA it got (homa_grant_init_rpc); the smallest the capture saw
	// makes m's ungranted bytes no fewer, so no message looks behind it
	// that was not.
	mUngranted := int64(m.Length) - int64(m.MinIncoming)
	tol := int64(c.P.RankTolerance)
	ahead := 0
	for o := range c.T.longIn[e.Src] {
		if o == m || o.Length == 0 {
			continue
		}
		if int64(remainingBytes(o)) > mLeft+tol && int64(ungrantedBytes(o)) > mUngranted+tol {
			continue // behind m in every version's ranking
		}
		ahead++
		if top-ahead <= p {
			return Skip
		}
	}
	floor := top - ahead
	return Violation("GRANT priority %d for a message with at most %d bytes left: %s surely being granted (SRPT GRANTs within slack) and %d others may rank ahead, so min(max_sched_prio %d, n-1) - rank is at least %d",
		p, mLeft, plural.Of(nLo, "message from a distinct host is", "messages from distinct hosts are"), ahead, c.P.MaxSchedPrio, floor).WithSlack(c.P.Slack)
}

// srptGrantSince reports whether message m had an SRPT (non-FIFO) GRANT
// at or after since.
func srptGrantSince(p *Params, m *Message, since time.Time) bool {
	for i := len(m.RecentGrants) - 1; i >= 0; i-- {
		g := m.RecentGrants[i]
		if g.Time.Before(since) {
			return false
		}
		if !g.FIFO {
			return true
		}
	}
	return false
}
