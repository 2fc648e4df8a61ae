package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// toPeer keys an event by its RPC and the side it was sent to (the side
// that may answer it); fromSender keys it by its RPC and its sender.
// (Both fill their result in place, keyInto: a key built from KeyOf's
// result was copied twice through the stack with overlapping moves,
// which stall store forwarding.)
func toPeer(e *Event) (k rpcMsgKey) {
	toPeerInto(&k, e)
	return k
}

// toPeerInto sets *k to toPeer(e), for a function that returns it as its
// own named result (HOMA-RESEND-006's A, asked at every packet).
func toPeerInto(k *rpcMsgKey, e *Event) {
	keyInto(&k.RPC, e)
	k.Sender = oppositeRole(e.Packet.Role())
}

func fromSender(e *Event) (k rpcMsgKey) {
	keyInto(&k.RPC, e)
	k.Sender = e.Packet.Role()
	return k
}

// rpcMsgKey identifies one side of one RPC (for obligations and After
// keys): the message that side sends, or the side expected to answer.
type rpcMsgKey struct {
	RPC    RPCKey
	Sender wire.Role
}

// resendRules: RESEND, BUSY, RPC_UNKNOWN and retransmission (HomaModule
// homa_timer.c homa_timer_check_rpc, homa_incoming.c homa_resend_pkt,
// homa_rpc_unknown_pkt, homa_outgoing.c homa_resend_data).
func resendRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-RESEND-001", Level: Must,
			Facts:     []string{"RTX-01", "RTX-02", "RTX-07", "RTX-12"},
			Statement: "An endpoint sends RESEND for an RPC only after it has heard no DATA, GRANT or BUSY for it for resend_ticks timer ticks.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (silent_ticks ≥ resend_ticks); fault @bf69583",
			Capture:   "the first tick may come up to one tick early; slack covers timer-thread delay; a RESEND for bytes the capture saw sent (they may have been lost after the capture point) is inconclusive, unless the capture holds the RPC's start (the request's first transmission of offset 0) too recent for any silence of resend_ticks: a server's RPC is no older than the first request packet any capture point saw, a client's no older than the first DATA its own link shows (not after a NEED_ACK, which it may answer); a RESEND less than Params.Reaction after the peer's packet (set where the capture's stamps cannot order the two, such as a tester stamping its own packets as it sends them), or where the capture holds the RESEND as delivered (the delivered point, or a tap on its receiver's own link) less than slack after it (the RESEND left its sender earlier by its time in queues), may have crossed it, and is inconclusive when the silence before that packet was long enough",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				rs := e.Packet.Resend()
				if isBufferWakeup(c.P, rs) {
					// The buffer-wakeup RESEND {0, -1} at level
					// num_priorities-2 is sent when receive buffer space
					// appears, not by the timer (homa_pool.c
					// homa_pool_check_waiting; facts GRANT-10, RTX-04).
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Unsure("RESEND for an RPC with no earlier packet in the capture: silence unknown")
				}
				heard, since := r.HeardFromServer, "the last DATA, GRANT or BUSY from the peer"
				lastOwn, heardType := r.LastResendFromClient(), r.HeardTypeFromServer
				if !e.FromClient() {
					heard, lastOwn, heardType = r.HeardFromClient, r.LastResendFromServer(), r.HeardTypeFromClient
				}
				peerHeard := heard // the peer's latest packet, as the capture saw it
				m := r.Msg(oppositeRole(e.Packet.Role()))
				if m.inRound(c.P, e, rs) && !heard.Before(m.res().RoundStart) && !m.GrantTime.After(m.res().RoundStart) {
					// One timer pass sends a round's RESENDs together
					// (homa_request_retrans, one per gap in ascending
					// order): a packet the capture shows among them came
					// after the pass decided, so the silence is the one
					// before the round began. A GRANT of the endpoint's own
					// in between shows it processed packets since: no
					// longer one pass. A packet stamped the same instant
					// as the round's start (microsecond stamps) may have
					// come after it too.
					heard, heardType = m.res().RoundHeard, m.res().RoundHeardType
					since = fmt.Sprintf("the last DATA, GRANT or BUSY from the peer before its round began (frame %d)", m.res().RoundFrame)
				}
				fromFirst := false
				if r.First.After(heard) {
					heard, since, heardType, fromFirst = r.First, "the RPC's first packet", 0, true
				}
				// A receiver that has everything it granted holds
				// silent_ticks at 0 until it grants more, so its own GRANT
				// restarts the count (homa_timer_check_rpc; the fix
				// @bf69583 of BR-18). The capture shows it had everything
				// when the first RESEND of a round asks only for bytes
				// that GRANT authorised (RESENDs of a round list the gaps
				// in ascending order; a lost byte below would come first).
				grantFrame := 0
				inRound := !lastOwn.IsZero() && e.Time.Sub(lastOwn) >= 0 && e.Time.Sub(lastOwn) < c.P.RoundWindow()
				if !m.GrantTime.IsZero() && m.GrantTime.After(heard) && !rs.IsResendAll() && rs.Offset() >= m.GrantedBefore && !inRound {
					heard, since, heardType = m.GrantTime, fmt.Sprintf("its own GRANT (frame %d) authorised the bytes it asks for", m.GrantFrame), 0
					grantFrame = m.GrantFrame
				}
				quiet := e.Time.Sub(heard)
				if e.FromClient() && !r.NeedAckTime.IsZero() && e.Time.Sub(r.NeedAckTime) >= 0 && e.Time.Sub(r.NeedAckTime) <= c.P.Slack {
					// A client whose response is incomplete answers NEED_ACK
					// with RESENDs at once (homa_need_ack_pkt), not on the timer.
					return Skip
				}
				// A RESEND for bytes the capture saw sent means those
				// packets were lost after the capture point: the receiver
				// heard less than the capture did, so its silence cannot be
				// judged from the capture.
				if need := c.P.Ticks(c.P.ResendTicks-1) - c.P.Jitter; quiet < need && m.Length > 0 && r.FirstIsStart && e.Time.Sub(r.First) < need &&
					(!e.FromClient() || c.Net.atSender(e.Src) && r.NeedAckTime.IsZero()) {
					// No loss makes the silence longer than the RPC's
					// life (helper-144): a server's begins when a request
					// packet arrives, no earlier than any capture point on
					// the way saw it; a client's when it sent one, which
					// only its own link shows (elsewhere its first DATA
					// may have queued longer than its RESEND: 282 µs
					// against 182 in a simulated collapse). A client
					// RESEND after a NEED_ACK may answer it
					// (homa_need_ack_pkt).
					heard, since, heardType, fromFirst = r.First, "the RPC's first packet (its start; whatever was lost since)", 0, true
					quiet = e.Time.Sub(heard)
				} else if quiet < need && m.Length > 0 {
					lost := false
					if rs.IsResendAll() {
						lost = m.Received() > 0
					} else {
						end := min(uint64(rs.Offset())+uint64(rs.Length()), uint64(m.Length))
						lost = m.Seen.Overlaps(rs.Offset(), uint32(end))
					}
					switch {
					case lost && !c.Net.atReceiver(e.Src):
						return Downgrade(CauseLossAfter, Evidence{e.Frame, "the RESEND asks for bytes the capture saw sent to " + e.Src.String()},
							"RESEND %v after %s: the bytes it asks for were lost after the capture point, so its silence is unknown", quiet.Round(time.Microsecond), since)
					case lost && e.Time.Sub(m.LastData) <= c.P.Slack:
						return Unsure("RESEND for bytes delivered to %v %v earlier, which it may not have processed yet (its timer decided without them)",
							e.Src, e.Time.Sub(m.LastData).Round(time.Microsecond))
					}
				}
				if quiet < 0 {
					return Unsure("capture timestamps step backwards (RESEND %v before %s)", (-quiet).Round(time.Microsecond), since)
				}
				// silent_ticks reaches resend_ticks after at least
				// resend_ticks-1 whole ticks (the first increment can come
				// at once).
				need := c.P.Ticks(c.P.ResendTicks-1) - c.P.Jitter
				if quiet < need && (heardType == wire.TypeGrant || heardType == wire.TypeBusy) {
					// The GRANT or BUSY that would have reset its count may
					// not have reached it: its loss leaves no trace but loss
					// on the path.
					if ev, ok := c.Net.LostAfterBetween(e.Dst, e.Src); ok {
						return Downgrade(CauseLossAfter, ev, "RESEND %v after %s, a %v that may have been lost after the capture point", quiet.Round(time.Microsecond), since, heardType)
					}
				}
				crossing := c.P.Reaction
				if c.Net.DeliveredAt(e.Src, e.Dst) {
					// Stamped as delivered (at the delivered point, or
					// on the peer's link), the RESEND left its sender
					// earlier by however long the way held it: a queue
					// holds it up to slack, so it may have crossed a
					// peer packet stamped that much before it.
					crossing = max(crossing, c.P.Slack)
				}
				if quiet < need && heard == peerHeard && !heard.IsZero() && quiet < crossing {
					// The peer's packet and the RESEND may have crossed:
					// less than Params.Reaction apart, the packet may not
					// have reached the endpoint's protocol code (a timer
					// pass holding the RPC decides without it) when its
					// timer decided. Judged by the silence before that
					// packet, which cannot be shorter.
					if alt := e.Time.Sub(maxTime(r.heardBefore(!e.FromClient()), r.First)); alt >= need {
						return Unsure("RESEND %v after the peer's %v, which may not have reached %v before its timer decided (less than %v apart); %v after the packet before it",
							quiet.Round(time.Microsecond), heardType, e.Src, crossing, alt.Round(time.Microsecond))
					}
				}
				if quiet < need {
					res := Violation("RESEND %v after %s; resend_ticks %d (tick %v) need ≥ %v less jitter %v",
						quiet.Round(time.Microsecond), since, c.P.ResendTicks, c.P.Tick, c.P.Ticks(c.P.ResendTicks-1), c.P.Jitter).WithSlack(c.P.Jitter)
					if grantFrame != 0 {
						res = res.With(grantFrame)
					}
					// What the silence counts from decides which stall
					// can explain it (stall.Accounting): the peer's packet,
					// its own GRANT or first packet, or a first packet it
					// received (the RPC began when it processed it).
					ref := EarlyFromPeer
					switch {
					case grantFrame != 0:
						ref = EarlyFromOwn
					case fromFirst && e.FromClient() == r.FirstFromClient:
						ref = EarlyFromOwn
					case fromFirst:
						ref = EarlyFromStart
					}
					res = res.WithEarly(need-quiet, heard, ref)
					if quiet > c.P.Jitter && (!fromFirst || r.SeenFromStart) {
						// A packet missing from the capture only hides
						// activity, so it makes silence look longer, never
						// shorter. The exceptions: a missed first RESEND
						// of a timer pass with a peer packet right after
						// it (the pass's later RESENDs then look early by
						// no more than the pass took, within jitter); and
						// silence counted from the RPC's first packet in
						// the capture when that is not its start (an RPC
						// begun before the capture: its endpoint may have
						// been silent long before).
						res = res.Alone()
					}
					return res
				}
				return Pass().WithSlack(c.P.Jitter)
			}},
		},
		{
			ID: "HOMA-RESEND-002", Level: Must,
			Facts:     []string{"RTX-06", "ID-04", "ABT-01"},
			Statement: "A RESEND is answered within response_timeout by the message's sender with retransmitted DATA, BUSY or RPC_UNKNOWN, or by its host with ICMP port unreachable (no socket has the port), unless a client that asked ends the RPC first (RPC_UNKNOWN or ACK); each RESEND gets its own answer: one BUSY or RPC_UNKNOWN does not answer two RESENDs.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (every path sends DATA, BUSY or RPC_UNKNOWN, for each RESEND it handles; linux_6.1.38 the same), homa_dispatch_pkts (ICMP for a port without a socket)",
			Capture:   "inconclusive where the capture shows loss toward the answerer after the capture point or from it before (the RESEND or its answer may be the lost packet)",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeResend},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeResend {
						return Obligation{}, false
					}
					k := KeyOf(e)
					answerer := oppositeRole(e.Packet.Role())
					return Obligation{Key: rpcMsgKey{k, answerer}, RPC: k, Scoped: true, Expect: "DATA, BUSY or RPC_UNKNOWN answering the RESEND",
						Match: func(c *Ctx, x *Event) bool {
							if answerer == wire.RoleServer && clientEnded(x, k) {
								// The client that asked then ended the RPC (a
								// late RESEND of its came first): told
								// RPC_UNKNOWN, the server discards the RPC and
								// sends nothing more (HOMA-RESEND-017); told ACK
								// it frees it.
								return true
							}
							if x.Err != nil || x.Packet.Role() != answerer || KeyOf(x) != k {
								return false
							}
							switch x.Type() {
							case wire.TypeBusy, wire.TypeRPCUnknown:
								// homa_resend_pkt answers every RESEND: the
								// obligation the unanswered ones folded into
								// ends with the answer to the last of them,
								// not with one answer for several.
								return unansweredResends(c, x, answerer) <= 1
							case wire.TypeData:
								return true
							}
							return false
						},
						MatchICMP: unreachableFor(e)}, true
				},
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
		{
			ID: "HOMA-RESEND-003", Level: Must,
			Facts:     []string{"RTX-06", "RTX-09", "WIRE-05"},
			Statement: "DATA marked retransmit=1 is sent only after the receiver asked for it with RESEND, or after RPC_UNKNOWN told a client to restart.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data; homa_incoming.c homa_rpc_unknown_pkt",
			Property: After{
				Needs:  NeedsRetransmit, // A takes no DATA; B only retransmissions
				ATypes: []wire.PacketType{wire.TypeResend, wire.TypeRPCUnknown, wire.TypeGrant},
				BTypes: []wire.PacketType{wire.TypeData},
				// A keys the message whose sender may now retransmit.
				A: func(c *Ctx, e *Event) (rpcMsgKey, bool) {
					switch e.Type() {
					case wire.TypeResend:
						return toPeer(e), true
					case wire.TypeRPCUnknown:
						// Only a server's RPC_UNKNOWN restarts the client;
						// a server told RPC_UNKNOWN discards its RPC
						// (homa_rpc_unknown_pkt).
						if !e.FromClient() {
							return rpcMsgKey{KeyOf(e), wire.RoleClient}, true
						}
					case wire.TypeGrant:
						// linux_6.1.38: a GRANT with resend_all makes the
						// sender retransmit all it has sent
						// (homa_grant_pkt → homa_resend_data).
						if e.Packet.Grant().ResendAll() != 0 {
							return toPeer(e), true
						}
					}
					return rpcMsgKey{}, false
				},
				B: func(c *Ctx, e *Event) (rpcMsgKey, bool) {
					if !e.Retransmit() {
						return rpcMsgKey{}, false
					}
					return fromSender(e), true
				},
				Missing: "retransmitted DATA with no earlier RESEND (or RPC_UNKNOWN from the server, or 2024 GRANT with resend_all) for this message",
			},
		},
		{
			ID: "HOMA-RESEND-004", Level: Must,
			Facts:     []string{"RTX-06", "CTRL-02"},
			Statement: "Retransmitted DATA answering a RESEND uses the priority the RESEND asked for.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (RESEND priority)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   tosRaceCapture,
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit, JudgesLevel: true, Check: func(c *Ctx, e *Event) Result {
				if !e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 || r.Unknown && r.UnknownTime.After(lastResendTo(r, e.Packet.Role())) {
					return Skip // a restart after RPC_UNKNOWN uses the unscheduled priority
				}
				if rs := m.res().LastResend; r.Unknown && !r.UnknownFromClient && e.FromClient() && rs.Length != wire.ResendAll &&
					(uint64(e.Offset) >= uint64(rs.Offset)+uint64(rs.Length) || e.End() <= rs.Offset) {
					// A restart packet outside the latest RESEND's range:
					// the server's RPC_UNKNOWN came first and a RESEND the
					// network delayed after it (homa_rpc_unknown_pkt
					// restarts at the unscheduled priority).
					return Skip
				}
				if !e.AtPriority(m.LastResendPriority) {
					return Violation("retransmitted DATA at priority %d; the RESEND asked for %d", e.Priority, m.LastResendPriority).Wants(1<<(m.LastResendPriority&15), m.res().LastResend.Time)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-005", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "BUSY is sent only in answer to a RESEND for the same RPC.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt",
			Property:  answersResend(wire.TypeBusy, "BUSY with no earlier RESEND from the peer for this RPC"),
		},
		{
			ID: "HOMA-RESEND-006", Level: Must,
			Facts:     []string{"RTX-06", "RTX-11", "ABT-01"},
			Statement: "RPC_UNKNOWN is sent only in answer to a packet (a RESEND, usually) for an RPC the sender does not know, as it processes that packet: within response_timeout of it.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts, homa_resend_pkt (homa_xmit_unknown while processing the packet; no timer sends RPC_UNKNOWN)",
			Property: After{
				BTypes: []wire.PacketType{wire.TypeRPCUnknown},
				// Keys name the side that may answer: the packet's recipient.
				A: func(c *Ctx, e *Event) (k rpcMsgKey, ok bool) {
					if e.Type() == wire.TypeCutoffs || e.Type() == wire.TypeFreeze || e.Type() == wire.TypeRPCUnknown {
						return k, false
					}
					toPeerInto(&k, e)
					return k, true
				},
				B: func(c *Ctx, e *Event) (rpcMsgKey, bool) {
					if e.Type() != wire.TypeRPCUnknown {
						return rpcMsgKey{}, false
					}
					return fromSender(e), true
				},
				// HomaModule answers in the packet's own processing
				// (homa_resend_pkt calls homa_xmit_unknown): no timer
				// sends RPC_UNKNOWN, so the packet it answers came at most
				// an answer's time before.
				Bound:   func(p *Params) time.Duration { return p.AnswerBound() },
				Missing: "RPC_UNKNOWN with no packet of this RPC from the peer within response_timeout plus slack before",
			},
		},
		{
			ID: "HOMA-RESEND-007", Level: Must,
			Facts:     []string{"RTX-09", "RTX-10"},
			Statement: "A client told RPC_UNKNOWN while its request is not fully acknowledged by a response retransmits the request from offset 0 with retransmit=1, every byte it had transmitted, of its own accord: not only when the re-created server RESENDs those bytes.",
			Source:    "HomaModule homa_incoming.c homa_rpc_unknown_pkt (client restart: homa_resend_data from 0 to tx_end, homa_outgoing.c homa_rpc_tx_end; linux_6.1.38 to next_xmit_offset; an RPC the client no longer has is discarded in homa_dispatch_pkts), homa_timer.c homa_timer_check_rpc (timeout_ticks of silence: homa_rpc_abort)",
			Capture:   "applies while the client is still sending its request (no response DATA seen); inconclusive once the client has gone timeout_ticks without DATA, GRANT or BUSY from the server (its timer may have aborted the RPC, which sends no packet, and RPC_UNKNOWN for an RPC the client no longer has is discarded), and when the client sends no packet of the RPC after the RPC_UNKNOWN (its application may have ended the RPC; a client still holding it keeps sending DATA or timer RESENDs: the bound is response_timeout plus slack, or resend_interval ticks stretched by timer_drift plus slack when that is longer); an offset-0 retransmission after a server RESEND for offset 0 counts as the restart except where the capture is the client's own link (elsewhere the restart's own packet may have been lost before the capture point), and so for the last byte owed; the bytes owed are those the capture saw transmitted with retransmit=0 before the RPC_UNKNOWN, when the request's latest DATA came slack or more before it (linux_6.13.9's tx_end counts a packet only once the driver has released it), else offset 0 only",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeRPCUnknown},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeRPCUnknown || e.FromClient() {
						return Obligation{}, false
					}
					r := c.T.Lookup(e)
					if r == nil || r.Response.Length != 0 || r.Request.Length == 0 {
						return Obligation{}, false
					}
					k := KeyOf(e)
					// The restart retransmits from offset 0 up in one call
					// (homa_resend_data(rpc, 0, tx_end)): on the client's
					// own link its offset-0 packet shows before any RESEND
					// the re-created server sends for those bytes, so one
					// that answers such a RESEND is no restart.
					asked := false
					// It resends every byte transmitted, up to tx_end
					// (homa_rpc_tx_end: main's next_xmit_offset short of
					// what its qdisc holds back, linux_6.13.9's bytes the
					// driver has released, linux_6.1.38's
					// next_xmit_offset): bytes the capture saw sent
					// slack before the RPC_UNKNOWN are among them. With
					// request DATA seen less than slack before, only
					// offset 0 is owed.
					upTo := uint32(0)
					if req := &r.Request; !req.LastData.IsZero() && e.Time.Sub(req.LastData) >= c.P.Slack && req.SentEnd > maxSegData(c.P.MTU, e.IPv6()) {
						// (Within one segment the offset-0 packet is
						// all: homa_resend_data copies whole segments.)
						upTo = req.SentEnd
					}
					expect := "request DATA at offset 0 with retransmit=1 (client restart)"
					if upTo > 0 {
						expect = fmt.Sprintf("request DATA with retransmit=1 from offset 0 to byte %d, every byte transmitted before the RPC_UNKNOWN (client restart)", upTo)
					}
					got0, gotEnd, askedEnd := false, upTo == 0, false
					o := Obligation{Key: k, Expect: expect,
						Match: func(c *Ctx, x *Event) bool {
							if x.Type() != wire.TypeData || !x.FromClient() || KeyOf(x) != k || !x.Retransmit() {
								return false
							}
							got0 = got0 || !asked && x.Offset == 0
							gotEnd = gotEnd || !askedEnd && x.Offset < upTo && x.End() >= upTo
							return got0 && gotEnd
						}}
					trig, seg, client := e.Frame, e.Segment, e.Dst
					timedOut, late := clientTimedOut(c.P, r, e.Time)
					// A client that still holds the RPC shows it: it keeps
					// sending request DATA or, waiting, timer RESENDs
					// every resend_interval ticks (homa_timer_check_rpc),
					// well within the bound. One that sends nothing more
					// for the RPC may have had it ended by its
					// application (homa_rpc_abort, which sends no packet)
					// and then discards RPC_UNKNOWN.
					alive := false
					o.Excuse = func(c *Ctx, x *Event) (string, bool) {
						if x.Frame == trig && x.Segment == seg {
							return timedOut, late
						}
						if x.Err == nil && x.Src == client && hasRPC(x) && KeyOf(x) == k {
							alive = true
						}
						if x.Err == nil && x.Type() == wire.TypeResend && !x.FromClient() && KeyOf(x) == k && c.Net.CapturePoint().AtReceiver(x) {
							rs := x.Packet.Resend()
							asked = asked || rs.Offset() == 0
							askedEnd = askedEnd || upTo > 0 && rs.Offset() < upTo && (rs.IsResendAll() || rs.Offset()+rs.Length() >= upTo)
						}
						return "", false
					}
					o.Moot = func(*Ctx) (string, bool) {
						if alive {
							return "", false
						}
						return "the client sent nothing for the RPC after the RPC_UNKNOWN: an RPC its application ended (homa_rpc_abort sends no packet) looks the same on the wire, while a client still holding it keeps sending DATA or RESENDs", true
					}
					return o, true
				},
				// Long enough for a client that holds the RPC to show it
				// by a timer RESEND (every resend_interval ticks) when
				// timers are scaled up; an answer's time otherwise.
				Bound: func(p *Params) time.Duration { return max(p.AnswerBound(), p.LateTicks(p.ResendInterval)) },
			},
		},
		{
			ID: "HOMA-RESEND-008", Level: Must,
			Facts:     []string{"RTX-02", "RTX-07"},
			Statement: "An endpoint's timer RESENDs for one RPC come in rounds (one RESEND per gap, in ascending order, in the same tick), and while the peer sends no DATA, GRANT or BUSY its rounds are at least resend_interval timer ticks apart.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc ((silent_ticks - resend_ticks) % resend_interval == 0), homa_incoming.c homa_request_retrans; fault @12a06d7, @35c09b5",
			Capture:   "rounds may come up to one tick early (jitter covers capture noise); a round within slack after a NEED_ACK is the client's answer to it on main, not a timer round (one later, too soon for a round, after a NEED_ACK still unanswered, may be that answer held back: a finding only a stall between the two that lost its lateness excuses, and the next round counts from the round before it), and a round after the endpoint's own DATA may follow a reset of its count: neither is judged; away from the sender's own link a RESEND for a lower offset within jitter of the round's start may be the network's swap of two RESENDs of one round: inconclusive",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				rs := e.Packet.Resend()
				r := c.T.Lookup(e)
				if r == nil || isBufferWakeup(c.P, rs) || answersNeedAck(c.P, r, e) {
					return Skip
				}
				m := r.Msg(oppositeRole(e.Packet.Role()))
				if m.res().RoundStart.IsZero() || m.inRound(c.P, e, rs) {
					// The first round counts from the silence
					// (HOMA-RESEND-001); later RESENDs of a round
					// come in the same timer pass.
					return Skip
				}
				heard := r.HeardFromServer
				if !e.FromClient() {
					heard = r.HeardFromClient
				}
				since := m.res().RoundStart.Add(-c.P.Jitter)
				if heard.After(since) {
					// The peer's packet reset silent_ticks: the next
					// round waits resend_ticks (HOMA-RESEND-001).
					return Skip
				}
				if r.Msg(e.Packet.Role()).LastData.After(since) {
					// Its own DATA: a client whose horizon a RESEND
					// from the peer raised (RTX-08) holds silent_ticks
					// at 0 while it has granted bytes to send.
					return Skip
				}
				gap := e.Time.Sub(m.res().RoundStart)
				if gap < 0 {
					return Unsure("capture timestamps step backwards (RESEND %v before the previous round)", (-gap).Round(time.Microsecond))
				}
				// Rounds are resend_interval timer passes apart; as for
				// HOMA-RESEND-001 one whole tick less is allowed.
				need := c.P.Ticks(c.P.ResendInterval-1) - c.P.Jitter
				if gap < need && gap <= c.P.Jitter && !m.res().RoundAll && !rs.IsResendAll() && rs.Offset() < m.res().RoundOffset && !c.Net.atSender(e.Src) {
					// A lower offset within jitter of the round's start:
					// the network may have swapped two RESENDs of one
					// round before the capture point (a repeat later in
					// the tick stays a violation).
					return Unsure("RESEND for offset %d %v after the round's RESEND for offset %d (frame %d): two RESENDs of one round may have been swapped before the capture point",
						rs.Offset(), gap.Round(time.Microsecond), m.res().RoundOffset, m.res().RoundFrame)
				}
				if gap < need {
					v := Violation("RESEND round %v after the previous round (frame %d) with no DATA, GRANT or BUSY from the peer in between; resend_interval %d (tick %v) needs ≥ %v less jitter %v",
						gap.Round(time.Microsecond), m.res().RoundFrame, c.P.ResendInterval, c.P.Tick, c.P.Ticks(c.P.ResendInterval-1), c.P.Jitter).With(m.res().RoundFrame).WithSlack(c.P.Jitter)
					if lateNeedAckAnswer(c.P, r, m, e) {
						// A NEED_ACK since the round, unanswered: on main
						// this may be the answer (homa_need_ack_pkt), held
						// back past slack by a stall between the two that
						// lost as much (a frozen client answered 259 µs
						// late in TestHeldUpTesters).
						na := r.NeedAckTime
						return v.WithEarly(need-gap, na, EarlyFromPeer).WithLate(e.Time.Sub(na) - c.P.Slack)
					}
					return v.WithEarly(need-gap, m.res().RoundStart, EarlyFromOwn)
				}
				return Pass().WithSlack(c.P.Jitter)
			}},
		},
		{
			ID: "HOMA-RESEND-009", Level: Must,
			Facts:     []string{"RTX-10"},
			Statement: "An endpoint sends no RESEND for an RPC after timeout_ticks timer ticks of silence from the peer: the RPC has been aborted.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (silent_ticks ≥ timeout_ticks: homa_rpc_abort, no packet sent)",
			Capture:   "silence counts from the peer's latest DATA, GRANT or BUSY, or from the endpoint's own latest DATA, GRANT or buffer-wakeup RESEND (after which the timer may have held its count at 0); timer passes may take up to timer_drift longer than tick (HomaModule re-arms its hrtimer after each pass), and slack covers timer-thread delay on top",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				if isBufferWakeup(c.P, e.Packet.Resend()) {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Unsure("RESEND for an RPC with no earlier packet in the capture: silence unknown")
				}
				start, since := silenceStart(r, e)
				quiet := e.Time.Sub(start)
				if quiet < 0 {
					return Unsure("capture timestamps step backwards (RESEND %v before %s)", (-quiet).Round(time.Microsecond), since)
				}
				// Ticks stretch (HomaModule re-arms its hrtimer after each
				// pass): the abort may come timer_drift later.
				if bound := c.P.LateTicks(c.P.TimeoutTicks); quiet > bound {
					return Violation("RESEND %v after %s; timeout_ticks %d (tick %v) abort the RPC after %v, stretched by timer_drift %g to %v, plus slack %v",
						quiet.Round(time.Microsecond), since, c.P.TimeoutTicks, c.P.Tick, c.P.Ticks(c.P.TimeoutTicks), c.P.TimerDrift, bound-c.P.Slack, c.P.Slack).WithSlack(c.P.Slack).
						// A stall of the endpoint during the silence kept its
						// timer from counting (one pass for the ticks it
						// skipped): it may explain as much lateness as it lost.
						WithSince(start).WithLate(quiet - bound)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-RESEND-010", Level: Must, Alone: true,
			Facts:     []string{"WIRE-05", "AMO-01"},
			Statement: "A sender transmits each byte of a message at most once with retransmit=0: bytes it sends again are marked retransmit=1.",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data (next_xmit_offset only grows), homa_resend_data (retransmit=1, also for the restart homa_incoming.c homa_rpc_unknown_pkt sends: the client keeps its RPC and what it sent); fault PlatformLab/Homa@0b12835",
			Capture:   "a capture that records a frame twice (two merged interfaces) shows false duplicates; capture each link once",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactWellFormed | FactInOrder, Passed}, Check: func(c *Ctx, e *Event) Result {
				r, m, end, ok := firstTransmission(c, e)
				if !ok {
					return Skip
				}
				if r == nil || r.reusedBy(e, c.P) {
					return Pass() // a new RPC (a reused id: HOMA-ID-004)
				}
				if n := m.FirstSent.Overlap(e.Offset, end); n > 0 {
					return Violation("first-transmission DATA [%d, %d) repeats %d bytes already sent with retransmit=0", e.Offset, e.End(), n)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-011", Level: Must,
			Facts:     []string{"RTX-06", "RTX-08"},
			Statement: "A sender retransmits only bytes it has already sent: no DATA with retransmit=0 carries bytes that went out before with retransmit=1 while they lay beyond all the message's first transmissions, nor do its first transmissions move past such bytes without sending them (a sender sends a message's new bytes in offset order).",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (retransmits [offset, min(end, tx_end)) since @be5081e), homa_rpc_unknown_pkt (a restart resends [0, tx_end)); fault @c67deb4. Not linux-2024: linux_6.1.38 lost @c67deb4's fix in @b5c39f0 and retransmits bytes a RESEND names before it has sent them, then sends them again (shared capture linux-6.1 c: retransmitted in frames 55-61, sent again in 63-68; also 1041-1043)",
			Profiles:  []string{"linux", "upstream"},
			Capture:   "a retransmission that overtakes the sender's last original on the way to the capture point (behind a priority queue) looks the same, so repeated bytes are a violation only on the sender's link (elsewhere cause reordering); so does, on any link, the skb another core was handing to the NIC when the RESEND came (homa_xmit_data advances next_xmit_offset and releases the RPC's lock before transmitting): a first transmission within one skb past what the capture had seen sent when the first such retransmission went out, less than slack after it, is inconclusive. First transmissions that pass retransmitted bytes never sent first are judged only where the capture shows the message's first bytes sent first, and are a violation only on the sender's link (elsewhere those bytes' first transmissions may have been lost before the capture point: inconclusive)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactWellFormed | FactNoResentAhead, Passed}, Check: func(c *Ctx, e *Event) Result {
				r, m, end, ok := firstTransmission(c, e)
				if !ok {
					return Skip
				}
				if r == nil {
					return Pass()
				}
				if n := m.ResentAhead.Overlap(e.Offset, end); n > 0 {
					if x := m.retx; x != nil && x.ahead.Frame != 0 && e.Offset >= x.aheadFrom && end <= x.aheadFrom+eventSkb(c.P, e) && e.Time.Sub(x.ahead.Time) <= c.P.Slack {
						// homa_xmit_data advances next_xmit_offset past an
						// skb and releases the RPC's lock before handing it
						// to the NIC: a RESEND handled meanwhile on another
						// core retransmits that skb (tx_end includes it), and
						// its copy may leave first.
						return Unsure("first-transmission DATA [%d, %d) repeats %d bytes the sender retransmitted %v earlier (frame %d), within the one skb past what it had sent then: another core may have been handing this skb to the NIC when the RESEND came (homa_xmit_data releases the RPC's lock first)",
							e.Offset, e.End(), n, e.Time.Sub(x.ahead.Time).Round(time.Microsecond), x.ahead.Frame)
					}
					if !c.Net.atSender(e.Src) {
						// This packet may have left first and waited
						// behind a higher priority level (a starved
						// scheduled level under incast) while the
						// retransmission passed it.
						return Downgrade(CauseReorder, Evidence{m.res().LastResend.Frame, "a retransmission at a higher priority may overtake a first transmission queued on its way to the capture point"},
							"first-transmission DATA [%d, %d) repeats %d bytes the sender retransmitted before it had sent them", e.Offset, e.End(), n)
					}
					return Violation("first-transmission DATA [%d, %d) repeats %d bytes the sender retransmitted before it had sent them", e.Offset, e.End(), n)
				}
				if skip, ok := skippedAhead(m, e.Offset); ok && m.SentEnd <= skip.Start {
					// Judged at the first of the first transmissions that
					// pass the bytes (later ones add nothing).
					// The sender's new bytes go in offset order, so bytes
					// below e it never sent first are bytes it retransmitted
					// without having sent them (homa_resend_pkt caps a
					// RESEND's range at tx_end). Elsewhere than on its link
					// their first transmissions may have been lost before
					// the capture point.
					if !c.Net.atSender(e.Src) {
						return Unsure("first-transmission DATA [%d, %d) passes [%d, %d), which the sender retransmitted ahead of its first transmissions and the capture never shows sent first (lost before the capture point?)", e.Offset, e.End(), skip.Start, skip.End)
					}
					return Violation("first-transmission DATA [%d, %d) passes [%d, %d), which the sender retransmitted ahead of its first transmissions and never sent first: it retransmitted bytes it had not sent", e.Offset, e.End(), skip.Start, skip.End)
				}
				return Pass()
			}},
		},
	}
}

// unreachableFor returns a MatchICMP that is true for an ICMP port
// unreachable from e's receiver about e's destination port: the host has
// no socket for it, which answers e (homa_dispatch_pkts).
func unreachableFor(e *Event) func(c *Ctx, x *Event) bool {
	to, port := e.Dst, e.Packet.Common().Dport()
	return func(c *Ctx, x *Event) bool {
		return x.ICMP.PortUnreachable && x.Src == to && x.ICMP.QDport == port
	}
}

// skippedAhead returns the first range of m's bytes below off that the
// sender retransmitted while they lay beyond its first transmissions
// (Message.ResentAhead) and never sent first (Message.FirstSent); ok is
// false when there is none, or when the capture does not show the
// message's first bytes sent first (its earlier first transmissions may
// precede the capture).
func skippedAhead(m *Message, off uint32) (byteranges.Range, bool) {
	if len(m.ResentAhead) == 0 || !m.FirstSent.Covers(0, 1) {
		return byteranges.Range{}, false
	}
	for _, x := range m.ResentAhead {
		if x.Start >= off {
			break
		}
		for _, g := range m.FirstSent.Gaps(min(x.End, off)) {
			if g.End > x.Start {
				return byteranges.Range{Start: max(g.Start, x.Start), End: g.End}, true
			}
		}
	}
	return byteranges.Range{}, false
}

// firstTransmission returns, for DATA e with retransmit=0 and data, its
// RPC (nil if e is the RPC's first packet), the message it belongs to and
// the end of its bytes within the message; ok is false for other events.
func firstTransmission(c *Ctx, e *Event) (r *RPC, m *Message, end uint32, ok bool) {
	if e.Retransmit() || e.Length == 0 {
		return nil, nil, 0, false
	}
	end = e.End()
	if r = c.T.Lookup(e); r != nil {
		m = r.Msg(e.Packet.Role())
		if m.Length > 0 {
			end = min(end, m.Length)
		}
	}
	return r, m, end, true
}

// lastResendTo returns the time of the latest RESEND sent to the side role.
func lastResendTo(r *RPC, role wire.Role) time.Time {
	if role == wire.RoleClient {
		return r.LastResendFromServer()
	}
	return r.LastResendFromClient()
}

// clientTimedOut reports whether the client of r may have aborted it by
// timeout before now: at some point it went timeout_ticks without a DATA,
// GRANT or BUSY from the server (homa_dispatch_pkts resets silent_ticks
// only for those; homa_timer.c homa_timer_check_rpc then calls
// homa_rpc_abort, which sends no packet, and the application's recvmsg
// frees the RPC). A packet that reached the client after that silence
// found no RPC, so it cannot show the RPC alive (one from the client
// can: clientGaveUp). As for HOMA-RESEND-019's
// server timeouts, 2 ticks (RTX-10's tolerance) and slack are allowed.
func clientTimedOut(p *Params, r *RPC, now time.Time) (string, bool) {
	since := r.HeardFromServer
	if since.IsZero() {
		since = r.First
	}
	quiet := max(r.QuietFromServer, now.Sub(since))
	if quiet < p.Ticks(p.TimeoutTicks-2)-p.Slack {
		return "", false
	}
	return fmt.Sprintf("the client went %v without DATA, GRANT or BUSY from the server (timeout_ticks %d, tick %v): its timer may have aborted the RPC, which sends no packet, and then discards RPC_UNKNOWN",
		quiet.Round(time.Microsecond), p.TimeoutTicks, p.Tick), true
}

// clientSilenceStart is when the client of r last heard a DATA, GRANT or
// BUSY from the server (its first packet if none) or sent DATA or GRANT
// itself, whichever is later: where its silent_ticks last started.
func clientSilenceStart(r *RPC) time.Time {
	since := r.HeardFromServer
	if since.IsZero() {
		since = r.First
	}
	return maxTime(since, r.HeardFromClient)
}

// clientRoundsDone reports whether the client of r sent, in the silence
// going on (clientSilenceStart), every RESEND round homa_timer_check_rpc sends
// before it times the RPC out: one at silent_ticks resend_ticks and every
// resend_interval after, while silent_ticks is below timeout_ticks
// (linux_6.1.38 homa_check_rpc the same). Its timer has then counted
// timeout_ticks however long its ticks took: under software emulation
// HomaModule linux_6.1.38's 1 ms hrtimer ticks took 4-5 ms, and the client
// sent its 19 rounds (resend 50, interval 50, timeout 1000) over 4.3 s
// before it timed out and acked the RPC.
func clientRoundsDone(p *Params, r *RPC) bool {
	if p.ResendInterval <= 0 || p.TimeoutTicks <= p.ResendTicks {
		return false
	}
	return int(r.clientRounds) >= (p.TimeoutTicks-p.ResendTicks-1)/p.ResendInterval+1
}

// clientGaveUp reports whether the client of r may have timed r out
// before now, as clientTimedOut, and shown nothing since that says it
// did not: a client that aborted an RPC sends no packet for it again
// (homa_rpc_abort), and its silent_ticks count only while it has no
// granted request bytes left to send (homa_timer_check_rpc). So the
// silence is counted from the server's last DATA, GRANT or BUSY or the
// client's own last DATA or GRANT, whichever is later (clientSilenceStart);
// in the silence going on at now a RESEND from the client later than the
// timeout could have come (timeout_ticks, stretched by timer_drift, plus
// slack) says it holds the RPC, unless the client had sent in that
// silence every RESEND round it sends before it times out
// (clientRoundsDone: its own ticks, however slow, counted
// timeout_ticks); and after the longest earlier silence any RESEND, DATA
// or GRANT from the client after it ended does.
func clientGaveUp(p *Params, r *RPC, now time.Time) bool {
	thr := p.Ticks(p.TimeoutTicks-2) - p.Slack
	start := clientSilenceStart(r)
	if now.Sub(start) >= thr && (!r.LastResendFromClient().After(start.Add(p.LateTicks(p.TimeoutTicks)+p.Slack)) || clientRoundsDone(p, r)) {
		return true
	}
	if r.QuietFromServer < thr {
		return false
	}
	to := r.First.Add(time.Duration(r.quietEnd) * time.Microsecond)
	from := to.Add(-r.QuietFromServer)
	end := to.Add(p.Slack)
	return !r.HeardFromClient.After(end) && !r.LastResendFromClient().After(end) && to.Sub(maxTime(from, r.HeardFromClient)) >= thr
}

// unansweredResends returns how many RESENDs for the message answerer
// sends in x's RPC the capture shows unanswered (by BUSY, RPC_UNKNOWN or a
// retransmission) before x; 0 when the trace does not know the RPC.
func unansweredResends(c *Ctx, x *Event, answerer wire.Role) int {
	r := c.T.Lookup(x)
	if r == nil {
		return 0
	}
	return int(r.Msg(answerer).resendsOpen)
}
