package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// DefaultSnapLen is the snap length written to interface descriptions:
// 262144 bytes, enough for GSO frames of up to 64 KiB.
const DefaultSnapLen = 262144

// Interface describes one capture interface of a pcapng file.
type Interface struct {
	// Name is the interface name (e.g. "sw-h1"), written as if_name.
	Name string
	// Description is free text, written as if_description.
	Description string
	// LinkType of the frames (layers.LinkTypeEthernet if zero).
	LinkType layers.LinkType
	// SnapLen in bytes (DefaultSnapLen if zero).
	SnapLen uint32
}

// Writer writes frames to a pcapng stream with nanosecond timestamps. It
// avoids pcapgo's trap of using the kernel ifindex as the pcapng interface
// index: interfaces are numbered 0..n-1 in the order given.
type Writer struct {
	ng *pcapgo.NgWriter
	w  io.Writer
	n  int
}

// NewWriter writes the pcapng section header and one interface description
// per entry of ifaces (at least one) to w.
func NewWriter(w io.Writer, ifaces ...Interface) (*Writer, error) {
	return newWriterApp(w, "homatest", ifaces...)
}

// newWriterApp is NewWriter naming app the writing application in the
// section header (shb_userappl; a reader knows homatest's files by it).
func newWriterApp(w io.Writer, app string, ifaces ...Interface) (*Writer, error) {
	if len(ifaces) == 0 {
		return nil, errors.New("pcap: NewWriter needs at least one interface")
	}
	conv := func(i Interface) pcapgo.NgInterface {
		lt := i.LinkType
		if lt == 0 {
			lt = layers.LinkTypeEthernet
		}
		snap := i.SnapLen
		if snap == 0 {
			snap = DefaultSnapLen
		}
		return pcapgo.NgInterface{Name: i.Name, Description: i.Description, LinkType: lt,
			SnapLength: snap, TimestampResolution: 9, OS: "linux"}
	}
	ng, err := pcapgo.NewNgWriterInterface(w, conv(ifaces[0]), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{Application: app}})
	if err != nil {
		return nil, fmt.Errorf("pcap: write pcapng header: %w", err)
	}
	for _, i := range ifaces[1:] {
		if _, err := ng.AddInterface(conv(i)); err != nil {
			return nil, fmt.Errorf("pcap: add interface %s: %w", i.Name, err)
		}
	}
	return &Writer{ng: ng, w: w, n: len(ifaces)}, nil
}

// WritePacket writes one frame captured on interface iface at time ts.
// length is the original frame length (0 means len(data)); comment, if not
// empty, is stored as the packet's opt_comment (e.g. why a switch dropped
// it).
func (w *Writer) WritePacket(iface int, ts time.Time, data []byte, length int, comment string) error {
	return w.WritePacketDir(iface, ts, data, length, DirUnknown, comment)
}

// WritePacketDir is WritePacket that also stores the frame's direction at
// the interface in the epb_flags option (none for DirUnknown).
func (w *Writer) WritePacketDir(iface int, ts time.Time, data []byte, length int, dir Direction, comment string) error {
	if iface < 0 || iface >= w.n {
		return fmt.Errorf("pcap: interface %d not declared (have %d)", iface, w.n)
	}
	if length < len(data) {
		length = len(data)
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: length, InterfaceIndex: iface}
	var opts pcapgo.NgPacketOptions
	if comment != "" {
		opts.Comments = []string{comment}
	}
	if dir != DirUnknown {
		opts.Flags = &pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlag(dir)}
	}
	return w.ng.WritePacketWithOptions(ci, data, opts)
}

// WriteInterfaceStats writes a pcapng interface statistics block for
// interface iface, stamped at ts, declaring dropped packets the capture
// dropped itself (isb_ifdrop: its buffer overflowed), the total since the
// capture started; a reader takes the last block of each interface
// (Stats.CaptureDrops).
func (w *Writer) WriteInterfaceStats(iface int, ts time.Time, dropped uint64) error {
	return w.WriteDropStats(iface, ts, dropped, 0)
}

// UnreadableComment is the opt_comment of an interface statistics block
// whose isb_ifdrop counts frames the capture could not read (its socket
// queued them but recvmsg failed: EFAULT for some skbs HomaModule
// builds), %d of them: a larger buffer does not cure those
// (Stats.UnreadableDrops).
const UnreadableComment = "homatest: %d of the dropped frames could not be read (recvmsg failed), the rest a full buffer dropped"

// WriteDropStats is WriteInterfaceStats whose dropped includes unreadable
// frames the capture's socket queued but could not copy out, said in the
// block's comment (UnreadableComment) whenever there are drops, so that a
// reader knows how many of them a larger buffer would have saved.
func (w *Writer) WriteDropStats(iface int, ts time.Time, dropped, unreadable uint64) error {
	if iface < 0 || iface >= w.n {
		return fmt.Errorf("pcap: interface %d not declared (have %d)", iface, w.n)
	}
	if dropped == 0 {
		return w.ng.WriteInterfaceStats(iface, pcapgo.NgInterfaceStatistics{LastUpdate: ts, PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: dropped})
	}
	return writeDropStats(w.ng, w.w, iface, ts, dropped, fmt.Sprintf(UnreadableComment, unreadable))
}

// writeDropStats writes to out, after what ng buffered for it, an
// interface statistics block for interface iface stamped at ts (if_tsresol
// 9) with isb_ifdrop dropped and the opt_comment comment (which pcapgo
// cannot write), in the little-endian order pcapgo writes the rest: the
// one way Writer and Annotate write a drop count with its comment.
func writeDropStats(ng *pcapgo.NgWriter, out io.Writer, iface int, ts time.Time, dropped uint64, comment string) error {
	c := []byte(comment)
	pad := (4 - len(c)%4) % 4
	n := 12 + 8 + 4 + len(c) + pad + 4 + 8 + 4 + 4 // header, ts, comment, ifdrop, end, trailer
	b := make([]byte, 0, n)
	le := binary.LittleEndian
	ns := uint64(ts.UnixNano())
	b = le.AppendUint32(b, 0x00000005)
	b = le.AppendUint32(b, uint32(n))
	b = le.AppendUint32(b, uint32(iface))
	b = le.AppendUint32(b, uint32(ns>>32))
	b = le.AppendUint32(b, uint32(ns))
	b = le.AppendUint16(b, 1) // opt_comment
	b = le.AppendUint16(b, uint16(len(c)))
	b = append(append(b, c...), make([]byte, pad)...)
	b = le.AppendUint16(b, 5) // isb_ifdrop
	b = le.AppendUint16(b, 8)
	b = le.AppendUint64(b, dropped)
	b = le.AppendUint32(b, 0) // opt_endofopt
	b = le.AppendUint32(b, uint32(n))
	if err := ng.Flush(); err != nil {
		return err
	}
	_, err := out.Write(b)
	return err
}

// Flush writes buffered data to the underlying writer.
func (w *Writer) Flush() error { return w.ng.Flush() }

// FileWriter is a Writer on a file that appears under its final name only
// when Close succeeds: it writes to a temporary file in the same directory
// and renames it, so a failed or interrupted run leaves nothing half-written.
type FileWriter struct {
	*Writer
	f    *os.File
	path string
}

// Create starts a pcapng file at path (see FileWriter).
func Create(path string, ifaces ...Interface) (*FileWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, ifaces...)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &FileWriter{Writer: w, f: f, path: path}, nil
}

// Close flushes, closes and renames the file to its final path. On error
// the temporary file is removed.
func (fw *FileWriter) Close() error {
	if fw.f == nil {
		return nil
	}
	err := fw.Flush()
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(fw.f.Name(), fw.path)
	}
	if err != nil {
		os.Remove(fw.f.Name())
	}
	fw.f = nil
	return err
}

// Abort discards the file.
func (fw *FileWriter) Abort() {
	if fw.f != nil {
		fw.f.Close()
		os.Remove(fw.f.Name())
		fw.f = nil
	}
}
