package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantRules3: a receiver keeps granting a message it grants (HomaModule
// homa_grant.c homa_grant_check_rpc, homa_grant_try_send).
func grantRules3() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-GRANT-019", Level: Must,
			Facts:     []string{"GRANT-02", "GRANT-03", "GRANT-06"},
			Statement: "A receiver keeps granting a message it has begun to grant: when every byte up to the message's grant horizon has arrived and the message is still incomplete, it sends the message another GRANT within timeout_ticks ticks (a stall is for good: no timer grants), unless it is granting max_overcommit other messages or has max_incoming granted and not received.",
			Source:    "HomaModule homa_incoming.c homa_dispatch_pkts (homa_grant_check_rpc after each batch), homa_grant.c homa_grant_try_send (an active message with granted - received below its window gets a GRANT while total incoming is below max_incoming); linux_6.1.38 homa_grant.c homa_grant_recalc",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "judged at the packet that completes the granted bytes as the capture sees them (an skb that overshoots the horizon to the message's end needs no GRANT); inconclusive while the receiver grants max_overcommit other messages (linux_6.1.38: or another message from the same sender) or has max_incoming granted and not received, after RPC_UNKNOWN or a buffer-wakeup RESEND for the message, and where the capture shows loss toward the receiver after the capture point",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeData},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					if e.Type() != wire.TypeData || e.Length == 0 {
						return Obligation{}, false
					}
					r := c.T.Lookup(e)
					if r == nil || r.Unknown {
						return Obligation{}, false
					}
					m := r.Msg(e.Packet.Role())
					if m.Grants == 0 || m.Complete || m.Length <= c.P.UnschedBytes || m.ResendAll {
						return Obligation{}, false
					}
					h := m.Horizon(c.P)
					if h >= m.Length || e.Offset >= h || m.Seen.Covers(0, h) || !m.Seen.CoversWith(0, h, e.Offset, min(e.End(), m.Length)) {
						return Obligation{}, false
					}
					k, sender := KeyOf(e), e.Packet.Role()
					receiver := oppositeRole(sender)
					rHost, sHost := e.Dst, e.Src
					trigFrame, trigSeg := e.Frame, e.Segment
					self := func(c *Ctx) *Message {
						if r := c.T.rpcs[k]; r != nil {
							return r.Msg(sender)
						}
						return nil
					}
					return Obligation{Key: rpcMsgKey{k, sender}, Expect: fmt.Sprintf("GRANT beyond %d from the message's receiver", h),
						Match: func(c *Ctx, x *Event) bool {
							if x.Err != nil || KeyOf(x) != k {
								return false
							}
							switch {
							case x.Type() == wire.TypeGrant:
								return x.Packet.Role() == receiver
							case x.Type() == wire.TypeData && x.Packet.Role() == sender:
								// The sender's last skb overshot the horizon
								// and completed the message: nothing is
								// left to grant.
								m := self(c)
								return m != nil && m.Length > 0 && m.Seen.CoversWith(0, m.Length, x.Offset, min(x.End(), m.Length))
							}
							return false
						},
						Excuse: func(c *Ctx, x *Event) (string, bool) {
							switch {
							case x.Err != nil:
								return "", false
							case x.Frame == trigFrame && x.Segment == trigSeg:
								return receiverBusy(c, rHost, sHost, self(c), nil, netip.Addr{}, nil)
							case x.Type() == wire.TypeRPCUnknown && KeyOf(x) == k:
								return "RPC_UNKNOWN: one side no longer knows the RPC", true
							case x.Type() == wire.TypeResend && KeyOf(x) == k && x.Packet.Role() == receiver && isBufferWakeup(c.P, x.Packet.Resend()):
								return "the receiver's buffer-wakeup RESEND shows it lost its buffer space for the message (GRANT-10)", true
							case x.Type() == wire.TypeGrant && x.Src == rHost:
								_, other := grantMsg(c, x)
								return receiverBusy(c, rHost, sHost, self(c), other, x.Dst, nil)
							}
							return "", false
						}}, true
				},
				// A stalled message stays stalled (nothing else makes the
				// receiver grant it), so the bound is generous: an
				// emulated or loaded receiver grants tens of milliseconds
				// after the data it answers (facts §4.0, GRANT-11).
				Bound: func(p *Params) time.Duration { return max(p.AnswerBound(), p.LateTicks(p.TimeoutTicks)) },
			},
		},
	}
}
