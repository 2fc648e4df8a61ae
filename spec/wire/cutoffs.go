package wire

// Cutoffs is a view of a CUTOFFS packet (HomaModule homa_wire.h struct
// homa_cutoffs_hdr; absent upstream): the common header, then
//
//	off  size  field
//	28   32    unsched_cutoffs[8]  u32 each: entry i = largest message length
//	                               that uses unscheduled priority i
//	60   2     cutoff_version      to be echoed in later DATA to the sender
type Cutoffs struct{ Packet }

// UnschedCutoff returns unsched_cutoffs[i] in bytes, 0 for i outside 0..7.
// Recipients ignore entry 0 and use INT_MAX (homa_incoming.c homa_cutoffs_pkt).
func (c Cutoffs) UnschedCutoff(i int) uint32 {
	u := &hdrsOf(c.v).unschedCutoffs
	if i < 0 || i >= len(u) {
		return 0
	}
	return read32(c.b, &u[i])
}

// UnschedCutoffs returns all eight unsched_cutoffs.
func (c Cutoffs) UnschedCutoffs() [NumCutoffs]uint32 {
	var a [NumCutoffs]uint32
	for i := range a {
		a[i] = c.UnschedCutoff(i)
	}
	return a
}

// CutoffVersion returns cutoff_version.
func (c Cutoffs) CutoffVersion() uint16 {
	return read16(c.b, &hdrsOf(c.v).cutoffs[cutoffsCutoffVersion])
}

// CutoffsFields holds the values of a CUTOFFS packet for encoding.
type CutoffsFields struct {
	Common         CommonFields       `json:"common"`
	UnschedCutoffs [NumCutoffs]uint32 `json:"unsched_cutoffs"`
	CutoffVersion  uint16             `json:"cutoff_version"`
}

// Fields returns all header values of c.
func (c Cutoffs) Fields() CutoffsFields {
	return CutoffsFields{Common: c.Common().Fields(), UnschedCutoffs: c.UnschedCutoffs(), CutoffVersion: c.CutoffVersion()}
}

// PacketType returns TypeCutoffs.
func (f *CutoffsFields) PacketType() PacketType { return TypeCutoffs }

// CommonFields returns &f.Common.
func (f *CutoffsFields) CommonFields() *CommonFields { return &f.Common }

// AppendTo appends the 62-byte CUTOFFS header to b; ErrUnsupported for
// VersionUpstream.
func (f *CutoffsFields) AppendTo(b []byte, o EncodeOptions) ([]byte, error) {
	return appendPacket(b, TypeCutoffs, &f.Common, nil, o, func(h []byte, l *hdrs) {
		for i, c := range f.UnschedCutoffs {
			write32(h, &l.unschedCutoffs[i], c)
		}
		write16(h, &l.cutoffs[cutoffsCutoffVersion], f.CutoffVersion)
	})
}
