package pcap

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/internal/plural"
)

// OtherRepeatedSection is Stats.Other's kind for a frame of a pcapng
// section that repeats an earlier section's frame at the same place
// (sectionTrack): the same capture twice in one file, read once.
const OtherRepeatedSection = "repeated section"

// SectionRepeat says that a pcapng section repeats an earlier one.
type SectionRepeat struct {
	// Section repeats section Of (both 1-based, in file order) from its
	// first frame, FirstFrame (a frame number of the file), for Frames
	// frames: each has the timestamp, interface, lengths and leading
	// bytes of the frame at the same place in section Of.
	Section    int `json:"section"`
	Of         int `json:"of"`
	FirstFrame int `json:"first_frame"`
	Frames     int `json:"frames"`
	// Whole is set when the section holds exactly section Of's frames,
	// no more and no fewer: the file joined with itself (cat a.pcapng
	// a.pcapng).
	Whole bool `json:"whole"`
}

// sectionKeyBytes is how many leading bytes of a frame its key hashes:
// the link, IP and Homa headers (a DATA header and its first segment's
// included, behind a VLAN tag and IPv6).
// With the timestamp, interface and lengths they tell frames apart;
// hashing whole frames would cost about as much as reading them.
const sectionKeyBytes = 128

// sectionTimeSlack is how far apart the timestamps of a frame and its
// repeat may be: pcapgo reads a 2^-32 s resolution to within a
// nanosecond of the fast path's exact time (binaryTime), and the first
// frame of a section, read with its section header, goes through pcapgo.
const sectionTimeSlack = 1

// sectionTrack follows a pcapng's sections (a new section header resets
// the interfaces: captures joined with cat or mergecap -a) and finds a
// section that repeats an earlier one: from its first frame, each frame
// has the key (sectionKey) of the frame at the same place in that
// earlier section. Those frames are the same packets captured once and
// written twice, so the reader skips them (Stats.Other's
// OtherRepeatedSection): counted twice, every RPC of the capture was
// counted twice (homatest rpcs), and checked twice, each packet seemed
// sent twice. The first frame that differs ends the repeat: it and the
// rest of its section are read.
type sectionTrack struct {
	// secs holds every section's frames' keys, in file order; kept
	// counts the keys held (at most sectionKeep); cur is the current
	// section's index and starts the frame numbers its sections start
	// at (the first section's is 1).
	secs   []sigLog
	kept   int
	cur    int
	starts []int
	// of is the earlier section the current one repeats so far (-1:
	// none), pos how many of the current section's frames were read.
	of, pos int
	// repeats holds the repeats found, the current section's last.
	repeats []SectionRepeat
	// fill reads the file's first frames again and returns their keys
	// (nil: the input cannot be read again, as standard input); the
	// first section is keyed by it only when a second section starts,
	// unless keepFirst (the reader fill opens) keys it as read.
	fill      func(frames int) (sigLog, bool)
	keepFirst bool
	// unkeyed is set when the first section could not be keyed: no
	// section is compared with any other.
	unkeyed bool
}

// newSection notes that a new section header was read: the next frame
// is the first of section cur+1.
func (s *sectionTrack) newSection() {
	s.init()
	if s.cur == 0 && !s.keepFirst {
		n := s.secs[0].n
		l, ok := sigLog{}, false
		if s.fill != nil && n > 0 {
			l, ok = s.fill(n)
		}
		if ok {
			s.secs[0], s.kept = l, l.held
		} else {
			s.unkeyed = true
		}
	}
	s.cur++
	s.secs = append(s.secs, sigLog{})
	s.of, s.pos = -1, 0
}

// frame notes frame number n (data, as read with ci) and reports whether
// it repeats the frame at its place in an earlier section, which the
// reader skips.
func (s *sectionTrack) frame(n int, data []byte, ci *gopacket.CaptureInfo) bool {
	s.init()
	if s.cur == 0 && !s.keepFirst || s.unkeyed {
		// One section so far: nothing to compare with, nothing kept
		// (newSection keys it by reading it again if another starts).
		if s.pos == 0 {
			s.starts = append(s.starts, n)
		}
		s.pos++
		s.secs[s.cur].n++
		return false
	}
	k := maphash.Bytes(sectionSeed, data[:min(len(data), sectionKeyBytes)]) ^
		uint64(ci.CaptureLength)<<32 ^ uint64(ci.Length) ^ uint64(ci.InterfaceIndex)<<48
	at := ci.Timestamp.UnixNano()
	i := s.pos
	s.pos++
	if s.kept < sectionKeep {
		s.kept++
		s.secs[s.cur].add(frameSig{k, at})
	} else {
		s.secs[s.cur].n++ // counted, not kept: compared with nothing
	}
	if i == 0 {
		s.starts = append(s.starts, n)
	}
	if s.cur == 0 || i > 0 && s.of < 0 {
		return false
	}
	if i == 0 || !s.same(s.of, i, k, at) {
		// The section starts, or its repeat of s.of ends: another
		// earlier section may hold the same frames so far and this one.
		ok := false
		s.of, ok = s.repeatedIn(i, k, at)
		if !ok {
			if i > 0 {
				s.of = -1 // the rest of the section is read
			}
			return false
		}
		if i == 0 {
			s.repeats = append(s.repeats, SectionRepeat{Section: s.cur + 1, FirstFrame: n})
		}
	}
	r := &s.repeats[len(s.repeats)-1]
	r.Of, r.Frames = s.of+1, i+1
	return true
}

// init readies s before its first section or frame.
func (s *sectionTrack) init() {
	if s.secs == nil {
		s.secs, s.of = []sigLog{{}}, -1
	}
}

// sections returns the number of sections read (0 when no more than
// one), the frame numbers they start at and their repeats, each Whole
// set as far as the sections were read.
func (s *sectionTrack) sections() (int, []int, []SectionRepeat) {
	if s.cur == 0 {
		return 0, nil, nil
	}
	reps := slices.Clone(s.repeats)
	for i := range reps {
		r := &reps[i]
		r.Whole = r.Frames == s.secs[r.Of-1].n && r.Frames == s.secs[r.Section-1].n
	}
	return s.cur + 1, slices.Clone(s.starts), reps
}

// uncompared reports whether a pcapng of several sections had its
// sections left uncompared (its first section could not be read again).
func (s *sectionTrack) uncompared() bool { return s.cur > 0 && s.unkeyed }

// same reports whether frame i of section q has key k and a timestamp
// within sectionTimeSlack of at.
func (s *sectionTrack) same(q, i int, k uint64, at int64) bool {
	f, ok := s.secs[q].at(i)
	return ok && f.key == k && max(at-f.at, f.at-at) <= sectionTimeSlack
}

// repeatedIn returns an earlier section whose first i frames are the
// current section's and whose frame i has key k at time at (ok false:
// none).
func (s *sectionTrack) repeatedIn(i int, k uint64, at int64) (int, bool) {
next:
	for q := range s.cur {
		if !s.same(q, i, k, at) {
			continue
		}
		for j := range i {
			if f, ok := s.secs[s.cur].at(j); !ok || !s.same(q, j, f.key, f.at) {
				continue next
			}
		}
		return q, true
	}
	return -1, false
}

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
	for _, r := range s.Repeats {
		if r.Whole {
			fmt.Fprintf(&b, "; section %d (from frame %d) repeats section %d frame for frame (%s with the same timestamps, interfaces, lengths and leading bytes): the same packets written twice, so its frames were skipped and every packet counted once", r.Section, r.FirstFrame, r.Of, plural.Of(r.Frames, "frame", "frames"))
			continue
		}
		fmt.Fprintf(&b, "; section %d (from frame %d) starts as section %d does, its first %s the same (same timestamps, interfaces, lengths and leading bytes): those packets written twice were skipped and counted once; the rest of section %d differs and was read", r.Section, r.FirstFrame, r.Of, plural.Of(r.Frames, "frame", "frames"), r.Section)
	}
	return b.String()
}

// sectionSeed seeds every frame key of the process, so that the keys a
// second reader of the same file computes (firstSectionKeys) match.
var sectionSeed = maphash.MakeSeed()

// sectionKeep bounds the frame keys sectionTrack holds (16 bytes each):
// a capture's frames past it are read, never taken for a repeat.
const sectionKeep = 1 << 23

// frameSig is a frame's key (its lengths, interface and leading bytes,
// hashed) and timestamp (ns).
type frameSig struct {
	key uint64
	at  int64
}

// sigChunk is how many frameSigs a sigLog chunk holds: the log grows
// by chunks, never copying what it holds.
const sigChunk = 1 << 13

// sigLog is one section's frameSigs in order; n counts its frames, kept
// or not.
type sigLog struct {
	chunks [][]frameSig
	n      int
	held   int
}

// add appends f.
func (l *sigLog) add(f frameSig) {
	if l.held%sigChunk == 0 {
		l.chunks = append(l.chunks, make([]frameSig, 0, sigChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, f)
	l.held++
	l.n++
}

// at returns frame i's frameSig (ok false: not held).
func (l *sigLog) at(i int) (frameSig, bool) {
	if i >= l.held {
		return frameSig{}, false
	}
	return l.chunks[i/sigChunk][i%sigChunk], true
}
