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
func (a Ack) NumAcks() uint16 { return read16(a.b, &hdrsOf(a.v).ack[ackNumAcks]) }

// ValidAcks returns the number of entries a receiver uses:
// min(num_acks, 5) (homa_incoming.c homa_ack_pkt).
func (a Ack) ValidAcks() int { return min(int(a.NumAcks()), MaxAcksPerPkt) }

// Entry returns acks[i] for i in 0..4 (whether or not i < num_acks), or the
// zero AckEntry for i out of range.
func (a Ack) Entry(i int) AckEntry {
	acks := &hdrsOf(a.v).acks
	if i < 0 || i >= len(acks) {
		return AckEntry{}
	}
	return readAckEntry(a.b, &acks[i])
}

// readAckEntry reads the struct homa_ack whose members lie at m in b.
func readAckEntry(b []byte, m *[numAckEntryFields]FieldLayout) AckEntry {
	return AckEntry{ClientID: read64(b, &m[ackEntryClientID]), ClientPort: read16(b, &m[ackEntryClientPort]),
		ServerPort: read16(b, &m[ackEntryServerPort])}
}

// writeAckEntry writes e as the struct homa_ack whose members lie at m in b.
func writeAckEntry(b []byte, m *[numAckEntryFields]FieldLayout, e AckEntry) {
	write64(b, &m[ackEntryClientID], e.ClientID)
	write16(b, &m[ackEntryClientPort], e.ClientPort)
	write16(b, &m[ackEntryServerPort], e.ServerPort)
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
	return appendPacket(b, TypeAck, &f.Common, nil, o, func(h []byte, l *hdrs) {
		num := f.NumAcks
		if o.FixLengths {
			num = uint16(min(len(f.Acks), len(l.acks)))
		}
		write16(h, &l.ack[ackNumAcks], num)
		for i, e := range f.Acks {
			if i >= len(l.acks) {
				break // only acks[HOMA_MAX_ACKS_PER_PKT] fit
			}
			writeAckEntry(h, &l.acks[i], e)
		}
	})
}
