package pcap

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
