package wire

// Ack is a view of an ACK packet (HomaModule homa_wire.h struct
// homa_ack_hdr): the common header (whose sender_id names an RPC that is
// itself acknowledged), then
//
//	off  size   field
//	28   2      num_acks   leading valid entries (receivers clamp to 5)
//	30   5×10   acks[5]    {client_id u64, server_port u16}
//	            (2024: 5×12, {client_id u64, client_port u16, server_port u16})
//
// All five slots are always present on the wire, used or not.
type Ack struct{ Packet }

// NumAcks returns num_acks as sent (may exceed 5 in a malformed packet).
func (a Ack) NumAcks() uint16 { return get16(a.b, 28) }

// ValidAcks returns the number of entries a receiver uses:
// min(num_acks, 5) (homa_incoming.c homa_ack_pkt).
func (a Ack) ValidAcks() int { return min(int(a.NumAcks()), MaxAcksPerPkt) }

// Entry returns acks[i] for i in 0..4 (whether or not i < num_acks), or the
// zero AckEntry for i out of range.
func (a Ack) Entry(i int) AckEntry {
	if i < 0 || i >= MaxAcksPerPkt {
		return AckEntry{}
	}
	n := a.v.ackEntryLen()
	off := 30 + i*n
	e := AckEntry{ClientID: get64(a.b, off)}
	if n == 12 {
		e.ClientPort = get16(a.b, off+8)
		e.ServerPort = get16(a.b, off+10)
	} else {
		e.ServerPort = get16(a.b, off+8)
	}
	return e
}

// AckFields holds the values of an ACK packet for encoding. Acks beyond five
// are not encoded. NumAcks is written as given unless FixLengths is set, in
// which case it becomes len(Acks) (at most 5).
type AckFields struct {
	Common  CommonFields `json:"common"`
	NumAcks uint16       `json:"num_acks"`
	Acks    []AckEntry   `json:"acks"`
}

// Fields returns all header values of a; Acks holds the first ValidAcks entries.
func (a Ack) Fields() AckFields {
	f := AckFields{Common: a.Common().Fields(), NumAcks: a.NumAcks(), Acks: make([]AckEntry, 0, a.ValidAcks())}
	for i := range a.ValidAcks() {
		f.Acks = append(f.Acks, a.Entry(i))
	}
	return f
}

// PacketType returns TypeAck.
func (f *AckFields) PacketType() PacketType { return TypeAck }

// CommonFields returns &f.Common.
func (f *AckFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the ACK header (80 bytes; 90 for Version2024) to b.
func (f *AckFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	start := len(b)
	b, h, v, err := begin(b, TypeAck, &f.Common, o)
	if err != nil {
		return b, err
	}
	num := f.NumAcks
	if o.FixLengths {
		num = uint16(min(len(f.Acks), MaxAcksPerPkt))
	}
	put16(h, 28, num)
	n := v.ackEntryLen()
	for i, e := range f.Acks {
		if i >= MaxAcksPerPkt {
			break
		}
		off := 30 + i*n
		put64(h, off, e.ClientID)
		if n == 12 {
			put16(h, off+8, e.ClientPort)
			put16(h, off+10, e.ServerPort)
		} else {
			put16(h, off+8, e.ServerPort)
		}
	}
	return b, finish(b[start:], TypeAck, v, o)
}
