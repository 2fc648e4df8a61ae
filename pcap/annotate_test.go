package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

type ngPacket struct {
	data  []byte
	ci    gopacket.CaptureInfo
	opts  pcapgo.NgPacketOptions
	iface pcapgo.NgInterface
}

func readNg(t *testing.T, b []byte) ([]ngPacket, pcapgo.NgSectionInfo) {
	t.Helper()
	ng, err := pcapgo.NewNgReader(bytes.NewReader(b), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []ngPacket
	for {
		data, ci, opts, err := ng.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			return out, ng.SectionInfo()
		}
		if err != nil {
			t.Fatal(err)
		}
		ifc, _ := ng.Interface(ci.InterfaceIndex)
		out = append(out, ngPacket{data, ci, opts, ifc})
	}
}

// TestAnnotatePcapng copies a two-interface pcapng with a direction, a
// snap-cut frame and a comment, adding notes: everything is kept and the
// notes follow the frame's own comment.
func TestAnnotatePcapng(t *testing.T) {
	var in bytes.Buffer
	w, err := NewWriter(&in, Interface{Name: "sw-h1", Description: "port 1"}, Interface{Name: "raw", LinkType: layers.LinkTypeRaw})
	if err != nil {
		t.Fatal(err)
	}
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.NeedAckFields{Common: wire.CommonFields{SenderID: 11}}, wire.EncodeOptions{})
	ts := time.Unix(1700000000, 987654321)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WritePacketDir(0, ts, fr, 0, DirInbound, ""))
	must(w.WritePacket(1, ts.Add(time.Nanosecond), fr[14:30], len(fr)-14, "dropped: fault plan rule 1"))
	must(w.WritePacket(0, ts.Add(2*time.Nanosecond), fr, 0, ""))
	must(w.Flush())
	var out bytes.Buffer
	n, err := Annotate(bytes.NewReader(in.Bytes()), &out, map[int][]string{2: {"HOMA-X-001 MUST: a"}, 3: {"b", "c"}}, "checked")
	if err != nil || n != 3 {
		t.Fatalf("Annotate: %d frames, %v", n, err)
	}
	orig, _ := readNg(t, in.Bytes())
	got, sec := readNg(t, out.Bytes())
	if len(got) != 3 || sec.Comment != "checked" {
		t.Fatalf("got %d frames, section comment %q", len(got), sec.Comment)
	}
	wantComments := [][]string{nil, {"dropped: fault plan rule 1", "HOMA-X-001 MUST: a"}, {"b", "c"}}
	for i := range got {
		g, o := got[i], orig[i]
		if !bytes.Equal(g.data, o.data) || !g.ci.Timestamp.Equal(o.ci.Timestamp) || g.ci.Length != o.ci.Length ||
			g.ci.CaptureLength != o.ci.CaptureLength || g.ci.InterfaceIndex != o.ci.InterfaceIndex ||
			g.iface.Name != o.iface.Name || g.iface.LinkType != o.iface.LinkType || g.iface.Description != o.iface.Description {
			t.Errorf("frame %d: got %+v %+v, want %+v %+v", i+1, g.ci, g.iface, o.ci, o.iface)
		}
		if strings.Join(g.opts.Comments, "|") != strings.Join(wantComments[i], "|") {
			t.Errorf("frame %d comments: got %q, want %q", i+1, g.opts.Comments, wantComments[i])
		}
	}
	if got[0].opts.Flags == nil || Direction(got[0].opts.Flags.Direction) != DirInbound {
		t.Errorf("frame 1 lost its direction: %+v", got[0].opts.Flags)
	}
	// A note past the end is an error.
	if _, err := Annotate(bytes.NewReader(in.Bytes()), io.Discard, map[int][]string{4: {"x"}}, ""); err == nil || !strings.Contains(err.Error(), "frame 4") {
		t.Errorf("note for frame 4 of 3: got %v", err)
	}
	if _, err := Annotate(strings.NewReader("not a capture"), io.Discard, nil, ""); !errors.Is(err, ErrFormat) {
		t.Errorf("text input: got %v, want ErrFormat", err)
	}
}

// TestAnnotateFilePcap turns a classic pcap into an annotated pcapng in
// place; a failed write leaves nothing.
func TestAnnotateFilePcap(t *testing.T) {
	src := filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a.pcapng")
	n, err := AnnotateFile(bytes.NewReader(b), path, map[int][]string{5: {"HOMA-Y-002 SHOULD: why"}}, "")
	if err != nil || n != 46 {
		t.Fatalf("AnnotateFile: %d frames, %v", n, err)
	}
	out, _ := os.ReadFile(path)
	got, _ := readNg(t, out)
	pr, _ := pcapgo.NewReader(bytes.NewReader(b))
	for i, g := range got {
		data, ci, err := pr.ReadPacketData()
		if err != nil || !bytes.Equal(data, g.data) || !ci.Timestamp.Equal(g.ci.Timestamp) || g.iface.LinkType != pr.LinkType() {
			t.Fatalf("frame %d differs from the pcap's", i+1)
		}
		if (len(g.opts.Comments) > 0) != (i+1 == 5) {
			t.Errorf("frame %d comments %q", i+1, g.opts.Comments)
		}
	}
	if _, err := AnnotateFile(bytes.NewReader(b), path, map[int][]string{99: {"x"}}, ""); err == nil {
		t.Error("a note past the end succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, out) {
		t.Error("a failed AnnotateFile changed the existing file")
	}
}

// FuzzAnnotate copies arbitrary bytes as a capture with a note on frame 1:
// it must never panic, and whatever it writes must read back as pcapng
// with as many frames as it says it copied.
func FuzzAnnotate(f *testing.F) {
	f.Add(samplePcapng(f))
	if b, err := os.ReadFile(filepath.Join("testdata", "real", "linux-6.13-proto146", "a-small-rpcs.pcap")); err == nil {
		f.Add(b[:1500])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		n, err := Annotate(bytes.NewReader(data), &out, map[int][]string{1: {"HOMA-X-001 MUST: fuzz"}}, "fuzz")
		if err != nil {
			return
		}
		got, _ := readNg(t, out.Bytes())
		if len(got) != n || n < 1 || got[0].opts.Comments[len(got[0].opts.Comments)-1] != "HOMA-X-001 MUST: fuzz" {
			t.Fatalf("Annotate copied %d frames, the output holds %d", n, len(got))
		}
	})
}

// TestAnnotateKeepsDropCauses: the copy declares the drops the original
// does with their cause: the harness's statistics block comment
// (UnreadableComment: how many of a port's isb_ifdrop were frames it could
// not read) survives (it was lost, and the copy of a homatest capture read
// as drops with no cause said), and another writer's drops without a
// comment stay a full buffer's (the copy is homatest's, whose drops
// without a comment have none said).
func TestAnnotateKeepsDropCauses(t *testing.T) {
	for _, tc := range []struct {
		app                 string
		dropped, unreadable uint64
	}{{"homatest", 7, 5}, {"old", 3, 0}, {"dumpcap", 3, 0}} {
		in := dropsCapture(t, tc.app, tc.dropped, tc.unreadable)
		var out bytes.Buffer
		if _, err := Annotate(bytes.NewReader(in), &out, map[int][]string{1: {"HOMA-X-001 MUST: a"}}, "checked"); err != nil {
			t.Fatal(err)
		}
		orig, err := readAll(t, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(t, out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if got.CaptureDrops != orig.CaptureDrops || got.UnreadableDrops != orig.UnreadableDrops || got.DropsCauseUnsaid != orig.DropsCauseUnsaid {
			t.Errorf("%s: copy's drops %d, unreadable %d, unsaid %v; original's %d, %d, %v", tc.app,
				got.CaptureDrops, got.UnreadableDrops, got.DropsCauseUnsaid, orig.CaptureDrops, orig.UnreadableDrops, orig.DropsCauseUnsaid)
		}
		if orig.UnreadableDrops != tc.unreadable {
			t.Errorf("%s: original's unreadable drops %d, want %d", tc.app, orig.UnreadableDrops, tc.unreadable)
		}
	}
}

// TestAnnotateKeepsSections: the copy of a pcapng of several sections
// keeps them, so that it reads as the input does: a doubled capture's
// second section is still found to repeat the first (read once), and
// the copy of two different sections holds both. Before, the copy was
// one section: a doubled capture's packets were all read twice (check
// of the copy failed 80 MUST rules where the input passed).
func TestAnnotateKeepsSections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sections [][]byte
	}{
		{"doubled", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, true, 9, -1)}},
		{"tripled, 2^-32 s", [][]byte{sectionOf(t, false, 0x80|32, -1), sectionOf(t, false, 0x80|32, -1), sectionOf(t, false, 0x80|32, -1)}},
		{"repeats until the GRANT", [][]byte{sectionOf(t, false, 9, -1), sectionOf(t, false, 9, 1)}},
		{"an empty section between", [][]byte{sectionOf(t, false, 9, -1), emptySection(), sectionOf(t, false, 9, -1)}},
		{"drops in each", [][]byte{dropsCapture(t, "homatest", 7, 5), dropsCapture(t, "dumpcap", 3, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := bytes.Join(tc.sections, nil)
			var out bytes.Buffer
			if _, err := Annotate(bytes.NewReader(in), &out, map[int][]string{2: {"HOMA-X-001 MUST: a"}}, "checked"); err != nil {
				t.Fatal(err)
			}
			orig, _ := readNumbered(t, in)
			got, _ := readNumbered(t, out.Bytes())
			if got.Frames != orig.Frames || got.Homa != orig.Homa || got.Sections != orig.Sections || got.Other[OtherRepeatedSection] != orig.Other[OtherRepeatedSection] ||
				!slices.Equal(got.Repeats, orig.Repeats) || !slices.Equal(got.SectionStarts, orig.SectionStarts) {
				t.Errorf("copy: frames %d Homa %d sections %d from %v repeats %+v; input: %d, %d, %d from %v, %+v",
					got.Frames, got.Homa, got.Sections, got.SectionStarts, got.Repeats, orig.Frames, orig.Homa, orig.Sections, orig.SectionStarts, orig.Repeats)
			}
			if got.CaptureDrops != orig.CaptureDrops || got.UnreadableDrops != orig.UnreadableDrops || got.DropsCauseUnsaid != orig.DropsCauseUnsaid {
				t.Errorf("copy's drops %d, unreadable %d, unsaid %v; input's %d, %d, %v",
					got.CaptureDrops, got.UnreadableDrops, got.DropsCauseUnsaid, orig.CaptureDrops, orig.UnreadableDrops, orig.DropsCauseUnsaid)
			}
			comments, err := SectionComments(bytes.NewReader(out.Bytes()))
			if err != nil || len(comments) != 1 || comments[0] != "checked" {
				t.Errorf("section comments %q (%v), want the first section's \"checked\" only", comments, err)
			}
		})
	}
}

// emptySection is a pcapng section of one interface and no frame.
func emptySection() []byte {
	n := &ngBlocks{order: binary.LittleEndian}
	n.shb()
	n.idb(1, 9, 0)
	return n.b
}
