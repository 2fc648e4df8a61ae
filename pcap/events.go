package pcap

import (
	"errors"
	"io"

	"github.com/homatest/homatest/spec"
)

// Events appends the spec events of f to dst: one per DATA segment, one for
// a control packet, one carrying Err for a malformed Homa frame.
func (f *Frame) Events(dst []spec.Event) []spec.Event {
	e := spec.Event{Frame: f.Number, Time: f.Time, Src: f.Src, Dst: f.Dst, Priority: f.Priority, TOS: f.TOS, PrioShift: f.PrioShift,
		Hijacked: f.Hijacked, Packet: f.Packet, Err: f.Err, SnapCut: f.SnapCut, ICMP: f.ICMP, Note: f.Comment}
	if f.Err != nil || f.ICMP != nil || len(f.Segments) == 0 {
		return append(dst, e)
	}
	for i, s := range f.Segments {
		e.Segment, e.Offset, e.Length, e.Payload = i, s.Offset, s.Length, s.Data
		dst = append(dst, e)
	}
	return dst
}

// EachEvent reads the rest of the capture and calls fn for every spec event
// in capture order (Frame.Events of each frame). The event and its packet
// bytes are valid only during the call: the reader reuses its buffers (copy
// what you keep). It returns nil at the end of the capture, or the first
// read error (a damaged or cut file), with fn called for every event before
// it.
func (r *Reader) EachEvent(fn func(*spec.Event)) error { return r.eachEvent(nil, fn) }

// eachEvent is EachEvent that first passes each frame to frame, if set.
func (r *Reader) eachEvent(frame func(*Reader, *Frame), fn func(*spec.Event)) error {
	var evs []spec.Event
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if frame != nil {
			frame(r, f)
		}
		evs = f.Events(evs[:0])
		for i := range evs {
			fn(&evs[i])
		}
	}
}
