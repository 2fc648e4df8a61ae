package spec

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// UnschedPriority returns the unscheduled priority for a message of length
// bytes given a receiver's cutoffs (entry 0 counts as infinite): the
// largest i ≤ numPrio-1 with cutoffs[i] ≥ length (HomaModule homa_peer.c
// homa_unsched_priority).
// Package homa keeps its own copy on purpose: a shared one hides its bugs.
func UnschedPriority(cutoffs [8]uint32, numPrio int, length uint32) uint8 {
	for i := numPrio - 1; i > 0; i-- {
		if cutoffs[i] >= length {
			return uint8(i)
		}
	}
	return 0
}

// newPeerCutoffs is what a sender assumes before it has any CUTOFFS from a
// peer: {[7] = 0, [6] = INT_MAX}, the rest 0, whatever num_priorities is
// (homa_peer.c homa_peer_alloc, a kzalloc'd peer), so with 7 or 8 levels
// every unscheduled packet goes at level 6.
var newPeerCutoffs = [8]uint32{6: 0x7fffffff}

// newPeerLevelUnknown reports why the level of unscheduled DATA with
// cutoff_version 0 is undefined under p: with fewer than 7 levels
// homa_unsched_priority scans the new-peer table from num_priorities-1 down
// and finds no entry holding the message (entry 0 is 0 there), so it reads
// on past the table's start (main, linux_6.13.9, linux_6.1.38).
func newPeerLevelUnknown(p *Params, v uint16) (string, bool) {
	if v != 0 || p.NumPriorities >= 7 {
		return "", false
	}
	return fmt.Sprintf("DATA with cutoff_version 0 (no CUTOFFS yet) under num_priorities %d: homa_unsched_priority scans the new peer's table {[7]=0, [6]=INT_MAX} from level %d down, finds no entry holding the message and reads past the table's start, so its level is undefined", p.NumPriorities, p.NumPriorities-1), true
}

// cutoffsFor returns the cutoffs a sender used with cutoff_version v in
// DATA e: version 0 means the new-peer default; others come from the
// CUTOFFS with that version the receiver sent, or the profile's when the
// version is the profile's.
func cutoffsFor(c *Ctx, e *Event, v uint16) ([8]uint32, bool) {
	if v == 0 {
		return newPeerCutoffs, true
	}
	var cut [8]uint32
	found := false
	for _, s := range c.T.CutoffVersions(e.Src, e.Dst) {
		if s.Version == v {
			cut, found = s.Cutoffs, true
		}
	}
	if !found && v == c.P.CutoffVersion {
		cut, found = c.P.UnschedCutoffs, true
	}
	return cut, found
}

// cutoffsMayBeUnseen reports whether a CUTOFFS packet the capture lacks
// could explain unscheduled DATA e with cutoff_version v at a level
// other than the one cutoffsFor gives: only when the cutoffs came from
// the profile (no CUTOFFS with version v from the receiver is in the
// capture; version 0 is always the new-peer default) and e's level is one
// some consistent cutoffs give an unscheduled message: 1 to
// num_priorities-1, since the lowest unscheduled level sits above
// max_sched_prio ≥ 0 and holds HOMA_MAX_MESSAGE_LENGTH (HOMA-CUTOFF-004;
// HomaModule homa_incoming.c homa_cutoffs_pkt, homa_peer.c
// homa_unsched_priority).
func cutoffsMayBeUnseen(c *Ctx, e *Event, v uint16) bool {
	if levels := uint16(1)<<max(0, c.P.NumPriorities) - 2; v == 0 || e.PriorityBits()&levels == 0 {
		return false // no reading of e's level is 1 to num_priorities-1
	}
	for _, s := range c.T.CutoffVersions(e.Src, e.Dst) {
		if s.Version == v {
			return false
		}
	}
	return true
}

// prioRules: priorities in the IP header (HomaModule homa_outgoing.c).
func prioRules() []*Rule {
	return []*Rule{
		{
			ID: "HOMA-PRIO-001", Level: Must, Alone: true,
			Facts:     []string{"CTRL-01"},
			Statement: "Every control packet (all types but DATA) is sent at the highest priority level, num_priorities-1.",
			Source:    "HomaModule homa_outgoing.c __homa_xmit_control",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   tosRaceCapture,
			Property: Each{Types: controlTypes, Partial: true, JudgesLevel: true, Check: func(c *Ctx, e *Event) Result {
				if want := uint8(c.P.NumPriorities - 1); !e.AtPriority(want) {
					return Violation("%s at priority %s, want %d", e.Type(), e.levelText(), want).Wants(1<<want, time.Time{})
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-PRIO-004", Level: Must, Alone: true,
			Facts:     []string{"CTRL-01", "CTRL-02", "CUT-03"},
			Statement: "An IPv6 packet carries its priority in the traffic class shifted by ipv6_prio_shift: priority<<5 (bits 7-5) on HomaModule main since 548056f, priority<<4 before and on linux_6.1.38.",
			Source:    "HomaModule homa_outgoing.c __homa_xmit_control, __homa_xmit_data (ip6_xmit with the traffic class from priority_map); fix 548056f (2025-11-18)",
			Capture:   "judged only when ipv6_prio_shift names the build (linux-2024: 4; linux: 0, either, since main builds before and after 548056f share the wire format); a traffic class with bit 4 set was written with shift 4, one with bit 7 set with shift 5, others fit both",
			Property: Each{Needs: NeedsIPv6, Partial: true, Check: func(c *Ctx, e *Event) Result {
				s := c.P.IPv6PrioShift
				if s == 0 || !e.IPv6() {
					return Skip
				}
				switch {
				case s == 5 && e.TOS&0x10 != 0:
					return Violation("%s with traffic class 0x%02x: bit 4 set, so priority %d was written with shift 4 (HomaModule before 548056f), but ipv6_prio_shift is 5 (priority<<5)",
						e.Type(), e.TOS, e.TOS>>4)
				case s == 4 && e.TOS&0x80 != 0:
					return Violation("%s with traffic class 0x%02x: bit 7 set, so priority %d was written with shift 5 (HomaModule main since 548056f), but ipv6_prio_shift is 4 (priority<<4)",
						e.Type(), e.TOS, e.TOS>>5)
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-PRIO-002", Level: Must,
			Facts:     []string{"CUT-03"},
			Statement: "Unscheduled DATA is sent at the level the receiver's cutoffs give its message length, using the cutoffs whose version the packet carries (version 0: the new-peer default {[7]=0, [6]=INT_MAX}, level 6 with 7 or 8 levels).",
			Source:    "HomaModule homa_peer.c homa_unsched_priority, homa_peer_alloc; SIGCOMM 2018 §3.4",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   "version 0 under num_priorities below 7 is inconclusive: homa_unsched_priority scans the new-peer table from num_priorities-1 down, finds no entry holding the message and reads past the table's start; " + tosRaceCapture,
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactScheduledOffset, NotApplicable}, JudgesLevel: true, Check: func(c *Ctx, e *Event) Result {
				d := e.Packet.Data()
				if d.Retransmit() != 0 || e.Offset >= c.P.Unsched(d.MessageLength()) {
					return Skip
				}
				v := d.CutoffVersion()
				if why, ok := newPeerLevelUnknown(c.P, v); ok {
					return Unsure("%s", why)
				}
				cut, found := cutoffsFor(c, e, v)
				if !found {
					return Unsure("DATA carries cutoff_version %d, but no CUTOFFS with that version from %v is in the capture and the profile's is %d", v, e.Dst, c.P.CutoffVersion)
				}
				if want := UnschedPriority(cut, c.P.NumPriorities, d.MessageLength()); !e.AtPriority(want) {
					res := Violation("unscheduled DATA of a %d-byte message at priority %s, want %d from cutoffs version %d %v", d.MessageLength(), e.levelText(), want, v, cut).Wants(1<<want, time.Time{})
					if !cutoffsMayBeUnseen(c, e, v) {
						return res.Alone()
					}
					return res
				}
				return Pass()
			}},
		},
		{
			ID: "HOMA-PRIO-003", Level: Must,
			Facts:     []string{"CTRL-02", "RTX-09"},
			Statement: "A client restarting its request after RPC_UNKNOWN retransmits it at the unscheduled priority its cutoffs give the request's length.",
			Source:    "HomaModule homa_incoming.c homa_rpc_unknown_pkt (homa_resend_data at homa_unsched_priority)",
			Profiles:  []string{"linux", "linux-2024", "linux-2025"},
			Capture:   tosRaceCapture,
			Property: Each{Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit | NeedsRPCUnknownSeen, JudgesLevel: true, Check: func(c *Ctx, e *Event) Result {
				if !e.Retransmit() || !e.FromClient() {
					return Skip
				}
				r := c.T.Lookup(e)
				if r == nil || !r.Unknown || !r.UnknownTime.After(lastResendTo(r, wire.RoleClient)) || r.UnknownFromClient {
					return Skip // a retransmission for a RESEND: HOMA-RESEND-004
				}
				d := e.Packet.Data()
				if why, ok := newPeerLevelUnknown(c.P, d.CutoffVersion()); ok {
					return Unsure("%s", why)
				}
				cut, found := cutoffsFor(c, e, d.CutoffVersion())
				if !found {
					return Unsure("restart DATA carries cutoff_version %d, but no CUTOFFS with that version from %v is in the capture", d.CutoffVersion(), e.Dst)
				}
				if want := UnschedPriority(cut, c.P.NumPriorities, d.MessageLength()); !e.AtPriority(want) {
					return Violation("request restarted after RPC_UNKNOWN at priority %s, want the unscheduled level %d for %d bytes", e.levelText(), want, d.MessageLength()).Wants(1<<want, r.UnknownTime)
				}
				return Pass()
			}},
		},
	}
}
