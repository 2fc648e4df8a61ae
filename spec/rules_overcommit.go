package spec

import "sort"

// firstGrantFrame returns the frame of message m's first GRANT in the
// receiver's current incarnation, or 0 when the capture no longer holds it
// (more GRANTs than RecentGrants keeps). cur is the message the GRANT at
// frame now is for: before the trace applies that GRANT, a message with
// no GRANT gets its first at now.
func firstGrantFrame(m, cur *Message, now int) int {
	switch {
	case m == cur && m.Grants == 0:
		return now
	case m.Grants > 0 && m.Grants <= len(m.RecentGrants):
		return m.RecentGrants[0].Frame
	}
	return 0
}

// remainingBytes is what m's receiver still lacks of it, SRPT's ranking
// key (HomaModule homa_grant_outranks: fewer bytes remaining ranks higher).
func remainingBytes(m *Message) uint32 {
	if r := m.Received(); r < m.Length {
		return m.Length - r
	}
	return 0
}

// bumpedOut counts the messages of held (messages other than cur with
// granted bytes not yet received) that may have left the receiver's active
// set without completing: a message entering the active set while it is
// full takes the slot of one it outranks, and the victim keeps its granted
// bytes outstanding but gets no SRPT GRANT until promoted again (HomaModule
// homa_grant_manage_rpc and homa_grant_find_victim; linux_6.1.38
// homa_grant_recalc re-ranks all grantable messages). Each entrant (a
// message of held or cur whose first GRANT came after the victim's latest
// GRANT and that has fewer bytes remaining) accounts for at most one
// victim; cur's own GRANT at frame now counts as its first when it has
// none yet.
func bumpedOut(held []*Message, cur *Message, now int) int {
	entrants := make([]*Message, 0, len(held)+1)
	for _, m := range held {
		if firstGrantFrame(m, cur, now) != 0 {
			entrants = append(entrants, m)
		}
	}
	if cur != nil && firstGrantFrame(cur, cur, now) != 0 {
		entrants = append(entrants, cur)
	}
	sort.Slice(entrants, func(i, j int) bool {
		return firstGrantFrame(entrants[i], cur, now) < firstGrantFrame(entrants[j], cur, now)
	})
	victim := make(map[*Message]bool)
	for _, en := range entrants {
		first, rem := firstGrantFrame(en, cur, now), remainingBytes(en)
		// The victim is the lowest-ranked message the entrant outranks.
		var best *Message
		for _, m := range held {
			if m == en || victim[m] || m.GrantFrame >= first || remainingBytes(m) <= rem {
				continue
			}
			if best == nil || remainingBytes(m) > remainingBytes(best) {
				best = m
			}
		}
		if best != nil {
			victim[best] = true
		}
	}
	return len(victim)
}

// outranksAll reports whether waiting message self has clearly fewer bytes
// left to receive (by more than rank_tolerance, the capture's view of
// received bytes running ahead of the receiver's) than every message of
// set and extra but gone: then SRPT puts it in the active set even when
// that is full (HomaModule homa_grant_find_victim: the lowest-ranked slot,
// by the remaining bytes it recorded on activation, which only overstate
// the live count, gives way to a message that outranks it; linux_6.1.38
// homa_grant_recalc re-ranks every grantable message), so a full set does
// not excuse it from being granted (facts GRANT-08).
func outranksAll(c *Ctx, self *Message, set map[*Message]*RPC, extra, gone *Message) bool {
	if self == nil || self.Length == 0 {
		return false
	}
	left := int64(remainingBytes(self)) + int64(c.P.RankTolerance)
	clear := func(m *Message) bool {
		return m == nil || m == self || m == gone || (m.Length > 0 && int64(remainingBytes(m)) > left)
	}
	for m := range set {
		if !clear(m) {
			return false
		}
	}
	return clear(extra)
}
