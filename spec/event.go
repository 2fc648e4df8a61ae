package spec

import (
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Event is one observed Homa packet: a control packet, or one segment of a
// DATA packet (a GSO frame gives one Event per segment). Events are fed to
// the Checker in capture order.
type Event struct {
	// Frame is the 1-based frame number in the capture; Segment the 0-based
	// segment index within a GSO frame.
	Frame, Segment int
	// Time is the capture timestamp (it may step backwards).
	Time time.Time
	// Src and Dst are the IP addresses.
	Src, Dst netip.Addr
	// Priority is the level read from the IP precedence bits.
	Priority uint8
	// Hijacked is set for Homa carried in TCP segments.
	Hijacked bool
	// Packet is the decoded packet (zero when Err is set).
	Packet wire.Packet
	// Offset and Length are the segment's byte range (DATA only).
	Offset uint32
	Length int
	// Err is the decode error of a frame that is Homa but malformed.
	Err error
	// SnapCut is set when the capture holds fewer bytes than were sent (a
	// snap length), so a truncated header is not the sender's fault.
	SnapCut bool
}

// Type returns the packet type (0 for a malformed packet).
func (e *Event) Type() wire.PacketType {
	if e.Err != nil {
		return 0
	}
	return e.Packet.Type()
}

// End returns Offset+Length for DATA.
func (e *Event) End() uint32 { return e.Offset + uint32(e.Length) }

// FromClient reports whether the client side of the RPC sent the packet.
func (e *Event) FromClient() bool { return e.Packet.Role() == wire.RoleClient }

// Retransmit reports whether the event is DATA with retransmit=1.
func (e *Event) Retransmit() bool {
	return e.Type() == wire.TypeData && e.Packet.Data().Retransmit() != 0
}
