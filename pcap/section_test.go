package pcap

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// sectionHeader returns a pcapng section header block in byte order order
// with a comment option for each of comments (and a shb_userappl option
// between them, which SectionComments skips), then opt_endofopt.
func sectionHeader(order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}, comments ...string) []byte {
	var opts []byte
	opt := func(code uint16, v string) {
		opts = order.AppendUint16(opts, code)
		opts = order.AppendUint16(opts, uint16(len(v)))
		opts = append(opts, v...)
		for len(opts)%4 != 0 {
			opts = append(opts, 0)
		}
	}
	for i, c := range comments {
		opt(ngOptComment, c)
		if i == 0 {
			opt(4, "homatest") // shb_userappl
		}
	}
	opt(ngOptEnd, "")
	n := uint32(28 + len(opts))
	b := order.AppendUint32(nil, ngSectionHeader)
	b = order.AppendUint32(b, n)
	b = order.AppendUint32(b, ngByteOrderMagic)
	b = order.AppendUint16(b, 1)
	b = order.AppendUint16(b, 0)
	b = order.AppendUint64(b, ^uint64(0)) // section length unknown
	b = append(b, opts...)
	return order.AppendUint32(b, n)
}

// multiSection is a pcapng of three sections: one written by NewWriter
// (a comment, an interface and frames), one in big-endian byte order with
// two comments and one without any, then a cut block.
func multiSection(t testing.TB) ([]byte, []string) {
	var buf bytes.Buffer
	if _, err := Annotate(bytes.NewReader(samplePcapng(t)), &buf, nil, "first: written by homatest"); err != nil {
		t.Fatal(err)
	}
	b := append(buf.Bytes(), sectionHeader(binary.BigEndian, "second\x1b[2J", "third,\nof two lines")...)
	b = append(b, sectionHeader(binary.LittleEndian)...)
	return b, []string{"first: written by homatest", "second\x1b[2J", "third,\nof two lines"}
}

// TestSectionComments: every comment of every section header, in file
// order, whatever the byte order of its section, the blocks between them
// skipped; none for classic pcap or what is not a capture; and a file cut
// anywhere gives the comments of the section headers it holds whole
// (pcapgo's SectionInfo gave one: a section's last).
func TestSectionComments(t *testing.T) {
	b, want := multiSection(t)
	got, err := SectionComments(bytes.NewReader(b))
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("SectionComments = %q, %v; want %q", got, err, want)
	}
	path := filepath.Join(t.TempDir(), "multi.pcapng")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := SectionCommentsPath(context.Background(), path); err != nil || !slices.Equal(got, want) {
		t.Errorf("SectionCommentsPath = %q, %v; want %q", got, err, want)
	}
	if _, err := SectionCommentsPath(context.Background(), filepath.Join(t.TempDir(), "missing.pcapng")); err == nil {
		t.Errorf("SectionCommentsPath of a missing file: no error")
	}
	classic, err := os.ReadFile(filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"pcap": classic, "text": []byte("not a capture at all"), "empty": nil} {
		if got, err := SectionComments(bytes.NewReader(in)); got != nil || err != nil {
			t.Errorf("%s: SectionComments = %q, %v; want none", name, got, err)
		}
	}
	// Cut anywhere: the comments of the whole section headers before the cut.
	first := int(binary.LittleEndian.Uint32(b[4:8]))              // Annotate's header
	secondEnd := len(b) - len(sectionHeader(binary.LittleEndian)) // the big-endian header's end
	for n := 0; n <= len(b); n++ {
		got, err := SectionComments(bytes.NewReader(b[:n]))
		var w []string
		switch {
		case n >= secondEnd:
			w = want
		case n >= first:
			w = want[:1]
		}
		if err != nil || !slices.Equal(got, w) {
			t.Fatalf("cut at %d of %d: SectionComments = %q, %v; want %q", n, len(b), got, err, w)
		}
	}
}

// FuzzSectionComments: SectionComments never panics, loops or fails on
// bytes in memory, and never returns more comments than the input could
// hold (each takes at least 4 bytes of option header).
func FuzzSectionComments(f *testing.F) {
	b, _ := multiSection(f)
	f.Add(b)
	f.Add(sectionHeader(binary.BigEndian, "a", "b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := SectionComments(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("error from bytes in memory: %v", err)
		}
		if len(got)*4 > len(data) {
			t.Fatalf("%d comments from %d bytes", len(got), len(data))
		}
	})
}

// TestPcapngVersion: a pcapng section of another version than 1.0 (2.0
// here) is not skipped without a word, as pcapgo would: a capture that
// starts with one is refused, naming the version, and one that follows
// a readable section ends the read there with ErrPcapngVersion, after
// the frames before it, which StreamPath reports as damage.
func TestPcapngVersion(t *testing.T) {
	f := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.BusyFields{}, wire.EncodeOptions{SetMarks: true})
	v1 := writeFrames(t, f)
	v2 := bytes.Clone(v1)
	v2[12] = 2 // major version (little-endian section)
	_, err := NewReader(bytes.NewReader(v2), ReaderOptions{})
	if !errors.Is(err, ErrPcapngVersion) || errors.Is(err, ErrFormat) || err.Error() != "pcapng section of version 2.0: homatest reads pcapng sections of version 1.0 only (a 1.x file tshark reads can be rewritten as 1.0: editcap -F pcapng IN OUT)" {
		t.Errorf("version 2.0 alone: %v, want ErrPcapngVersion naming version 2.0", err)
	}
	joined := append(append(bytes.Clone(v1), v2...), v1...)
	st, err := readAll(t, joined)
	if !errors.Is(err, ErrPcapngVersion) || st.Frames != 1 || st.Homa != 1 {
		t.Errorf("1.0, 2.0, 1.0: frames %d homa %d err %v; want 1 1 and ErrPcapngVersion", st.Frames, st.Homa, err)
	}
	path := filepath.Join(t.TempDir(), "v2.pcapng")
	if err := os.WriteFile(path, joined, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = StreamPath(path, ReaderOptions{}, func(*spec.Event) {})
	var d *DamagedError
	if !errors.As(err, &d) || d.Frames != 1 || !strings.HasSuffix(err.Error(), ": read up to frame 1, where a pcapng section of another version than 1.0 starts: homatest reads pcapng sections of version 1.0 only (a 1.x file tshark reads can be rewritten as 1.0: editcap -F pcapng IN OUT)") || strings.Contains(err.Error(), damagedFix) {
		t.Errorf("StreamPath: %v", err)
	}
	if _, err := Annotate(bytes.NewReader(joined), io.Discard, nil, ""); !errors.Is(err, ErrPcapngVersion) {
		t.Errorf("Annotate: %v, want ErrPcapngVersion", err)
	}
}
