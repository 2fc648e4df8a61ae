package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// sendRules: the sender's transmissions (HomaModule homa_outgoing.c
// homa_xmit_data, homa_incoming.c homa_grant_pkt).
func sendRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-SEND-001", Level: Should,
			Facts:     []string{"SND-02", "RTX-08"},
			Statement: "A GRANT that raises the horizon of a message whose sender had sent everything it was allowed, or a RESEND from its receiver asking for bytes the sender has not sent (past the horizon it takes it for a lost GRANT), is followed within response_timeout by new bytes of that message.",
			Source:    "HomaModule homa_incoming.c homa_grant_pkt (homa_xmit_data right away), homa_resend_pkt (a RESEND ending past msgout.granted raises it to the RESEND's end and calls homa_xmit_data: \"a grant packet was lost\"; BUSY as well when none of the range was sent), homa_outgoing.c homa_xmit_data (or the pacer when the NIC queue is long)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "not owed once the capture shows the RPC acknowledged; inconclusive while the sender transmits other messages with no more than one skb's data more left to send (its pacer sends the fewest bytes left first), where the capture may not show every packet the sender sends (a tap on another host's link, an inferred switch), and where the capture shows loss toward the sender after the capture point, unless the sender's BUSY after a RESEND shows a RESEND reached it (it answers BUSY only for one asking past what it sent)",
			Property: Within{
				TriggerTypes: []wire.PacketType{wire.TypeGrant, wire.TypeResend},
				Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
					var to uint64
					switch e.Type() {
					case wire.TypeGrant:
						to = uint64(e.Packet.Grant().Offset())
					case wire.TypeResend:
						rs := e.Packet.Resend()
						if rs.IsResendAll() || isBufferWakeup(c.P, rs) {
							return Obligation{}, false // {0, -1} asks for what was sent (homa_resend_pkt: end = tx_end)
						}
						to = uint64(rs.Offset()) + uint64(rs.Length())
					default:
						return Obligation{}, false
					}
					r, m := grantMsg(c, e)
					if r == nil || m.Length == 0 || m.SentEnd >= m.Length {
						return Obligation{}, false
					}
					if r.Acked {
						// Acknowledged: the RPC is gone at the server
						// (homa_rpc_acked ends it in any state), so no more
						// of its response is sent.
						return Obligation{}, false
					}
					h := m.Horizon(c.P)
					switch {
					case e.Type() == wire.TypeResend && to <= uint64(m.SentEnd):
						return Obligation{}, false // it asks only for bytes sent
					case e.Type() == wire.TypeGrant && (to <= uint64(h) || m.SentEnd < h):
						return Obligation{}, false // not stalled at the horizon
					}
					a := &newBytesAwait{k: KeyOf(e), sender: oppositeRole(e.Packet.Role()), from: m.SentEnd, s: e.Dst, byResend: e.Type() == wire.TypeResend, trig: e.Frame}
					o := Obligation{Key: rpcMsgKey{a.k, a.sender}, Await: a}
					if s := a.s; !c.Net.CapturePoint().SeesAllOf(s) {
						o.Moot = func(*Ctx) (string, bool) {
							return fmt.Sprintf("the capture may not show every packet %v sends: it may be sending other messages its pacer prefers", s), true
						}
					}
					return o, true
				},
				Bound: func(p *Params) time.Duration { return p.AnswerBound() },
			},
		},
		{
			ID: "HOMA-SEND-002", Level: Should,
			Facts:     []string{"SND-01"},
			Statement: "A sender transmits the new bytes of a message in offset order.",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data (walks msgout.packets from next_xmit; next_xmit_offset only grows)",
			Capture:   "on the sender's link only a race of two cores transmitting one RPC reorders; elsewhere a gap filled later by a first transmission is the network reordering before the capture point (a downgrade)",
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh | FactWellFormed | FactInOrder, Passed}, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() || e.Length == 0 {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				end := e.End()
				if m.Length > 0 {
					end = min(end, m.Length)
				}
				if e.Offset >= m.SentEnd || m.Seen.Overlaps(e.Offset, end) {
					return Pass() // in order, or a repeat (HOMA-RESEND-010)
				}
				if !c.Net.atSender(e.Src) {
					return Downgrade(CauseReorder, Evidence{e.Frame, fmt.Sprintf("first transmission [%d, %d) came after bytes up to %d", e.Offset, end, m.SentEnd)},
						"DATA [%d, %d) sent after bytes up to %d", e.Offset, end, m.SentEnd)
				}
				return Violation("first transmission [%d, %d) left after the sender had sent bytes up to %d", e.Offset, end, m.SentEnd)
			}},
		},
		{
			ID: "HOMA-SEND-003", Level: Should,
			Facts:     []string{"WIRE-05", "RTX-06"},
			Statement: "On a path from one host to another, the first transmissions of messages longer than one segment are not lost more often than retransmissions: a capture in which they are, over several loss episodes separated by packets that arrived, shows a device that drops the frames a message is first sent in (GSO/TSO frames) and passes the single-segment retransmissions.",
			Source:    "HomaModule homa_outgoing.c homa_tx_data_pkt_alloc (an skb of several segments gets gso_size and gso_type TCPv4/TCPv6, its data laid out by homa_fill_data_interleaved), homa_resend_data (each retransmitted segment in an skb of its own, without GSO); BR-35 (HomaModule#53, #26, a8b4026)",
			Capture:   "at the receiver or between the hosts, a first transmission lost is one whose bytes arrive only in retransmit=1 DATA (loss before the capture point); on the sender's link (where GSO frames above the MTU leave unsegmented) one the receiver's RESEND asks for, and a retransmission arrived once the receiver shows it has the whole message (the finding is then at the sender's next packet to it). The finding names the path, not the culprit: the sender's GSO marking (BR-35) and a middlebox that drops segmented Homa frames look the same. Bursty loss (an overflowing switch buffer, a bursty link) also falls more on first transmissions, sent back to back, than on retransmissions, so the rule judges only a path that lost at least 90% of its first transmissions",
			Property: Each{Usual: Usual{FactFresh | FactNoLossVerdict, NotApplicable}, Check: func(c *Ctx, e *Event) Result {
				if pl := c.Net.firedNow; pl != nil && pl.fired == e.Frame && pl.firedSeg == e.Segment {
					var fs []int
					for _, f := range pl.firedFrames {
						if f != e.Frame {
							fs = append(fs, f)
						}
					}
					return Violation("%s", pl.why).With(fs...)
				}
				if e.Retransmit() {
					return Pass() // a retransmission: a trial of the statistic
				}
				return Skip
			}},
		},
	}
}

// newBytesAwait is HOMA-SEND-001's obligation at a GRANT past a stalled
// message's horizon: sender s sends new bytes of message (k, sender)
// from offset from. It is excused while s sends another message or
// when RPC_UNKNOWN ends the RPC.
type newBytesAwait struct {
	k      RPCKey
	sender wire.Role
	from   uint32
	s      netip.Addr
	// byResend: a RESEND raised the horizon; arrived: the sender's BUSY
	// since then shows such a RESEND reached it (see Arrived).
	byResend, arrived bool
	trig              int // the trigger's frame
}

// Arrived reports whether the capture shows the trigger reached the
// sender: a BUSY from it after a RESEND that raised the horizon (a sender
// stalled at its horizon answers BUSY only to a RESEND asking past what
// it sent, homa_resend_pkt, which raises the horizon too).
func (a *newBytesAwait) Arrived() bool { return a.arrived }

// Match reports whether x is a first transmission of the message past from.
func (a *newBytesAwait) Match(c *Ctx, x *Event) bool {
	return x.Type() == wire.TypeData && !x.Retransmit() && x.Packet.Role() == a.sender && KeyOf(x) == a.k && x.End() > a.from
}

// Excuse gives the reason x shows the sender may rightly not send yet.
func (a *newBytesAwait) Excuse(c *Ctx, x *Event) (string, bool) {
	switch {
	case x.Err != nil:
	case x.Type() == wire.TypeData && x.Src == a.s && KeyOf(x) != a.k && !x.Retransmit() && a.srptAhead(c, x):
		return fmt.Sprintf("%v is sending another message", a.s), true
	case x.Type() == wire.TypeRPCUnknown && KeyOf(x) == a.k:
		return "RPC_UNKNOWN: one side no longer knows the RPC", true
	case x.Type() == wire.TypeData && x.Retransmit() && x.Packet.Role() == a.sender && KeyOf(x) == a.k && x.End() > a.from:
		return "bytes past those the capture saw sent came retransmitted: the sender had sent them (lost before the capture point), or resends unsent bytes as retransmissions (before be5081e)", true
	case a.byResend && x.Type() == wire.TypeBusy && x.Src == a.s && KeyOf(x) == a.k:
		a.arrived = true
	}
	return "", false
}

// srptAhead reports whether x, new DATA of another message from the
// sender, may rightly go before the awaited bytes: its message has no
// more than one skb's data more left to send than the awaited one (the
// pacer sends the message with the fewest bytes left first,
// homa_pacer.c homa_add_to_throttled), or either length is unknown. A
// sender that spends the bound on messages with more left is not excused
// by them.
func (a *newBytesAwait) srptAhead(c *Ctx, x *Event) bool {
	r := c.T.rpcs[a.k]
	if r == nil {
		return true
	}
	m := r.Msg(a.sender)
	oLen, oSent := x.Packet.Data().MessageLength(), uint32(0) // a message's first packet: the trace has no RPC yet
	if o := c.T.Lookup(x); o != nil {
		if om := o.Msg(x.Packet.Role()); om.Length != 0 {
			oLen, oSent = om.Length, om.SentEnd
		}
	}
	if m.Length == 0 || oLen == 0 {
		return true
	}
	left, oLeft := int64(m.Length)-int64(m.SentEnd), int64(oLen)-int64(oSent)
	return oLeft <= left+int64(eventSkb(c.P, x))
}

// Expect describes the awaited DATA.
func (a *newBytesAwait) Expect() string {
	return fmt.Sprintf("new bytes from %d of the message", a.from)
}
