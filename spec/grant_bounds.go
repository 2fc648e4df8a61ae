package spec

import "fmt"

// GRANT bounds: the GRANT rules that cost most per GRANT scan the
// receiver's granting set (Trace.granting): HOMA-GRANT-013 sums each
// message's granted bytes not received against max_incoming, and
// HOMA-GRANT-006 counts the messages holding a grant slot against
// max_overcommit. The trace keeps, for each receiver, the sum and the
// count over that set as messages change (outstandingSum.granted and
// .held, refreshOutstanding); what the rules count is never more (they
// leave out messages that may have timed out, and HOMA-GRANT-006 those
// a later message outranks). When that upper bound, with the GRANT's own
// message as it stands after the GRANT, is within the limit, the rule's
// answer is a plain pass, and the scan is spared. With verification on
// (the spec tests) the rule scans anyway and panics on any other answer
// (boundedPass).

// grantSet returns the sums the trace keeps over the granting set of the
// receiver that sent GRANT e, and e's message (cur: nil when the trace
// does not know its RPC) with the part of those sums it already holds
// (own: bytes, slot: 1 when it is counted in held). ok is false when the
// sums do not cover the set (a message of another receiver's sum joined
// it: outstandingSum.mixed).
func grantSet(c *Ctx, e *Event) (s outstandingSum, cur *Message, own int64, slot int32, ok bool) {
	if p := c.T.outstanding[e.Src]; p != nil {
		if p.mixed {
			return s, nil, 0, 0, false
		}
		s = *p
		_, cur = grantMsg(c, e)
		if cur != nil && cur.acc == p {
			if cur.outInG {
				own = cur.outVal
			}
			if cur.outHeld {
				slot = 1
			}
		}
		return s, cur, own, slot, true
	}
	// No message to e.Src was ever filed in its granting set.
	_, cur = grantMsg(c, e)
	return s, cur, 0, 0, true
}

// grantIncomingWithin reports whether the granted bytes not received over
// the granting set of GRANT e's receiver, with e's message granted up to
// e's offset, are at most max_incoming: HOMA-GRANT-013 then passes. It
// is false for a GRANT that may be a FIFO grant (the rule skips those).
func grantIncomingWithin(c *Ctx, e *Event) bool {
	if maybeFIFO(c, e) {
		return false
	}
	s, cur, own, _, ok := grantSet(c, e)
	if !ok {
		return false
	}
	sum := s.granted - own
	if cur != nil {
		sum += max(0, int64(max(cur.Granted, e.Packet.Grant().Offset()))-int64(cur.Received()))
	}
	return sum <= int64(c.P.MaxIncoming)
}

// grantSlotsWithin returns an upper bound of the messages GRANT e's
// receiver grants at once, counted as HOMA-GRANT-006 counts them (those
// of its granting set with granted bytes not received, not granted to
// their end, and e's message when e leaves it granted bytes not
// received), and whether that bound is within max_overcommit (the rule
// then passes). ok is false for a GRANT that may be a FIFO grant.
func grantSlotsWithin(c *Ctx, e *Event) (int64, bool) {
	if maybeFIFO(c, e) {
		return 0, false
	}
	s, cur, _, slot, ok := grantSet(c, e)
	if !ok {
		return 0, false
	}
	n := int64(s.held - slot)
	if cur != nil && max(cur.Granted, e.Packet.Grant().Offset()) > cur.Received() {
		n++
	}
	return n, n <= int64(c.P.MaxOvercommit)
}

// boundedPass returns check as an Each rule's Check that answers a plain
// pass without calling check where within holds. With verification on
// it calls check there too and panics unless that is its answer.
func boundedPass(id string, within func(*Ctx, *Event) bool, check func(*Ctx, *Event) Result) func(*Ctx, *Event) Result {
	return func(c *Ctx, e *Event) Result {
		if !within(c, e) {
			return check(c, e)
		}
		if c.verify {
			if res := check(c, e); res != Pass() {
				panic(fmt.Sprintf("%s at frame %d: the granting set's bounds gave a pass, the rule %v %q", id, e.Frame, res.Status, res.Why()))
			}
			c.boundVerified++
		}
		c.bounded++
		return Pass()
	}
}

// boundedMeasure returns measure as an AtMost rule's Measure that answers
// within's bound, without calling measure, where the bound is within the
// limit (limit: the rule's). With verification on it calls measure there
// too and panics unless measure also finds the rule applies and is
// within the limit.
func boundedMeasure(id string, within func(*Ctx, *Event) (int64, bool), limit func(*Params) int64, measure func(*Ctx, *Event) (int64, int64, bool)) func(*Ctx, *Event) (int64, int64, bool) {
	return func(c *Ctx, e *Event) (int64, int64, bool) {
		n, ok := within(c, e)
		if !ok {
			return measure(c, e)
		}
		if c.verify {
			if v, lim, applies := measure(c, e); !applies || v > lim {
				panic(fmt.Sprintf("%s at frame %d: the granting set's bounds gave %d, within the limit %d; the rule measured %d (applies %v)", id, e.Frame, n, limit(c.P), v, applies))
			}
			c.boundVerified++
		}
		c.bounded++
		return n, limit(c.P), true
	}
}
