package wire

// NeedAck is a view of a NEED_ACK packet (HomaModule homa_wire.h struct homa_need_ack_hdr):
// the 28-byte common header only. Sent by a server whose response is complete
// to ask the client for an ACK.
type NeedAck struct{ Packet }

// NeedAckFields holds the values of a NEED_ACK packet for encoding.
type NeedAckFields struct {
	Common CommonFields `json:"common"`
}

// Fields returns the header values of p.
func (p NeedAck) Fields() NeedAckFields { return NeedAckFields{Common: p.Common().Fields()} }

// PacketType returns TypeNeedAck.
func (f *NeedAckFields) PacketType() PacketType { return TypeNeedAck }

// CommonFields returns &f.Common.
func (f *NeedAckFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the 28-byte NEED_ACK header to b (see [Fields]).
func (f *NeedAckFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeNeedAck, &f.Common, nil, o, nil)
}
