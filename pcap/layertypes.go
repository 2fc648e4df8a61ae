package pcap

import "github.com/gopacket/gopacket"

// Layer type numbers: the block 1460-1479 (146 × 10) is ours; gopacket
// reserves 0-999 and panics on a duplicate registration, so registration
// happens once, here, at package initialisation (which only allocates the
// numbers; routing packets to the layers is done by Register).
var (
	// LayerTypeHoma is a Homa packet in the current wire format (IP protocol
	// 146), or in whatever version Homa.Version selects.
	LayerTypeHoma = gopacket.RegisterLayerType(1460, gopacket.LayerTypeMetadata{Name: "Homa", Decoder: gopacket.DecodeFunc(decodeHomaCurrent)})
	// LayerTypeHoma2024 is a Homa packet in the 2022-2024 wire format (IP
	// protocol 253, HomaModule linux_6.1.38).
	LayerTypeHoma2024 = gopacket.RegisterLayerType(1461, gopacket.LayerTypeMetadata{Name: "Homa2024", Decoder: gopacket.DecodeFunc(decodeHoma2024)})
	// LayerTypeHomaHijacked is a Homa packet carried as a TCP segment (TCP
	// hijacking, IP protocol 6).
	LayerTypeHomaHijacked = gopacket.RegisterLayerType(1462, gopacket.LayerTypeMetadata{Name: "HomaHijacked", Decoder: gopacket.DecodeFunc(decodeHomaHijacked)})
)

// layerTypeTCPOrHoma replaces TCP in gopacket's IP protocol table when
// Register is called with Hijack: it decodes hijacked segments as Homa and
// everything else as TCP.
var layerTypeTCPOrHoma = gopacket.RegisterLayerType(1463, gopacket.LayerTypeMetadata{Name: "TCPOrHoma", Decoder: gopacket.DecodeFunc(decodeTCPOrHoma)})

// LayerClassHoma matches every Homa layer type.
var LayerClassHoma = gopacket.NewLayerClass([]gopacket.LayerType{LayerTypeHoma, LayerTypeHoma2024, LayerTypeHomaHijacked})
