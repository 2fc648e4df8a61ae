package spec

import "github.com/homatest/homatest/spec/wire"

// unschedRules: unscheduled data (HomaModule homa_outgoing.c
// homa_message_out_init, homa_message_out_fill, homa_xmit_data).
func unschedRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-UNSCHED-001", Level: Must,
			Facts:     []string{"UNS-01"},
			Statement: "Until a GRANT or RESEND for a message has been seen, its sender transmits only bytes below U = min(message_length, unsched_bytes).",
			Source:    "HomaModule homa_outgoing.c homa_message_out_init, homa_xmit_data; SIGCOMM 2018 §3.2",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactGranted, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				m := (*Message)(nil)
				if r != nil {
					m = r.Msg(e.Packet.Role())
					// GRANTs to the receiver's earlier incarnations
					// (KeptHorizon) authorised the sender too.
					if m.Grants > 0 || m.Resends > 0 || m.KeptHorizon > c.P.Unsched(m.Length) {
						return Skip
					}
				}
				u := c.P.Unsched(e.Packet.Data().MessageLength())
				if e.End() > u {
					return Violation("bytes [%d, %d) sent before any GRANT, beyond U = %d", e.Offset, e.End(), u)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-UNSCHED-002", Level: Must, Alone: true,
			Facts:     []string{"UNS-02"},
			Statement: "No first-transmission DATA packet straddles U: the unscheduled part ends on a packet boundary and is not rounded up to a full packet.",
			Source:    "HomaModule homa_outgoing.c homa_message_out_fill",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactNoStraddle, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				u := c.P.Unsched(e.Packet.Data().MessageLength())
				if e.Offset < u && e.End() > u {
					return Violation("DATA [%d, %d) straddles U = %d", e.Offset, e.End(), u)
				}
				return Pass()
			}},
		},
	}
}
