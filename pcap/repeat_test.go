package pcap

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// sectionOf returns one pcapng section (byte order be or little endian;
// if_tsresol res) holding the sample packets, each at its own time, the
// frame at index differ (if any) with another GRANT offset, or another
// time if not a GRANT.
func sectionOf(t *testing.T, be bool, res uint8, differ int) []byte {
	n := &ngBlocks{order: binary.LittleEndian}
	if be {
		n.order = binary.BigEndian
	}
	n.shb()
	n.idb(1, res, 0)
	for i, f := range sampleFields() {
		later := uint64(0)
		if g, ok := f.(*wire.GrantFields); ok && i == differ {
			g2 := *g
			g2.Offset++
			f = &g2
		} else if i == differ {
			later = 1000 // another time
		}
		fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, f, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		ts := uint64(1700000000)<<32 | uint64(i)*0x1234567 + later // 2^-32 s units
		if res != 0x80|32 {
			ts = 1700000000123456789 + uint64(i)*12345 + later // ns
		}
		n.epb(0, ts, fr, len(fr), nil)
	}
	return n.b
}

// readNumbered reads every frame of b and returns the reader's stats and
// the Homa frames' numbers.
func readNumbered(t *testing.T, b []byte) (Stats, []int) {
	t.Helper()
	var nums []int
	// A file: the first section is read again when a second appears.
	path := filepath.Join(t.TempDir(), "c.pcapng")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		nums = append(nums, f.Number)
	}
	return r.Stats(), nums
}

// TestSectionsUncompared: a stream that cannot be read again (standard
// input) has its sections read through, every frame kept, and says they
// were not compared.
func TestSectionsUncompared(t *testing.T) {
	st, err := readAll(t, bytes.Join([][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, -1)}, nil))
	if err != nil {
		t.Fatal(err)
	}
	n := len(sampleFields())
	if st.Sections != 2 || !st.SectionsUncompared || st.Homa != 2*n || len(st.Repeats) != 0 || !strings.Contains(st.SectionsNote(), "not compared") {
		t.Fatalf("sections %d uncompared %v Homa %d repeats %v note %q", st.Sections, st.SectionsUncompared, st.Homa, st.Repeats, st.SectionsNote())
	}
}

// TestRepeatedSections: a pcapng joined with itself (cat a.pcapng
// a.pcapng) holds two sections, the second the first's frames again: the
// reader reads them once (Other's OtherRepeatedSection counts the rest)
// and says so (Stats.Repeats, SectionsNote), whatever the sections' byte
// orders and timestamp resolutions (2^-32 s included, which pcapgo
// converts otherwise than the fast path). A section that repeats another
// only so far (the same frames but its last: two synthetic captures
// with the same timestamps and ids) is another capture, read whole, as
// is one of other frames. Before, every packet of a doubled file was read
// twice: homatest rpcs counted each RPC's packets twice and check took
// the second copy for a capture joined after a jump back in time.
func TestRepeatedSections(t *testing.T) {
	n := len(sampleFields())
	for _, tc := range []struct {
		name     string
		sections [][]byte
		homa     int
		repeats  []SectionRepeat
		note     string
	}{
		{"doubled, ns", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, -1)}, n,
			[]SectionRepeat{{Section: 2, Of: 1, FirstFrame: n + 1, Frames: n, Whole: true}}, "section 2 (from frame 10) repeats section 1 frame for frame (9 frames"},
		{"tripled, 2^-32 s", [][]byte{sectionOf(t, false, 0x80|32, -1), sectionOf(t, false, 0x80|32, -1), sectionOf(t, false, 0x80|32, -1)}, n,
			[]SectionRepeat{{Section: 2, Of: 1, FirstFrame: n + 1, Frames: n, Whole: true}, {Section: 3, Of: 1, FirstFrame: 2*n + 1, Frames: n, Whole: true}}, "section 3 (from frame 19) repeats section 1"},
		{"doubled, other byte order", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, true, 9, -1)}, n,
			[]SectionRepeat{{Section: 2, Of: 1, FirstFrame: n + 1, Frames: n, Whole: true}}, "every packet counted once"},
		{"repeats until the GRANT", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, 1)}, 2 * n,
			nil, "none repeats another: every frame is read"},
		{"repeats but for its last frame", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, n-1)}, 2 * n,
			nil, "none repeats another: every frame is read"},
		{"other frames", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 0x80|32, -1)}, 2 * n,
			nil, "none repeats another: every frame is read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, nums := readNumbered(t, bytes.Join(tc.sections, nil))
			if st.Homa != tc.homa || st.Frames != len(tc.sections)*n || st.Other[OtherRepeatedSection] != len(tc.sections)*n-tc.homa {
				t.Errorf("frames %d, Homa %d, repeated %d; want %d, %d, %d", st.Frames, st.Homa, st.Other[OtherRepeatedSection], len(tc.sections)*n, tc.homa, len(tc.sections)*n-tc.homa)
			}
			if len(nums) != tc.homa || nums[len(nums)-1] != len(tc.sections)*n && len(tc.repeats) != len(tc.sections)-1 {
				t.Errorf("frame numbers %v", nums)
			}
			if st.Sections != len(tc.sections) || len(st.SectionStarts) != len(tc.sections) || st.SectionStarts[1] != n+1 {
				t.Errorf("sections %d starting at %v, want %d from 1, %d, ...", st.Sections, st.SectionStarts, len(tc.sections), n+1)
			}
			if len(st.Repeats) != len(tc.repeats) {
				t.Fatalf("repeats %+v, want %+v", st.Repeats, tc.repeats)
			}
			for i := range tc.repeats {
				if st.Repeats[i] != tc.repeats[i] {
					t.Errorf("repeat %+v, want %+v", st.Repeats[i], tc.repeats[i])
				}
			}
			if note := st.SectionsNote(); !strings.Contains(note, tc.note) || !strings.Contains(st.Summary("x", nil), note) {
				t.Errorf("note %q, want it to say %q (and the summary to hold it)", note, tc.note)
			}
		})
	}
	// One section: nothing said, nothing skipped.
	st, _ := readNumbered(t, sectionOf(t, false, 9, -1))
	if st.Sections != 0 || st.SectionStarts != nil || st.Repeats != nil || st.SectionsNote() != "" {
		t.Errorf("one section: %d sections from %v, repeats %v, note %q", st.Sections, st.SectionStarts, st.Repeats, st.SectionsNote())
	}
}

// TestStdinSectionsCompared: standard input, which cannot be read again,
// keys its first section as it is read, so a doubled capture piped in is
// read once as a file is. Before, its sections went uncompared and check
// judged every packet twice (a doubled PASS capture failed 80 MUST rules).
func TestStdinSectionsCompared(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Join([][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, -1)}, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old; f.Close() }()
	// Open reads standard input once; OpenPath (check, rpcs, decode)
	// reads it through a spool.
	for name, open := range map[string]func(string, ReaderOptions) (*Reader, error){"Open": Open, "OpenPath": OpenPath} {
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		r, err := open("-", ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		st := r.Stats()
		r.Close()
		n := len(sampleFields())
		if st.Sections != 2 || st.SectionsUncompared || st.Homa != n || len(st.Repeats) != 1 || !st.Repeats[0].Whole {
			t.Errorf("%s: sections %d uncompared %v Homa %d (want %d) repeats %+v", name, st.Sections, st.SectionsUncompared, st.Homa, n, st.Repeats)
		}
	}
}

// sectionLen returns a pcapng section of the first k frames of the
// sample packets, repeated as needed at later times (sectionOf's).
func sectionLen(t *testing.T, k int) []byte {
	n := &ngBlocks{order: binary.LittleEndian}
	n.shb()
	n.idb(1, 9, 0)
	fields := sampleFields()
	for i := range k {
		fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, fields[i%len(fields)], wire.EncodeOptions{FixLengths: true, SetMarks: true})
		n.epb(0, 1700000000123456789+uint64(i)*12345, fr, len(fr), nil)
	}
	return n.b
}

// TestPrefixSectionRead: a section whose frames are an earlier
// section's and more, or only the first of them, is not a repeat: only
// a whole section of as many frames is. Before, a section was skipped
// from its first frame for as long as it matched an earlier one: cat of
// two synthetic captures of the same packets at the same times, one
// longer, lost the longer one's first frames (check failed 95 MUST
// rules), and a section longer than the earlier one was read only from
// where that one ended.
func TestPrefixSectionRead(t *testing.T) {
	n := len(sampleFields())
	for _, tc := range []struct {
		name   string
		a, b   int
		repeat bool
	}{
		{"longer", n, n + 3, false},
		{"shorter", n + 3, n, false},
		{"as long", n + 3, n + 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := readNumbered(t, bytes.Join([][]byte{sectionLen(t, tc.a), sectionLen(t, tc.b)}, nil))
			skipped := st.Other[OtherRepeatedSection]
			if tc.repeat {
				if skipped != tc.b || len(st.Repeats) != 1 || st.Repeats[0] != (SectionRepeat{Section: 2, Of: 1, FirstFrame: tc.a + 1, Frames: tc.b, Whole: true}) {
					t.Errorf("skipped %d, repeats %+v; want %d skipped, section 2 a whole repeat", skipped, st.Repeats, tc.b)
				}
				return
			}
			if skipped != 0 || len(st.Repeats) != 0 || st.Frames != tc.a+tc.b {
				t.Errorf("skipped %d of %d frames, repeats %+v; want every frame read, no repeat", skipped, st.Frames, st.Repeats)
			}
		})
	}
}
