package spec

import (
	"fmt"
	"net/netip"
	"strconv"
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
	// TOS is the whole IPv4 TOS byte or IPv6 traffic class, and
	// PrioShift the shift the priority was read with (5: IP precedence;
	// 4: IPv6 as linux_6.1.38 and linux_6.13.9 wrote it); 0 when unknown.
	TOS, PrioShift uint8
	// PrioEither is set on an IPv6 event whose sender's shift is not
	// known and whose traffic class fits both (PriorityBits).
	PrioEither bool
	// Hijacked is set for Homa carried in TCP segments.
	Hijacked bool
	// IP is what the capture reader saw of the IP header beyond addresses
	// and TOS (zero for events that did not come from one).
	IP IPHeader
	// Packet is the decoded packet. When Err is set it is zero, except
	// for a header the snap length cut after the common header (SnapCut):
	// then it is the readable part (wire.Packet.Partial; see Partial).
	Packet wire.Packet
	// Offset and Length are the segment's byte range (DATA only).
	Offset uint32
	Length int
	// Payload is the segment's data as captured (DATA only): fewer than
	// Length bytes when the snap length cut the frame, nil when none were
	// captured. Like Packet's bytes it may alias a reader's buffer.
	Payload []byte
	// Err is the decode error of a frame that is Homa but malformed.
	Err error
	// SnapCut is set when the capture holds fewer bytes than were sent (a
	// snap length), so a truncated header is not the sender's fault.
	SnapCut bool
	// ICMP is set for an ICMP destination-unreachable message (sent by Src
	// to Dst) that quotes a Homa packet; Packet is then zero. Only rules
	// that ask for ICMP see such events.
	ICMP *ICMP
	// Note is the capture's comment on the frame (pcapng opt_comment), if
	// any: e.g. a tester's mark on a packet it broke on purpose.
	Note string
}

// IPHeader holds the IP header fields the kernel's IP layer writes for a
// Homa packet (HomaModule hands its packets to ip_queue_xmit or ip6_xmit),
// as a capture reader saw them.
type IPHeader struct {
	// Known is set by a reader that parsed the IP header; the other fields
	// mean nothing without it.
	Known bool
	// TTL is the IPv4 time to live or the IPv6 hop limit.
	TTL uint8
	// BadChecksum is set for an IPv4 header whose checksum does not verify.
	BadChecksum bool
	// Fragment is set for an IP fragment (IPv4 more fragments or a
	// nonzero offset; an IPv6 fragment header saying the same): a first
	// fragment, the only one that holds the Homa header.
	Fragment bool
	// Options is set for an IPv4 header with options (IHL above 5) other
	// than a security module's label.
	Options bool
	// LengthPastFrame is set when the IP length (IPv4 total length, IPv6
	// payload length) claims more bytes than the frame's original length
	// (not a snap length's cut): a receiver's IP layer drops the packet.
	LengthPastFrame bool
}

// ICMP is an ICMP or ICMPv6 destination-unreachable message about a Homa
// packet: HomaModule sends port unreachable for a packet to a port without
// a socket (homa_incoming.c homa_dispatch_pkts) and aborts the RPCs to
// that address and port when it receives one (homa_plumbing.c
// homa_err_handler_v4/v6, homa_rpc.c homa_abort_rpcs).
type ICMP struct {
	// PortUnreachable is set for ICMP type 3 code 3 and ICMPv6 type 1 code
	// 4; other unreachable codes abort every RPC to the address.
	PortUnreachable bool
	// Type and Code are the ICMP (or ICMPv6) type and code.
	Type, Code uint8
	// Quoted names the packet the message is about: its addresses, Homa
	// ports and, when the quote is long enough (HasID), type and sender_id.
	QSrc, QDst     netip.Addr
	QSport, QDport uint16
	QType          wire.PacketType
	QSenderID      uint64
	HasID          bool
}

// DecodeEvent returns the event of one Homa packet, pkt (its transport
// bytes, not a GSO frame), sent from src to dst at time at and priority
// prio, decoded as wire format v: a DATA packet's event carries its
// segment's Offset, Length and Payload; bytes that do not decode give an
// event with Err set (a malformed packet, as the capture reader gives).
// Frame is left for the caller. The event views pkt: it must outlive it.
// For packets a program holds whole (the explorer's hosts, tests); the
// capture reader (package pcap) builds its own, per GSO segment, with the
// IP header's facts.
func DecodeEvent(at time.Time, src, dst netip.Addr, prio uint8, pkt []byte, v wire.Version) Event {
	p, err := wire.Decode(pkt, wire.DecodeOptions{Version: v})
	e := Event{Time: at, Src: src, Dst: dst, Priority: prio}
	if err != nil {
		e.Err = err
		return e
	}
	e.Packet = p
	if p.Type() == wire.TypeData {
		d := p.Data()
		e.Offset, e.Length, e.Payload = d.Offset(), d.DataLen(), d.Payload()
	}
	return e
}

// Type returns the packet type (0 for a malformed packet or ICMP).
func (e *Event) Type() wire.PacketType {
	if e.Err != nil || e.ICMP != nil {
		return 0
	}
	return e.Packet.Type()
}

// Partial reports whether e is a packet whose header the snap length cut
// after the common header: Err holds the truncation and Packet the
// readable part. Only the rules that declare they can judge such a packet
// (Each.Partial, AtMost.Partial) see it, as a packet of its type; to all
// others, and to the trace, it is a packet the capture did not show.
func (e *Event) Partial() bool { return e.Err != nil && e.Packet.Partial() }

// End returns Offset+Length for DATA.
func (e *Event) End() uint32 { return e.Offset + uint32(e.Length) }

// FromClient reports whether the client side of the RPC sent the packet.
func (e *Event) FromClient() bool { return e.Packet.Role() == wire.RoleClient }

// IPv6 reports whether e came over IPv6 (an IPv4-mapped address counts as
// IPv4): what sizes its headers and so max_seg_data.
func (e *Event) IPv6() bool { return e.Src.Is6() && !e.Src.Is4In6() }

// PriorityBits returns the levels e may have been sent at, bit p for
// level p: Priority alone, or for an event with PrioEither (no packet of
// its IPv6 sender so far had a class only one shift writes,
// pcap.ReaderOptions.IPv6PriorityShift) both readings of its traffic
// class: HomaModule main writes level p as p<<5 since 548056f, and p<<4
// before (linux_6.13.9), so such a class is level p or 2p. The priority
// rules accept either.
func (e *Event) PriorityBits() uint16 {
	b := uint16(1) << (e.Priority & 15)
	if e.PrioEither {
		b |= 1<<wire.PriorityFromTrafficClass(e.TOS, 5) | 1<<wire.PriorityFromTrafficClass(e.TOS, 4)
	}
	return b
}

// levelText is e's level for a finding: the number, and on IPv6 the
// traffic class and the shift it was read with (or both readings when
// the sender's shift is not known), since a level read with the wrong
// shift looks like a wrong level (0x60 is 3 with shift 5, 6 with 4).
func (e *Event) levelText() string {
	if !e.IPv6() || e.PrioShift == 0 {
		return strconv.Itoa(int(e.Priority))
	}
	if e.PrioEither {
		return fmt.Sprintf("%d or %d (traffic class 0x%02x; the sender's shift is not known: --param ipv6_prio_shift names it)", wire.PriorityFromTrafficClass(e.TOS, 5), wire.PriorityFromTrafficClass(e.TOS, 4), e.TOS)
	}
	return fmt.Sprintf("%d (traffic class 0x%02x read with shift %d)", e.Priority, e.TOS, e.PrioShift)
}

// AtPriority reports whether e may have been sent at level p
// (PriorityBits).
func (e *Event) AtPriority(p uint8) bool { return p < 16 && e.PriorityBits()&(1<<p) != 0 }

// Retransmit reports whether the event is DATA with retransmit=1.
func (e *Event) Retransmit() bool {
	return e.Type() == wire.TypeData && e.Packet.Data().Retransmit() != 0
}
