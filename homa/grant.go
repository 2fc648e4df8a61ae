package homa

import "github.com/homatest/homatest/spec/wire"

// grant runs the receiver's grant decision (HomaModule homa_grant.c): the
// incoming messages longer than U are ranked by bytes still to receive
// (SRPT; older first on ties); the first max_overcommit are active; each
// active message is granted up to received + window, window =
// max_incoming/(active+1) unless Window is set, while the granted-but-not-
// received bytes of all of them stay within max_incoming. The GRANT's
// priority is max(0, min(max_sched_prio, n-1) - rank). The ranking and the
// outstanding bytes are kept in h.grants as bytes arrive, so a decision
// costs O(max_overcommit + log n) for n grantable messages.
func (h *Machine) grant() {
	if h.faults[FaultNoGrants] || h.grants.len() == 0 {
		return
	}
	active := h.grants.active
	n := len(active)
	window := h.p.Window
	if window == 0 {
		window = h.p.MaxIncoming / (n + 1)
	}
	// Within one decision, each GRANT adds its increment of the horizon
	// to the outstanding bytes (an overestimate when a sender had run
	// past its horizon); the next decision starts from the exact sum.
	outstanding := h.grants.outstanding
	seg := h.p.maxSegData(h.v6)
	granted := false
	// A FIFO grant only follows an SRPT grant (homa_grant_check_fifo runs
	// after homa_grant_try_send granted): while SRPT grants wait for
	// max_incoming to drain, FIFO grants on their own would keep the
	// budget full and starve SRPT completely.
	defer func() {
		if granted {
			h.fifoGrant(window)
		}
	}()
	// Granting changes no message's rank, so active keeps its order
	// through the loop.
	for rank, g := range active {
		m := g.m
		target := min(m.length(), m.received()+window)
		if !h.faults[FaultOvercommit] {
			target = min(target, m.granted+max(0, h.p.MaxIncoming-outstanding))
		}
		prio := uint8(max(0, min(h.p.MaxSchedPrio, n-1)-rank))
		if h.faults[FaultGrantTopPriority] {
			prio = h.topPriority()
		}
		if target <= m.granted {
			continue
		}
		if h.faults[FaultGrantStopAndWait] && m.granted > m.received() {
			continue // granted bytes still on their way: wait for them all
		}
		// Grant in steps of at least one packet (or to the end), so that
		// a GRANT is not sent for every packet received, but only while
		// granted bytes are still on their way: with nothing in flight no
		// arrival would run this decision again, and a window below one
		// packet (max_incoming/(n+1) with many messages active) would
		// stall every message for good.
		if target-m.granted < seg && target < m.length() && m.granted > m.received() {
			continue
		}
		outstanding += target - m.granted
		m.granted, m.prio = target, prio
		h.grants.update(g)
		off := target
		if h.faults[FaultGrantPastEnd] && target == m.length() {
			off = target + seg
		}
		h.sendGrant(g.r, off, prio)
		granted = true
	}
}

// fifoGrant gives fifo_grant_increment more bytes to the oldest incoming
// message at Params.highPriority, at most once per fifoInterval
// (HomaModule homa_grant_check_fifo, at any number of levels), unless that
// message already has window + 2·increment bytes outstanding.
func (h *Machine) fifoGrant(window int) {
	iv := h.p.fifoInterval()
	old := h.grants.oldest()
	if iv == 0 || old == nil || h.now-h.lastFIFO < iv {
		return
	}
	m := old.m
	if m.granted-m.received() >= window+2*h.p.FIFOGrantIncrement || m.granted >= m.length() {
		return
	}
	h.lastFIFO = h.now
	m.granted = min(m.length(), m.granted+h.p.FIFOGrantIncrement)
	h.grants.update(old)
	h.sendGrant(old.r, m.granted, h.p.highPriority())
}

func (h *Machine) sendGrant(r *rpc, offset int, prio uint8) {
	h.grantFields = wire.GrantFields{Common: h.control(r), Offset: uint32(offset), Priority: prio}
	h.send(r.peer, h.topPriority(), &h.grantFields) // send keeps nothing of it
}
