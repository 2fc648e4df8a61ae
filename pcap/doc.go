// Package pcap connects Homa to captures: gopacket layer types for Homa
// packets, reading pcap and pcapng files into decoded Homa frames, and
// writing pcapng.
//
// It is the only package of homatest that imports gopacket. Nothing is
// registered with gopacket at import time: call [Register] once before using
// gopacket.NewPacket on frames that may hold Homa, to route IP protocol 146
// (current wire format) and 253 (2024 format) to the [Homa] layer, and
// optionally TCP segments carrying HomaModule's hijack marks (flags 0x06,
// urgent 0xB97D).
//
// [Reader] is the fast path used by homatest decode and check: it peels the
// link layer (Ethernet with VLAN tags, Linux cooked SLL and SLL2, raw IPv4 or
// IPv6) and the IP header with a gopacket DecodingLayerParser, then decodes
// the Homa header with spec/wire, without allocating per packet.
//
// [OpenLive] captures live from a network interface (Linux AF_PACKET with
// a TPACKET_V3 receive ring the kernel fills as frames pass, pure Go) with
// a large snap length, and optionally one direction only (a BPF filter on
// the packet type); the harness uses it on every switch port.
//
// Layer type numbers 1460-1479 are reserved for this package (see
// layertypes.go).
package pcap
