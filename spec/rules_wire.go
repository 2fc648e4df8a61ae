package spec

import (
	"errors"
	"fmt"

	"github.com/homatest/homatest/spec/wire"
)

// wireRules: packet format (facts: HomaModule homa_wire.h, homa_plumbing.c
// homa_softirq).
func wireRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-WIRE-001", Level: Must,
			Facts:     []string{"WIRE-01"},
			Statement: "Every Homa packet has a known type (0x10-0x18) and is at least as long as its type's header.",
			Source:    "HomaModule homa_plumbing.c homa_softirq (per-type minimum lengths); homa_wire.h",
			Property: Each{Malformed: true, Check: func(c *Ctx, e *Event) Result {
				if e.Err != nil {
					if e.SnapCut && errors.Is(e.Err, wire.ErrTruncated) {
						return Unsure("%v: the capture's snap length cut the frame (take captures with a larger snap length, e.g. tcpdump -s 256)", e.Err)
					}
					return Violation("%v", e.Err)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-002", Level: Must,
			Facts:     []string{"WIRE-03"},
			Statement: "A DATA packet carries at least one byte, its bytes lie inside the message, and message_length is between 1 and 1,000,000.",
			Source:    "HomaModule homa_outgoing.c homa_message_out_fill; homa_incoming.c homa_add_packet",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				ml := e.Packet.Data().MessageLength()
				switch {
				case ml == 0 || ml > c.P.MaxMessageLength:
					return Violation("message_length %d is outside 1..%d", ml, c.P.MaxMessageLength)
				case e.Length == 0:
					return Violation("DATA at offset %d carries no data bytes", e.Offset)
				case uint64(e.Offset)+uint64(e.Length) > uint64(ml):
					return Violation("bytes [%d, %d) run past message_length %d", e.Offset, uint64(e.Offset)+uint64(e.Length), ml)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-003", Level: Must,
			Facts:     []string{"WIRE-02"},
			Statement: "All DATA packets of one message carry the same message_length.",
			Source:    "HomaModule homa_outgoing.c homa_tx_data_pkt_alloc, homa_resend_data (header copied)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				r := c.T.Lookup(e)
				if r == nil {
					return Pass()
				}
				m := r.Msg(e.Packet.Role())
				if ml := e.Packet.Data().MessageLength(); m.Length != 0 && ml != m.Length {
					return Violation("message_length %d differs from %d in earlier DATA of this message", ml, m.Length)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-004", Level: Must,
			Facts:     []string{"WIRE-04"},
			Statement: "Every packet carries flags 0x06 and urgent 0xB97D (the TCP-imitation marks).",
			Source:    "HomaModule homa_hijack.h homa_hijack_set_hdr (applied on every transmit path)",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Check: func(c *Ctx, e *Event) Result {
				cm := e.Packet.Common()
				if !cm.HasMarks() {
					return Violation("flags 0x%02x urgent 0x%04x, want 0x06 and 0xb97d", cm.Flags(), cm.Urgent())
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-005", Level: Must,
			Facts:     []string{"WIRE-04"},
			Statement: "Control packets carry doff 5 (byte 0x50) so that TSO and TCP-hijacked paths see a sane TCP header.",
			Source:    "HomaModule homa_outgoing.c __homa_xmit_control (commit 82b6b88)",
			Profiles:  []string{"linux"},
			Property: Each{Check: func(c *Ctx, e *Event) Result {
				if e.Type() == wire.TypeData {
					return Skip
				}
				if d := e.Packet.Common().Doff(); d != wire.DoffControl {
					return Violation("%s doff byte 0x%02x, want 0x50", e.Type(), d)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-006", Level: Must,
			Facts:     []string{"WIRE-05"},
			Statement: "Retransmitted DATA (retransmit=1) carries its true offset in seg.offset, never the 0xFFFFFFFF sentinel.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				d := e.Packet.Data()
				if d.Retransmit() == 0 {
					return Skip
				}
				if d.SegOffset() == wire.SegOffsetInSequence {
					return Violation("retransmitted DATA has seg.offset 0xFFFFFFFF (offset only in sequence %d)", d.Common().Sequence())
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-007", Level: Must,
			Facts:     []string{"WIRE-06"},
			Statement: "In first transmissions, the DATA incoming field equals the message's unscheduled bytes U = min(message_length, unsched_bytes) in every packet.",
			Source:    "HomaModule homa_outgoing.c homa_tx_data_pkt_alloc",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				d := e.Packet.Data()
				if d.Retransmit() != 0 {
					return Skip
				}
				if u := c.P.Unsched(d.MessageLength()); d.Incoming() != u {
					return Violation("incoming %d, want U = min(%d, unsched_bytes %d) = %d", d.Incoming(), d.MessageLength(), c.P.UnschedBytes, u)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-008", Level: Must,
			Facts:     []string{"WIRE-01", "ACK-03"},
			Statement: "An ACK packet lists at most 5 acks (num_acks ≤ HOMA_MAX_ACKS_PER_PKT).",
			Source:    "HomaModule homa_wire.h homa_ack_hdr; homa_incoming.c homa_ack_pkt",
			Property: AtMost{Types: []wire.PacketType{wire.TypeAck}, Measure: func(c *Ctx, e *Event) (int64, int64, string, bool) {
				return int64(e.Packet.Ack().NumAcks()), int64(c.P.MaxAcksPerPkt), "num_acks", true
			}},
		},
	}
}

// msgName names the message a DATA or control packet is about.
func msgName(fromClient bool) string {
	if fromClient {
		return "request"
	}
	return "response"
}

var _ = fmt.Sprintf
