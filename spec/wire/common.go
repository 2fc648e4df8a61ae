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

// Sport returns common.sport: the sender's Homa port.
func (c Common) Sport() uint16 { return at16(c, commonAt[commonSport]) }

// Dport returns common.dport: the destination Homa port.
func (c Common) Dport() uint16 { return at16(c, commonAt[commonDport]) }

// Sequence returns common.sequence. In DATA it is the byte offset
// of the first data byte when seg.offset is 0xFFFFFFFF; 0 in control packets.
func (c Common) Sequence() uint32 { return at32(c, commonAt[commonSequence]) }

// AckBytes returns the unused common.ack[3] bytes: the high
// bytes of the TCP acknowledgment number; 0 on HomaModule main.
func (c Common) AckBytes() [3]byte {
	off := commonHdr[commonAck].Off
	return [3]byte{get8(c, off), get8(c, off+1), get8(c, off+2)}
}

// Type returns common.type, the opcode.
func (c Common) Type() PacketType { return PacketType(at8(c, commonAt[commonType])) }

// Doff returns the raw common.doff byte: the TCP data offset in
// 32-bit words in the high nibble (0xE0 DATA, 0xD0 GSO DATA, 0x50 control).
func (c Common) Doff() uint8 { return at8(c, commonAt[commonDoff]) }

// Flags returns common.flags: 0x06 on HomaModule main and 2024,
// reserved1 (0) upstream.
func (c Common) Flags() uint8 { return at8(c, commonAt[commonFlags]) }

// Window returns common.window, unused (0).
func (c Common) Window() uint16 { return at16(c, commonAt[commonWindow]) }

// Checksum returns common.checksum: a TCP-style checksum on main
// since 19f5dec; 0 or garbage elsewhere. Receivers do not verify it.
func (c Common) Checksum() uint16 { return at16(c, commonAt[commonChecksum]) }

// Urgent returns common.urgent: 0xB97D on main and 2024,
// reserved2 (0) upstream.
func (c Common) Urgent() uint16 { return at16(c, commonAt[commonUrgent]) }

// SenderID returns common.sender_id: the RPC id as known by the
// sender of this packet (even: sent by the client, odd: by the server).
func (c Common) SenderID() uint64 { return at64(c, commonAt[commonSenderID]) }

// HasMarks reports whether flags is 0x06 and urgent 0xB97D, the TCP-imitation
// marks that HomaModule (non-upstream) puts in every packet.
func (c Common) HasMarks() bool { return c.Flags() == HijackFlags && c.Urgent() == HijackUrgent }

// SetSport sets common.sport.
func (c Common) SetSport(v uint16) { write16(c, &commonHdr[commonSport], v) }

// SetDport sets common.dport.
func (c Common) SetDport(v uint16) { write16(c, &commonHdr[commonDport], v) }

// SetSequence sets common.sequence.
func (c Common) SetSequence(v uint32) { write32(c, &commonHdr[commonSequence], v) }

// SetType sets common.type.
func (c Common) SetType(t PacketType) { write8(c, &commonHdr[commonType], uint8(t)) }

// SetDoff sets the raw common.doff byte.
func (c Common) SetDoff(v uint8) { write8(c, &commonHdr[commonDoff], v) }

// SetFlags sets common.flags.
func (c Common) SetFlags(v uint8) { write8(c, &commonHdr[commonFlags], v) }

// SetChecksum sets common.checksum.
func (c Common) SetChecksum(v uint16) { write16(c, &commonHdr[commonChecksum], v) }

// SetUrgent sets common.urgent.
func (c Common) SetUrgent(v uint16) { write16(c, &commonHdr[commonUrgent], v) }

// SetSenderID sets common.sender_id.
func (c Common) SetSenderID(v uint64) { write64(c, &commonHdr[commonSenderID], v) }

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

// put writes f into the common header b of a packet of type t (f.Type
// when set).
func (f *CommonFields) put(b []byte, t PacketType) {
	c := Common(b)
	if f.Type != 0 {
		t = f.Type
	}
	c.SetSport(f.Sport)
	c.SetDport(f.Dport)
	c.SetSequence(f.Sequence)
	if a := commonHdr[commonAck]; a.Off+a.Size <= len(c) {
		copy(c[a.Off:a.Off+a.Size], f.Ack[:])
	}
	c.SetType(t)
	c.SetDoff(f.Doff)
	c.SetFlags(f.Flags)
	write16(c, &commonHdr[commonWindow], f.Window)
	c.SetChecksum(f.Checksum)
	c.SetUrgent(f.Urgent)
	c.SetSenderID(f.SenderID)
}
