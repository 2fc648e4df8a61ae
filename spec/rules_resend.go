package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

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
			Statement: "An endpoint sends RESEND for an RPC only after it has heard no DATA, GRANT or BUSY for it for resend_ticks timer ticks.",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (silent_ticks ≥ resend_ticks); fault @bf69583",
			Capture:   "the first tick may come up to one tick early; slack covers timer-thread delay",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				rs := e.Packet.Resend()
				if c.P.NumPriorities >= 2 && rs.IsResendAll() && rs.Offset() == 0 && int(rs.Priority()) == c.P.NumPriorities-2 {
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
				lastOwn := r.LastResendFromClient
				if !e.FromClient() {
					heard, lastOwn = r.HeardFromClient, r.LastResendFromServer
				}
				if r.First.After(heard) {
					heard, since = r.First, "the RPC's first packet"
				}
				// A receiver that has everything it granted holds
				// silent_ticks at 0 until it grants more, so its own GRANT
				// restarts the count (homa_timer_check_rpc; the fix
				// @bf69583 of BR-18). The capture shows it had everything
				// when the first RESEND of a round asks only for bytes
				// that GRANT authorised (RESENDs of a round list the gaps
				// in ascending order; a lost byte below would come first).
				m := r.Msg(oppositeRole(e.Packet.Role()))
				grantFrame := 0
				inRound := !lastOwn.IsZero() && e.Time.Sub(lastOwn) >= 0 && e.Time.Sub(lastOwn) < c.P.Tick
				if !m.GrantTime.IsZero() && m.GrantTime.After(heard) && !rs.IsResendAll() && rs.Offset() >= m.GrantedBefore && !inRound {
					heard, since = m.GrantTime, fmt.Sprintf("its own GRANT (frame %d) authorised the bytes it asks for", m.GrantFrame)
					grantFrame = m.GrantFrame
				}
				quiet := e.Time.Sub(heard)
				if quiet < 0 {
					return Unsure("capture timestamps step backwards (RESEND %v before %s)", (-quiet).Round(time.Microsecond), since)
				}
				// silent_ticks reaches resend_ticks after at least
				// resend_ticks-1 whole ticks (the first increment can come
				// at once).
				need := c.P.Ticks(c.P.ResendTicks-1) - c.P.Jitter
				if quiet < need {
					res := Violation("RESEND %v after %s; resend_ticks %d (tick %v) need ≥ %v less jitter %v",
						quiet.Round(time.Microsecond), since, c.P.ResendTicks, c.P.Tick, c.P.Ticks(c.P.ResendTicks-1), c.P.Jitter).WithSlack(c.P.Jitter)
					if grantFrame != 0 {
						res = res.With(grantFrame)
					}
					return res
				}
				return Pass().WithSlack(c.P.Jitter)
			}},
		},
		{
			ID: "HOMA-RESEND-002", Level: Should,
			Statement: "A RESEND is answered by the message's sender with retransmitted DATA, BUSY or RPC_UNKNOWN.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt",
			Capture:   "a RESEND lost after the capture point is never answered; check captures without loss strictly",
			Property: Within{
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeResend {
						return Obligation{}, false
					}
					k := KeyOf(e)
					answerer := oppositeRole(e.Packet.Role())
					return Obligation{Key: rpcMsgKey{k, answerer}, Expect: "DATA, BUSY or RPC_UNKNOWN answering the RESEND",
						Match: func(c *Ctx, x *Event) bool {
							if x.Err != nil || x.Packet.Role() != answerer || KeyOf(x) != k {
								return false
							}
							switch x.Type() {
							case wire.TypeBusy, wire.TypeRPCUnknown, wire.TypeData:
								return true
							}
							return false
						}}, true
				},
				Bound: func(p *Params) time.Duration { return p.ResponseTimeout },
			},
		},
		{
			ID: "HOMA-RESEND-003", Level: Must,
			Statement: "DATA marked retransmit=1 is sent only after the receiver asked for it with RESEND, or after RPC_UNKNOWN told a client to restart.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data; homa_incoming.c homa_rpc_unknown_pkt",
			Property: After{
				// A keys the message whose sender may now retransmit.
				A: func(c *Ctx, e *Event) (any, bool) {
					switch e.Type() {
					case wire.TypeResend:
						return rpcMsgKey{KeyOf(e), oppositeRole(e.Packet.Role())}, true
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
							return rpcMsgKey{KeyOf(e), oppositeRole(e.Packet.Role())}, true
						}
					}
					return nil, false
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if !e.Retransmit() {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), e.Packet.Role()}, true
				},
				Missing: "retransmitted DATA with no earlier RESEND (or RPC_UNKNOWN from the server, or 2024 GRANT with resend_all) for this message",
			},
		},
		{
			ID: "HOMA-RESEND-004", Level: Must,
			Statement: "Retransmitted DATA answering a RESEND uses the priority the RESEND asked for.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (RESEND priority)",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
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
				if e.Priority != m.LastResendPriority {
					return Violation("retransmitted DATA at priority %d; the RESEND asked for %d", e.Priority, m.LastResendPriority)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-005", Level: Must,
			Statement: "BUSY is sent only in answer to a RESEND for the same RPC.",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt",
			Property: After{
				// Keys name the side that answers: the RESEND's recipient.
				A: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeResend {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), oppositeRole(e.Packet.Role())}, true
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeBusy {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), e.Packet.Role()}, true
				},
				Missing: "BUSY with no earlier RESEND from the peer for this RPC",
			},
		},
		{
			ID: "HOMA-RESEND-006", Level: Must,
			Statement: "RPC_UNKNOWN is sent only in answer to a packet (a RESEND, usually) for an RPC the sender does not know.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts, homa_resend_pkt",
			Property: After{
				// Keys name the side that may answer: the packet's recipient.
				A: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() == wire.TypeCutoffs || e.Type() == wire.TypeFreeze || e.Type() == wire.TypeRPCUnknown {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), oppositeRole(e.Packet.Role())}, true
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeRPCUnknown {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), e.Packet.Role()}, true
				},
				Missing: "RPC_UNKNOWN with no earlier packet of this RPC from the peer",
			},
		},
		{
			ID: "HOMA-RESEND-007", Level: Must,
			Statement: "A client told RPC_UNKNOWN while its request is not fully acknowledged by a response retransmits the request from offset 0 with retransmit=1.",
			Source:    "HomaModule homa_incoming.c homa_rpc_unknown_pkt (client restart)",
			Capture:   "applies while the client is still sending its request (no response DATA seen)",
			Property: Within{
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeRPCUnknown || e.FromClient() {
						return Obligation{}, false
					}
					r := c.T.Lookup(e)
					if r == nil || r.Response.Length != 0 || r.Request.Length == 0 {
						return Obligation{}, false
					}
					k := KeyOf(e)
					return Obligation{Key: k, Expect: "request DATA at offset 0 with retransmit=1 (client restart)",
						Match: func(c *Ctx, x *Event) bool {
							return x.Type() == wire.TypeData && x.FromClient() && KeyOf(x) == k && x.Offset == 0 && x.Retransmit()
						}}, true
				},
				Bound: func(p *Params) time.Duration { return p.ResponseTimeout },
			},
		},
	}
}

// lastResendTo returns the time of the latest RESEND sent to the side role.
func lastResendTo(r *RPC, role wire.Role) time.Time {
	if role == wire.RoleClient {
		return r.LastResendFromServer
	}
	return r.LastResendFromClient
}
