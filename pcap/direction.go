package pcap

import "github.com/gopacket/gopacket/layers"

// Direction is a frame's direction at the interface it was captured on, as
// the pcapng epb_flags option stores it (bits 0-1: 0 unknown, 1 inbound, 2
// outbound; pcapng spec, Enhanced Packet Block flags word). On a switch
// port, inbound is a frame arriving from the attached host and outbound a
// frame sent to it.
type Direction uint8

// Directions.
const (
	DirUnknown  Direction = 0
	DirInbound  Direction = 1
	DirOutbound Direction = 2
)

// String returns "unknown", "inbound" or "outbound".
func (d Direction) String() string {
	switch d {
	case DirInbound:
		return "inbound"
	case DirOutbound:
		return "outbound"
	}
	return "unknown"
}

// Sighting is what a Linux cooked header (SLL, SLL2: tcpdump -i any)
// says of a frame through its packet type: where the capturing host stood
// to it. pcapng direction flags (Direction) say the same for a port; a
// cooked frame carries it in its link header, classic pcap included.
type Sighting uint8

// Sightings.
const (
	// SightUnknown: no cooked header (another link type).
	SightUnknown Sighting = iota
	// SightSent: packet type outgoing, a frame the capturing host sent.
	SightSent
	// SightToHost: packet type host ("to us"), a frame addressed to the
	// capturing host.
	SightToHost
	// SightOther: broadcast, multicast, to another host (a promiscuous
	// interface: a bridge port) or looped back.
	SightOther
)

// String returns "unknown", "sent", "to-host" or "other".
func (s Sighting) String() string {
	switch s {
	case SightSent:
		return "sent"
	case SightToHost:
		return "to-host"
	case SightOther:
		return "other"
	}
	return "unknown"
}

// cookedSighting returns the Sighting of the frame the top-level parser
// lp last decoded.
func cookedSighting(lp *linkParser) Sighting {
	for _, t := range lp.decoded {
		var pt uint16
		switch t {
		case layers.LayerTypeLinuxSLL:
			pt = uint16(lp.sll.PacketType)
		case layers.LayerTypeLinuxSLL2:
			pt = uint16(lp.sll2.PacketType)
		default:
			continue
		}
		switch pt {
		case uint16(layers.LinuxSLLPacketTypeOutgoing):
			return SightSent
		case uint16(layers.LinuxSLLPacketTypeHost):
			return SightToHost
		}
		return SightOther
	}
	return SightUnknown
}
