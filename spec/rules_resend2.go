package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// resendRules2: what a RESEND may ask for, how late it may come, and what
// the answers to RESEND and RPC_UNKNOWN must be (HomaModule homa_timer.c
// homa_timer_check_rpc, homa_incoming.c homa_request_retrans,
// homa_resend_pkt, homa_rpc_unknown_pkt; homa_outgoing.c homa_resend_data).
func resendRules2() []*Rule {
	resend := []wire.PacketType{wire.TypeResend}
	return []*Rule{
		{
			ID: "HOMA-RESEND-012", Level: Must,
			Facts:     []string{"RTX-03", "RTX-01", "RTX-12"},
			Statement: "A RESEND asks only for bytes its sender authorised and lacks: it begins at a byte it lacks (main: every byte of its range is one it lacks), its end is within max(U, its GRANT offsets, the incoming of the DATA it got) and never past the message's length (upstream: the length), but for the {0, 100} that linux_6.1.38 and main before be5081e ask while nothing of the message arrived, whatever its length, length -1 only at offset 0 and not after DATA of the message arrived, and a client with no byte of the response asks {0, -1} (main), length 0 only on linux_6.1.38 (a liveness probe), and never for a message already complete at the receiver.",
			Source:    "HomaModule homa_incoming.c homa_request_retrans (one RESEND per gap plus [recv_end, granted); {0, -1} only, and always, while nothing arrived, since be5081e, 2025-06: linux_6.1.38 and main before asked {0, 100}), homa_grant.c (msgin.granted never past msgin.length), homa_timer.c homa_timer_check_rpc (no RESEND once the message is complete); homa_pool.c homa_pool_check_waiting (buffer wakeup {0, -1})",
			Capture:   "a RESEND whose end passes the GRANTs seen so far waits slack for a GRANT from its sender for the RPC to that end or beyond (the receiver raises its granted offset before it sends the GRANT, and its timer may RESEND up to it in between): such a GRANT makes those bytes authorised, unless the sender's DATA past what was authorised before the RESEND (sent on the RESEND's own authority) came first (a capture that ends first shows none); a RESEND reaching past the message_length its DATA carry (main) is a violation whatever the capture missed or began after; GRANTs lost before the capture point can hide part of what the receiver granted, and bytes lost after it part of what it lacks: where the capture shows loss before it between the two hosts (a GRANT's loss leaves no trace of its own) the finding is inconclusive, unless a client RESENDs for a response more than slack after its own ack of the RPC (it acks only a response it holds whole, or an RPC it no longer has); so is one for a complete message after the client's ack at a capture away from the receiver, which cannot show a late request packet re-creating the RPC there (AMO-01); after the ack, late request DATA that comes timeout_ticks-2 ticks less slack after the last, the server having shown nothing of the incarnation the earlier ones re-created, may create it anew again. Request DATA that reaches the server more than timeout_ticks ticks plus slack after it last heard DATA, GRANT or BUSY from the client (or after such a silence that a GRANT or BUSY of the client ended since its previous request DATA: one arriving after the abort resets nothing) or sent a GRANT while it held every byte it had granted (its GRANTs, or the incoming its RPC started from; a GRANT sent while bytes were still due leaves its silence count running), its request incomplete, finds the RPC aborted (RTX-10) and creates it anew (RTX-11): the server's side is judged afresh from there; within timeout_ticks-2 ticks less slack of that, inconclusive; where only the server's own GRANT keeps the silence short of that, a timing finding, late by how much earlier that GRANT must have left the server (it may have stalled before sending it)",
			// A Witness rule: a RESEND past the GRANTs seen so far may ask
			// up to an offset its receiver raised msgin.granted to before
			// sending the GRANT (homa_grant.c raises it, then transmits;
			// homa_timer.c's RESEND may leave from another core in
			// between): the finding waits for that GRANT (resendAsksOpen).
			Property: Within{
				TriggerTypes: resend,
				Witness:      true,
				Bound:        func(p *Params) time.Duration { return p.Slack },
				Trigger:      resendAsksOpen,
			},
		},
		{
			ID: "HOMA-RESEND-013", Level: Must, Alone: true,
			Facts:     []string{"RTX-04"},
			Statement: "A RESEND's priority field is num_priorities-1; only the buffer-wakeup RESEND {0, -1} (main) asks for num_priorities-2.",
			Source:    "HomaModule homa_incoming.c homa_request_retrans (priority = num_priorities - 1), homa_pool.c homa_pool_check_waiting (homa_high_priority)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: resend, Check: func(c *Ctx, e *Event) Result {
				rs := e.Packet.Resend()
				p := int(rs.Priority())
				if p == c.P.NumPriorities-1 || c.P.Wire != wire.Version2024 && isBufferWakeup(c.P, rs) {
					return Pass()
				}
				return Violation("RESEND asks for priority %d, want %d (num_priorities-1)", p, c.P.NumPriorities-1)
			}},
		},
		{
			ID: "HOMA-RESEND-014", Level: Must,
			Facts:     []string{"RTX-02", "RTX-05"},
			Statement: "An endpoint still waiting for an RPC's data RESENDs in time: its first round at most resend_ticks+1 ticks after it last heard DATA, GRANT or BUSY (or sent DATA, GRANT or a buffer wakeup), later rounds at most resend_interval+1 ticks apart, each stretched by timer_drift plus slack; one that still holds the RPC after that deadline, its message lacking granted bytes, has RESENT.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (every RPC is checked every tick: no per-peer limit since 224ee0e; only received ≥ granted, no receive buffers or a timeout stop the count), homa_incoming.c homa_request_retrans, homa_dispatch_pkts (only DATA, GRANT and BUSY reset silent_ticks), homa_resend_pkt (BUSY from an RPC it holds)",
			Capture:   "judged at each RESEND (an endpoint that never RESENDs again may have aborted the RPC, which the wire does not show), and at a BUSY from the endpoint for the RPC (which shows it still holds it: homa_resend_pkt) or a client's RESEND answering NEED_ACK (likewise: homa_need_ack_pkt), while its incoming message lacks bytes it authorised, as the capture shows, and it has granted or RESENT for that message before (so it has receive buffers): such a packet past the deadline with no timer RESEND since is late too; a late RESEND or BUSY is inconclusive where the capture shows loss from the endpoint before the capture point (an earlier RESEND may be the lost packet, which leaves no trace of its own); past timeout_ticks not judged",
			Property: Each{Types: []wire.PacketType{wire.TypeResend, wire.TypeBusy}, Check: func(c *Ctx, e *Event) Result {
				if e.Type() == wire.TypeBusy {
					return resendOverdue(c, e, "BUSY")
				}
				rs := e.Packet.Resend()
				r := c.T.Lookup(e)
				if r == nil || isBufferWakeup(c.P, rs) {
					return Skip
				}
				if answersNeedAck(c.P, r, e) {
					// Not a timer round, but it shows the client still
					// holds the RPC, lacking bytes (homa_need_ack_pkt).
					return resendOverdue(c, e, "RESEND answering NEED_ACK")
				}
				m := r.Msg(oppositeRole(e.Packet.Role()))
				if m.inRound(c.P, e, rs) {
					return Skip
				}
				start, since, ticks, round := resendCountStart(c.P, r, m, e)
				what := "its " + round
				gap := e.Time.Sub(start)
				if bound := c.P.LateTicks(ticks); gap > bound {
					if gap >= c.P.Ticks(c.P.TimeoutTicks) {
						return Skip // past the timeout: HOMA-RESEND-009
					}
					if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
						// An earlier round may have been lost before the
						// capture point: this one is a later round.
						return Downgrade(CauseLossBefore, ev, "%s came %v after %s, with no earlier RESEND seen", what, gap.Round(time.Microsecond), since)
					}
					// A stall of the endpoint during the silence kept its
					// timer from counting (one pass for the ticks it
					// skipped): it may explain as much lateness as it lost.
					return Violation("%s came %v after %s; %d ticks of %v stretched by timer_drift %g plus slack allow %v",
						what, gap.Round(time.Microsecond), since, ticks, c.P.Tick, c.P.TimerDrift, bound).WithSlack(bound - c.P.Ticks(ticks)).WithLate(gap - bound).WithSince(start)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-015", Level: Should,
			Facts:     []string{"RTX-06"},
			Statement: "BUSY answers a RESEND only when there is nothing to retransmit: from a server that has not begun its response, or for a RESEND whose offset lies at or beyond what the message's sender had transmitted (an implementation may answer BUSY while the retransmission waits in its queue; HOMA-RESEND-016 requires the retransmission).",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (BUSY if the server's RPC is not RPC_OUTGOING, or if offset >= tx_end after homa_resend_data)",
			Profiles:  []string{"linux"},
			Property: Each{Types: []wire.PacketType{wire.TypeBusy}, Check: func(c *Ctx, e *Event) Result {
				m, rs, v, ok := busyAnswers(c, e)
				if !ok {
					return v
				}
				if !e.FromClient() && rs.SentEnd == 0 {
					return Pass() // a server not yet sending its response
				}
				if m.res().BusyAllowed > 0 {
					// It may answer an earlier RESEND of those that came
					// back to back: one repeated within a tick (a
					// duplicate) for bytes an earlier one asked for, whose
					// retransmission may still wait in the sender's queue
					// (HOMA-RESEND-016 requires it), or one for bytes not
					// sent yet.
					return Pass()
				}
				if rs.Offset < rs.SentEnd {
					return Violation("BUSY answering the RESEND at offset %d (frame %d), though %v had sent the %s up to %d: it must retransmit",
						rs.Offset, rs.Frame, e.Src, msgName(e.FromClient()), rs.SentEnd).With(rs.Frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-027", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "A sender answers a RESEND with retransmissions or with BUSY, never both: once it has retransmitted bytes a RESEND asked for (its offset below what it had transmitted), it sends no BUSY for that RESEND.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (homa_resend_data over [offset, min(end, tx_end)), then BUSY only if offset >= tx_end; a server not yet sending its response BUSYs and retransmits nothing)",
			Profiles:  []string{"linux"},
			Capture:   "judged at a BUSY that follows retransmitted DATA of the message overlapping the latest RESEND's range, that RESEND being the first of the message's current incarnation to ask for its offset (a later one may be a copy the sender answers while an earlier one's retransmission is still queued, as HOMA-RESEND-015 allows), with no other RESEND of the same round that may still wait for its BUSY, and no restart after RPC_UNKNOWN",
			Property: Each{Types: []wire.PacketType{wire.TypeBusy}, Check: func(c *Ctx, e *Event) Result {
				m, rs, v, ok := busyAnswers(c, e)
				if !ok {
					return v
				}
				x := m.retx
				if !rs.First || rs.Offset >= rs.SentEnd || m.res().BusyAllowed > 0 || x == nil || x.last.Time.Before(rs.Time) ||
					x.lastEnd <= rs.Offset || x.lastStart >= rs.End() {
					return Pass()
				}
				return Violation("BUSY for the RESEND at offset %d (frame %d), which %v had already answered with retransmitted DATA [%d, %d) (frame %d): homa_resend_pkt BUSYs only when it retransmits nothing",
					rs.Offset, rs.Frame, e.Src, x.lastStart, x.lastEnd, x.last.Frame).With(rs.Frame, x.last.Frame)
			}},
		},
		{
			ID: "HOMA-RESEND-028", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "A sender answers BUSY only to a RESEND that lets it: it sends no more BUSYs for its message than RESENDs for it reached it while it (a server) had not begun its response, or that asked for bytes at or beyond what it had transmitted (main since be5081e), or, before that (linux_6.1.38, linux_6.10.6), while it had granted bytes not yet transmitted or that asked for no bytes. A sender that has transmitted what a RESEND asks for retransmits it; BUSY alone is not an answer.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt, the only sender of BUSY (main: BUSY when the server's RPC is not RPC_OUTGOING, or when offset >= tx_end after homa_resend_data, be5081e and 93661cc; homa_rpc_tx_end gives a deferred retransmission's offset, homa_qdisc.h homa_qdisc_deferred_offset; linux_6.1.38 and linux_6.10.6: BUSY when not RPC_OUTGOING, when next_xmit_offset < granted, or with the retransmission for a RESEND of length 0)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "counted, not timed: any earlier RESEND that let the sender BUSY when the capture saw it explains one BUSY (a loaded host answers late; what the sender had transmitted then is at least what the capture had seen of it, and before main a message not yet seen whole may have granted bytes waiting), and so does one repeated within a tick for bytes an earlier one asked for (its retransmission may still wait in the sender's queue, as HOMA-RESEND-015 allows), and, under the linux profile, one at or beyond an offset an earlier RESEND asked for (main since 2490a1a: while homa_qdisc holds a retransmission, homa_rpc_tx_end returns its offset); a copy the network made after the capture point of a RESEND that let the sender BUSY draws a BUSY of its own where the capture does not see what the sender receives, and there the network may copy those BUSYs too (inconclusive, as in HOMA-RESEND-023); not judged for a client after the server's RPC_UNKNOWN (it restarts its request), nor within response_timeout plus slack of the capture's start for an RPC begun before it (the RESEND may precede the capture); a BUSY with no RESEND at all is HOMA-RESEND-005's",
			Property: Each{Types: []wire.PacketType{wire.TypeBusy}, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 || e.FromClient() && r.Unknown && !r.UnknownFromClient {
					return Skip
				}
				if c.startedBefore(r) && e.Time.Sub(c.T.Start) <= c.P.AnswerBound() {
					return Skip
				}
				if m.busyCredit > 0 {
					return Pass()
				}
				why := fmt.Sprintf("BUSY for RPC %d from %v, though none of the RESENDs it received for the %s and had not yet answered with BUSY let it (latest: offset %d, frame %d, when it had sent the %s up to %d): it must retransmit what it sent",
					KeyOf(e).ClientID, e.Src, msgName(e.FromClient()), m.res().LastResend.Offset, m.res().LastResend.Frame, msgName(e.FromClient()), m.res().LastResend.SentEnd)
				if ev, ok := unseenResendCopies(c, e, int(m.busies), int(m.busyLets)); ok && m.busyLets > 0 {
					// A copy of a RESEND that let it BUSY draws a BUSY of
					// its own (a copy of one that did not is answered as
					// it was, or later still).
					return Downgrade(CauseDuplicate, ev, "%s", why)
				}
				return Violation("%s", why).With(m.res().LastResend.Frame)
			}},
		},
		{
			ID: "HOMA-RESEND-016", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "The retransmissions answering a RESEND cover every byte of the requested range (length -1: from 0) that the message's sender had transmitted, within response_timeout, unless the RPC ends first at the sender: a client's when a response begun after the RESEND arrives whole, a server's when the client acknowledges it or says RPC_UNKNOWN.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (homa_resend_data over [offset, min(end, tx_end))), homa_outgoing.c homa_resend_data (every segment overlapping the range); linux_6.1.38 homa_resend_pkt the same once next_xmit_offset reached granted (before, BUSY instead)",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "inconclusive where the capture shows loss toward the sender after the capture point or from it before; under linux-2024 judged only for a RESEND that reached a sender which, as far as the capture shows, had sent every byte it was granted",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeResend},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeResend {
						return Obligation{}, false
					}
					r, m := grantMsg(c, e)
					if r == nil || m.Length == 0 {
						return Obligation{}, false
					}
					rs := e.Packet.Resend()
					if c.P.Wire == wire.Version2024 && m.SentEnd < m.Horizon(c.P) {
						// linux_6.1.38 answers BUSY while it has granted
						// bytes not yet sent (homa_resend_pkt).
						return Obligation{}, false
					}
					start, end := rs.Offset(), uint64(m.SentEnd)
					if !rs.IsResendAll() {
						end = min(end, uint64(rs.Offset())+uint64(rs.Length()))
					}
					if uint64(start) >= end {
						return Obligation{}, false
					}
					k, answerer, asked := KeyOf(e), oppositeRole(e.Packet.Role()), e.Time
					var got byteranges.Set
					need := [2]uint32{start, uint32(end)}
					return Obligation{Key: [3]any{k, answerer, start}, RPC: k, Scoped: true, Expect: fmt.Sprintf("retransmissions of [%d, %d)", need[0], need[1]),
						Match: func(c *Ctx, x *Event) bool {
							if x.Err == nil && answerer == wire.RoleClient && x.Type() == wire.TypeData && x.Packet.Role() == wire.RoleServer && KeyOf(x) == k {
								// The response's last bytes, of a response begun
								// after the RESEND: the client ends the RPC and
								// owes nothing more; the server, which responded
								// since, had the whole request (a sender that
								// queues its retransmissions behind new DATA may
								// not have sent them all by then).
								r := c.T.Lookup(x)
								if r == nil || !r.Response.FirstData.IsZero() && r.Response.FirstData.Before(asked) {
									return false
								}
								n := r.Response.Length // 0 before its first DATA (rules see x before the trace takes it)
								if n == 0 {
									n = x.Packet.Data().MessageLength()
								}
								return r.Response.Seen.CoversWith(0, n, x.Offset, x.End())
							}
							if answerer == wire.RoleServer && clientEnded(x, k) {
								// The client ended the RPC (a late RESEND of its
								// had come first): told RPC_UNKNOWN or ACK, the
								// server frees it and owes nothing more.
								return true
							}
							if x.Err != nil || x.Packet.Role() != answerer || KeyOf(x) != k {
								return false
							}
							switch x.Type() {
							case wire.TypeRPCUnknown:
								return true // it no longer knows the RPC (HOMA-RESEND-002 judges the answer)
							case wire.TypeData:
								if x.Retransmit() {
									got.Add(x.Offset, x.End())
								}
							}
							return got.Covers(need[0], need[1])
						}}, true
				},
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
		{
			ID: "HOMA-RESEND-017", Level: Must,
			Facts:     []string{"RTX-09"},
			Statement: "RPC_UNKNOWN ends an RPC at a server and is ignored by a client already receiving its response: a server told RPC_UNKNOWN by the client sends nothing more for the RPC, and a client whose response had begun to arrive does not restart its request.",
			Source:    "HomaModule homa_incoming.c homa_rpc_unknown_pkt (server: homa_rpc_end; client: restart only in RPC_OUTGOING, else discard)",
			Capture:   "slack covers packets already on their way; a response seen but lost after the capture point leaves the client sending (inconclusive where the capture shows such loss)",
			Property: Each{Types: []wire.PacketType{wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeBusy, wire.TypeNeedAck}, Needs: NeedsRPCUnknownSeen, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil || !r.Unknown {
					return Skip
				}
				late := e.Time.Sub(r.UnknownTime)
				if !e.FromClient() && r.UnknownFromClient {
					if late > c.P.Slack {
						return Violation("%s from the server %v after the client answered RPC_UNKNOWN for the RPC", e.Type(), late.Round(time.Microsecond)).WithSlack(c.P.Slack).WithLate(late - c.P.Slack)
					}
					return Pass().WithSlack(c.P.Slack)
				}
				if e.FromClient() && !r.UnknownFromClient && r.Response.Received() > 0 &&
					r.Response.FirstData.Before(r.UnknownTime) && r.UnknownTime.After(lastResendTo(r, wire.RoleClient)) {
					// A client receiving its response, told RPC_UNKNOWN
					// by the server: each packet it sends for the RPC
					// after that shows whether it ignored it (its RESENDs
					// for the response go on) or restarted its request.
					if !e.Retransmit() || e.Offset != 0 {
						return Pass()
					}
					if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
						return Downgrade(CauseLossAfter, ev, "client restarted its request after RPC_UNKNOWN though response DATA had been sent to it")
					}
					return Violation("client restarted its request after RPC_UNKNOWN, though %d bytes of its response had arrived: a receiving client ignores RPC_UNKNOWN", r.Response.Received())
				}
				return Skip
			}},
		},
		{
			ID: "HOMA-RESEND-018", Level: Must,
			Facts:     []string{"RTX-11", "RTX-06"},
			Statement: "RPC_UNKNOWN answers only a RESEND: other packets for an RPC the host does not know are dropped without reply.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (the only caller of homa_xmit_unknown), homa_dispatch_pkts (other packets for unknown RPCs are discarded)",
			Property:  answersResend(wire.TypeRPCUnknown, "RPC_UNKNOWN with no earlier RESEND from the peer for this RPC"),
		},
		{
			ID: "HOMA-RESEND-019", Level: Must,
			Facts:     []string{"AMO-01", "RTX-06", "RTX-09", "RTX-10", "ACK-01", "ACK-04", "ABT-01"},
			Statement: "A server forgets an RPC it has shown it holds (it sent BUSY, a GRANT, a RESEND, response DATA or NEED_ACK for it) only for a reason the protocol gives: the client's ACK or piggy-backed ack, the client's RPC_UNKNOWN, a timeout after timeout_ticks ticks without DATA, GRANT or BUSY from the client while the request was still coming (never once the whole request is in: in service, or sending or holding its response), an ICMP unreachable (other than port unreachable) about a packet to the client, or the close of its socket (or a restart of its host), which discards every RPC the socket holds. It answers RPC_UNKNOWN for such an RPC only after one of these.",
			Source:    "HomaModule homa_rpc.c homa_rpc_end (the only way a server RPC goes), called from homa_incoming.c homa_rpc_acked (ACK, piggy-backed ack) and homa_rpc_unknown_pkt (RPC_UNKNOWN from the client), homa_plumbing.c homa_err_handler_v4/v6 via homa_abort_rpcs (ICMP unreachable other than port unreachable: every RPC with that address), homa_timer.c homa_timer_check_rpc via homa_rpc_abort (silent_ticks ≥ timeout_ticks, only that RPC, never while in service or with the response handed to the NIC) and homa_sock.c homa_sock_shutdown (every RPC of the socket); homa_resend_pkt answers RPC_UNKNOWN only when homa_rpc_find_server finds nothing; fault @35286c8 (one timeout ended every RPC of the peer)",
			Capture:   "judged at the server's RPC_UNKNOWN; a close or restart shows no packet, so the finding is a violation only once the same server socket shows, more than slack after the RPC_UNKNOWN, that it still holds another RPC (BUSY, GRANT, RESEND, response DATA or NEED_ACK) whose request DATA all came more than 2·slack before the server's last packet for the forgotten one, so that none could have re-created it after a close, or response DATA or a NEED_ACK (sent only holding the whole request) for an RPC whose first request DATA came more than 2·slack plus jitter before it and none of whose request bytes came again (no retransmission, no snap-cut request header): a close would have lost those bytes (in a capture that sees all of that RPC's request DATA; a network duplicate counts jitter earlier); without such a witness it is inconclusive (cause: socket closed or host restarted). A timeout is allowed only before the server began its response and, for the silence from the client's last DATA, GRANT or BUSY, only where the capture had not seen the whole request by that packet. An ICMP unreachable counts where the capture shows it, from slack before the server's last packet for the RPC (one the server's own stack generated, a neighbour that did not resolve, never reaches the wire). The server's application is taken to reply validly: a reply homa_sendmsg rejects (zero or too many bytes, a fault copying them) ends the RPC with no packet, which this rule would charge to the server. Silence counts from the client's last DATA, GRANT or BUSY as the capture saw it, which a capture point on the path can only lengthen, and the longest silence after the server's last packet for the RPC counts (its timer may have aborted the RPC at any time after it, and a packet from the client that arrived later reset nothing); loss after the capture point toward the server makes a violation inconclusive",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeRPCUnknown},
				Witness:      true,
				Bound:        func(p *Params) time.Duration { return p.Slack },
				Trigger:      forgotHeldRPC,
			},
		},
	}
}

// forgotHeldRPC is HOMA-RESEND-019's trigger: RPC_UNKNOWN e from a server
// for an RPC it had shown it holds, with no ack, no RPC_UNKNOWN from the
// client and too little silence from the client for a timeout in
// between. The obligation it opens, one per server socket, waits for a
// witness that the socket was not closed meanwhile (see witnessHeld).
func forgotHeldRPC(c *Ctx, e *Event) (Obligation, bool) {
	if e.Type() != wire.TypeRPCUnknown || e.FromClient() {
		return Obligation{}, false
	}
	r := c.T.Lookup(e)
	if r == nil || r.HeldLast.IsZero() || r.Acked {
		return Obligation{}, false // never shown held, or acknowledged (ACK-04)
	}
	if at, ok := c.T.hostUnreachable[hostPair{e.Src, r.Key.Client}]; ok && at.After(r.HeldLast.Add(-c.P.Slack)) && !at.After(e.Time) {
		return Obligation{}, false // an ICMP unreachable aborted it (homa_abort_rpcs)
	}
	// A timeout needs timeout_ticks timer passes in a row without DATA,
	// GRANT or BUSY from the client (homa_dispatch_pkts resets
	// silent_ticks): the first may come at once, and RTX-10 allows 2 ticks
	// of tolerance, slack the rest.
	quiet := e.Time.Sub(r.First)
	since := "the RPC's first packet"
	if !r.HeardFromClient.IsZero() {
		quiet, since = e.Time.Sub(r.HeardFromClient), fmt.Sprintf("the client's last %v", r.HeardTypeFromClient)
	}
	// The timer may have aborted the RPC at any time after the server's
	// last packet for it: a packet from the client that arrived after the
	// abort reset nothing, so the longest silence since counts.
	longest := r.quietAfterHeld > quiet
	if longest {
		quiet = r.quietAfterHeld
	}
	// The timer counts a server's silence only while the request is still
	// coming (homa_timer_check_rpc returns at once for a server RPC past
	// RPC_INCOMING: in service, or sending its response): once the
	// server sent response DATA, or the whole request had passed the
	// capture point when the silence began, no timeout ends the RPC.
	whole := ""
	// Once the server had the whole request no stall explains a
	// timeout but one that held the request's last bytes back from its
	// protocol code until its timer fired (wholeLate from wholeFrom); once
	// it had begun its response, none (it had them all).
	var wholeLate time.Duration
	var wholeFrom time.Time
	responding := false
	if f := r.Response.FirstData; !f.IsZero() && !f.Before(r.RecreatedTime) {
		whole = fmt.Sprintf("the server had begun its response %v before", e.Time.Sub(f).Round(time.Microsecond))
		responding = true
	} else if q := &r.Request; !longest && q.Complete && !q.CompleteTime.After(r.HeardFromClient) && !q.CompleteTime.Before(r.RecreatedTime) {
		whole = fmt.Sprintf("the whole request had come (frame %d) when that silence began", q.CompleteFrame)
		// Its timer counted a silence from the RPC's first packet at
		// the earliest, so it fired timeout_ticks (less RTX-10's two
		// and slack) after that at the soonest: the last bytes were
		// held back from their arrival until then.
		wholeLate = c.P.Ticks(c.P.TimeoutTicks-2) - c.P.Slack - q.CompleteTime.Sub(r.First)
		if wholeLate > 0 {
			wholeFrom = q.CompleteTime
		}
	}
	long := quiet >= c.P.Ticks(c.P.TimeoutTicks-2)-c.P.Slack
	if long && whole == "" {
		return Obligation{}, false
	}
	sock := HostPort{Addr: e.Src, Port: r.ServerPort}
	held, unknownAt, forgot := r.HeldLast, e.Time, r.Key
	silence := fmt.Sprintf("%v after %s", quiet.Round(time.Microsecond), since)
	if longest {
		silence = fmt.Sprintf("at most %v without DATA, GRANT or BUSY from the client since", quiet.Round(time.Microsecond))
	}
	timeout := fmt.Sprintf("short of a timeout (timeout_ticks %d, tick %v)", c.P.TimeoutTicks, c.P.Tick)
	if long {
		timeout = whole + ", so its timer no longer counted silence"
	}
	what := fmt.Sprintf("RPC_UNKNOWN for RPC %d, which the server showed it held %v earlier; %s, %s, with no ack or RPC_UNKNOWN from the client",
		r.Key.ClientID, e.Time.Sub(held).Round(time.Microsecond), silence, timeout)
	frame := e.Frame
	// Short of a timeout, the silence the server's timer counted fell
	// short by early: only a stall that kept the server from processing
	// the client's packet that began it (between its arrival and the
	// RPC_UNKNOWN) may have let its timer count from an earlier one; a
	// silence from the RPC's first packet the capture saw from its start
	// (the request DATA that created it) no stall lengthens. Once the
	// server had the whole request, no silence ends the RPC: only a stall
	// that held the last request bytes back from the server's protocol
	// code until its timer fired (wholeLate) explains it, and none once
	// it responded.
	early, earlyAt, earlyRef := time.Duration(0), e.Time.Add(-quiet), EarlyFromPeer
	if !long {
		early = c.P.Ticks(c.P.TimeoutTicks-2) - c.P.Slack - quiet
		if r.SeenFromStart && !earlyAt.After(r.First) {
			earlyRef = EarlyFromStart
		}
	}
	return Obligation{
		Key:    sock,
		Expect: "packet showing that the server socket still holds an RPC it held before",
		Match: func(c *Ctx, x *Event) bool {
			return witnessHeld(c, x, sock, forgot, held, unknownAt)
		},
		Confirm: func(c *Ctx, x *Event) Result {
			w := c.T.Lookup(x)
			if ev, ok := c.Net.LostAfter(forgot.Client, forgot.Server); ok {
				// Packets from the client the capture saw may not have
				// reached the server: its silence may have been long
				// enough for a timeout.
				return Downgrade(CauseLossAfter, ev, "%s; the client's packets may not have reached the server", what).With(x.Frame)
			}
			v := Violation("%s; the socket was not closed: it still holds RPC %d of %v (%s %v later, frame %d), %s",
				what, w.Key.ClientID, w.Key.Client, x.Type(), x.Time.Sub(unknownAt).Round(time.Microsecond), x.Frame, w.reqLastBefore(held, c.P.Slack)).With(x.Frame)
			if responding {
				return v // past RPC_INCOMING: no timer counts (homa_timer_check_rpc)
			}
			return v.WithSlack(c.P.Slack).WithEarly(early, earlyAt, earlyRef).WithLate(wholeLate).WithSince(wholeFrom)
		},
		Unseen: func() Result {
			return Downgrade(CauseClose, Evidence{Frame: frame, Why: fmt.Sprintf("no later packet of %v shows it still holds an RPC it held before, so a close of the socket or a restart of the host, which end every RPC it holds, may explain it", sock)}, "%s", what)
		},
	}, true
}

// witnessHeld reports whether x shows that server socket sock still held
// an RPC after the RPC_UNKNOWN at unknownAt, so that it was not closed in
// between: a BUSY, GRANT, RESEND, response DATA or NEED_ACK sent after the RPC_UNKNOWN
// (more than slack later at the capture point; jitter more for a network
// duplicate, whose original left up to jitter earlier) for an RPC other
// than forgot with no request DATA since 2·slack before held, the
// server's last packet for forgot: a close came after held, and every
// request DATA that could have reached the server after it (seen at most
// slack before it reached the server, sent after held-slack) would show.
// A close ends every RPC of the socket, so state for this one after it
// would need such a request to re-create it. The capture must see all of
// that RPC's request DATA.
func witnessHeld(c *Ctx, x *Event, sock HostPort, forgot RPCKey, held, unknownAt time.Time) bool {
	switch x.Type() {
	case wire.TypeBusy, wire.TypeData, wire.TypeNeedAck, wire.TypeGrant, wire.TypeResend:
	default:
		return false
	}
	late := x.Time.Sub(unknownAt)
	if _, dup := c.Net.Duplicate(); dup {
		late -= c.P.Jitter
	}
	if x.FromClient() || x.Src != sock.Addr || x.Packet.Common().Sport() != sock.Port || late <= c.P.Slack {
		return false
	}
	w := c.T.Lookup(x)
	if w == nil || w.Key == forgot || held.Sub(w.ReqLast) <= 2*c.P.Slack && !heldWhole(c, x, w, held) {
		return false
	}
	cp := c.Net.CapturePoint()
	return cp.SeesAllOf(sock.Addr) || cp.SeesAllOf(w.Key.Client)
}

// heldWhole reports whether x, a packet of w's server socket, shows that
// the server held w's request from before held, when request DATA of w
// came after held: x is response DATA or a NEED_ACK, which a server sends
// only once it holds the whole request (homa_plumbing.c homa_recvmsg
// puts a server RPC in RPC_IN_SERVICE, the only state homa_sendmsg
// replies in, once its request has no bytes remaining; homa_timer.c
// homa_timer_check_rpc asks NEED_ACK only for a response sent), and the bytes of w's first request DATA the capture saw
// (more than 2·slack plus jitter before held, a network duplicate
// coming at most jitter later) reached the capture point no other time:
// no request DATA of w was a retransmission (a first transmission sends
// each byte once, HOMA-RESEND-010) and w was not re-created after an
// ack. A close after held would have discarded those bytes, and an RPC
// re-created by later request DATA could never hold them. An RPC with a
// snap-cut request DATA header (whose retransmit byte may be unread) is
// none.
func heldWhole(c *Ctx, x *Event, w *RPC, held time.Time) bool {
	if t := x.Type(); t != wire.TypeData && t != wire.TypeNeedAck {
		return false
	}
	if _, cut := c.T.partialReq[w.Key]; cut {
		return false
	}
	q := &w.Request
	return q.RetxBytes == 0 && !q.FirstData.IsZero() && w.RecreatedTime.IsZero() &&
		held.Sub(q.FirstData) > 2*c.P.Slack+c.P.Jitter
}

// reqLastBefore says why the capture shows r, the RPC witnessHeld took
// as held since before t, held then: "whose last request DATA came D
// before"; where request DATA came later (heldWhole), that its first
// request DATA came D before and no request byte came again; or, when the
// capture holds none (an RPC begun before it, or DATA it dropped), says
// so instead of a duration from the zero time.
func (r *RPC) reqLastBefore(t time.Time, slack time.Duration) string {
	switch {
	case r.ReqLast.IsZero():
		return "whose request DATA the capture does not hold"
	case t.Sub(r.ReqLast) <= 2*slack:
		return fmt.Sprintf("whose first request DATA came %v before and no request byte twice (a response or NEED_ACK needs the whole request: bytes lost to a close would have to come again)", t.Sub(r.Request.FirstData).Round(time.Microsecond))
	}
	return fmt.Sprintf("whose last request DATA came %v before", t.Sub(r.ReqLast).Round(time.Microsecond))
}

// heldWindow bounds the obligations for which witnessHeld(c, x, sock,
// forgot, held, deadline) can hold, x being a packet of sock: held after
// lo and deadline before hi (a superset: the loser of a duplicate's
// jitter, the forgotten RPC and the capture point are left to
// witnessHeld). ok is false when it holds for none.
func heldWindow(c *Ctx, x *Event) (lo, hi time.Time, ok bool) {
	switch x.Type() {
	case wire.TypeBusy, wire.TypeData, wire.TypeNeedAck, wire.TypeGrant, wire.TypeResend:
	default:
		return lo, hi, false
	}
	if x.FromClient() {
		return lo, hi, false
	}
	w := c.T.Lookup(x)
	if w == nil {
		return lo, hi, false
	}
	lo = w.ReqLast.Add(2 * c.P.Slack)
	if t := x.Type(); (t == wire.TypeData || t == wire.TypeNeedAck) && !w.Request.FirstData.IsZero() {
		// heldWhole's bound, for any held it may admit.
		if f := w.Request.FirstData.Add(2*c.P.Slack + c.P.Jitter); f.Before(lo) {
			lo = f
		}
	}
	return lo, x.Time.Add(-c.P.Slack), true
}

// timedOutUnsure reports whether e, a packet from the server of r, may
// come from an RPC that a request DATA re-created after the server's timer
// may have aborted the old one (Trace: RPC.ServerTimeout), within RTX-10's
// tolerance, where the trace kept the old incarnation's bytes.
func timedOutUnsure(r *RPC, e *Event) (string, bool) {
	st := r.serverTimeoutAt(e)
	if !st.unsure() {
		return "", false
	}
	return fmt.Sprintf("the request DATA of frame %d reached the server %v after it last heard from the client, about timeout_ticks: its timer may have aborted the RPC (RTX-10) and that DATA created it anew (RTX-11), lacking the earlier bytes",
		st.Frame, st.Quiet.Round(time.Microsecond)), true
}

// timedOut returns v, a violation by packet e from the server of r,
// noting when it rests on the trace's timing inference about the
// server's timer (RPC.ServerTimeout), so that the finding becomes a timing
// one over the silence that inference judged:
//   - Sure: the trace took the server's timer to have aborted the RPC and
//     a late request DATA to have created it anew; the margin is the
//     silence past timeout_ticks ticks plus slack, over the RPC's frames
//     from its first to that DATA: a stall the run measured there that
//     lost at least that much may have kept the server's timer from
//     counting to timeout_ticks (a loaded host's timer runs late and
//     catches up: the ref once RESENDed after a 0.5 s stall, then got the
//     DATA 22 ms later and asked for the bytes its GRANT had authorised),
//     also when a later silence fell short of Sure (ServerTimeout.Recreated);
//   - Held: the trace took the server's own GRANT as restarting its count
//     when the capture saw it, so no abort; had the GRANT left the server
//     Held earlier (decided, then held up by a stall before it reached
//     the capture point) the timer would have aborted the RPC, and a
//     server granting or asking afresh is right: late Held, over the
//     silence from the client's last packet to that DATA.
//
// Without a measured stall (a capture checked alone) the violation stands.
func timedOut(c *Ctx, r *RPC, e *Event, v Result) Result {
	st := r.serverTimeoutAt(e)
	if st.unsure() && st.Recreated != nil && st.Recreated.Time.After(r.RecreatedTime) {
		// A later silence fell short of Sure, but the server's state
		// (and so the violation) still rests on the earlier inference
		// that a late DATA re-created the RPC (unless a re-creation after an
		// ack came since: RPC.RecreatedTime).
		st = st.Recreated
	}
	switch {
	case st == nil:
		return v
	case st.Sure:
		margin := st.Quiet - (c.P.Ticks(c.P.TimeoutTicks) + c.P.Slack)
		return v.With(r.FirstFrame, st.Frame).WithSlack(c.P.Slack).WithLate(max(margin, time.Nanosecond))
	case st.Held > 0:
		return v.With(st.GrantFrame, st.Frame).WithSlack(c.P.Slack).WithLate(st.Held).WithSince(st.Since)
	}
	return v
}

// serverTimeoutAt returns r's ServerTimeout if e, a packet from r's
// server, comes at or after its DATA (nil otherwise).
func (r *RPC) serverTimeoutAt(e *Event) *ServerTimeout {
	if r == nil || e.FromClient() || r.ServerTimeout == nil || e.Time.Before(r.ServerTimeout.Time) {
		return nil
	}
	return r.ServerTimeout
}

// silenceStart returns when the sender of RESEND e last had its silence
// count reset for RPC r, as far as the capture shows: the latest DATA,
// GRANT or BUSY from the peer, its own latest DATA (a sender with granted
// bytes to send holds the count at 0), its own latest GRANT (a receiver
// holding everything it granted does too) or buffer-wakeup RESEND, or the
// RPC's first packet.
func silenceStart(r *RPC, e *Event) (time.Time, string) {
	start, since := r.First, "the RPC's first packet"
	later := func(t time.Time, what string) {
		if t.After(start) {
			start, since = t, what
		}
	}
	heard := r.HeardFromServer
	if !e.FromClient() {
		heard = r.HeardFromClient
	}
	later(heard, "the last DATA, GRANT or BUSY from the peer")
	later(r.Msg(e.Packet.Role()).LastData, "its own latest DATA")
	in := r.Msg(oppositeRole(e.Packet.Role()))
	if g, ok := in.LastGrant(); ok {
		later(g.Time, "its own latest GRANT")
	}
	later(in.WakeupTime, "its own buffer-wakeup RESEND")
	return start, since
}

// answersResend is "a packet of type t only after a RESEND for its RPC
// from the peer": keys name the side that answers, the RESEND's
// recipient.
func answersResend(t wire.PacketType, missing string) After {
	return After{
		ATypes: []wire.PacketType{wire.TypeResend},
		BTypes: []wire.PacketType{t},
		A: func(c *Ctx, e *Event) (rpcMsgKey, bool) {
			if e.Type() != wire.TypeResend {
				return rpcMsgKey{}, false
			}
			return toPeer(e), true
		},
		B: func(c *Ctx, e *Event) (rpcMsgKey, bool) {
			if e.Type() != t {
				return rpcMsgKey{}, false
			}
			return fromSender(e), true
		},
		Missing: missing,
	}
}

// clientEnded reports whether x is the client of RPC k ending it at the
// server: RPC_UNKNOWN (the client forgot it; the server discards it,
// homa_rpc_unknown_pkt) or an ACK naming it (homa_ack_pkt).
func clientEnded(x *Event, k RPCKey) bool {
	if x.Err != nil || x.Packet.Role() != wire.RoleClient {
		return false
	}
	switch x.Type() {
	case wire.TypeRPCUnknown:
		return KeyOf(x) == k
	case wire.TypeAck:
		if KeyOf(x) == k {
			return true
		}
		a := x.Packet.Ack()
		for i := range a.ValidAcks() {
			if RPCKey(wire.KeyOf(x.Src, x.Dst, a.Entry(i).ClientID)) == k {
				return true
			}
		}
	}
	return false
}

// resendOverdue is HOMA-RESEND-014 at e, a BUSY or a client's RESEND
// answering NEED_ACK (witness names which): its sender still holds the
// RPC (homa_resend_pkt, homa_need_ack_pkt found it), so a timer that had
// to RESEND for the message it receives in that RPC has done so by now. Judged only while
// that message lacks bytes its receiver authorised, as the capture shows
// (bytes lost before the capture point are missing at the receiver too;
// bytes lost after it count as received, which errs towards passing), and
// once the receiver has granted or RESENT for it (homa_timer_check_rpc
// skips a message without receive buffers, which gets neither).
func resendOverdue(c *Ctx, e *Event, witness string) Result {
	r := c.T.Lookup(e)
	if r == nil || r.Acked || r.Unknown {
		return Skip
	}
	m := r.Msg(oppositeRole(e.Packet.Role()))
	if m.Length == 0 || m.Complete || m.Granted == 0 && m.Resends == 0 {
		return Skip
	}
	auth := m.authorised(c.P)
	if got := m.Received(); got >= auth || m.Seen.Covers(0, auth) {
		return Skip
	}
	start, since, ticks, what := resendCountStart(c.P, r, m, e)
	gap, bound := e.Time.Sub(start), c.P.LateTicks(ticks)
	if gap <= bound {
		return Pass()
	}
	if gap >= c.P.Ticks(c.P.TimeoutTicks) {
		return Skip // past the timeout: the count must have been reset unseen
	}
	if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
		// Its RESEND may have been lost before the capture point.
		return Downgrade(CauseLossBefore, ev, "%s from %v %v after %s, with no %s seen", witness, e.Src, gap.Round(time.Microsecond), since, what)
	}
	return Violation("%s shows %v still holds RPC %d %v after %s, with %d of the %d bytes it authorised of the %s received, and no %s since; %d ticks of %v stretched by timer_drift %g plus slack allow %v",
		witness, e.Src, r.Key.ClientID, gap.Round(time.Microsecond), since, m.Received(), auth, msgName(!e.FromClient()), what, ticks, c.P.Tick, c.P.TimerDrift, bound).WithSlack(bound - c.P.Ticks(ticks)).WithLate(gap - bound).WithSince(start)
}

// resendCountStart returns when the timer of e's sender began counting
// towards its next RESEND for message m of RPC r (silenceStart, or its
// latest RESEND round when later), the ticks it may take from there
// (resend_ticks+1 to a first round, resend_interval+1 to the next:
// homa_timer_check_rpc, whose first pass may come a tick late) and which
// round is due ("first RESEND round" or "next RESEND round").
func resendCountStart(p *Params, r *RPC, m *Message, e *Event) (start time.Time, since string, ticks int, round string) {
	start, since = silenceStart(r, e)
	if maybe := time.Unix(0, r.maybeRound); e.FromClient() && r.maybeRound != 0 && maybe.After(start) && maybe.After(m.res().RoundStart) {
		// A RESEND taken for part of a NEED_ACK answer that may have
		// been the timer's round.
		return maybe, "its RESEND that may have been a round", p.ResendInterval + 1, "next RESEND round"
	}
	if !m.res().RoundStart.IsZero() && m.res().RoundStart.After(start) {
		return m.res().RoundStart, fmt.Sprintf("its previous RESEND round (frame %d)", m.res().RoundFrame), p.ResendInterval + 1, "next RESEND round"
	}
	return start, since, p.ResendTicks + 1, "first RESEND round"
}

// busyAnswers returns the message whose sender sent BUSY e and the latest
// RESEND for it, which the BUSY may answer (HOMA-RESEND-015, -027). ok is
// false, with the result to give, when there is none within
// response_timeout (Skip), or when the server's RPC_UNKNOWN restarted the
// client's request (Pass: every byte sent waits for retransmission, RTX-09).
func busyAnswers(c *Ctx, e *Event) (m *Message, rs ResendSeen, v Result, ok bool) {
	r := c.T.Lookup(e)
	if r == nil {
		return nil, rs, Skip, false
	}
	m = r.Msg(e.Packet.Role())
	rs = m.res().LastResend
	if rs.Time.IsZero() || e.Time.Sub(rs.Time) > c.P.ResponseTimeout || e.Time.Before(rs.Time) {
		return nil, rs, Skip, false
	}
	if e.FromClient() && r.Unknown && !r.UnknownFromClient && e.Time.Sub(r.UnknownTime) <= c.P.ResponseTimeout {
		return nil, rs, Pass(), false
	}
	return m, rs, Result{}, true
}

// isNothingProbe reports whether rs is the RESEND {0, 100} that
// linux_6.1.38 and main before be5081e (2025-06) send for a message of
// which they hold no byte, whatever its length: the sender answers with
// at least one whole packet (homa_timer.c homa_check_rpc). Its 100 bytes
// ask for the message's first packet, so they claim no authorisation: an
// 8-byte response asked for so is not a RESEND past what was granted.
func isNothingProbe(p *Params, rs wire.Resend) bool {
	return (p.Wire == wire.Version2024 || p.Wire == wire.Version2025) && rs.Offset() == 0 && rs.Length() == 100
}

// resendAsksOpen is HOMA-RESEND-012's Trigger: it judges RESEND e at once
// (Obligation.Now), but for one whose end passes only the GRANTs seen so
// far, which it holds until a GRANT from e's sender for the RPC to that
// end or beyond (homa_grant.c raises msgin.granted before it sends the
// GRANT, and homa_timer.c may RESEND up to it in between) or slack passes.
func resendAsksOpen(c *Ctx, e *Event) (Obligation, bool) {
	if e.Type() != wire.TypeResend {
		return Obligation{}, false
	}
	res, end := resendAsks(c, e, false)
	if _, dup := c.Net.Duplicate(); end == 0 || dup {
		return Obligation{Now: res}, res.Status != NotApplicable
	}
	rest, _ := resendAsks(c, e, true)
	_, m := grantMsg(c, e)
	at, slack, recv, sender, key, frame, auth := e.Time, c.P.Slack, e.Src, e.Dst, KeyOf(e), e.Frame, uint64(m.authorised(c.P))
	ours := func(x *Event, from netip.Addr, t wire.PacketType) bool {
		return x.Err == nil && x.ICMP == nil && x.Src == from && x.Type() == t && KeyOf(x) == key
	}
	grants := func(x *Event) bool {
		return ours(x, recv, wire.TypeGrant) && uint64(x.Packet.Grant().Offset()) >= end
	}
	return Obligation{
		Key:    resendHeld{frame},
		Expect: fmt.Sprintf("GRANT from %v for RPC %d to offset %d or beyond", recv, key.ClientID, end),
		// Decided by that GRANT, by slack passing, or by DATA past what
		// the receiver had authorised before the RESEND: the sender's
		// answer to the RESEND's own authority (RTX-08), after which a
		// GRANT answers that DATA, not a raise the RESEND raced.
		Match: func(c *Ctx, x *Event) bool {
			return x.Time.Sub(at) > slack || grants(x) || ours(x, sender, wire.TypeData) && uint64(x.Packet.Data().Offset())+uint64(x.Packet.Data().DataLen()) > auth
		},
		Confirm: func(c *Ctx, x *Event) Result {
			if x.Time.Sub(at) <= slack && grants(x) {
				return rest // it had granted that far: judged on the rest
			}
			return res
		},
		// A capture that ends first is judged on what it shows, as
		// before the hold: the GRANT never came.
		Unseen: func() Result { return res },
	}, true
}

// resendHeld keys a RESEND HOMA-RESEND-012 holds (resendAsksOpen) by its
// frame: each such RESEND is its own finding.
type resendHeld struct{ frame int }

// resendAsks judges RESEND e for HOMA-RESEND-012. end is nonzero when the
// result is a violation only because the RESEND ends at end, past what
// the capture shows its sender authorised so far; granted judges e as if
// it had authorised that (the rest of the rule).
func resendAsks(c *Ctx, e *Event, granted bool) (res Result, end uint64) {
	rs := e.Packet.Resend()
	off, length := rs.Offset(), rs.Length()
	switch {
	case rs.IsResendAll() && c.P.Wire == wire.Version2024:
		return Violation("RESEND with length -1: linux_6.1.38 asks {0, 100} when nothing arrived").Alone(), 0 // its own fields
	case rs.IsResendAll() && off != 0:
		return Violation("RESEND length -1 at offset %d: \"nothing received\" is always offset 0", off).Alone(), 0 // its own fields
	case length == 0 && c.P.Wire != wire.Version2024:
		return Violation("RESEND of length 0 at offset %d: main asks for gaps, the tail or {0, -1}", off).Alone(), 0 // its own fields
	}
	r, m := grantMsg(c, e)
	if r == nil {
		return Skip, 0
	}
	if m.Length == 0 {
		if c.P.Wire == wire.VersionCurrent && e.FromClient() && !rs.IsResendAll() && len(m.Seen) == 0 && m.Earlier == nil {
			// main asks {0, -1} while msgin.length < 0;
			// a response byte the capture missed (before it
			// began, or dropped) would explain another form.
			return Violation("client RESEND {%d, %d} for a response of which the capture shows no byte: main asks {0, -1} while nothing of the response arrived", off, int32(length)), 0
		}
		return Skip, 0
	}
	switch {
	case isBufferWakeup(c.P, rs):
		return Pass(), 0
	case (c.P.Wire == wire.Version2024 || c.P.Wire == wire.Version2025) && int32(length) < 0:
		// linux_6.1.38 asks for [recv_end, granted) even when
		// the sender ran past granted: a negative length
		// (shared capture linux-6.1 c, frame 603); so does
		// linux_6.10.6 (homa_timer.c homa_check_rpc) and main
		// until be5081e.
		return Pass(), 0
	}
	if end := uint64(off) + uint64(length); !rs.IsResendAll() && c.P.Wire == wire.VersionCurrent && end > uint64(m.Length) {
		// homa_request_retrans asks for its gaps, all below
		// recv_end, and for [recv_end, granted), and granted
		// never passes the length (homa_message_in_init,
		// homa_grant_update_offset): bytes past message_length,
		// which every DATA of the message carries, are never
		// asked for, whatever came before the capture or was
		// lost.
		return Violation("RESEND [%d, %d) reaches past the message's end: its DATA give message_length %d, and a receiver asks only for bytes below what it granted, never past the length", off, end, m.Length).Alone(), 0
	}
	if !rs.IsResendAll() && !isNothingProbe(c.P, rs) {
		auth := m.authorised(c.P)
		if end := uint64(off) + uint64(length); end > uint64(auth) && !granted {
			if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
				return Downgrade(CauseLossBefore, ev, "RESEND [%d, %d) reaches past the %d bytes the capture shows %v authorised", off, end, auth, e.Src), 0
			}
			return timedOut(c, r, e, Violation("RESEND [%d, %d) asks for bytes %v never authorised: its grant horizon was %d (U %d, highest GRANT %d)",
				off, end, e.Src, auth, c.P.Unsched(m.Length), m.Granted)), end
		}
	}
	// Bytes it already has: all requested bytes seen more than
	// slack earlier (the last DATA of the message is that old).
	if e.Time.Sub(m.LastData) <= c.P.Slack || answersNeedAck(c.P, r, e) && !m.Complete {
		return Pass(), 0
	}
	lacking, startHeld := false, false
	var heldIn uint32 // bytes of the range it holds (main's whole-gap check)
	switch {
	case rs.IsResendAll():
		lacking = m.Received() == 0
	case length == 0:
		lacking = true
	default:
		end := min(uint64(off)+uint64(length), uint64(m.Length))
		lacking = uint64(off) >= end || !m.Seen.Covers(off, uint32(end))
		// homa_request_retrans begins each RESEND at a byte
		// it lacks: a gap's first, or the first past what
		// arrived (linux_6.1.38's one range: the first gap's).
		// A receiver that had no buffers dropped what the
		// capture saw before its wakeup (homa_data_pkt with
		// num_bpages 0): only bytes seen since show what it
		// holds (helper-141).
		held := m.Seen
		if !m.WakeupTime.IsZero() {
			held = byteranges.Set{}
			if m.retx != nil {
				held = m.retx.sinceWakeup
			}
		}
		startHeld = uint64(off) < end && held.Covers(off, off+1)
		if c.P.Wire == wire.VersionCurrent && uint64(off) < end && (c.P.NumPriorities >= 2 || !m.ResendAll) {
			// (With one priority level a buffer wakeup's
			// {0, -1} looks like any other, so after one the
			// receiver may have dropped bytes the capture saw:
			// helper-149.)
			// main, net-next and linux_6.13.9 ask for one gap
			// (msgin.gaps) or the tail past recv_end per
			// RESEND: every byte of the range is one the
			// receiver lacks (helper-148's RESEND running past
			// its gap).
			heldIn = held.Overlap(off, uint32(end))
		}
	}
	if lacking && !startHeld && heldIn == 0 && !m.Complete {
		return Pass(), 0
	}
	what := fmt.Sprintf("RESEND {%d, %d} although the %s's bytes it asks for arrived (last DATA %v earlier)", off, int32(length), msgName(!e.FromClient()), e.Time.Sub(m.LastData).Round(time.Microsecond))
	if lacking && startHeld {
		what = fmt.Sprintf("RESEND {%d, %d} begins at byte %d of the %s, which arrived (last DATA %v earlier): a RESEND begins at a byte its sender lacks", off, int32(length), off, msgName(!e.FromClient()), e.Time.Sub(m.LastData).Round(time.Microsecond))
	} else if lacking {
		what = fmt.Sprintf("RESEND {%d, %d} asks for %d bytes of the %s that arrived (last DATA %v earlier): each RESEND asks for one gap, or the granted tail, all of it lacking", off, int32(length), heldIn, msgName(!e.FromClient()), e.Time.Sub(m.LastData).Round(time.Microsecond))
	}
	if m.Complete {
		what = fmt.Sprintf("RESEND {%d, %d} for a %s that arrived complete %v earlier (frame %d)", off, int32(length), msgName(!e.FromClient()), e.Time.Sub(m.CompleteTime).Round(time.Microsecond), m.CompleteFrame)
	}
	if e.FromClient() && r.Acked && e.Time.Sub(r.AckTime) > c.P.Slack {
		// The client's own ack shows it had the whole response
		// (homa_need_ack_pkt acks only then, homa_peer_add_ack
		// once the application has it) or no longer has the RPC:
		// no loss after the capture point excuses a RESEND.
		return Violation("%s, after the client's own ack of the RPC (frame %d)", what, r.AckFrame).With(r.AckFrame).WithSlack(c.P.Slack).WithLate(e.Time.Sub(r.AckTime) - c.P.Slack), 0
	}
	if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
		return Downgrade(CauseLossAfter, ev, "%s", what), 0
	}
	if why, ok := recreatedUnseen(c, r, e); ok {
		return Unsure("%s: %s", what, why), 0
	}
	if why, ok := timedOutUnsure(r, e); ok {
		return Unsure("%s: %s", what, why), 0
	}
	// The bytes it asks for had all arrived by the message's last DATA,
	// more than slack before: a receiver that processed them late, held
	// up by a stall, may not have had them when its timer decided.
	return timedOut(c, r, e, Violation("%s", what).WithSlack(c.P.Slack)).LateAtMost(e.Time.Sub(m.LastData) - c.P.Slack), 0
}
