package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/homatest/homatest/internal/nsexec"
	"github.com/homatest/homatest/internal/timescale"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/homatest/homatest/pcap"
)

// Capture settings (see ../shared/platform.md §3 for why).
const (
	// CaptureSnapLen is the capture length in bytes: whole frames, GSO
	// frames included (a veth's gso_max_size is 64 KiB; a longer frame is
	// cut, its length kept). It sets the capture ring's block size
	// (afpacket.BlockSize: 128 KiB).
	CaptureSnapLen = 65536 + 512
	// CaptureBufferBytes is each capture socket's receive ring
	// (pcap.LiveOptions.BufferBytes): 128 blocks of 128 KiB, about 10,000
	// full-size frames, or 12.8 s of a trickle whose every frame the
	// ring's retire timeout closes a block on (with a socket's default
	// buffer pcapgo dropped 5-14 % at 50 kpps; an 8 MiB buffer dropped
	// none). 32 blocks of 512 KiB (a 256 KiB snap length) lost 1,048
	// frames of a lab run's busiest port while the guest's reader stalled.
	CaptureBufferBytes = 16 << 20
)

// Direction selects frames by their direction at a switch port.
type Direction uint8

// Directions. DirIn is a frame as its host sent it (arriving at the port
// from the host, pcapng "inbound"); DirOut is a frame as the switch
// delivers it to the host (leaving the port, pcapng "outbound").
const (
	DirBoth Direction = iota
	DirIn
	DirOut
)

// String returns "both", "in" or "out".
func (d Direction) String() string {
	switch d {
	case DirIn:
		return "in"
	case DirOut:
		return "out"
	}
	return "both"
}

func (d Direction) pcap() pcap.Direction {
	switch d {
	case DirIn:
		return pcap.DirInbound
	case DirOut:
		return pcap.DirOutbound
	}
	return pcap.DirUnknown
}

// Capture records every switch port of a topology in both directions, with
// one AF_PACKET socket (pcap.OpenLive: a receive ring the kernel fills as
// frames pass the port, kernel ns timestamps) per port and direction, the
// direction chosen by a BPF filter on the packet type (PACKET_OUTGOING =
// out). Frames are spooled to temporary files in
// the run folder (os.TempDir when it is on 9p: newSpool) and merged in
// time order by Stop.
type Capture struct {
	topo      *Topology
	streams   []*stream
	notes     []Annotation
	op        sync.Mutex // held by Stop and discard for their whole run
	mu        sync.Mutex // guards the fields below and notes
	stopped   bool
	discarded bool
	kept      bool  // the spools are kept (keepSpools): discard leaves them
	cut       int64 // Unix ns; records after it are left out (0: none)
	stats     CaptureStats
	err       error
}

// CaptureSettle is how long Stop lets frames stamped before its cut reach
// the capture sockets: the kernel stamps a received frame when it enters
// the backlog and hands it to AF_PACKET in a later softirq, which a loaded
// machine can delay by milliseconds.
const CaptureSettle = 50 * time.Millisecond

// Annotation is an extra record for the merged capture, e.g. a frame the
// netem switch dropped with the reason. Annotations appear only in the
// two-direction file (DirBoth): the one-direction views hold only what
// was really seen on the wire.
type Annotation struct {
	// Time of the event.
	Time time.Time
	// Host is the index (1..N) of the port's host.
	Host int
	// Dir is the direction at that port (DirBoth: unknown).
	Dir Direction
	// Frame is the Ethernet frame, if any (may be empty).
	Frame []byte
	// Comment is stored as the record's opt_comment.
	Comment string
}

// PortStats counts one switch port's capture.
type PortStats struct {
	// Port is the interface name in the switch namespace; Host the host's
	// name ("h1").
	Port, Host string
	// In and Out are the frames captured from and to the host.
	In, Out uint64
	// KernelDrops is the frames the kernel dropped because a capture
	// socket's ring was full (PACKET_STATISTICS tp_drops, both
	// directions), plus those it had queued that the socket's reader had
	// not read when Stop's deadline passed.
	KernelDrops uint64
	// ReadErrors is the ring blocks that could not be read
	// (pcap.FrameError; both directions), FirstReadError the first one.
	ReadErrors     uint64
	FirstReadError string
}

// CaptureStats counts a whole capture.
type CaptureStats struct {
	// Ports are per switch port, in host order.
	Ports []PortStats
	// Captured is the frames recorded (both directions, all ports).
	Captured uint64
	// KernelDrops is the sum of the ports' KernelDrops: non-zero means the
	// capture is incomplete.
	KernelDrops uint64
	// ReadErrors is the sum of the ports' ReadErrors: ring blocks whose
	// frames are missing from the capture because they could not be read
	// (the capture goes on; those frames count as KernelDrops).
	ReadErrors uint64
	// Cut is the instant every file of the capture ends at (see Stop).
	Cut time.Time
}

// StartCapture opens the capture sockets on every switch port and starts
// recording. Frames are recorded from when StartCapture returns. Stop it
// with Stop; Topology.Close stops and discards a capture still running.
func (t *Topology) StartCapture(ctx context.Context) (*Capture, error) {
	c := &Capture{topo: t}
	t.mu.Lock()
	t.captures = append(t.captures, c)
	t.mu.Unlock()
	for i, port := range t.Ports {
		for _, dir := range []Direction{DirIn, DirOut} {
			if err := ctx.Err(); err != nil {
				c.discard()
				return nil, err
			}
			s, err := openStream(t, i, port, dir)
			if err != nil {
				c.discard()
				return nil, fmt.Errorf("harness: capture %s %s: %w", port, dir, err)
			}
			c.streams = append(c.streams, s)
			go s.run()
		}
	}
	return c, nil
}

// Annotate adds a record to the merged capture (see Annotation). Safe for
// concurrent use; annotations added after Stop are kept for WriteFile.
func (c *Capture) Annotate(a Annotation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, a)
}

// Stop stops recording: it reads what the kernel has queued on each
// socket, closes the sockets, writes the merged two-direction capture to
// the run folder as "capture.pcapng" (see WriteFile) and returns the
// counts. Later calls return the same result.
//
// Every file ends at one cut, the instant Stop was called: the sockets
// stop one after another while hosts still talk (a server repeats
// NEED_ACK until it is acknowledged), so without a common end a host's
// view could hold its answer (as sent) but not the packet it answered (as
// delivered), and the checker would charge the host for it. Frames
// stamped after the cut are left out of every file (still counted in
// Captured); Stop waits CaptureSettle for the ones stamped before it.
func (c *Capture) Stop() (CaptureStats, error) {
	c.op.Lock()
	defer c.op.Unlock()
	c.mu.Lock()
	if c.stopped {
		defer c.mu.Unlock()
		if c.discarded && c.err == nil {
			return c.stats, errors.New("harness: capture discarded by Topology.Close before Stop")
		}
		return c.stats, c.err
	}
	c.stopped = true
	cut := time.Now()
	c.cut = cut.UnixNano()
	c.mu.Unlock()
	time.Sleep(CaptureSettle)
	var wg sync.WaitGroup
	for _, s := range c.streams {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop() }()
	}
	wg.Wait()
	st := CaptureStats{Cut: cut}
	var errs []error
	for _, s := range c.streams {
		if s.err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.port, s.dir, s.err))
		}
		if s.dir == DirIn {
			st.Ports = append(st.Ports, PortStats{Port: s.port, Host: c.topo.Hosts[s.host].Name})
		}
		ps := &st.Ports[len(st.Ports)-1]
		if s.dir == DirIn {
			ps.In = s.n.Load()
		} else {
			ps.Out = s.n.Load()
		}
		ps.KernelDrops += s.drops
		ps.ReadErrors += s.readErrs.Load()
		if ps.FirstReadError == "" {
			ps.FirstReadError = s.firstErr
		}
		st.Captured += s.n.Load()
		st.KernelDrops += s.drops
		st.ReadErrors += s.readErrs.Load()
	}
	err := errors.Join(errs...)
	if err == nil {
		err = c.WriteFile("capture.pcapng", DirBoth)
	}
	if err != nil {
		// The capture is lost: its spools are what is left to find why,
		// so they are kept (discard leaves them) under names the run
		// folder's cleanup of temporary files does not match.
		err = fmt.Errorf("capture.pcapng lost: %w; %s", err, c.keepSpools())
	}
	c.mu.Lock()
	c.stats, c.err = st, err
	c.mu.Unlock()
	return st, err
}

// KeptSpoolPrefix starts the names of the spool files a Capture keeps in
// the run folder when its capture.pcapng could not be written (Stop):
// KeptSpoolPrefix + "<port>-<direction>.spool", in the spool format
// (spool.go), for diagnosis.
const KeptSpoolPrefix = "lost-capture-"

// keepSpools moves the streams' spools to KeptSpoolPrefix names in the run
// folder, marks them kept (discard leaves them), and says where they are.
func (c *Capture) keepSpools() string {
	var kept []string
	var errs []error
	for _, s := range c.streams {
		if s.spool == nil {
			continue
		}
		name := s.spool.path
		to := c.topo.Artifacts.Path(fmt.Sprintf("%s%s-%s.spool", KeptSpoolPrefix, s.port, s.dir))
		if err := moveFile(name, to); err != nil {
			errs = append(errs, err)
			to = name
		}
		s.spool.path = to
		kept = append(kept, to)
	}
	c.mu.Lock()
	c.kept = true
	c.mu.Unlock()
	if len(kept) == 0 {
		return "no spool to keep"
	}
	msg := fmt.Sprintf("its %d spools are kept for diagnosis in %s (%s*.spool)", len(kept), filepath.Dir(kept[0]), KeptSpoolPrefix)
	if err := errors.Join(errs...); err != nil {
		msg += fmt.Sprintf(" (renaming: %v)", err)
	}
	return msg
}

// moveFile renames from to to, copying it across file systems (a spool
// in os.TempDir, see newSpool).
func moveFile(from, to string) error {
	err := os.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := atomicfile.Write(to, func(w io.Writer) error { _, err := io.Copy(w, src); return err }); err != nil {
		return err
	}
	return os.Remove(from)
}

// discard stops the streams and removes their spool files (closes them
// only, when keepSpools kept them).
func (c *Capture) discard() error {
	c.op.Lock()
	defer c.op.Unlock()
	c.mu.Lock()
	stopped, discarded, kept := c.stopped, c.discarded, c.kept
	c.stopped, c.discarded = true, true
	c.mu.Unlock()
	for _, s := range c.streams {
		if !stopped {
			s.stop()
		}
		switch {
		case discarded:
		case kept:
			s.spool.f.Close()
		default:
			s.removeSpool()
		}
	}
	return nil
}

// closeCaptures is the topology's teardown step for captures.
func (t *Topology) closeCaptures() error {
	t.mu.Lock()
	cs := t.captures
	t.captures = nil
	t.mu.Unlock()
	for _, c := range cs {
		c.discard()
	}
	return nil
}

// stream is one capture socket: one port, one direction.
type stream struct {
	host  int // index into Topology.Hosts
	port  string
	dir   Direction
	live  liveCapture
	spool *spoolWriter

	n        atomic.Uint64 // frames written to the spool
	readErrs atomic.Uint64 // frames that could not be read (pcap.FrameError)
	firstErr string        // the first of them (written by run only)
	target   atomic.Int64  // when ≥ 0: stop once n reaches it
	done     chan struct{}
	drops    uint64
	packets  uint64 // tp_packets (queued + dropped) so far
	err      error
}

// liveCapture is what a stream reads: a pcap.Live (tests: a fake).
type liveCapture interface {
	ReadFrame() ([]byte, time.Time, int, error)
	SetReadDeadline(time.Time) error
	Stats() (packets, drops uint64, err error)
	Close() error
}

// openStream opens the capture socket for port (of host index i) and
// direction dir inside the switch namespace, and its spool file.
func openStream(t *Topology, i int, port string, dir Direction) (*stream, error) {
	s := &stream{host: i, port: port, dir: dir, done: make(chan struct{})}
	s.target.Store(-1)
	err := nsexec.Do(t.Switch, func() (err error) {
		var l *pcap.Live
		l, err = pcap.OpenLive(port, pcap.LiveOptions{SnapLen: CaptureSnapLen, BufferBytes: CaptureBufferBytes, Direction: dir.pcap()})
		if err == nil {
			s.live = l
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.spool, err = newSpool(t.Artifacts, fmt.Sprintf(".capture-%s-%s.spool", port, dir)); err != nil {
		s.live.Close()
		return nil, err
	}
	return s, nil
}

// readStats adds the kernel's counters (reset by each read) to s.
func (s *stream) readStats() {
	if p, d, err := s.live.Stats(); err == nil {
		s.packets += p
		s.drops += d
	}
}

// run reads frames into the spool until stopped.
func (s *stream) run() {
	defer close(s.done)
	run := 0 // consecutive frame errors
	for {
		data, ts, length, err := s.live.ReadFrame()
		var fe *pcap.FrameError
		if errors.As(err, &fe) && run < maxFrameErrorRun {
			// One unreadable frame: counted, and the capture goes on.
			run++
			if s.readErrs.Add(1) == 1 {
				s.firstErr = err.Error()
			}
			if t := s.target.Load(); t >= 0 && int64(s.n.Load()+s.readErrs.Load()) >= t {
				return
			}
			continue
		}
		if err != nil {
			if s.target.Load() < 0 { // not stopping
				s.err = err
			}
			return
		}
		run = 0
		if werr := s.spool.write(ts, data, length); werr != nil {
			s.err = werr
			return
		}
		n := s.n.Add(1)
		if t := s.target.Load(); t >= 0 && int64(n+s.readErrs.Load()) >= t {
			return
		}
	}
}

// maxFrameErrorRun is how many unreadable frames in a row a stream skips
// before it gives up (a socket that fails every read is broken, not
// handed one bad frame).
const maxFrameErrorRun = 10000

// stop makes run return once it has read every frame the kernel queued
// before now (at most 2 s, times HOMATEST_TIME_SCALE, later), then closes
// the socket. Queued frames still unread then count as kernel drops: the
// files declare them, so that the checker knows what they miss (a stream
// 2,900 frames behind on a loaded emulated machine lost them silently).
func (s *stream) stop() {
	s.readStats()
	queued := int64(s.packets - s.drops)
	s.target.Store(queued)
	if int64(s.n.Load()+s.readErrs.Load()) >= queued {
		s.live.SetReadDeadline(time.Now()) // wake a blocked read
	} else {
		s.live.SetReadDeadline(time.Now().Add(timescale.D(2 * time.Second)))
	}
	<-s.done
	if unread := queued - int64(s.n.Load()+s.readErrs.Load()); unread > 0 {
		s.drops += uint64(unread)
	}
	s.readStats()
	s.live.Close()
	if err := s.spool.close(); err != nil && s.err == nil {
		s.err = err
	}
}

func (s *stream) removeSpool() {
	if s.spool != nil {
		s.spool.remove()
	}
}
