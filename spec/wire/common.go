package wire

// Common is a view of the 28-byte common header that starts every Homa packet
// (HomaModule homa_wire.h struct homa_common_hdr). Its first 20 bytes line up
// with a TCP header so that NICs can apply TSO and so that TCP hijacking works.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-------------------------------+-------------------------------+
//	|             sport             |             dport             |
//	+-------------------------------+-------------------------------+
//	|                           sequence                            |
//	+-----------------------------------------------+---------------+
//	|                      ack[3]                   |     type      |
//	+---------------+---------------+---------------+---------------+
//	|     doff      |     flags     |            window             |
//	+---------------+---------------+-------------------------------+
//	|           checksum            |            urgent             |
//	+-------------------------------+-------------------------------+
//	|                           sender_id                           |
//	|                                                               |
//	+---------------------------------------------------------------+
//
// Getters read zero and setters do nothing for a field that lies past the
// end of the slice, so a Common never panics.
type Common []byte

// Sport returns common.sport (offset 0): the sender's Homa port.
func (c Common) Sport() uint16 { return get16(c, 0) }

// Dport returns common.dport (offset 2): the destination Homa port.
func (c Common) Dport() uint16 { return get16(c, 2) }

// Sequence returns common.sequence (offset 4). In DATA it is the byte offset
// of the first data byte when seg.offset is 0xFFFFFFFF; 0 in control packets.
func (c Common) Sequence() uint32 { return get32(c, 4) }

// AckBytes returns the unused common.ack[3] bytes (offsets 8-10): the high
// bytes of the TCP acknowledgment number; 0 on HomaModule main.
func (c Common) AckBytes() [3]byte { return [3]byte{get8(c, 8), get8(c, 9), get8(c, 10)} }

// Type returns common.type (offset 11), the opcode.
func (c Common) Type() PacketType { return PacketType(get8(c, 11)) }

// Doff returns the raw common.doff byte (offset 12): the TCP data offset in
// 32-bit words in the high nibble (0xE0 DATA, 0xD0 GSO DATA, 0x50 control).
func (c Common) Doff() uint8 { return get8(c, 12) }

// Flags returns common.flags (offset 13): 0x06 on HomaModule main and 2024,
// reserved1 (0) upstream.
func (c Common) Flags() uint8 { return get8(c, 13) }

// Window returns common.window (offset 14), unused (0).
func (c Common) Window() uint16 { return get16(c, 14) }

// Checksum returns common.checksum (offset 16): a TCP-style checksum on main
// since 19f5dec; 0 or garbage elsewhere. Receivers do not verify it.
func (c Common) Checksum() uint16 { return get16(c, 16) }

// Urgent returns common.urgent (offset 18): 0xB97D on main and 2024,
// reserved2 (0) upstream.
func (c Common) Urgent() uint16 { return get16(c, 18) }

// SenderID returns common.sender_id (offset 20): the RPC id as known by the
// sender of this packet (even: sent by the client, odd: by the server).
func (c Common) SenderID() uint64 { return get64(c, 20) }

// HasMarks reports whether flags is 0x06 and urgent 0xB97D, the TCP-imitation
// marks that HomaModule (non-upstream) puts in every packet.
func (c Common) HasMarks() bool { return c.Flags() == HijackFlags && c.Urgent() == HijackUrgent }

// SetSport sets common.sport.
func (c Common) SetSport(v uint16) { put16(c, 0, v) }

// SetDport sets common.dport.
func (c Common) SetDport(v uint16) { put16(c, 2, v) }

// SetSequence sets common.sequence.
func (c Common) SetSequence(v uint32) { put32(c, 4, v) }

// SetType sets common.type.
func (c Common) SetType(t PacketType) { put8(c, 11, uint8(t)) }

// SetDoff sets the raw common.doff byte.
func (c Common) SetDoff(v uint8) { put8(c, 12, v) }

// SetFlags sets common.flags.
func (c Common) SetFlags(v uint8) { put8(c, 13, v) }

// SetChecksum sets common.checksum.
func (c Common) SetChecksum(v uint16) { put16(c, 16, v) }

// SetUrgent sets common.urgent.
func (c Common) SetUrgent(v uint16) { put16(c, 18, v) }

// SetSenderID sets common.sender_id.
func (c Common) SetSenderID(v uint64) { put64(c, 20, v) }

// CommonFields holds the values of a common header for encoding (and as the
// decoded form of [Common]). JSON names follow homa_common_hdr.
type CommonFields struct {
	Sport    uint16     `json:"sport"`
	Dport    uint16     `json:"dport"`
	Sequence uint32     `json:"sequence"`
	Ack      [3]byte    `json:"-"`
	Type     PacketType `json:"-"` // 0 = the Fields' own type; set to forge another opcode
	Doff     uint8      `json:"doff"`
	Flags    uint8      `json:"flags"`
	Window   uint16     `json:"window"`
	Checksum uint16     `json:"checksum"`
	Urgent   uint16     `json:"urgent"`
	SenderID uint64     `json:"sender_id"`
}

// Fields returns all common header values.
func (c Common) Fields() CommonFields {
	return CommonFields{
		Sport: c.Sport(), Dport: c.Dport(), Sequence: c.Sequence(), Ack: c.AckBytes(),
		Type: c.Type(), Doff: c.Doff(), Flags: c.Flags(), Window: c.Window(),
		Checksum: c.Checksum(), Urgent: c.Urgent(), SenderID: c.SenderID(),
	}
}

func (f *CommonFields) put(b []byte, t PacketType) {
	put16(b, 0, f.Sport)
	put16(b, 2, f.Dport)
	put32(b, 4, f.Sequence)
	copy(b[8:11], f.Ack[:])
	if f.Type != 0 {
		t = f.Type
	}
	put8(b, 11, uint8(t))
	put8(b, 12, f.Doff)
	put8(b, 13, f.Flags)
	put16(b, 14, f.Window)
	put16(b, 16, f.Checksum)
	put16(b, 18, f.Urgent)
	put64(b, 20, f.SenderID)
}
