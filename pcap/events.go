package pcap

import (
	"context"
	"errors"
	"io"
	"runtime"

	"github.com/homatest/homatest/spec"
)

// Events appends the spec events of f to dst: one per DATA segment, one for
// a control packet, one carrying Err for a malformed Homa frame.
func (f *Frame) Events(dst []spec.Event) []spec.Event {
	e := spec.Event{Frame: f.Number, Time: f.Time, Src: f.Src, Dst: f.Dst, Priority: f.Priority, TOS: f.TOS, PrioShift: f.PrioShift, PrioEither: f.PrioEither,
		Hijacked: f.Hijacked, IP: spec.IPHeader{Known: true, TTL: f.TTL, BadChecksum: f.BadIPChecksum, Fragment: f.Fragment, Options: f.IPOptions, LengthPastFrame: f.IPLengthPastFrame}, Packet: f.Packet, Err: f.Err, SnapCut: f.SnapCut, ICMP: f.ICMP, Note: f.Comment}
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
// in capture order (Frame.Events of each frame; in timestamp order within
// ReaderOptions.Reorder when that is set). The event and its packet
// bytes are valid only during the call: the reader reuses its buffers (copy
// what you keep). It returns nil at the end of the capture, or the first
// read error (a damaged or cut file), with fn called for every event before
// it. fn runs in the caller's goroutine; with more than one CPU the reader
// runs ahead of it in a goroutine of its own, so fn must not use r.
func (r *Reader) EachEvent(fn func(*spec.Event)) error {
	return r.eachEvent(context.Background(), nil, fn)
}

// eachEvent is EachEvent that first passes each frame to frame, if set,
// and stops with ctx's error once ctx has ended (checked between batches
// of events, so a long capture's reading stops within a batch of a
// Ctrl-C). With more than one CPU it reads in a goroutine of its own
// (eachEventPiped): fn is called as it is here, in the caller's
// goroutine, and frame in the reading one.
func (r *Reader) eachEvent(ctx context.Context, frame func(*Reader, *Frame), fn func(*spec.Event)) error {
	if r.o.Reorder > 0 {
		b := &reorderBuf{window: r.o.Reorder, out: fn}
		err := r.eachEventInOrder(ctx, frame, b.push)
		b.flush()
		return err
	}
	return r.eachEventInOrder(ctx, frame, fn)
}

// eachEventInOrder is eachEvent in file order.
func (r *Reader) eachEventInOrder(ctx context.Context, frame func(*Reader, *Frame), fn func(*spec.Event)) error {
	if runtime.GOMAXPROCS(0) > 1 {
		return r.eachEventPiped(ctx, frame, fn)
	}
	var evs []spec.Event
	for n := 1; ; n++ {
		if n%batchEvents == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
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

// Sizes of eachEventPiped's batches: a batch is handed over when it
// holds batchEvents events or its frames' bytes would overflow
// batchBytes (a frame longer than that gets a batch of its own);
// pipedBatches of them circulate.
const (
	batchEvents  = 256
	batchBytes   = 256 << 10
	pipedBatches = 3
)

// eventBatch is a run of events and the frame bytes they view.
type eventBatch struct {
	evs   []spec.Event
	bytes []byte
}

// eachEventPiped is eachEvent with reading and decoding in a goroutine
// of its own, one batch of events ahead of fn: the reader copies each
// frame's bytes into the batch before decoding them (Reader.hold), so
// that an event's Packet and Payload stay valid until fn has seen the
// whole batch. Batches are reused: no allocation per frame. frame runs
// in the reading goroutine, before the frame's events reach fn.
func (r *Reader) eachEventPiped(ctx context.Context, frame func(*Reader, *Frame), fn func(*spec.Event)) error {
	free := make(chan *eventBatch, pipedBatches)
	full := make(chan *eventBatch, pipedBatches)
	done := make(chan struct{}) // fn returned or panicked, or ctx ended: stop reading
	stopped := false
	defer func() {
		if !stopped {
			close(done)
		}
	}()
	for range pipedBatches {
		free <- &eventBatch{evs: make([]spec.Event, 0, batchEvents), bytes: make([]byte, 0, batchBytes)}
	}
	var rerr error
	go func() {
		defer close(full)
		defer func() { r.hold = nil }()
		next := func() *eventBatch {
			select {
			case b := <-free:
				b.evs, b.bytes = b.evs[:0], b.bytes[:0]
				return b
			case <-done:
				runtime.Goexit()
				return nil
			}
		}
		send := func(b *eventBatch) {
			select {
			case full <- b:
			case <-done:
				runtime.Goexit()
			}
		}
		cur := next()
		r.hold = func(data []byte) []byte {
			if len(cur.bytes)+len(data) > cap(cur.bytes) {
				if len(cur.evs) > 0 {
					send(cur)
					cur = next()
				} else {
					// No event views the bytes held (frames without
					// Homa): reuse them, or a long run of other
					// traffic grows the batch without bound.
					cur.bytes = cur.bytes[:0]
				}
				if len(data) > cap(cur.bytes) {
					cur.bytes = make([]byte, 0, len(data))
				}
			}
			n := len(cur.bytes)
			cur.bytes = append(cur.bytes, data...)
			return cur.bytes[n:len(cur.bytes):len(cur.bytes)]
		}
		for {
			f, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					rerr = err
				}
				break
			}
			if frame != nil {
				frame(r, f)
			}
			if cur.evs = f.Events(cur.evs); len(cur.evs) >= batchEvents {
				send(cur)
				cur = next()
			}
		}
		if len(cur.evs) > 0 {
			send(cur)
		}
	}()
	for b := range full {
		if ctx.Err() != nil {
			// Stop the reader and wait until it has let go of r (it
			// exits at its next batch), so that the caller may close r.
			stopped = true
			close(done)
			for range full {
			}
			return ctx.Err()
		}
		for i := range b.evs {
			fn(&b.evs[i])
		}
		free <- b
	}
	return rerr
}
