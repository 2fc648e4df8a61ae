package explore

import (
	"container/heap"
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Failure is what stopped a case: a rule violation charged to the IUT
// (Rule is the spec rule's ID), or an application-level failure seen
// through the agent protocol (Rule is one of the APP-* names below).
type Failure struct {
	Rule  string     `json:"rule"`
	Level spec.Level `json:"level"`
	// Why is the finding's one-line reason.
	Why string `json:"why"`
	// At is the virtual (simulator) or wall time since the case's start.
	At time.Duration `json:"at_ns"`
	// Frame is the frame of the IUT's view the finding names (0 for an
	// application failure), and Frames the other frames it cites.
	Frame  int   `json:"frame,omitempty"`
	Frames []int `json:"frames,omitempty"`
	// RPC is the case RPC involved (1-based; 0: none known).
	RPC int `json:"rpc,omitempty"`
}

// Application-level failures (the agent protocol's view of the IUT).
const (
	// AppPayload: a message arrived with the wrong length or bytes (a
	// response at a tester client, a request at a tester server, or the
	// IUT's agent counted a bad request).
	AppPayload = "APP-PAYLOAD"
	// AppOnce: the IUT executed a request twice (at-most-once).
	AppOnce = "APP-ONCE"
	// AppError: an IUT call failed although the peer never left it silent
	// long enough to time out.
	AppError = "APP-ERROR"
	// AppStuck: an RPC never ended although the peer kept to the protocol
	// and the network lost nothing of it.
	AppStuck = "APP-STUCK"
)

func (f *Failure) String() string {
	s := fmt.Sprintf("%s %s", f.Rule, f.Level)
	if f.Frame > 0 {
		s += fmt.Sprintf(" frame %d", f.Frame)
	}
	if f.RPC > 0 {
		s += fmt.Sprintf(" rpc %d", f.RPC)
	}
	return s + ": " + f.Why
}

// recKind is the kind of a record of a case's log.
type recKind uint8

const (
	recSent    recKind = iota + 1 // a tester host's packet, delivered to the IUT
	recRecv                       // the IUT's packet to a tester host
	recDropped                    // a tester host's packet the explored network lost
	recCall                       // the IUT's application called a tester host
	recDone                       // an IUT call completed
	recNote                       // something the model did (abort, restart)
)

// record is one entry of a case's log: what the script and the capture
// are written from.
type record struct {
	kind  recKind
	at    time.Duration // since the case's start
	stamp time.Time     // the checker's time (frame order)
	host  int
	rpc   int // case RPC (0: unknown)
	prio  uint8
	raw   []byte
	frame int // the oracle's frame (recSent, recRecv)
	// text is a recNote's text, a recSent's capture comment
	// (tester.SentNote, or tester.DeliberatePrefix and why).
	text string
}

// outcome is what running one case gave.
type outcome struct {
	fail *Failure
	// events counts the explorer's events: packets it sent and received,
	// calls and completions.
	events int
	// sent counts the packets tester hosts delivered to the IUT; emitted
	// also the ones the explored network lost.
	sent, emitted int
	// stale counts the IUT's packets of an earlier case's RPCs (left out).
	stale int
	// drained counts the tester's packets given the IUT while the case
	// was wound down; arrived the IUT's packets tester hosts got.
	drained, arrived int
	// inconclusive are findings on the IUT not charged (real time): a
	// measured stall or the reaction race explains a timing finding, or
	// the IUT's packet counters show that the namespace network lost
	// packets the view took as delivered.
	inconclusive []string
	log          []record
	features     []string
	exercised    map[string]bool
	report       *spec.Report
	length       time.Duration // the case's length on its clock
	choices      []Choice
	used         [numKinds]int
	interrupted  error
	// netTimes are, per tester host, the times (the checker's) at which
	// the explored network lost, duplicated or delayed a packet between
	// it and the IUT (either direction): netDuring.
	netTimes map[netip.Addr][]time.Time
	// rpcs are the case's RPCs as the run left them (scripts).
	rpcs []*rpc
	// sentKeys are the decision keys of the packets tester hosts gave
	// the IUT, in order (shrinking drops them).
	sentKeys []Key
}

// netDuring reports whether the explored network lost, duplicated or
// delayed a packet between tester host a and the IUT within [from, to]:
// an answer a tester host owed to an IUT packet then (a finding charged
// to it at the IUT's frame) may be one the network lost or held, or an
// answer to a packet the network kept from it.
func (o *outcome) netDuring(a netip.Addr, from, to time.Time) bool {
	for _, t := range o.netTimes[a] {
		if !t.Before(from) && !t.After(to) {
			return true
		}
	}
	return false
}

// runConfig is what every case of a session shares.
type runConfig struct {
	rules []*spec.Rule
	level spec.Level
	// keepLog keeps the packet log (scripts, captures); the search runs
	// without it and reruns a failing case with it.
	keepLog bool
	// drain winds every case down before the next (run.drain): one IUT
	// serves the whole session (namespaces).
	drain bool
}

// run is one case being played.
type run struct {
	ctx   context.Context
	w     *world
	cfg   *runConfig
	c     *Case
	d     *decider
	p     *spec.Params
	seg   uint32
	t0    time.Time
	now   time.Duration
	q     timerQueue
	hosts []*host
	rpcs  []*rpc
	live  map[rkey]*rpc
	o     *oracle
	out   *outcome
	feats map[string]bool
	buf   []arrival
	over  bool
	// ending is set once every RPC ended and the tail is running.
	ending bool
	hard   time.Duration
	// quiet is when the perturbation window ends (Case.Window).
	quiet  time.Duration
	stats0 map[string]uint64
	// script is set when the run replays a script (Replay): the tester
	// hosts send the script's packets instead of the model's.
	script    *scripted
	scriptErr error
	// outbox holds the tester's packets of this instant until the
	// simulation has finished it (flush).
	outbox []outPkt
	// firstID and iutMaxID0 are, per tester host, its next client id and
	// the highest IUT call id bound when the case began (earlier).
	firstID, iutMaxID0 []uint64
	// draining is set while the case's RPCs are wound down after it
	// ended (drain); lastIUT is when the IUT's latest packet came.
	draining bool
	lastIUT  time.Duration
	// because, while a tester host handles a copy of an IUT packet the
	// explored network duplicated or delayed, is the deliberate-packet
	// note of what it sends in reaction (outPkt.note).
	because string
}

// outPkt is a packet a tester host gives the IUT.
type outPkt struct {
	x    *rpc
	h    *host
	prio uint8
	b    []byte
	key  Key
	// note says why the packet breaks the protocol on purpose (a
	// deliberate packet: tester.DeliberatePrefix in its capture comment),
	// "" for one the peer sent as the protocol says.
	note string
}

// rkey finds a live RPC: the tester host, the client's id, and whether
// the tester host is the client (a host's own ids and the IUT's are two
// name spaces).
type rkey struct {
	host   int
	id     uint64
	client bool
}

// play runs case c in w and returns its outcome.
func play(ctx context.Context, w *world, cfg *runConfig, c *Case, d *decider) *outcome {
	r := &run{ctx: ctx, w: w, cfg: cfg, c: c, d: d, p: &w.info.Params, live: map[rkey]*rpc{},
		out: &outcome{}, feats: map[string]bool{}}
	r.seg = maxSegData(w.info)
	r.o = newOracle(ctx, w, cfg.rules, cfg.level)
	r.out.exercised = r.o.exercised
	if !w.virtual {
		if st, err := w.ce.IUT.Stats(ctx); err == nil {
			r.stats0 = st
		}
	}
	r.start()
	for !r.over {
		at, ok := r.q.next()
		if !ok {
			break
		}
		if _, err := w.clock.Wait(ctx, r.t0.Add(at), r.ready); err != nil {
			r.out.interrupted = err
			break
		}
		r.step()
	}
	r.finish()
	if cfg.drain && r.out.interrupted == nil {
		r.drain()
	}
	if !w.virtual && r.out.interrupted == nil {
		r.checkDelivery()
		r.checkStalledApp()
	}
	for _, f := range r.o.excused {
		r.out.inconclusive = append(r.out.inconclusive, fmt.Sprintf("%s %s: %s (%s)", f.Rule, f.Level, f.Why, f.why))
	}
	r.out.rpcs = r.rpcs
	r.out.choices = d.choices()
	r.out.used = d.used
	for f := range r.feats {
		r.out.features = append(r.out.features, f)
	}
	w.cases++
	return r.out
}

// maxSegData is the IUT link's data bytes per DATA packet: the MTU less
// the IPv4 and DATA headers (HomaModule homa_message_out_fill).
func maxSegData(info conformance.TargetInfo) uint32 {
	mtu := info.MTU
	if mtu <= 0 {
		mtu = 1500
	}
	return uint32(mtu - 20 - 56)
}

// ready reports whether the loop has something to do before its next
// timer: a packet arrived or an IUT call completed.
func (r *run) ready() bool {
	if !r.w.in.empty() {
		return true
	}
	for _, x := range r.rpcs {
		if x.call != nil && len(x.call) > 0 {
			return true
		}
	}
	return false
}

// clock returns the time since the case's start and a stamp for a record.
func (r *run) stamp() (time.Duration, time.Time) {
	t := r.w.clock.Now()
	return t.Sub(r.t0), t
}

// step handles what happened: arrivals, completions, due timers.
func (r *run) step() {
	r.now, _ = r.stamp()
	r.buf = r.w.in.take(r.buf)
	for _, a := range r.buf {
		if r.over {
			return
		}
		r.arrive(a)
	}
	for _, x := range r.rpcs {
		if r.over {
			return
		}
		if x.call != nil && len(x.call) > 0 {
			r.callDone(x, <-x.call)
		}
	}
	for !r.over {
		t, ok := r.q.next()
		if !ok || t > r.now {
			break
		}
		it := heap.Pop(&r.q).(timer)
		it.fn()
	}
	r.flush()
}

// flush sends the tester's packets of this instant. In the simulator it
// first lets the instant finish: a packet the IUT sent at this instant,
// before it processes ours, reaches the tester and the oracle first, so
// that the IUT's view keeps the IUT's own order (a timer pass that sent a
// RESEND before our DATA arrived must not look like a RESEND after it).
func (r *run) flush() {
	never := func() bool { return false }
	for len(r.outbox) > 0 && !r.over {
		if r.w.virtual {
			if _, err := r.w.clock.Wait(r.ctx, r.t0.Add(r.now), never); err != nil {
				r.out.interrupted = err
				r.over = true
				return
			}
			if !r.w.in.empty() {
				r.buf = r.w.in.take(r.buf)
				for _, a := range r.buf {
					if r.over {
						return
					}
					r.arrive(a)
				}
				continue
			}
		}
		out := r.outbox
		r.outbox = nil
		for _, o := range out {
			r.send(o)
		}
	}
}

// at schedules fn at t (since the case's start).
func (r *run) at(t time.Duration, fn func()) {
	heap.Push(&r.q, timer{at: max(t, r.now), seq: r.q.seq, fn: fn})
	r.q.seq++
}

// drain winds the case down in a shared environment (one IUT for the
// session, as in namespaces): the tester hosts go on playing the legal peer for the
// case's RPCs, every decision the default and nothing judged or logged,
// until the IUT has sent nothing for resend_ticks (or request_ack_ticks)
// plus two ticks and slack and every IUT call of the case returned, at
// most timeout_ticks and a RESEND round. Without it a case stopped by a
// failure, or one whose tester client aborted an RPC, leaves RPCs at the
// IUT whose packets the next case's view leaves out (earlier), while the
// IUT still counts them: its GRANT priorities and overcommit (HOMA-GRANT-015)
// then look wrong for the messages that view shows.
func (r *run) drain() {
	r.draining, r.over, r.ending = true, false, true
	quiet := r.p.Ticks(max(r.p.ResendTicks, r.p.RequestAckTicks)+2) + r.w.params.Slack
	r.now, _ = r.stamp()
	limit := r.now + r.p.Ticks(r.p.TimeoutTicks+r.p.ResendTicks) + r.w.params.Slack
	for !r.over && r.now < limit && (r.now-r.lastIUT < quiet || r.callsPending()) {
		wake := limit // quiet: wait for the IUT's calls (ready)
		if r.now-r.lastIUT < quiet {
			wake = r.lastIUT + quiet
		}
		if at, ok := r.q.next(); ok {
			wake = min(wake, at)
		}
		if _, err := r.w.clock.Wait(r.ctx, r.t0.Add(wake), r.ready); err != nil {
			break
		}
		r.step()
	}
	r.over, r.draining = true, false
}

// checkDelivery compares, in real time, the packets the tester hosts
// gave the IUT and got from it during the case (its wind-down included)
// with the IUT's own counters (agent stats packets_received and
// packets_sent; 0 when the IUT cannot tell). The view takes every packet
// a tester sent as delivered and sees only the IUT's packets that reached
// a tester; fewer received at the IUT, or fewer arrived from it, means the
// namespace network (a socket buffer of a loaded host) lost some, and a
// failure judged over that view is inconclusive, not charged.
func (r *run) checkDelivery() {
	if r.out.fail == nil || r.stats0 == nil {
		return
	}
	st, err := r.w.ce.IUT.Stats(r.ctx)
	if err != nil || st["packets_received"] == 0 && st["packets_sent"] == 0 {
		return
	}
	recv := st["packets_received"] - r.stats0["packets_received"]
	sent := st["packets_sent"] - r.stats0["packets_sent"]
	gave := uint64(r.out.sent + r.out.drained)
	got := uint64(r.out.arrived)
	var lost string
	switch {
	case recv < gave:
		lost = fmt.Sprintf("the IUT received %d of the %d packets the tester hosts sent it", recv, gave)
	case got < sent:
		lost = fmt.Sprintf("the tester hosts got %d of the %d packets the IUT sent", got, sent)
	default:
		return
	}
	f := r.out.fail
	r.out.inconclusive = append(r.out.inconclusive, fmt.Sprintf("%s %s: %s (%s: the network lost packets the view took as delivered)", f.Rule, f.Level, f.Why, lost))
	r.out.fail = nil
}

// checkStalledApp makes an application failure that rests on wall time
// (a call that never ended, or failed for silence) inconclusive in real
// time when measured stalls during the case (internal/stall) add up to
// the view's slack or more: the IUT or the tester hosts stood still, and
// the case's wall-clock bounds measured the machine, not the protocol.
func (r *run) checkStalledApp() {
	f := r.out.fail
	if f == nil || f.Rule != AppStuck && f.Rule != AppError || r.w.ce.Stalls == nil {
		return
	}
	end := r.t0.Add(r.now)
	r.w.ce.Stalls.Settle(r.ctx, end)
	var lost time.Duration
	spans := stall.Overlaps(r.w.ce.Stalls.Spans(), r.t0, end)
	for _, sp := range spans {
		lost += sp.Lost
	}
	if len(spans) == 0 || lost < r.w.params.Slack {
		return
	}
	r.out.inconclusive = append(r.out.inconclusive, fmt.Sprintf("%s %s: %s (measured stalls lost %v during the case, e.g. %s)", f.Rule, f.Level, f.Why, lost.Round(time.Millisecond), spans[0]))
	r.out.fail = nil
}

// callsPending reports whether an IUT call of the case has not returned.
func (r *run) callsPending() bool {
	for _, x := range r.rpcs {
		if x.call != nil {
			return true
		}
	}
	return false
}

// fail stops the case with f (the first failure wins).
func (r *run) fail(f *Failure) {
	if r.draining {
		return // the case is judged; its wind-down is not
	}
	if r.out.fail == nil {
		if f.At == 0 {
			f.At = r.now
		}
		r.out.fail = f
	}
	r.over = true
}

// failFinding stops the case with a checker finding.
func (r *run) failFinding(f *spec.Finding) {
	fl := &Failure{Rule: f.Rule, Level: f.Level, Why: f.Why, Frame: f.Frame, Frames: f.Frames}
	if t := r.o.frameTime(f.Frame); !t.IsZero() {
		fl.At = t.Sub(r.t0)
	}
	if f.RPC != nil {
		for _, x := range r.rpcs {
			if x.id != 0 && x.id == f.RPC.ClientID && x.h.st.addr == otherEnd(f.RPC.Client, f.RPC.Server, r.w.info.Addr) {
				fl.RPC = x.n
			}
		}
	}
	r.fail(fl)
}

// otherEnd returns whichever of a and b is not iut.
func otherEnd(a, b, iut netip.Addr) netip.Addr {
	if a == iut {
		return b
	}
	return a
}

// log appends a record when the log is kept.
func (r *run) log(rec record) {
	if r.cfg.keepLog && !r.draining {
		r.out.log = append(r.out.log, rec)
	}
}

// finish ends the case: the checker's open obligations, the application
// results.
func (r *run) finish() {
	if r.out.interrupted != nil {
		r.out.report = r.o.c.Finish()
		return
	}
	r.now, _ = r.stamp()
	r.out.length = r.now
	if f, rep := r.o.finish(); f != nil {
		r.out.report = rep
		if r.out.fail == nil {
			r.failFinding(f)
		}
	} else {
		r.out.report = rep
	}
	if r.out.fail == nil {
		r.judgeApplication()
	}
}

// timer is a scheduled action of a case.
type timer struct {
	at  time.Duration
	seq uint64
	fn  func()
}

// timerQueue is a min-heap of timers by time, then scheduling order.
type timerQueue struct {
	h   []timer
	seq uint64
}

func (q *timerQueue) Len() int { return len(q.h) }
func (q *timerQueue) Less(i, j int) bool {
	return q.h[i].at < q.h[j].at || q.h[i].at == q.h[j].at && q.h[i].seq < q.h[j].seq
}
func (q *timerQueue) Swap(i, j int) { q.h[i], q.h[j] = q.h[j], q.h[i] }
func (q *timerQueue) Push(x any)    { q.h = append(q.h, x.(timer)) }
func (q *timerQueue) Pop() any {
	n := len(q.h) - 1
	x := q.h[n]
	q.h[n] = timer{}
	q.h = q.h[:n]
	return x
}

// next returns the earliest timer's time.
func (q *timerQueue) next() (time.Duration, bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// viewEvents decodes transport bytes pkt from src to dst at priority prio
// into the checker's events (one per DATA segment).
func viewEvents(dst []spec.Event, at time.Time, src, to netip.Addr, prio uint8, pkt []byte, v wire.Version) []spec.Event {
	return append(dst, spec.DecodeEvent(at, src, to, prio, pkt, v))
}
