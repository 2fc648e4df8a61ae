package wire

// Grant is a view of a GRANT packet (HomaModule homa_wire.h struct
// homa_grant_hdr; absent upstream): the common header, then
//
//	off  size  field
//	28   4     offset      the sender may now transmit all bytes < offset
//	32   1     priority    level for all later scheduled DATA of the message
//	33   1     resend_all  Version2024 and Version2025 only (removed by 04df9e0, 2025-07-07)
type Grant struct{ Packet }

// Offset returns offset: the sender may transmit all bytes below it.
func (g Grant) Offset() uint32 { return read32(g.b, &hdrsOf(g.v).grant[grantOffset]) }

// Priority returns priority: the level (0..7) the sender must use for the
// message's later scheduled DATA.
func (g Grant) Priority() uint8 { return read8(g.b, &hdrsOf(g.v).grant[grantPriority]) }

// ResendAll returns resend_all (Version2024 and Version2025; 0 otherwise): nonzero asks
// the sender to retransmit everything already sent.
func (g Grant) ResendAll() uint8 { return read8(g.b, &hdrsOf(g.v).grant[grantResendAll]) }

// GrantFields holds the values of a GRANT packet for encoding.
type GrantFields struct {
	Common    CommonFields `json:"common"`
	Offset    uint32       `json:"offset"`
	Priority  uint8        `json:"priority"`
	ResendAll uint8        `json:"resend_all,omitempty"` // Version2024 and Version2025 only
}

// Fields returns all header values of g.
func (g Grant) Fields() GrantFields {
	return GrantFields{Common: g.Common().Fields(), Offset: g.Offset(), Priority: g.Priority(), ResendAll: g.ResendAll()}
}

// PacketType returns TypeGrant.
func (f *GrantFields) PacketType() PacketType { return TypeGrant }

// CommonFields returns &f.Common.
func (f *GrantFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the GRANT header to b (see [Fields]); ErrUnsupported for
// VersionUpstream.
func (f *GrantFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeGrant, &f.Common, nil, o, func(h []byte, l *hdrs) {
		write32(h, &l.grant[grantOffset], f.Offset)
		write8(h, &l.grant[grantPriority], f.Priority)
		write8(h, &l.grant[grantResendAll], f.ResendAll)
	})
}
