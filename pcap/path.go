package pcap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/spec"
)

// ErrNoHoma is returned for a readable capture without a single Homa packet.
var ErrNoHoma = errors.New("no Homa packets found (IP protocol 146 or 253, or TCP with the hijack marks)")

// streams holds the captures that can be read only once: standard
// input ("-") and paths that are not regular files (a named pipe, a
// process substitution such as /dev/fd/63, /dev/stdin on a pipe, a
// device). Each is spooled on first use (see spool) so that it can be
// read again (profile detection and the capture-point plan, then
// checking; opening a named pipe a second time would wait for a writer
// forever); streamsMu guards it (check reads files in parallel).
var (
	streams   = map[string]*spool{}
	streamsMu sync.Mutex
)

// IsStream reports whether the capture at path can be read only once,
// as it comes ("-", standard input, a named pipe, /dev/fd/N, a device):
// OpenPath spools it, and a reader that waits for its end waits for the
// writer (tcpdump -w -) to stop. False for a regular file or a path Stat
// cannot read.
func IsStream(path string) bool {
	if path == "-" {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}

// stream returns the spool of the capture at path when it can be read
// only once (see streams), starting it on first use; ok is false for a
// regular file, or a path Stat cannot read (Open then says why).
func stream(path string) (sp *spool, ok bool, err error) {
	if !IsStream(path) {
		return nil, false, nil
	}
	streamsMu.Lock()
	defer streamsMu.Unlock()
	if sp, ok := streams[path]; ok {
		return sp, true, nil
	}
	// The open is the spool's: opening a named pipe waits for a writer,
	// maybe forever, and a reader must be able to give up on it when its
	// context ends (SIGINT) as on a read that waits.
	open := func() (*os.File, error) { return os.Open(path) }
	if path == "-" {
		open = func() (*os.File, error) { return os.Stdin, nil }
	}
	sp, err = newSpool(open)
	if err != nil {
		return nil, true, err
	}
	streams[path] = sp
	return sp, true, nil
}

// spool keeps what has been read of a stream in an unlinked temporary
// file, so that memory stays bounded however long the stream is (the
// disk holds it instead) and every reader of the stream (newReader)
// reads it from its start: a goroutine copies the stream to the file as
// it comes, and a reader that has caught up waits for more, or for its
// context to end. It stops at the stream's end, at a read error, or
// after the first 4 bytes when they are no capture's magic number
// (/dev/zero, /dev/urandom: NewReader says so at once, and nothing more
// is read).
type spool struct {
	file *os.File // unlinked: removed however the process ends
	mu   sync.Mutex
	n    int64         // bytes in file
	done bool          // the copy has stopped; err says why (nil: EOF)
	err  error         // the stream's read error
	more chan struct{} // closed, and replaced, when n or done changes
}

// newSpool starts spooling the file open returns (which it closes at
// the end, unless it is standard input); open runs in the copying
// goroutine, and its error is the stream's.
func newSpool(open func() (*os.File, error)) (*spool, error) {
	f, err := os.CreateTemp("", "homatest-stream-*")
	if err != nil {
		return nil, tempDirError(err)
	}
	os.Remove(f.Name())
	sp := &spool{file: f, more: make(chan struct{})}
	go func() {
		src, err := open()
		if err != nil {
			sp.grow(0, true, err)
			return
		}
		sp.copy(src)
	}()
	return sp, nil
}

// tempDirError renders err, os.CreateTemp's failure to create a spool
// file, as what to fix: the directory, named as $TMPDIR, that does not
// exist or cannot be written. It does not wrap the *fs.PathError, which
// OpenError would take for the capture's own.
func tempDirError(err error) error {
	dir := "TMPDIR=" + os.TempDir()
	if os.Getenv("TMPDIR") == "" {
		dir = os.TempDir() + " (TMPDIR unset)"
	}
	why := ": " + err.Error()
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = " does not exist"
	case errors.As(err, &pe):
		why = ": " + pe.Err.Error()
	}
	return fmt.Errorf("%s%s (a capture read from a pipe or device is spooled to a temporary file there): set TMPDIR to a writable directory", dir, why)
}

// copy appends src to the file until it ends (see spool).
func (sp *spool) copy(src *os.File) {
	if src != os.Stdin {
		defer src.Close()
	}
	buf := make([]byte, 1<<16)
	var err error
	for {
		var k int
		k, err = src.Read(buf)
		if k > 0 {
			if _, werr := sp.file.WriteAt(buf[:k], sp.size()); werr != nil {
				err = fmt.Errorf("spool to a temporary file: %w", werr)
				break
			}
			sp.grow(int64(k), false, nil)
			if sp.size() >= 4 && sp.size()-int64(k) < 4 && !sp.magicOK() {
				err = io.EOF // NewReader rejects it on its first 4 bytes
				break
			}
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	sp.grow(0, true, err)
}

// magicOK reports whether the file starts with a pcap or pcapng magic
// number (as NewReader reads it).
func (sp *spool) magicOK() bool {
	var m [4]byte
	if _, err := sp.file.ReadAt(m[:], 0); err != nil {
		return false
	}
	return knownMagic(m)
}

func (sp *spool) size() int64 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.n
}

// grow notes k more bytes in the file (and the end, with done) and wakes
// the waiting readers.
func (sp *spool) grow(k int64, done bool, err error) {
	sp.mu.Lock()
	sp.n += k
	sp.done, sp.err = done, err
	close(sp.more)
	sp.more = make(chan struct{})
	sp.mu.Unlock()
}

// newReader returns a reader of the stream from its start; a Read that
// has caught up with the copy waits for more, or returns ctx's error
// once ctx has ended (nil: never).
func (sp *spool) newReader(ctx context.Context) io.Reader {
	if ctx == nil {
		ctx = context.Background()
	}
	return &spoolReader{sp: sp, ctx: ctx}
}

type spoolReader struct {
	sp  *spool
	ctx context.Context
	off int64
}

func (r *spoolReader) Read(p []byte) (int, error) {
	for {
		r.sp.mu.Lock()
		n, done, err, more := r.sp.n, r.sp.done, r.sp.err, r.sp.more
		r.sp.mu.Unlock()
		if r.off < n {
			k, rerr := r.sp.file.ReadAt(p[:min(int64(len(p)), n-r.off)], r.off)
			r.off += int64(k)
			if k > 0 {
				return k, nil
			}
			return 0, rerr
		}
		if done {
			if err != nil {
				return 0, err
			}
			return 0, io.EOF
		}
		select {
		case <-more:
		case <-r.ctx.Done():
			return 0, context.Cause(r.ctx)
		}
	}
}

// streamName names path in errors: "standard input" for "-".
func streamName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// OpenPath opens the capture at path for reading; "-" is standard input.
// Standard input and other paths that can be read only once (a named
// pipe, /dev/fd/N, a device) are spooled to an unlinked temporary file
// as they are read (see spool), so that they can be read again with
// bounded memory; a read of one waiting for more returns once
// o.Context has ended. Errors are Open's (OpenError renders them for a
// user).
func OpenPath(path string, o ReaderOptions) (*Reader, error) {
	sp, ok, err := stream(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Open(path, o)
	}
	r, err := NewReader(sp.newReader(o.Context), o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", streamName(path), err)
	}
	// The spool reads from its start again: a second section is compared
	// with the first as in a file.
	r.raw = func() (io.ReadCloser, error) { return io.NopCloser(sp.newReader(o.Context)), nil }
	r.sec.open = func() (*Reader, error) {
		s, err := NewReader(sp.newReader(o.Context), ReaderOptions{})
		if err == nil {
			s.raw = r.raw // its probes read on past a cut section too
		}
		return s, err
	}
	return r, nil
}

// OpenRawPath opens the bytes of the capture at path as OpenPath reads
// them (standard input and other streams: from their spool).
func OpenRawPath(path string) (io.ReadCloser, error) {
	sp, ok, err := stream(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return os.Open(path)
	}
	return io.NopCloser(sp.newReader(nil)), nil
}

// OpenError renders an Open failure of the capture name as one line that
// says what to fix.
func OpenError(name string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("cannot open capture %s: %v", name, pe.Err)
	case errors.Is(err, ErrFormat):
		return fmt.Errorf("%v (want a pcap or pcapng capture, e.g. from tcpdump -w)", err)
	case errors.Is(err, ErrPcapngVersion):
		return err // it names the capture and says what is wrong
	default:
		return fmt.Errorf("cannot read capture %s: %v", name, err)
	}
}

// DamagedError is a capture readable only up to a damaged or cut-off frame
// (tcpdump killed mid-write, a full disk): the Frames frames before it were
// read and their events delivered, so a caller can report on them and
// say where the file stops.
type DamagedError struct {
	Path   string
	Frames int   // frames read before the damage
	Err    error // the reader's error, naming the frame it failed on
}

// Error is the one line every command (decode, check, rpcs, plot) gives
// for the damage: where the file stops, what was read, and how to get a
// whole capture; the advice for a file cut short (copy again, stop
// tcpdump with Ctrl-C) only where it ends mid-record (io.ErrUnexpectedEOF),
// "damaged: <what>" for a malformed block.
func (e *DamagedError) Error() string {
	switch {
	case errors.Is(e.Err, ErrConcatenated):
		return fmt.Sprintf("%s: read up to frame %d, %v", e.Path, e.Frames, ErrConcatenated)
	case errors.Is(e.Err, ErrPcapngVersion):
		return fmt.Sprintf("%s: read up to frame %d, where %v", e.Path, e.Frames, errNgVersionStarts)
	}
	if !errors.Is(e.Err, io.ErrUnexpectedEOF) {
		// A malformed block or record (an interface id no IDB declared,
		// a timestamp resolution out of range), not a file that ends
		// early: copying it again or stopping tcpdump cleanly would not
		// help.
		where := fmt.Sprintf("after frame %d; only the frames before it were read", e.Frames)
		if e.Frames == 0 {
			where = "at its first frame; no frame could be read"
		}
		return fmt.Sprintf("%s: capture damaged: %v (%s); the file is malformed there: capture again, or fix the program that wrote it", e.Path, e.Err, where)
	}
	where := fmt.Sprintf("after frame %d (%v): only the frames before it were read", e.Frames, e.Err)
	if e.Frames == 0 {
		where = fmt.Sprintf("at its first frame (%v): no frame could be read", e.Err)
	}
	return fmt.Sprintf("%s: capture damaged or cut short %s; %s", e.Path, where, damagedFix)
}

// damagedFix says how to get a capture whole: what cuts one short is a
// partial copy, or tcpdump killed mid-write or out of disk.
const damagedFix = "to read it whole, copy the file again, or capture again and stop tcpdump with Ctrl-C (not kill -9) on a disk with room"

func (e *DamagedError) Unwrap() error { return e.Err }

// Damage sorts the stats and error a read returned: nil, or a damaged file
// with Homa frames before the damage (their report is worth giving), comes
// back as the damage (nil when none) and no error; anything else, a file
// damaged before any Homa frame included, as the error.
func Damage(st Stats, err error) (*DamagedError, error) {
	var d *DamagedError
	if err == nil || errors.As(err, &d) && st.Homa > 0 {
		return d, nil
	}
	return nil, err
}

// StreamPath reads the capture at path and calls fn for every spec event,
// in capture order (o.IPv6HostShifts as found by PrescanPath). It
// returns the reader's stats and a *DamagedError for a damaged file (fn
// has seen every event before the damage), or ErrNoHoma.
func StreamPath(path string, o ReaderOptions, fn func(*spec.Event)) (Stats, error) {
	return StreamPathFrames(path, o, nil, fn)
}

// StreamPathFrames is StreamPath that also passes each frame, with its
// reader (for Reader.InterfaceName), to frame (when not nil) before fn
// sees the frame's events: what a caller learns of the frames comes from
// the same single pass. frame may run in another goroutine than fn (see
// Reader.EachEvent): what it records is the caller's to read once
// StreamPathFrames has returned.
func StreamPathFrames(path string, o ReaderOptions, frame func(*Reader, *Frame), fn func(*spec.Event)) (Stats, error) {
	r, err := OpenPath(path, o)
	if err != nil {
		return Stats{}, OpenError(path, err)
	}
	defer r.Close()
	if err := r.eachEvent(r.ctx(), frame, fn); err != nil {
		return r.Stats(), &DamagedError{Path: path, Frames: r.Stats().Frames, Err: err}
	}
	st := r.Stats()
	if st.Homa == 0 {
		return st, NoHomaError(path, st)
	}
	return st, nil
}

// NoHomaError is ErrNoHoma for the capture at path, read with stats st:
// it names the link types the reader could not peel when st has frames of
// them (the Homa packets may be there), and says so of frames the snap
// length cut before their Homa header (Stats.CutBeforeHomaHint).
func NoHomaError(path string, st Stats) error {
	if h := st.CutBeforeHomaHint(); h != "" {
		return &cutBeforeHomaError{path: path, hint: h}
	}
	if n := st.UnreadLink(); n > 0 {
		var kinds []string
		for k := range st.Other {
			if strings.HasPrefix(k, unsupportedLink) {
				kinds = append(kinds, strings.TrimPrefix(k, unsupportedLink))
			}
		}
		sort.Strings(kinds)
		return fmt.Errorf("%s: %w; %s on link types homatest cannot read (%s): capture on an Ethernet, cooked (SLL, SLL2), raw IP or loopback interface",
			path, ErrNoHoma, plural.Of(n, "frame is", "frames are"), strings.Join(kinds, ", "))
	}
	return fmt.Errorf("%s: %w", path, ErrNoHoma)
}

// cutBeforeHomaError is ErrNoHoma for a capture whose snap length cut
// frames before their Homa header: no Homa header could be read, which
// is not the same as none being there.
type cutBeforeHomaError struct{ path, hint string }

func (e *cutBeforeHomaError) Error() string {
	return e.path + ": no Homa header could be read: " + e.hint
}

// Unwrap returns ErrNoHoma.
func (e *cutBeforeHomaError) Unwrap() error { return ErrNoHoma }

// DetectPathShifts returns the IPv6 priority shifts of the hosts of the
// capture at path (DetectIPv6Shifts; nil if it cannot be read).
func DetectPathShifts(path string, o ReaderOptions) IPv6Shifts {
	r, err := OpenPath(path, o)
	if err != nil {
		return nil
	}
	defer r.Close()
	s, _ := DetectIPv6Shifts(r) // a damaged file fails later with a better message
	return s
}

// PrescanPath reads the first frames of the capture at path once,
// stopping with ctx's error once ctx has ended
// (DetectFormat) and returns the profile of the format they suggest
// (spec.ProfileForWire) and the IPv6 priority shifts of the hosts that
// show theirs (for ReaderOptions.IPv6HostShifts). A damaged file is not an error here; reading it for real
// reports it. A capture in HomaModule's format before 263f8c2 is
// (ErrPre2024Format): judging it would flag every packet.
func PrescanPath(ctx context.Context, path string) (profile string, shifts IPv6Shifts, err error) {
	r, err := OpenPath(path, ReaderOptions{Context: ctx})
	if err != nil {
		return "", nil, OpenError(path, err)
	}
	defer r.Close()
	v, shifts, err := detectFormat(r)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	return spec.ProfileForWire(v), shifts, nil
}

// SentView returns the reader options that read each packet of the
// capture at path once: for a pcapng holding both directions of switch
// ports (epb_flags, as homatest run and scenario run write capture.pcapng),
// only the inbound frames (each packet as its host sent it: what
// sent.pcapng holds); o unchanged otherwise. The bool reports whether it
// filtered. A stream (IsStream) is judged by its frames up to the first
// without a direction, so that a live capture without them (tcpdump -w -)
// is not held back until DetectFrames frames came.
func SentView(path string, o ReaderOptions) (ReaderOptions, bool) {
	live := IsStream(path)
	r, err := OpenPath(path, ReaderOptions{Context: o.Context})
	if err != nil {
		return o, false
	}
	defer r.Close()
	r.limit = DetectFrames
	in, out := false, false
	for !(in && out) {
		f, err := r.Next()
		if err != nil || f.Number > DetectFrames {
			break
		}
		in = in || f.Direction == DirInbound
		out = out || f.Direction == DirOutbound
		if live && f.Direction != DirInbound && f.Direction != DirOutbound {
			break
		}
	}
	if in && out {
		o.Direction = DirInbound
		return o, true
	}
	return o, false
}
