package wire

// Freeze is a view of a FREEZE packet (HomaModule homa_wire.h struct homa_freeze_hdr):
// the 28-byte common header only. Debugging only: asks the receiver to
// freeze its timetrace. Absent upstream; debugging code sends it with dport 0
// and sender_id 0.
type Freeze struct{ Packet }

// FreezeFields holds the values of a FREEZE packet for encoding.
type FreezeFields struct {
	Common CommonFields `json:"common"`
}

// Fields returns the header values of p.
func (p Freeze) Fields() FreezeFields { return FreezeFields{Common: p.Common().Fields()} }

// PacketType returns TypeFreeze.
func (f *FreezeFields) PacketType() PacketType { return TypeFreeze }

// CommonFields returns &f.Common.
func (f *FreezeFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the 28-byte FREEZE header to b (see [Fields]).
func (f *FreezeFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeFreeze, &f.Common, nil, o, nil)
}
