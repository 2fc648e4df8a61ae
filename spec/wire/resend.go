package wire

// Resend is a view of a RESEND packet (HomaModule homa_wire.h struct
// homa_resend_hdr): the common header, then
//
//	off  size  field
//	28   4     offset    first byte to retransmit
//	32   4     length    bytes to retransmit; 0xFFFFFFFF = everything sent so far
//	36   1     priority  level for the retransmitted DATA (absent upstream)
type Resend struct{ Packet }

// Offset returns offset: the first byte to retransmit.
func (r Resend) Offset() uint32 { return read32(r.b, &hdrsOf(r.v).resend[resendOffset]) }

// Length returns length in bytes; 0xFFFFFFFF (ResendAll) means "nothing
// received yet; resend everything you have sent" (main since be5081e). On the
// 2024 branch length 0 was a liveness probe.
func (r Resend) Length() uint32 { return read32(r.b, &hdrsOf(r.v).resend[resendLength]) }

// Priority returns priority: the level the retransmitted DATA must use; 0
// upstream, where the field does not exist.
func (r Resend) Priority() uint8 { return read8(r.b, &hdrsOf(r.v).resend[resendPriority]) }

// IsResendAll reports whether length is 0xFFFFFFFF.
func (r Resend) IsResendAll() bool { return r.Length() == ResendAll }

// ResendFields holds the values of a RESEND packet for encoding.
type ResendFields struct {
	Common   CommonFields `json:"common"`
	Offset   uint32       `json:"offset"`
	Length   uint32       `json:"length"`
	Priority uint8        `json:"priority"` // ignored for VersionUpstream
}

// Fields returns all header values of r.
func (r Resend) Fields() ResendFields {
	return ResendFields{Common: r.Common().Fields(), Offset: r.Offset(), Length: r.Length(), Priority: r.Priority()}
}

// PacketType returns TypeResend.
func (f *ResendFields) PacketType() PacketType { return TypeResend }

// CommonFields returns &f.Common.
func (f *ResendFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the RESEND header to b (37 bytes; 36 upstream).
func (f *ResendFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeResend, &f.Common, nil, o, func(h []byte, l *hdrs) {
		write32(h, &l.resend[resendOffset], f.Offset)
		write32(h, &l.resend[resendLength], f.Length)
		write8(h, &l.resend[resendPriority], f.Priority)
	})
}
