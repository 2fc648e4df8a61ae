package wire

import (
	"errors"
	"net/netip"
)

// EncodeOptions control the AppendTo methods of the Fields types. With all
// options off, every byte comes from the Fields values, so malformed packets
// (wrong doff, wrong num_acks, missing marks, bad checksum) can be built on
// purpose.
type EncodeOptions struct {
	// Version of the wire format; VersionAuto encodes VersionCurrent.
	Version Version
	// FixLengths sets doff from the packet type (0xE0 for DATA, 0x50 for
	// control packets, as HomaModule main does) and, for ACK, num_acks from
	// the number of ack entries given.
	FixLengths bool
	// SetMarks sets flags to 0x06 and urgent to 0xB97D (HomaModule
	// homa_hijack_set_hdr); for VersionUpstream it sets both to 0.
	SetMarks bool
	// ComputeChecksums fills common.checksum with the TCP-style checksum
	// HomaModule main computes since 19f5dec (see [Checksum]); it needs Src
	// and Dst.
	ComputeChecksums bool
	// Src and Dst are the IP source and destination, for ComputeChecksums.
	Src, Dst netip.Addr
}

// Fields is implemented by the encodable form of every packet type
// (*DataFields, *GrantFields, *ResendFields, *RPCUnknownFields, *BusyFields,
// *CutoffsFields, *FreezeFields, *NeedAckFields, *AckFields).
type Fields interface {
	// PacketType returns the opcode the Fields encode.
	PacketType() PacketType
	// CommonFields returns the common header values.
	CommonFields() *CommonFields
	// AppendTo appends the encoded packet (header and any payload) to b and
	// returns the extended slice. Errors: ErrUnsupported if the version
	// lacks the type; an error if ComputeChecksums lacks addresses.
	AppendTo(b []byte, o EncodeOptions) ([]byte, error)
}

// Encode returns f encoded into a new slice.
func Encode(f Fields, o EncodeOptions) ([]byte, error) { return f.AppendTo(nil, o) }

// ErrChecksumAddrs is returned when ComputeChecksums is set without valid Src
// and Dst addresses of one family (IPv4-mapped IPv6 addresses count as IPv4).
var ErrChecksumAddrs = errors.New("wire: ComputeChecksums needs Src and Dst addresses of the same family")

// appendPacket appends a packet of type t to b as o asks: the header of t in
// o's version, zeroed, with the common fields c, then own (nil for the
// types that are the common header alone) writing the type's fields into
// the header h through the version's layout l, then payload; last the
// options (doff, marks, checksum) over the whole packet.
func appendPacket(b []byte, t PacketType, c *CommonFields, payload []byte, o EncodeOptions, own func(h []byte, l *hdrs)) ([]byte, error) {
	v := o.Version
	if v == VersionAuto {
		v = VersionCurrent
	}
	if !t.SupportedBy(v) {
		return b, &DecodeError{Type: t, Version: v, Err: ErrUnsupported}
	}
	start := len(b)
	b = append(b, make([]byte, t.HeaderLen(v))...)
	h := b[start:]
	clear(h)
	c.put(h, t)
	if own != nil {
		own(h, hdrsOf(v))
	}
	b = append(b, payload...)
	return b, finish(b[start:], t, v, o)
}

// finish applies FixLengths (doff), SetMarks and ComputeChecksums to the
// packet pkt (header plus payload) of type t.
func finish(pkt []byte, t PacketType, v Version, o EncodeOptions) error {
	c := Common(pkt)
	if o.FixLengths {
		if t == TypeData {
			c.SetDoff(DoffData)
		} else {
			c.SetDoff(DoffControl)
		}
	}
	if o.SetMarks {
		if v == VersionUpstream {
			c.SetFlags(0)
			c.SetUrgent(0)
		} else {
			c.SetFlags(HijackFlags)
			c.SetUrgent(HijackUrgent)
		}
	}
	if o.ComputeChecksums {
		if !o.Src.IsValid() || !o.Dst.IsValid() || o.Src.Unmap().Is4() != o.Dst.Unmap().Is4() {
			return ErrChecksumAddrs
		}
		c.SetChecksum(0)
		c.SetChecksum(Checksum(o.Src, o.Dst, pkt))
	}
	return nil
}
