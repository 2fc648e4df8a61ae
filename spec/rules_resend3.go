package spec

import "github.com/homatest/homatest/spec/wire"

// resendRules3: the incoming field of retransmitted DATA (HomaModule
// homa_incoming.c homa_resend_pkt, homa_outgoing.c homa_resend_data).
func resendRules3() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-RESEND-020", Level: Must,
			Facts:     []string{"RTX-06"},
			Statement: "Retransmitted DATA answering a RESEND carries incoming = min(RESEND end, bytes transmitted): never beyond the end of the ranges the message's RESENDs asked for (a RESEND of length -1 and a restart after RPC_UNKNOWN bound it by the bytes transmitted only, not judged).",
			Source:    "HomaModule homa_incoming.c homa_resend_pkt (end capped at tx_end), homa_outgoing.c homa_resend_data (h->incoming = end); linux_6.1.38 wrote the granted offset instead",
			Profiles:  []string{"linux"},
			Capture:   "needs the RESENDs in the capture; a retransmission with no RESEND seen is HOMA-RESEND-003's business",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if !e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || r.Unknown {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 || m.ResendAll || m.ResendEnd == 0 {
					return Skip
				}
				if inc := e.Packet.Data().Incoming(); inc > m.ResendEnd {
					return Violation("retransmission [%d, %d) carries incoming %d, beyond %d, the furthest end any RESEND for the message asked for (latest frame %d)",
						e.Offset, e.End(), inc, m.ResendEnd, m.LastResend.Frame).With(m.LastResend.Frame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-RESEND-021", Level: Must,
			Facts:     []string{"RTX-06", "WIRE-05"},
			Statement: "A sender retransmits only the segments a RESEND asked for: every DATA with retransmit=1 overlaps a range the message's RESENDs asked for (length -1: what it had sent), unless RPC_UNKNOWN made a client restart its request.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (only the segments overlapping [start, end)); homa_incoming.c homa_resend_pkt, homa_rpc_unknown_pkt (the restart resends [0, tx_end))",
			Profiles:  []string{"linux", "upstream"},
			Capture:   "needs the RESENDs in the capture (a retransmission with none is HOMA-RESEND-003's business); after a RESEND of length -1 only what the capture saw sent counts as asked, so bytes beyond it are not judged",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if !e.Retransmit() || e.Length == 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || r.Unknown {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if m.Resends == 0 || len(m.Asked) == 0 {
					return Skip
				}
				end := e.End()
				if m.Asked.Overlaps(e.Offset, end) || m.ResendAll && e.Offset >= m.LastResend.SentEnd {
					return Pass()
				}
				return Violation("retransmission [%d, %d) overlaps no range the RESENDs for the message asked for (latest RESEND {%d, %d}, frame %d)",
					e.Offset, end, m.LastResend.Offset, int32(m.LastResend.Length), m.LastResend.Frame).With(m.LastResend.Frame)
			}},
		},
	}
}
