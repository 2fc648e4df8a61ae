package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// ackRules: NEED_ACK, ACK and piggy-backed acks (HomaModule homa_timer.c,
// homa_incoming.c homa_need_ack_pkt, homa_ack_pkt, homa_peer.c).
func ackRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ACK-001", Level: Must,
			Facts:     []string{"ACK-01"},
			Statement: "A server sends NEED_ACK for an RPC only after it has transmitted the whole response.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (for the server's own RPCs, which homa_dispatch_pkts creates, homa_rpc_alloc_server, only from request DATA)",
			Capture:   "a NEED_ACK with no response byte before it is judged where the capture point is the server's own link and the RPC began in the capture; elsewhere the response may have been lost before the capture point, unless the capture holds no request DATA of the RPC either and its client id is above that of the newest RPC with a request of at most defer_min_bytes the capture saw the client begin, more than response_timeout plus slack after the capture's start (ids only grow, so its request would have passed the capture point: the server never had the RPC); one after some of the response but not all of it is inconclusive where the capture shows loss between the two hosts before the capture point or holds the server's packets as delivered, at the delivered point or on the client's own link, with the whole network before them: the rest may have been lost there",
			Property: Each{Types: []wire.PacketType{wire.TypeNeedAck}, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r != nil && r.Response.Length == 0 && c.Net.CapturePoint().AtSender(e) && !c.startedBefore(r) {
					// On the server's own link every response byte it
					// transmitted shows before the NEED_ACK (the timer asks
					// only once tx_end reached the length): none shows.
					return Violation("NEED_ACK before the server transmitted any byte of the response")
				}
				if r == nil || r.Response.Length == 0 && r.Request.Length == 0 {
					if res := noRequestSeen(c, e, "NEED_ACK"); res.Status == Violated {
						return res
					}
				}
				if r == nil || r.Response.Length == 0 {
					return Unsure("NEED_ACK for an RPC whose response is not in the capture")
				}
				// Retransmissions count: first transmissions lost before the
				// capture point show up only as retransmitted bytes.
				if m := &r.Response; m.SentEnd < m.Length && !m.Seen.Covers(0, m.Length) {
					if ev, ok := c.Net.MayLoseBefore(e.Src, e.Dst, e.Frame); ok {
						// The bytes not seen may have been sent and lost
						// before the capture point (their retransmission,
						// if any, still to come).
						return Downgrade(CauseLossBefore, ev, "NEED_ACK while only %d of %d response bytes were seen", m.Received(), m.Length)
					}
					return Violation("NEED_ACK while only %d of %d response bytes were sent", m.Received(), m.Length)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ACK-002", Level: Should,
			Facts:     []string{"ACK-02", "ABT-01"},
			Statement: "A client answers NEED_ACK for an RPC whose response it has fully received with an ACK (or RESENDs for what it lacks).",
			Source:    "HomaModule homa_incoming.c homa_need_ack_pkt",
			Capture:   "a NEED_ACK lost after the capture point is never answered",
			Property: Within{
				// The obligation starts at a repeated NEED_ACK: the server
				// sends one every tick until the RPC is freed (facts ACK-01),
				// so a repeat shows it is still waiting. A single NEED_ACK
				// may have gone to a closed client socket, which answers
				// with ICMP port unreachable (not in a Homa trace) and makes
				// the server abort the RPC (facts ID-04, §2).
				TriggerTypes: []wire.PacketType{wire.TypeNeedAck},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeNeedAck {
						return Obligation{}, false
					}
					if r := c.T.Lookup(e); r == nil || r.NeedAcks == 0 {
						return Obligation{}, false
					}
					k := KeyOf(e)
					return Obligation{Key: k, Expect: "ACK (or RESEND) from the client",
						Match:     func(c *Ctx, x *Event) bool { return acksRPC(x, k) },
						MatchICMP: unreachableFor(e)}, true
				},
				// A client that lacks part of the response RESENDs at
				// once on main but ignores NEED_ACK on linux_6.1.38 and
				// RESENDs at its next timer round (homa_need_ack_pkt).
				Bound: func(p *Params) time.Duration { return p.NeedAckAnswerBound() },
			},
		},
		{
			ID: "HOMA-ACK-003", Level: Must,
			Facts:     []string{"ACK-04"},
			Statement: "Once the client has acknowledged an RPC, the server sends no more NEED_ACK for it, nor any response DATA, GRANT, RESEND or BUSY, unless a request packet arriving after the ack created the RPC anew.",
			Source:    "HomaModule homa_incoming.c homa_ack_pkt, homa_rpc_acked (the RPC is freed: homa_rpc_end), homa_dispatch_pkts (only request DATA creates a server RPC)",
			Capture:   "slack covers a packet crossing the ACK on the wire; loss toward the server after the capture point makes it inconclusive; so does queueing where the capture stamps the ack as its client sent it with the whole path to the server still ahead (a capture of packets as sent, a tap on the client's link): there a packet up to response_timeout plus slack after the ack is inconclusive (a congested switch held an ack 2 ms)",
			Property: Each{Types: []wire.PacketType{wire.TypeNeedAck, wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeBusy}, Usual: Usual{FactLive, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() || e.Segment > 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || !r.Acked {
					if e.Type() != wire.TypeNeedAck {
						return Skip
					}
					return Pass()
				}
				if r.RecreatedTime.After(r.AckTime) {
					return Pass() // a late request packet re-created it (AMO-01)
				}
				if late := e.Time.Sub(r.AckTime); late > c.P.Slack {
					if ev, ok := c.Net.LostAfter(e.Dst, e.Src); ok {
						return Downgrade(CauseLossAfter, ev, "%s %v after the client's ack (frame %d), which may not have reached the server", e.Type(), late.Round(time.Microsecond), r.AckFrame)
					}
					if cp := c.Net.cp; (cp.Kind == CaptureSent || cp.Kind == CaptureHost && cp.Host == e.Dst) && late <= c.P.AnswerBound() {
						return Downgrade(CauseQueueing, Evidence{r.AckFrame, fmt.Sprintf("the ack, stamped as %v sent it, had the whole path to %v ahead of it", e.Dst, e.Src)},
							"%s %v after the client's ack (frame %d), which may still have been on its way to the server (response_timeout %v plus slack)", e.Type(), late.Round(time.Microsecond), r.AckFrame, c.P.ResponseTimeout)
					}
					return Violation("%s %v after the client acknowledged the RPC (frame %d): the server freed it", e.Type(), late.Round(time.Microsecond), r.AckFrame).With(r.AckFrame).WithSlack(c.P.Slack).WithLate(late - c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-ACK-004", Level: Must,
			Facts:     []string{"ACK-03", "ACK-02", "RTX-10", "ID-01"},
			Statement: "A client acknowledges only RPCs whose response it has completely received, or that it may have given up (its server silent for timeout_ticks, less 2 ticks and slack, while the client had nothing of its own to send, and no RESEND, DATA or GRANT from the client after that silence: HomaModule before main's 8400d1f, linux_6.13.9 among them, acks a failed call), or, in an ACK's header answering NEED_ACK, an RPC it no longer has; each ack goes to the RPC's own server, once (in one ACK's entries or piggy-backed on the first transmissions of one message: another entry naming it more than jitter later, or at once in another carrier (another message's DATA, an ACK after DATA), is a violation; a retransmission repeats the ack its segment first carried, never a new one), and names the RPC's server port (linux_6.1.38: and its client port) and a client id (even, nonzero), never the RPC whose request carries it; an ACK's entries name distinct RPCs.",
			Source:    "HomaModule homa_peer.c homa_peer_add_ack (called when the application receives the response; the ack is queued once, on the RPC's own peer; linux_6.1.38 also writes the RPC's client port, which homa_rpc_acked's homa_find_server_rpc matches), homa_peer_get_acks (hands acks out and removes them, so one ACK's entries are distinct); homa_outgoing.c homa_resend_data (a retransmission repeats its original's header); homa_incoming.c homa_need_ack_pkt (an RPC the client does not have is acked in the header); homa_rpc.c homa_rpc_alloc_client (ids from next_outgoing_id, which only grows)",
			Capture:   "the response must be in the capture; acks for RPCs that started before it are inconclusive, unless the client's RPC with that id (ids are host-wide) runs with another server and began in the capture more than jitter before the ack (a module reload, which reuses ids, takes far longer), or an entry's id is above that of the newest RPC with a request of at most defer_min_bytes the capture saw the client begin, more than response_timeout plus slack after the capture's start (ids only grow, and such a request leaves as its id is allocated, never held by the pacer, so that RPC began later and its request would be in the capture); an ACK header naming an RPC whose client had answered RPC_UNKNOWN for it passes, and one answering NEED_ACK for an RPC whose response is incomplete is inconclusive: the client's timer (after timeout_ticks without DATA, GRANT or BUSY from the server) or its application may have aborted and freed the RPC, which sends no packet",
			Property: Each{Types: []wire.PacketType{wire.TypeAck, wire.TypeData}, Needs: NeedsPiggyAck, Payload: true, Check: func(c *Ctx, e *Event) Result {
				// ACK packets come from clients; a piggy-backed ack rides in
				// any DATA, request or response, and names an RPC whose
				// client is the DATA's source (homa_tx_data_pkt_alloc).
				if e.Type() == wire.TypeAck && !e.FromClient() {
					return Skip
				}
				// Each ack names an RPC and its server port (0: the ACK
				// header's RPC, named by the packet's ports).
				type named struct {
					id   uint64
					port uint16
					// cport is the entry's client_port (linux_6.1.38's
					// ack entries only; 0 elsewhere).
					cport uint16
				}
				var ids []named
				if e.Type() == wire.TypeData {
					if e.Segment > 0 {
						return Skip
					}
					d := e.Packet.Data()
					if d.AckClientID() == 0 {
						return Skip
					}
					if d.Retransmit() != 0 {
						// A retransmission (or restart) copies its segment's
						// header, ack included (homa_resend_data): it hands
						// out no pending ack of its own.
						if r := c.T.Lookup(e); r != nil {
							if l := r.Msg(e.Packet.Role()).payload; l != nil {
								if first, frame, ok := l.firstAck(e.Offset); ok && frame != e.Frame && first != ackHash(d) {
									return Violation("retransmitted DATA at offset %d carries an ack for RPC %d that the copy of the segment in frame %d did not: a retransmission copies its segment's header (homa_resend_data) and hands out no pending ack",
										e.Offset, d.AckClientID(), frame).With(frame)
								}
							}
						}
					}
					ids = append(ids, named{d.AckClientID(), d.AckServerPort(), d.AckClientPort()})
				} else {
					ids = append(ids, named{wire.ClientID(e.Packet.SenderID()), 0, 0})
					a := e.Packet.Ack()
					for i := range a.ValidAcks() {
						n := named{a.Entry(i).ClientID, a.Entry(i).ServerPort, a.Entry(i).ClientPort}
						for j := 1; j < len(ids); j++ {
							if ids[j] == n {
								// homa_peer_get_acks copies out distinct
								// pending acks, each queued once
								// (homa_peer_add_ack); the header may name
								// one of them (homa_need_ack_pkt), the
								// entries never twice.
								return Violation("ack entries %d and %d both name RPC %d (server port %d): the client hands each pending ack out once", j-1, i, n.id, n.port).Alone()
							}
						}
						ids = append(ids, n)
					}
				}
				res := Skip
				var gone Result // the header's RPC the client may have freed
				for i, n := range ids {
					id := n.id
					if entry := e.Type() == wire.TypeData || i > 0; entry && (id == 0 || id&1 != 0) {
						// homa_peer_add_ack lists ids of RPCs the client
						// ended, and client ids are even and start at 2
						// (facts ID-01): a zero or odd entry acks nothing
						// the client had.
						return Violation("ack entry %d names id %d, which is no client's RPC id (client ids are even and nonzero)", max(i-1, 0), id).Alone()
					}
					if e.Type() == wire.TypeData && e.FromClient() && id == wire.ClientID(e.Packet.SenderID()) && n.port == e.Packet.Common().Dport() {
						// The request of an RPC is sent before its response
						// can be complete; the client ends the RPC, and
						// stops sending it, only after that.
						return Violation("request DATA of RPC %d carries an ack for RPC %d itself: its response cannot be complete while its request is being sent", id, id).Alone()
					}
					r := c.T.rpcs[RPCKey{Client: e.Src, Server: e.Dst, ClientID: id}]
					switch {
					case r == nil:
						if o := c.T.byClientID[clientIDKey{e.Src, id}]; o != nil && !o.gone && o.Key.Server != e.Dst && e.Time.Sub(o.First) > c.P.Jitter {
							// Client ids are host-wide (facts ID-02): id is
							// the client's RPC with another server, begun
							// in the capture, and homa_peer_add_ack queues
							// an RPC's ack for its own server's peer only.
							return Violation("ack to %v for RPC %d, which is the client's RPC with %v (its first packet frame %d): an ack goes to the RPC's own server", e.Dst, id, o.Key.Server, o.FirstFrame).With(o.FirstFrame).About(o.Key)
						}
						if h := c.T.acked[e.Src]; h != nil {
							if _, ok := h.ackOf(id); ok {
								// A copy of an ack the capture showed
								// before, whose RPC the trace has since
								// forgotten: a long message's packets are
								// all built at sendmsg, each with the ack
								// pending then (homa_message_out_fill,
								// homa_peer_get_acks), and leave as
								// granted, seconds later on a slow path.
								// The first copy was judged.
								break
							}
						}
						if nw, after := c.T.beganAfterNewest(e.Src, id); (e.Type() == wire.TypeData || i > 0) && after {
							// Client ids only grow (homa_rpc_alloc_client):
							// id began after the newest short RPC the
							// capture saw the client begin, well inside the
							// capture, so its request would be in it. (An
							// ACK's header names what the server's NEED_ACK
							// named: not the client's choice.)
							return Violation("ack to %v for RPC %d, which the capture never showed: the client's newest RPC, %d, began at frame %d, and a higher id began later, so its request would have passed the capture point", e.Dst, id, nw.ID, nw.Frame).With(nw.Frame)
						}
						if res.Status == NotApplicable {
							res = Unsure("ack for RPC %d, which is not in the capture", id)
						}
					case (e.Type() == wire.TypeAck && i > 0 || e.Type() == wire.TypeData && e.Packet.Data().Retransmit() == 0) &&
						r.ackEntry != nil && (e.Time.Sub(r.ackEntry.Time) > c.P.Jitter || r.ackEntry.carrier != ackCarrier(e)) && (n.port == 0 || r.ServerPort == 0 || n.port == r.ServerPort) &&
						(e.Type() == wire.TypeAck || r.ackEntry.carrier != ackCarrier(e)):
						// homa_peer_add_ack queues an RPC's ack once, as the
						// client ends it, and homa_peer_get_acks removes
						// what it hands out (a retransmission copies its
						// original's header, ack included, and so does
						// every segment of one skb: DATA of the message
						// that carried it first are not judged; nor is a
						// copy within jitter in a carrier of the same kind,
						// which a capture recording a frame twice shows:
						// another message's DATA, or an ACK after DATA or
						// DATA after an ACK, is never such a copy).
						return Violation("ack entry for RPC %d, which an ack entry in frame %d (%v earlier) already named: the client hands each pending ack out once",
							id, r.ackEntry.Frame, e.Time.Sub(r.ackEntry.Time).Round(time.Microsecond)).With(r.ackEntry.Frame).About(r.Key)
					case n.port != 0 && r.ServerPort != 0 && n.port != r.ServerPort:
						// Client ids are unique per host (facts ID-02), so
						// the client has no RPC with this id on that port.
						return Violation("ack for RPC %d names server port %d, but RPC %d runs on port %d", id, n.port, id, r.ServerPort).With(r.FirstFrame).About(r.Key).Alone()
					case (e.Type() == wire.TypeData || i > 0) && e.Packet.Version() == wire.Version2024 && r.ClientPort != 0 && n.cport != r.ClientPort &&
						(n.port == 0 || n.port == r.ServerPort):
						// linux_6.1.38 homa_peer_add_ack writes the RPC's
						// own socket port, and the server finds the RPC by
						// client address, port and id (homa_rpc_acked,
						// homa_find_server_rpc): another port frees nothing.
						return Violation("ack for RPC %d names client port %d, but RPC %d runs from client port %d", id, n.cport, id, r.ClientPort).With(r.FirstFrame).About(r.Key).Alone()
					case !r.Response.Complete && c.startedBefore(r):
						// The response's bytes may have come before
						// the capture's start.
						if res.Status != Inconclusive {
							res = Downgrade(CauseCaptureStart, Evidence{Frame: r.FirstFrame, Why: fmt.Sprintf("RPC %d's first packet in the capture is not its request's first bytes", id)},
								"ack for RPC %d, but %s", id, responseHeld(r))
						}
					case !r.Response.Complete && i == 0 && e.Type() == wire.TypeAck:
						// An ACK's header answers NEED_ACK, also for an RPC
						// the client no longer has (homa_need_ack_pkt).
						if !r.ForgotTime.IsZero() {
							res = Pass() // it answered RPC_UNKNOWN: no RPC
						} else if why, ok := clientTimedOut(c.P, r, e.Time); ok {
							gone = Unsure("ACK for RPC %d, but %s: %s", id, responseHeld(r), why)
						} else if r.NeedAcks == 0 {
							// Not an answer to NEED_ACK: an overflow ACK's
							// header names the RPC just completed.
							return Violation("ack for RPC %d, but %s", id, responseHeld(r)).With(r.FirstFrame).About(r.Key)
						} else {
							// The application may have aborted the RPC
							// (HOMAIOCABORT, a cancelled request), which
							// frees it and puts nothing on the wire.
							gone = Unsure("ACK for RPC %d, but %s: its application may have aborted it, which sends no packet, and the client then answers NEED_ACK for an RPC it no longer has", id, responseHeld(r))
						}
					case !r.Response.Complete:
						if clientGaveUp(c.P, r, e.Time) {
							// The client may have timed the RPC out: it no
							// longer has it, and an ack only lets the
							// server free it (facts ACK-04). HomaModule
							// queued the ack of every client RPC
							// homa_recvmsg returned, failed ones too, until
							// main's 8400d1f (2026-04-14, a buffer-pool fix,
							// not a protocol change); linux_6.13.9 still
							// does. HOMA-ACK-012 charges a RESEND for it
							// after the ack.
							if res.Status == NotApplicable {
								res = Pass()
							}
							continue
						}
						return Violation("ack for RPC %d, but %s", id, responseHeld(r)).With(r.FirstFrame).About(r.Key)
					default:
						res = Pass()
					}
				}
				if gone.Status == Inconclusive {
					return gone
				}
				return res
			}},
		},
		{
			ID: "HOMA-ACK-005", Level: Must,
			Facts:     []string{"ACK-01"},
			Statement: "A server's first NEED_ACK for an RPC comes request_ack_ticks timer ticks or more after the last bytes of its response were first transmitted.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (done_timer_ticks, request_ack_ticks)",
			Capture:   "the timer may note the response complete up to one tick after it was sent, so one tick less is allowed; jitter covers capture noise and the time the response needs to reach a capture point on the client's side",
			Property: Each{Types: []wire.PacketType{wire.TypeNeedAck}, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || r.Response.Length == 0 {
					return Unsure("NEED_ACK for an RPC whose response is not in the capture")
				}
				if r.NeedAcks > 0 {
					return Skip // the repeats come every tick (facts ACK-01)
				}
				m := &r.Response
				if m.AllSentTime.IsZero() {
					return Unsure("NEED_ACK, but the first transmission of the response's last bytes is not in the capture (%d of %d bytes seen first-sent)", m.SentEnd, m.Length)
				}
				gap := e.Time.Sub(m.AllSentTime)
				if gap < 0 {
					return Unsure("capture timestamps step backwards (NEED_ACK %v before the response's last bytes)", (-gap).Round(time.Microsecond))
				}
				// The timer notes tx_end = length at its next pass and
				// sends NEED_ACK request_ack_ticks passes later; the
				// first pass can come at once, so one whole tick less.
				need := c.P.Ticks(c.P.RequestAckTicks-1) - c.P.Jitter
				if gap < need {
					return Violation("first NEED_ACK %v after the response's last bytes were first sent (frame %d); request_ack_ticks %d (tick %v) need ≥ %v less jitter %v",
						gap.Round(time.Microsecond), m.AllSentFrame, c.P.RequestAckTicks, c.P.Tick, c.P.Ticks(c.P.RequestAckTicks-1), c.P.Jitter).With(m.AllSentFrame).WithSlack(c.P.Jitter).WithEarly(need-gap, m.AllSentTime, EarlyFromOwn)
				}
				return Pass().WithSlack(c.P.Jitter)
			}},
		},
	}
}

// ackRules2: NEED_ACK pacing and when ACK packets may be sent (HomaModule
// homa_timer.c homa_timer_check_rpc, homa_incoming.c homa_need_ack_pkt,
// homa_peer.c homa_peer_add_ack).
func ackRules2() []*Rule {
	needAck := []wire.PacketType{wire.TypeNeedAck}
	return []*Rule{
		{
			ID: "HOMA-ACK-006", Level: Must,
			Facts:     []string{"ACK-01"},
			Statement: "A server sends at most one NEED_ACK per timer tick for an RPC: on its own link, the k-th repeat comes at least k ticks, less timer_drift of a tick and jitter, after the first NEED_ACK.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (one NEED_ACK per RPC per timer pass), homa_plumbing.c homa_timer_main (the hrtimer is re-armed a tick after each pass ends, so passes are at least a tick apart)",
			Capture:   "judged only where the capture point is on the server's side: queueing between the server and a tap can bunch NEED_ACKs. Counted from the first NEED_ACK, not between neighbours, and the first may have come from a pass up to timer_drift of a tick late: a timer that keeps a periodic schedule runs its next pass on time (HomaModule's passes are a tick or more apart)",
			Property: Each{Types: needAck, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil || r.NeedAcks == 0 || e.FromClient() || !c.Net.atSender(e.Src) {
					return Skip
				}
				k := r.NeedAcks // this is the k-th repeat
				gap := e.Time.Sub(r.NeedAckFirst)
				late := time.Duration(c.P.TimerDrift * float64(c.P.Tick))
				if need := c.P.Ticks(k) - late - c.P.Jitter; gap < need {
					return Violation("NEED_ACK repeat %d for this RPC only %v after the first: at most one per tick (%v), so ≥ %v less timer_drift %g of a tick and jitter %v", k, gap.Round(time.Microsecond), c.P.Tick, c.P.Ticks(k), c.P.TimerDrift, c.P.Jitter).WithSlack(late+c.P.Jitter).WithEarly(need-gap, r.NeedAckFirst, EarlyFromOwn)
				}
				return Pass().WithSlack(late + c.P.Jitter)
			}},
		},
		{
			ID: "HOMA-ACK-007", Level: Must,
			Facts:     []string{"ACK-02", "ACK-03"},
			Statement: "Only clients send ACK packets, each in answer to its own earlier NEED_ACK for the RPC its header names (ports swapped: the RPC's own ports), or, carrying 5 acks, when a sixth pending ack to a server overflowed (its header then names that sixth RPC, never one of its five entries): an RPC gets no more answering ACKs than NEED_ACKs.",
			Source:    "HomaModule homa_incoming.c homa_need_ack_pkt, homa_peer.c homa_peer_add_ack (the only senders of ACK packets)",
			Capture:   "counted, not timed: a loaded client answers a NEED_ACK up to hundreds of milliseconds after a tap saw it, so any earlier NEED_ACK not yet answered explains an ACK (only the ACK's receiver, the RPC's server, sends NEED_ACKs for it, so a tap on either host's link sees them all)",
			Property: Each{Types: []wire.PacketType{wire.TypeAck}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return Violation("ACK with odd sender_id %d: only clients acknowledge", e.Packet.SenderID()).Alone() // its own field
				}
				r := c.T.Lookup(e)
				if r != nil && r.ServerPort != 0 && !sameSockets(r, e) {
					// homa_need_ack_pkt swaps the NEED_ACK's ports and an
					// overflow ACK goes out on its RPC (homa_xmit_control):
					// either way the header's RPC names the ports.
					sp, dp := e.Packet.Common().Sport(), e.Packet.Common().Dport()
					return Violation("ACK for RPC %d from port %d to port %d, but the RPC runs between client port %d and server port %d (frame %d)",
						r.Key.ClientID, sp, dp, r.ClientPort, r.ServerPort, r.FirstFrame).With(r.FirstFrame).Alone()
				}
				if int(e.Packet.Ack().NumAcks()) == c.P.MaxAcksPerPkt {
					// An overflow ACK goes out on the RPC whose ack
					// overflowed (homa_peer_add_ack), never queued: its
					// header names a sixth RPC, not one of its five
					// entries. Only the ACK answering a NEED_ACK may name
					// in its header an RPC whose ack it also carries.
					if !headerInEntries(e) || r != nil && r.NeedAcks > r.AckPkts {
						return Pass()
					}
					if r == nil {
						return Unsure("ACK with %d acks names RPC %d in its header and in an entry, but the capture holds no packet of that RPC (a NEED_ACK for it, which such an ACK answers, may precede the capture)", c.P.MaxAcksPerPkt, wire.ClientID(e.Packet.SenderID()))
					}
					return Violation("ACK with %d acks names RPC %d in its header and in an entry, yet answers no NEED_ACK for it: an overflow ACK's header names the RPC whose ack overflowed (a sixth, sent at once, never pending), not one of the %d pending",
						c.P.MaxAcksPerPkt, r.Key.ClientID, c.P.MaxAcksPerPkt)
				}
				if r != nil && r.NeedAcks > r.AckPkts {
					return Pass() // however late: a loaded client answers late
				}
				if r == nil {
					return Unsure("ACK for RPC %d with %d acks, but the capture holds no packet of that RPC (its NEED_ACK may precede the capture)", wire.ClientID(e.Packet.SenderID()), e.Packet.Ack().NumAcks())
				}
				if r.NeedAcks == 0 {
					return Violation("ACK for RPC %d with %d acks and no NEED_ACK for it before: clients send ACK only when asked or when 5 acks are pending",
						r.Key.ClientID, e.Packet.Ack().NumAcks())
				}
				return Violation("ACK for RPC %d with %s, one more than the %s for it: clients send ACK only when asked or when 5 acks are pending",
					r.Key.ClientID, plural.Of(int(e.Packet.Ack().NumAcks()), "ack", "acks"), plural.Of(int(r.NeedAcks), "NEED_ACK", "NEED_ACKs"))
			}},
		},
		{
			ID: "HOMA-ACK-008", Level: Should,
			Facts:     []string{"ACK-01"},
			Statement: "While an RPC is not acknowledged, its server repeats NEED_ACK every tick: consecutive NEED_ACKs are at most one tick (stretched by timer_drift) plus slack apart.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (NEED_ACK on every pass once request_ack_ticks passed; server RPCs awaiting an ack never time out)",
			Capture:   "judged at each repeat; an ack, RPC_UNKNOWN or ICMP in between ends the series",
			Property: Each{Types: needAck, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil || r.NeedAcks == 0 || e.FromClient() || r.Acked || r.Unknown {
					return Skip
				}
				gap := e.Time.Sub(r.NeedAckTime)
				if bound := c.P.LateTicks(1); gap > bound {
					return Violation("NEED_ACK %v after the previous one for this unacknowledged RPC: one every tick (%v, drift %g, slack %v) allows %v",
						gap.Round(time.Microsecond), c.P.Tick, c.P.TimerDrift, c.P.Slack, bound).WithSlack(bound - c.P.Tick).WithLate(gap - bound).WithSince(r.NeedAckTime)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-ACK-011", Level: Should,
			Facts:     []string{"ACK-01"},
			Statement: "A server's first NEED_ACK for an RPC it has not seen acknowledged comes at most max(request_ack_ticks, 1)+1 timer ticks (stretched by timer_drift) plus slack after the last bytes of its response were first transmitted.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (every pass looks at every RPC: the first one after the response is out sets done_timer_ticks, NEED_ACK goes request_ack_ticks passes later; nothing resets it); linux_6.1.38 homa_timer.c homa_check_rpc (the same, from next_xmit_offset)",
			Capture:   "judged at the first NEED_ACK the capture shows (a server that never sends one may have closed its socket: HOMA-ACK-013 judges that where the socket shows it is still open); inconclusive where the capture shows packets between the hosts lost before the capture point (the first NEED_ACKs may be the lost ones)",
			Property: Each{Types: needAck, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil || r.NeedAcks > 0 || e.FromClient() || r.Acked || r.Unknown {
					return Skip // repeats: HOMA-ACK-008; after an ack: HOMA-ACK-003
				}
				m := &r.Response
				if m.Length == 0 || m.AllSentTime.IsZero() {
					return Skip // HOMA-ACK-005 says why
				}
				gap := e.Time.Sub(m.AllSentTime)
				// The first pass after the response is out notes it; the
				// NEED_ACK goes request_ack_ticks passes later, and never
				// in that first pass (request_ack_ticks 0 included).
				ticks := max(c.P.RequestAckTicks, 1) + 1
				bound := c.P.LateTicks(ticks)
				if gap <= bound {
					return Pass().WithSlack(c.P.Slack)
				}
				if ev, ok := c.Net.LostBetween(e.Src, e.Dst); ok {
					return Downgrade(CauseLossBefore, ev, "first NEED_ACK seen %v after the response's last bytes were first sent", gap.Round(time.Microsecond))
				}
				return Violation("first NEED_ACK %v after the response's last bytes were first sent (frame %d); request_ack_ticks %d: %d ticks of %v stretched by timer_drift %g plus slack allow %v",
					gap.Round(time.Microsecond), m.AllSentFrame, c.P.RequestAckTicks, ticks, c.P.Tick, c.P.TimerDrift, bound).With(m.AllSentFrame).WithSlack(bound - c.P.Ticks(ticks)).WithLate(gap - bound)
			}},
		},
	}
}

// ackRules3: the answer a client owes a NEED_ACK (HomaModule
// homa_incoming.c homa_need_ack_pkt).
func ackRules3() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ACK-009", Level: Must,
			Facts:     []string{"ACK-02"},
			Statement: "A client answers the server's NEED_ACK at once: holding the RPC's whole response (whether or not its application has read it), with its ack; on main (since be5081e) also holding the RPC without the whole response, with RESENDs for what it lacks. When its ack (ACK, an ACK entry or a piggy-backed ack) or a RESEND for the RPC comes, it comes within response_timeout plus slack of the first NEED_ACK; on main, one that never comes while the client goes on sending from the socket the NEED_ACK went to is late too.",
			Source:    "HomaModule homa_incoming.c homa_need_ack_pkt (ACK unless the RPC is still RPC_INCOMING with bytes remaining, then homa_request_retrans on main; linux_6.1.38 and linux_6.10.6 ignore it then; fix @93cb744; e9fb874: a client that took NEED_ACK for traffic never asked for the rest)",
			Capture:   "judged when the answer comes late, or, on the linux profile, when the client sends another packet from that socket after the deadline without answering (an open socket: main answers even for an RPC it no longer has; linux_6.10.6 ignores a NEED_ACK while response bytes it lacks were lost after the capture point); a client that never sends again may be gone (HOMA-ACK-002 warns); an incomplete response is judged on the linux profile only; inconclusive where the capture shows loss toward the client after the capture point or from it before",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeNeedAck},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeNeedAck || e.FromClient() {
						return Obligation{}, false
					}
					r := c.T.Lookup(e)
					if r == nil || r.Acked || !r.Response.Complete && c.P.Wire != wire.VersionCurrent {
						return Obligation{}, false
					}
					k, port, at, bound := KeyOf(e), e.Packet.Common().Dport(), e.Time, c.P.AnswerBound()
					// Only main answers every NEED_ACK (an ACK, or
					// RESENDs for what it lacks): linux_6.10.6 ignores
					// one for a response whose tail was lost after the
					// capture point (helper-141), so its silence while
					// it goes on sending proves nothing.
					open := c.P.Wire == wire.VersionCurrent
					return Obligation{Key: k, Expect: "ack (or RESEND) from the client for the RPC (or, unanswered, another packet from the socket the NEED_ACK went to)", OnlyLate: true,
						Match: func(c *Ctx, x *Event) bool {
							// Or, past the deadline, any packet from the
							// socket the NEED_ACK went to: it is open, so
							// the answer is overdue.
							return acksRPC(x, k) || open && x.Err == nil && x.Src == k.Client && x.Packet.Common().Sport() == port && x.Time.Sub(at) > bound
						},
						MatchICMP: unreachableFor(e)}, true
				},
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
	}
}

// acksRPC reports whether x is the client's answer to a NEED_ACK for RPC
// k: an ACK naming it (header or entry), DATA from the client host
// carrying its ack, or a RESEND for it.
func acksRPC(x *Event, k RPCKey) bool {
	if x.Err != nil || x.Src != k.Client || x.Dst != k.Server {
		return false
	}
	switch x.Type() {
	case wire.TypeAck:
		if !x.FromClient() {
			return false
		}
		if KeyOf(x) == k {
			return true
		}
		a := x.Packet.Ack()
		for i := range a.ValidAcks() {
			if a.Entry(i).ClientID == k.ClientID {
				return true
			}
		}
	case wire.TypeResend:
		return KeyOf(x) == k
	case wire.TypeData:
		return x.Packet.Data().AckClientID() == k.ClientID
	}
	return false
}

// responseHeld says how much of r's response the capture holds, for an
// ack that came before all of it: none (the response DATA has not begun,
// so its length is not known) or received of its length bytes.
func responseHeld(r *RPC) string {
	if r.Response.Length == 0 {
		return "no byte of its response is in the capture yet"
	}
	return fmt.Sprintf("only %d of its %d response bytes are in the capture", r.Response.Received(), r.Response.Length)
}

// ackCarrier is the carrier an ack entry in e has (ackEntry.carrier): the
// message e belongs to for DATA, the zero key for an ACK packet.
func ackCarrier(e *Event) rpcMsgKey {
	if e.Type() == wire.TypeData {
		return fromSender(e)
	}
	return rpcMsgKey{}
}

// headerInEntries reports whether ACK e names the RPC of its header (id
// and server port) in one of its entries.
func headerInEntries(e *Event) bool {
	a := e.Packet.Ack()
	id, port := wire.ClientID(e.Packet.SenderID()), e.Packet.Common().Dport()
	for i := range a.ValidAcks() {
		if en := a.Entry(i); en.ClientID == id && en.ServerPort == port {
			return true
		}
	}
	return false
}
