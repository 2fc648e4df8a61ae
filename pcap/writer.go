package pcap

import (
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
	n  int
}

// NewWriter writes the pcapng section header and one interface description
// per entry of ifaces (at least one) to w.
func NewWriter(w io.Writer, ifaces ...Interface) (*Writer, error) {
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
		SectionInfo: pcapgo.NgSectionInfo{Application: "homatest"}})
	if err != nil {
		return nil, fmt.Errorf("pcap: write pcapng header: %w", err)
	}
	for _, i := range ifaces[1:] {
		if _, err := ng.AddInterface(conv(i)); err != nil {
			return nil, fmt.Errorf("pcap: add interface %s: %w", i.Name, err)
		}
	}
	return &Writer{ng: ng, n: len(ifaces)}, nil
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
// dropped itself (isb_ifdrop: its buffer overflowed, or a frame could
// not be read), the totals since the capture started; a reader takes the
// last block of each interface (Stats.CaptureDrops).
func (w *Writer) WriteInterfaceStats(iface int, ts time.Time, dropped uint64) error {
	if iface < 0 || iface >= w.n {
		return fmt.Errorf("pcap: interface %d not declared (have %d)", iface, w.n)
	}
	return w.ng.WriteInterfaceStats(iface, pcapgo.NgInterfaceStatistics{LastUpdate: ts, PacketsReceived: pcapgo.NgNoValue64, PacketsDropped: dropped})
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
