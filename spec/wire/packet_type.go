package wire

import "fmt"

// PacketType is the opcode in byte 11 of every Homa header (enum homa_packet_type
// in HomaModule homa_wire.h).
type PacketType uint8

// Packet types. RPC_UNKNOWN was called UNKNOWN before 2025-02-11.
const (
	TypeData       PacketType = 0x10 // DATA: message bytes
	TypeGrant      PacketType = 0x11 // GRANT: receiver authorises more bytes
	TypeResend     PacketType = 0x12 // RESEND: receiver asks for a range again
	TypeRPCUnknown PacketType = 0x13 // RPC_UNKNOWN: answer to RESEND for an unknown RPC
	TypeBusy       PacketType = 0x14 // BUSY: answer to RESEND while the sender has nothing to send
	TypeCutoffs    PacketType = 0x15 // CUTOFFS: unscheduled priority cutoffs of the sender's host
	TypeFreeze     PacketType = 0x16 // FREEZE: debugging, freeze timetraces
	TypeNeedAck    PacketType = 0x17 // NEED_ACK: server asks the client to acknowledge an RPC
	TypeAck        PacketType = 0x18 // ACK: client acknowledges completed RPCs

	// MinType and MaxType bound the valid opcodes (MAX_OP is 0x18).
	MinType = TypeData
	MaxType = TypeAck
)

var typeNames = [...]string{"DATA", "GRANT", "RESEND", "RPC_UNKNOWN", "BUSY", "CUTOFFS", "FREEZE", "NEED_ACK", "ACK"}

// AllTypes lists every packet type in opcode order.
var AllTypes = [...]PacketType{TypeData, TypeGrant, TypeResend, TypeRPCUnknown, TypeBusy, TypeCutoffs, TypeFreeze, TypeNeedAck, TypeAck}

// IsValid reports whether t is an opcode between 0x10 and 0x18.
func (t PacketType) IsValid() bool { return t >= MinType && t <= MaxType }

// String returns HomaModule's name for t (DATA, GRANT, ..., RPC_UNKNOWN) or
// "TYPE(0xNN)" for an invalid opcode.
func (t PacketType) String() string {
	if t.IsValid() {
		return typeNames[t-MinType]
	}
	return fmt.Sprintf("TYPE(0x%02x)", uint8(t))
}

// ParsePacketType maps a name as printed by String (case-sensitive; UNKNOWN
// is accepted for RPC_UNKNOWN) back to a PacketType.
func ParsePacketType(s string) (PacketType, error) {
	for i, n := range typeNames {
		if s == n {
			return MinType + PacketType(i), nil
		}
	}
	if s == "UNKNOWN" {
		return TypeRPCUnknown, nil
	}
	return 0, fmt.Errorf("unknown packet type %q", s)
}

// IsControl reports whether t is a control packet (anything but DATA).
func (t PacketType) IsControl() bool { return t != TypeData }

// SupportedBy reports whether version v has packet type t: upstream lacks
// GRANT, CUTOFFS and FREEZE. VersionAuto supports every valid type.
func (t PacketType) SupportedBy(v Version) bool {
	return t.IsValid() && hdrsOf(v).has[t-MinType]
}

// HeaderLen returns the header length in bytes of type t in version v (the
// per-type minimum that homa_softirq enforces): DATA 56, GRANT 33 (2024: 34),
// RESEND 37 (upstream 36), RPC_UNKNOWN/BUSY/FREEZE/NEED_ACK 28, CUTOFFS 62,
// ACK 80 (2024: 90). It returns 0 when v lacks t. VersionAuto is treated as
// VersionCurrent.
func (t PacketType) HeaderLen(v Version) int {
	if !t.IsValid() {
		return 0
	}
	return hdrsOf(v).headerLen[t-MinType] // 0 where v lacks t
}
