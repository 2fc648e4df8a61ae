package pcap

import (
	"context"
	"errors"
	"fmt"
	"io"

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
	err = r.eachEvent(ctx, nil, func(e *spec.Event) {
		c := *e
		OwnEvent(&c)
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
func OwnEvent(e *spec.Event) {
	partial := e.Packet.Partial()
	if e.Err != nil && !partial || e.ICMP != nil {
		return
	}
	b := append([]byte(nil), e.Packet.Bytes()...)
	p, err := wire.Decode(b, wire.DecodeOptions{Version: e.Packet.Version(), WireLen: e.Packet.WireLen(), Partial: partial})
	e.Packet = p
	if !partial {
		e.Err = err
	}
	if e.Payload != nil {
		e.Payload = append([]byte(nil), e.Payload...)
	}
}

// EventStream reads a capture's spec events one at a time, in file order
// (spec.EventStream): what spec.Judge.HostsStream merges, so that a run's
// check holds no more of its captures than the frames in hand.
type EventStream struct {
	r    *Reader
	path string
	evs  []spec.Event
	i    int
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
// (OwnEvent).
func (s *EventStream) Own(e *spec.Event) { OwnEvent(e) }

// Close closes the capture.
func (s *EventStream) Close() error { return s.r.Close() }
