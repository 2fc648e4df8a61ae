package pcap

import (
	"errors"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

// Homa is the gopacket layer for one Homa packet (any type). Decoding fills
// Packet, a zero-copy spec/wire view; serializing encodes Fields.
//
// As a DecodingLayer, a Homa value decodes the version in Version:
// VersionAuto (the zero value) picks per packet, like IP protocol 146;
// set Version to wire.Version2024 to let a DecodingLayerParser route IP
// protocol 253 to it (CanDecode then reports LayerTypeHoma2024).
type Homa struct {
	layers.BaseLayer

	// Version to decode or encode with.
	Version wire.Version
	// IPProto is the IP protocol the packet arrived with (146, 253 or 6),
	// used by VersionAuto; 0 is treated as 146.
	IPProto uint8

	// Packet is the decoded packet; valid after a successful DecodeFromBytes.
	Packet wire.Packet

	// Fields are encoded by SerializeTo (DATA payload included).
	Fields wire.Fields
	// SetMarks makes SerializeTo write flags 0x06 and urgent 0xB97D.
	SetMarks bool

	src, dst netip.Addr
}

var (
	_ gopacket.DecodingLayer     = (*Homa)(nil)
	_ gopacket.SerializableLayer = (*Homa)(nil)
)

// LayerType returns LayerTypeHoma2024 when Version is wire.Version2024,
// LayerTypeHomaHijacked when IPProto is 6, and LayerTypeHoma otherwise.
func (h *Homa) LayerType() gopacket.LayerType {
	switch {
	case h.Version == wire.Version2024:
		return LayerTypeHoma2024
	case h.IPProto == wire.IPProtoTCP:
		return LayerTypeHomaHijacked
	default:
		return LayerTypeHoma
	}
}

// CanDecode returns LayerType().
func (h *Homa) CanDecode() gopacket.LayerClass { return h.LayerType() }

// NextLayerType returns gopacket.LayerTypePayload for a DATA packet with data
// bytes and gopacket.LayerTypeZero otherwise.
func (h *Homa) NextLayerType() gopacket.LayerType {
	if len(h.Payload) > 0 {
		return gopacket.LayerTypePayload
	}
	return gopacket.LayerTypeZero
}

// DecodeFromBytes decodes data (starting at the Homa header) with
// wire.Decode. On a short header it calls df.SetTruncated and returns the
// *wire.DecodeError. Contents is the header, Payload the DATA bytes.
func (h *Homa) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	proto := h.IPProto
	if proto == 0 {
		proto = wire.IPProtoHoma
	}
	p, err := wire.Decode(data, wire.DecodeOptions{Version: h.Version, IPProto: proto})
	if err != nil {
		if errors.Is(err, wire.ErrTruncated) {
			df.SetTruncated()
		}
		h.Packet = wire.Packet{}
		h.BaseLayer = layers.BaseLayer{Contents: data}
		return err
	}
	h.Packet = p
	n := p.HeaderLen()
	h.BaseLayer = layers.BaseLayer{Contents: data[:n], Payload: data[n:]}
	return nil
}

// SetNetworkLayerForChecksum gives SerializeTo the IP addresses it needs
// when gopacket.SerializeOptions.ComputeChecksums is set. l must be
// *layers.IPv4 or *layers.IPv6.
func (h *Homa) SetNetworkLayerForChecksum(l gopacket.NetworkLayer) error {
	switch ip := l.(type) {
	case *layers.IPv4:
		h.src, h.dst = addr(ip.SrcIP), addr(ip.DstIP)
	case *layers.IPv6:
		h.src, h.dst = addr(ip.SrcIP), addr(ip.DstIP)
	default:
		return errors.New("pcap: Homa checksum needs an IPv4 or IPv6 network layer")
	}
	return nil
}

func addr(ip net.IP) netip.Addr {
	if v4 := ip.To4(); v4 != nil {
		return netip.AddrFrom4([4]byte(v4))
	}
	a, _ := netip.AddrFromSlice(ip)
	return a
}

// SerializeTo prepends the encoding of h.Fields (version h.Version) to b.
// opts.FixLengths sets doff and num_acks; opts.ComputeChecksums fills the
// checksum over the Homa bytes and anything already in b (needs
// SetNetworkLayerForChecksum). Errors: no Fields, or those of AppendTo.
func (h *Homa) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if h.Fields == nil {
		return errors.New("pcap: Homa.SerializeTo needs Fields")
	}
	enc, err := h.Fields.AppendTo(nil, wire.EncodeOptions{Version: h.Version, FixLengths: opts.FixLengths, SetMarks: h.SetMarks})
	if err != nil {
		return err
	}
	out, err := b.PrependBytes(len(enc))
	if err != nil {
		return err
	}
	copy(out, enc)
	if opts.ComputeChecksums {
		if !h.src.IsValid() || !h.dst.IsValid() {
			return wire.ErrChecksumAddrs
		}
		all := b.Bytes()
		c := wire.Common(all)
		c.SetChecksum(wire.Checksum(h.src, h.dst, all))
	}
	return nil
}
