package homa

import (
	"sort"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantable is an incoming message that needs GRANTs.
type grantable struct {
	r *rpc
	m *msgIn
}

// grant runs the receiver's grant decision (HomaModule homa_grant.c): the
// incoming messages longer than U are ranked by bytes still to receive
// (SRPT; older first on ties); the first max_overcommit are active; each
// active message is granted up to received + window, window =
// max_incoming/(active+1) unless Window is set, while the granted-but-not-
// received bytes of all of them stay within max_incoming. The GRANT's
// priority is max(0, min(max_sched_prio, n-1) - rank). Called with h.mu held.
func (h *Host) grant() {
	if h.faults[FaultNoGrants] {
		return
	}
	var gs []grantable
	for _, r := range h.servers {
		if r.state == serverReceiving && r.in != nil && r.in.length() > h.p.UnschedBytes && !r.in.complete {
			gs = append(gs, grantable{r, r.in})
		}
	}
	for _, r := range h.clients {
		if r.in != nil && r.in.length() > h.p.UnschedBytes && !r.in.complete {
			gs = append(gs, grantable{r, r.in})
		}
	}
	if len(gs) == 0 {
		return
	}
	sort.Slice(gs, func(i, j int) bool {
		a, b := gs[i].m.length()-gs[i].m.received(), gs[j].m.length()-gs[j].m.received()
		if a != b {
			return a < b
		}
		return gs[i].m.created.Before(gs[j].m.created) || gs[i].m.created.Equal(gs[j].m.created) && gs[i].r.id < gs[j].r.id
	})
	active := gs
	if len(active) > h.p.MaxOvercommit && !h.faults[FaultOvercommit] {
		active = active[:h.p.MaxOvercommit]
	}
	n := len(active)
	window := h.p.Window
	if window == 0 {
		window = h.p.MaxIncoming / (n + 1)
	}
	outstanding := 0
	for _, g := range gs {
		outstanding += max(0, g.m.granted-g.m.received())
	}
	seg := h.p.maxSegData(h.v6)
	granted := false
	// A FIFO grant only follows an SRPT grant (homa_grant_check_fifo runs
	// after homa_grant_try_send granted): while SRPT grants wait for
	// max_incoming to drain, FIFO grants on their own would keep the
	// budget full and starve SRPT completely.
	defer func() {
		if granted {
			h.fifoGrant(gs, window)
		}
	}()
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
		// Grant in steps of at least one packet (or to the end), so that
		// a GRANT is not sent for every packet received.
		if target-m.granted < seg && target < m.length() {
			continue
		}
		outstanding += target - m.granted
		m.granted, m.prio = target, prio
		off := target
		if h.faults[FaultGrantPastEnd] && target == m.length() {
			off = target + seg
		}
		h.sendGrant(g.r, off, prio)
		granted = true
	}
}

// fifoGrant gives fifo_grant_increment more bytes to the oldest incoming
// message at level num_priorities-2, at most once per fifoInterval
// (HomaModule homa_grant_check_fifo), unless that message already has
// window + 2·increment bytes outstanding.
func (h *Host) fifoGrant(gs []grantable, window int) {
	iv := h.p.fifoInterval()
	if iv == 0 || len(gs) == 0 || time.Since(h.lastFIFO) < iv || h.p.NumPriorities < 2 {
		return
	}
	var old *grantable
	for i := range gs {
		if old == nil || gs[i].m.created.Before(old.m.created) {
			old = &gs[i]
		}
	}
	m := old.m
	if m.granted-m.received() >= window+2*h.p.FIFOGrantIncrement || m.granted >= m.length() {
		return
	}
	h.lastFIFO = time.Now()
	m.granted = min(m.length(), m.granted+h.p.FIFOGrantIncrement)
	h.sendGrant(old.r, m.granted, uint8(h.p.NumPriorities-2))
}

func (h *Host) sendGrant(r *rpc, offset int, prio uint8) {
	h.send(r.peer, h.topPriority(), &wire.GrantFields{Common: h.control(r), Offset: uint32(offset), Priority: prio})
}
