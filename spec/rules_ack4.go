package spec

import "github.com/homatest/homatest/spec/wire"

// ackRules4: which side sends NEED_ACK (HomaModule homa_timer.c).
func ackRules4() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-ACK-010", Level: Must, Alone: true,
			Facts:     []string{"ACK-01", "ID-01"},
			Statement: "Only servers send NEED_ACK: every NEED_ACK carries a server's sender_id (bit 0 set).",
			Source:    "HomaModule homa_timer.c homa_timer_check_rpc (NEED_ACK only for a server RPC whose response is transmitted); homa_incoming.c homa_need_ack_pkt runs at the client",
			Property: Each{Types: []wire.PacketType{wire.TypeNeedAck}, Partial: true, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() {
					return Violation("NEED_ACK with sender_id %d (even: sent by the client of the RPC)", e.Packet.Common().SenderID())
				}
				return Pass()
			}},
		},
	}
}
