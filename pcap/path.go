package pcap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/homatest/homatest/spec"
)

// ErrNoHoma is returned for a readable capture without a single Homa packet.
var ErrNoHoma = errors.New("no Homa packets found (IP protocol 146 or 253, or TCP with the hijack marks)")

// streams holds the bytes of captures that can be read only once:
// standard input ("-") and paths that are not regular files (a named
// pipe, a process substitution such as /dev/fd/63, /dev/stdin on a pipe).
// Each is read into memory on first use, so that it can be read again
// (profile detection and the capture-point plan, then checking; opening a
// named pipe a second time would wait for a writer forever); streamsMu
// guards it (check reads files in parallel).
var (
	streams   = map[string][]byte{}
	streamsMu sync.Mutex
)

// stream returns the bytes of the capture at path when it can be read
// only once (see streams), reading it on first use; ok is false for a
// regular file, or a path Stat cannot read (Open then says why).
func stream(path string) (data []byte, ok bool, err error) {
	if path != "-" {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
			return nil, false, nil
		}
	}
	streamsMu.Lock()
	defer streamsMu.Unlock()
	if b, ok := streams[path]; ok {
		return b, true, nil
	}
	var b []byte
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, true, fmt.Errorf("read %s: %w", streamName(path), err)
	}
	streams[path] = b
	return b, true, nil
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
// pipe, /dev/fd/N) are read into memory on first use so that they can be
// read again. Errors are Open's (OpenError renders them for a user).
func OpenPath(path string, o ReaderOptions) (*Reader, error) {
	data, ok, err := stream(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Open(path, o)
	}
	r, err := NewReader(bytes.NewReader(data), o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", streamName(path), err)
	}
	return r, nil
}

// OpenRawPath opens the bytes of the capture at path as OpenPath reads
// them (standard input and other streams: as read so far).
func OpenRawPath(path string) (io.ReadCloser, error) {
	data, ok, err := stream(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return os.Open(path)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
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

func (e *DamagedError) Error() string {
	if errors.Is(e.Err, ErrConcatenated) {
		return fmt.Sprintf("%s: read up to frame %d, %v", e.Path, e.Frames, ErrConcatenated)
	}
	return fmt.Sprintf("%s: capture damaged or cut short after frame %d: %v", e.Path, e.Frames, e.Err)
}

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
// in capture order (o.IPv6PriorityShift as found by PrescanPath). It
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
	if err := r.eachEvent(context.Background(), frame, fn); err != nil {
		return r.Stats(), &DamagedError{Path: path, Frames: r.Stats().Frames, Err: err}
	}
	st := r.Stats()
	if st.Homa == 0 {
		return st, fmt.Errorf("%s: %w", path, ErrNoHoma)
	}
	return st, nil
}

// DetectPathShift returns the IPv6 priority shift of the capture at path
// (0 if it cannot tell).
func DetectPathShift(path string, o ReaderOptions) uint8 {
	r, err := OpenPath(path, o)
	if err != nil {
		return 0
	}
	defer r.Close()
	s, _ := DetectIPv6Shift(r) // a damaged file fails later with a better message
	return s
}

// PrescanPath reads the first frames of the capture at path once
// (DetectFormat) and returns the profile of the format they suggest
// (spec.ProfileForWire) and the IPv6 priority shift (0 if it cannot
// tell). A damaged file is not an error here; reading it for real
// reports it. A capture in HomaModule's format before 263f8c2 is
// (ErrPre2024Format): judging it would flag every packet.
func PrescanPath(path string) (profile string, shift uint8, err error) {
	r, err := OpenPath(path, ReaderOptions{})
	if err != nil {
		return "", 0, OpenError(path, err)
	}
	defer r.Close()
	v, shift, err := detectFormat(r)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	return spec.ProfileForWire(v), shift, nil
}

// SentView returns the reader options that read each packet of the
// capture at path once: for a pcapng holding both directions of switch
// ports (epb_flags, as homatest run and scenario run write capture.pcapng),
// only the inbound frames (each packet as its host sent it: what
// sent.pcapng holds); o unchanged otherwise. The bool reports whether it
// filtered.
func SentView(path string, o ReaderOptions) (ReaderOptions, bool) {
	r, err := OpenPath(path, ReaderOptions{})
	if err != nil {
		return o, false
	}
	defer r.Close()
	in, out := false, false
	for !(in && out) {
		f, err := r.Next()
		if err != nil || f.Number > DetectFrames {
			break
		}
		in = in || f.Direction == DirInbound
		out = out || f.Direction == DirOutbound
	}
	if in && out {
		o.Direction = DirInbound
		return o, true
	}
	return o, false
}
