package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantRules2: when GRANTs are sent and how much they may add (HomaModule
// homa_grant.c homa_grant_check_rpc, homa_grant_try_send,
// homa_grant_check_fifo, homa_grant_priority; linux_6.1.38 homa_grant.c
// homa_grant_send, homa_grant_recalc; homa_pool.c homa_pool_check_waiting).
func grantRules2() []*Rule {
	grant := []wire.PacketType{wire.TypeGrant}
	return []*Rule{
		{
			ID: "HOMA-GRANT-012", Level: Must,
			Facts:     []string{"GRANT-02"},
			Statement: "A receiver sends GRANTs only as it processes incoming packets: each non-FIFO GRANT of a message is paid for by its own earlier packet to the receiver (later than the one that paid for the message's previous GRANT) of an RPC in which it receives a message it may grant (longer than unsched_bytes, or one a DATA of which carried incoming short of its length, as HOMA-GRANT-001 allows) that was still incomplete: a message never gets more GRANTs than such packets. No timer sends GRANTs.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (calls homa_grant_check_rpc after each batch), homa_grant.c homa_grant_check_rpc (returns at once unless the RPC is grantable; it alone calls homa_grant_try_send, homa_grant_check_fifo and homa_grant_check_needy), homa_grant_init_rpc (grantable when the first packet's incoming is short of the length); linux_6.1.38 homa_grant.c homa_grant_check_rpc, homa_grant_recalc",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "counted, not timed: a loaded or emulated receiver processes packets up to tens of milliseconds after a tap saw them (the shared linux-6.1 b capture: 36 ms), so a timer that grants while packets keep coming is not caught, only one that grants more often than packets arrive; needs every packet to the receiver (a switch, or a tap on its own link); inconclusive when one of its incoming messages has been silent for timeout_ticks (an RPC the timer aborts frees grant budget, which linux_6.1.38 hands out at once)",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				if maybeFIFO(c, e) {
					return Skip // made in the same pass as an SRPT grant (HOMA-GRANT-018)
				}
				_, m := grantMsg(c, e)
				if m == nil {
					return Skip
				}
				if !c.Net.cp.SeesAllOf(e.Src) {
					return Unsure("the capture does not hold every packet %v received", e.Src)
				}
				if _, ok := c.T.grantTrigger(e.Src, m); ok {
					return Pass()
				}
				// The set is a map: name the silent RPC with the lowest
				// id, so that the text does not depend on map order.
				var silent *RPC
				for o, r := range c.T.longIn[e.Src] {
					if !o.Complete && e.Time.Sub(maxTime(o.LastData, r.Last)) >= c.P.Ticks(c.P.TimeoutTicks)-c.P.Slack &&
						(silent == nil || r.Key.ClientID < silent.Key.ClientID || r.Key.ClientID == silent.Key.ClientID && r.Key.Client.Less(silent.Key.Client)) {
						silent = r
					}
				}
				if silent != nil {
					return Unsure("%v may have just aborted RPC %d (silent for %v): its grant budget went to others", e.Src, silent.Key.ClientID, e.Time.Sub(silent.Last).Round(time.Millisecond))
				}
				if m.Grants == 0 {
					return Violation("GRANT offset %d from %v, which had received no packet of a message it could grant", g.Offset(), e.Src)
				}
				last, _ := m.LastGrant()
				return Violation("GRANT offset %d from %v, one more than the packets it received for messages it could grant: every earlier one paid for an earlier GRANT of this message (the last, offset %d, frame %d, %v earlier); grants go out only as packets are processed",
					g.Offset(), e.Src, last.Offset, last.Frame, e.Time.Sub(last.Time).Round(time.Microsecond)).With(last.Frame)
			}},
		},
		{
			ID: "HOMA-GRANT-013", Level: Should,
			Facts:     []string{"GRANT-05"},
			Statement: "When a non-FIFO GRANT leaves, the bytes the receiver has granted and not yet received over all the messages it is granting stay within max_incoming.",
			Source:    "HomaModule homa_grant.c homa_grant_try_send (avl_incoming = max_incoming - total_incoming caps the increment), homa_grant_update_incoming",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "bytes seen on their way count as received, so the sum errs low; inconclusive when the latest GRANTs to other hosts, seen less than slack before this one, take the sum over the limit (captured anywhere but the receiver's own link, they may have left after it: cause reordering); where the capture holds this GRANT as delivered (the delivered point, or a tap on its receiver's own link), with the whole network before it, so is a sum over the limit only with the latest FIFO GRANTs seen any time before it (a FIFO GRANT adds fifo_grant_increment whatever the sum, on main right after an SRPT GRANT is sent, and the network may have held this one behind it); messages whose sender sent no DATA or BUSY for timeout_ticks (the receiver may have aborted them; its own RESENDs do not count), and those the receiver shows it holds whole though the capture missed bytes of them (their RPC acknowledged, or a request answered by response DATA), are not counted; inconclusive when only the messages of RPCs begun before the capture (whose bytes received before it are unknown) take the sum over the limit, or only those whose late request DATA came after a silence within RTX-10's tolerance of timeout_ticks (the receiver may have aborted them, and counts nothing of what it granted them), alone or with those a late request DATA surely re-created",
			Property: Each{Types: grant, Check: boundedPass("HOMA-GRANT-013", grantIncomingWithin, func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				if maybeFIFO(c, e) {
					return Skip
				}
				cr, cur := grantMsg(c, e)
				// sum errs low: it leaves out the messages of RPCs that
				// may have begun before the capture (the bytes received
				// before it are unknown); unsure is what they add as far
				// as the capture shows, and before the first of them.
				var sum, unsure int64
				var before *RPC
				// renewed is what the messages whose RPC the trace took a
				// late request DATA to have re-created at the receiver
				// (RPC.ServerTimeout) add, counting only the bytes since:
				// a timing inference (see timedOut); first is the one of
				// them with the lowest id, for a stable report.
				var renewed int64
				var first *RPC
				// aborted is what the messages whose receiver's timer may
				// or may not have aborted them add (a silence within
				// RTX-10's tolerance of timeout_ticks: timedOutUnsure, the
				// trace keeping their grants); maybe the one of them with
				// the lowest id.
				var aborted int64
				var maybe *RPC
				add := func(r *RPC, m *Message, granted uint32) {
					v := max(0, int64(granted)-int64(m.Received()))
					if st := r.serverTimeoutAt(e); st != nil && m == &r.Request && v > 0 {
						switch {
						case st.Sure:
							renewed += v
							if first == nil || r.Key.ClientID < first.Key.ClientID {
								first = r
							}
						case st.unsure():
							aborted += v
							if maybe == nil || r.Key.ClientID < maybe.Key.ClientID {
								maybe = r
							}
						}
					}
					if c.startedBefore(r) {
						unsure += v
						if v > 0 && (before == nil || r.FirstFrame < before.FirstFrame || r.FirstFrame == before.FirstFrame && r.Key.ClientID < before.Key.ClientID) {
							before = r
						}
						return
					}
					sum += v
				}
				// reord is what the latest GRANTs to other hosts, seen
				// less than slack before e, add: captured away from the
				// receiver (at their destinations, or merged) they may
				// have left after e. late is the latest of them. Where
				// the capture holds e as delivered, the network may have
				// held e for any time, and a FIFO GRANT seen any time
				// before it (to any host) may have left after it: what
				// the latest FIFO GRANTs add is ahead, and aheadFrame the
				// latest of them. Only FIFO GRANTs: they may take the sum
				// past max_incoming (homa_grant_check_fifo adds
				// fifo_grant_increment regardless; on main right after
				// the SRPT GRANT homa_grant_try_send sent); an SRPT GRANT
				// may not, so a sum past it with one is the receiver's
				// whichever left first.
				var reord, ahead int64
				late, aheadFrame := 0, 0
				held := c.Net.DeliveredAt(e.Src, e.Dst)
				for m, r := range c.T.granting[e.Src] {
					// The receiver's timer may have aborted an RPC whose
					// sender sent no DATA or BUSY for timeout_ticks (its
					// own RESENDs do not reset silent_ticks:
					// homa_timer_check_rpc; RTX-10's 2 ticks and slack).
					if m == cur || e.Time.Sub(maxTime(r.First, r.heardFrom(m))) >= c.P.Ticks(c.P.TimeoutTicks-2)-c.P.Slack {
						continue
					}
					add(r, m, m.Granted)
					if m.GrantFrame == 0 || c.Net.atSender(e.Src) {
						continue
					}
					rec := int64(m.Received())
					added := max(0, int64(m.Granted)-rec) - max(0, int64(m.GrantedBefore)-rec)
					if e.Time.Sub(m.GrantTime) < c.P.Slack && msgSender(r, m) != e.Dst {
						reord += added
						late = max(late, m.GrantFrame)
					} else if last, ok := m.LastGrant(); held && ok && last.FIFO && last.Frame == m.GrantFrame {
						ahead += added
						aheadFrame = max(aheadFrame, m.GrantFrame)
					}
				}
				if cur != nil {
					add(cr, cur, max(cur.Granted, g.Offset()))
				}
				lim := int64(c.P.MaxIncoming)
				switch {
				case sum > lim && sum+unsure-reord <= lim:
					return Downgrade(CauseReorder, Evidence{Frame: late, Why: "a GRANT to another host seen less than slack earlier, which may have left after this one"},
						"bytes %v granted and not yet received is %d as far as the capture shows, above the limit %d, %d of them granted by GRANTs to other hosts seen less than slack before this one", e.Src, sum, lim, reord)
				case sum > lim && sum+unsure-reord-ahead <= lim:
					ev, _ := c.Net.MayReorderBefore(e.Src, e.Dst, aheadFrame)
					return Downgrade(CauseReorder, ev,
						"bytes %v granted and not yet received is %d as far as the capture shows, above the limit %d, %d of them granted by FIFO GRANTs seen before this one (which may take the sum past it) and %d by GRANTs to other hosts seen less than slack before it", e.Src, sum, lim, ahead, reord)
				case sum > lim && sum-renewed <= lim:
					return timedOut(c, first, e, Violation("bytes %v granted and not yet received is %d, above the limit %d, %d of them of RPC %d as a late request DATA re-created it, after a silence in which the receiver's timer may have aborted it",
						e.Src, sum, lim, renewed, first.Key.ClientID))
				case sum > lim && sum-aborted <= lim:
					why, _ := timedOutUnsure(maybe, e)
					return Unsure("bytes %v granted and not yet received is %d, above the limit %d, %d of them of RPC %d and others the receiver may have aborted: %s",
						e.Src, sum, lim, aborted, maybe.Key.ClientID, why)
				case sum > lim && sum-renewed-aborted <= lim:
					// Only both kinds together take the sum over: the
					// finding rests on the unsure aborts as well.
					why, _ := timedOutUnsure(maybe, e)
					return Unsure("bytes %v granted and not yet received is %d, above the limit %d, %d of them of RPC %d as a late request DATA re-created it and %d of RPC %d and others the receiver may have aborted: %s",
						e.Src, sum, lim, renewed, first.Key.ClientID, aborted, maybe.Key.ClientID, why)
				case sum > lim:
					return Violation("bytes %v granted and not yet received is %d, above the limit %d", e.Src, sum, lim)
				case sum+unsure > lim:
					return Downgrade(CauseCaptureStart, Evidence{Frame: before.FirstFrame, Why: fmt.Sprintf("RPC %d's first packet in the capture is not its request's first bytes", before.Key.ClientID)},
						"bytes %v granted and not yet received is %d as far as the capture shows, above the limit %d, of which %d are of RPCs begun before the capture, whose bytes received before it are unknown", e.Src, sum+unsure, lim, unsure)
				}
				return Pass()
			})},
		},
		{
			ID: "HOMA-GRANT-014", Level: Should,
			Facts:     []string{"GRANT-07"},
			Statement: "linux_6.1.38 grants one message per sending host at a time (max_rpcs_per_peer 1): a receiver does not go back and forth between GRANTs to two incomplete messages of the same sender.",
			Source:    "linux_6.1.38 homa_grant.c homa_grant_pick_rpcs (at most max_rpcs_per_peer active RPCs per peer)",
			Profiles:  []string{"linux-2024", "linux-2025"},
			Capture:   "a message demoted when a shorter one from the same sender arrives keeps its GRANTs in flight; only a return to it while the other is incomplete and not yet granted to its length counts (FIFO GRANTs are not judged: they go to the oldest message, active or not; nor a return to a message that since the other's latest GRANT received bytes or a FIFO GRANT and now has no more bytes left to receive, or to grant, than the other, which may outrank it now; a fully granted message has left the grantable set, and so has a request whose client sent RPC_UNKNOWN, whose RPC the server freed; a GRANT to such a request is inconclusive: a request DATA the server took after the free may have made it anew); judged only with max_rpcs_per_peer 1; where the capture holds the GRANTs as delivered (the delivered point, or a tap on the message sender's own link), with the whole network before the capture point, the other message's GRANT may have left before this message's previous one: inconclusive",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				r, m := grantMsg(c, e)
				if m == nil || c.P.MaxRPCsPerPeer != 1 {
					// A larger max_rpcs_per_peer lets homa_grant_pick_rpcs
					// keep that many of a sender's messages active.
					return Skip
				}
				if maybeFIFO(c, e) {
					// A FIFO GRANT goes to the oldest message, active or
					// waiting (linux_6.13.9 homa_grant_find_oldest scans
					// the grantable lists too): no second active message.
					return Skip
				}
				ss := c.T.sameSender[hostPair{e.Src, e.Dst}]
				other := ss[0].m
				if other == nil || other == m {
					return Skip
				}
				// A message granted to its length leaves the grantable
				// set (linux_6.1.38 homa_grant_check_rpc and
				// homa_grant_recalc: homa_grant_remove_rpc, then a
				// recalc that may pick the sender's next message), and
				// so does a request whose client sent RPC_UNKNOWN (the
				// server frees the RPC: homa_unknown_pkt).
				if ss[1].m == m && !other.Complete && !m.Complete && other.Granted < other.Length && !ss[0].forgotten(e.Time) {
					left := func(x *Message, by uint32) int64 { return int64(x.Length) - int64(by) }
					lg, _ := m.LastGrant()
					rose := m.ReceivedBy(other.GrantTime) < m.Received() || lg.FIFO && lg.Time.After(other.GrantTime)
					if rose && (left(m, m.Received()) <= left(other, other.Received()) || left(m, m.Granted) <= left(other, other.Granted)) {
						// This message has, since the other's latest GRANT,
						// received bytes or a FIFO GRANT, and now has no
						// more bytes left to receive, or to grant, than the
						// other: it may outrank it now,
						// and a message that outranks the sender's active
						// one takes its slot (linux_6.13.9
						// homa_grant_manage_rpc bumps the same peer's
						// lower-ranked RPC, ranking by bytes not yet
						// granted, homa_grant_outranks; linux_6.1.38
						// homa_grant_recalc keeps each host's best). The
						// lab (linux_6.13.9, GRANT-fifo-counted): FIFO
						// GRANTs took the old message to 249552 bytes left,
						// under the newer one's 288736.
						return Pass()
					}
					if back := (senderMsg{m, r}); back.forgotten(e.Time) {
						// The server freed this RPC at its client's
						// RPC_UNKNOWN; a request DATA it took after that
						// (one that arrived before the RPC_UNKNOWN and went
						// to another core: the lab's linux_6.1.38 GRANTed
						// received plus a window, 8640 + 10000, below the
						// 31360 it had granted) made it anew
						// (homa_pkt_dispatch), a newer message, which may
						// take its sender's one slot; or the GRANT was
						// decided before the free.
						return Unsure("GRANT back to a message of %v while %v's other message (%d of %d bytes) is also being granted, after the client's RPC_UNKNOWN made the receiver free its RPC: it may be for an incarnation a later request DATA created anew",
							e.Dst, e.Dst, other.Received(), other.Length)
					}
					if ev, ok := c.Net.MayReorderBefore(e.Src, e.Dst, other.GrantFrame); ok {
						// The other message's GRANT may have left before
						// this message's previous one and reached the
						// capture point after it.
						return Downgrade(CauseReorder, ev, "GRANT back to a message of %v while %v's other message (%d of %d bytes) is also being granted",
							e.Dst, e.Dst, other.Received(), other.Length)
					}
					return Violation("GRANT back to a message of %v while %v's other message (%d of %d bytes) is also being granted: two active messages for one sender",
						e.Dst, e.Dst, other.Received(), other.Length)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-015", Level: Must,
			Facts:     []string{"GRANT-09"},
			Statement: "A non-FIFO GRANT's priority is at most min(max_sched_prio, n-1), n being the messages the receiver is granting (at most max_overcommit): with one message all GRANTs carry 0.",
			Source:    "HomaModule homa_grant.c homa_grant_priority (max_sched_prio - rank, less the levels num_active leaves unused); linux_6.1.38 homa_grant.c homa_grant_recalc (the same)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "n is bounded by the receiver's incomplete messages longer than unsched_bytes in the capture (and those completed, or ended by RPC_UNKNOWN, within slack); needs every packet to the receiver, stamped as it arrived (not a capture of packets as sent, nor a tap that may not show all the receiver's peers)",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				if maybeFIFO(c, e) {
					return Skip
				}
				if !c.Net.cp.TimesArrivalsAt(e.Src) {
					return Unsure("the capture does not hold every message %v receives as it arrived", e.Src)
				}
				counted := c.T.Grantable(e.Src, e.Time) + c.T.RecentlyEnded(e.Src, e.Time)
				if _, m := grantMsg(c, e); m != nil && m.Length > c.P.UnschedBytes && m.Complete && e.Time.Sub(m.CompleteTime) > c.P.Slack {
					counted++ // granted although complete: GRANT-004's business
				}
				n := min(counted, c.P.MaxOvercommit)
				lim := min(c.P.MaxSchedPrio, max(n, 1)-1)
				if p := int(g.Priority()); p > lim {
					v := Violation("GRANT priority %d with at most %s being granted by %v: the highest allowed is min(max_sched_prio %d, n-1) = %d",
						g.Priority(), plural.Of(max(n, 1), "message", "messages"), e.Src, c.P.MaxSchedPrio, lim)
					// n rests on timestamps (a message complete for more
					// than slack no longer counts): a receiver that took
					// the last DATA of messages late still ranks them, so
					// the finding is a timing one, which a measured stall
					// explains only if it lost as long as the receiver
					// must have lagged (levelLate). Above what any count
					// allows, none does.
					late, from, ok := levelLate(c, e.Src, p, counted, e.Time)
					if !ok {
						return v
					}
					return v.WithSlack(c.P.Slack).WithLate(late).WithSince(from)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-GRANT-016", Level: Must,
			Facts:     []string{"GRANT-10", "RTX-04"},
			Statement: "A receiver sends its buffer wakeup only for a message it has not granted: a message without receive buffers gets no GRANT. On main the wakeup is the RESEND (offset 0, length -1, level num_priorities-2); on linux_6.1.38 and main of 2024-12..2025-07 it is a GRANT with resend_all set, which is then the message's first GRANT.",
			Source:    "HomaModule homa_grant.c homa_grant_check_rpc (no homa_grant_manage_rpc while num_bpages is 0), homa_pool.c homa_pool_check_waiting (the wakeup RESEND); linux_6.1.38 homa_grant.c homa_grant_check_rpc (returns while num_bpages is 0; buffers are allocated once for the whole message), homa_pool.c homa_pool_check_waiting (the only setter of msgin.resend_all), homa_grant_send (copies it into the next GRANT and clears it)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeResend, wire.TypeGrant}, Check: func(c *Ctx, e *Event) Result {
				what := "buffer-wakeup RESEND"
				if e.Type() == wire.TypeGrant {
					if e.Packet.Grant().ResendAll() == 0 {
						return Skip
					}
					what = "GRANT with resend_all (the buffer wakeup)"
				} else if c.P.Wire == wire.Version2024 || c.P.Wire == wire.Version2025 || !isBufferWakeup(c.P, e.Packet.Resend()) {
					return Skip
				}
				_, m := grantMsg(c, e)
				if m == nil {
					return Skip
				}
				if m.Grants > 0 {
					last, _ := m.LastGrant()
					return Violation("%s for a message %v had granted (GRANT offset %d, frame %d): a message waiting for buffers gets no GRANT",
						what, e.Src, last.Offset, last.Frame).With(last.Frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-018", Level: Should,
			Facts:     []string{"FIFO-01"},
			Statement: "A FIFO GRANT (level num_priorities-2, 0 with at most two levels) adds exactly fifo_grant_increment to what its message was granted (less only where that reaches the message's end) and follows an SRPT GRANT of the same receiver by less than slack.",
			Source:    "HomaModule homa_grant.c homa_grant_check_fifo (granted += fifo_grant_increment, capped at the length; called from homa_grant_try_send after it sent a GRANT)",
			Profiles:  []string{"linux"},
			Capture:   "what the message was granted is at least its highest GRANT offset the capture shows and the incoming its RPC started from (a GRANT seen less than slack before it is not counted: another core may have built it after this one's decision, which a stalled CPU then held back); a GRANT lost before the capture point makes the increment look larger, and may be the SRPT GRANT before it: inconclusive where the capture shows packets between the hosts lost before the capture point; the SRPT GRANT before it may go to another host, so without every packet the receiver sends (a tap on another host's link, an inferred switch) its absence is inconclusive; where max_sched_prio reaches the FIFO level SRPT GRANTs share it, so a GRANT there is not judged",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				g := e.Packet.Grant()
				if !isFIFOGrant(c.P, g.Priority()) {
					return Skip
				}
				if fifoLevelShared(c.P) {
					return Unsure("GRANT at level %d, which SRPT grants use too (max_sched_prio %d): it may not be a FIFO grant", g.Priority(), c.P.MaxSchedPrio)
				}
				r, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("FIFO GRANT for a message with no DATA in the capture")
				}
				before := max(c.P.Unsched(m.Length), m.Granted)
				if g.Offset() > before && g.Offset()-before > c.P.FIFOGrantIncrement {
					why := fmt.Sprintf("FIFO GRANT offset %d adds %d bytes to %d, more than fifo_grant_increment %d", g.Offset(), g.Offset()-before, before, c.P.FIFOGrantIncrement)
					if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
						// The GRANTs between may be lost before the
						// capture point: a GRANT leaves no trace of its own.
						return Downgrade(CauseLossBefore, ev, "%s", why)
					}
					// Where the trace took a late request DATA to have
					// re-created the RPC, what it was granted is the new
					// incarnation's: a timing inference, since a loaded
					// server's timer counts late. (An old incarnation kept
					// had granted at least as much: no less a violation.)
					return timedOut(c, r, e, Violation("%s", why))
				}
				// It adds no less either, over what the receiver had
				// granted when it decided: a GRANT seen less than slack
				// before may have been built after that on another core
				// (homa_grant_send reads the granted offset outside the
				// RPC's lock, and a stalled CPU may hold this one between
				// the two).
				if held := m.grantedBefore(c.P, e.Time, c.P.Slack); g.Offset() < min(m.Length, held+c.P.FIFOGrantIncrement) {
					return timedOut(c, r, e, Violation("GRANT at the FIFO level %d, offset %d, adds %d bytes to the %d its receiver had granted at least: a FIFO GRANT adds fifo_grant_increment %d (up to the length %d), and an SRPT GRANT carries a scheduled level",
						g.Priority(), g.Offset(), int64(g.Offset())-int64(held), held, c.P.FIFOGrantIncrement, m.Length))
				}
				last, ok := c.T.lastSRPT[e.Src]
				if !ok || e.Time.Sub(last.Time) > c.P.Slack || e.Time.Before(last.Time) {
					if !c.Net.cp.SeesAllOf(e.Src) {
						return Unsure("FIFO GRANT offset %d with no SRPT GRANT from %v in the %v before it that the capture shows: it does not hold the GRANTs %v sent to other hosts", g.Offset(), e.Src, c.P.Slack, e.Src)
					}
					if ev, ok := c.Net.LostFromAny(e.Src); ok {
						// The SRPT GRANT may have gone to any peer.
						return Downgrade(CauseLossBefore, ev, "FIFO GRANT offset %d with no SRPT GRANT from %v in the %v before it that the capture shows", g.Offset(), e.Src, c.P.Slack)
					}
					// Late by how long after the last SRPT GRANT the
					// capture saw (its start, if none) it came: a FIFO
					// GRANT decided right after it and held back by a
					// stall needs the stall to lose that much.
					since := c.T.Start
					if ok && !e.Time.Before(last.Time) {
						since = last.Time
					}
					return Violation("FIFO GRANT offset %d with no SRPT GRANT from %v in the %v before it: FIFO grants are made right after an SRPT grant",
						g.Offset(), e.Src, c.P.Slack).WithSlack(c.P.Slack).WithLate(e.Time.Sub(since) - c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
