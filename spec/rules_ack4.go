package spec

import (
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// ackRules4: which side sends NEED_ACK (HomaModule homa_timer.c), and what
// a client's ack says of the RPC (homa_need_ack_pkt).
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
		{
			ID: "HOMA-ACK-012", Level: Must, Alone: true,
			Facts:     []string{"ACK-02"},
			Statement: "A client acknowledges only an RPC whose response it holds whole or that it no longer has, so after its ack of an RPC (the ACK answering NEED_ACK, an ACK entry or a piggy-backed ack) it sends no RESEND for that RPC.",
			Source:    "HomaModule homa_incoming.c homa_need_ack_pkt (an RPC still receiving its response gets homa_request_retrans, not an ACK), homa_rpc.c homa_rpc_end and homa_peer.c homa_peer_add_ack (a client's pending acks name RPCs it ended with their responses whole); client ids are never reused (homa_rpc_alloc_client)",
			Capture:   "a RESEND seen no more than slack after the ack (jitter plus slack where the capture is not on the client's link) may have left first: the timer and the NEED_ACK handler run on different cores and NIC queues; no packet the capture lacks excuses it (both packets are in it, and the ack's claim that the client held the response is what the RESEND contradicts)",
			Property: Each{Types: []wire.PacketType{wire.TypeResend}, Check: func(c *Ctx, e *Event) Result {
				if !e.FromClient() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				if !r.Acked {
					return Pass() // no ack of the RPC before it
				}
				tol := c.P.Slack
				if !c.Net.atSender(e.Src) {
					tol += c.P.Jitter
				}
				if d := e.Time.Sub(r.AckTime); d > tol {
					return Violation("RESEND for the RPC %v after the client acknowledged it (frame %d): it acks only an RPC whose response it holds whole or no longer has",
						d.Round(time.Microsecond), r.AckFrame).With(r.AckFrame).WithSlack(tol)
				}
				return Pass().WithSlack(tol)
			}},
		},
	}
}
