package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// grantMsg returns the message a GRANT (or RESEND) is about: the one sent
// by the other side of the RPC.
func grantMsg(c *Ctx, e *Event) (*RPC, *Message) {
	r := c.T.Lookup(e)
	if r == nil {
		return nil, nil
	}
	return r, r.Msg(oppositeRole(e.Packet.Role()))
}

// grantRules: receiver-driven grants (HomaModule homa_grant.c).
func grantRules() []*Rule {
	grant := []wire.PacketType{wire.TypeGrant}
	return []*Rule{
		{
			ID: "HOMA-GRANT-001", Level: Must,
			Statement: "Only messages longer than unsched_bytes receive GRANTs.",
			Source:    "HomaModule homa_grant.c homa_grant_init_rpc",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("GRANT for a message with no DATA in the capture: its length is unknown")
				}
				if m.Length <= c.P.UnschedBytes {
					return Violation("GRANT offset %d for a %d-byte message, which fits in unsched_bytes %d", e.Packet.Grant().Offset(), m.Length, c.P.UnschedBytes)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-002", Level: Must,
			Statement: "A GRANT offset never exceeds the message length and always exceeds the unscheduled bytes U.",
			Source:    "HomaModule homa_grant.c homa_grant_try_send, homa_grant_check_fifo",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || m.Length == 0 {
					return Unsure("GRANT for a message with no DATA in the capture")
				}
				off := e.Packet.Grant().Offset()
				switch {
				case off > m.Length:
					return Violation("GRANT offset %d beyond message_length %d", off, m.Length)
				case off <= c.P.Unsched(m.Length):
					return Violation("GRANT offset %d not above U = %d", off, c.P.Unsched(m.Length))
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-003", Level: Must,
			Statement: "GRANT offsets for one message strictly increase (on main a repeat of exactly the message length is tolerated; linux_6.1.38 never repeats one).",
			Source:    "HomaModule homa_grant.c homa_grant_try_send (granted only grows; main may resend offset = length), linux_6.1.38 homa_grant_send (only a positive increment is sent); fault @7774497",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "packets reordered between the receiver and the capture point look like a decrease; capture on the receiver's link",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || m.Grants == 0 {
					return Pass()
				}
				off := e.Packet.Grant().Offset()
				// main's homa_grant_try_send can send a zero increment to a
				// fully granted RPC (facts §8); linux_6.1.38's
				// homa_grant_send returns early unless the increment is
				// positive, so there a repeat is the BR-07 fault.
				repeatOK := off == m.Granted && off == m.Length && c.P.Wire != wire.Version2024
				if off <= m.Granted && !repeatOK {
					return Violation("GRANT offset %d does not exceed the earlier GRANT offset %d", off, m.Granted)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-004", Level: Must,
			Statement: "No GRANT is sent for a message whose bytes have all arrived.",
			Source:    "HomaModule homa_grant.c homa_grant_check_rpc (complete messages leave the grantable set); fault @312e4bd",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "the capture must be on the receiver's side of any loss; slack covers packets still in flight to the receiver",
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				_, m := grantMsg(c, e)
				if m == nil || !m.Complete {
					return Pass()
				}
				if late := e.Time.Sub(m.CompleteTime); late > c.P.Slack {
					return Violation("GRANT offset %d sent %v after the last byte of the %d-byte message was seen (frame %d)",
						e.Packet.Grant().Offset(), late, m.Length, m.CompleteFrame).With(m.CompleteFrame).WithSlack(c.P.Slack)
				}
				return Pass().WithSlack(c.P.Slack)
			}},
		},
		{
			ID: "HOMA-GRANT-005", Level: Must,
			Statement: "A sender never transmits new bytes beyond its grant horizon, max(U, GRANT offsets, RESEND ends), by more than one skb's data (max(max_gso_size, one 1424-byte segment)).",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data; homa_incoming.c homa_resend_pkt (RESEND raises the horizon)",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Pass()
				}
				m := r.Msg(e.Packet.Role())
				if m.ResendAll {
					return Pass()
				}
				h := m.Horizon(c.P)
				if h == 0 {
					h = c.P.Unsched(e.Packet.Data().MessageLength())
				}
				// The skb that crosses the horizon starts below it, so the
				// overshoot is less than one skb's data (SND-03).
				allowed := skbData(c.P.MaxGSOSize, e.Src.Is6() && !e.Src.Is4In6())
				if e.End() >= h+allowed {
					return Violation("new DATA [%d, %d) ends %d bytes past the grant horizon %d (one skb holds %d data bytes with max_gso_size %d)",
						e.Offset, e.End(), e.End()-h, h, allowed, c.P.MaxGSOSize)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-GRANT-006", Level: Should,
			Statement: "A receiver grants at most max_overcommit messages at once: messages with granted but not yet received bytes never exceed it when a GRANT leaves.",
			Source:    "HomaModule homa_grant.c active set (HOMA_MAX_GRANTS, max_overcommit); SIGCOMM 2018 §3.4",
			Profiles:  []string{"linux", "linux-2024"},
			Capture:   "needs every DATA toward the receiver; loss after the capture point inflates the count",
			Property: AtMost{Types: grant, Measure: func(c *Ctx, e *Event) (int64, int64, string, bool) {
				g := e.Packet.Grant()
				if c.P.FIFOGrantIncrement > 0 && int(g.Priority()) == c.P.NumPriorities-2 {
					// FIFO grants go to the oldest message whether or not
					// it is in the active set (facts GRANT-06, FIFO-01).
					return 0, 0, "", false
				}
				_, cur := grantMsg(c, e)
				n := 0
				for _, m := range c.T.Granting(e.Src) {
					if m != cur && m.Granted > m.Received() {
						n++
					}
				}
				// The message this GRANT is for counts when, with this
				// GRANT, it has granted bytes not yet received (not only
				// when it had no GRANT before).
				if cur != nil && max(cur.Granted, g.Offset()) > cur.Received() {
					n++
				}
				return int64(n), int64(c.P.MaxOvercommit), fmt.Sprintf("messages granted by %v", e.Src), true
			}},
		},
		{
			ID: "HOMA-GRANT-007", Level: Must,
			Statement: "SRPT GRANTs carry a scheduled priority (at most max_sched_prio); only FIFO grants use level num_priorities-2.",
			Source:    "HomaModule homa_grant.c homa_grant_priority, homa_grant_check_fifo",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: grant, Check: func(c *Ctx, e *Event) Result {
				p := int(e.Packet.Grant().Priority())
				if p <= c.P.MaxSchedPrio {
					return Pass()
				}
				if c.P.FIFOGrantIncrement > 0 && p == c.P.NumPriorities-2 {
					return Pass()
				}
				return Violation("GRANT priority %d above max_sched_prio %d", p, c.P.MaxSchedPrio)
			}},
		},
		{
			ID: "HOMA-GRANT-008", Level: Must,
			Statement: "Scheduled DATA (first transmissions at or above U) is sent at the priority of the latest GRANT for that message (the previous one while the latest may still be in flight).",
			Source:    "HomaModule homa_outgoing.c homa_xmit_data; homa_incoming.c homa_grant_pkt",
			Profiles:  []string{"linux", "linux-2024"},
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Check: func(c *Ctx, e *Event) Result {
				if e.Retransmit() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil {
					return Skip
				}
				m := r.Msg(e.Packet.Role())
				if e.Offset < c.P.Unsched(m.Length) || m.Grants == 0 {
					return Skip
				}
				// Allowed: the priority of the latest GRANT sent at least
				// slack earlier (it has surely arrived), or of any GRANT
				// since (it may have).
				allowed := uint16(0)
				settled := false
				for i := len(m.RecentGrants) - 1; i >= 0; i-- {
					g := m.RecentGrants[i]
					allowed |= 1 << g.Priority
					if e.Time.Sub(g.Time) > c.P.Slack {
						settled = true
						break
					}
				}
				if !settled && len(m.RecentGrants) == 8 {
					return Pass().WithSlack(c.P.Slack) // older grants not kept: cannot tell
				}
				if allowed&(1<<e.Priority) == 0 {
					return Violation("scheduled DATA at offset %d sent at priority %d; the latest GRANT (%v earlier) says %d",
						e.Offset, e.Priority, e.Time.Sub(m.LastGrantTime).Round(time.Microsecond), m.LastGrantPriority).WithSlack(c.P.Slack)
				}
				return Pass()
			}},
		},
	}
}

// skbData returns the data bytes of the largest skb HomaModule builds with
// max_gso_size maxGSO at MTU 1500 (homa_message_out_fill): segments of
// max_seg_data (1424 IPv4, 1404 IPv6) with 4-byte interleaved seg headers,
// at least one segment (gso_size is raised to the MTU; main's default 0
// means one segment per skb).
func skbData(maxGSO uint32, v6 bool) uint32 {
	ipHdr, seg := uint32(20), uint32(wire.MaxSegDataIPv4)
	if v6 {
		ipHdr, seg = 40, wire.MaxSegDataIPv6
	}
	n := uint32(1)
	if maxGSO > ipHdr+wire.DataHeaderLen {
		n = max(1, (maxGSO-ipHdr-wire.DataHeaderLen+4)/(seg+4))
	}
	return n * seg
}

// bitsString renders a priority bit set as "{0,3}".
func bitsString(b uint16) string {
	s := "{"
	for i := 0; i < 16; i++ {
		if b&(1<<i) != 0 {
			if len(s) > 1 {
				s += ","
			}
			s += fmt.Sprint(i)
		}
	}
	return s + "}"
}
