package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSectionCutThenWhole: cat of a capture cut short in mid-block and
// another reads on from the second's section header (Stats.SectionCuts):
// the whole capture after its own cut copy is read once (the cut copy's
// frames are the whole one's first: skipped), and another capture after
// a cut one is read whole. Before, the read stopped at the cut block,
// reported "cut short" though a whole capture followed, and nothing of
// the second capture was judged.
func TestSectionCutThenWhole(t *testing.T) {
	n := len(sampleFields())
	a := sectionOf(t, false, 9, -1)
	for _, tc := range []struct {
		name     string
		in       []byte
		homa     int
		repeats  []SectionRepeat
		wantNote string
	}{
		{"cut, then whole", bytes.Join([][]byte{a[:len(a)-10], a}, nil), n,
			[]SectionRepeat{{Section: 2, Of: 1, FirstFrame: n + 1, Frames: n}}, "section 2 (from frame 10) starts with the frames of section 1, which was cut short"},
		{"cut, then another", bytes.Join([][]byte{a[:len(a)-10], sectionOf(t, true, 0x80|32, -1)}, nil), 2 * n,
			nil, "the frames of the section after it are read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, nums := readNumbered(t, tc.in)
			if len(st.SectionCuts) != 1 || st.SectionCuts[0].Section != 1 || st.Sections != 2 {
				t.Fatalf("cuts %+v, sections %d; want section 1 cut, 2 sections", st.SectionCuts, st.Sections)
			}
			if st.Homa != tc.homa || len(nums) != tc.homa || st.Frames != 2*n {
				t.Errorf("Homa %d (frames %v), want %d; frames %d, want %d", st.Homa, nums, tc.homa, st.Frames, 2*n)
			}
			if c := st.SectionCuts[0]; c.AfterFrame != n || c.Whole != n-1 {
				t.Errorf("cut %+v: want after frame %d (the cut block read as a frame), %d whole", c, n, n-1)
			}
			if len(st.Repeats) != len(tc.repeats) || len(tc.repeats) > 0 && st.Repeats[0] != tc.repeats[0] {
				t.Errorf("repeats %+v, want %+v", st.Repeats, tc.repeats)
			}
			if note := st.SectionsNote(); !strings.Contains(note, tc.wantNote) || !strings.Contains(note, "section 1 is cut short after frame ") {
				t.Errorf("note %q, want %q", note, tc.wantNote)
			}
		})
	}
	// A reader that cannot read its input again stops at the cut, as
	// before.
	_, err := readAll(t, bytes.Join([][]byte{a[:len(a)-10], a}, nil))
	if err == nil || errors.Is(err, io.EOF) {
		t.Errorf("a stream's read past a cut: %v, want the damage", err)
	}
}

// TestSectionCutThenWholeStream: a stream (a named pipe, as standard
// input) reads on past the cut as a file does, from its spool, and finds
// the whole capture after its cut copy. Before this test's fix its
// section comparison could not read past the cut (every frame read).
func TestSectionCutThenWholeStream(t *testing.T) {
	a := sectionOf(t, false, 9, -1)
	st := readPipeStats(t, bytes.Join([][]byte{a[:len(a)-10], a}, nil))
	n := len(sampleFields())
	if st.Homa != n || len(st.SectionCuts) != 1 || len(st.Repeats) != 1 {
		t.Errorf("Homa %d (want %d), cuts %+v, repeats %+v", st.Homa, n, st.SectionCuts, st.Repeats)
	}
}

// ngBlockEnds returns the offsets at which each block of a little-endian
// pcapng ends.
func ngBlockEnds(b []byte) []int {
	var ends []int
	for off := 0; off+8 <= len(b); {
		off += int(binary.LittleEndian.Uint32(b[off+4:]))
		ends = append(ends, off)
	}
	return ends
}

// TestSectionsCutTwiceThenWhole: copies of a capture cut short at
// different frames and the whole capture, joined (cat): every frame is
// read once, from a file and from a stream. Before, a section was matched
// only against the first cut copy it started with, so the whole capture
// after two cut copies (cut1 cut2 whole, cut2 the longer) read the frames
// cut2 added twice (the lab incast cut at 300000 and 700000 bytes and
// whole: 2013 Homa frames, 155 RPCs, where the capture alone holds 1639
// and 120), and a shorter cut copy after a longer one (cut2 cut1 whole,
// or whole cut1 ...) was read whole.
func TestSectionsCutTwiceThenWhole(t *testing.T) {
	n := len(sampleFields())
	a := sectionOf(t, false, 9, -1)
	ends := ngBlockEnds(a)
	cut := func(k int) []byte { return a[:ends[1+k]+10] } // k frames whole, the next cut
	for _, tc := range []struct {
		name    string
		in      [][]byte
		cuts    int
		repeats []SectionRepeat // each's FirstFrame from the section starts
		note    string
	}{
		{"shorter, longer, whole", [][]byte{cut(3), cut(6), a}, 2,
			[]SectionRepeat{{Section: 2, Of: 1, Frames: 3}, {Section: 3, Of: 2, Frames: 6}}, "section 3 (from frame 10) starts with the frames of section 2"},
		{"longer, shorter, whole", [][]byte{cut(6), cut(3), a}, 2,
			[]SectionRepeat{{Section: 2, Of: 1, Frames: 3, Cut: true}, {Section: 3, Of: 1, Frames: 6}}, "section 2 (from frame 7), cut short, holds only the first frames of section 1"},
		{"whole, shorter, whole", [][]byte{a, cut(3), a}, 1,
			[]SectionRepeat{{Section: 2, Of: 1, Frames: 3, Cut: true}, {Section: 3, Of: 1, Frames: n, Whole: true}}, "so its 3 frames were skipped"},
	} {
		in := bytes.Join(tc.in, nil)
		check := func(t *testing.T, st Stats) {
			if st.Homa != n || st.Sections != 3 || len(st.SectionCuts) != tc.cuts {
				t.Errorf("Homa %d (want %d), sections %d (want 3), cuts %+v (want %d)", st.Homa, n, st.Sections, st.SectionCuts, tc.cuts)
			}
			if len(st.SectionStarts) == 3 {
				for i := range tc.repeats {
					tc.repeats[i].FirstFrame = st.SectionStarts[tc.repeats[i].Section-1]
				}
			}
			if !slices.Equal(st.Repeats, tc.repeats) {
				t.Errorf("repeats %+v (starts %v), want %+v", st.Repeats, st.SectionStarts, tc.repeats)
			}
			if note := st.SectionsNote(); !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want %q", note, tc.note)
			}
		}
		t.Run(tc.name+", file", func(t *testing.T) {
			st, nums := readNumbered(t, in)
			check(t, st)
			if len(nums) != n {
				t.Errorf("frames read %v, want %d", nums, n)
			}
		})
		t.Run(tc.name+", stream", func(t *testing.T) { check(t, readPipeStats(t, in)) })
	}
}

// readPipeStats reads b through a named pipe (a stream, as standard
// input, read through OpenPath's spool) to its end and returns the
// reader's Stats.
func readPipeStats(t *testing.T, b []byte) Stats {
	t.Helper()
	r, err := OpenPath(namedPipe(t, func(f *os.File) { f.Write(b) }), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			return r.Stats()
		}
	}
}
