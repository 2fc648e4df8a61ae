package spec

// remainingBytes is what m's receiver still lacks of it, SRPT's ranking
// key (HomaModule homa_grant_outranks: fewer bytes remaining ranks higher).
func remainingBytes(m *Message) uint32 {
	if r := m.Received(); r < m.Length {
		return m.Length - r
	}
	return 0
}

// ungrantedBytes is what m's receiver has still to grant (granted starts
// at the incoming of the message's DATA): the SRPT key of net-next and
// linux_6.13.9 (homa_grant.c homa_grant_outranks: length - granted; main
// from 2025-04 to 3daedc3), which the linux profile spans with main HEAD's
// remainingBytes.
func ungrantedBytes(m *Message) uint32 {
	if g := max(m.Granted, m.MaxIncoming); g < m.Length {
		return m.Length - g
	}
	return 0
}

// clearlyAhead reports whether message a has fewer bytes left than b by
// more than tol (rank_tolerance) by both SRPT keys HomaModule has used,
// remainingBytes and ungrantedBytes: only then does every version rank a
// first. The two differ by what is granted and not yet received, up to a
// window plus FIFO grants' increments.
func clearlyAhead(a, b *Message, tol uint32) bool {
	return int64(remainingBytes(a))+int64(tol) < int64(remainingBytes(b)) &&
		int64(ungrantedBytes(a))+int64(tol) < int64(ungrantedBytes(b))
}

// outranksAll reports whether waiting message self has clearly fewer bytes
// left (clearlyAhead: by more than rank_tolerance, the capture's view of
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
	clear := func(m *Message) bool {
		return m == nil || m == self || m == gone || (m.Length > 0 && clearlyAhead(self, m, c.P.RankTolerance))
	}
	for m := range set {
		if !clear(m) {
			return false
		}
	}
	return clear(extra)
}
