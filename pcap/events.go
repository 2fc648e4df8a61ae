package pcap

import "github.com/homatest/homatest/spec"

// Events appends the spec events of f to dst: one per DATA segment, one for
// a control packet, one carrying Err for a malformed Homa frame.
func (f *Frame) Events(dst []spec.Event) []spec.Event {
	e := spec.Event{Frame: f.Number, Time: f.Time, Src: f.Src, Dst: f.Dst, Priority: f.Priority,
		Hijacked: f.Hijacked, Packet: f.Packet, Err: f.Err, SnapCut: f.SnapCut}
	if f.Err != nil || len(f.Segments) == 0 {
		return append(dst, e)
	}
	for i, s := range f.Segments {
		e.Segment, e.Offset, e.Length = i, s.Offset, s.Length
		dst = append(dst, e)
	}
	return dst
}
