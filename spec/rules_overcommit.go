package spec

// remainingBytes is what m's receiver still lacks of it, SRPT's ranking
// key (HomaModule homa_grant_outranks: fewer bytes remaining ranks higher).
func remainingBytes(m *Message) uint32 {
	if r := m.Received(); r < m.Length {
		return m.Length - r
	}
	return 0
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
