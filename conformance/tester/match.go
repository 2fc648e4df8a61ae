package tester

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/homatest/homatest/spec/wire"
)

// Match selects packets the Peer received. Zero fields match anything.
type Match struct {
	// Type is the packet type (0: any).
	Type wire.PacketType
	// From is the sender's IP address (invalid: any).
	From netip.Addr
	// RPC is the client's RPC id: the packet's sender_id must be RPC (a
	// packet from the client) or RPC^1 (from the server), as HomaModule
	// homa_local_id pairs them (0: any RPC).
	RPC uint64
	// Checks are field expectations; a packet matches only if every check
	// returns nil. The first failing check of the closest candidate is
	// reported when nothing matches.
	Checks []Check
}

// Check is one field expectation over a decoded packet and its IP priority;
// it returns nil or an error of the form "field: want X, got Y".
type Check func(p *Packet) error

// String describes the match, e.g. "GRANT from 198.18.0.1 for RPC 100 with offset=20000".
func (m Match) String() string {
	var b strings.Builder
	if m.Type != 0 {
		b.WriteString(m.Type.String())
	} else {
		b.WriteString("any packet")
	}
	if m.From.IsValid() {
		fmt.Fprintf(&b, " from %s", m.From)
	}
	if m.RPC != 0 {
		fmt.Fprintf(&b, " for RPC %d", m.RPC)
	}
	return b.String()
}

// selects reports whether p is a candidate (type, sender, RPC), before checks.
func (m Match) selects(p *Packet) bool {
	if p.Sent || p.Err != nil {
		return false
	}
	if m.Type != 0 && p.Pkt.Type() != m.Type {
		return false
	}
	if m.From.IsValid() && p.Src != m.From {
		return false
	}
	if m.RPC != 0 && p.Pkt.SenderID()&^1 != m.RPC&^1 {
		return false
	}
	return true
}

// check runs the checks and returns the first failure.
func (m Match) check(p *Packet) error {
	for _, c := range m.Checks {
		if err := c(p); err != nil {
			return err
		}
	}
	return nil
}

// Field returns a Check that the uint64 value get(p) equals want.
func Field(name string, want uint64, get func(p *Packet) uint64) Check {
	return func(p *Packet) error {
		if got := get(p); got != want {
			return fmt.Errorf("%s: want %d, got %d", name, want, got)
		}
		return nil
	}
}

// FieldIn returns a Check that lo ≤ get(p) ≤ hi.
func FieldIn(name string, lo, hi uint64, get func(p *Packet) uint64) Check {
	return func(p *Packet) error {
		if got := get(p); got < lo || got > hi {
			if lo == hi {
				return fmt.Errorf("%s: want %d, got %d", name, lo, got)
			}
			return fmt.Errorf("%s: want %d..%d, got %d", name, lo, hi, got)
		}
		return nil
	}
}

// GrantOffset checks a GRANT's offset field (bytes).
func GrantOffset(want uint32) Check {
	return Field("offset", uint64(want), func(p *Packet) uint64 { return uint64(p.Pkt.Grant().Offset()) })
}

// GrantPriority checks a GRANT's priority field is within lo..hi.
func GrantPriority(lo, hi uint8) Check {
	return FieldIn("grant priority", uint64(lo), uint64(hi), func(p *Packet) uint64 { return uint64(p.Pkt.Grant().Priority()) })
}

// IPPriority checks the IP precedence level of the packet is within lo..hi.
func IPPriority(lo, hi uint8) Check {
	return FieldIn("IP priority", uint64(lo), uint64(hi), func(p *Packet) uint64 { return uint64(p.Priority) })
}

// ResendRange checks a RESEND asks for exactly [offset, offset+length).
func ResendRange(offset, length uint32) Check {
	return func(p *Packet) error {
		r := p.Pkt.Resend()
		if r.Offset() != offset || r.Length() != length {
			return fmt.Errorf("range: want offset %d length %d, got offset %d length %d",
				offset, length, r.Offset(), r.Length())
		}
		return nil
	}
}

// DataOffset checks a DATA packet's segment offset.
func DataOffset(want uint32) Check {
	return Field("offset", uint64(want), func(p *Packet) uint64 { return uint64(p.Pkt.Data().Offset()) })
}

// Retransmit checks a DATA packet's retransmit flag (1 or 0).
func Retransmit(want bool) Check {
	w := uint64(0)
	if want {
		w = 1
	}
	return Field("retransmit", w, func(p *Packet) uint64 { return uint64(p.Pkt.Data().Retransmit()) })
}

// CutoffVersion checks a DATA packet's cutoff_version.
func CutoffVersion(want uint16) Check {
	return Field("cutoff_version", uint64(want), func(p *Packet) uint64 { return uint64(p.Pkt.Data().CutoffVersion()) })
}

// Ports checks the common header's sport and dport.
func Ports(sport, dport uint16) Check {
	return func(p *Packet) error {
		c := p.Pkt.Common()
		if c.Sport() != sport || c.Dport() != dport {
			return fmt.Errorf("ports: want %d>%d, got %d>%d", sport, dport, c.Sport(), c.Dport())
		}
		return nil
	}
}

// describe renders the type-specific fields of p.
func describe(p wire.Packet) string {
	c := p.Common()
	s := fmt.Sprintf("%d>%d id %d", c.Sport(), c.Dport(), p.SenderID())
	switch p.Type() {
	case wire.TypeData:
		d := p.Data()
		s += fmt.Sprintf(" msg_len %d off %d len %d incoming %d cutoff_version %d", d.MessageLength(),
			d.Offset(), d.DataLen(), d.Incoming(), d.CutoffVersion())
		if d.Retransmit() != 0 {
			s += " retransmit"
		}
	case wire.TypeGrant:
		g := p.Grant()
		s += fmt.Sprintf(" offset %d priority %d", g.Offset(), g.Priority())
	case wire.TypeResend:
		r := p.Resend()
		s += fmt.Sprintf(" offset %d length %d priority %d", r.Offset(), r.Length(), r.Priority())
	case wire.TypeCutoffs:
		cu := p.Cutoffs()
		s += fmt.Sprintf(" cutoffs %v version %d", cu.UnschedCutoffs(), cu.CutoffVersion())
	case wire.TypeAck:
		s += fmt.Sprintf(" num_acks %d", p.Ack().NumAcks())
	}
	return s
}
