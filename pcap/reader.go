package pcap

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// ReaderOptions control how a Reader decodes Homa.
type ReaderOptions struct {
	// Version of the Homa wire format; VersionAuto picks per packet (IP
	// protocol 253 is 2024, see wire.DetectVersion).
	Version wire.Version
	// IPv6PriorityShift is the shift used to read the priority from the
	// IPv6 traffic class (4 or 5) of every host. 0 means auto, host by
	// host: HomaModule main writes priority<<5 since 548056f and
	// priority<<4 before (linux_6.13.9 among them), and one capture may
	// hold both builds (homatest's tester against an older module, a
	// rolling upgrade). A host's shift is that of its latest IPv6 Homa
	// packet whose traffic class only one shift writes (IPv6ShiftOf: bit 4
	// set is 4, bit 7 set is 5; control packets, always at level 7, are
	// 0x70 or 0xE0), so a host that changes builds mid-capture is
	// followed; before its first such packet, IPv6HostShifts' entry, else
	// IPv6UnknownShift. A packet of a host whose shift is still unknown and
	// whose class fits both has Frame.PrioEither set (priority p under
	// shift 5 is 2p under shift 4) and Priority read with
	// wire.IPv6PriorityShift of its version. DetectIPv6Shifts finds the
	// hosts' first shifts in advance.
	IPv6PriorityShift uint8
	// IPv6HostShifts gives the shift (4 or 5) of IPv6 source hosts known
	// in advance (DetectIPv6Shifts); others are found as they come.
	IPv6HostShifts IPv6Shifts
	// IPv6UnknownShift, when not 0, is the shift (4 or 5) of a host whose
	// own is not known yet (the profile's ipv6_prio_shift, which names the
	// hosts' build): its packets then have no Frame.PrioEither.
	IPv6UnknownShift uint8
	// MaxSegData is max_seg_data in bytes, used to split GSO DATA frames
	// into segments; 0 means 1424 for IPv4 and 1404 for IPv6 (MTU 1500).
	MaxSegData int
	// Reorder, when positive, makes EachEvent (and StreamPath) pass events
	// in timestamp order, not file order, provided no frame lies more than
	// Reorder before a frame ahead of it in the file (Stats.BackwardsMax
	// of a first read says; at most MaxReorder is sensible): a buffer holds
	// Reorder of capture time. Events keep their frame numbers. Frames
	// further out of order are passed as they come. Next is unaffected.
	Reorder time.Duration
	// Direction, when set, keeps only the pcapng frames marked with that
	// direction in epb_flags (frames without the flag are kept): a
	// capture of switch ports in both directions holds every packet twice,
	// and DirInbound reads each as its host sent it. Skipped frames count
	// as "other direction" in Stats.Other.
	Direction Direction
	// SentBy, with Direction DirInbound, keeps the outbound frames whose
	// source is not among SentBy: the hosts whose own ports the capture
	// holds, whose packets are read as they left them. A packet of a host
	// without a port in the capture (a tester in explore's one-port
	// capture of the IUT's link) shows only as delivered: read so, once.
	SentBy []netip.Addr
	// SkipSameInstant skips the Homa frames that repeat an earlier one
	// byte for byte at the same instant (Stats.SameInstant counts them
	// all the same; Stats.Other's OtherSameInstant too): the capture read
	// as if editcap -d had removed them, to tell which findings they
	// explain (homatest check).
	SkipSameInstant bool
	// ICMP makes Next also return ICMP and ICMPv6 destination-unreachable
	// messages that quote a Homa packet (Frame.ICMP set, no Packet); they
	// still count as "icmp"/"icmpv6" in Stats.Other, not as Homa.
	ICMP bool
	// Context, when set, ends the read once it has ended: Next returns
	// its error (wrapped) within ctxFrames frames, and a read of a
	// stream waiting for more (OpenPath) returns at once; nil never ends.
	Context context.Context
	// Progress, when set, gets 1 added for every frame read (as
	// Stats.Frames counts it): a count a progress display reads from
	// another goroutine while the capture is read (homatest check).
	Progress *atomic.Int64
}

// ErrFormat is wrapped by Open and NewReader for input that is not a
// pcap or pcapng file.
var ErrFormat = errors.New("not a pcap or pcapng file")

type packetSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// Reader reads a pcap or pcapng capture and returns its Homa packets one by
// one. Non-Homa frames are counted in Stats and skipped. A Reader is not safe
// for concurrent use.
type Reader struct {
	o      ReaderOptions
	closer io.Closer
	src    packetSource
	ng     *pcapgo.NgReader
	// fast reads a pcapng's plain packet blocks before pcapgo does
	// (ngFast); nil for classic pcap. opts holds the options of the
	// block pcapgo read last (read).
	fast *ngFast
	opts pcapgo.NgPacketOptions
	// br is the classic pcap's input, which Next reads a record from
	// itself when pcapgo refuses it (readLongRecord); long holds its
	// bytes.
	br       *bufio.Reader
	long     []byte
	linkType layers.LinkType
	parsers  map[layers.LinkType]*linkParser
	// lastParser is parsers[lastLT], the link type of the previous frame
	// (a capture rarely mixes link types; this spares a map lookup per
	// frame).
	lastParser *linkParser
	lastLT     layers.LinkType
	frame      Frame
	stats      Stats
	n          int
	// limit, when positive, ends the read (io.EOF) after that many
	// frames of any kind: the detection passes read a capture's first
	// DetectFrames frames, Homa or not (Next skips the others itself).
	limit int
	segs  []wire.Segment
	// shift6 holds each IPv6 source host's priority shift once known
	// (IPv6HostShifts, then the first unambiguous traffic class); last6
	// and lastShift6 cache the latest host's entry.
	shift6     IPv6Shifts
	last6      netip.Addr
	lastShift6 uint8
	// hold, when set, copies each frame's bytes before they are decoded
	// and returns the copy, so that the frame outlives the next read
	// (eachEventPiped).
	hold func([]byte) []byte
	// drops holds the isb_ifdrop of the current section's interfaces
	// (the latest statistics block of each), pastDrops the sums of the
	// sections before it, by interface index (see Stats.CaptureDrops).
	drops, pastDrops map[int]uint64
	// unread and pastUnread are the same for the frames of those drops
	// the capture could not read (UnreadableComment); unsaid is set once
	// a file homatest wrote declares drops without that count.
	unread, pastUnread map[int]uint64
	unsaid             bool
	// latest is the latest timestamp of a Homa frame so far (noteTime).
	latest time.Time
	// first is the first Homa frame's timestamp and timed whether one
	// was seen (noteTime; Stats.TimeVaries).
	first time.Time
	timed bool
	// copies finds the packets a capture holds twice, seen at two of its
	// capture points (copyTracker); marked is set while the frame being
	// decoded carries a pcapng direction flag or comment, whose copies at
	// other points it leaves alone; markDir and markNote are that flag
	// and whether it has a comment (markedPoint).
	copies copyTracker
	marked bool
	// otherDir is set while the frame being decoded is in the direction
	// ReaderOptions.Direction skips unless its source is not in SentBy.
	otherDir bool
	markDir  pcapgo.NgEpbFlag
	markNote bool
	// tsIfaces caches the timestamp resolution of each pcapng interface
	// of the current section, prevTS is the previous frame's time
	// (tsresol.go).
	tsIfaces []tsIface
	prevTS   time.Time
	// sec follows a pcapng's sections and skips those that repeat an
	// earlier one (sectionTrack).
	sec sectionTrack
	// raw opens the input's bytes again from its start (nil: it cannot
	// be): resync reads on past a section cut short.
	raw func() (io.ReadCloser, error)
	// resumed is the offset of the section header resync read on from
	// last, resumedAt the frames read before it (a later cut is looked
	// for from there).
	resumed   int64
	resumedAt int
}

// Open opens a capture file. Errors name the file and say what is wrong:
// it cannot be opened, or it is not pcap/pcapng (ErrFormat).
// The path "-" reads standard input.
func Open(path string, o ReaderOptions) (*Reader, error) {
	if path == "-" {
		// Standard input cannot be read again: its spool can (OpenPath),
		// so that a section is compared with an earlier one as in a file
		// (uncompared, zcat x.pcapng.gz | check - judged a doubled
		// capture's packets twice: 80 MUST rules failed).
		return OpenPath(path, o)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, o)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	r.sec.open = func() (*Reader, error) { return Open(path, ReaderOptions{}) }
	r.raw = func() (io.ReadCloser, error) { return os.Open(path) }
	return r, nil
}

// readBuffer is the size of a Reader's input buffer. At 64 KiB a large
// capture took a read system call every 400 or so frames, and each one
// long enough that the Go runtime's monitor took the reading goroutine's
// P away (it polls every 20 µs while it does so): on a 1M-packet capture
// the monitor's own sleeps and wakeups were 8% of the check's CPU (perf,
// GOMAXPROCS=1). A 1 MiB buffer reads 16 times less often.
const readBuffer = 1 << 20

// NewReader reads a pcap (µs or ns, either byte order) or pcapng stream
// from r, detected by its magic number.
func NewReader(r io.Reader, o ReaderOptions) (*Reader, error) {
	br := bufio.NewReaderSize(r, readBuffer)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: empty or shorter than 4 bytes", ErrFormat)
		}
		return nil, err
	}
	rd := &Reader{o: o, parsers: map[layers.LinkType]*linkParser{}}
	switch m := binary.BigEndian.Uint32(magic); {
	case !knownMagic([4]byte(magic)):
		return nil, fmt.Errorf("%w: magic number 0x%08x", ErrFormat, m)
	case m == 0x0a0d0d0a:
		shb, _ := br.Peek(16)
		big := len(shb) >= 12 && binary.BigEndian.Uint32(shb[8:12]) == ngByteOrderMagic // before pcapgo reads on
		ng, err := pcapgo.NewNgReader(br, pcapgo.NgReaderOptions{WantMixedLinkType: true,
			StatisticsCallback: rd.interfaceStats, SectionEndCallback: rd.sectionEnd})
		if err != nil {
			return nil, ngHeaderError(shb, err)
		}
		rd.src, rd.ng = ng, ng
		rd.fast = &ngFast{br: br, bigEndian: big}
		rd.fast.sync(ng, nil)
	default:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: bad pcap header: %v", ErrFormat, err)
		}
		rd.src, rd.linkType, rd.br = pr, pr.LinkType(), br
	}
	return rd, nil
}

// ErrPcapngVersion is wrapped by NewReader, Next (and so StreamPath's
// *DamagedError) and Annotate for a pcapng section header of another
// version than 1.0 (pcapng 2.0, which tshark refuses too, or a 1.x that
// tshark reads and gopacket's pcapgo does not): such a section may lay
// its blocks out otherwise, so homatest does not read it (pcapgo would
// skip the section, and its frames, without a word).
var ErrPcapngVersion = errors.New("homatest reads pcapng sections of version 1.0 only (a 1.x file tshark reads can be rewritten as 1.0: editcap -F pcapng IN OUT)")

// errNgVersionStarts is Next's error where a section of another version
// than 1.0 starts (pcapgo does not say which version).
var errNgVersionStarts = fmt.Errorf("a pcapng section of another version than 1.0 starts: %w", ErrPcapngVersion)

// ngVersion returns errNgVersionStarts for pcapgo's error for a section
// header of another version, else err.
func ngVersion(err error) error {
	if errors.Is(err, pcapgo.ErrNgVersionMismatch) {
		return errNgVersionStarts
	}
	return err
}

// ngHeaderError is the error of a pcapng whose first section header
// pcapgo refused with err; shb is the file's first 16 bytes (fewer if
// it is shorter), which name the version of a section of another
// version than 1.0.
func ngHeaderError(shb []byte, err error) error {
	if !errors.Is(err, pcapgo.ErrNgVersionMismatch) {
		return fmt.Errorf("%w: bad pcapng header: %v", ErrFormat, err)
	}
	if len(shb) < 16 {
		return errNgVersionStarts
	}
	var order binary.ByteOrder = binary.LittleEndian
	if binary.BigEndian.Uint32(shb[8:12]) == ngByteOrderMagic {
		order = binary.BigEndian
	}
	return fmt.Errorf("pcapng section of version %d.%d: %w", order.Uint16(shb[12:14]), order.Uint16(shb[14:16]), ErrPcapngVersion)
}

// knownMagic reports whether m, a file's first 4 bytes, is the magic
// number of a pcapng section header block or of a classic pcap (µs or
// ns, either byte order).
func knownMagic(m [4]byte) bool {
	switch binary.BigEndian.Uint32(m[:]) {
	case 0x0a0d0d0a, 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		return true
	}
	return false
}

// InterfaceName returns the name (pcapng if_name) of interface i of a
// pcapng capture, as in Frame.Interface; "" for classic pcap, an unknown
// index, or an interface without a name.
func (r *Reader) InterfaceName(i int) string {
	if r.ng == nil {
		return ""
	}
	ifc, err := r.ng.Interface(i)
	if err != nil {
		return ""
	}
	return ifc.Name
}

// Close closes the file opened by Open; it is a no-op for NewReader.
func (r *Reader) Close() error {
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// Stats returns the counts so far (the Other map is shared; do not modify).
// CaptureDrops counts the interface statistics blocks read so far: a
// capture usually writes them at its end.
func (r *Reader) Stats() Stats {
	s := r.stats
	if s.Other == nil {
		s.Other = map[string]int{} // JSON {} rather than null
	}
	if len(r.drops)+len(r.pastDrops) > 0 {
		s.IfaceDrops = map[int]uint64{}
		for _, m := range []map[int]uint64{r.pastDrops, r.drops} {
			for i, d := range m {
				s.IfaceDrops[i] = addSat(s.IfaceDrops[i], d)
				s.CaptureDrops = addSat(s.CaptureDrops, d)
			}
		}
	}
	for _, m := range []map[int]uint64{r.pastUnread, r.unread} {
		for _, d := range m {
			s.UnreadableDrops = addSat(s.UnreadableDrops, d)
		}
	}
	s.DropsCauseUnsaid = r.unsaid
	s.Sections, s.SectionStarts, s.Repeats = r.sec.sections()
	s.SectionsUncompared = r.sec.uncompared()
	s.SectionCuts = slices.Clone(r.sec.cuts)
	return s
}

// interfaceStats notes the isb_ifdrop of a pcapng interface statistics
// block for interface i (pcapgo's StatisticsCallback); a block without
// it (pcapgo.NgNoValue64) declares nothing.
func (r *Reader) interfaceStats(i int, st pcapgo.NgInterfaceStatistics) {
	if st.PacketsDropped == pcapgo.NgNoValue64 {
		return
	}
	if r.drops == nil {
		r.drops = map[int]uint64{}
	}
	r.drops[i] = st.PacketsDropped
	var n uint64
	if _, err := fmt.Sscanf(st.Comment, UnreadableComment, &n); err == nil {
		if r.unread == nil {
			r.unread = map[int]uint64{}
		}
		r.unread[i] = min(n, st.PacketsDropped)
	} else if st.PacketsDropped > 0 && r.ng != nil && r.ng.SectionInfo().Application == "homatest" {
		// homatest wrote its frames that could not be read into
		// isb_ifdrop without a count before UnreadableComment.
		r.unsaid = true
	}
}

// sectionEnd moves the ended section's drops to pastDrops: the next
// section numbers its interfaces afresh (pcapgo's SectionEndCallback).
func (r *Reader) sectionEnd(ifaces []pcapgo.NgInterface, _ pcapgo.NgSectionInfo) {
	r.resetTimeResolutions(ifaces)
	r.sec.newSection()
	if r.fast != nil {
		r.fast.off, r.fast.lost = true, true // the new section's byte order is pcapgo's to know
	}
	for i, d := range r.drops {
		if r.pastDrops == nil {
			r.pastDrops = map[int]uint64{}
		}
		r.pastDrops[i] = addSat(r.pastDrops[i], d)
	}
	for i, d := range r.unread {
		if r.pastUnread == nil {
			r.pastUnread = map[int]uint64{}
		}
		r.pastUnread[i] = addSat(r.pastUnread[i], d)
	}
	r.drops, r.unread = nil, nil
}

// addSat returns a+b, or the largest uint64 if that overflows (a
// damaged statistics block may declare any count).
func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// Next returns the next Homa frame, io.EOF at the end of the capture, or an
// error for a damaged file (wrapping the pcapgo error, with the frame
// number). A frame whose Homa header is bad is returned with Err set; the
// Frame is reused by the next call. Next does not allocate per frame.
func (r *Reader) Next() (*Frame, error) {
	for {
		var ci gopacket.CaptureInfo
		data, opts, err := r.read(&ci)
		if r.ng == nil && fileHeaderAsRecord(ci) {
			return nil, fmt.Errorf("after frame %d: %w", r.n, ErrConcatenated)
		}
		if r.ng == nil && err != nil && ci.CaptureLength > ci.Length && strings.HasPrefix(err.Error(), pcapgoLongRecord) {
			data, err = r.readLongRecord(ci.CaptureLength)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			if r.resync(err) {
				continue
			}
			return nil, fmt.Errorf("read frame %d: %w", r.n+1, ngVersion(err))
		}
		if r.limit > 0 && r.n >= r.limit {
			return nil, io.EOF
		}
		r.n++
		if ci.CaptureLength > ci.Length {
			// No capture takes more than the frame held: a damaged
			// record or a faulty writer. Read as captured, as tshark
			// does (it flags "frame length is less than captured length").
			if r.stats.CapLenOverLen == 0 {
				r.stats.CapLenOverLenFrame = r.n
			}
			r.stats.CapLenOverLen++
			ci.Length = ci.CaptureLength
		}
		if r.o.Context != nil && r.n%ctxFrames == 0 && r.o.Context.Err() != nil {
			return nil, fmt.Errorf("read frame %d: %w", r.n, context.Cause(r.o.Context))
		}
		r.stats.Frames++
		if r.o.Progress != nil {
			r.o.Progress.Add(1)
		}
		if r.ng != nil && r.sec.frame(r.n, data, &ci) {
			r.other(OtherRepeatedSection)
			continue
		}
		r.otherDir = r.o.Direction != DirUnknown && opts != nil && opts.Flags != nil && Direction(opts.Flags.Direction&pcapgo.NgEpbFlagDirectionMask) != r.o.Direction
		if r.otherDir && r.o.SentBy == nil {
			r.other("other direction")
			continue
		}
		lt := r.linkType
		if r.ng != nil {
			lt = r.ng.LinkType()
			if len(ci.AncillaryData) > 0 {
				if l, ok := ci.AncillaryData[0].(layers.LinkType); ok {
					lt = l
				}
			}
		}
		if r.hold != nil && len(data) > 0 {
			data = r.hold(data)
		}
		r.marked = opts != nil && (opts.Flags != nil && opts.Flags.Direction&pcapgo.NgEpbFlagDirectionMask != 0 || len(opts.Comments) > 0)
		r.markDir, r.markNote = 0, false
		if r.marked {
			if opts.Flags != nil {
				r.markDir = opts.Flags.Direction & pcapgo.NgEpbFlagDirectionMask
			}
			r.markNote = len(opts.Comments) > 0
		}
		if r.decode(data, ci, lt) {
			r.noteTime(r.n, ci.Timestamp)
			if opts != nil && opts.Flags != nil {
				r.frame.Direction = Direction(opts.Flags.Direction & pcapgo.NgEpbFlagDirectionMask)
			}
			if opts != nil && len(opts.Comments) > 0 {
				r.frame.Comment = strings.Join(opts.Comments, "; ")
			}
			return &r.frame, nil
		}
	}
}

// read returns the next packet block's frame as pcapgo reads it, its
// CaptureInfo in ci and its options (nil: none): a pcapng's plain ones
// through the fast path (ngFast). (Pointers, not values: copying the
// CaptureInfo and the options out cost 20 of the 175 ns a frame.)
func (r *Reader) read(ci *gopacket.CaptureInfo) (data []byte, opts *pcapgo.NgPacketOptions, err error) {
	if r.ng == nil {
		data, *ci, err = r.src.ZeroCopyReadPacketData()
		return data, nil, err
	}
	if data, ok := r.fast.next(ci); ok {
		r.prevTS = ci.Timestamp // exact already
		return data, nil, nil
	}
	idx, raw, rawOK := r.fast.peekTime()
	data, *ci, r.opts, err = r.ng.ZeroCopyReadPacketDataWithOptions()
	r.fast.sync(r.ng, err)
	if err == nil {
		r.fixTime(&ci.Timestamp, ci.InterfaceIndex, raw, rawOK && uint32(ci.InterfaceIndex) == idx)
	}
	return data, &r.opts, err
}

// pcapgoLongRecord starts pcapgo's error for a classic pcap record whose
// captured length exceeds its original length (it reads no further).
const pcapgoLongRecord = "capture length exceeds original packet length"

// readLongRecord reads the n bytes of the classic pcap record whose
// header pcapgo refused for a captured length above the original one:
// Next reads it as captured (see Stats.CapLenOverLen). n is at most
// pcapgo's largest record, the file's snap length, which may be 4 GB: the
// buffer grows with the bytes read, so a damaged header in a short file
// allocates no more than the file holds.
func (r *Reader) readLongRecord(n int) ([]byte, error) {
	data := r.long[:0]
	for len(data) < n {
		k := min(n-len(data), 1<<20)
		data = slices.Grow(data, k)
		m, err := io.ReadFull(r.br, data[len(data):len(data)+k])
		data = data[:len(data)+m]
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the record's header promised bytes: not the end of the capture
		}
		if err != nil {
			return nil, err
		}
	}
	r.long = data
	return data, nil
}

// ErrConcatenated is the error (wrapped by Next, and by StreamPath in a
// *DamagedError) of a classic pcap followed by a second capture's file
// header, as `cat a.pcap b.pcap` writes: a classic pcap holds one
// capture (pcapng holds several, as sections, and reads on).
//
// The advice says what joining costs: mergecap orders frames by
// timestamp, so captures of one period taken at different places
// interleave, and captures of different periods follow one another, where
// check starts a new section (spec.TimeJump, a host restart: nothing is
// judged across it) rather than take a restarted module's ids for reuse.
var ErrConcatenated = errors.New("a second capture's file header follows: the input is captures concatenated (cat a.pcap b.pcap), and a classic pcap holds one; give each file, or join them with mergecap -w out.pcapng a.pcap b.pcap (caveat: mergecap interleaves frames by timestamp, so join only captures of one clock; check judges a jump back in time, or a Homa module restarted between the captures (its RPC ids start again), as the start of an independent section, and nothing across it)")

// fileHeaderAsRecord reports whether ci, read as a classic pcap record
// header, is a file header: ts_sec a pcap magic number (in this file's
// byte order, as cat of two captures from one machine has it) and
// thiszone and sigfigs as incl_len and orig_len (0: libpcap writes no
// other), or ts_sec the pcapng section header's block type and incl_len
// its byte-order magic.
func fileHeaderAsRecord(ci gopacket.CaptureInfo) bool {
	switch uint32(ci.Timestamp.Unix()) {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		return ci.CaptureLength == 0 && ci.Length == 0
	case 0x0a0d0d0a:
		return ci.CaptureLength == 0x1a2b3c4d || ci.CaptureLength == 0x4d3c2b1a
	}
	return false
}

// ctxFrames is how often (in frames) Next looks at ReaderOptions.Context.
const ctxFrames = 1024

// ctx is r's ReaderOptions.Context, or context.Background.
func (r *Reader) ctx() context.Context {
	if r.o.Context != nil {
		return r.o.Context
	}
	return context.Background()
}

func (r *Reader) other(kind string) {
	if r.stats.Other == nil {
		r.stats.Other = map[string]int{}
	}
	r.stats.Other[kind]++
}

// decode fills r.frame and reports whether the frame is Homa.
func (r *Reader) decode(data []byte, ci gopacket.CaptureInfo, lt layers.LinkType) bool {
	lp := r.lastParser
	if lp == nil || r.lastLT != lt {
		if lp = r.parsers[lt]; lp == nil {
			lp = newLinkParser(lt)
			r.parsers[lt] = lp
		}
		r.lastParser, r.lastLT = lp, lt
	}
	if len(data) == 0 {
		r.other("empty")
		return false
	}
	ipv, ok := lp.decode(data)
	if !ok {
		kind := lp.kind
		if kind == "not-ip" && ci.CaptureLength < ci.Length && lp.cutBeforeIP(data) {
			kind = OtherCutBeforeHoma
			r.stats.SnapLen = max(r.stats.SnapLen, ci.CaptureLength)
		}
		r.other(kind)
		return false
	}
	f := &r.frame
	*f = Frame{Number: r.n, Time: ci.Timestamp, Interface: ci.InterfaceIndex, LinkType: lt,
		CaptureLen: ci.CaptureLength, Length: ci.Length, IPVersion: ipv}
	var payload, ipHeader []byte
	var wireLen int
	top := lp
	lp = lp.in // the innermost IP header's (a tunnel's inner frame)
	if ipv == 4 {
		ip := &lp.ip4
		if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
			if p := uint8(ip.Protocol); ip.FragOffset != 0 || p != wire.IPProtoHoma && p != wire.IPProtoHoma2024 {
				r.other("fragment")
				return false
			}
			// A Homa packet's first fragment holds its header: decoded,
			// so that the checker reports the fragmentation (WIRE-07).
			f.Fragment = true
		}
		f.Src, f.Dst = netip.AddrFrom4([4]byte(ip.SrcIP.To4())), netip.AddrFrom4([4]byte(ip.DstIP.To4()))
		f.IPProto, f.TOS, f.TTL = uint8(ip.Protocol), ip.TOS, ip.TTL
		f.BadIPChecksum = wire.IPv4HeaderChecksum(ip.Contents) != 0 // ip_send_check; never offloaded
		f.IPOptions = ip.IHL > 5 && !onlyLabels(ip.Contents[20:min(len(ip.Contents), int(ip.IHL)*4)])
		payload, ipHeader = ip.Payload, ip.Contents
		wireLen = int(ip.Length) - int(ip.IHL)*4
	} else {
		ip := &lp.ip6
		f.Src, f.Dst = netip.AddrFrom16([16]byte(ip.SrcIP.To16())), netip.AddrFrom16([16]byte(ip.DstIP.To16()))
		f.IPProto, f.TOS, f.TTL = uint8(ip.NextHeader), ip.TrafficClass, ip.HopLimit
		if ip.HopByHop != nil {
			f.IPProto = uint8(ip.HopByHop.NextHeader)
		}
		payload, ipHeader = ip.Payload, ip.Contents
		wireLen = int(ip.Length)
		if ip.HopByHop != nil {
			wireLen -= len(ip.HopByHop.Contents)
		}
		var skipped int
		var frag, later bool
		f.IPProto, payload, skipped, frag, later = skipIPv6Ext(f.IPProto, payload)
		wireLen -= skipped
		if later {
			r.other("fragment")
			return false
		}
		f.Fragment = frag
	}
	if r.otherDir && slices.Contains(r.o.SentBy, f.Src) {
		r.other("other direction") // read as its sender's port saw it leave
		return false
	}
	switch f.IPProto {
	case wire.IPProtoHoma, wire.IPProtoHoma2024:
	case wire.IPProtoTCP:
		if !wire.IsHijacked(payload) {
			r.other("tcp")
			return false
		}
		f.Hijacked = true
	case uint8(layers.IPProtocolICMPv4):
		r.other("icmp")
		return r.o.ICMP && r.icmp(f, payload, false)
	case uint8(layers.IPProtocolICMPv6):
		r.other("icmpv6")
		return r.o.ICMP && r.icmp(f, payload, true)
	case uint8(layers.IPProtocolUDP):
		r.other("udp")
		return false
	default:
		r.other("ip")
		return false
	}
	if wireLen < len(payload) {
		wireLen = len(payload)
	}
	if wireLen > len(payload) && ci.CaptureLength >= ci.Length {
		// Not cut by the snap length: the IP header claims more bytes than
		// the frame holds. Trust the frame.
		r.stats.IPLengthMismatch++
		f.IPLengthPastFrame = true
		wireLen = len(payload)
	}
	point, known := copyPoint(top, ci.InterfaceIndex, r.ng != nil && r.ng.NInterfaces() > 1)
	f.Sighting = cookedSighting(top)
	if r.marked {
		// A switch port's frames hold each packet at two ports on
		// purpose: no copy is skipped, but one repeated at its own port,
		// direction and instant is a same-instant twin all the same (a
		// ports capture merged with itself).
		point, known = r.markedPoint(ci.InterfaceIndex), false
	}
	elsewhere, twin := r.copies.seen(ipHeader, payload, point, known, ci.Timestamp)
	if elsewhere {
		r.other(OtherCopy)
		return false
	}
	if twin {
		r.stats.SameInstant++
		r.stats.SameInstantFrames = append(r.stats.SameInstantFrames, f.Number)
		if r.o.SkipSameInstant {
			r.other(OtherSameInstant)
			return false
		}
	}
	r.stats.Homa++
	f.Raw = payload
	f.SnapCut = len(payload) < wireLen
	if ipv == 4 {
		f.Priority, f.PrioShift = wire.PriorityFromTOS(f.TOS), 5
	}
	p, err := wire.Decode(payload, wire.DecodeOptions{Version: r.o.Version, IPProto: f.IPProto, WireLen: wireLen, Partial: true})
	if ipv == 6 {
		f.PrioShift = r.ipv6Shift(f.Src, f.TOS)
		if f.PrioShift == 0 {
			f.PrioShift = r.o.IPv6UnknownShift
		}
		if f.PrioEither = f.PrioShift == 0; f.PrioEither {
			f.PrioShift = wire.IPv6PriorityShift(p.Version())
		}
		f.Priority = wire.PriorityFromTrafficClass(f.TOS, f.PrioShift)
	}
	// Counted whether or not the packet decodes: one the forced format
	// cannot even parse is read in the wrong format all the same (it
	// was left out, so "42 of 44" under one profile and "44 of 44"
	// under another described the same capture).
	if r.o.Version != wire.VersionAuto && r.o.Version.IPProtocol() != f.IPProto && f.IPProto != wire.IPProtoTCP {
		r.stats.VersionMismatch++
	}
	if err != nil {
		f.Packet = p // the readable part of a header the snap length cut, else zero
		r.decodeError(f, err, ci)
		return true
	}
	f.Packet = p
	if p.Type() == wire.TypeData {
		maxSeg := r.o.MaxSegData
		if maxSeg <= 0 {
			maxSeg = f.MaxSegData()
		}
		f.Segments, err = p.Data().Segments(r.segs[:0], maxSeg)
		r.segs = f.Segments[:0]
		if err != nil {
			r.decodeError(f, err, ci)
			f.Segments = nil
			return true
		}
		r.stats.Segments += len(f.Segments)
		if len(f.Segments) > 1 {
			r.stats.GSOFrames++
		}
	}
	r.stats.ByType[p.Type()-wire.MinType]++
	if p.Type() == wire.TypeData && p.Data().Retransmit() != 0 {
		r.stats.Retransmits++
	}
	if p.Truncated() {
		r.stats.Truncated++
	}
	return true
}

// decodeError files err as f's decode error, counting the frame in
// Stats.SnapCut when the snap length cut it (Stats.SnapCut says why
// that is a packet unseen rather than a malformed one).
func (r *Reader) decodeError(f *Frame, err error, ci gopacket.CaptureInfo) {
	r.stats.DecodeErrors++
	f.Err = err
	if ci.CaptureLength < ci.Length {
		r.stats.SnapCut++
		r.stats.SnapLen = max(r.stats.SnapLen, ci.CaptureLength)
		if f.Packet.Partial() {
			r.stats.SnapPartial++
			if f.Packet.Complete() {
				r.stats.SnapComplete++
			}
		}
	}
}

// icmp fills f.ICMP from an ICMP (v6: ICMPv6) message b and reports
// whether it is a destination-unreachable message (ICMPv6: also parameter
// problem "unknown next header") quoting a Homa packet: IP protocol 146 or
// 253 (a hijacked packet is quoted after the receiver's GRO rewrote its
// protocol to 146). It never panics on short input.
func (r *Reader) icmp(f *Frame, b []byte, v6 bool) bool {
	if len(b) < 8 {
		return false
	}
	typ, code := b[0], b[1]
	q := b[8:]
	ic := &spec.ICMP{Type: typ, Code: code}
	var proto uint8
	var transport []byte
	switch {
	case !v6 && typ == 3:
		ic.PortUnreachable = code == 3
		if len(q) < 20 || q[0]>>4 != 4 {
			return false
		}
		ihl := int(q[0]&0x0f) * 4
		if ihl < 20 || len(q) < ihl {
			return false
		}
		proto = q[9]
		ic.QSrc, ic.QDst = netip.AddrFrom4([4]byte(q[12:16])), netip.AddrFrom4([4]byte(q[16:20]))
		transport = q[ihl:]
	case v6 && (typ == 1 || typ == 4 && code == 1):
		ic.PortUnreachable = typ == 1 && code == 4
		if len(q) < 40 || q[0]>>4 != 6 {
			return false
		}
		proto = q[6]
		ic.QSrc, ic.QDst = netip.AddrFrom16([16]byte(q[8:24])), netip.AddrFrom16([16]byte(q[24:40]))
		transport = q[40:]
	default:
		return false
	}
	if proto != wire.IPProtoHoma && proto != wire.IPProtoHoma2024 && !(proto == wire.IPProtoTCP && wire.IsHijacked(transport)) {
		return false
	}
	if len(transport) < 4 {
		return false
	}
	ic.QSport, ic.QDport = uint16(transport[0])<<8|uint16(transport[1]), uint16(transport[2])<<8|uint16(transport[3])
	if len(transport) >= wire.CommonHeaderLen {
		c := wire.Common(transport[:wire.CommonHeaderLen])
		ic.QType, ic.QSenderID, ic.HasID = c.Type(), c.SenderID(), true
	}
	f.ICMP = ic
	return true
}

// ipv6Shift returns the traffic-class shift for an IPv6 packet from src
// with traffic class tc, following the host's latest class only one shift
// writes (IPv6Shifts.Follow); last6 caches the latest source's.
func (r *Reader) ipv6Shift(src netip.Addr, tc uint8) uint8 {
	if r.o.IPv6PriorityShift != 0 {
		return r.o.IPv6PriorityShift
	}
	if u := IPv6ShiftOf(tc); src == r.last6 && r.lastShift6 != 0 && (u == 0 || u == r.lastShift6) {
		return r.lastShift6
	}
	s := r.shift6.Follow(src, tc)
	if s == 0 {
		s = r.o.IPv6HostShifts[src]
	}
	r.last6, r.lastShift6 = src, s
	return s
}

// IPv6Shifts maps an IPv6 host's address to the shift (4 or 5) its Homa
// packets write the priority into the traffic class with.
type IPv6Shifts map[netip.Addr]uint8

// Follow returns host src's shift after a packet with traffic class tc:
// the one tc names if only one shift writes it, recorded even against an
// earlier one (a host may change builds mid-capture: a rolling upgrade, a
// module reloaded), else the host's latest recorded; 0 if none is.
func (m *IPv6Shifts) Follow(src netip.Addr, tc uint8) uint8 {
	if u := IPv6ShiftOf(tc); u != 0 {
		if (*m)[src] != u {
			if *m == nil {
				*m = IPv6Shifts{}
			}
			(*m)[src] = u
		}
		return u
	}
	return (*m)[src]
}

// note records host src's shift if traffic class tc names one and none is
// known yet.
func (m IPv6Shifts) note(src netip.Addr, tc uint8) {
	if _, ok := m[src]; !ok {
		if s := IPv6ShiftOf(tc); s != 0 {
			m[src] = s
		}
	}
}

// IPv6ShiftOf returns the shift (4 or 5) that must have written IPv6
// traffic class tc: 4 if bit 4 is set (priority<<4 has it only for odd
// priorities), 5 if bit 7 is set (priority<<4 never reaches it); 0 when
// either could have.
func IPv6ShiftOf(tc uint8) uint8 {
	switch {
	case tc&0x10 != 0:
		return 4
	case tc&0x80 != 0:
		return 5
	}
	return 0
}

// DetectIPv6Shifts reads up to DetectFrames frames from r (a fresh
// Reader; it is consumed) and returns the IPv6 priority shift of each
// source host that sent an IPv6 Homa packet with an unambiguous traffic
// class among them (IPv6ShiftOf); hosts without one are absent. It
// returns the error of a damaged file.
func DetectIPv6Shifts(r *Reader) (IPv6Shifts, error) {
	r.limit = DetectFrames
	m := IPv6Shifts{}
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return m, err
		}
		if f.IPVersion == 6 {
			m.note(f.Src, f.TOS)
		}
		if f.Number >= DetectFrames {
			return m, nil
		}
	}
}

// DetectFrames bounds the frames DetectIPv6Shifts and DetectFormat read.
const DetectFrames = 100000

// DetectFormat reads up to DetectFrames frames of r (a fresh Reader; it is
// consumed) and returns the wire format they suggest — Version2024 if any
// packet came over IP protocol 253, or most ACKs have the 2024 layout's 90
// bytes and either most DATA show the 12-byte homa_ack, or none tells
// (cutoff_version and retransmit all 0) and more than one ACK does, or most
// GRANTs have resend_all; Version2025 if most GRANTs have
// resend_all (34 bytes) over IP protocol 146, unless most DATA show the
// 12-byte homa_ack of main between f7e4717 and be127d8 or most ACKs have 90
// bytes (then Version2024: see dataAck12); VersionCurrent if any packet has
// the current format's marks, VersionUpstream only if none does, and
// VersionCurrent when no Homa packet decodes — with the IPv6 priority
// shift of each host that sent an unambiguous IPv6 traffic class
// (DetectIPv6Shifts). Majorities, not a single packet, decide between layouts
// that share IP protocol 146: one malformed ACK or GRANT of the other
// layout's length (an ACK with num_acks 6) is that packet's fault, for
// HOMA-WIRE-008 to judge, not the capture's format. A damaged file is not
// an error here: reading it for real reports it. spec.ProfileForWire
// names the profile of the format.
func DetectFormat(r *Reader) (v wire.Version, shifts IPv6Shifts) {
	v, shifts, _ = detectFormat(r)
	return v, shifts
}

// ErrPre2024Format says a capture is in HomaModule's wire format before
// 263f8c2 (2024-07-15), which homatest does not decode.
var ErrPre2024Format = errors.New("the capture is in HomaModule's wire format before commit 263f8c2 (2024-07-15; branches linux_6.0, linux_5.x, v2.0): its packet type is at byte 13, not 11, and its DATA header differs; homatest reads the formats since then only (decode shows these frames as errors)")

// detectFormat is DetectFormat, and also reports ErrPre2024Format when
// most Homa frames fail to decode and show the pre-263f8c2 common header
// instead (see pre2024Header).
func detectFormat(r *Reader) (v wire.Version, shift IPv6Shifts, err error) {
	shift = IPv6Shifts{}
	seen := map[wire.Version]int{}
	ack12, ack10 := 0, 0     // DATA whose bytes 49..51 do (not) show a 12-byte homa_ack
	old, homa := 0, 0        // Homa frames with the pre-263f8c2 header; all Homa frames
	proto2024 := 0           // Homa frames over IP protocol 253
	acks, acks90 := 0, 0     // ACKs over 146; of them, those of 2024's 90 bytes
	grants, grants34 := 0, 0 // GRANTs over 146; of them, those with resend_all (34 bytes)
	r.limit = DetectFrames
	for {
		f, err := r.Next()
		if err != nil || f.Number > DetectFrames {
			break
		}
		if f.Raw != nil {
			homa++
			if f.Err != nil && pre2024Header(f.Raw) {
				old++
			}
			if f.IPProto == wire.IPProtoHoma2024 {
				// A header the snap length cut still shows its IP
				// protocol, which alone names the 2024 format.
				proto2024++
			}
		}
		if f.Err == nil {
			seen[f.Packet.Version()]++
			switch b, wl := f.Packet.Bytes(), f.Packet.WireLen(); {
			case f.IPProto == wire.IPProtoHoma2024:
			case f.Packet.Type() == wire.TypeAck:
				acks++
				if wl == wire.TypeAck.HeaderLen(wire.Version2024) {
					acks90++
				}
			case f.Packet.Type() == wire.TypeGrant:
				grants++
				if wl == wire.TypeGrant.HeaderLen(wire.Version2024) {
					grants34++
				}
			case f.Packet.Type() != wire.TypeData:
			case dataAck12(b):
				ack12++
			case len(b) >= 52 && (b[46] != 0 || b[47] != 0 || b[48] != 0):
				ack10++ // cutoff_version or retransmit where the 10-byte layout has them
			}
		}
		if f.IPVersion == 6 {
			shift.note(f.Src, f.TOS)
		}
	}
	if old > 0 && 2*old > homa {
		err = ErrPre2024Format
	}
	most := func(n, of int) bool { return 2*n > of }
	resendAll := most(grants34, grants)
	switch {
	case proto2024 > 0:
		return wire.Version2024, shift, err
	case most(acks90, acks) && (resendAll || ack12 > ack10 || ack12 == ack10 && acks90 > 1):
		return wire.Version2024, shift, err
	case resendAll && ack12 > ack10:
		return wire.Version2024, shift, err
	case resendAll:
		return wire.Version2025, shift, err
	case seen[wire.VersionUpstream] > 0 && seen[wire.VersionCurrent] == 0:
		return wire.VersionUpstream, shift, err
	}
	return wire.VersionCurrent, shift, err
}

// pre2024Header reports whether Homa header b has HomaModule's common
// header before 263f8c2 (homa_impl.h struct common_header: sport, dport,
// two unused words, doff, type at byte 13, ...) rather than the TCP-like
// one since (type at byte 11, where the old header has an unused word's
// last byte, 0): byte 11 is 0 and byte 13 is a packet type.
func pre2024Header(b []byte) bool {
	return len(b) >= wire.CommonHeaderLen && b[11] == 0 && wire.PacketType(b[13]).IsValid()
}

// dataAck12 reports whether DATA header b shows the 12-byte homa_ack
// (client_port; HomaModule before be127d8): there bytes 49 and 50 are
// cutoff_version's low byte and retransmit, which the 10-byte layout
// leaves as pad (0; homa_outgoing.c homa_tx_data_pkt_alloc). A DATA with
// cutoff_version 0 and retransmit 0 shows neither layout.
func dataAck12(b []byte) bool {
	return len(b) >= 52 && (b[49] != 0 || b[50] != 0 || b[51] != 0)
}

// MaxSegData returns max_seg_data for a frame at MTU 1500: 1424 bytes over
// IPv4, 1404 over IPv6 (HomaModule homa_message_out_fill).
func (f *Frame) MaxSegData() int {
	if f.IPVersion == 6 {
		return wire.MaxSegDataIPv6
	}
	return wire.MaxSegDataIPv4
}

// RelTime returns f.Time minus start, for printing.
func (f *Frame) RelTime(start time.Time) time.Duration { return f.Time.Sub(start) }

// skipIPv6Ext walks the IPv6 extension headers after the hop-by-hop one
// (routing 43, destination options 60, fragment 44; RFC 8200 4.1) that
// start payload, next their first next-header value, and returns the
// upper-layer protocol, its bytes, the extension bytes skipped, whether a
// fragment header of a fragmented packet was among them, and whether that
// fragment is a later one (nonzero offset), which holds no upper-layer
// header. A header the
// capture cut stops the walk where it starts.
func skipIPv6Ext(next uint8, payload []byte) (proto uint8, rest []byte, skipped int, frag, later bool) {
	for {
		switch next {
		case uint8(layers.IPProtocolIPv6Routing), uint8(layers.IPProtocolIPv6Destination):
			if len(payload) < 2 {
				return next, payload, skipped, frag, later
			}
			n := (int(payload[1]) + 1) * 8
			if n > len(payload) {
				return next, payload, skipped, frag, later
			}
			next, payload, skipped = payload[0], payload[n:], skipped+n
		case uint8(layers.IPProtocolIPv6Fragment):
			if len(payload) < 8 {
				return next, payload, skipped, frag, later
			}
			// An atomic fragment (offset 0, no more fragments; RFC
			// 6946) is a whole packet.
			off := binary.BigEndian.Uint16(payload[2:4]) >> 3
			frag = frag || off != 0 || payload[3]&1 != 0
			later = later || off != 0
			next, payload, skipped = payload[0], payload[8:], skipped+8
		default:
			return next, payload, skipped, frag, later
		}
	}
}

// onlyLabels reports whether IPv4 options opts hold a security label
// (CIPSO, type 134; RFC 1108 basic or extended security, 130 and 133) and
// nothing else but padding (NOP, end of list): a Linux security module
// (Smack, SELinux with NetLabel) labels every AF_INET socket, Homa's
// included, and ip_queue_xmit writes the label (helper-149); Homa itself
// sets no IP options. Padding alone, or a malformed list, is no label.
func onlyLabels(opts []byte) bool {
	label := false
	for i := 0; i < len(opts); {
		switch t := opts[i]; t {
		case 0: // end of list
			return label
		case 1: // NOP
			i++
		case 130, 133, 134:
			if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
				return false
			}
			label = true
			i += int(opts[i+1])
		default:
			return false
		}
	}
	return label
}
