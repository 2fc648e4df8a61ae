package pcap

import (
	"sync"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

// RegisterOptions select the optional dispatch paths of Register.
type RegisterOptions struct {
	// Hijack routes TCP segments (IP protocol 6) whose flags byte is 0x06 and
	// urgent pointer 0xB97D to LayerTypeHomaHijacked; other TCP segments
	// still decode as TCP with gopacket.NewPacket. It changes what
	// layers.IPProtocolTCP.LayerType() returns, so a DecodingLayerParser
	// with a TCP layer no longer sees TCP: use Reader for hijacked traffic.
	Hijack bool
}

var (
	registerOnce sync.Once
	hijackOnce   sync.Once
	tcpDecoder   gopacket.Decoder
)

// Register routes IP protocols 146 and 253 to the Homa layer in gopacket's
// IP protocol table (layers.IPProtocolMetadata), and with o.Hijack also the
// TCP hijack path. It is safe to call more than once and from several
// goroutines; later calls can only add the hijack path.
func Register(o RegisterOptions) {
	registerOnce.Do(func() {
		layers.IPProtocolMetadata[wire.IPProtoHoma] = layers.EnumMetadata{
			DecodeWith: gopacket.DecodeFunc(decodeHomaCurrent), Name: "Homa", LayerType: LayerTypeHoma}
		layers.IPProtocolMetadata[wire.IPProtoHoma2024] = layers.EnumMetadata{
			DecodeWith: gopacket.DecodeFunc(decodeHoma2024), Name: "Homa2024", LayerType: LayerTypeHoma2024}
	})
	if o.Hijack {
		hijackOnce.Do(func() {
			md := layers.IPProtocolMetadata[layers.IPProtocolTCP]
			tcpDecoder = md.DecodeWith
			md.DecodeWith = gopacket.DecodeFunc(decodeTCPOrHoma)
			md.LayerType = layerTypeTCPOrHoma
			layers.IPProtocolMetadata[layers.IPProtocolTCP] = md
		})
	}
}

func decodeTCPOrHoma(data []byte, p gopacket.PacketBuilder) error {
	if wire.IsHijacked(data) {
		return decodeHomaHijacked(data, p)
	}
	return tcpDecoder.Decode(data, p)
}

func decodeHomaCurrent(data []byte, p gopacket.PacketBuilder) error {
	return decodeHomaAs(data, p, wire.VersionAuto, wire.IPProtoHoma)
}

func decodeHoma2024(data []byte, p gopacket.PacketBuilder) error {
	return decodeHomaAs(data, p, wire.Version2024, wire.IPProtoHoma2024)
}

func decodeHomaHijacked(data []byte, p gopacket.PacketBuilder) error {
	return decodeHomaAs(data, p, wire.VersionAuto, wire.IPProtoTCP)
}

// decodeHomaAs follows gopacket's convention: add the layer first, then
// return its error or chain to the payload.
func decodeHomaAs(data []byte, p gopacket.PacketBuilder, v wire.Version, proto uint8) error {
	h := &Homa{Version: v, IPProto: proto}
	err := h.DecodeFromBytes(data, p)
	p.AddLayer(h)
	if err != nil {
		return err
	}
	return p.NextDecoder(h.NextLayerType())
}
