package pcap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// ReadEvents reads every spec event of the capture at path (EachEvent),
// each with its own copy of the packet bytes, so the events can be kept,
// sorted and merged (spec.Judge.Hosts). Errors: the file cannot be
// opened, or is damaged or cut (the error names the file).
func ReadEvents(path string, o ReaderOptions) ([]spec.Event, error) {
	return ReadEventsContext(context.Background(), path, o)
}

// ReadEventsContext is ReadEvents that stops with ctx's error (wrapped,
// naming the file) once ctx has ended: a run's check of a capture of
// millions of packets stops at a Ctrl-C instead of reading on.
func ReadEventsContext(ctx context.Context, path string, o ReaderOptions) ([]spec.Event, error) {
	r, err := OpenPath(path, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []spec.Event
	var own EventOwner
	err = r.eachEvent(ctx, nil, func(e *spec.Event) {
		c := *e
		own.Own(&c)
		out = append(out, c)
	})
	if err != nil {
		return out, fmt.Errorf("reading %s: %w", path, err)
	}
	return out, nil
}

// OwnEvent gives e its own copy of the packet bytes (and the DATA
// segment's Payload) it views, re-decoded
// with the packet's version and wire length (so a frame the snap length
// cut stays cut), so that e outlives the Reader's buffer: for events that
// are kept, sorted and merged (ReadEvents, check's host views). Events
// that did not decode (but for the readable part of a header the snap
// length cut, which keeps its Err), and ICMP events, are left as they are.
// To own many events, use an EventOwner: a frame's segments then share
// one copy.
func OwnEvent(e *spec.Event) {
	var o EventOwner
	o.Own(e)
}

// EventOwner is OwnEvent for a run of events: consecutive events of one
// frame (Frame.Events: a GSO frame's DATA segments, which all view the
// frame's packet) share one copy of its packet, where OwnEvent copies and
// decodes it for each (a 64 KB frame of 45 segments in a run's capture
// cost 2.9 MB of copies; owning was a third of check's CPU on such a
// capture). The zero value is ready.
type EventOwner struct {
	frame int
	src   []byte // the bytes last owned, as the reader had them
	cp    []byte // their copy, which pkt views
	pkt   wire.Packet
	err   error
}

// Own gives e its own copy of what it views (OwnEvent).
func (o *EventOwner) Own(e *spec.Event) {
	partial := e.Packet.Partial()
	if e.Err != nil && !partial || e.ICMP != nil {
		return
	}
	pb := e.Packet.Bytes()
	if len(pb) > 0 && len(o.src) == len(pb) && e.Frame == o.frame && &o.src[0] == &pb[0] && o.pkt.Partial() == partial {
		e.Packet = o.pkt
	} else {
		b := append([]byte(nil), pb...)
		p, err := wire.Decode(b, wire.DecodeOptions{Version: e.Packet.Version(), WireLen: e.Packet.WireLen(), Partial: partial})
		o.frame, o.src, o.cp, o.pkt, o.err = e.Frame, pb, b, p, err
		e.Packet = p
	}
	if !partial {
		e.Err = o.err
	}
	if e.Payload == nil {
		return
	}
	// A DATA segment's payload lies within its packet: it views the copy
	// at the same place (a copy of its own doubled a kept DATA event's
	// bytes).
	if off, ok := within(e.Payload, o.src); ok {
		e.Payload = o.cp[off : off+len(e.Payload) : off+len(e.Payload)]
		return
	}
	e.Payload = append([]byte(nil), e.Payload...)
}

// within reports whether sub lies inside b, and where.
func within(sub, b []byte) (int, bool) {
	if len(sub) == 0 || len(b) == 0 {
		return 0, false
	}
	s, p := uintptr(unsafe.Pointer(unsafe.SliceData(sub))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if s < p || s+uintptr(len(sub)) > p+uintptr(len(b)) {
		return 0, false
	}
	return int(s - p), true
}

// EventStream reads a capture's spec events one at a time, in file order
// (spec.EventStream): what spec.Judge.HostsStream merges, so that a run's
// check holds no more of its captures than the frames in hand.
type EventStream struct {
	r    *Reader
	path string
	evs  []spec.Event
	i    int
	own  EventOwner
}

// OpenEventStream opens the capture at path as an EventStream. Errors:
// OpenPath's.
func OpenEventStream(path string, o ReaderOptions) (*EventStream, error) {
	r, err := OpenPath(path, o)
	if err != nil {
		return nil, err
	}
	return &EventStream{r: r, path: path}, nil
}

// Next returns the next event, valid until the following call, or io.EOF
// at the end; a damaged or cut file's error names the file.
func (s *EventStream) Next() (*spec.Event, error) {
	for s.i >= len(s.evs) {
		f, err := s.r.Next()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.path, err)
		}
		s.evs, s.i = f.Events(s.evs[:0]), 0
	}
	s.i++
	return &s.evs[s.i-1], nil
}

// Own gives e, a copy of an event Next returned, its own packet bytes
// (OwnEvent; a frame's segments owned one after another share them).
func (s *EventStream) Own(e *spec.Event) { s.own.Own(e) }

// Close closes the capture.
func (s *EventStream) Close() error { return s.r.Close() }
