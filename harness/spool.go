package harness

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/homatest/homatest/pcap"
)

// A spool file holds one capture stream's frames in arrival order, as
// records of: timestamp (int64 ns since the Unix epoch), original length
// (uint32), captured length (uint32), then the frame bytes; little endian.
const spoolHeader = 16

type spoolWriter struct {
	f    *os.File
	path string // where f is (keepSpools renames it)
	w    *bufio.Writer
	h    [spoolHeader]byte
}

// newSpool creates the spool file name in a's run folder, or, when that
// folder is on 9p (the lab guest's share of the host's working folder),
// a file named after it in os.TempDir (the guest's tmpfs): a pass's
// spools are written and read back through separate descriptors for as
// long as the pass runs, and a 75-minute lab pass read a record with a
// garbage length from one spooled over 9p.
func newSpool(a *Artifacts, name string) (*spoolWriter, error) {
	var f *os.File
	var err error
	if on9p(a.Dir) {
		f, err = os.CreateTemp("", name+"-*")
	} else {
		f, err = os.Create(a.Path(name))
	}
	if err != nil {
		return nil, err
	}
	return &spoolWriter{f: f, path: f.Name(), w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// v9fsMagic is the f_type statfs(2) gives for a 9p file system
// (V9FS_MAGIC, linux/magic.h).
const v9fsMagic = 0x01021997

// on9p reports whether dir is on a 9p file system.
func on9p(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == v9fsMagic
}

func (s *spoolWriter) write(ts time.Time, data []byte, length int) error {
	binary.LittleEndian.PutUint64(s.h[0:], uint64(ts.UnixNano()))
	binary.LittleEndian.PutUint32(s.h[8:], uint32(max(length, len(data))))
	binary.LittleEndian.PutUint32(s.h[12:], uint32(len(data)))
	if _, err := s.w.Write(s.h[:]); err != nil {
		return err
	}
	_, err := s.w.Write(data)
	return err
}

func (s *spoolWriter) close() error { return s.w.Flush() }

func (s *spoolWriter) remove() {
	s.f.Close()
	os.Remove(s.path)
}

// spoolRecord is one frame read back from a spool.
type spoolRecord struct {
	ts     int64
	length int
	data   []byte
	stream int // index into Capture.streams, or -1 for an annotation
	note   *Annotation
}

// spoolReader reads a spool file back through a small reorder window, so
// that frames whose kernel timestamps are slightly out of arrival order
// still come out sorted.
type spoolReader struct {
	r      *bufio.Reader
	f      *os.File
	stream int
	window []spoolRecord // sorted by ts
	eof    bool
}

const reorderWindow = 64

func openSpoolReader(path string, stream int) (*spoolReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &spoolReader{r: bufio.NewReaderSize(f, 1<<20), f: f, stream: stream}, nil
}

// next returns the earliest record of the window, refilling it; ok is
// false at the end.
func (r *spoolReader) next() (rec spoolRecord, ok bool, err error) {
	for !r.eof && len(r.window) < reorderWindow {
		var h [spoolHeader]byte
		if _, err := io.ReadFull(r.r, h[:]); err != nil {
			if errors.Is(err, io.EOF) {
				r.eof = true
				break
			}
			return rec, false, fmt.Errorf("spool %s: %w", r.f.Name(), err)
		}
		n := binary.LittleEndian.Uint32(h[12:])
		if n > CaptureSnapLen {
			return rec, false, fmt.Errorf("spool %s: record of %d bytes", r.f.Name(), n)
		}
		rec := spoolRecord{ts: int64(binary.LittleEndian.Uint64(h[0:])), length: int(binary.LittleEndian.Uint32(h[8:])),
			data: make([]byte, n), stream: r.stream}
		if _, err := io.ReadFull(r.r, rec.data); err != nil {
			return rec, false, fmt.Errorf("spool %s: %w", r.f.Name(), err)
		}
		i := sort.Search(len(r.window), func(i int) bool { return r.window[i].ts > rec.ts })
		r.window = append(r.window, spoolRecord{})
		copy(r.window[i+1:], r.window[i:])
		r.window[i] = rec
	}
	if len(r.window) == 0 {
		return rec, false, nil
	}
	rec = r.window[0]
	r.window = r.window[1:]
	return rec, true, nil
}

// recordHeap orders the heads of the streams by time; at equal times an
// "in" record (even stream index) comes before an "out" one.
type recordHeap []spoolRecord

func (h recordHeap) Len() int { return len(h) }
func (h recordHeap) Less(i, j int) bool {
	if h[i].ts != h[j].ts {
		return h[i].ts < h[j].ts
	}
	return h[i].stream < h[j].stream
}
func (h recordHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)   { *h = append(*h, x.(spoolRecord)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// WriteFile writes the capture as one pcapng file, artifact name in the
// run folder (atomically), after Stop. It has one interface per switch
// port, named "p<i>(h<i>)" with the port's interface name in its
// description, frames in time order, each with its direction in epb_flags
// (inbound = from the host, outbound = to the host). dir selects the frames:
// DirBoth writes both directions plus the annotations (as records with an
// opt_comment); DirIn writes each frame as its host sent it, DirOut as the
// switch delivered it: one view of each packet, for the spec checker.
// Each interface ends with a statistics block declaring the frames its
// port's sockets of dir lost (isb_ifdrop: the kernel's tp_drops and the
// frames it could not copy out), 0 for none, as dumpcap declares its own.
func (c *Capture) WriteFile(name string, dir Direction) error {
	c.mu.Lock()
	stopped, discarded := c.stopped, c.discarded
	notes := append([]Annotation(nil), c.notes...)
	c.mu.Unlock()
	if !stopped {
		return errors.New("harness: Capture.WriteFile before Stop")
	}
	if discarded {
		return errors.New("harness: Capture.WriteFile after Topology.Close (the frames are gone)")
	}
	ifaces := make([]pcap.Interface, len(c.topo.Hosts))
	for i, h := range c.topo.Hosts {
		ifaces[i] = pcap.Interface{Name: fmt.Sprintf("p%d(%s)", h.Index, h.Name), SnapLen: CaptureSnapLen,
			Description: fmt.Sprintf("switch port %s to host %s (%s, %s), run %s", h.Port, h.Name, h.Addr4, h.Addr6, c.topo.ID)}
	}
	return c.topo.Artifacts.Write(name, func(w io.Writer) error {
		pw, err := pcap.NewWriter(w, ifaces...)
		if err != nil {
			return err
		}
		if err := c.merge(dir, notes, func(rec spoolRecord) error {
			if rec.note != nil {
				host := rec.note.Host - 1
				if host < 0 || host >= len(ifaces) {
					host = 0
				}
				return pw.WritePacketDir(host, time.Unix(0, rec.ts), rec.data, rec.length, rec.note.Dir.pcap(), rec.note.Comment)
			}
			s := c.streams[rec.stream]
			return pw.WritePacketDir(s.host, time.Unix(0, rec.ts), rec.data, rec.length, s.dir.pcap(), "")
		}); err != nil {
			return err
		}
		// Each port declares the frames its sockets of dir lost (the
		// kernel's tp_drops, frames it could not copy out), so that a
		// check of the file knows what it misses (pcap.Stats.CaptureDrops).
		// The frames it could not copy out are said apart
		// (pcap.UnreadableComment): a larger buffer does not cure them.
		drops := make([]uint64, len(ifaces))
		unread := make([]uint64, len(ifaces))
		for _, s := range c.streams {
			if dir == DirBoth || s.dir == dir {
				u := s.readErrs.Load()
				drops[s.host] += s.drops + u
				unread[s.host] += u
			}
		}
		at := time.Now()
		if c.cut != 0 {
			at = time.Unix(0, c.cut)
		}
		for i, d := range drops {
			if err := pw.WriteDropStats(i, at, d, unread[i]); err != nil {
				return err
			}
		}
		return pw.Flush()
	})
}

// merge calls emit for every record of the streams of direction dir (and
// the annotations for DirBoth) in time order, up to the cut (see Stop).
func (c *Capture) merge(dir Direction, notes []Annotation, emit func(spoolRecord) error) error {
	var readers []*spoolReader
	defer func() {
		for _, r := range readers {
			r.f.Close()
		}
	}()
	h := &recordHeap{}
	for i, s := range c.streams {
		if dir != DirBoth && s.dir != dir {
			continue
		}
		r, err := openSpoolReader(s.spool.path, i)
		if err != nil {
			return err
		}
		readers = append(readers, r)
	}
	byStream := map[int]*spoolReader{}
	for _, r := range readers {
		byStream[r.stream] = r
		rec, ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Push(h, rec)
		}
	}
	if dir == DirBoth {
		for i := range notes {
			heap.Push(h, spoolRecord{ts: notes[i].Time.UnixNano(), length: len(notes[i].Frame), data: notes[i].Frame,
				stream: len(c.streams) + i, note: &notes[i]})
		}
	}
	for h.Len() > 0 {
		rec := heap.Pop(h).(spoolRecord)
		if c.cut != 0 && rec.ts > c.cut {
			break // time order: everything left is after the cut too
		}
		if err := emit(rec); err != nil {
			return err
		}
		if r := byStream[rec.stream]; r != nil {
			next, ok, err := r.next()
			if err != nil {
				return err
			}
			if ok {
				heap.Push(h, next)
			}
		}
	}
	return nil
}
