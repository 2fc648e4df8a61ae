package spec

import (
	"cmp"
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"net/netip"
	"slices"
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
					if is, oLeft, _, _ := rankAhead(c, e, o, m, left, g.Offset(), false); is {
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
				counted := -1 // not bounding top
				if ahead > 0 && c.Net.cp.TimesArrivalsAt(e.Src) {
					counted = c.T.Grantable(e.Src, e.Time) + c.T.RecentlyEnded(e.Src, e.Time)
					if n := min(counted, c.P.MaxOvercommit); n-1 < top {
						top, topWhy = max(n, 1)-1, fmt.Sprintf("n-1 = %d (at most %s being granted)", max(n, 1)-1, plural.Of(max(n, 1), "message", "messages"))
					}
				}
				if max := top - ahead; p > max {
					v := Violation("GRANT priority %d for a message with %d bytes left, while %d other messages it is granting had fewer left (the fewest %d, slack earlier): rank %d below %s allows at most %d",
						p, left, ahead, firstLeft, ahead, topWhy, max)
					late, from, ok := rankLate(c, e, m, left, p, ahead, counted)
					if !ok {
						return v
					}
					return v.WithSlack(c.P.Slack).WithLate(late).WithSince(from)
				}
				if r := rankFloor(c, e, mr, m, p); r.Status == Violated {
					return r
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
	}
}

// rankAhead reports whether message o, which receiver e.Src is granting,
// counts as ranked ahead of message m (left bytes left, granted to
// offset by GRANT e) in HOMA-GRANT-011's upper bound, with the bytes it
// had left in the receiver's view. With lag set it also returns how long
// the receiver must have lagged behind o's DATA to see o not ahead, and
// from when (the arrival that put o ahead); lag -1 when no lag would (o
// ahead by its whole length).
func rankAhead(c *Ctx, e *Event, o, m *Message, left int64, offset uint32, lag bool) (bool, int64, time.Duration, time.Time) {
	if o == m || o.Length == 0 || len(o.RecentGrants) == 0 || o.Granted >= o.Length {
		// A fully granted message has left the active set
		// (homa_grant_check_rpc).
		return false, 0, 0, time.Time{}
	}
	last := o.RecentGrants[len(o.RecentGrants)-1]
	if e.Time.Sub(last.Time) > c.P.Slack {
		return false, 0, 0, time.Time{}
	}
	// The receiver had processed at least the bytes seen slack ago: the
	// most o can have had left in its view.
	view := e.Time.Add(-c.P.Slack)
	viewed := true
	if c.P.Wire == wire.VersionCurrent {
		// main ranks o by the bytes it had left when it entered the
		// active set (active_remaining is written only by
		// homa_grant_add_active): at the latest by its first GRANT, or,
		// with that GRANT out of sight, at any time since its first byte.
		viewed = o.Grants > 0 && o.Grants <= len(o.RecentGrants)
		view = o.RecentGrants[0].Time.Add(-c.P.Slack)
	}
	oLeft := int64(o.Length)
	if viewed {
		oLeft -= int64(o.ReceivedBy(view))
	}
	tol := int64(c.P.RankTolerance)
	if oLeft+tol >= left || c.P.Wire == wire.VersionCurrent && !ungrantedAhead(o, m, offset, c.P.RankTolerance) {
		return false, oLeft, 0, time.Time{}
	}
	if !lag {
		return true, oLeft, 0, time.Time{}
	}
	if !viewed {
		return true, oLeft, -1, time.Time{}
	}
	// o is ahead once the receiver has more than thr of its bytes: the
	// first sample past thr is the arrival a lagging receiver had not
	// processed (the oldest one kept when the crossing is older: the
	// least lag).
	thr := int64(o.Length) + tol - left
	if thr < 0 {
		return true, oLeft, -1, time.Time{} // ahead with none of its bytes
	}
	for _, s := range o.recvLog {
		if s.t.After(view) {
			break
		}
		if int64(s.n) > thr {
			return true, oLeft, max(view.Sub(s.t), 0), s.t
		}
	}
	return true, oLeft, 0, view
}

// rankLate returns how long past slack the receiver of SRPT GRANT e for
// message m (left bytes left) at level p must have lagged for p to be
// within HOMA-GRANT-011's upper bound, where ahead messages counted as
// ranked ahead of m and counted is the messages the trace knows the
// receiver may be granting (-1: the bound did not use them): a lag that
// hid the DATA putting j of the aheads ahead (rankAhead), and, while some
// stay ahead, one that hid the ends of enough other messages to raise
// n-1 to p plus those (levelLate); with none ahead the bound is
// max_sched_prio alone. The least such lag, from the earliest packet it
// rests on; ok false when none would do.
func rankLate(c *Ctx, e *Event, m *Message, left int64, p, ahead, counted int) (time.Duration, time.Time, bool) {
	type lagged struct {
		d    time.Duration
		from time.Time
	}
	var lags []lagged
	for o := range c.T.granting[e.Src] {
		if is, _, d, from := rankAhead(c, e, o, m, left, e.Packet.Grant().Offset(), true); is && d >= 0 {
			lags = append(lags, lagged{d, from})
		}
	}
	slices.SortFunc(lags, func(a, b lagged) int { return cmp.Compare(a.d, b.d) })
	var best time.Duration
	var bestFrom time.Time
	found := false
	for j := 0; j <= ahead && j <= len(lags); j++ {
		var d time.Duration
		var from time.Time
		for _, l := range lags[:j] {
			d = max(d, l.d)
			if from.IsZero() || l.from.Before(from) {
				from = l.from
			}
		}
		need := p + ahead - j // the top level the bound needs
		if j == ahead {
			if p > c.P.MaxSchedPrio {
				continue
			}
		} else if counted >= 0 {
			nd, nFrom, ok := levelLate(c, e.Src, need, counted, e.Time)
			if !ok {
				continue
			}
			if nd > d {
				d = nd
			}
			if !nFrom.IsZero() && (from.IsZero() || nFrom.Before(from)) {
				from = nFrom
			}
		} else if need > c.P.MaxSchedPrio {
			continue
		}
		if !found || d < best {
			best, bestFrom, found = d, from, true
		}
	}
	if best <= 0 {
		bestFrom = time.Time{} // no lag needed: any overlapping stall
	}
	return best, bestFrom, found
}

// levelLate returns, for an SRPT GRANT from receiver h at now whose level
// p needs more messages being granted than the counted ones the trace
// knows of (Grantable plus RecentlyEnded, at least one), how long past
// slack the receiver must have lagged behind the ends of the others
// (Trace.endedLate), and the end it is measured from: the GRANT was due
// at a lower level from slack after that end on. ok is false when no
// count allows p: above max_sched_prio, or more messages than the
// max_overcommit a receiver grants at once.
func levelLate(c *Ctx, h netip.Addr, p, counted int, now time.Time) (time.Duration, time.Time, bool) {
	if p > c.P.MaxSchedPrio || c.P.MaxOvercommit > 0 && p+1 > c.P.MaxOvercommit {
		return 0, time.Time{}, false
	}
	late, from := c.T.endedLate(h, p+1-max(counted, 1), now)
	if late <= 0 {
		return 0, time.Time{}, true
	}
	return late, from, true
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
	late, from := floorLate(c, e, m, since, mLeft, mUngranted, floor-p)
	return Violation("GRANT priority %d for a message with at most %d bytes left: %s surely being granted (SRPT GRANTs within slack) and %d others may rank ahead, so min(max_sched_prio %d, n-1) - rank is at least %d",
		p, mLeft, plural.Of(nLo, "message from a distinct host is", "messages from distinct hosts are"), ahead, c.P.MaxSchedPrio, floor).WithSlack(c.P.Slack).WithLate(late).WithSince(from)
}

// floorLate returns how long past slack the receiver of SRPT GRANT e for
// message m must have lagged for the GRANT's level to be within
// rankFloor's bound, need levels below it, and from when: each level
// takes one more message ranked ahead of m, which a receiver that had not
// processed m's DATA since the arrival that put m clearly ahead of it saw
// (m's bytes left then, mLeft now as of since), or one fewer message
// being granted, which a GRANT decided before the other's first DATA (and
// held back since) had not counted. The lag that gives need of them at
// once; at most the lag back to the capture's start, where the receiver
// had seen nothing.
func floorLate(c *Ctx, e *Event, m *Message, since time.Time, mLeft, mUngranted int64, need int) (time.Duration, time.Time) {
	var lags []time.Duration
	tol := int64(c.P.RankTolerance)
	for o := range c.T.longIn[e.Src] {
		if o == m || o.Length == 0 {
			continue
		}
		oLeft := int64(remainingBytes(o))
		if oLeft <= mLeft+tol || int64(ungrantedBytes(o)) <= mUngranted+tol {
			continue // already counted ahead
		}
		// Ahead for a receiver that had at most thr of m's bytes.
		thr := int64(m.Length) + tol - oLeft
		if thr < 0 {
			continue
		}
		for _, s := range m.recvLog {
			if s.t.After(since) {
				break
			}
			if int64(s.n) > thr {
				lags = append(lags, max(since.Sub(s.t), 0))
				break
			}
		}
	}
	for o, r := range c.T.granting[e.Src] {
		if o == m || o.Length == 0 || o.Complete || o.Granted >= o.Length || r.Unknown || r.Acked || !srptGrantSince(c.P, o, since) {
			continue
		}
		lags = append(lags, max(since.Sub(o.FirstData), 0))
	}
	late := since.Sub(c.T.Start)
	if need >= 1 && need <= len(lags) {
		slices.Sort(lags)
		late = min(late, lags[need-1])
	}
	if late <= 0 {
		return 0, time.Time{} // no lag needed: any overlapping stall
	}
	return late, since.Add(-late)
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
