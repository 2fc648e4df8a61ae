// Package stall measures when the processes of a real-time run were kept
// from running: the harness itself (its switch, capture and testers) and
// the implementation under test's processes. A timing verdict taken while
// one of them stood still says more about the machine than about the
// protocol; callers use the measured spans to call such a finding
// timing-inconclusive instead of charging it (see Overlaps).
//
// Two measurements, both from the kernel's own accounting rather than a
// guess: a probe goroutine that records how late its periodic wake-ups come
// (the harness's scheduling), and, for every watched process, each thread's
// run-queue wait from /proc/PID/task/TID/schedstat (time spent runnable but
// not running; Documentation/scheduler/sched-stats.rst). Neither needs
// privileges; on a system without schedstat only the probe runs.
package stall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/spec"
)

// Harness is the Who of the probe's spans and of the harness process
// (the testers' own): a Who that begins with it is a stall of the
// testers, which keeps them from sending in time.
const Harness = "harness"

// Span is one measured stall: from From to To, Who (a watched process's
// name, or Harness for the probe) was kept from running for Lost in
// total (a thread's run-queue wait in the interval, or the probe's
// lateness).
type Span struct {
	From time.Time     `json:"from"`
	To   time.Time     `json:"to"`
	Who  string        `json:"who"`
	Lost time.Duration `json:"lost_ns"`
}

// String renders the span for reports, e.g. "agent h1 lost 23ms in
// 12:00:01.105-12:00:01.135".
func (s Span) String() string {
	return fmt.Sprintf("%s lost %v in %s-%s", s.Who, s.Lost.Round(time.Microsecond),
		s.From.Format("15:04:05.000"), s.To.Format("15:04:05.000"))
}

// Config configures a Monitor.
type Config struct {
	// Probe is the probe's wake-up period (default 2 ms).
	Probe time.Duration
	// Sample is how often watched processes' threads are read (default
	// 10 ms: a Go process has about ten threads, so this costs a few
	// hundred small /proc reads a second per process).
	Sample time.Duration
	// Min is the shortest loss recorded as a stall (default 5 ms): a
	// probe wake-up at least this late, or a thread that waited at least
	// this long in total for a CPU within Window.
	Min time.Duration
	// Window is the span over which a thread's run-queue waits add up
	// (default 50 ms): a thread that runs a third of the time on a
	// crowded machine waits only a few ms per sample, yet falls tens of
	// ms behind over a protocol timeout.
	Window time.Duration
}

func (c Config) withDefaults() Config {
	if c.Probe <= 0 {
		c.Probe = 2 * time.Millisecond
	}
	if c.Sample <= 0 {
		c.Sample = 10 * time.Millisecond
	}
	if c.Min <= 0 {
		c.Min = 5 * time.Millisecond
	}
	if c.Window < c.Sample {
		c.Window = max(50*time.Millisecond, c.Sample)
	}
	return c
}

// Monitor records stalls until stopped. Create with Start; methods are
// safe for concurrent use.
type Monitor struct {
	cfg Config

	mu      sync.Mutex
	spans   []Span
	watched map[int]*proc
	// sampled is the latest sample of the watched processes.
	sampled time.Time

	stop chan struct{}
	done sync.WaitGroup

	waits func(pid int) (map[int]uint64, error) // threadWaits; tests fake it
	// recorder is set on a monitor that measures nothing (NewRecorder):
	// its spans are those given to Record, and Settle has nothing to
	// wait for.
	recorder bool
}

// proc is a watched process: its name, each of its threads' recent
// run-queue waits and when its threads were last read (zero: never).
type proc struct {
	name    string
	threads map[int]*thread
	last    time.Time
}

// thread is one thread's cumulative run-queue wait (ns) at each sample of
// the last Window (the oldest sample at or before the window's start is
// kept as the base), and the span it is extending, if any (-1: none).
type thread struct {
	at   []time.Time
	wait []uint64
	open int
}

// Start starts a monitor with cfg (zero fields take their defaults).
func Start(cfg Config) *Monitor {
	m := &Monitor{cfg: cfg.withDefaults(), watched: map[int]*proc{}, stop: make(chan struct{}), waits: threadWaits}
	m.done.Add(2)
	go m.probe()
	go m.sampler()
	return m
}

// NewRecorder returns a monitor that measures nothing and holds the
// stalls given to Record: where the stalls are made rather than suffered,
// as the simulator's held-up testers are (tester.SimClock.HoldUps), so
// that the suite weighs them as it weighs measured ones. Stop is a no-op.
func NewRecorder() *Monitor {
	m := &Monitor{watched: map[int]*proc{}, stop: make(chan struct{}), recorder: true}
	return m
}

// Record adds stall s to the spans, as if measured.
func (m *Monitor) Record(s Span) { m.add(s) }

// Watch adds process pid, named name in spans ("agent h1"), to the
// processes whose threads are sampled. Watching this process itself
// (os.Getpid()) covers the switch and capture threads. A pid that is gone
// is dropped at the next sample.
func (m *Monitor) Watch(pid int, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.watched[pid]; !ok {
		m.watched[pid] = &proc{name: name, threads: map[int]*thread{}}
	}
}

// WatchSoftirq adds the kernel's softirq threads (ksoftirqd/N, one per
// CPU) to the watched processes and returns how many it found (none where
// /proc hides them). A packet crossing a veth waits in a backlog that the
// NET_RX softirq drains; on a busy machine the kernel defers that work to
// ksoftirqd, an ordinary thread, and the packet then waits as long as
// ksoftirqd waits for a CPU: a delay between two endpoints that no
// watched process shows. A ksoftirqd is runnable only with work pending,
// so its run-queue wait is that work's delay.
func (m *Monitor) WatchSoftirq() int {
	threads := softirqThreads()
	for pid, name := range threads {
		m.Watch(pid, "kernel "+name)
	}
	return len(threads)
}

// softirqThreads maps the pid of each ksoftirqd kernel thread to its name,
// found once per process: kernel threads live as long as their CPU.
var softirqThreads = sync.OnceValue(func() map[int]string {
	out := map[int]string{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if name := strings.TrimSpace(string(b)); err == nil && strings.HasPrefix(name, "ksoftirqd/") {
			out[pid] = name
		}
	}
	return out
})

// Spans returns the stalls recorded so far, ordered by From.
func (m *Monitor) Spans() []Span {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.spans)
	slices.SortStableFunc(out, func(a, b Span) int { return a.From.Compare(b.From) })
	return out
}

// Settle waits until the monitor has recorded every stall of a watched
// process that covers moment t: its samples went at least Window past t
// (a thread's waits add up over Window, so a stall is recorded up to
// Window after it began). It returns at once for a t that far back, and
// when the monitor stops or ctx ends. A caller judging online (homatest
// explore) settles before it charges a timing finding at t, else the
// stall that explains it is not recorded yet. The probe's own stalls
// need no wait: the caller, in the probe's process, ran only after them.
func (m *Monitor) Settle(ctx context.Context, t time.Time) {
	if m.recorder {
		return // every stall is recorded when it happens
	}
	due := t.Add(m.cfg.Window)
	for {
		m.mu.Lock()
		done := !m.sampled.Before(due)
		m.mu.Unlock()
		if done {
			return
		}
		select {
		case <-m.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(m.cfg.Sample):
		}
	}
}

// Stop ends the monitor; it is safe to call more than once. Spans stays
// readable.
func (m *Monitor) Stop() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	m.done.Wait()
}

func (m *Monitor) add(s Span) {
	m.mu.Lock()
	m.spans = append(m.spans, s)
	m.mu.Unlock()
}

// probe records its own late wake-ups.
func (m *Monitor) probe() {
	defer m.done.Done()
	t := time.NewTicker(m.cfg.Probe)
	defer t.Stop()
	for {
		select {
		case due := <-t.C:
			if now := time.Now(); now.Sub(due) >= m.cfg.Min {
				m.add(Span{From: due, To: now, Who: Harness, Lost: now.Sub(due)})
			}
		case <-m.stop:
			return
		}
	}
}

// sampler reads the watched processes' threads every Sample.
func (m *Monitor) sampler() {
	defer m.done.Done()
	t := time.NewTicker(m.cfg.Sample)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			m.sample(time.Now())
		case <-m.stop:
			return
		}
	}
}

func (m *Monitor) sample(now time.Time) {
	defer func() {
		m.mu.Lock()
		m.sampled = now
		m.mu.Unlock()
	}()
	m.mu.Lock()
	pids := make([]int, 0, len(m.watched))
	for pid := range m.watched {
		pids = append(pids, pid)
	}
	m.mu.Unlock()
	for _, pid := range pids {
		waits, err := m.waits(pid)
		m.mu.Lock()
		p := m.watched[pid]
		if err != nil {
			delete(m.watched, pid) // the process ended
			m.mu.Unlock()
			continue
		}
		for tid, w := range waits {
			th := p.threads[tid]
			if th == nil {
				th = &thread{open: -1}
				if !p.last.IsZero() {
					// Born since the last sample (it was not listed then):
					// all its run-queue wait came since, a new thread's
					// first wait for a CPU included. Taken as the base
					// instead, that wait went unrecorded: threads the Go
					// runtime started mid-run in the harness waited 45-183
					// ms for their first run at load 25, and in the IUT
					// agent up to 9 ms, with no span to show it.
					th.at, th.wait = append(th.at, p.last), append(th.wait, 0)
				}
				p.threads[tid] = th
			}
			m.account(p.name, th, now, w)
		}
		p.last = now
		for tid := range p.threads {
			if _, ok := waits[tid]; !ok {
				delete(p.threads, tid) // the thread ended
			}
		}
		m.mu.Unlock()
	}
}

// account adds thread th's cumulative wait w at now and records (or
// extends) a span when the thread waited at least Min within the last
// Window. Called with m.mu held.
func (m *Monitor) account(who string, th *thread, now time.Time, w uint64) {
	if n := len(th.wait); n > 0 && w < th.wait[n-1] {
		th.at, th.wait, th.open = th.at[:0], th.wait[:0], -1 // a reused tid
	}
	th.at, th.wait = append(th.at, now), append(th.wait, w)
	// Keep one sample at or before the window's start as the base.
	start := now.Add(-m.cfg.Window)
	drop := 0
	for drop+1 < len(th.at) && !th.at[drop+1].After(start) {
		drop++
	}
	th.at, th.wait = th.at[drop:], th.wait[drop:]
	n := len(th.wait)
	if n < 2 {
		return
	}
	if w == th.wait[n-2] {
		return // ran whenever it wanted since the last sample
	}
	lost := time.Duration(w - th.wait[0])
	if lost < m.cfg.Min {
		th.open = -1
		return
	}
	if th.open >= 0 && !m.spans[th.open].To.Before(th.at[0]) {
		// Still starved within the window of the open span: extend it by
		// what the thread waited since the last sample.
		s := &m.spans[th.open]
		s.To = now
		s.Lost += time.Duration(w - th.wait[n-2])
		return
	}
	m.spans = append(m.spans, Span{From: th.at[0], To: now, Who: who, Lost: lost})
	th.open = len(m.spans) - 1
}

// ProcessWait returns how long the threads of process pid have waited
// for a CPU while runnable since each started, summed (their schedstat
// run-queue waits): an error when the process is gone or the kernel keeps
// no schedstat. Two readings' difference, over the process's GOMAXPROCS,
// is about the wall time a process running that many threads at once
// lost to others in between (a test's limit on a child process).
func ProcessWait(pid int) (time.Duration, error) {
	waits, err := threadWaits(pid)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, w := range waits {
		sum += w
	}
	return time.Duration(sum), nil
}

// threadWaits returns the run-queue wait (ns) of every thread of pid.
func threadWaits(pid int) (map[int]uint64, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		if w, ok := parseSchedstat(string(b)); ok {
			out[tid] = w
		}
	}
	return out, nil
}

// parseSchedstat returns the second field of a schedstat line ("<on-cpu
// ns> <run-queue wait ns> <timeslices>").
func parseSchedstat(s string) (uint64, bool) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, false
	}
	w, err := strconv.ParseUint(f[1], 10, 64)
	return w, err == nil
}

// MostLostByOne is the most time one process (Span.Who) lost in spans,
// its stalls summed: what held a packet back at most. Summed over every
// watched process instead, processes kept waiting side by side on a
// loaded machine would count that wait several times over.
func MostLostByOne(spans []Span) time.Duration {
	by := map[string]time.Duration{}
	top := time.Duration(0)
	for _, s := range spans {
		by[s.Who] += s.Lost
		top = max(top, by[s.Who])
	}
	return top
}

// Overlaps returns the spans that overlap [from, to].
func Overlaps(spans []Span, from, to time.Time) []Span {
	var out []Span
	for _, s := range spans {
		if s.From.Before(to) && s.To.After(from) {
			out = append(out, s)
		}
	}
	return out
}

// Within returns the spans that overlap [from, to] cut to it: From and
// To clipped, Lost at most what remains of the span (a process loses no
// more time than passes). What a stall lost outside a window held
// nothing in it back: a wait that credits a window with its stalls'
// loss (the conformance suite's late-or-absent test) counts a 250 ms
// freeze that ended 1 ms into a 20 ms window as 1 ms, not 250 (Overlaps
// whole, it made every such window too stalled to judge). Lost may
// still exceed the window's share of a span whose waits came unevenly:
// the lenient reading, as Lost's.
func Within(spans []Span, from, to time.Time) []Span {
	var out []Span
	for _, s := range Overlaps(spans, from, to) {
		if s.From.Before(from) {
			s.From = from
		}
		if s.To.After(to) {
			s.To = to
		}
		s.Lost = min(s.Lost, s.To.Sub(s.From))
		out = append(out, s)
	}
	return out
}

// TimedOut returns the spans that explain an RPC's timeout, when errText
// (an agent Completion.Error, "<code>: <text>") says the RPC timed out
// (agent codes timeout and silent), else nil: those within [from, to],
// the RPC's life, cut to it (Within), when what they lost, summed,
// accounts for late, how much later than it should have the RPC ended
// (AtLeast). An RPC that timed out so is inconclusive, not charged: the
// stalls, not the implementation, may have kept its packets or its done
// event back. A stall that lost less than the lateness does not explain
// it (0.43 s of stalls excused 1 MB RPCs with no done event in 10 s), and
// any other failure (a wrong payload, unreachable) stays a failure.
func TimedOut(errText string, from, to time.Time, late time.Duration, spans []Span) []Span {
	code, _, _ := strings.Cut(errText, ":")
	if code != agent.CodeTimeout && code != agent.CodeSilent {
		return nil
	}
	return AtLeast(Within(spans, from, to), late)
}

// AtLeast returns spans when they lost, summed (Lost), at least late,
// else nil (also for no spans): the one test every excuse of a lateness
// by measured stalls makes (a finding's, Accounting; an RPC's timeout,
// TimedOut; the conformance suite's own expectations, stalledAtLeast).
func AtLeast(spans []Span, late time.Duration) []Span {
	if len(spans) == 0 || Lost(spans) < late {
		return nil
	}
	return spans
}

// Explaining returns the spans that explain timing finding f, judged over
// view (f's frame numbers are 1-based positions in it): those overlapping
// the time from the earliest of f's frames less f's tolerance to the
// latest plus the tolerance (a deadline runs after its frames, a "too
// early" silence before them). A finding without a tolerance (a wrong
// field, a wrong order) is never explained by a stall, nor one whose
// frames are outside view. A finding that says how late its event came
// (spec.Finding.Late) is explained only if the overlapping spans' losses,
// summed, could account for that lateness: a 63 ms stall does not excuse
// a GRANT a second late, whereas any overlap would.
func Explaining(f spec.Finding, view []spec.Event, spans []Span) []Span {
	return ExplainingAt(f, func(n int) (*spec.Event, bool) {
		if n < 1 || n > len(view) {
			return nil, false
		}
		return &view[n-1], true
	}, spans)
}

// ExplainingAt is Explaining over a view given by frame: at(n) is view
// frame n (1-based), false outside the view (spec.HostReport.Event).
func ExplainingAt(f spec.Finding, at func(n int) (*spec.Event, bool), spans []Span) []Span {
	if !f.Timing() || len(spans) == 0 {
		return nil
	}
	var from, to time.Time
	for _, n := range append([]int{f.Frame}, f.Frames...) {
		e, ok := at(n)
		if !ok {
			continue
		}
		t := e.Time
		if from.IsZero() || t.Before(from) {
			from = t
		}
		if t.After(to) {
			to = t
		}
	}
	if from.IsZero() {
		return nil
	}
	return Window(f, from, to, spans)
}

// Window returns the spans that explain timing finding f whose frames lie
// from from to to: those overlapping that time, widened by f's tolerance
// and back to the silence it judges (spec.Finding.Since), that could
// account for it (Accounting). ExplainingAt and check's stall sidecar
// both go through it.
func Window(f spec.Finding, from, to time.Time, spans []Span) []Span {
	if !f.Since.IsZero() && f.Since.Before(from) {
		from = f.Since // a silence the finding judges began before its frames
	}
	return Accounting(f, Overlaps(spans, from.Add(-f.Slack), to.Add(f.Slack)))
}

// Accounting returns the spans of over, those overlapping timing finding
// f's window, that could account for it, else nil. A finding that says
// how late its event came (spec.Finding.Late) needs their losses, summed
// (Lost), to be at least that. One whose event came too soon
// (spec.Finding.Early) is explained only by a stall that moved its
// reference (spec.EarlyRef): for a peer's packet, a stall between its
// arrival and the event (the host may not have processed it before its
// timer decided); for the host's own packet, stalls reaching its capture
// time (less f's tolerance) that lost at least Early (they may have held
// the packet back, never the timer); for the RPC's received first packet,
// none (a stall delays a host, it never makes a timer pass come sooner: a
// trial's run with the early-resend fault knob had RESENDs 24 µs after the
// RPC's first packet excused by a 45 ms stall). Any other finding is
// explained by any of over. Every stall excuse goes through it.
func Accounting(f spec.Finding, over []Span) []Span {
	if f.Early > 0 {
		var keep []Span
		for _, s := range over {
			switch f.EarlyRef {
			case spec.EarlyFromPeer:
				if s.To.After(f.EarlyAt) && s.From.Before(f.Time) {
					keep = append(keep, s)
				}
			case spec.EarlyFromOwn:
				if s.To.After(f.EarlyAt.Add(-f.Slack)) && s.From.Before(f.EarlyAt) {
					keep = append(keep, s)
				}
			}
		}
		if f.EarlyRef == spec.EarlyFromOwn && Lost(keep) < f.Early {
			return nil
		}
		over = keep
	}
	return AtLeast(over, f.Late)
}

// Lost is the time spans lost, summed. Spans of different processes (or
// threads) that overlap in time both count: each may have delayed a step
// of the exchange in turn, so the sum is what they could account for at
// most, the lenient reading.
func Lost(spans []Span) time.Duration {
	var d time.Duration
	for _, s := range spans {
		d += s.Lost
	}
	return d
}
