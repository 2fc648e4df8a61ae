package spec

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// EventStream is a capture's events one at a time, in file order (the
// reader of a capture file: pcap.OpenEventStream).
type EventStream interface {
	// Next returns the next event, valid until the following call, or
	// io.EOF at the end; any other error ends the stream.
	Next() (*Event, error)
	// Own makes e, a copy of an event Next returned, outlive the stream's
	// buffers (its packet bytes and payload copied).
	Own(e *Event)
	// Close releases the stream.
	Close() error
}

// ErrUnordered is HostsStream's error for a capture in which a host's
// events are not in time order: its views need the sort of Hosts, which
// holds them all.
var ErrUnordered = errors.New("capture events are not in time order")

// HostsStream is HostsContext over captures read as streams, in memory
// bounded by the rules' live state rather than the captures' length: the
// same reports, findings and charges, but each HostReport keeps only the
// view frames its findings name (Source and Event give them; View and
// Sources are nil). sent and delivered open the as-sent and as-delivered
// captures (each host's events in each must be in time order, as they
// are in a capture written as the packets passed, else ErrUnordered:
// call HostsContext); they are read once, and once more when a finding names a
// frame (its source, its time, and Params.Reaction's look back). hosts
// must be given, each once (nil judges no host). Errors: the streams', or
// ctx's.
func (j Judge) HostsStream(ctx context.Context, sent, delivered func() (EventStream, error), hosts []netip.Addr) ([]HostReport, error) {
	idx := make(map[netip.Addr]int, len(hosts))
	for i, h := range hosts {
		if _, ok := idx[h]; !ok {
			idx[h] = i
		}
	}
	checkers := make([]*Checker, len(hosts))
	counts := make([]int, len(hosts))
	for i, h := range hosts {
		checkers[i] = j.Stream(HostPoint(h))
	}
	// Pass 1: every host's view, merged as Hosts sorts it, into its
	// checker; delivered packets no sent one matches are suspects of
	// alteration until one does.
	prints := newSentPrints(true)
	pf := newParallelFeed(checkers)
	onSent := prints.add
	if j.Started == nil {
		// A request's first bytes, as its client sent them, start the
		// RPC in the capture, though the server's link missed them (lost
		// on the way): its view learns so in step with its own events
		// (Checker.NoteStarted), as Hosts' views learn it from the whole
		// as-sent capture (Judge.Started), without a pass of their own.
		onSent = func(e *Event) {
			prints.add(e)
			if e.Err != nil || e.ICMP != nil || !hasRPC(e) || !startsRequest(e) {
				return
			}
			if i, ok := idx[e.Dst]; ok {
				pf.note(i, KeyOf(e), e.Time)
			}
		}
	}
	err := mergeViews(ctx, sent, delivered, idx, onSent, func(i int, e *Event, fromDelivered bool, st EventStream) {
		counts[i]++
		ev := *e
		ev.Frame = counts[i]
		if fromDelivered {
			prints.suspect(i, ev.Frame, &ev)
		}
		pf.feed(i, &ev, st)
	})
	pf.wait()
	if err != nil {
		return nil, err
	}
	alts := make([]alteredSet, len(hosts))
	for _, ss := range prints.suspects {
		for _, x := range ss {
			alts[x.i].note(x.frame, x.k, x.keyed, x.t)
		}
	}
	out := make([]HostReport, len(hosts))
	wants := make([]map[int]bool, len(hosts))
	queries := make([]map[int][]int, len(hosts)) // view frame -> violations whose Raced is asked there
	raced := make([]map[int]bool, len(hosts))    // violation index -> Raced
	need := false
	for i, h := range hosts {
		rep := checkers[i].Finish()
		out[i] = HostReport{Host: h, Report: rep, sparse: &sparseView{src: map[int]ViewSource{}, ev: map[int]*Event{}}}
		w := map[int]bool{}
		for k, v := range rep.Violations {
			for _, n := range append([]int{v.Frame}, v.Frames...) {
				w[n] = true
			}
			for _, m := range viewFrameRef.FindAllStringSubmatch(v.Why, -1) {
				if n, err := strconv.Atoi(m[1]); err == nil {
					w[n] = true
				}
			}
			if v.Frame >= 1 && v.Frame <= counts[i] && v.ChargedTo == h && j.Params.Reaction > 0 && v.Timing() && v.RPC != nil {
				if queries[i] == nil {
					queries[i], raced[i] = map[int][]int{}, map[int]bool{}
				}
				queries[i][v.Frame] = append(queries[i][v.Frame], k)
			}
		}
		for n := range w {
			if n < 1 || n > counts[i] {
				delete(w, n)
			}
		}
		wants[i] = w
		need = need || len(w) > 0
	}
	if need {
		// Pass 2: the frames the findings name, and for a timing finding
		// the events within Params.Reaction before it (Raced).
		pos := make([]int, len(hosts))
		windows := make([][]Event, len(hosts))
		err := mergeViews(ctx, sent, delivered, idx, nil, func(i int, e *Event, fromDelivered bool, st EventStream) {
			pos[i]++
			n := pos[i]
			if !wants[i][n] {
				return
			}
			ev := *e
			ev.Frame = n
			st.Own(&ev)
			sv := out[i].sparse
			sv.src[n] = ViewSource{Delivered: fromDelivered, Frame: e.Frame}
			sv.ev[n] = &ev
		}, func(i int, e *Event, st EventStream) {
			if queries[i] == nil {
				return
			}
			// The look back of Raced: the view's events less than
			// Reaction before the latest.
			ev := *e
			ev.Frame = pos[i]
			st.Own(&ev)
			w := append(windows[i], ev)
			k := 0
			for k < len(w)-1 && ev.Time.Sub(w[k].Time) >= j.Params.Reaction {
				k++
			}
			w = w[k:]
			windows[i] = w
			for _, v := range queries[i][pos[i]] {
				raced[i][v] = Raced(out[i].Report.Violations[v], w, len(w)-1, hosts[i], j.Params.Reaction)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for i, h := range hosts {
		hr := &out[i]
		rep := hr.Report
		for k, v := range rep.Violations {
			switch {
			case v.Frame < 1 || v.Frame > counts[i] || v.ChargedTo != h:
			case alts[i].touches(&v):
				hr.Altered = append(hr.Altered, v)
			case raced[i][k]:
				hr.Excused = append(hr.Excused, v)
			default:
				hr.Violations = append(hr.Violations, v)
			}
		}
		hr.Charged, hr.NotCharged = len(hr.Violations), len(rep.Violations)-len(hr.Violations)
	}
	return out, nil
}

// mergeViews reads sent and delivered and calls fn with each event of a
// judged host (idx: host address to index) in the order of the host's
// view: its events of sent (those it sent) and of delivered (those it
// got) merged in time order, at equal times sent first, each in its own
// order (Hosts' stable sort); fn also gets whether the event came from
// delivered, and its stream. Then, when given, after(host, event,
// stream). Every event of sent, of any host, goes to onSent as it is
// read (when onSent is set). A host's events wait in memory only until
// the other capture shows where they go, so the files are read in step,
// the earlier head first. It fails with ErrUnordered when a host's
// events in either capture step back in time.
func mergeViews(ctx context.Context, sent, delivered func() (EventStream, error), idx map[netip.Addr]int, onSent func(*Event), fn func(int, *Event, bool, EventStream), after ...func(int, *Event, EventStream)) error {
	s, err := sent()
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := delivered()
	if err != nil {
		return err
	}
	defer d.Close()
	type source struct {
		st    EventStream
		e     *Event // the next event, nil at the end
		last  []time.Time
		seen  []bool
		queue [][]Event // per host, owned events waiting for the other side
		head  []int
	}
	n := 0
	for _, i := range idx {
		n = max(n, i+1)
	}
	srcs := [2]*source{{st: s}, {st: d}}
	for _, x := range srcs {
		x.last, x.seen = make([]time.Time, n), make([]bool, n)
		x.queue, x.head = make([][]Event, n), make([]int, n)
	}
	next := func(x *source) error {
		e, err := x.st.Next()
		if errors.Is(err, io.EOF) {
			x.e = nil
			return nil
		}
		x.e = e
		return err
	}
	emit := func(i int, k int) {
		x := srcs[k]
		e := &x.queue[i][x.head[i]]
		fn(i, e, k == 1, x.st)
		for _, a := range after {
			a(i, e, x.st)
		}
		x.queue[i][x.head[i]] = Event{}
		x.head[i]++
		if x.head[i] == len(x.queue[i]) {
			x.queue[i], x.head[i] = x.queue[i][:0], 0
		}
	}
	// drain emits host i's events whose place in the view is known.
	drain := func(i int) {
		qs, qd := srcs[0], srcs[1]
		for {
			hasS, hasD := qs.head[i] < len(qs.queue[i]), qd.head[i] < len(qd.queue[i])
			switch {
			case hasS && hasD:
				if qd.queue[i][qd.head[i]].Time.Before(qs.queue[i][qs.head[i]].Time) {
					emit(i, 1)
				} else {
					emit(i, 0)
				}
			case hasS && qd.e == nil:
				emit(i, 0)
			case hasD && qs.e == nil:
				emit(i, 1)
			default:
				return
			}
		}
	}
	if err := next(srcs[0]); err != nil {
		return err
	}
	if err := next(srcs[1]); err != nil {
		return err
	}
	for n := 1; srcs[0].e != nil || srcs[1].e != nil; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		k := 0
		if srcs[0].e == nil || srcs[1].e != nil && srcs[1].e.Time.Before(srcs[0].e.Time) {
			k = 1
		}
		x := srcs[k]
		addr := x.e.Src
		if k == 1 {
			addr = x.e.Dst
		} else if onSent != nil {
			onSent(x.e)
		}
		i, ok := idx[addr]
		if ok {
			if x.seen[i] && x.e.Time.Before(x.last[i]) {
				return ErrUnordered
			}
			x.last[i], x.seen[i] = x.e.Time, true
			x.queue[i] = append(x.queue[i], *x.e)
			drain(i)
			// What still waits outlives the stream's buffers.
			if q := x.queue[i]; x.head[i] < len(q) {
				x.st.Own(&q[len(q)-1])
			}
		}
		if err := next(x); err != nil {
			return err
		}
		if x.e == nil {
			// The end of a capture places every waiting event of the other.
			for j := range x.queue {
				drain(j)
			}
		}
	}
	return ctx.Err()
}

// sparseView is the part of a streamed host view (HostsStream) its
// findings name: view frame (1-based) to source and event.
type sparseView struct {
	src map[int]ViewSource
	ev  map[int]*Event
}

// Source returns where view frame i (1-based) came from (see Sources);
// false outside the view, or for a report of HostsStream, at a frame no
// finding of the report names.
func (hr *HostReport) Source(i int) (ViewSource, bool) {
	if hr.sparse != nil {
		s, ok := hr.sparse.src[i]
		return s, ok
	}
	if i < 1 || i > len(hr.Sources) {
		return ViewSource{}, false
	}
	return hr.Sources[i-1], true
}

// Event returns view frame i (1-based) as checked (see View); false as
// for Source.
func (hr *HostReport) Event(i int) (*Event, bool) {
	if hr.sparse != nil {
		e, ok := hr.sparse.ev[i]
		return e, ok
	}
	if i < 1 || i > len(hr.View) {
		return nil, false
	}
	return &hr.View[i-1], true
}

// parallelFeed feeds each host view's checker in a goroutine of its own
// when more than one CPU may run them (the views are independent checks;
// the rules are shared and never modified), in batches of owned events,
// and in the caller's goroutine otherwise: a streamed check of a run's
// captures takes the time of its busiest host view, not of all of them.
type parallelFeed struct {
	checkers []*Checker
	batches  []feedBatchOf
	chans    []chan feedBatchOf
	wg       sync.WaitGroup
}

// feedBatchOf is a batch of events for one checker and the RPC starts
// to note between them (parallelFeed.note), each before the event at
// its index (after the last at len(events)).
type feedBatchOf struct {
	events []Event
	starts []feedStart
}

// feedStart is an RPC start to note (Checker.NoteStarted) before event
// at of its batch.
type feedStart struct {
	at  int
	key RPCKey
	t   time.Time
}

// run feeds b to c, each start noted in its place.
func (b feedBatchOf) run(c *Checker) {
	n := 0
	for k := range b.events {
		for ; n < len(b.starts) && b.starts[n].at == k; n++ {
			c.NoteStarted(b.starts[n].key, b.starts[n].t)
		}
		c.Feed(&b.events[k])
	}
	for ; n < len(b.starts); n++ {
		c.NoteStarted(b.starts[n].key, b.starts[n].t)
	}
}

// feedBatch is how many events a host's goroutine gets at a time.
const feedBatch = 256

func newParallelFeed(checkers []*Checker) *parallelFeed {
	pf := &parallelFeed{checkers: checkers}
	if runtime.GOMAXPROCS(0) < 2 || len(checkers) < 2 {
		return pf
	}
	pf.batches, pf.chans = make([]feedBatchOf, len(checkers)), make([]chan feedBatchOf, len(checkers))
	for i, c := range checkers {
		ch := make(chan feedBatchOf, 4)
		pf.chans[i] = ch
		pf.wg.Go(func() {
			for b := range ch {
				b.run(c)
			}
		})
	}
	return pf
}

// note has checker i note that RPC k started at t (Checker.NoteStarted)
// before the next event fed to it.
func (pf *parallelFeed) note(i int, k RPCKey, t time.Time) {
	if pf.chans == nil {
		pf.checkers[i].NoteStarted(k, t)
		return
	}
	b := &pf.batches[i]
	b.starts = append(b.starts, feedStart{at: len(b.events), key: k, t: t})
}

// feed gives e (valid until st's next event) to checker i.
func (pf *parallelFeed) feed(i int, e *Event, st EventStream) {
	if pf.chans == nil {
		pf.checkers[i].Feed(e)
		return
	}
	b := &pf.batches[i]
	if b.events == nil {
		b.events = make([]Event, 0, feedBatch)
	}
	st.Own(e)
	b.events = append(b.events, *e)
	if len(b.events) == feedBatch {
		pf.chans[i] <- *b
		*b = feedBatchOf{}
	}
}

// wait hands over what is left and returns once every checker has had
// all its events.
func (pf *parallelFeed) wait() {
	for i, ch := range pf.chans {
		if b := pf.batches[i]; len(b.events) > 0 || len(b.starts) > 0 {
			ch <- b
		}
		close(ch)
	}
	pf.wg.Wait()
	pf.chans = nil
}
