package pcap

import (
	"fmt"
	"github.com/homatest/homatest/spec"
	"sort"
	"strings"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/spec/wire"
)

// Summary renders s as one line about the capture name (homatest decode's
// summary): frames, Homa packets by type, decode errors, other frames by
// kind, Homa frames that repeat an earlier one at the same instant
// (Stats.SameInstant), GSO frames split, frames the snap length cut, the drops the
// capture declares, frames captured longer than they were, IP length and
// wire version mismatches, and where stopped (the error that ended the read
// early, if any) ended it.
func (s *Stats) Summary(name string, stopped error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, %d Homa:", name, plural.Of(s.Frames, "frame", "frames"), s.Homa)
	for i, t := range wire.AllTypes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %s %d", t, s.shownCount(t))
		if t == wire.TypeData {
			fmt.Fprintf(&b, " (retransmit %d)", s.Retransmits)
		}
	}
	fmt.Fprintf(&b, "; %s; %d other", plural.Of(s.DecodeErrors-s.SnapComplete, "decode error", "decode errors"), s.NonHoma())
	if len(s.Other) > 0 {
		keys := make([]string, 0, len(s.Other))
		for k := range s.Other {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, s.Other[k])
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if s.SameInstant > 0 {
		fmt.Fprintf(&b, "; %s an earlier frame byte for byte at the same instant", plural.Of(s.SameInstant, "Homa frame repeats", "Homa frames repeat"))
	}
	if n := s.SectionsNote(); n != "" {
		b.WriteString("; " + n)
	}
	if s.GSOFrames > 0 {
		fmt.Fprintf(&b, "; %s split into %d segments", plural.Of(s.GSOFrames, "GSO frame", "GSO frames"), s.Segments)
	}
	// Most cut frames lost payload only (tcpdump -s 256): every header
	// field was read, which is not a loss worth alarming about.
	if n := s.Truncated - s.SnapPartial; n > 0 {
		fmt.Fprintf(&b, "; %s with only the payload cut by the snap length (headers whole)", plural.Of(n, "Homa frame", "Homa frames"))
	}
	// An ACK that lost only unused acks slots is read whole, as check
	// judges it: neither a decode error nor a reason to re-capture.
	if n := s.SnapComplete; n > 0 {
		fmt.Fprintf(&b, "; %s with only unused acks slots cut by the snap length (read whole)", plural.Of(n, "ACK", "ACKs"))
	}
	if n := s.SnapPartial - s.SnapComplete; n > 0 {
		fmt.Fprintf(&b, "; %s with part of the Homa header cut by the snap length (common header whole)", plural.Of(n, "Homa frame", "Homa frames"))
	}
	if n := s.SnapUnseen(); n > 0 {
		fmt.Fprintf(&b, "; %s (of the decode errors) with the Homa header cut by the snap length (%d bytes kept): %s", plural.Of(n, "Homa frame", "Homa frames"), s.SnapLen, spec.SnapAdvice)
	}
	if h := s.CutBeforeHomaHint(); h != "" {
		b.WriteString("; " + h)
	}
	for _, n := range s.FrameDamage() {
		b.WriteString("; " + n)
	}
	if s.CaptureDrops > 0 {
		fmt.Fprintf(&b, "; the capture says it dropped %s itself (interface statistics)", plural.Of64(s.CaptureDrops, "packet", "packets"))
	}
	if s.VersionMismatch > 0 {
		fmt.Fprintf(&b, "; WARNING: %s decoded with a --wire version whose IP protocol differs from the packet's", plural.Of(s.VersionMismatch, "packet", "packets"))
	}
	if stopped != nil {
		fmt.Fprintf(&b, "; STOPPED after frame %d: %v", s.Frames, stopped)
	}
	return b.String()
}

// shownCount is decode's count of Homa frames of type t: Count, and for
// ACK the ACKs read whole although the snap length cut unused acks
// slots (SnapComplete), which decode prints as ACKs.
func (s *Stats) shownCount(t wire.PacketType) int {
	if t == wire.TypeAck {
		return s.Count(t) + s.SnapComplete
	}
	return s.Count(t)
}

// FrameDamage returns the notes on the damaged frames the reader read
// all the same, in the words of decode's summary, which check's report
// repeats (check.FileReport.FrameHint): Homa frames whose IP length
// exceeds the frame the snap length did not cut (IPLengthMismatch: the
// IP header or the frame is damaged; read as the frame holds them) and
// frames captured longer than they were (CapLenOverLen); nil when none.
func (s *Stats) FrameDamage() []string {
	var notes []string
	if s.IPLengthMismatch > 0 {
		notes = append(notes, plural.Of(s.IPLengthMismatch, "Homa frame", "Homa frames")+" with an IP length longer than the frame")
	}
	if s.CapLenOverLen > 0 {
		its := "their"
		if s.CapLenOverLen == 1 {
			its = "its"
		}
		notes = append(notes, fmt.Sprintf("%s captured length exceeds %s original length (first frame %d): read as captured", plural.Of(s.CapLenOverLen, "frame whose", "frames whose"), its, s.CapLenOverLenFrame))
	}
	return notes
}

// JSONSummary is one capture's counts as homatest decode -o json prints
// them ({"summary": ...}). Fields are in the order of their JSON names.
type JSONSummary struct {
	// CapLenOverLen and CapLenOverLenFrame are Stats.CapLenOverLen and
	// CapLenOverLenFrame (omitted when 0).
	CapLenOverLen      int `json:"caplen_over_len,omitempty"`
	CapLenOverLenFrame int `json:"caplen_over_len_first_frame,omitempty"`
	// CaptureDrops is Stats.CaptureDrops (omitted when 0).
	CaptureDrops uint64 `json:"capture_drops,omitempty"`
	DecodeErrors int    `json:"decode_errors"`
	// Error is the error that ended the read early (a damaged or cut
	// capture), or kept it from starting (a file decode could not open),
	// if any.
	Error            string         `json:"error,omitempty"`
	File             string         `json:"file"`
	Frames           int            `json:"frames"`
	GSOFrames        int            `json:"gso_frames"`
	Homa             int            `json:"homa"`
	IPLengthMismatch int            `json:"ip_length_mismatch"`
	Other            map[string]int `json:"other"`
	OtherTotal       int            `json:"other_total"`
	Retransmits      int            `json:"retransmits"`
	// RPCPackets counts the packets of the RPC a caller selected (decode
	// --rpc); nil when none was.
	RPCPackets *int `json:"rpc_packets,omitempty"`
	// SameInstant is Stats.SameInstant: Homa frames that repeat an earlier
	// one byte for byte at the same timestamp (0 included, so that a
	// script can tell "none" from an older homatest).
	SameInstant int `json:"same_instant_copies"`
	Segments    int `json:"segments"`
	// SnapCut and SnapLen are Stats.SnapCut and SnapLen (omitted when 0).
	SnapCut int `json:"snap_cut,omitempty"`
	SnapLen int `json:"snap_len,omitempty"`
	// SnapComplete is Stats.SnapComplete (omitted when 0): ACKs the snap
	// length cut only in unused acks slots, read whole and so not among
	// DecodeErrors (which counts Stats.DecodeErrors less them).
	SnapComplete int `json:"snap_complete,omitempty"`
	Truncated    int `json:"truncated"`
	// Sections, SectionStarts and Repeats are Stats.Sections,
	// SectionStarts and Repeats (omitted for one section).
	Sections      int             `json:"pcapng_sections,omitempty"`
	SectionStarts []int           `json:"pcapng_section_starts,omitempty"`
	Repeats       []SectionRepeat `json:"repeated_sections,omitempty"`
	// Types counts Homa frames by packet type name, every type present.
	Types           map[string]int `json:"types"`
	VersionMismatch int            `json:"version_mismatch"`
}

// JSONSummary returns s as the summary of capture name; stopped is the
// error that ended the read early, if any.
func (s *Stats) JSONSummary(name string, stopped error) JSONSummary {
	types := map[string]int{}
	for _, t := range wire.AllTypes {
		types[t.String()] = s.shownCount(t)
	}
	other := s.Other
	if other == nil {
		other = map[string]int{}
	}
	j := JSONSummary{
		File: name, Frames: s.Frames, Homa: s.Homa, Types: types,
		Retransmits: s.Retransmits, DecodeErrors: s.DecodeErrors - s.SnapComplete, SameInstant: s.SameInstant,
		Truncated: s.Truncated, Segments: s.Segments, GSOFrames: s.GSOFrames, SnapCut: s.SnapCut, SnapLen: s.SnapLen,
		SnapComplete:     s.SnapComplete,
		IPLengthMismatch: s.IPLengthMismatch, VersionMismatch: s.VersionMismatch,
		Other: other, OtherTotal: s.NonHoma(), CaptureDrops: s.CaptureDrops,
		CapLenOverLen: s.CapLenOverLen, CapLenOverLenFrame: s.CapLenOverLenFrame,
		Sections: s.Sections, SectionStarts: s.SectionStarts, Repeats: s.Repeats,
	}
	if stopped != nil {
		j.Error = stopped.Error()
	}
	return j
}
