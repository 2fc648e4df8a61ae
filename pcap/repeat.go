package pcap

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strings"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/internal/plural"
)

// OtherRepeatedSection is Stats.Other's kind for a frame of a pcapng
// section that repeats an earlier section whole (sectionTrack): the same
// capture twice in one file, read once.
const OtherRepeatedSection = "repeated section"

// SectionRepeat says that a pcapng section repeats an earlier one.
type SectionRepeat struct {
	// Section repeats section Of (both 1-based, in file order) from its
	// first frame, FirstFrame (a frame number of the file): both hold
	// Frames frames, each with the bytes, timestamp, interface and
	// lengths of the frame at the same place in the other.
	Section    int `json:"section"`
	Of         int `json:"of"`
	FirstFrame int `json:"first_frame"`
	Frames     int `json:"frames"`
	// Whole is set when the section holds exactly section Of's frames,
	// no more and no fewer (the file joined with itself, cat a.pcapng
	// a.pcapng), and the whole section is skipped. Only where section Of
	// was cut short in mid-block (SectionCut: cat of a capture cut short
	// and the whole one) is a section that starts with all of its frames
	// a repeat too, of those frames only, and the rest of it read; a
	// section that only starts as another does is read whole.
	Whole bool `json:"whole"`
	// Cut is set when the section, cut short in mid-block, holds only
	// the first frames of section Of (a cut copy after a longer or the
	// whole capture: cat whole cut, or cat cut2 cut1 whole, cut2 the
	// longer): the whole section, Frames frames, is skipped.
	Cut bool `json:"cut,omitempty"`
}

// sectionKeyBytes is how many leading bytes of a frame the key of a
// section's first frame hashes: the link, IP and Homa headers (a DATA
// header and its first segment's included, behind a VLAN tag and IPv6).
// The key only picks the earlier sections worth comparing whole.
const sectionKeyBytes = 128

// sectionTimeSlack is how far apart the timestamps of a frame and its
// repeat may be: pcapgo reads a 2^-32 s resolution to within a
// nanosecond of the fast path's exact time (binaryTime), and the first
// frame of a section, read with its section header, goes through pcapgo.
const sectionTimeSlack = 1

// sectionTrack follows a pcapng's sections (a new section header resets
// the interfaces: captures joined with cat or mergecap -a) and finds a
// section that repeats an earlier one whole: as many frames, each with
// the bytes, lengths, interface and timestamp of the frame at the same
// place in that earlier section. Those frames are the same packets
// captured once and written twice, so the reader skips them (Stats.Other's
// OtherRepeatedSection): counted twice, every RPC of the capture was
// counted twice (homatest rpcs), and checked twice, each packet seemed
// sent twice. Only a whole section is taken for a repeat: two different
// captures may start alike (the same synthetic packets at the same
// times) and a section that only starts as another does is another
// capture, read whole.
//
// Only each section's first frame is kept (its key, sigOf); a section
// whose first frame is an earlier section's is compared with it by
// reading both again (open, sameSections): memory stays flat in the
// number of frames, and a capture of one section pays nothing but a
// count per frame.
type sectionTrack struct {
	// secs holds each section read so far, the current one last.
	secs []secInfo
	// skip is set while the current section repeats an earlier one.
	skip bool
	// repeats holds the repeats found, in file order.
	repeats []SectionRepeat
	// open returns a new reader of the same input from its start (nil:
	// it cannot be read again, as a reader of an io.Reader).
	open func() (*Reader, error)
	// unkeyed is set when a section could not be compared for want of
	// open.
	unkeyed bool
	// cuts lists the sections cut short in mid-block that another
	// section header followed (Reader.resync); skipLeft counts the frames
	// of the current section still to skip as a cut section's repeat.
	cuts     []SectionCut
	skipLeft int
}

// secInfo is what sectionTrack keeps of a section: the frame number of
// its first frame (0: none yet), its frame count, its first frame's
// frameSig, whether it repeats an earlier section and whether it was cut
// short in mid-block (SectionCut).
type secInfo struct {
	start, n int
	first    frameSig
	rep, cut bool
	// whole, for a section cut short, counts its frames read whole
	// (pcapgo may read the cut block as one more frame, its last bytes
	// the next header's).
	whole int
}

// cutShort notes that the current section ends cut short (c, whose
// Section it fills in), its frames up to frame whole (a frame number of
// the file) read whole: the next section header follows the cut block.
func (s *sectionTrack) cutShort(c SectionCut, whole int) {
	if s.secs == nil {
		s.secs = []secInfo{{}}
	}
	e := &s.secs[len(s.secs)-1]
	e.cut = true
	if e.n > 0 {
		e.whole = max(whole-e.start+1, 0)
	}
	c.Section = len(s.secs)
	s.cuts = append(s.cuts, c)
}

// newSection notes that a new section header was read: the next frame
// is the first of a new section.
func (s *sectionTrack) newSection() {
	if s.secs == nil {
		s.secs = []secInfo{{}}
	}
	s.secs = append(s.secs, secInfo{})
	s.skip, s.skipLeft = false, 0
}

// frame notes frame number n (data, as read with ci) and reports whether
// its section repeats an earlier one, whose frames the reader skips.
func (s *sectionTrack) frame(n int, data []byte, ci *gopacket.CaptureInfo) bool {
	if s.secs == nil {
		s.secs = []secInfo{{}}
	}
	c := &s.secs[len(s.secs)-1]
	c.n++
	if c.n > 1 {
		if s.skipLeft > 0 {
			s.skipLeft--
			return true
		}
		return s.skip
	}
	c.start, c.first = n, sigOf(data, ci)
	return len(s.secs) > 1 && s.repeated(n)
}

// sigOf returns the frameSig of a frame (data, read with ci).
func sigOf(data []byte, ci *gopacket.CaptureInfo) frameSig {
	k := maphash.Bytes(sectionSeed, data[:min(len(data), sectionKeyBytes)]) ^
		uint64(ci.CaptureLength)<<32 ^ uint64(ci.Length) ^ uint64(ci.InterfaceIndex)<<48
	return frameSig{k, ci.Timestamp.UnixNano()}
}

// sameSig reports whether two frames' keys match and their timestamps
// are within sectionTimeSlack.
func sameSig(a, b frameSig) bool {
	return a.key == b.key && max(a.at-b.at, b.at-a.at) <= sectionTimeSlack
}

// repeated reports whether the current section, whose first frame is
// frame n, repeats an earlier section whole (s.skip is set: its frames
// are skipped) or starts with all the frames of one cut short (skipLeft
// counts the rest of them to skip), and notes the repeat. Of the earlier
// sections cut short whose frames all start the current one, the longest
// is the one skipped: each cut copy of a capture (cat cut1 cut2 whole,
// cut2 longer) read on from the frames of those before it, so the longest
// holds every frame the cut copies counted, and skipping only the first
// read the rest of the longer copies twice.
func (s *sectionTrack) repeated(n int) bool {
	j := len(s.secs) - 1
	best := -1 // the longest earlier cut section found to start this one
	for q := range j {
		e := s.secs[q]
		if e.rep || e.n == 0 || !sameSig(e.first, s.secs[j].first) || e.cut && best >= 0 && e.n <= s.secs[best].n {
			continue
		}
		if s.open == nil {
			s.unkeyed = true
			return false
		}
		cmp := e.n
		if e.cut {
			cmp = e.whole
		}
		if cmp == 0 || !sameSections(s.open, e.start, cmp, n, e.cut) {
			continue
		}
		if e.cut {
			best = q
			continue
		}
		s.repeats = append(s.repeats, SectionRepeat{Section: j + 1, Of: q + 1, FirstFrame: n, Frames: e.n, Whole: true})
		s.secs[j].rep, s.skip = true, true
		return true
	}
	if best < 0 {
		return s.cutPrefix(n)
	}
	// A section cut short, then the capture whole: the cut one's frames
	// are the whole one's first, skipped once.
	e := s.secs[best]
	s.repeats = append(s.repeats, SectionRepeat{Section: j + 1, Of: best + 1, FirstFrame: n, Frames: e.n})
	s.skipLeft = e.n - 1
	return true
}

// cutPrefix reports whether the current section, whose first frame is
// frame n, is cut short in mid-block and its frames read whole are all
// the first frames of an earlier section (which holds them all, and
// counted them): the section is skipped whole (s.skip) and the repeat
// noted. Only a section whose first frame is an earlier one's is read
// again.
func (s *sectionTrack) cutPrefix(n int) bool {
	j := len(s.secs) - 1
	for q := range j {
		e := s.secs[q]
		if e.rep || e.n == 0 || !sameSig(e.first, s.secs[j].first) || s.open == nil {
			continue
		}
		if frames, ok := cutPrefixOf(s.open, e.start, n); ok {
			s.repeats = append(s.repeats, SectionRepeat{Section: j + 1, Of: q + 1, FirstFrame: n, Frames: frames, Cut: true})
			s.secs[j].rep, s.skip = true, true
			return true
		}
	}
	return false
}

// cutPrefixOf reports whether the section that starts at frame at is cut
// short in mid-block (SectionCut) with every frame read whole the same as
// the frame at the same place in the section that starts at frame from,
// and how many frames it holds (the cut block may read as one more). It
// reads the input twice more, with two readers of its own.
func cutPrefixOf(open func() (*Reader, error), from, at int) (int, bool) {
	var a, b rawProbe
	if !a.open(open) {
		return 0, false
	}
	defer a.r.Close()
	if !b.open(open) {
		return 0, false
	}
	defer b.r.Close()
	if !a.skipTo(at) || !b.skipTo(from) {
		return 0, false
	}
	secA, secB := a.section(), b.section()
	same, matched, frames := true, 0, 1
	for {
		if same = same && sameFrame(&a, &b); same {
			matched++
		}
		if !a.next() || a.section() != secA {
			break
		}
		if !same {
			// Only the cut block, read as the section's last frame,
			// may differ: this one came after a frame that did.
			return 0, false
		}
		frames++
		if !b.next() || b.section() != secB {
			same = false
		}
	}
	// The section at must have been cut, and its frames read whole
	// matched.
	for _, c := range a.r.sec.cuts {
		if c.Section == secA+1 {
			whole := c.Whole - at + 1
			return frames, whole > 0 && matched >= whole
		}
	}
	return 0, false
}

// sameFrame reports whether two probes' latest frames have the same
// bytes, lengths and interface at times within sectionTimeSlack.
func sameFrame(a, b *rawProbe) bool {
	return bytes.Equal(a.data, b.data) && a.ci.CaptureLength == b.ci.CaptureLength && a.ci.Length == b.ci.Length &&
		a.ci.InterfaceIndex == b.ci.InterfaceIndex && sameSig(frameSig{0, a.ci.Timestamp.UnixNano()}, frameSig{0, b.ci.Timestamp.UnixNano()})
}

// sameSections reports whether the section that starts at frame at holds
// exactly the frames frames of the section that starts at frame from
// (frame numbers of the input open reads): each frame the same bytes,
// lengths and interface at a time within sectionTimeSlack, and the
// section ending (another section, or the end of the input) after the
// last, unless prefix (the earlier section was cut short: the later one
// may hold more). It reads the input twice more, with two readers of its
// own.
func sameSections(open func() (*Reader, error), from, frames, at int, prefix bool) bool {
	var a, b rawProbe
	if !a.open(open) {
		return false
	}
	defer a.r.Close()
	if !b.open(open) {
		return false
	}
	defer b.r.Close()
	if !a.skipTo(at) || !b.skipTo(from) {
		return false
	}
	secA, secB := a.section(), b.section()
	for i := range frames {
		if i > 0 && (!a.next() || !b.next() || a.section() != secA || b.section() != secB) {
			return false
		}
		if !sameFrame(&a, &b) {
			return false
		}
	}
	// The section must end there: a longer one is another capture.
	if prefix {
		return true
	}
	if a.next() {
		return a.section() != secA
	}
	return a.err == io.EOF
}

// rawProbe reads every frame of an input as it is (sameSections): data
// and ci are the latest frame's, valid until the next; err the error
// that ended the read.
type rawProbe struct {
	r    *Reader
	data []byte
	ci   gopacket.CaptureInfo
	err  error
}

// open starts the probe on a reader open returns.
func (p *rawProbe) open(open func() (*Reader, error)) bool {
	p.r, p.err = open()
	return p.err == nil
}

// next reads the next frame (false: the end, or an error), past a
// section cut short as the reader does (Reader.resync).
func (p *rawProbe) next() bool {
	p.data, _, p.err = p.r.read(&p.ci)
	for p.err != nil && !errors.Is(p.err, io.EOF) && p.r.resync(p.err) {
		p.data, _, p.err = p.r.read(&p.ci)
	}
	if p.err != nil {
		return false
	}
	p.r.n++
	return true
}

// skipTo reads up to frame n (1-based), which it leaves read.
func (p *rawProbe) skipTo(n int) bool {
	for p.r.n < n {
		if !p.next() {
			return false
		}
	}
	return p.r.n == n
}

// section returns the index of the section of the frame read last (the
// reader's sectionTrack counts the sections it saw start).
func (p *rawProbe) section() int { return max(len(p.r.sec.secs)-1, 0) }

// sections returns the number of sections read (0 when no more than
// one), the frame numbers they start at (sections without a frame have
// none) and their repeats.
func (s *sectionTrack) sections() (int, []int, []SectionRepeat) {
	if len(s.secs) < 2 {
		return 0, nil, nil
	}
	var starts []int
	for _, c := range s.secs {
		if c.n > 0 {
			starts = append(starts, c.start)
		}
	}
	return len(s.secs), starts, slices.Clone(s.repeats)
}

// uncompared reports whether a pcapng of several sections had a section
// left uncompared (the input could not be read again).
func (s *sectionTrack) uncompared() bool { return len(s.secs) > 1 && s.unkeyed }

// SectionsNote says, for a pcapng of several sections (Stats.Sections),
// how many it holds, where they start and which repeat an earlier one
// (read once); "" for one section or a classic pcap. check, rpcs and
// decode's summary print it.
func (s *Stats) SectionsNote() string {
	if s.Sections < 2 {
		return ""
	}
	starts := make([]string, len(s.SectionStarts))
	for i, n := range s.SectionStarts {
		starts[i] = fmt.Sprint(n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the capture holds %d pcapng sections (starting at frames %s: captures joined into one file, as cat or mergecap -a does)", s.Sections, strings.Join(starts, ", "))
	if s.SectionsUncompared {
		b.WriteString("; the input could not be read again, so the sections were not compared and every frame is read")
	} else if len(s.Repeats) == 0 {
		b.WriteString("; none repeats another: every frame is read")
	}
	for _, c := range s.SectionCuts {
		fmt.Fprintf(&b, "; section %d is cut short after frame %d (a block cut in mid-write at byte %d, and %d bytes on, another section header: a capture cut short with another joined after it, as cat does), and the frames of the section after it are read", c.Section, c.AfterFrame, c.Offset, c.Skipped)
		if c.Whole < c.AfterFrame {
			fmt.Fprintf(&b, " (frame %d is the cut block's, its last bytes the next header's)", c.AfterFrame)
		}
	}
	for _, r := range s.Repeats {
		if r.Cut {
			fmt.Fprintf(&b, "; section %d (from frame %d), cut short, holds only the first frames of section %d (the same bytes, timestamps, interfaces and lengths): a cut copy of a capture read before it, so its %s were skipped and every packet counted once", r.Section, r.FirstFrame, r.Of, plural.Of(r.Frames, "frame", "frames"))
			continue
		}
		if !r.Whole {
			fmt.Fprintf(&b, "; section %d (from frame %d) starts with the frames of section %d, which was cut short (the same bytes, timestamps, interfaces and lengths): the capture cut short and then whole, so its first %s were skipped, every packet counted once, and the rest of section %d read", r.Section, r.FirstFrame, r.Of, plural.Of(r.Frames, "frame", "frames"), r.Section)
			continue
		}
		fmt.Fprintf(&b, "; section %d (from frame %d) repeats section %d frame for frame (%s with the same bytes, timestamps, interfaces and lengths, and no more): the same packets written twice, so its frames were skipped and every packet counted once", r.Section, r.FirstFrame, r.Of, plural.Of(r.Frames, "frame", "frames"))
	}
	return b.String()
}

// sectionSeed seeds the frame keys of sections' first frames (sigOf).
var sectionSeed = maphash.MakeSeed()

// frameSig is a frame's key (its lengths, interface and leading bytes,
// hashed) and timestamp (ns): a section's first frame, kept to find the
// earlier sections it may repeat.
type frameSig struct {
	key uint64
	at  int64
}
