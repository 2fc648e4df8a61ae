package wire

// RPCUnknown is a view of an RPC_UNKNOWN packet (HomaModule homa_wire.h struct homa_rpc_unknown_hdr):
// the 28-byte common header only. Sent in answer to a RESEND for an RPC the
// receiver does not know; a client that gets one restarts its request
// (named UNKNOWN before 2025-02-11).
type RPCUnknown struct{ Packet }

// RPCUnknownFields holds the values of an RPC_UNKNOWN packet for encoding.
type RPCUnknownFields struct {
	Common CommonFields `json:"common"`
}

// Fields returns the header values of p.
func (p RPCUnknown) Fields() RPCUnknownFields { return RPCUnknownFields{Common: p.Common().Fields()} }

// PacketType returns TypeRPCUnknown.
func (f *RPCUnknownFields) PacketType() PacketType { return TypeRPCUnknown }

// CommonFields returns &f.Common.
func (f *RPCUnknownFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the 28-byte RPC_UNKNOWN header to b (see [Fields]).
func (f *RPCUnknownFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeRPCUnknown, &f.Common, nil, o, nil)
}
