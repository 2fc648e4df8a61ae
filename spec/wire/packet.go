package wire

// DecodeOptions control [Decode].
type DecodeOptions struct {
	// Version of the wire format; VersionAuto picks one per packet with
	// DetectVersion(b, IPProto, WireLen).
	Version Version
	// IPProto is the IP protocol (or IPv6 next header) the bytes arrived
	// with: 146, 253 or 6 (hijacked). 0 if unknown. Used only by VersionAuto.
	IPProto uint8
	// WireLen is the transport length in bytes as sent (from the IP total
	// length), when b was cut short by a capture snap length. 0 means len(b).
	// If WireLen < len(b), b is trimmed to WireLen (link-layer padding).
	WireLen int
	// Partial asks for the readable part of a packet the capture cut
	// inside its type's header (WireLen > len(b): a snap length) after the
	// common header: Decode then returns that view (Packet.Partial) along
	// with the ErrTruncated error, instead of the zero Packet. A header
	// shorter than its type's although the packet was not cut (the sender
	// sent it short) is malformed and still gives the zero Packet.
	Partial bool
}

// Packet is a decoded Homa packet: a view over the transport bytes (Homa
// header and payload) with its resolved wire version and type. The zero
// Packet is empty. Packet never copies the bytes it was decoded from.
//
// Packet is 32 bytes (wireLen is 32 bits, partial fits in the padding):
// the typed views copy it by value, and a 40-byte struct is copied with overlapping 16-byte moves
// whose chained copies defeat the CPU's store forwarding (measured: an
// Event.Retransmit call cost 65-110 ns at 40 bytes). Its small fields
// are one (packetKind) so that it has at most four: the compiler then
// keeps a Packet and its typed views in registers (SSA) instead of
// copying them through memory at every Data() and getter.
type Packet struct {
	b       []byte
	wireLen uint32
	packetKind
}

// packetKind is a Packet's resolved version and type, and whether it is
// the readable part of a header the snap length cut (Partial).
type packetKind struct {
	v       Version
	t       PacketType
	partial bool
}

// maxWireLen bounds the transport length a Packet records (an IP packet
// is at most 64 KiB, or 4 GiB as an IPv6 jumbogram).
const maxWireLen = 1<<32 - 1

// Decode checks that b (starting at the Homa header) holds a valid opcode and
// at least the header length of its type in the chosen version, and returns a
// view of it. It never panics and never reads past b. Errors are
// [*DecodeError] wrapping ErrTruncated (with the first missing field),
// ErrUnknownType or ErrUnsupported. It does not allocate unless it fails.
// With o.Partial, a snap-length cut inside the type's header gives the
// readable view and the ErrTruncated error together (see
// DecodeOptions.Partial).
func Decode(b []byte, o DecodeOptions) (Packet, error) {
	wl := o.WireLen
	if wl <= 0 {
		wl = len(b)
	} else if wl < len(b) {
		b = b[:wl]
	}
	t := Common(b).Type() // 0 when b ends before the opcode
	if typ := commonHdr[commonType]; len(b) < typ.Off+typ.Size {
		f := truncatedAt(commonLayout, len(b))
		return Packet{}, &DecodeError{Type: t, Version: o.Version, Field: f.Name, Want: f.Off + f.Size, Have: len(b), Err: ErrTruncated}
	}
	if !t.IsValid() {
		return Packet{}, &DecodeError{Type: t, Version: o.Version, Err: ErrUnknownType}
	}
	v := o.Version
	if v == VersionAuto {
		v = DetectVersion(b, o.IPProto, wl)
	}
	if !t.SupportedBy(v) {
		return Packet{}, &DecodeError{Type: t, Version: v, Err: ErrUnsupported}
	}
	if n := t.HeaderLen(v); len(b) < n {
		f := truncatedAt(Layout(t, v), len(b))
		err := &DecodeError{Type: t, Version: v, Field: f.Name, Want: f.Off + f.Size, Have: len(b), Err: ErrTruncated}
		if o.Partial && wl > len(b) && len(b) >= CommonHeaderLen {
			return Packet{b: b, wireLen: uint32(min(uint64(wl), maxWireLen)), packetKind: packetKind{v: v, t: t, partial: true}}, err
		}
		return Packet{}, err
	}
	return Packet{b: b, wireLen: uint32(min(uint64(wl), maxWireLen)), packetKind: packetKind{v: v, t: t}}, nil
}

// DetectVersion guesses the wire version of one packet (b from the Homa
// header, ipProto as in DecodeOptions, wireLen its untruncated length):
// IP protocol 253 means 2024; an ACK of 90 bytes has the 2024 layout
// whatever the protocol; a GRANT of 34 bytes (with resend_all) over
// another protocol is 2025; a native packet (not hijacked)
// whose flags and urgent fields are both 0 (upstream's reserved1/reserved2)
// is upstream; everything else is current.
func DetectVersion(b []byte, ipProto uint8, wireLen int) Version {
	if ipProto == IPProtoHoma2024 {
		return Version2024
	}
	if wireLen <= 0 {
		wireLen = len(b)
	}
	c := Common(b)
	switch c.Type() {
	case TypeAck:
		if wireLen == TypeAck.HeaderLen(Version2024) {
			return Version2024
		}
	case TypeGrant:
		// resend_all (34 bytes) dates a GRANT before 04df9e0; over IP
		// protocol 146 (a 253 one returned above) that is main from
		// be127d8 on, whose homa_ack has no client_port (a capture of
		// the weeks between f7e4717 and be127d8 shows its 90-byte ACKs:
		// pcap.DetectFormat lets those decide).
		if wireLen == TypeGrant.HeaderLen(Version2024) {
			return Version2025
		}
	}
	if ipProto != IPProtoTCP && len(b) >= tcpHeaderLen && c.Flags() == 0 && c.Urgent() == 0 {
		return VersionUpstream
	}
	return VersionCurrent
}

// Bytes returns the captured bytes of the packet (header and payload as far
// as captured).
func (p Packet) Bytes() []byte { return p.b }

// WireLen returns the transport length in bytes as sent (≥ len(Bytes())).
func (p Packet) WireLen() int { return int(p.wireLen) }

// Truncated reports whether the capture holds fewer bytes than were sent.
func (p Packet) Truncated() bool { return len(p.b) < int(p.wireLen) }

// Partial reports whether the packet is the readable part of a header the
// capture's snap length cut (DecodeOptions.Partial): its common header is
// whole, the fields of its type's header past the cut read as zero, and
// Has tells which are captured. Code that reads a packet's own header
// fields judges a partial packet only by the fields Has confirms.
func (p Packet) Partial() bool { return p.partial }

// Complete reports whether the captured bytes hold every field of the
// packet that a receiver reads: true for a decoded whole header; for a
// Partial one only for an ACK cut among the acks slots past its num_acks
// entries, which carry nothing (HomaModule homa_incoming.c homa_ack_pkt
// reads num_acks of them, at most HOMA_MAX_ACKS_PER_PKT). Such a packet
// can be judged as the whole packet it was. False for the zero Packet.
func (p Packet) Complete() bool {
	if !p.partial {
		return p.t != 0
	}
	if p.t != TypeAck || !p.Has("num_acks") {
		return false
	}
	n := Ack{p}.ValidAcks()
	if n == 0 {
		return true
	}
	end := 0
	for _, m := range hdrsOf(p.v).acks[n-1] {
		if m.Size > 0 {
			end = max(end, m.Off+m.Size)
		}
	}
	return end <= len(p.b)
}

// Has reports whether the field named name (as Field and LayoutField spell
// it, array fields included) is in the packet's Layout and wholly
// captured: always for a complete header, up to the cut for a Partial one.
func (p Packet) Has(name string) bool {
	f, ok := LayoutField(p.t, p.v, name)
	return ok && f.Off+f.Size <= len(p.b)
}

// Version returns the wire version the packet was decoded with.
func (p Packet) Version() Version { return p.v }

// Type returns the packet's opcode.
func (p Packet) Type() PacketType { return p.t }

// HeaderLen returns the length in bytes of the packet type's header in its
// version (more than len(Bytes()) for a Partial packet).
func (p Packet) HeaderLen() int { return p.t.HeaderLen(p.v) }

// Common returns a view of the 28-byte common header.
func (p Packet) Common() Common {
	if len(p.b) < CommonHeaderLen {
		return Common(p.b)
	}
	return Common(p.b[:CommonHeaderLen])
}

// SenderID returns common.sender_id.
func (p Packet) SenderID() uint64 { return p.Common().SenderID() }

// Role returns which side of the RPC sent the packet (from sender_id's low bit).
func (p Packet) Role() Role { return RoleOf(p.SenderID()) }

// Data returns the packet as a DATA view (struct homa_data_hdr). If the
// packet is not DATA the view is empty: its getters read zeros, its Fields
// are zero and its Bytes nil. The other typed views behave the same way, so
// a caller that has not checked Type reads zeros, never another type's
// bytes.
func (p Packet) Data() Data { return Data{p.as(TypeData)} }

// Grant returns the packet as a GRANT view (struct homa_grant_hdr), empty
// if it is not a GRANT.
func (p Packet) Grant() Grant { return Grant{p.as(TypeGrant)} }

// Resend returns the packet as a RESEND view (struct homa_resend_hdr), empty
// if it is not a RESEND.
func (p Packet) Resend() Resend { return Resend{p.as(TypeResend)} }

// RPCUnknown returns the packet as an RPC_UNKNOWN view (struct
// homa_rpc_unknown_hdr), empty if it is not an RPC_UNKNOWN.
func (p Packet) RPCUnknown() RPCUnknown { return RPCUnknown{p.as(TypeRPCUnknown)} }

// Busy returns the packet as a BUSY view (struct homa_busy_hdr), empty if
// it is not a BUSY.
func (p Packet) Busy() Busy { return Busy{p.as(TypeBusy)} }

// Cutoffs returns the packet as a CUTOFFS view (struct homa_cutoffs_hdr),
// empty if it is not a CUTOFFS.
func (p Packet) Cutoffs() Cutoffs { return Cutoffs{p.as(TypeCutoffs)} }

// Freeze returns the packet as a FREEZE view (struct homa_freeze_hdr),
// empty if it is not a FREEZE.
func (p Packet) Freeze() Freeze { return Freeze{p.as(TypeFreeze)} }

// NeedAck returns the packet as a NEED_ACK view (struct homa_need_ack_hdr),
// empty if it is not a NEED_ACK.
func (p Packet) NeedAck() NeedAck { return NeedAck{p.as(TypeNeedAck)} }

// Ack returns the packet as an ACK view (struct homa_ack_hdr), empty if it
// is not an ACK.
func (p Packet) Ack() Ack { return Ack{p.as(TypeAck)} }

// Field returns the field named name in the packet's Layout (a HomaModule
// struct member as FieldLayout.Name spells it: "offset", "ack.client_id",
// "sender_id", …) read as a big-endian unsigned integer, and whether the
// packet's type and version have that scalar field and the captured bytes
// hold it. It is the by-name reader for generic tools (packet matchers,
// dissector checks); code that knows the type uses the typed views. Array
// fields (acks, unsched_cutoffs) are not scalars: read them with the views.
// It does not allocate.
func (p Packet) Field(name string) (uint64, bool) {
	f, ok := LayoutField(p.t, p.v, name)
	if !ok || f.Count > 0 || f.Off+f.Size > len(p.b) {
		return 0, false
	}
	var v uint64
	for _, c := range p.b[f.Off : f.Off+f.Size] {
		v = v<<8 | uint64(c)
	}
	return v, true
}

// as returns p if it has type t, else the empty Packet.
func (p Packet) as(t PacketType) Packet {
	if p.t != t {
		return Packet{}
	}
	return p
}

// Fields returns the decoded header values of the packet as the Fields type
// of its packet type (*DataFields, *GrantFields, ...). It allocates; use the
// typed views on hot paths.
func (p Packet) Fields() Fields {
	switch p.t {
	case TypeData:
		f := p.Data().Fields()
		return &f
	case TypeGrant:
		f := p.Grant().Fields()
		return &f
	case TypeResend:
		f := p.Resend().Fields()
		return &f
	case TypeCutoffs:
		f := p.Cutoffs().Fields()
		return &f
	case TypeAck:
		f := p.Ack().Fields()
		return &f
	case TypeRPCUnknown:
		return &RPCUnknownFields{Common: p.Common().Fields()}
	case TypeBusy:
		return &BusyFields{Common: p.Common().Fields()}
	case TypeFreeze:
		return &FreezeFields{Common: p.Common().Fields()}
	case TypeNeedAck:
		return &NeedAckFields{Common: p.Common().Fields()}
	}
	return nil
}
