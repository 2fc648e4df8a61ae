package spec

import (
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// rpcMsgKey identifies one message of one RPC (for obligations).
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
				r := c.T.Lookup(e)
				if r == nil {
					return Unsure("RESEND for an RPC with no earlier packet in the capture: silence unknown")
				}
				heard := r.HeardFromServer
				if !e.FromClient() {
					heard = r.HeardFromClient
				}
				if r.First.After(heard) {
					heard = r.First
				}
				// silent_ticks reaches resend_ticks after at least
				// resend_ticks-1 whole ticks (the first increment can come
				// at once).
				need := c.P.Ticks(c.P.ResendTicks-1) - c.P.Slack
				if quiet := e.Time.Sub(heard); quiet < need {
					return Violation("RESEND after %v of silence; resend_ticks %d (tick %v) need ≥ %v less slack %v",
						quiet.Round(time.Microsecond), c.P.ResendTicks, c.P.Tick, c.P.Ticks(c.P.ResendTicks-1), c.P.Slack).WithSlack(c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
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
				A: func(c *Ctx, e *Event) (any, bool) {
					switch e.Type() {
					case wire.TypeResend, wire.TypeRPCUnknown:
						return rpcMsgKey{KeyOf(e), oppositeRole(e.Packet.Role())}, true
					}
					return nil, false
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if !e.Retransmit() {
						return nil, false
					}
					return rpcMsgKey{KeyOf(e), e.Packet.Role()}, true
				},
				Missing: "retransmitted DATA with no earlier RESEND or RPC_UNKNOWN for this message",
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
				A: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeResend {
						return nil, false
					}
					return KeyOf(e), true
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeBusy {
						return nil, false
					}
					return KeyOf(e), true
				},
				Missing: "BUSY with no earlier RESEND for this RPC",
			},
		},
		{
			ID: "HOMA-RESEND-006", Level: Must,
			Statement: "RPC_UNKNOWN is sent only in answer to a packet (a RESEND, usually) for an RPC the sender does not know.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts, homa_resend_pkt",
			Property: After{
				A: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() == wire.TypeCutoffs || e.Type() == wire.TypeFreeze || e.Type() == wire.TypeRPCUnknown {
						return nil, false
					}
					return KeyOf(e), true
				},
				B: func(c *Ctx, e *Event) (any, bool) {
					if e.Type() != wire.TypeRPCUnknown {
						return nil, false
					}
					return KeyOf(e), true
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
