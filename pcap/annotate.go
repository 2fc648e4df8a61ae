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
// Wireshark number frames; Wireshark shows them as frame.comment). The
// drops a pcapng's interface statistics declare (isb_ifdrop, the latest
// per interface) are kept in a statistics block per interface at the end,
// with the block's comment (UnreadableComment: how many of the drops were
// frames the capture could not read), so that the copy is judged as the
// original (Stats.CaptureDrops, UnreadableDrops, DropsCauseUnsaid).
// section, if not empty, becomes the section header's comment. It returns
// the number of frames copied. Errors: ErrFormat for input that is not a
// capture, a read error naming the frame, a note for a frame past the end,
// and write errors.
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
		src      source
		ng       *pcapgo.NgReader
		iface    func(i int) (pcapgo.NgInterface, bool)
		drops    = map[int]uint64{} // isb_ifdrop by interface
		comments = map[int]string{} // the opt_comment of its block
		// fromHomatest: the input's section is homatest's, whose
		// drops without a comment have no cause said (as the copy's).
		fromHomatest bool
		last         gopacket.CaptureInfo
	)
	switch binary.BigEndian.Uint32(magic) {
	case 0x0a0d0d0a:
		shb, _ := br.Peek(16)
		ng, err = pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true,
			StatisticsCallback: func(i int, st pcapgo.NgInterfaceStatistics) {
				if st.PacketsDropped != pcapgo.NgNoValue64 {
					drops[i], comments[i] = st.PacketsDropped, st.Comment
				}
			}})
		if err != nil {
			return 0, ngHeaderError(shb, err)
		}
		fromHomatest = ng.SectionInfo().Application == "homatest"
		src = ng
		iface = func(i int) (pcapgo.NgInterface, bool) {
			ifc, err := ng.Interface(i)
			return ifc, err == nil
		}
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("%w: bad pcap header: %v", ErrFormat, err)
		}
		src = pr
		iface = func(i int) (pcapgo.NgInterface, bool) {
			return pcapgo.NgInterface{LinkType: pr.LinkType(), SnapLength: pr.Snaplen()}, i == 0
		}
	default:
		return 0, fmt.Errorf("%w: magic number 0x%08x", ErrFormat, binary.BigEndian.Uint32(magic))
	}
	conv := func(i pcapgo.NgInterface) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: i.Name, Comment: i.Comment, Description: i.Description, Filter: i.Filter,
			OS: i.OS, LinkType: i.LinkType, SnapLength: i.SnapLength, TimestampResolution: 9}
	}
	var w *pcapgo.NgWriter
	declared := 0
	start := func(first pcapgo.NgInterface) error {
		var err error
		w, err = pcapgo.NewNgWriterInterface(out, conv(first), pcapgo.NgWriterOptions{
			SectionInfo: pcapgo.NgSectionInfo{Application: "homatest", Comment: section}})
		declared = 1
		return err
	}
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
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("read frame %d: %w", n+1, ngVersion(err))
		}
		n++
		for w == nil || declared <= ci.InterfaceIndex {
			ifc, ok := iface(declared)
			if !ok {
				return n, fmt.Errorf("frame %d: interface %d not declared", n, ci.InterfaceIndex)
			}
			if w == nil {
				if err := start(ifc); err != nil {
					return n, err
				}
				continue
			}
			if _, err := w.AddInterface(conv(ifc)); err != nil {
				return n, err
			}
			declared++
		}
		o := pcapgo.NgPacketOptions{Flags: opts.Flags, Comments: append(opts.Comments, notes[n]...)}
		if err := w.WritePacketWithOptions(ci, data, o); err != nil {
			return n, err
		}
		last = ci
	}
	if w == nil {
		ifc, ok := iface(0)
		if !ok {
			ifc = pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet}
		}
		if err := start(ifc); err != nil {
			return n, err
		}
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
	ifs := make([]int, 0, len(drops))
	for i := range drops {
		ifs = append(ifs, i)
	}
	sort.Ints(ifs)
	for _, i := range ifs {
		// An interface that declared drops but carried no frame is
		// declared now, so that its drops are kept too.
		for declared <= i {
			ifc, ok := iface(declared)
			if !ok {
				break
			}
			if _, err := w.AddInterface(conv(ifc)); err != nil {
				return n, err
			}
			declared++
		}
		if i >= declared {
			break
		}
		c := comments[i]
		if c == "" && drops[i] > 0 && !fromHomatest {
			// Another capture's drops are all its full buffer's: say so,
			// since the copy is homatest's (Reader.interfaceStats).
			c = fmt.Sprintf(UnreadableComment, 0)
		}
		if c != "" {
			if err := writeDropStats(w, out, i, last.Timestamp, drops[i], c); err != nil {
				return n, err
			}
			continue
		}
		st := pcapgo.NgInterfaceStatistics{LastUpdate: last.Timestamp, PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: drops[i]}
		if err := w.WriteInterfaceStats(i, st); err != nil {
			return n, err
		}
	}
	return n, w.Flush()
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
