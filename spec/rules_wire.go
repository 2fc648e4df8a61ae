package spec

import (
	"errors"
	"fmt"
	"time"

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
			Property: Each{Malformed: true, Usual: Usual{FactWellFormed, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.Err != nil {
					if e.SnapCut && errors.Is(e.Err, wire.ErrTruncated) {
						return Unsure("%v: the capture's snap length cut the frame (%s)", e.Err, SnapAdvice)
					}
					if e.IP.Fragment && errors.Is(e.Err, wire.ErrTruncated) {
						// A first IP fragment: the header goes on in the
						// next fragment (not joined); HOMA-WIRE-015
						// reports the fragmentation.
						return Skip
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
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactWellFormed, Passed}, Check: func(c *Ctx, e *Event) Result {
				if !malformedData(c.P, e) {
					return Pass()
				}
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
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactSameLength, Passed}, Check: func(c *Ctx, e *Event) Result {
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
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Partial: true, Usual: Usual{FactMarks, Passed}, Check: func(c *Ctx, e *Event) Result {
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
			Property: Each{Types: controlTypes, Partial: true, Check: func(c *Ctx, e *Event) Result {
				if d := e.Packet.Common().Doff(); d != wire.DoffControl {
					return Violation("%s doff byte 0x%02x, want 0x50", e.Type(), d)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-006", Level: Must,
			Facts:     []string{"WIRE-05"},
			Statement: "The DATA retransmit byte is 0 or 1, and retransmitted DATA (retransmit=1) carries its true offset in seg.offset, never the 0xFFFFFFFF sentinel.",
			Source:    "HomaModule homa_outgoing.c homa_resend_data (the only writer of retransmit, with 1), homa_tx_data_pkt_alloc (0); homa_wire.h homa_data_hdr (a u8 flag)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit, Check: func(c *Ctx, e *Event) Result {
				d := e.Packet.Data()
				if d.Retransmit() == 0 {
					return Skip
				}
				if r := d.Retransmit(); r != 1 {
					// Receivers read any nonzero value as a
					// retransmission; HomaModule writes only 1.
					return Violation("retransmit byte is %d, want 0 or 1", r)
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
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactIncomingU, Passed}, Check: func(c *Ctx, e *Event) Result {
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
			Property: AtMost{Types: []wire.PacketType{wire.TypeAck}, Partial: true, PartialNeeds: []string{"num_acks"}, What: func(*Event) string { return "num_acks" }, Measure: func(c *Ctx, e *Event) (int64, int64, bool) {
				return int64(e.Packet.Ack().NumAcks()), int64(c.P.MaxAcksPerPkt), true
			}},
		},
	}
}

// unsetHeader is HOMA-WIRE-009's finding for a nonzero unused byte of a
// DATA (data) or control packet: a violation where the parameters say the
// implementation zeroes its headers (zeroed_headers 1), otherwise
// inconclusive, as the linux profile spans releases that leave those
// bytes unset. HomaModule zeroes the DATA header only since 2bb8413
// (homa_outgoing.c homa_tx_data_pkt_alloc; before, the skb's memory) and
// control headers only since 71e14d8 (homa_xmit_control's callers;
// linux_6.13.9 fills a stack struct, homa_timer.c homa_timer_check_rpc,
// homa_incoming.c homa_resend_pkt).
func unsetHeader(p *Params, data bool, format string, args ...any) Result {
	switch {
	case p.ZeroedHeaders != 0:
		return Violation(format, args...)
	case data:
		return Unsure(format+" (DATA headers are zeroed only since HomaModule 2bb8413, 2026-06-26; --param zeroed_headers=1 for a build that zeroes them)", args...)
	}
	return Unsure(format+" (control headers are zeroed only since HomaModule 71e14d8, 2026-03-20: linux_6.13.9 and earlier builds send them from the stack; --param zeroed_headers=1 for a build that zeroes them)", args...)
}

// msgName names the message a DATA or control packet is about.
func msgName(fromClient bool) string {
	if fromClient {
		return "request"
	}
	return "response"
}

var _ = fmt.Sprintf

// wireRules2: header fields the first wire rules leave open (HomaModule
// homa_wire.h, homa_outgoing.c).
func wireRules2() []*Rule {
	data := []wire.PacketType{wire.TypeData}
	return []*Rule{
		{
			ID: "HOMA-WIRE-009", Level: Must,
			Facts:     []string{"WIRE-04"},
			Statement: "Header bytes HomaModule leaves unused are 0: the 3 ack bytes and window of every packet, sequence in every control packet, the DATA pad bytes; upstream also flags and urgent (reserved).",
			Source:    "HomaModule homa_outgoing.c homa_xmit_control, homa_xmit_unknown and homa_need_ack_pkt (memset of the header, since 71e14d8), homa_tx_data_pkt_alloc (memset of the DATA header, since 2bb8413); homa_wire.h reserved1/reserved2 (upstream)",
			Profiles:  []string{"linux", "upstream"},
			Capture:   "nonzero DATA ack bytes, window or pad are inconclusive: HomaModule zeroes the DATA header only since 2bb8413 (2026-06-26), and net-next, linux_6.13.9, rhel8/rhel_9.5 and earlier main send those bytes as the skb memory held them (zero on kernels that zero allocations, init_on_alloc); so are a control packet's nonzero ack bytes, window or sequence: its header is zeroed only since 71e14d8 (2026-03-20), linux_6.13.9 and earlier builds fill it in a stack struct (zero on kernels built with INIT_STACK_ALL_ZERO); all are violations with zeroed_headers 1 (a build that zeroes them: HomaModule main since 2bb8413, the reference implementation, whose hello says so), and the upstream reserved fields always",
			Property: Each{Partial: true, PartialNeeds: []string{"pad"}, Usual: Usual{FactUnusedZero, Passed}, Check: func(c *Ctx, e *Event) Result {
				cm := e.Packet.Common()
				data := e.Type() == wire.TypeData
				if a := cm.AckBytes(); a != [3]byte{} {
					return unsetHeader(c.P, data, "ack bytes %02x%02x%02x, want 0", a[0], a[1], a[2])
				}
				if w := cm.Window(); w != 0 {
					return unsetHeader(c.P, data, "window 0x%04x, want 0", w)
				}
				if !data && cm.Sequence() != 0 && e.Type() != wire.TypeFreeze {
					return unsetHeader(c.P, false, "%s with sequence %d, want 0", e.Type(), cm.Sequence())
				}
				if data && e.Segment == 0 {
					if b := e.Packet.Bytes(); len(b) >= 52 && (b[49] != 0 || b[50] != 0 || b[51] != 0) {
						return unsetHeader(c.P, data, "DATA pad bytes %02x%02x%02x, want 0", b[49], b[50], b[51])
					}
				}
				if c.P.Wire == wire.VersionUpstream && (cm.Flags() != 0 || cm.Urgent() != 0) {
					return Violation("reserved1 0x%02x reserved2 0x%04x, want 0 (upstream has no TCP-imitation marks)", cm.Flags(), cm.Urgent())
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-010", Level: Must,
			Facts:     []string{"WIRE-05"},
			Statement: "DATA carries its offset where its framing says: doff 0xE0 (one segment) or 0xD0 (a GSO segment, not hijacked); a fresh one-segment packet has seg.offset 0xFFFFFFFF and the offset in sequence (hijacked: every segment), a GSO segment the true offset in seg.offset and in sequence its batch's first offset (software GSO, homa_gso_segment: a whole number of max_seg_data segments before a full one) or that advanced by gso_size, max_seg_data plus the 4-byte seg header, per segment (a NIC doing TSO treats the header as TCP's: 4 bytes past its own offset per segment before it); either way no further from the batch's first offset than one skb of max_gso_size holds; a retransmission seg.offset = sequence; upstream always the true seg.offset.",
			Source:    "HomaModule homa_outgoing.c homa_tx_data_pkt_alloc (seg.offset -1, or the offset with doff 13 when segs > 1 and not hijacked; gso_size max_seg_data + sizeof(homa_seg_hdr)), homa_resend_data (sequence = seg.offset = offset); homa_offload.c homa_gso_segment (skb_segment copies the header), homa_gro_receive; homa_wire.h (sequence is right only in a TSO batch's first segment)",
			Property: Each{Types: data, Usual: Usual{FactOneSegFraming, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.Segment > 0 {
					return Skip // one header per frame
				}
				d := e.Packet.Data()
				cm := d.Common()
				doff, seg, seq := cm.Doff(), d.SegOffset(), cm.Sequence()
				if c.P.Wire == wire.VersionUpstream {
					if seg == wire.SegOffsetInSequence {
						return Violation("upstream DATA with seg.offset 0xFFFFFFFF (upstream always writes the offset)")
					}
					return Pass()
				}
				switch {
				case doff != wire.DoffData && doff != wire.DoffGSO:
					return Violation("DATA doff byte 0x%02x, want 0xe0 or 0xd0", doff)
				case d.Retransmit() != 0:
					if seg != seq {
						return Violation("retransmitted DATA with seg.offset %d and sequence %d, want both the offset", seg, seq)
					}
				case doff == wire.DoffGSO:
					switch {
					case e.Hijacked:
						return Violation("hijacked DATA with doff 0xd0 (hijacked segments repeat the whole 56-byte header)")
					case seg == wire.SegOffsetInSequence:
						return Violation("GSO-segment DATA (doff 0xd0) with seg.offset 0xFFFFFFFF, want the true offset")
					case seq > seg && (seq-seg)%wire.SegHeaderLen != 0:
						return Violation("GSO-segment DATA at offset %d whose sequence %d lies %d bytes beyond it: neither its batch's first offset nor a TSO advance from it (%d bytes per segment)", seg, seq, seq-seg, wire.SegHeaderLen)
					case seq > seg && e.Length > 0 && uint32(e.Length) == maxSegData(c.P.MTU, e.IPv6()) && !tsoBatch(seg, seq, uint32(e.Length)):
						return Violation("GSO-segment DATA at offset %d whose sequence %d would be segment %d of a TSO batch, which would start before offset 0", seg, seq, (seq-seg)/wire.SegHeaderLen)
					case seq > seg && (seq-seg)/wire.SegHeaderLen >= skbSegs(c.P, e):
						// One skb holds at most max_gso_size bytes
						// (homa_message_out_fill), so a TSO batch has no
						// more segments than that fits (HOMA-GRANT-005).
						return Violation("GSO-segment DATA at offset %d whose sequence %d would be segment %d of a TSO batch, but one skb holds %d segments with max_gso_size %d", seg, seq, (seq-seg)/wire.SegHeaderLen, skbSegs(c.P, e), c.P.MaxGSOSize)
					case seq <= seg && seg-seq >= eventSkb(c.P, e):
						return Violation("GSO-segment DATA at offset %d whose sequence %d is %d bytes before it: its batch would be longer than one skb's %d data bytes with max_gso_size %d", seg, seq, seg-seq, eventSkb(c.P, e), c.P.MaxGSOSize)
					case seq <= seg && e.Length > 0 && uint32(e.Length) == maxSegData(c.P.MTU, e.IPv6()) && (seg-seq)%uint32(e.Length) != 0:
						// A batch's segments before the last are all
						// max_seg_data long (homa_tx_data_pkt_alloc), so a
						// full one lies a whole number of them after its
						// batch's first offset.
						return Violation("GSO-segment DATA at offset %d whose sequence %d is %d bytes before it, not a whole number of %d-byte segments: not its batch's first offset", seg, seq, seg-seq, e.Length)
					}
				case seg != wire.SegOffsetInSequence:
					return Violation("first-transmission DATA with doff 0xe0 and seg.offset %d: a fresh one-segment packet carries 0xFFFFFFFF (offset %d in sequence)", seg, seq)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-011", Level: Must,
			Facts:     []string{"WIRE-02"},
			Statement: "All packets of one RPC travel between the same two ports: a client never has two live RPCs with one id, to one server or to two (ids are host-wide, and a client finds its RPCs by id alone).",
			Source:    "HomaModule homa_rpc.c homa_rpc_alloc_client (next_outgoing_id, one counter per host) and homa_rpc_find_client (by id only), homa_outgoing.c homa_tx_data_pkt_alloc and homa_xmit_control (ports from the RPC), homa_incoming.c homa_rpc_unknown_pkt (a client keeps its RPC, and so its ports, after the server's RPC_UNKNOWN: it restarts the request)",
			Capture:   "judged while the RPC is live (not acknowledged, no RPC_UNKNOWN from its client, a packet within timeout_ticks; the server's RPC_UNKNOWN leaves it live: the client restarts it with the same ports); a second server is judged at the client's DATA, GRANT, RESEND and BUSY (ACK and RPC_UNKNOWN answer whatever server asked); a host whose Homa module restarted reuses ids",
			Property: Each{Usual: Usual{FactSocketsUsual, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.FromClient() && clientRPCPacket(e.Type()) {
					if o := c.T.SameIDElsewhere(e); o != nil && !o.Acked && !clientForgot(o) && e.Time.Sub(o.Last) <= c.P.Ticks(c.P.TimeoutTicks) {
						return Violation("%s of RPC %d to server %v, while the client's RPC %d to server %v (frame %d, last packet %v earlier) is live: a client finds its RPCs by id alone",
							e.Type(), o.Key.ClientID, e.Dst, o.Key.ClientID, o.Key.Server, o.FirstFrame, e.Time.Sub(o.Last).Round(time.Microsecond)).With(o.FirstFrame)
					}
				}
				r := c.T.Lookup(e)
				if r == nil || r.Acked || clientForgot(r) || e.Type() == wire.TypeFreeze {
					return Skip
				}
				if e.Type() == wire.TypeAck {
					return Skip // an overflow ACK may name an RPC of another server port
				}
				if !sameSockets(r, e) {
					sp, dp := e.Packet.Common().Sport(), e.Packet.Common().Dport()
					return Violation("%s of RPC %d between ports %d and %d, but the RPC's earlier packets (frame %d) used client port %d and server port %d",
						e.Type(), r.Key.ClientID, sp, dp, r.FirstFrame, r.ClientPort, r.ServerPort).With(r.FirstFrame)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-WIRE-012", Level: Should,
			Statement: "The IPv4 TOS byte or IPv6 traffic class carries only the priority: the bits below it (lower DSCP bits and ECN) are 0.",
			Source:    "HomaModule homa_outgoing.c __homa_xmit_control, __homa_xmit_data (tos = priority_map[p] << 5; IPv6 <<4 before 548056f)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "a router that re-marks DSCP or sets ECN between the sender and the capture point changes these bits",
			Property: Each{Partial: true, Usual: Usual{FactTOSClean, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.PrioShift == 0 {
					return Skip
				}
				if low := e.TOS & (1<<e.PrioShift - 1); low != 0 {
					return Violation("TOS/traffic class 0x%02x has bits 0x%02x set below the priority (shift %d)", e.TOS, low, e.PrioShift)
				}
				return Pass()
			}},
		},
	}
}

// gsoBatchStart returns the first offset of the GSO batch whose segment at
// offset seg carries sequence seq, segments before it holding maxSeg bytes
// each (HOMA-WIRE-010): seq itself after software GSO (homa_gso_segment
// copies the header), seg less maxSeg per seg header the sequence runs
// ahead after a NIC's TSO (it advances the sequence by gso_size, maxSeg
// plus the 4-byte seg header, per segment). ok is false when seq runs
// ahead of seg by what no TSO batch from offset 0 on gives.
func gsoBatchStart(seg, seq, maxSeg uint32) (start uint32, ok bool) {
	if seq <= seg {
		return seq, true
	}
	if (seq-seg)%wire.SegHeaderLen != 0 || !tsoBatch(seg, seq, maxSeg) {
		return 0, false
	}
	return seg - (seq-seg)/wire.SegHeaderLen*maxSeg, true
}

// skbSegs returns how many segments the largest skb the sender of e
// builds under p holds (skbData over max_seg_data; at least 1).
func skbSegs(p *Params, e *Event) uint32 { return eventSkb(p, e) / maxSegData(p.MTU, e.IPv6()) }

// tsoBatch reports whether a segment at offset seg whose sequence seq runs
// ahead of it can be segment k = (seq-seg)/4 of a TSO batch of maxSeg-byte
// segments: one that starts at or after offset 0.
func tsoBatch(seg, seq, maxSeg uint32) bool {
	return uint64(seq-seg)/wire.SegHeaderLen*uint64(maxSeg) <= uint64(seg)
}

// clientForgot reports whether the client of r said RPC_UNKNOWN for it
// last (HOMA-WIRE-011): it no longer has the RPC. After the server's
// RPC_UNKNOWN the client keeps it, with its ports: homa_rpc_unknown_pkt
// restarts an outgoing request from offset 0 (homa_resend_data) or
// ignores the packet, and the server's next incarnation takes its ports
// from the restart's DATA.
func clientForgot(r *RPC) bool { return r.Unknown && r.UnknownFromClient }

// malformedData reports whether DATA event e breaks HOMA-WIRE-002: no
// bytes, bytes past message_length, or a message_length outside
// 1..max_message_length. A receiver may drop such a packet before it looks
// at anything else (the reference does; HomaModule's homa_add_packet drops
// it after the cutoff check), so no answer to it is owed.
func malformedData(p *Params, e *Event) bool {
	ml := e.Packet.Data().MessageLength()
	return ml == 0 || ml > p.MaxMessageLength || e.Length == 0 || uint64(e.Offset)+uint64(e.Length) > uint64(ml)
}
