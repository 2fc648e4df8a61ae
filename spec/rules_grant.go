package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// grantMsg returns the message a GRANT (or RESEND) is about: the one sent
// by the other side of the RPC.
func grantMsg(c *Ctx, e *Event) (*RPC, *Message) {
	r := c.T.Lookup(e)
	if r == nil {
		return nil, nil
	}
	return r, r.Msg(oppositeRole(e.Packet.Role()))
}

// grantRules: receiver-driven grants (HomaModule homa_grant.c).
func grantRules() []*Rule {
	grant := []wire.PacketType{wire.TypeGrant}
	return []*Rule{
		{
			ID: "HOMA-GRANT-001", Level: Must, Alone: true,
			Facts:     []string{"GRANT-01"},
			Statement: "Only messages longer than unsched_bytes receive GRANTs, or one a DATA of which carried incoming short of its length (a retransmission that may have created the RPC anew).",
			Source:    "HomaModule homa_grant.c homa_grant_init_rpc (grantable when the first packet's incoming is short of the length); homa_outgoing.c homa_resend_data (incoming = the range's end)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("GRANT for a message with no DATA in the capture: its length is unknown")
				}
				if m.Length <= c.P.UnschedBytes {
					if m.MinIncoming > 0 && m.MinIncoming < m.Length {
						// A retransmission carries incoming = the end of
						// the range it answers (homa_resend_data); one
						// that creates the RPC anew (after a timeout)
						// leaves it grantable (homa_grant_init_rpc).
						return Pass()
					}
					return Violation("GRANT offset %d for a %d-byte message, which fits in unsched_bytes %d", e.Packet.Grant().Offset(), m.Length, c.P.UnschedBytes)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-002", Level: Must, Alone: true,
			Facts:     []string{"GRANT-01"},
			Statement: "A GRANT offset never exceeds the message length and always exceeds the receiver's starting horizon: the unscheduled bytes U, or the smaller incoming of a DATA of the message (a restarted or retransmitted packet, which the receiver may have got first).",
			Source:    "HomaModule homa_grant.c homa_grant_try_send, homa_grant_check_fifo, homa_grant_init_rpc (granted starts at the first packet's incoming); homa_incoming.c homa_rpc_unknown_pkt, homa_outgoing.c homa_resend_data (a restart resends with incoming = tx_end)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("GRANT for a message with no DATA in the capture")
				}
				off := e.Packet.Grant().Offset()
				u := c.P.Unsched(m.Length)
				switch {
				case off > m.Length:
					return Violation("GRANT offset %d beyond message_length %d", off, m.Length)
				case off <= u && (m.MinIncoming == 0 || off <= m.MinIncoming):
					if m.MinIncoming > 0 && m.MinIncoming < u {
						return Violation("GRANT offset %d not above U = %d nor above the smallest incoming %d of the message's DATA", off, u, m.MinIncoming)
					}
					return Violation("GRANT offset %d not above U = %d", off, u)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-003", Level: Must,
			Facts:     []string{"GRANT-01"},
			Statement: "GRANT offsets for one message strictly increase (on main a repeat of exactly the message length is tolerated; linux_6.1.38 never repeats one).",
			Source:    "HomaModule homa_grant.c homa_grant_try_send (granted only grows; main may resend offset = length; the RPC's lock is released before homa_grant_send reads msgin.granted, as in linux_6.13.9 homa_grant_check_rpc and linux_6.10.6 homa_grant_try_send), linux_6.1.38 homa_grant_send (only a positive increment is sent, under the RPC's lock); fault @7774497",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "at a capture away from the receiver, a new offset below the latest seen less than slack after it is a GRANT reordered before the capture point (a downgrade), and where the capture holds the GRANTs as delivered (the delivered point, or a tap on their receiver's own link), with the whole network before the capture point, so is one seen any time after it; a new offset below the latest, less than slack after the first GRANT seen above it, may have left the receiver last through another core's NIC queue (on its own link too: inconclusive); a repeated offset is a violation unless it is the network's duplicate or, after linux_6.1.38, the latest offset repeated less than slack after the GRANT that first carried it (two cores that each raised the offset may both send the value they read after releasing the RPC's lock); after the client's ack, a capture away from the receiver cannot show a late request packet re-creating the RPC there (AMO-01): inconclusive; so is a GRANT after request DATA that reached the server about timeout_ticks after it last heard from the client (its timer may have aborted the RPC and that DATA created it anew, granted from its incoming: homa_timer_check_rpc, homa_rpc_alloc_server); where only the server's own GRANT, sent while it held every byte it had granted, keeps that silence short, a server that decided the GRANT and stalled before sending it may have timed out all the same: the finding is a timing one, late by how much earlier the GRANT must have left",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				r, m := grantMsg(c, e)
				if m == nil || m.Grants == 0 {
					return Pass()
				}
				off := e.Packet.Grant().Offset()
				if why, ok := recreatedUnseen(c, r, e); ok && off <= m.Granted {
					return Unsure("GRANT offset %d does not exceed the earlier GRANT offset %d: %s", off, m.Granted, why)
				}
				if why, ok := timedOutUnsure(r, e); ok && off <= m.Granted {
					return Unsure("GRANT offset %d does not exceed the earlier GRANT offset %d: %s", off, m.Granted, why)
				}
				// main's homa_grant_try_send can send a zero increment to a
				// fully granted RPC (facts §8); linux_6.1.38's
				// homa_grant_send returns early unless the increment is
				// positive, so there a repeat is the BR-07 fault.
				repeatOK := off == m.Granted && off == m.Length && c.P.Wire != wire.Version2024
				if _, dup := c.Net.Duplicate(); !dup && off == m.Granted && !repeatOK && c.P.Wire != wire.Version2024 && m.GrantFrame > 0 && e.Time.Sub(m.GrantTime) <= c.P.Slack && e.Time.Sub(m.GrantTime) >= 0 {
					// Since linux_6.10.6 a GRANT carries msgin.granted as
					// homa_grant_send reads it after the RPC's lock is
					// released: two cores that each raised the offset may
					// both send the later value, the second up to a stalled
					// CPU's delay after the first. (An identical copy the
					// network made is reported as that.)
					return Unsure("GRANT offset %d repeats the offset of the GRANT in frame %d, %v earlier: two cores that each raised it may both send the latest value (homa_grant_send reads msgin.granted without the RPC's lock)",
						off, m.GrantFrame, e.Time.Sub(m.GrantTime).Round(time.Microsecond))
				}
				if off <= m.Granted && !repeatOK {
					// A fresh offset (no GRANT carried it before) below the
					// latest, seen less than slack after it, is an older
					// GRANT the network reordered before the capture point.
					fresh := off < m.Granted
					for _, g := range m.RecentGrants {
						fresh = fresh && g.Offset != off
					}
					if fresh && !c.Net.atSender(e.Src) && e.Time.Sub(m.GrantTime) <= c.P.Slack && e.Time.Sub(m.GrantTime) >= 0 {
						return Downgrade(CauseReorder, Evidence{m.GrantFrame, fmt.Sprintf("GRANT offset %d, which no GRANT carried before, arrived %v after this GRANT offset %d",
							off, e.Time.Sub(m.GrantTime).Round(time.Microsecond), m.Granted)}, "GRANT offset %d does not exceed the earlier GRANT offset %d", off, m.Granted)
					}
					if ev, ok := c.Net.MayReorderBefore(e.Src, e.Dst, m.GrantFrame); fresh && ok {
						// As delivered, the whole network came before the
						// capture point: it may have held this older GRANT
						// for any time (a netem link, 53 ms).
						return Downgrade(CauseReorder, ev, "GRANT offset %d, which no GRANT carried before, arrived %v after GRANT offset %d (frame %d)",
							off, e.Time.Sub(m.GrantTime).Round(time.Microsecond), m.Granted, m.GrantFrame)
					}
					if g, ok := firstGrantAbove(m, off); fresh && ok && e.Time.Sub(g.Time) <= c.P.Slack && e.Time.Sub(g.Time) >= 0 {
						// Two cores each send a GRANT for the message (the
						// offset read when sending, on main): each leaves
						// through its own core's NIC queue, so one decided
						// first may leave last, even on the receiver's link.
						return Unsure("GRANT offset %d does not exceed the earlier GRANT offset %d, but the receiver may have set it before the first GRANT above it (frame %d, %v earlier): GRANTs sent from two cores leave through their own NIC queues, in either order",
							off, m.Granted, g.Frame, e.Time.Sub(g.Time).Round(time.Microsecond))
					}
					return timedOut(c, r, e, Violation("GRANT offset %d does not exceed the earlier GRANT offset %d", off, m.Granted))
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-004", Level: Must,
			Facts:     []string{"GRANT-01"},
			Statement: "No GRANT is sent for a message whose bytes have all arrived.",
			Source:    "HomaModule homa_grant.c homa_grant_check_rpc (complete messages leave the grantable set); fault @312e4bd",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "the capture must be on the receiver's side of any loss; slack covers packets still in flight to the receiver; where the capture holds the GRANTs as delivered (the delivered point, or a tap on the link of the message's sender), with the whole network before the capture point, a GRANT the network held may arrive however long after the message completed: inconclusive; after the client's ack, a capture away from the receiver cannot show a late request packet re-creating the RPC there (AMO-01): inconclusive; so is a GRANT after request DATA that reached the server about timeout_ticks after it last heard from the client (its timer may have aborted the RPC and that DATA created it anew, lacking the earlier bytes: homa_timer_check_rpc, homa_rpc_alloc_server); where only the server's own GRANT, sent while it held every byte it had granted, keeps that silence short, a server that decided the GRANT and stalled before sending it may have timed out all the same: the finding is a timing one, late by how much earlier the GRANT must have left",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				r, m := grantMsg(c, e)
				if m == nil || !m.Complete {
					return Pass()
				}
				if why, ok := recreatedUnseen(c, r, e); ok {
					return Unsure("GRANT offset %d for the %d-byte message complete since frame %d: %s", e.Packet.Grant().Offset(), m.Length, m.CompleteFrame, why)
				}
				if why, ok := timedOutUnsure(r, e); ok {
					return Unsure("GRANT offset %d for the %d-byte message complete since frame %d: %s", e.Packet.Grant().Offset(), m.Length, m.CompleteFrame, why)
				}
				if late := e.Time.Sub(m.CompleteTime); late > c.P.Slack {
					if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
						return Downgrade(CauseLossAfter, ev, "GRANT offset %d sent %v after the last byte of the %d-byte message was seen (frame %d): the receiver may not have them all",
							e.Packet.Grant().Offset(), late, m.Length, m.CompleteFrame)
					}
					if c.Net.DeliveredAt(e.Src, e.Dst) {
						// As delivered, the whole network came before the
						// capture point: it may have held a GRANT the
						// receiver sent before the last byte arrived for
						// any time (a netem link held one 53 ms).
						return Downgrade(CauseQueueing, Evidence{m.CompleteFrame, fmt.Sprintf("%s, with the whole network from %v to %v before it, which may have held the GRANT however long: it may have left before the message's last byte arrived",
							c.Net.asDelivered(e.Dst), e.Src, e.Dst)}, "GRANT offset %d seen %v after the last byte of the %d-byte message (frame %d)",
							e.Packet.Grant().Offset(), late, m.Length, m.CompleteFrame)
					}
					// A receiver that processed the last byte late (a
					// stall) may have granted before it had it.
					return timedOut(c, r, e, Violation("GRANT offset %d sent %v after the last byte of the %d-byte message was seen (frame %d)",
						e.Packet.Grant().Offset(), late, m.Length, m.CompleteFrame).With(m.CompleteFrame).WithSlack(c.P.Slack)).LateAtMost(late - c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-GRANT-005", Level: Must,
			Facts:     []string{"SND-01", "SND-03", "RTX-08"},
			Statement: "A sender never transmits bytes beyond its grant horizon, max(U, GRANT offsets, RESEND ends), by more than one skb's data (max(max_gso_size, one max_seg_data segment: 1424 bytes over IPv4 at MTU 1500)): neither new bytes nor retransmissions, which resend only bytes already sent.",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data; homa_incoming.c homa_resend_pkt (RESEND raises the horizon; it retransmits [offset, min(end, tx_end))), homa_rpc_unknown_pkt (a client's restart resends [0, tx_end)), homa_outgoing.c homa_resend_data (only packets already in msgout)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactUnderHorizon, Passed}, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil {
					return Pass()
				}
				m := r.Msg(e.Packet.Role())
				if m.ResendAll {
					return Pass()
				}
				h := m.Horizon(c.P)
				if h == 0 {
					h = c.P.Unsched(e.Packet.Data().MessageLength())
				}
				// The skb that crosses the horizon starts below it, so the
				// overshoot is less than one skb's data (SND-03).
				allowed := eventSkb(c.P, e)
				if e.End() >= h+allowed {
					what := "new DATA"
					if e.Retransmit() {
						// A retransmission resends bytes sent before,
						// which lay within the horizon when they went.
						what = "retransmitted DATA"
					}
					return Violation("%s [%d, %d) ends %d bytes past the grant horizon %d (one skb holds %d data bytes with max_gso_size %d)",
						what, e.Offset, e.End(), e.End()-h, h, allowed, c.P.MaxGSOSize)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-006", Level: Should,
			Facts:     []string{"GRANT-06"},
			Statement: "A receiver grants at most max_overcommit messages at once: messages with granted but not yet received bytes never exceed it when a GRANT leaves.",
			Source:    "HomaModule homa_grant.c active set (HOMA_MAX_GRANTS, max_overcommit); SIGCOMM 2018 §3.4",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "a message granted to its end has left the active set and is not counted (its granted bytes may stay outstanding for a RESEND round after a loss), nor is one whose sender sent no DATA or BUSY for timeout_ticks (the receiver may have aborted its RPC) or, over the limit, one that a message granted after it outranks (it may have been demoted with its granted bytes still on their way); needs every DATA toward the receiver; loss after the capture point inflates the count",
			Property: AtMost{Types: grant, What: func(e *Event) string { return fmt.Sprintf("the number of messages granted by %v", e.Src) }, Measure: boundedMeasure("HOMA-GRANT-006", grantSlotsWithin, func(p *Params) int64 { return int64(p.MaxOvercommit) }, func(c *Ctx, e *Event) (int64, int64, bool) {
				g := e.Packet.Grant()
				if maybeFIFO(c, e) {
					// FIFO grants go to the oldest message whether or not
					// it is in the active set (facts GRANT-06, FIFO-01).
					return 0, 0, false
				}
				_, cur := grantMsg(c, e)
				granting := c.T.granting[e.Src]
				held := func(m *Message, r *RPC) bool {
					// A message granted to its end leaves the active set
					// (linux_6.1.38 homa_grant_check_rpc and
					// homa_grant_recalc: homa_grant_remove_rpc once
					// granted >= length): its outstanding bytes no longer
					// hold a slot. Nor does one whose RPC the receiver's
					// timer may have aborted: no DATA or BUSY from its
					// sender for timeout_ticks (homa_timer_check_rpc; 2
					// ticks of tolerance, RTX-10, and slack).
					return m != cur && m.Granted > m.Received() && (m.Length == 0 || m.Granted < m.Length) &&
						e.Time.Sub(maxTime(r.First, r.heardFrom(m))) < c.P.Ticks(c.P.TimeoutTicks-2)-c.P.Slack
				}
				n := 0
				for m, r := range granting {
					if held(m, r) {
						n++
					}
				}
				if n >= c.P.MaxOvercommit {
					// Over the limit (rare): leave out each message a
					// message granted after it outranks. A message that
					// joins a full active set demotes the worst-ranked
					// one it outranks, whose granted bytes stay
					// outstanding (homa_grant_manage_rpc,
					// homa_grant_promote_rpc: homa_grant_find_victim),
					// as do a FIFO grant's to the oldest message
					// (homa_grant_check_fifo): slow to drain when the
					// receiver's downlink is overloaded.
					n = 0
					for m, r := range granting {
						if !held(m, r) {
							continue
						}
						demoted := cur != nil && outranks(cur, e.Time, m)
						for x := range granting {
							demoted = demoted || x != m && x.GrantTime.After(m.GrantTime) && outranks(x, x.GrantTime, m)
						}
						if !demoted {
							n++
						}
					}
				}
				// The message this GRANT is for counts when, with this
				// GRANT, it has granted bytes not yet received (not only
				// when it had no GRANT before).
				if cur != nil && max(cur.Granted, g.Offset()) > cur.Received() {
					n++
				}
				return int64(n), int64(c.P.MaxOvercommit), true
			})},
		},
		{
			ID: "HOMA-GRANT-007", Level: Must, Alone: true,
			Facts:     []string{"GRANT-09", "FIFO-01"},
			Statement: "SRPT GRANTs carry a scheduled priority (at most max_sched_prio); only FIFO grants use level num_priorities-2.",
			Source:    "HomaModule homa_grant.c homa_grant_priority, homa_grant_check_fifo",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				p := int(e.Packet.Grant().Priority())
				if p <= c.P.MaxSchedPrio {
					return Pass()
				}
				if isFIFOGrant(c.P, uint8(p)) {
					return Pass()
				}
				return Violation("GRANT priority %d above max_sched_prio %d", p, c.P.MaxSchedPrio)
			}},
		},
		{
			ID: "HOMA-GRANT-008", Level: Must,
			Facts:     []string{"CTRL-02"},
			Statement: "Scheduled DATA (first transmissions at or above U) is sent at the priority of the latest GRANT for that message that its sender has processed (0 before any).",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data; homa_incoming.c homa_grant_pkt (sched_priority = the GRANT's priority, even for an older, reordered GRANT)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "at a capture on the sender's side a GRANT seen more than slack earlier has been processed; elsewhere DATA below bytes of the message already seen was overtaken on its way (a priority queue holds a lower level back) and may have left before the GRANTs those bytes show processed (cause reordering); elsewhere a GRANT counts as processed once the sender sent bytes only it (or a later GRANT) authorised: until then it may still be on its way to the sender (cause queueing) or, where the capture shows loss toward the sender, lost after the capture point (cause loss after the capture point), and DATA at an older priority is inconclusive (a downgrade); " + tosRaceCapture,
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactUngrantedPart, NotApplicable}, JudgesLevel: true, Timed: true, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if e.Offset < c.P.Unsched(m.Length) || m.Grants == 0 {
					return Skip
				}
				return scheduledPriority(c, e, m)
			}},
		},
		{
			ID: "HOMA-GRANT-009", Level: Must,
			Facts:     []string{"GRANT-03", "GRANT-04"},
			Statement: "A non-FIFO GRANT's offset exceeds the bytes of its message seen so far by at most the grant window: window when it is set, otherwise max_incoming/2 (the dynamic window max_incoming/(n+1) is largest with n = 1 active message).",
			Source:    "HomaModule homa_grant.c homa_grant_try_send (granted ≤ received + window), homa_grant_update_sysctl_deps (windows[n] = max_incoming/(n+1)); linux_6.1.38 homa_grant.c homa_grant_send (increment = grant_window - incoming)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "bytes seen on the path count as received even if still in flight to the receiver (lenient); a capture with no DATA at offset 0 of the message may have started mid-message and is inconclusive; where late request DATA made the trace take the server's timer to have aborted the RPC and that DATA to have created it anew (counting only the bytes since), a GRANT within the window of every byte seen is a timing finding over that silence (a loaded server's timer counts late and may have kept the RPC)",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				if maybeFIFO(c, e) {
					// FIFO grants add fifo_grant_increment to the
					// oldest message whatever its window (facts FIFO-01).
					return Skip
				}
				r, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("GRANT for a message with no DATA in the capture")
				}
				if len(m.Seen) == 0 || m.Seen[0].Start != 0 {
					return Unsure("GRANT for a message whose DATA at offset 0 is not in the capture: bytes received before it are unknown")
				}
				w := c.P.GrantWindow()
				recv := m.Received()
				off := g.Offset()
				if off <= recv+w {
					return Pass()
				}
				v := Violation("GRANT offset %d is %d bytes beyond the %d bytes of the message seen so far; the window allows %d (%s)",
					off, off-recv, recv, w, grantWindowHow(c.P))
				if m.Earlier != nil && m == &r.Request && off <= m.everSeen().Total()+w {
					// Within the window of every byte seen, counting
					// those of the server's earlier incarnation: the
					// finding rests on the trace's inference that the
					// server's timer aborted the RPC (a loaded server's
					// timer counts late and may not have), so it is a
					// timing one.
					return timedOut(c, r, e, v)
				}
				return v
			}},
		},
		{
			ID: "HOMA-GRANT-010", Level: Must,
			Facts:     []string{"GRANT-06", "GRANT-08"},
			Statement: "A receiver that has all unscheduled bytes of a message longer than unsched_bytes sends the message its first GRANT within response_timeout, unless it is already granting max_overcommit other messages (not all with clearly more bytes left to receive: SRPT takes the slot of one of those) or the DATA's incoming already covers the message (a request restarted after RPC_UNKNOWN); when one of those ends (its last byte arrives, or RPC_UNKNOWN ends its RPC) while such messages wait, it grants one of them (or a newer message) within response_timeout.",
			Source:    "HomaModule homa_grant.c homa_grant_check_rpc, homa_grant_manage_rpc (a grantable message joins the active set while fewer than max_overcommit are active, or takes the slot of the lowest-ranked active message it outranks: homa_grant_find_victim, homa_grant_outranks; linux_6.1.38 homa_grant_recalc), homa_grant_unmanage_rpc and homa_grant_promote_queued (a slot freed by a message fully received or an RPC ended by homa_rpc_end goes to the best waiting message), homa_grant_check_needy; fault @2be2170 (fixed @003213d)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "a waiting message is judged again at every packet that frees a grant slot at its receiver (the last byte of a message it grants, RPC_UNKNOWN from the client of a request it grants); slots freed without a packet (an abort, a timeout) are not seen; inconclusive while the receiver grants max_overcommit other messages of which one has no more than rank_tolerance bytes more left to receive, or to grant (net-next and linux_6.13.9 rank by those), than the waiting message (or max_rpcs_per_peer other messages from the same sender, none of which it clearly outranks: 1 on every HomaModule before 3daedc3, 2026-05-21) or has max_incoming authorised and not received (its GRANTs, and U of each message longer than unsched_bytes not granted yet: HomaModule's total_incoming), after its buffer-wakeup RESEND (no buffer space, GRANT-10) and after RPC_UNKNOWN, for a response that came after its client went timeout_ticks without DATA, GRANT or BUSY from the server (the client may have aborted the RPC and discards its DATA), for a request packet that came after the client's ack (the server may discard it), and where the capture shows loss toward the receiver after the capture point; a RESEND beyond U from the receiver counts as a GRANT lost before the capture point",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeData, wire.TypeRPCUnknown},
				Usual:        Usual{When: FactNoFirstGrantDue},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if recv, freed, ok := slotFreed(c, e); ok {
						return slotObligation(c, recv, freed)
					}
					if e.Type() != wire.TypeData || malformedData(c.P, e) {
						// A message past max_message_length is refused
						// (homa_message_in_init): nothing to grant.
						return Obligation{}, false
					}
					length, incoming := e.Packet.Data().MessageLength(), e.Packet.Data().Incoming()
					var seen byteranges.Set
					if r := c.T.Lookup(e); r != nil {
						m := r.Msg(e.Packet.Role())
						if m.Grants > 0 || m.Complete {
							return Obligation{}, false
						}
						if m.Length > 0 {
							length = m.Length
						}
						seen, incoming = m.Seen, max(incoming, m.MaxIncoming)
					}
					u := c.P.Unsched(length)
					// A DATA whose incoming covers the whole message (a
					// request restarted after RPC_UNKNOWN: incoming is
					// tx_end, RTX-09) leaves nothing to grant: the receiver
					// starts its granted offset there (homa_message_in_init).
					if length <= c.P.UnschedBytes || e.Offset >= u || incoming >= length {
						return Obligation{}, false
					}
					// Trigger once: at the packet that completes [0, U).
					if seen.Covers(0, u) || !seen.CoversWith(0, u, e.Offset, min(e.End(), length)) {
						return Obligation{}, false
					}
					sender := e.Packet.Role()
					a := &firstGrantAwait{k: KeyOf(e), sender: sender, receiver: oppositeRole(sender), u: u,
						rHost: e.Dst, sHost: e.Src, trigFrame: e.Frame, trigSeg: e.Segment}
					return Obligation{Key: rpcMsgKey{a.k, sender}, Await: a}, true
				},
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
	}
}

// scheduledPriority judges the priority of scheduled first transmission e
// of message m (HOMA-GRANT-008). The sender uses the priority of the last
// GRANT it processed: every GRANT it got since the one it is known to have
// used (GrantLog), and any GRANT seen less than slack before e (still in
// flight, or an older one reordered behind a newer). Where the capture
// point is on the sender's side, a GRANT seen more than slack earlier has
// surely been processed.
func scheduledPriority(c *Ctx, e *Event, m *Message) Result {
	log := m.GrantLog
	if len(log) > 0 && e.Priority < 16 && m.GrantPriorities == 1<<e.Priority {
		// Every GRANT of the message (GrantPriorities: all it ever had)
		// carried e's priority: the latest one in log, which both sets
		// below hold whatever the sender processed, says e's level.
		return Pass().WithSlack(c.P.Slack)
	}
	// A GRANT is old when its time is more than slack before e
	// (e.Time.Sub(t) > slack), compared without a subtraction per GRANT.
	horizon := e.Time.Add(-c.P.Slack)
	settled := -1 // index in log of a GRANT the sender has surely processed
	if m.Known {
		settled = 0
	}
	timed := -1 // the same by time alone (queueing, no loss)
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].Time.Before(horizon) {
			timed = i
			break
		}
	}
	if c.Net.atReceiver(e.Src) {
		settled = max(settled, timed)
	}
	// allowed: the levels the sender may use; strict: those it may use
	// if queueing alone (every GRANT older than slack arrived) decided.
	// One pass over each log for both (log entries are read in place).
	allowed, strict := uint16(0), uint16(0)
	for i := range log {
		g := &log[i]
		recent, bit := !g.Time.Before(horizon), uint16(1)<<(g.Priority&15)
		if i >= settled || recent {
			allowed |= bit
		}
		if i >= timed || recent {
			strict |= bit
		}
	}
	for i := range m.RecentGrants { // older ones reordered behind a newer
		if g := &m.RecentGrants[i]; !g.Time.Before(horizon) {
			allowed |= 1 << (g.Priority & 15)
			strict |= 1 << (g.Priority & 15)
		}
	}
	if settled < 0 {
		// No GRANT is known to have arrived: data sent on a horizon a
		// RESEND raised (a lost GRANT, RTX-08) keeps the initial
		// scheduled priority 0.
		allowed |= 1
	}
	if allowed&e.PriorityBits() == 0 {
		last, _ := m.LastGrant()
		if e.Offset < m.SentEnd && !c.Net.atSender(e.Src) {
			// Later bytes of the message passed the capture point
			// first: this packet waited behind them (strict-priority
			// queues hold a lower level back) and may have left its
			// sender before the GRANTs they show processed.
			ev := Evidence{last.Frame, fmt.Sprintf("bytes of the message up to %d passed the capture point before it, so it left %v earlier than they did, perhaps before this GRANT arrived", m.SentEnd, e.Src)}
			return Downgrade(CauseReorder, ev, "scheduled DATA at offset %d sent at priority %d; the latest GRANT the sender has processed says %s",
				e.Offset, e.Priority, bitsString(allowed))
		}
		v := Violation("scheduled DATA at offset %d sent at priority %d; the latest GRANT the sender has processed says %s (latest GRANT %v earlier, frame %d)",
			e.Offset, e.Priority, bitsString(allowed), e.Time.Sub(last.Time).Round(time.Microsecond), last.Frame).Wants(allowed, time.Time{})
		if late, from, ok := levelLag(c, e, m); ok {
			// A sender that lagged processing its GRANTs used an
			// older one's level: a stall explains it only by as much.
			v = v.WithSlack(c.P.Slack).WithLate(late).WithSince(from)
		}
		return v
	}
	if timed < 0 {
		strict |= 1
	}
	if strict&e.PriorityBits() == 0 && timed >= 0 {
		// The sender has not shown it processed the GRANT: the label says
		// what the capture shows of why. Loss toward the sender where the
		// capture shows some (it asked again for bytes seen sent to it);
		// otherwise the GRANT may still have been on its way (in flight,
		// queued behind the receiver's other packets), as in a loss-free
		// run.
		g := log[timed]
		what := fmt.Sprintf("scheduled DATA at offset %d at priority %d, not the %d of the GRANT %v earlier", e.Offset, e.Priority, g.Priority, e.Time.Sub(g.Time).Round(time.Microsecond))
		if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
			return Downgrade(CauseLossAfter, ev, "%s (frame %d), which may not have reached %v", what, g.Frame, e.Src)
		}
		return Downgrade(CauseQueueing, Evidence{g.Frame, fmt.Sprintf("%v sent no byte that only this GRANT (offset %d, priority %d) or a later one authorised: it may not have got it yet", e.Src, g.Offset, g.Priority)},
			"%s", what)
	}
	return Pass().WithSlack(c.P.Slack)
}

// levelLag returns how long past slack the sender of scheduled DATA e of
// message m must have lagged behind its GRANTs for e's level to be one
// scheduledPriority allows, and from which GRANT: judged with a slack
// that much longer, either the GRANTs after the latest one with e's level
// were still unprocessed (at a capture where GRANTs are stamped as they
// reach the sender), or a GRANT with e's level (one from before 0 for
// level 0 there, where the sender showed none processed) was one it may
// have processed last. ok false when none can be: no GRANT the sender may
// have processed gave e's level.
func levelLag(c *Ctx, e *Event, m *Message) (time.Duration, time.Time, bool) {
	var late time.Duration
	var from time.Time
	found := false
	try := func(t time.Time) {
		if d := e.Time.Sub(t) - c.P.Slack; !found || d < late {
			late, from, found = d, t, true
		}
	}
	log := m.GrantLog
	timed := c.Net.atReceiver(e.Src)
	for i := len(log) - 1; i >= 0; i-- {
		if log[i].Priority == e.Priority {
			if timed && i+1 < len(log) {
				try(log[i+1].Time)
			} else {
				try(log[i].Time)
			}
			break
		}
	}
	if e.Priority == 0 && !m.Known && timed && len(log) > 0 {
		try(log[0].Time)
	}
	for i := range m.RecentGrants {
		if g := &m.RecentGrants[i]; g.Priority == e.Priority {
			try(g.Time)
		}
	}
	if !found {
		return 0, time.Time{}, false
	}
	if late <= 0 {
		return 0, time.Time{}, true
	}
	return late, from, true
}

// isFIFOGrant reports whether a GRANT at priority prio may be a FIFO grant
// (at Params.HighPriority while fifo_grant_increment is set; facts
// FIFO-01). Where SRPT grants reach that level too (fifoLevelShared) it
// may be either: rules that exclude FIFO grants exclude it.
func isFIFOGrant(p *Params, prio uint8) bool {
	return p.FIFOGrantIncrement > 0 && int(prio) == p.HighPriority()
}

// mayBeFIFOGrant reports whether GRANT g for message m (as the trace
// knew m before g) may be a FIFO grant (isFIFOGrant). Where SRPT grants
// share the FIFO level (fifoLevelShared) only one that adds at least
// fifo_grant_increment to what the capture shows m authorised, or grants
// it to its end, may be: homa_grant_check_fifo adds exactly that to
// msgin.granted (capped at the length), which is never below it. m nil
// or without DATA: as isFIFOGrant.
func mayBeFIFOGrant(p *Params, g wire.Grant, m *Message) bool {
	if !isFIFOGrant(p, g.Priority()) {
		return false
	}
	if !fifoLevelShared(p) || m == nil || m.Length == 0 {
		return true
	}
	return g.Offset() >= min(m.authorised(p)+p.FIFOGrantIncrement, m.Length)
}

// maybeFIFO is mayBeFIFOGrant for GRANT e, looked up in the trace only
// where the level is shared.
func maybeFIFO(c *Ctx, e *Event) bool {
	g := e.Packet.Grant()
	if !isFIFOGrant(c.P, g.Priority()) {
		return false
	}
	if !fifoLevelShared(c.P) {
		return true
	}
	_, m := grantMsg(c, e)
	return mayBeFIFOGrant(c.P, g, m)
}

// fifoLevelShared reports whether SRPT grants may use the FIFO grants'
// level (max_sched_prio at or above it: homa_grant.c gives the
// top-ranked message level max_sched_prio), so a GRANT's level cannot
// tell the two apart.
func fifoLevelShared(p *Params) bool { return p.MaxSchedPrio >= p.HighPriority() }

// grantWindowHow says how Params.GrantWindow found the window, for a finding's
// text (formatted only when there is a finding).
func grantWindowHow(p *Params) string {
	if p.Window > 0 {
		return fmt.Sprintf("window %d", p.Window)
	}
	return fmt.Sprintf("dynamic window max_incoming/2 = %d/2 with one active message", p.MaxIncoming)
}

// grantWaitExcuse is the excuse of the obligations to grant a message
// (HOMA-GRANT-002's first GRANT, HOMA-GRANT-019's next one): at the
// trigger itself or at a GRANT the receiver gave another message, a
// receiver busy with other messages (receiverBusy); RPC_UNKNOWN for the
// RPC; or the receiver's buffer-wakeup RESEND, which shows it had no
// buffer space for the message (facts GRANT-10). k is the RPC, receiver
// the role of the message's receiver, self finds the message (looked up
// only when needed: the excuse is asked at every packet while open).
func grantWaitExcuse(c *Ctx, x *Event, trigFrame, trigSeg int, k RPCKey, receiver wire.Role, rHost, sHost netip.Addr, self func(*Ctx) *Message) (string, bool) {
	switch {
	case x.Err != nil:
		return "", false
	case x.Frame == trigFrame && x.Segment == trigSeg:
		if r := c.T.rpcs[k]; r != nil && receiver == wire.RoleClient {
			if why, gone := clientTimedOut(c.P, r, x.Time); gone {
				return why + " before this response came", true
			}
		} else if why, ok := afterAck(r); ok {
			return why, true
		}
		return receiverBusy(c, rHost, sHost, self(c), nil, netip.Addr{}, nil, 0)
	case x.Type() == wire.TypeRPCUnknown && KeyOf(x) == k:
		return "RPC_UNKNOWN: one side no longer knows the RPC", true
	case x.Type() == wire.TypeResend && KeyOf(x) == k && x.Packet.Role() == receiver && isBufferWakeup(c.P, x.Packet.Resend()):
		return "the receiver's buffer-wakeup RESEND shows it had no buffer space for the message (GRANT-10)", true
	case x.Type() == wire.TypeGrant && x.Src == rHost:
		// The rules see x before the trace applies it: the bytes it
		// authorises count toward max_incoming here (a FIFO grant of
		// fifo_grant_increment can use the whole budget at once:
		// homa_grant_check_fifo does not test max_incoming).
		_, other := grantMsg(c, x)
		var added int64
		if other != nil {
			added = max(0, int64(min(x.Packet.Grant().Offset(), other.Length))-int64(max(other.authorised(c.P), other.Granted)))
		}
		return receiverBusy(c, rHost, sHost, self(c), other, x.Dst, nil, added)
	}
	return "", false
}

// receiverBusy reports why host recv may rightly not grant a new message
// from host send yet: it grants (has granted and not fully received)
// max_overcommit other messages, not all of which self clearly outranks
// (see outranksAll), or max_rpcs_per_peer other messages from send
// (Params.MaxRPCsPerPeer: every HomaModule before 3daedc3 limits a
// sending host to one active message). self is the waiting message; extra, when not
// nil, a message being granted right now (from host extraFrom); gone, when
// not nil, a message that no longer counts (its slot is being freed);
// added, the bytes extra's GRANT being judged authorises beyond what the
// trace holds.
func receiverBusy(c *Ctx, recv, send netip.Addr, self, extra *Message, extraFrom netip.Addr, gone *Message, added int64) (string, bool) {
	set := c.T.granting[recv]
	n := 0
	var peer []*Message // the messages from send among them
	for m, r := range set {
		if m == self || m == gone {
			continue
		}
		n++
		if msgSender(r, m) == send {
			peer = append(peer, m)
		}
	}
	if _, in := set[extra]; extra != nil && extra != self && !in {
		n++
		if extraFrom == send {
			peer = append(peer, extra)
		}
	}
	switch {
	case n >= c.P.MaxOvercommit && !outranksAll(c, self, set, extra, gone):
		return fmt.Sprintf("%v is granting %d other messages (max_overcommit %d)", recv, n, c.P.MaxOvercommit), true
	case peerFull(c.P, peer, self):
		return fmt.Sprintf("%v is granting %d other messages from %v (max_rpcs_per_peer %d: HomaModule before 3daedc3 grants one message per sending host)", recv, len(peer), send, c.P.MaxRPCsPerPeer), true
	}
	if out := incomingOutstanding(c, recv, self, gone) + added; out >= int64(c.P.MaxIncoming) {
		return fmt.Sprintf("%v has %d bytes authorised and not received (max_incoming %d)", recv, out, c.P.MaxIncoming), true
	}
	return "", false
}

// incomingOutstanding returns the bytes host recv has authorised and not
// received over the messages longer than unsched_bytes sent to it, but
// skip1 and skip2, as far as the capture shows: HomaModule's
// total_incoming, which counts every such message from its first packet,
// with granted starting at U (homa_grant.c homa_grant_init_rpc,
// homa_grant_update_incoming), so a message whose unscheduled bytes are
// still on their way holds budget before any GRANT (GRANT-06's
// max_incoming test, homa_grant_try_send). Messages the receiver may have
// aborted count too: the sum errs high. The trace keeps the sum
// (Trace.outstanding), so it costs one map lookup, not a scan.
func incomingOutstanding(c *Ctx, recv netip.Addr, skip1, skip2 *Message) int64 {
	var out int64
	if s := c.T.outstanding[recv]; s != nil {
		out = s.n
		if skip1 != nil && skip1.acc == s {
			out -= skip1.outVal
		}
		if skip2 != nil && skip2 != skip1 && skip2.acc == s {
			out -= skip2.outVal
		}
	}
	if verifyPrefilters {
		if want := scanOutstanding(c, recv, skip1, skip2); out != want {
			panic(fmt.Sprintf("outstanding bytes at %v: kept %d, scan %d", recv, out, want))
		}
	}
	return out
}

// scanOutstanding is incomingOutstanding by a scan of recv's messages:
// what the kept sum is checked against under verifyPrefilters.
func scanOutstanding(c *Ctx, recv netip.Addr, skip1, skip2 *Message) int64 {
	var out int64
	for m := range c.T.granting[recv] {
		if m != skip1 && m != skip2 {
			out += max(0, int64(m.Granted)-int64(m.Received()))
		}
	}
	for m := range c.T.longIn[recv] {
		if m != skip1 && m != skip2 && !m.inGranting && !m.Complete && !m.whole {
			out += max(0, int64(m.authorised(c.P))-int64(m.Received()))
		}
	}
	return out
}

// firstGrantAbove returns the earliest of m's recent GRANTs (the latest 8)
// whose offset exceeds off (HOMA-GRANT-003): a GRANT carrying off was
// decided no later than it.
func firstGrantAbove(m *Message, off uint32) (GrantSeen, bool) {
	for _, g := range m.RecentGrants {
		if g.Offset > off {
			return g, true
		}
	}
	return GrantSeen{}, false
}

// eventSkb is skbData for the sender of e under p.
func eventSkb(p *Params, e *Event) uint32 { return skbData(p.MaxGSOSize, p.MTU, e.IPv6()) }

// skbData returns the data bytes of the largest skb HomaModule builds with
// max_gso_size maxGSO at MTU mtu (homa_message_out_fill): segments of
// max_seg_data (maxSegData: 1424 IPv4, 1404 IPv6 at MTU 1500) with 4-byte
// interleaved seg headers, at least one segment (gso_size is raised to the
// MTU; main's default 0 means one segment per skb).
func skbData(maxGSO, mtu uint32, v6 bool) uint32 {
	ipHdr, seg := ipHeaderLen(v6), maxSegData(mtu, v6)
	n := uint32(1)
	if maxGSO > ipHdr+wire.DataHeaderLen {
		n = max(1, (maxGSO-ipHdr-wire.DataHeaderLen+4)/(seg+4))
	}
	return n * seg
}

// bitsString renders a priority bit set as "{0,3}".
func bitsString(b uint16) string {
	s := "{"
	for i := 0; i < 16; i++ {
		if b&(1<<i) != 0 {
			if len(s) > 1 {
				s += ","
			}
			s += fmt.Sprint(i)
		}
	}
	return s + "}"
}

// slotFreed reports whether e frees a grant slot at its receiver recv:
// the segment that completes a message recv has granted (HomaModule
// homa_grant_check_rpc unmanages a message with no bytes remaining), or
// RPC_UNKNOWN from the client of a request recv has granted (the server
// ends the RPC, homa_rpc_unknown_pkt, homa_rpc_end). freed is the message
// that leaves the receiver's active set. The trace counts a granted
// message as taking a slot until it is complete, so the slot it frees
// here is free in HomaModule too.
func slotFreed(c *Ctx, e *Event) (recv netip.Addr, freed *Message, ok bool) {
	switch e.Type() {
	case wire.TypeData:
		r := c.T.Lookup(e)
		if r == nil {
			return recv, nil, false
		}
		m := r.Msg(e.Packet.Role())
		if !m.inGranting || m.Complete || m.Length == 0 || uint64(m.Received())+uint64(e.Length) < uint64(m.Length) ||
			!m.Seen.CoversWith(0, m.Length, e.Offset, min(e.End(), m.Length)) {
			return recv, nil, false
		}
		return e.Dst, m, true
	case wire.TypeRPCUnknown:
		r := c.T.Lookup(e)
		if r == nil || !e.FromClient() || !r.Request.inGranting {
			return recv, nil, false
		}
		return e.Dst, &r.Request, true
	}
	return recv, nil, false
}

// waiting returns a message host recv would grant once freed no longer
// takes a grant slot, nil if none: longer than unsched_bytes, all
// unscheduled bytes in, never granted, incomplete, its RPC not ended by
// RPC_UNKNOWN, not waiting for buffer space (GRANT-10), not skip, and
// recv not busy for it (as receiverBusy judges, with freed out of the
// count). It costs one pass over recv's granted messages and, when a slot
// is free, a pass over its long incoming messages up to the first that
// waits; it reuses the trace's scratch slices (Trace.grantedBuf).
func waiting(c *Ctx, recv netip.Addr, freed, skip *Message) *Message {
	set := c.T.granting[recv]
	n := len(set)
	if _, in := set[freed]; in {
		n--
	}
	if n >= c.P.MaxOvercommit {
		return nil
	}
	granted := c.T.grantedBuf[:0] // max_rpcs_per_peer: the messages being granted, with their senders
	for m, r := range set {
		if m != freed && c.P.MaxRPCsPerPeer > 0 {
			granted = append(granted, grantedMsg{m, msgSender(r, m)})
		}
	}
	peer := c.T.peerBuf[:0]
	defer func() {
		// Keep the arrays, not the messages.
		clear(granted)
		clear(peer[:cap(peer)])
		c.T.grantedBuf, c.T.peerBuf = granted[:0], peer[:0]
	}()
	if incomingOutstanding(c, recv, freed, nil) >= int64(c.P.MaxIncoming) {
		return nil
	}
	for m, r := range c.T.longIn[recv] {
		if m == freed || m == skip || !mayWait(c, r, m) {
			continue
		}
		peer = peer[:0]
		for _, g := range granted {
			if g.from == msgSender(r, m) {
				peer = append(peer, g.m)
			}
		}
		if !peerFull(c.P, peer, m) {
			return m
		}
	}
	return nil
}

// grantedMsg is a message a receiver is granting and the host sending it.
type grantedMsg struct {
	m    *Message
	from netip.Addr
}

// peerFull reports whether a receiver granting the messages peer from the
// sending host of waiting message self may leave self waiting by
// max_rpcs_per_peer: peer holds that many and self clearly outranks
// (rank_tolerance, as outranksAll) none of them; a message that outranks
// one takes its place (HomaModule homa_grant.c homa_grant_manage_rpc
// before 3daedc3; linux_6.1.38 homa_grant_recalc keeps each host's best).
func peerFull(p *Params, peer []*Message, self *Message) bool {
	if p.MaxRPCsPerPeer <= 0 || len(peer) < p.MaxRPCsPerPeer {
		return false
	}
	if self == nil || self.Length == 0 {
		return true
	}
	for _, m := range peer {
		if m.Length > 0 && clearlyAhead(self, m, p.RankTolerance) {
			return false
		}
	}
	return true
}

// mayWait reports whether message m of RPC r can be waiting for a grant
// slot at its receiver: never granted, all unscheduled bytes in,
// incomplete, its RPC not ended by RPC_UNKNOWN, not waiting for buffers,
// and not a response whose client may have aborted the RPC by timeout
// before it came (clientTimedOut: the client discards DATA of an RPC it
// no longer has, so nothing waits; homa_dispatch_pkts).
func mayWait(c *Ctx, r *RPC, m *Message) bool {
	p := c.P
	if m.Grants != 0 || m.Complete || m.Length == 0 || r.Unknown || !m.WakeupTime.IsZero() || !m.Seen.Covers(0, p.Unsched(m.Length)) {
		return false
	}
	if m == &r.Response {
		if _, gone := clientTimedOut(c.P, r, r.HeardFromServer); gone {
			return false
		}
	} else if _, ok := afterAck(r); ok {
		return false
	}
	return true
}

// afterAck reports whether r's request, as its server holds it now, was
// re-created by a request packet that came after the client's ack (Trace:
// RPC.RecreatedTime): HomaModule re-creates the RPC then (homa_dispatch_pkts;
// facts AMO-01), but the ack told the server the RPC is done, and a server
// that remembers acknowledged ids may rightly discard the packet, so
// nothing it then owes that incarnation (a GRANT) can be judged.
func afterAck(r *RPC) (string, bool) {
	if r == nil || !r.Acked || r.RecreatedTime.IsZero() || !r.RecreatedTime.After(r.AckTime) {
		return "", false
	}
	return fmt.Sprintf("the client had acknowledged the RPC (frame %d) before this request packet came: a server may discard it (HomaModule re-creates the RPC, AMO-01)", r.AckFrame), true
}

// msgSender returns the host that sends message m of RPC r.
func msgSender(r *RPC, m *Message) netip.Addr {
	if m == &r.Request {
		return r.Key.Client
	}
	return r.Key.Server
}

// heardFrom returns when the receiver of m last got a DATA, GRANT or BUSY
// from m's sender (zero: never), the packets that reset its silent_ticks.
func (r *RPC) heardFrom(m *Message) time.Time {
	if m == &r.Request {
		return r.HeardFromClient
	}
	return r.HeardFromServer
}

// recreatedUnseen reports whether e, a GRANT or RESEND from the server of
// r after the client's ack, may belong to an RPC that a late request
// packet re-created at the server (homa_dispatch_pkts allocates a server
// RPC for any DATA; facts AMO-01) where the capture cannot show that
// packet's arrival: anywhere but at the server, where the trace sees it
// (Trace: RPC.RecreatedTime). Only a request some of whose bytes were
// sent twice (a retransmission, RESENDs) can have a copy still on its way
// once the server had them all.
func recreatedUnseen(c *Ctx, r *RPC, e *Event) (string, bool) {
	if r == nil || e.FromClient() || !r.Acked || !e.Time.After(r.AckTime) || r.RecreatedTime.After(r.AckTime) || c.Net.atSender(e.Src) ||
		r.Request.RetxBytes == 0 && r.Request.Resends == 0 {
		return "", false
	}
	return fmt.Sprintf("it follows the client's ack (frame %d), and a request packet held up past the ack may have re-created the RPC at the server, which this capture point does not show", r.AckFrame), true
}

// outranks reports whether message x, granted at time at, may have
// outranked m in its receiver's SRPT order when it was granted after m's
// latest GRANT, so that m may have been demoted from the active set for
// it: fewer bytes still to receive (main, linux_6.1.38) or fewer still to
// grant (net-next), or as many of both and older (homa_grant_outranks).
// m must have had a GRANT before at.
func outranks(x *Message, at time.Time, m *Message) bool {
	if !at.After(m.GrantTime) {
		return false
	}
	xr, mr := int64(x.Length)-int64(x.Received()), int64(m.Length)-int64(m.Received())
	xu, mu := int64(x.Length)-int64(x.Granted), int64(m.Length)-int64(m.Granted)
	if xr < mr || xu < mu {
		return true
	}
	return xr == mr && xu == mu && x.FirstData.Before(m.FirstData)
}

// slotKey keys HOMA-GRANT-010's obligation to fill a freed grant slot:
// one per receiver.
type slotKey struct{ recv netip.Addr }

// slotObligation is HOMA-GRANT-010's obligation at a packet that frees a
// grant slot at recv (slotFreed): if messages wait for it (waiting), recv
// grants a message it had not granted yet (one of them, or a newer one
// SRPT prefers) within the bound. It is excused when every waiting
// message ends or completes first, or recv's buffer-wakeup RESEND shows it
// lacked buffer space.
func slotObligation(c *Ctx, recv netip.Addr, freed *Message) (Obligation, bool) {
	// One already open for recv keeps its deadline (a trigger is folded
	// into it): most slots freed while messages wait find one.
	if c.Open(slotKey{recv}) || waiting(c, recv, freed, nil) == nil {
		return Obligation{}, false
	}
	return Obligation{Key: slotKey{recv}, To: recv, Await: &slotAwait{recv: recv, freed: freed}}, true
}

// slotAwait is slotObligation's awaited GRANT: recv grants a message it
// had not granted, after the packet that freed a slot of message freed.
type slotAwait struct {
	recv  netip.Addr
	freed *Message
}

// Expect describes the awaited GRANT.
func (a *slotAwait) Expect() string {
	return "GRANT from " + a.recv.String() + " for a message it had not granted (one waited for the grant slot this packet freed)"
}

// Match reports whether x is a GRANT from recv to a message it had not
// granted, or a RESEND past U for one (a GRANT lost before the capture
// point, RTX-08).
func (a *slotAwait) Match(c *Ctx, x *Event) bool {
	recv := a.recv
	if x.Err != nil || x.Src != recv {
		return false
	}
	switch x.Type() {
	case wire.TypeGrant:
		_, m := grantMsg(c, x)
		return m == nil || m.Grants == 0
	case wire.TypeResend:
		// A RESEND past U for a waiting message: a GRANT lost
		// before the capture point (RTX-08).
		_, m := grantMsg(c, x)
		rs := x.Packet.Resend()
		return m != nil && m.Grants == 0 && !rs.IsResendAll() && uint64(rs.Offset())+uint64(rs.Length()) > uint64(c.P.Unsched(m.Length))
	}
	return false
}

// Excuse gives the reason x shows recv may rightly not grant: its
// buffer-wakeup RESEND, or every waiting message ended or completed.
func (a *slotAwait) Excuse(c *Ctx, x *Event) (string, bool) {
	recv, freed := a.recv, a.freed
	if x.Err != nil || x.Src != recv && x.Dst != recv {
		return "", false
	}
	switch x.Type() {
	case wire.TypeResend:
		if x.Src == recv && isBufferWakeup(c.P, x.Packet.Resend()) {
			return "the receiver's buffer-wakeup RESEND shows it lacked buffer space (GRANT-10)", true
		}
	case wire.TypeRPCUnknown, wire.TypeData:
		// x may end or complete a waiting message: is another
		// one left?
		r := c.T.Lookup(x)
		if r == nil {
			return "", false
		}
		m := r.Msg(x.Packet.Role())
		if x.Type() == wire.TypeRPCUnknown {
			m = &r.Request
			if recv == r.Key.Client {
				m = &r.Response
			}
		} else if !m.inLong || !m.Seen.CoversWith(0, m.Length, x.Offset, min(x.End(), m.Length)) {
			return "", false
		}
		if mayWait(c, r, m) && waiting(c, recv, freed, m) == nil {
			return "every message waiting for the freed slot ended or completed", true
		}
	}
	return "", false
}

// firstGrantAwait is HOMA-GRANT-010's obligation at the packet that
// completes the unscheduled bytes [0, u) of message (k, sender): its
// receiver sends the message's first GRANT (or a RESEND past u: a GRANT
// lost before the capture point). The trigger was frame trigFrame,
// segment trigSeg, from sHost to rHost.
type firstGrantAwait struct {
	k                  RPCKey
	sender, receiver   wire.Role
	u                  uint32
	rHost, sHost       netip.Addr
	trigFrame, trigSeg int
}

// Expect describes the awaited GRANT.
func (a *firstGrantAwait) Expect() string { return "first GRANT for the message from its receiver" }

// Match reports whether x is the receiver's GRANT for the message, or its
// RESEND past u.
func (a *firstGrantAwait) Match(c *Ctx, x *Event) bool {
	if x.Err != nil || x.Packet.Role() != a.receiver || KeyOf(x) != a.k {
		return false
	}
	switch x.Type() {
	case wire.TypeGrant:
		return true
	case wire.TypeResend:
		rs := x.Packet.Resend()
		return !rs.IsResendAll() && uint64(rs.Offset())+uint64(rs.Length()) > uint64(a.u)
	}
	return false
}

// Excuse is grantWaitExcuse for the message.
func (a *firstGrantAwait) Excuse(c *Ctx, x *Event) (string, bool) {
	return grantWaitExcuse(c, x, a.trigFrame, a.trigSeg, a.k, a.receiver, a.rHost, a.sHost, a.self)
}

// self finds the waiting message in the trace (nil once its RPC is gone).
func (a *firstGrantAwait) self(c *Ctx) *Message {
	if r := c.T.rpcs[a.k]; r != nil {
		return r.Msg(a.sender)
	}
	return nil
}
