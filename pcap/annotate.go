package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"io"
	"sort"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/internal/atomicfile"
)

// Annotate copies the capture read from in (pcap or pcapng) to out as
// pcapng, frame by frame — interfaces, link types, timestamps, original
// lengths, directions and the comments a frame already has are kept — and
// adds notes[n] as packet comments of frame n (1-based, as Reader and
// Wireshark number frames; Wireshark shows them as frame.comment). A
// pcapng's sections are kept, each with its own interfaces: written as
// one section, a doubled capture's second copy read as frames of the
// first (the Reader skips a section that repeats another, not frames
// that repeat within one), and check of the copy of a doubled capture
// failed 80 MUST rules where the input passed. The drops a pcapng's
// interface statistics declare (isb_ifdrop, the latest per interface of
// a section) are kept in a statistics block per interface at the end of
// its section, with the block's comment (UnreadableComment: how many of
// the drops were frames the capture could not read), so that the copy is
// judged as the original (Stats.CaptureDrops, UnreadableDrops,
// DropsCauseUnsaid). section, if not empty, becomes the first section
// header's comment (a later section keeps its own). It returns the
// number of frames copied. Errors: ErrFormat for input that is not a
// capture, a read error naming the frame, a note for a frame past the
// end, and write errors.
func Annotate(in io.Reader, out io.Writer, notes map[int][]string, section string) (int, error) {
	br := bufio.NewReaderSize(in, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		return 0, fmt.Errorf("%w: empty or shorter than 4 bytes", ErrFormat)
	}
	type source interface {
		ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	}
	var (
		src source
		ng  *pcapgo.NgReader
		cur = newAnnotSection(section)
		// ended holds the sections that ended (a section header
		// followed) since the last frame, each with its interfaces.
		ended []*annotSection
	)
	switch binary.BigEndian.Uint32(magic) {
	case 0x0a0d0d0a:
		shb, _ := br.Peek(16)
		ng, err = pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true,
			StatisticsCallback: func(i int, st pcapgo.NgInterfaceStatistics) {
				if st.PacketsDropped != pcapgo.NgNoValue64 {
					cur.drops[i], cur.comments[i] = st.PacketsDropped, st.Comment
				}
			},
			SectionEndCallback: func(ifaces []pcapgo.NgInterface, info pcapgo.NgSectionInfo) {
				cur.ifaces, cur.info = ifaces, info
				ended = append(ended, cur)
				cur = newAnnotSection("")
			}})
		if err != nil {
			return 0, ngHeaderError(shb, err)
		}
		src = ng
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("%w: bad pcap header: %v", ErrFormat, err)
		}
		src = pr
		cur.ifaces = []pcapgo.NgInterface{{LinkType: pr.LinkType(), SnapLength: pr.Snaplen()}}
	default:
		return 0, fmt.Errorf("%w: magic number 0x%08x", ErrFormat, binary.BigEndian.Uint32(magic))
	}
	// begun notes the section cur now is, from the section header
	// pcapgo read last, and that its interfaces are pcapgo's to say (an
	// interface may be declared after the section's first frames).
	begun := func() {
		if ng != nil {
			cur.info, cur.ng = ng.SectionInfo(), ng
		}
	}
	// flushEnded writes out the sections that ended before the frame
	// or the end just read.
	flushEnded := func() error {
		for _, s := range ended {
			if err := s.finish(out); err != nil {
				return err
			}
		}
		ended = ended[:0]
		return nil
	}
	begun()
	cur.first = true
	n := 0
	for {
		var (
			data []byte
			ci   gopacket.CaptureInfo
			opts pcapgo.NgPacketOptions
			err  error
		)
		if ng != nil {
			data, ci, opts, err = ng.ReadPacketDataWithOptions()
		} else {
			data, ci, err = src.ReadPacketData()
		}
		if len(ended) > 0 {
			if err := flushEnded(); err != nil {
				return n, err
			}
			begun()
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("read frame %d: %w", n+1, ngVersion(err))
		}
		n++
		if err := cur.declare(out, ci.InterfaceIndex, n); err != nil {
			return n, err
		}
		o := pcapgo.NgPacketOptions{Flags: opts.Flags, Comments: append(opts.Comments, notes[n]...)}
		if err := cur.w.WritePacketWithOptions(ci, data, o); err != nil {
			return n, err
		}
		cur.last = ci
	}
	var past []int
	for f := range notes {
		if f < 1 || f > n {
			past = append(past, f)
		}
	}
	if len(past) > 0 {
		sort.Ints(past)
		return n, fmt.Errorf("notes for frame %d, but the capture has %s", past[0], plural.Of(n, "frame", "frames"))
	}
	begun()
	return n, cur.finish(out)
}

// annotSection is one section of Annotate's copy. Its interfaces in the
// input are ng's while it is pcapgo's current section, else ifaces; info
// is its section header; first is set for the input's first section,
// whose copy's header comment is comment (a later one keeps its own).
// w writes its copy (nil until its first frame, or its end), declared
// counts the interfaces the copy declared; drops and comments hold the
// isb_ifdrop and statistics comment each interface declared, and last is
// its latest frame's CaptureInfo.
type annotSection struct {
	ng       *pcapgo.NgReader
	ifaces   []pcapgo.NgInterface
	info     pcapgo.NgSectionInfo
	first    bool
	comment  string
	w        *pcapgo.NgWriter
	declared int
	drops    map[int]uint64
	comments map[int]string
	last     gopacket.CaptureInfo
}

// newAnnotSection returns a section whose copy's header comment (if the
// first) is comment.
func newAnnotSection(comment string) *annotSection {
	return &annotSection{drops: map[int]uint64{}, comments: map[int]string{}, comment: comment}
}

// iface returns the section's interface i (ok false: not declared).
func (s *annotSection) iface(i int) (pcapgo.NgInterface, bool) {
	if s.ng != nil && s.ifaces == nil {
		ifc, err := s.ng.Interface(i)
		return ifc, err == nil
	}
	if i < len(s.ifaces) {
		return s.ifaces[i], true
	}
	return pcapgo.NgInterface{}, false
}

// annotIface is an interface of the copy, as in converts it: timestamps
// in nanoseconds, as the writer writes them.
func annotIface(i pcapgo.NgInterface) pcapgo.NgInterface {
	return pcapgo.NgInterface{Name: i.Name, Comment: i.Comment, Description: i.Description, Filter: i.Filter,
		OS: i.OS, LinkType: i.LinkType, SnapLength: i.SnapLength, TimestampResolution: 9}
}

// declare starts the section's copy on out if it has not started and
// declares its interfaces up to index i; frame (a frame number, 0 for
// none) names the frame that needs it in an error.
func (s *annotSection) declare(out io.Writer, i, frame int) error {
	for s.w == nil || s.declared <= i {
		in, ok := s.iface(s.declared)
		if !ok {
			if frame == 0 {
				return nil
			}
			return fmt.Errorf("frame %d: interface %d not declared", frame, i)
		}
		ifc := annotIface(in)
		var err error
		if s.w == nil {
			c := s.comment
			if !s.first {
				c = s.info.Comment
			}
			s.w, err = pcapgo.NewNgWriterInterface(out, ifc, pcapgo.NgWriterOptions{
				SectionInfo: pcapgo.NgSectionInfo{Application: "homatest", Comment: c}})
		} else {
			_, err = s.w.AddInterface(ifc)
		}
		if err != nil {
			return err
		}
		s.declared++
	}
	return nil
}

// finish writes the end of the section's copy to out: its header if no
// frame started it, then a statistics block per interface that declared
// drops (an interface that carried no frame is declared now, so that its
// drops are kept too).
func (s *annotSection) finish(out io.Writer) error {
	if s.w == nil {
		if _, ok := s.iface(0); !ok {
			s.ng, s.ifaces = nil, []pcapgo.NgInterface{{LinkType: layers.LinkTypeEthernet}}
		}
		if err := s.declare(out, 0, 0); err != nil {
			return err
		}
	}
	ifs := make([]int, 0, len(s.drops))
	for i := range s.drops {
		ifs = append(ifs, i)
	}
	sort.Ints(ifs)
	for _, i := range ifs {
		if err := s.declare(out, i, 0); err != nil {
			return err
		}
		if i >= s.declared {
			break
		}
		c := s.comments[i]
		if c == "" && s.drops[i] > 0 && s.info.Application != "homatest" {
			// Another capture's drops are all its full buffer's: say so,
			// since the copy is homatest's (Reader.interfaceStats).
			c = fmt.Sprintf(UnreadableComment, 0)
		}
		if c != "" {
			if err := writeDropStats(s.w, out, i, s.last.Timestamp, s.drops[i], c); err != nil {
				return err
			}
			continue
		}
		st := pcapgo.NgInterfaceStatistics{LastUpdate: s.last.Timestamp, PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: s.drops[i]}
		if err := s.w.WriteInterfaceStats(i, st); err != nil {
			return err
		}
	}
	return s.w.Flush()
}

// AnnotateFile is Annotate into the file out, which appears only whole
// (internal/atomicfile, so out may be the file in reads). It returns the
// frames copied.
func AnnotateFile(in io.Reader, out string, notes map[int][]string, section string) (int, error) {
	n := 0
	err := atomicfile.Write(out, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		var err error
		if n, err = Annotate(in, bw, notes, section); err != nil {
			return err
		}
		return bw.Flush()
	})
	return n, err
}
