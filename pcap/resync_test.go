package pcap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(bytes.Join([][]byte{a[:len(a)-10], a}, nil))
		f.Close()
	}()
	r, err := OpenPath(fifo, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		if _, err := r.Next(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
	}
	n := len(sampleFields())
	if st := r.Stats(); st.Homa != n || len(st.SectionCuts) != 1 || len(st.Repeats) != 1 {
		t.Errorf("Homa %d (want %d), cuts %+v, repeats %+v", st.Homa, n, st.SectionCuts, st.Repeats)
	}
}
