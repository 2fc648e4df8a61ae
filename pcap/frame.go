package pcap

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Frame is one Homa packet read from a capture, with what the link and IP
// layers say about it.
type Frame struct {
	// Number is the 1-based index of the frame in its file (as Wireshark
	// numbers frames).
	Number int
	// Time is the capture timestamp (ns resolution where the file has it).
	Time time.Time
	// Interface is the pcapng interface index (0 for classic pcap); see
	// Reader.InterfaceName.
	Interface int
	// Direction is the frame's direction at that interface from the
	// pcapng epb_flags option (DirUnknown when absent, and for classic
	// pcap).
	Direction Direction
	// Sighting is what the frame's Linux cooked header (tcpdump -i any)
	// says of it at the capturing host: sent by it, to it, or neither;
	// SightUnknown for other link types.
	Sighting Sighting
	// LinkType is the link type of the frame's interface.
	LinkType layers.LinkType
	// CaptureLen and Length are the captured and original frame lengths in
	// bytes; CaptureLen < Length when the snap length cut the frame.
	CaptureLen, Length int
	// IPVersion is 4 or 6.
	IPVersion uint8
	// Src and Dst are the IP addresses. For a frame carried inside
	// another (VXLAN, GRE, ERSPAN), these and the other IP fields are the
	// inner frame's, the Homa packet's own.
	Src, Dst netip.Addr
	// IPProto is the IP protocol or IPv6 next header: 146, 253, or 6 when
	// Hijacked.
	IPProto uint8
	// TOS is the IPv4 TOS byte or the IPv6 traffic class.
	TOS uint8
	// Priority is the Homa priority level carried in TOS (see
	// wire.PriorityFromTOS and wire.PriorityFromTrafficClass), read with
	// shift PrioShift (5, or 4 for IPv6 written before HomaModule
	// 548056f).
	Priority, PrioShift uint8
	// PrioEither is set on an IPv6 frame whose sender's shift is not
	// known yet and whose traffic class fits both shifts
	// (ReaderOptions.IPv6PriorityShift); Priority and PrioShift are then
	// read with the version's usual shift.
	PrioEither bool
	// Hijacked is true for Homa carried in TCP segments.
	Hijacked bool
	// TTL is the IPv4 time to live or the IPv6 hop limit; BadIPChecksum
	// is set when the IPv4 header checksum does not verify; Fragment for
	// the first fragment of a fragmented IPv4 or IPv6 Homa packet (later
	// fragments hold no Homa header: Stats.Other counts them as
	// "fragment"); IPOptions for an IPv4 header with options (IHL above 5)
	// other than security labels (onlyLabels); IPLengthPastFrame when the
	// IP header claims more bytes than the frame holds although the snap
	// length did not cut it (a receiver's IP layer drops such a packet).
	TTL               uint8
	BadIPChecksum     bool
	Fragment          bool
	IPOptions         bool
	IPLengthPastFrame bool
	// Raw is the transport bytes as captured (Homa header onwards).
	Raw []byte
	// Packet is the decoded Homa packet. When Err is set it is zero,
	// except for a header the snap length cut after the common header:
	// then it is the readable part (wire.Packet.Partial, SnapCut set).
	Packet wire.Packet
	// Segments are the DATA segments of the packet: one for an ordinary
	// DATA packet, several for a GSO frame; nil for control packets. The
	// slice is reused by the next call to Reader.Next.
	Segments []wire.Segment
	// Err is set when the frame is Homa by its IP protocol (or hijack marks)
	// but its Homa header does not decode; it is a *wire.DecodeError.
	Err error
	// SnapCut is set when the capture's snap length cut the frame (the IP
	// header says more bytes were sent than were captured): a truncated
	// header is then the capture's doing, not the sender's.
	SnapCut bool
	// ICMP is set (and Packet zero) for an ICMP destination-unreachable
	// message quoting a Homa packet, returned only with ReaderOptions.ICMP.
	ICMP *spec.ICMP
	// Comment is the frame's pcapng comment (opt_comment; several are
	// joined with "; "), "" if none.
	Comment string
}

// Stats counts what a Reader has seen so far.
type Stats struct {
	// Frames is every frame read.
	Frames int `json:"frames"`
	// Homa is the frames decoded as Homa packets (including GSO frames).
	Homa int `json:"homa"`
	// ByType counts decoded Homa frames by packet type, indexed by
	// type-0x10 (see wire.AllTypes).
	ByType [len(wire.AllTypes)]int `json:"-"`
	// Retransmits counts DATA frames with retransmit=1.
	Retransmits int `json:"retransmits"`
	// DecodeErrors counts Homa frames whose header failed to decode.
	DecodeErrors int `json:"decode_errors"`
	// Truncated counts Homa frames cut short by the snap length.
	Truncated int `json:"truncated"`
	// SnapCut counts the Homa frames (part of DecodeErrors) whose Homa
	// header, or a GSO frame's segment headers, the snap length cut
	// (captured length below the frame's length, gopacket CaptureInfo):
	// packets the capture holds but cannot show, as if it had dropped
	// them. SnapLen is the most bytes the capture kept of such a frame, or
	// of one cut before its Homa header (OtherCutBeforeHoma): its snap
	// length, or less when the link layer is shorter; 0 without any.
	SnapCut int `json:"snap_cut,omitempty"`
	SnapLen int `json:"snap_len,omitempty"`
	// SnapPartial counts the SnapCut frames whose common header (ports,
	// type, sender_id) was captured whole: their Frame.Packet is the
	// readable part (wire.Packet.Partial), which rules that read only
	// those fields judge (spec.Each.Partial).
	SnapPartial int `json:"snap_partial,omitempty"`
	// SnapComplete counts the SnapPartial frames whose cut took only bytes
	// no receiver reads (an ACK's acks slots past num_acks:
	// wire.Packet.Complete): the checker judges them as whole packets.
	SnapComplete int `json:"snap_complete,omitempty"`
	// Segments counts DATA segments (a GSO frame counts each of its segments).
	Segments int `json:"segments"`
	// GSOFrames counts multi-segment GSO DATA frames.
	GSOFrames int `json:"gso_frames"`
	// IPLengthMismatch counts Homa frames whose IP length exceeds the frame
	// although the snap length did not cut it (the IP header is wrong).
	IPLengthMismatch int `json:"ip_length_mismatch"`
	// CapLenOverLen counts the frames whose captured length exceeds their
	// original length (classic pcap incl_len > orig_len, pcapng the same),
	// which no capture takes: a damaged record or a faulty writer. They
	// are read as captured, their original length taken as the captured
	// one (Frame.Length; tshark reads them so, flagging them).
	// CapLenOverLenFrame is the first one's number.
	CapLenOverLen      int `json:"caplen_over_len,omitempty"`
	CapLenOverLenFrame int `json:"caplen_over_len_first_frame,omitempty"`
	// VersionMismatch counts packets read with a forced wire version
	// whose IP protocol belongs to another version (e.g. --wire current on
	// IP protocol 253), whether or not they decode in it.
	VersionMismatch int `json:"version_mismatch"`
	// Other counts non-Homa frames by kind: "arp", "icmp", "icmpv6", "tcp",
	// "udp", "ip" (another IP protocol), "fragment" (IPv4 fragments),
	// "empty" (zero-length frames), "not-ip" (a supported link type
	// carrying something else, or an IP header whose version is not that of
	// its EtherType: 5 under 0x0800), OtherCutBeforeHoma (not that, but
	// cut by the snap length before its IP header ended), "unsupported-link-<name>" (a link type the
	// reader cannot peel), and two kinds of Homa frames skipped: "other
	// direction" (ReaderOptions.Direction) and OtherCopy (a packet's later
	// sightings at other capture points of the capture: copyTracker).
	Other map[string]int `json:"other"`
	// CaptureDrops is the number of packets the capture says it dropped
	// itself (its buffer overflowed): the isb_ifdrop of its pcapng
	// interface statistics blocks, the latest per interface (the values
	// are totals since the capture started), summed over interfaces and
	// sections (dumpcap counts the kernel's and its own drops there).
	// 0 when it declares none: classic pcap has no place for them (tcpdump
	// prints "N packets dropped by kernel" on stderr only), and isb_osdrop
	// is not read (pcapgo v1.7.7 does not parse it).
	CaptureDrops uint64 `json:"capture_drops,omitempty"`
	// UnreadableDrops is how many of CaptureDrops the capture says were
	// frames it could not read (its socket queued them, recvmsg failed:
	// UnreadableComment), which a larger buffer does not cure.
	// DropsCauseUnsaid is set when a file homatest wrote declares drops
	// without that count (its captures before it counted both kinds
	// together).
	UnreadableDrops  uint64 `json:"unreadable_drops,omitempty"`
	DropsCauseUnsaid bool   `json:"drops_cause_unsaid,omitempty"`
	// Backwards counts the frames Next returned (Homa, ICMP quoting Homa)
	// whose timestamp lies before that of a frame ahead of them in the
	// file (tcpdump on several CPUs, a mirror port, a merged file);
	// BackwardsFrame is the first such frame's number and BackwardsMax the
	// furthest one lies back (in JSON, nanoseconds). 0 for a file in
	// timestamp order. See ReaderOptions.Reorder.
	Backwards      int           `json:"time_backwards,omitempty"`
	BackwardsFrame int           `json:"time_backwards_first_frame,omitempty"`
	BackwardsMax   time.Duration `json:"time_backwards_max_ns,omitempty"`
	// TimeVaries is set once a Homa frame's timestamp differs from the
	// first Homa frame's. Unset with two or more Homa frames, the capture
	// carries no time (a writer or an editor stamped every frame alike,
	// 0 say): rules that judge time have nothing to weigh.
	TimeVaries bool `json:"-"`
	// SameInstant counts the Homa frames (part of Homa, and judged) that
	// repeat a recent Homa frame byte for byte from the IP header on, at
	// the same timestamp and capture point (copyTracker; a classic pcap
	// says nothing of where a frame was taken): each earlier frame pairs
	// once. Many of them mean the capture doubled its frames (two
	// captures of one interface merged, a file merged with itself); a few
	// may be a host sending a packet twice back to back.
	// SameInstantFrames holds their frame numbers, in file order.
	SameInstant       int   `json:"same_instant_copies,omitempty"`
	SameInstantFrames []int `json:"-"`
	// IfaceDrops is CaptureDrops by pcapng interface index (sections
	// summed by index); nil when none are declared.
	IfaceDrops map[int]uint64 `json:"-"`
	// Sections is the number of sections of a pcapng that holds more than
	// one (each section header starts afresh, its interfaces numbered
	// from 0: captures joined with cat or mergecap -a), 0 otherwise;
	// SectionStarts the frame numbers of their first frames. Repeats
	// lists the sections that repeat an earlier one frame for frame
	// (sectionTrack): their repeating frames are skipped, counted in
	// Other as OtherRepeatedSection (SectionsNote says so).
	Sections      int             `json:"pcapng_sections,omitempty"`
	SectionStarts []int           `json:"pcapng_section_starts,omitempty"`
	Repeats       []SectionRepeat `json:"repeated_sections,omitempty"`
	// SectionsUncompared is set when the sections could not be compared:
	// the first is read again only once a second appears, and standard
	// input cannot be read again.
	SectionsUncompared bool `json:"pcapng_sections_uncompared,omitempty"`
	// SectionCuts lists the sections cut short in mid-block that another
	// section header follows, which the reader reads on from.
	SectionCuts []SectionCut `json:"pcapng_sections_cut,omitempty"`
}

// SnapUnseen returns the frames whose Homa header the snap length cut of
// more than it can spare (SnapCut but not SnapComplete): packets the
// checker's trace and all but a few rules do not see.
func (s *Stats) SnapUnseen() int { return s.SnapCut - s.SnapComplete }

// OtherCutBeforeHoma is Stats.Other's kind for a frame the snap length
// cut before its link and IP headers ended (tcpdump -s 20 on Ethernet):
// no IP packet could be read from it, so a Homa packet in it is unseen
// (pcap's linkParser.cutBeforeIP; otherwise it would count as "not-ip").
const OtherCutBeforeHoma = "cut before the Homa header"

// CutBeforeHomaHint says how many frames the snap length cut before
// their Homa header (Other's OtherCutBeforeHoma) and how to re-capture,
// "" when none: the words decode's summary and the error of check, rpcs
// and plot on a capture without a Homa packet share.
func (s *Stats) CutBeforeHomaHint() string {
	n := s.Other[OtherCutBeforeHoma]
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the snap length cut %s before %s Homa header (at most %d bytes of each were captured), so any Homa packet among them is unseen: %s",
		plural.Of(n, "frame", "frames"), plural.Word(n, "its", "their"), s.SnapLen, spec.SnapAdvice)
}

// UnreadLink returns the number of frames of link types the reader cannot
// peel (Other's "unsupported-link-<name>" kinds): whatever packets they
// carried are unseen, as a capture's drops are.
func (s *Stats) UnreadLink() int {
	n := 0
	for k, c := range s.Other {
		if strings.HasPrefix(k, unsupportedLink) {
			n += c
		}
	}
	return n
}

// CutBeforeHoma returns the frames the snap length cut before their IP
// header ended (Other's OtherCutBeforeHoma): any Homa packet among them
// is unseen.
func (s *Stats) CutBeforeHoma() int { return s.Other[OtherCutBeforeHoma] }

// Unseen returns the frames the capture holds whose Homa packets, if
// any, could not be read: cut by the snap length (SnapUnseen, and
// CutBeforeHoma: the checker counts them as capture drops too, where it
// counted only the Homa frames it recognised) or on a link type the
// reader cannot peel (UnreadLink).
func (s *Stats) Unseen() int { return s.SnapUnseen() + s.CutBeforeHoma() + s.UnreadLink() }

// Count returns the number of Homa frames of type t.
func (s *Stats) Count(t wire.PacketType) int {
	if !t.IsValid() {
		return 0
	}
	return s.ByType[t-wire.MinType]
}

// NonHoma returns the number of frames that were not Homa.
func (s *Stats) NonHoma() int {
	n := 0
	for _, c := range s.Other {
		n += c
	}
	return n
}

// PriorityOr returns the other reading of the level of a frame with
// PrioEither (its IPv6 sender's shift not known: the class read with
// shift 4 instead of 5, or 5 instead of 4) and whether there is one that
// differs from Priority. decode prints it after Priority ("p3/6").
func (f *Frame) PriorityOr() (uint8, bool) {
	if !f.PrioEither {
		return 0, false
	}
	other := wire.PriorityFromTrafficClass(f.TOS, 9-f.PrioShift) // 4 ↔ 5
	return other, other != f.Priority
}
