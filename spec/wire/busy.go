package wire

// Busy is a view of a BUSY packet (HomaModule homa_wire.h struct homa_busy_hdr):
// the 28-byte common header only. Sent in answer to a RESEND when the sender
// has nothing to retransmit yet (the bytes were not sent or not granted).
type Busy struct{ Packet }

// BusyFields holds the values of a BUSY packet for encoding.
type BusyFields struct {
	Common CommonFields `json:"common"`
}

// Fields returns the header values of p.
func (p Busy) Fields() BusyFields { return BusyFields{Common: p.Common().Fields()} }

// PacketType returns TypeBusy.
func (f *BusyFields) PacketType() PacketType { return TypeBusy }

// CommonFields returns &f.Common.
func (f *BusyFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the 28-byte BUSY header to b (see [Fields]).
func (f *BusyFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeBusy, &f.Common, nil, o, nil)
}
