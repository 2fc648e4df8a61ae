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

// Field returns a Check that the value get(p) derives from the packet
// equals want; name names it in the error. For a header field, use Is.
func Field(name string, want uint64, get func(p *Packet) uint64) Check {
	return FieldIn(name, want, want, get)
}

// FieldIn returns a Check that lo ≤ get(p) ≤ hi (see Field).
func FieldIn(name string, lo, hi uint64, get func(p *Packet) uint64) Check {
	return func(p *Packet) error { return inRange(name, lo, hi, get(p)) }
}

// inRange is the error of value got of name outside lo..hi, or nil.
func inRange(name string, lo, hi, got uint64) error {
	switch {
	case got >= lo && got <= hi:
		return nil
	case lo == hi:
		return fmt.Errorf("%s: want %d, got %d", name, lo, got)
	}
	return fmt.Errorf("%s: want %d..%d, got %d", name, lo, hi, got)
}

// Is returns a Check that the packet's header field name equals want:
// name is the field's HomaModule name as wire.Layout spells it ("offset",
// "priority", "length", "retransmit", "message_length", "cutoff_version",
// "sport", "ack.client_id", ...), read from the packet's own type and wire
// version (wire.Packet.Field), so one matcher serves every field of every
// type and version. A packet whose type or version lacks the field, or
// whose capture cut it, fails the check.
func Is(name string, want uint64) Check { return In(name, want, want) }

// In returns a Check that lo ≤ the packet's header field name ≤ hi (see
// Is for the names).
func In(name string, lo, hi uint64) Check {
	return func(p *Packet) error {
		got, ok := p.Pkt.Field(name)
		if !ok {
			return fmt.Errorf("%s: no such field in %s (%s)", name, p.Pkt.Type(), p.Pkt.Version())
		}
		return inRange(name, lo, hi, got)
	}
}

// IPPriority checks the IP precedence level of the packet is within lo..hi.
func IPPriority(lo, hi uint8) Check {
	return FieldIn("IP priority", uint64(lo), uint64(hi), func(p *Packet) uint64 { return uint64(p.Priority) })
}

// DataOffset checks a DATA packet's offset in its message: seg.offset, or
// common.sequence where seg.offset is 0xFFFFFFFF (wire.Data.Offset), so not
// one header field.
func DataOffset(want uint32) Check {
	return Field("offset", uint64(want), func(p *Packet) uint64 { return uint64(p.Pkt.Data().Offset()) })
}

// DataOffsetIn checks a DATA packet's offset in its message (as
// DataOffset) is within lo..hi.
func DataOffsetIn(lo, hi uint32) Check {
	return FieldIn("offset", uint64(lo), uint64(hi), func(p *Packet) uint64 { return uint64(p.Pkt.Data().Offset()) })
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
