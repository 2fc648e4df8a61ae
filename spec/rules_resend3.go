package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"net/netip"
	"slices"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// restartIncoming judges the incoming of request retransmission e of r
// after the server's RPC_UNKNOWN: the restart writes tx_end (main), or
// the client's granted offset or the segment's end past it (linux_6.13.9,
// linux_6.1.38 homa_resend_data), and an answer to the re-created
// server's RESEND its end or granted; tx_end lies within the grant
// horizon plus the skb a sender may send past it (HOMA-GRANT-005), and
// the horizon counts the RESENDs' ends.
func restartIncoming(c *Ctx, r *RPC, e *Event) Result {
	if !e.FromClient() || r.UnknownFromClient {
		return Skip
	}
	m, d := &r.Request, e.Packet.Data()
	inc, length := d.Incoming(), m.Length
	if length == 0 {
		length = d.MessageLength() // the first packet of the restart
	}
	// Horizon's terms, with the packet's length where the trace has
	// none yet.
	h := min(length, max(c.P.Unsched(length), m.Granted, m.ResendEnd, m.KeptHorizon))
	bound := min(max(h+eventSkb(c.P, e), e.End()), max(length, e.End()))
	if inc > bound {
		return Violation("retransmission [%d, %d) after the server's RPC_UNKNOWN carries incoming %d, past the client's grant horizon %d plus one skb's data: a restart writes the bytes transmitted or the granted offset",
			e.Offset, e.End(), inc, h)
	}
	return Pass()
}

// resendRules3: the incoming field of retransmitted DATA (HomaModule
// homa_incoming.c homa_resend_pkt, homa_outgoing.c homa_resend_data).
func resendRules3() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-RESEND-020", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "Retransmitted DATA answering a RESEND carries incoming = min(RESEND end, bytes transmitted), or (HomaModule before May 2025) the granted offset or the segment's end: never beyond the end of the ranges the message's RESENDs asked for, the grant horizon and the segment's end, and always past the segment's offset (a RESEND of length -1 bounds it by the bytes transmitted only, not judged); a client's retransmission after the server's RPC_UNKNOWN (its restart, or an answer to the re-created server's RESEND) carries at most max(its grant horizon plus one skb's data, the segment's end).",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (end capped at tx_end), homa_outgoing.c homa_resend_data (h->incoming = end since commit 45a8cae, 2025-05; before it msgout.granted, or the segment's end beyond it); linux_6.1.38 homa_resend_data the same (msgout.granted, or the segment's end beyond it)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "needs the RESENDs in the capture; a retransmission with no RESEND seen is HOMA-RESEND-003's business",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit, Check: func(c *Ctx, e *Event) Result {
				if !e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				if r.Unknown {
					return restartIncoming(c, r, e)
				}
				if inc := e.Packet.Data().Incoming(); inc <= e.Offset {
					// Every form (the RESEND's end, the granted offset,
					// the segment's end, a restart's bytes transmitted)
					// lies past a segment the sender had sent.
					return Violation("retransmission [%d, %d) carries incoming %d, at or below its own offset", e.Offset, e.End(), inc).Alone() // its own fields
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 || m.ResendAll || m.ResendEnd == 0 {
					return Skip
				}
				// main since 2025-05 writes the RESEND's end; before
				// (Oct 2024 - May 2025, IP protocol 146 too) the granted
				// offset, or the segment's end past it: both are legal.
				end := e.End()
				if m.Length > 0 {
					end = min(end, m.Length)
				}
				if inc := e.Packet.Data().Incoming(); inc > max(m.ResendEnd, m.Horizon(c.P), end) {
					return Violation("retransmission [%d, %d) carries incoming %d, beyond both %d, the furthest end any RESEND for the message asked for (latest frame %d), and the grant horizon %d",
						e.Offset, e.End(), inc, m.ResendEnd, m.res().LastResend.Frame, m.Horizon(c.P)).With(m.res().LastResend.Frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-021", Level: Must,
			Facts:     []string{"RTX-06", "WIRE-05"},
			Statement: "A sender retransmits only the segments a RESEND asked for, once per RESEND: every DATA with retransmit=1 overlaps a range the message's RESENDs asked for (length -1: what it had sent), and a segment is retransmitted no more often than RESENDs overlapping it came, unless RPC_UNKNOWN made a client restart its request.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (only the segments overlapping [start, end), each once per call); homa_incoming.c homa_resend_pkt (one homa_resend_data per RESEND), homa_rpc_unknown_pkt (the restart resends [0, tx_end))",
			Profiles:  []string{"linux", "linux-2024", "linux-2025", "upstream"},
			Capture:   "needs the RESENDs in the capture (a retransmission with none is HOMA-RESEND-003's business); a client's retransmission seen after it said RPC_UNKNOWN for the RPC, away from its own link, was sent before and delivered late, and is not judged; after a RESEND of length -1 only what the capture saw sent counts as asked, so bytes beyond it are not judged; copies are counted, not timed (any earlier RESEND overlapping the segment explains one), and a network duplicate of a retransmission (an identical copy within jitter) is inconclusive, as are copies in excess by at most one per RESEND where the capture does not see what the sender receives (a RESEND the network duplicated after the capture point draws copies of its own), and there an identical copy of the one just before it, up to four per RESEND",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit, Check: func(c *Ctx, e *Event) Result {
				r := retransmittedRPC(c, e)
				if r == nil {
					return Skip
				}
				if cu := c.T.ClientUnknown(e); e.FromClient() && !cu.Time.IsZero() && e.Time.After(cu.Time) && !c.Net.atSender(e.Src) {
					// The client had said RPC_UNKNOWN for the RPC: it no
					// longer has it and sends nothing of it, so this is a
					// packet sent before that the network delivered late
					// (a restart after the server's RPC_UNKNOWN), which
					// the RPC's new incarnation at the server never asked
					// for.
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if len(m.Asked) == 0 {
					return Skip
				}
				end := e.End()
				if m.ResendAll && e.Offset >= m.res().LastResend.SentEnd {
					return Pass()
				}
				if m.Asked.Overlaps(e.Offset, end) {
					return retxCopiesAsked(c, m, e)
				}
				return Violation("retransmission [%d, %d) overlaps no range the RESENDs for the message asked for (latest RESEND {%d, %d}, frame %d)",
					e.Offset, end, m.res().LastResend.Offset, int32(m.res().LastResend.Length), m.res().LastResend.Frame).With(m.res().LastResend.Frame)
			}},
		},
		{
			ID: "HOMA-RESEND-029", Level: Should,
			Facts:     []string{"RTX-06"},
			Statement: "A sender retransmits the segments it first cut the message into: DATA with retransmit=1 begins and ends where first-transmitted segments of the message began and ended, never inside one, whatever offset the RESEND asked from. SHOULD: a receiver takes bytes at any offset, so another cut breaks no exchange.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (main, linux_6.13.9, linux_6.1.38 alike: every segment of the skbs homa_message_out_fill built that overlaps [start, end) is copied whole, from its own offset, into a packet of its own)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025", "upstream"},
			Capture:   "judged only where the capture saw the first transmissions of the bytes on both sides of the retransmission's start (or end), so a segment beginning there would have shown; what it knows of the sender's cut is the phases (offsets modulo max_seg_data for --param mtu) at which those segments began: a start at phase 0 or at the one other phase seen passes, so a misplaced cut on that grid is not found; a message whose first transmissions began at two phases besides 0, or whose cut the capture does not show (a GSO or TSO batch, split by the reader at a segment size it may have assumed; an IP fragment), is not judged",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit, Check: func(c *Ctx, e *Event) Result {
				r := retransmittedRPC(c, e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.cutOdd {
					return Skip
				}
				for i, x := range [2]uint32{e.Offset, e.End()} {
					if x == 0 || m.Length > 0 && x >= m.Length || !m.FirstSent.Covers(x-1, x+1) || !m.insideCut(c.P, e, x) {
						continue
					}
					edge := "begins"
					if i == 1 {
						edge = "ends"
					}
					return Violation("retransmission [%d, %d) %s at %d, inside a segment the sender first transmitted (the capture saw those bytes sent, and its segments begin at offsets %s): homa_resend_data retransmits whole segments as first cut",
						e.Offset, e.End(), edge, x, m.cutGrid(c.P, e))
				}
				return Pass()
			}},
		},
		{
			// A client's violation rests on its own RPC_UNKNOWN and GRANT,
			// RESEND or BUSY (Alone); a server's also on no request DATA
			// since, which a capture that missed packets may not show.
			ID: "HOMA-RESEND-022", Level: Must,
			Facts:     []string{"RTX-11", "ID-02"},
			Statement: "A host says RPC_UNKNOWN only for an RPC it does not have: after a client's, it sends no GRANT, RESEND or BUSY for that RPC (its ids are never reused); after a server's, it sends no GRANT, RESEND, BUSY or NEED_ACK for the RPC until request DATA arriving after it created the RPC anew.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (homa_xmit_unknown only when no RPC is found), homa_rpc.c homa_rpc_alloc_client (next_outgoing_id only grows), homa_dispatch_pkts (a server creates an RPC only for an incoming DATA, homa_rpc_alloc_server)",
			Capture:   "judged from slack to timeout_ticks after the client's RPC_UNKNOWN, and from slack after the server's until the next request DATA the capture shows (control packets share its priority queue, so one sent before cannot trail it by more; a host whose module restarted reuses ids); DATA from the host afterwards is not judged (a packet the network held back in a lower priority queue may trail it), nor are a client's ACK and RPC_UNKNOWN (answers a client gives for RPCs it no longer has); the server's RPC_UNKNOWN must be the latest one of the RPC",
			Property: Each{Types: []wire.PacketType{wire.TypeGrant, wire.TypeResend, wire.TypeBusy, wire.TypeNeedAck}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return serverAfterOwnUnknown(c, e)
				}
				if e.Type() == wire.TypeNeedAck {
					return Skip // HOMA-ACK-010's business
				}
				said := c.T.ClientUnknown(e)
				if said.Time.IsZero() {
					return Skip
				}
				after := e.Time.Sub(said.Time)
				if after > c.P.Ticks(c.P.TimeoutTicks) {
					// A host whose Homa module restarted allocates ids
					// from the start again; judge only the RPC's lifetime.
					return Skip
				}
				if after > c.P.Slack {
					return Violation("%s for RPC %d %v after the client said RPC_UNKNOWN for it (frame %d): it does not have the RPC",
						e.Type(), KeyOf(e).ClientID, after.Round(time.Microsecond), said.Frame).With(said.Frame).WithSlack(c.P.Slack).WithLate(after - c.P.Slack).Alone()
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-RESEND-023", Level: Must,
			Facts:     []string{"RTX-06", "RTX-11"},
			Statement: "A host answers each RESEND with at most one BUSY or RPC_UNKNOWN: it sends no more BUSY and RPC_UNKNOWN packets for an RPC than RESENDs it received for the message it sends in that RPC.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (the only sender of BUSY and, through homa_xmit_unknown, of RPC_UNKNOWN: one of the two at most per RESEND); linux_6.1.38 homa_resend_pkt the same",
			Capture:   "counted, not timed: any earlier RESEND not yet answered explains one (a loaded host answers late; a tap on either host's link sees all the RESENDs the host got); a network duplicate of an answer (an identical copy within jitter) is inconclusive; so is an answer in excess by at most one per RESEND where the capture does not see what the answering host receives (a RESEND the network duplicated after the capture point draws an answer of its own), and there an identical copy of the answer just before it, up to four answers per RESEND (the network copies those answers too); an answer with no RESEND at all is HOMA-RESEND-005's or HOMA-RESEND-018's business",
			Property: Each{Types: []wire.PacketType{wire.TypeBusy, wire.TypeRPCUnknown}, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 {
					return Skip
				}
				if m.Answers >= m.Resends {
					why := fmt.Sprintf("%s for RPC %d from %v, one more than the RESENDs it received for it: each of the %d earlier answered one (latest RESEND frame %d)",
						e.Type(), KeyOf(e).ClientID, e.Src, m.Answers, m.res().LastResend.Frame)
					if ev, ok := unseenResendCopies(c, e, m.Answers, m.Resends); ok {
						return Downgrade(CauseDuplicate, ev, "%s", why)
					}
					return Violation("%s", why).With(m.res().LastResend.Frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-025", Level: Must,
			Facts:     []string{"RTX-02"},
			Statement: "Each timer RESEND round asks for every byte its sender lacks below the offset it granted: one RESEND per gap, then one for the granted tail, so a later round never asks for bytes that were granted and missing, and that no RESEND had asked for, when an earlier round began.",
			Source:    "HomaModule homa_incoming.c homa_request_retrans (main since be5081e, 2025-06: a RESEND for each gap in msgin.gaps, then [recv_end, granted)), homa_timer.c homa_timer_check_rpc",
			Profiles:  []string{"linux"},
			Capture:   "bytes count as missing only when the capture never saw them (upstream of the receiver a byte not seen did not arrive; on the sender's link it was not sent, and the receiver lacks it all the same); the granted offset is the least the capture shows (GRANT offsets, the first DATA's incoming or U) when the earlier round began; judged only at a round at least min(resend_ticks, resend_interval)-1 ticks after the earlier one (a timer pass never lasts that long) of an RPC seen from its start; inconclusive where the capture shows loss between the two hosts before the capture point (the earlier round's RESEND may be the one lost); GRANTs seen less than jitter before the earlier round began do not count (homa_grant_send builds a GRANT outside the RPC's lock, so one decided just after the round may pass the capture point first); linux_6.1.38 and main before 2025-06 ask for one range per round",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				rs := e.Packet.Resend()
				r := c.T.Lookup(e)
				if r == nil || rs.IsResendAll() || isBufferWakeup(c.P, rs) || c.startedBefore(r) {
					return Skip
				}
				m := r.Msg(oppositeRole(e.Packet.Role()))
				if m.res().RoundStart.IsZero() || m.res().RoundAll || m.retx == nil || m.retx.roundHeld == 0 || m.inRound(c.P, e, rs) {
					return Skip
				}
				if e.Time.Sub(m.res().RoundStart) < c.P.Ticks(min(c.P.ResendTicks, c.P.ResendInterval)-1) {
					return Skip
				}
				end := uint32(min(uint64(rs.Offset())+uint64(rs.Length()), uint64(m.retx.roundHeld)))
				if rs.Offset() >= end {
					return Skip
				}
				known := slices.Clone(m.Asked)
				for _, x := range m.Seen {
					known.Add(x.Start, x.End)
				}
				for _, x := range m.Earlier {
					known.Add(x.Start, x.End)
				}
				for _, g := range known.Gaps(end) {
					if g.End > rs.Offset() {
						lo := max(g.Start, rs.Offset())
						if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
							// The earlier round's RESEND for it may be
							// the one lost before the capture point.
							return Downgrade(CauseLossBefore, ev, "RESEND asks for [%d, %d), which no RESEND seen in the round of frame %d asked for", lo, g.End, m.res().RoundFrame)
						}
						return Violation("RESEND asks for [%d, %d), which no packet in the capture carried and no RESEND had asked for when the round of frame %d began, below the %d bytes granted then: that round left out a gap",
							lo, g.End, m.res().RoundFrame, m.retx.roundHeld).With(m.res().RoundFrame)
					}
				}
				return Pass()
			}},
		},
		{
			// RESEND-025 judges a later round by what an earlier one left
			// out; this judges the round itself as it ends, so a round
			// that leaves out the granted tail or a gap is caught when no
			// later round comes (the bytes arrive, or the capture ends).
			ID: "HOMA-RESEND-026", Level: Must,
			Facts:     []string{"RTX-02"},
			Statement: "A timer RESEND round is whole: within the tick it begins in, its RESENDs ask for every byte of the message below the offset its sender granted that the sender lacked when the round began (one RESEND per gap, in ascending order, then one for the granted tail).",
			Source:    "HomaModule homa_incoming.c homa_request_retrans (main since be5081e, 2025-06: a RESEND for each gap in msgin.gaps, then [recv_end, granted) when non-empty, in one call under the RPC's lock), homa_timer.c homa_timer_check_rpc",
			Profiles:  []string{"linux"},
			Capture:   "bytes count as lacked only when the capture never saw them before the round began (upstream of the receiver a byte not seen did not arrive; on the sender's link it was not sent); the granted offset is the least the capture shows (GRANT offsets, the least DATA incoming or U), GRANTs seen less than jitter before the round not counted (homa_grant_send builds a GRANT outside the RPC's lock, so one decided just after the round may pass the capture point first); the round's RESENDs may come in any order within a tick of its first (half a tick when resend_ticks or resend_interval is 1: rounds may then come a tick apart, and an RPC's place in the timer pass varies; a network may reorder them); judged at a round's first RESEND of an RPC seen from its start, not at a RESEND {0, -1} (a receiver with no byte asks for everything), a buffer wakeup or the answer to a NEED_ACK; inconclusive where the capture shows loss between the two hosts (a RESEND of the round lost before the capture point), and where request DATA reached the server about timeout_ticks after it last heard from the client (its timer may have aborted the RPC and that DATA created it anew, with less granted)",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeResend},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeResend {
						return Obligation{}, false
					}
					rs := e.Packet.Resend()
					r := c.T.Lookup(e)
					if r == nil || r.Unknown || rs.IsResendAll() || isBufferWakeup(c.P, rs) || c.startedBefore(r) || answersNeedAck(c.P, r, e) {
						return Obligation{}, false
					}
					m := r.Msg(oppositeRole(e.Packet.Role()))
					if d := e.Time.Sub(m.res().RoundStart); m.Length == 0 || !m.res().RoundStart.IsZero() && d >= 0 && d < c.P.RoundWindow() {
						// Part of the round that began less than its
						// window ago, in whatever order the network
						// delivered it.
						return Obligation{}, false
					}
					a := &roundAwait{k: KeyOf(e), role: e.Packet.Role(), s: e.Src, held: m.roundGranted(c.P, e.Time), frame: e.Frame, start: e.Time, window: c.P.RoundWindow()}
					a.lacked = m.everSeen().Gaps(a.held)
					if a.ask(rs) {
						return Obligation{}, false
					}
					if st := r.serverTimeoutAt(e); st != nil && !st.Sure {
						// The server's timer may have aborted the RPC and
						// late DATA created it anew, granting nothing yet;
						// the trace kept the old incarnation's GRANTs
						// (helper-145).
						a.unsure = fmt.Sprintf("the request DATA of frame %d reached the server %v after it last heard from the client, about timeout_ticks: its timer may have aborted the RPC (RTX-10) and that DATA created it anew (RTX-11), with less granted", st.Frame, st.Quiet.Round(time.Microsecond))
					}
					return Obligation{Key: rpcMsgKey{a.k, a.role}, RPC: a.k, Scoped: true, Await: a}, true
				},
				Bound:      func(p *Params) time.Duration { return p.RoundWindow() },
				SenderOwes: true,
			},
		},
		{
			ID: "HOMA-RESEND-024", Level: Must,
			Facts:     []string{"RTX-01"},
			Statement: "A client sends no RESEND for its response while it still has request bytes it may send and has not transmitted: no request byte below max(U, the GRANT offsets it had received) is transmitted for the first time more than slack after a RESEND of the client for the RPC, nor is the client's next RESEND for the RPC, more than slack later, sent with such bytes still not transmitted.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (a client RPC in RPC_OUTGOING with homa_rpc_tx_end below msgout.granted resets silent_ticks and returns: the ball is in its court), homa_outgoing.c homa_rpc_tx_end (bytes deferred in homa_qdisc count as not transmitted), homa_xmit_data (a message's new bytes go in offset order, once)",
			Capture:   "judged at the first transmission that shows the client had not transmitted those bytes when it RESENT (new bytes go in offset order, each once, so a byte first seen later was not sent before); slack covers bytes already handed to the NIC; a violation only on the client's link (elsewhere a DATA sent before the RESEND may wait behind higher priority levels while the RESEND passes: cause queueing); a GRANT counts only if the sender is known to have received it (it sent bytes only that GRANT, or a later one, authorised) and it passed the capture point more than slack before the RESEND; the next RESEND shows the bytes still not transmitted only at the client's own link (a capture elsewhere may not show DATA lost or queued before it), where a client that stopped short of a GRANT it had received (one that takes a later, lower GRANT offset for its horizon) RESENDs for the response and sends no more of its request",
			Property: Each{Types: []wire.PacketType{wire.TypeData, wire.TypeResend}, Usual: Usual{FactLive | FactNoResponseResend, NotApplicable}, Timed: true, Check: func(c *Ctx, e *Event) Result {
				if e.Type() == wire.TypeResend {
					return resendUnsentRequest(c, e)
				}
				if !e.FromClient() || e.Retransmit() || e.Length == 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || r.Unknown || r.Acked {
					return Skip
				}
				rs := r.Response.res().LastResend
				if rs.Time.IsZero() || e.Time.Sub(rs.Time) <= c.P.Slack {
					return Skip
				}
				m := &r.Request
				end := e.End()
				if m.Length > 0 {
					end = min(end, m.Length)
				}
				if m.captured(e.Offset, end) {
					return Skip // a repeat (HOMA-RESEND-010)
				}
				h := c.P.Unsched(e.Packet.Data().MessageLength())
				if m.Known && len(m.GrantLog) > 0 && m.GrantLog[0].Time.Before(rs.Time.Add(-c.P.Slack)) {
					h = max(h, m.GrantLog[0].Offset)
				}
				if e.Offset >= h {
					return Pass()
				}
				if !c.Net.atSender(e.Src) {
					// Sent before the RESEND, it may have waited behind
					// higher priority levels on its way here (a starved
					// scheduled level) while the RESEND passed.
					return Downgrade(CauseQueueing, Evidence{rs.Frame, "DATA at a low priority level can wait behind higher ones for longer than the client's RESEND takes to pass it"},
						"first transmission of request bytes [%d, %d), %v after the client's RESEND for the response (frame %d), below its horizon %d",
						e.Offset, end, e.Time.Sub(rs.Time).Round(time.Microsecond), rs.Frame, h)
				}
				return Violation("first transmission of request bytes [%d, %d), %v after the client's RESEND for the response (frame %d): the client had not sent bytes below its horizon %d then, and a client with bytes left to send does not RESEND",
					e.Offset, end, e.Time.Sub(rs.Time).Round(time.Microsecond), rs.Frame, h).With(rs.Frame).WithSlack(c.P.Slack).WithLate(e.Time.Sub(rs.Time) - c.P.Slack)
			}},
		},
	}
}

// resendUnsentRequest judges a client's RESEND e for its response
// against the client's previous RESEND for the RPC (HOMA-RESEND-024):
// when request bytes below a GRANT the client is known to have received
// more than slack before that RESEND are still not transmitted at e, more
// than slack after it, the client had RESENT with granted bytes it had not
// sent (homa_timer_check_rpc: tx_end below msgout.granted resets
// silent_ticks; new bytes go in offset order, each once). Judged only on
// the client's link, where its DATA are seen as it sent them.
func resendUnsentRequest(c *Ctx, e *Event) Result {
	if !e.FromClient() || !c.Net.atSender(e.Src) || isBufferWakeup(c.P, e.Packet.Resend()) {
		return Skip
	}
	r := c.T.Lookup(e)
	if r == nil || r.Unknown || r.Acked || answersNeedAck(c.P, r, e) {
		return Skip
	}
	prev := r.Response.res().LastResend
	if prev.Time.IsZero() || e.Time.Sub(prev.Time) <= c.P.Slack {
		return Skip
	}
	m := &r.Request
	if !m.Known || len(m.GrantLog) == 0 || !m.GrantLog[0].Time.Before(prev.Time.Add(-c.P.Slack)) {
		return Skip
	}
	h := m.GrantLog[0].Offset
	if m.Length > 0 {
		h = min(h, m.Length)
	}
	if m.SentEnd >= h {
		return Pass()
	}
	return Violation("RESEND for the response %v after the client's previous one (frame %d), and request bytes [%d, %d) below the GRANT it had received (frame %d, offset %d) still not transmitted: a client with granted bytes left to send does not RESEND",
		e.Time.Sub(prev.Time).Round(time.Microsecond), prev.Frame, m.SentEnd, h, m.GrantLog[0].Frame, m.GrantLog[0].Offset).With(prev.Frame).WithSlack(c.P.Slack)
}

// retxCopiesAsked judges retransmission e of message m, which overlaps a
// range its RESENDs asked for (HOMA-RESEND-021): homa_resend_data sends
// each segment overlapping a RESEND's range once, so the copies of e's
// offset (e included) may not outnumber the RESENDs whose ranges overlap
// e's bytes.
func retxCopiesAsked(c *Ctx, m *Message, e *Event) Result {
	if m.retx == nil {
		return Pass()
	}
	end := e.End()
	asked := 0
	for _, a := range m.retx.asked {
		if a.Start < end && e.Offset < a.End {
			asked++
		}
	}
	if n := m.retx.copies[e.Offset] + 1; n > asked {
		if ev, ok := unseenResendCopies(c, e, n-1, asked); ok {
			return Downgrade(CauseDuplicate, ev, "retransmission %d of [%d, %d), which only %s asked for", n, e.Offset, end, plural.Of(asked, "RESEND", "RESENDs"))
		}
		return Violation("retransmission %d of [%d, %d), which only %s asked for (latest RESEND {%d, %d}, frame %d): each RESEND retransmits a segment once",
			n, e.Offset, end, plural.Of(asked, "RESEND", "RESENDs"), m.res().LastResend.Offset, int32(m.res().LastResend.Length), m.res().LastResend.Frame).With(m.res().LastResend.Frame)
	}
	return Pass()
}

// unseenResendCopies says whether e, one more answer from its sender
// than the RESENDs the capture shows it got (it answered answers of
// resends), may answer a copy of one that the network duplicated after
// the capture point, which the capture cannot show: it does not see what
// e's sender receives, and the excess is at most one copy per RESEND
// shown (HOMA-RESEND-021, -023, -028), or, past that, where e is an
// identical copy of the answer just before it, up to two per RESEND (the
// network may have copied the answers too: Network.Copy). A network that
// duplicates a packet twice or more is not assumed.
func unseenResendCopies(c *Ctx, e *Event, answers, resends int) (Evidence, bool) {
	if c.Net.atReceiver(e.Src) {
		return Evidence{}, false
	}
	if answers >= 2*resends {
		if !c.Net.Copy() || answers >= 4*resends {
			return Evidence{}, false
		}
		// Two RESEND copies drew two identical answers back to back, and
		// the network copied those too (Duplicate excuses only the second
		// of a run).
		return Evidence{e.Frame, fmt.Sprintf("the capture does not see what %v receives: a RESEND the network duplicated after the capture point draws an answer of its own, and an identical copy of an answer less than jitter earlier may be the network's", e.Src)}, true
	}
	return Evidence{e.Frame, fmt.Sprintf("the capture does not see what %v receives: a RESEND the network duplicated after the capture point draws an answer of its own", e.Src)}, true
}

// serverAfterOwnUnknown judges a server's GRANT, RESEND, BUSY or NEED_ACK
// for an RPC against the server's own latest RPC_UNKNOWN for it
// (HOMA-RESEND-022): it had no RPC then, and only request DATA creates a
// server RPC (homa_dispatch_pkts, homa_rpc_alloc_server).
func serverAfterOwnUnknown(c *Ctx, e *Event) Result {
	r := c.T.Lookup(e)
	if r == nil || !r.Unknown || r.UnknownFromClient || r.UnknownTime.IsZero() {
		return Skip
	}
	if !r.ReqLast.Before(r.UnknownTime) {
		return Skip // request DATA since may have created it anew
	}
	after := e.Time.Sub(r.UnknownTime)
	if after > c.P.Slack {
		return Violation("%s for RPC %d %v after the server said RPC_UNKNOWN for it, with no request DATA since that could have created it anew: it had the RPC",
			e.Type(), KeyOf(e).ClientID, after.Round(time.Microsecond)).WithSlack(c.P.Slack).WithLate(after - c.P.Slack)
	}
	return Pass().WithSlack(c.P.Slack)
}

// roundAwait is HOMA-RESEND-026's obligation at the first RESEND of a
// timer round: the round's later RESENDs (same sender and RPC, within
// the tick) ask for every range in lacked, the bytes the capture never saw
// below held, the granted offset, when the round began.
type roundAwait struct {
	k      RPCKey
	role   wire.Role // the RESENDs' role
	s      netip.Addr
	held   uint32
	frame  int
	start  time.Time     // the round's first RESEND
	window time.Duration // Params.RoundWindow
	lacked []byteranges.Range
	asked  byteranges.Set
	// unsure, when set, is why the round may belong to an incarnation
	// the trace did not start afresh (a server timeout within RTX-10's
	// tolerance): the finding is inconclusive.
	unsure string
}

// ask adds RESEND rs's range to the round's and reports whether the round
// now asks for every lacked range.
func (a *roundAwait) ask(rs wire.Resend) bool {
	a.asked.Add(rs.Offset(), uint32(min(uint64(rs.Offset())+uint64(rs.Length()), 1<<32-1)))
	for _, g := range a.lacked {
		if !a.asked.Covers(g.Start, g.End) {
			return false
		}
	}
	return true
}

// Match reports whether x, a RESEND continuing the round, makes it whole.
func (a *roundAwait) Match(c *Ctx, x *Event) bool {
	if x.Type() != wire.TypeResend || x.Src != a.s || x.Packet.Role() != a.role || KeyOf(x) != a.k {
		return false
	}
	// The round's RESENDs leave in ascending order, but a network that
	// reorders may deliver them in any order within the round's window.
	rs := x.Packet.Resend()
	if d := x.Time.Sub(a.start); rs.IsResendAll() || d < 0 || d >= a.window {
		return false // not of this round
	}
	return a.ask(rs)
}

// Excuse: RPC_UNKNOWN ends the RPC; a round the trace may have judged
// against the wrong incarnation (unsure) is excused at once.
func (a *roundAwait) Excuse(c *Ctx, x *Event) (string, bool) {
	if a.unsure != "" {
		return a.unsure, true
	}
	if x.Err == nil && x.Type() == wire.TypeRPCUnknown && KeyOf(x) == a.k {
		return "RPC_UNKNOWN: one side no longer knows the RPC", true
	}
	return "", false
}

// Expect names the first range the round has not asked for.
func (a *roundAwait) Expect() string {
	for _, g := range a.lacked {
		if !a.asked.Covers(g.Start, g.End) {
			return fmt.Sprintf("RESEND in the round of frame %d for [%d, %d), which no packet in the capture had carried, below the %d bytes granted", a.frame, g.Start, g.End, a.held)
		}
	}
	return fmt.Sprintf("the rest of the round of frame %d", a.frame)
}

// noteCut records where first-transmitted DATA segment e of m begins
// (Message.cutPhase, cutOdd) for HOMA-RESEND-029.
func (m *Message) noteCut(p *Params, e *Event) {
	if m.cutOdd || e.Length == 0 {
		return
	}
	if e.Hijacked || e.IP.Fragment || e.Packet.Data().DataLen() != e.Length {
		// A TSO batch, a GSO frame the reader split at a segment size it
		// may have assumed, an IP fragment: the wire's cut is not shown.
		m.cutOdd = true
		return
	}
	switch ph := e.Offset % maxSegData(p.MTU, e.IPv6()); {
	case ph == 0 || ph+1 == m.cutPhase:
	case m.cutPhase == 0:
		m.cutPhase = ph + 1
	default:
		m.cutOdd = true
	}
}

// insideCut reports whether offset x of m, in retransmission e, lies at a
// phase (modulo max_seg_data) where none of m's first-transmitted
// segments the capture saw began (noteCut).
func (m *Message) insideCut(p *Params, e *Event, x uint32) bool {
	ph := x % maxSegData(p.MTU, e.IPv6())
	return ph != 0 && ph+1 != m.cutPhase
}

// cutGrid describes the offsets at which m's first-transmitted segments
// began, as noteCut knows them, for a HOMA-RESEND-029 violation.
func (m *Message) cutGrid(p *Params, e *Event) string {
	s := maxSegData(p.MTU, e.IPv6())
	if m.cutPhase == 0 {
		return fmt.Sprintf("multiples of %d", s)
	}
	return fmt.Sprintf("multiples of %d and those plus %d", s, m.cutPhase-1)
}

// retransmittedRPC returns the RPC of e, DATA with retransmit=1 that
// carries bytes, as the capture knows it; nil when e is no such DATA or
// its RPC is unknown or was forgotten (HOMA-RESEND-021, -029).
func retransmittedRPC(c *Ctx, e *Event) *RPC {
	if !e.Retransmit() || e.Length == 0 {
		return nil
	}
	if r := c.T.Lookup(e); r != nil && !r.Unknown {
		return r
	}
	return nil
}
