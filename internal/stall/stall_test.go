package stall

import (
	"context"
	"maps"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
)

func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"956784 2361884 6\n", 2361884, true},
		{"1 2", 2, true},
		{"1", 0, false},
		{"", 0, false},
		{"a b c", 0, false},
	} {
		if got, ok := parseSchedstat(c.in); got != c.want || ok != c.ok {
			t.Errorf("parseSchedstat(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestOverlaps(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []Span{{From: at(0), To: at(10)}, {From: at(20), To: at(30)}, {From: at(40), To: at(41)}}
	if got := Overlaps(spans, at(9), at(21)); len(got) != 2 {
		t.Errorf("[9,21] overlaps %d spans, want 2", len(got))
	}
	if got := Overlaps(spans, at(10), at(20)); len(got) != 0 {
		t.Errorf("[10,20] (touching only) overlaps %v, want none", got)
	}
	if got := Overlaps(spans, at(35), at(45)); len(got) != 1 || !got[0].From.Equal(at(40)) {
		t.Errorf("[35,45] overlaps %v, want the span at 40 ms", got)
	}
}

// TestWithin: overlapping spans are cut to the window, their loss to
// what remains of them (a 250 ms freeze that ends 1 ms into a window
// counts 1 ms, not 250: Overlaps counted it whole), and one within keeps
// its own smaller loss; spans only touching the window are left out.
func TestWithin(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	spans := []Span{
		{From: at(-249), To: at(1), Who: "frozen", Lost: ms(250)},
		{From: at(5), To: at(15), Who: "agent", Lost: ms(4)},
		{From: at(18), To: at(300), Who: "frozen", Lost: ms(282)},
		{From: at(20), To: at(30), Who: "after", Lost: ms(10)},
		{From: at(-20), To: at(0), Who: "before", Lost: ms(20)},
	}
	got := Within(spans, at(0), at(20))
	want := []Span{
		{From: at(0), To: at(1), Who: "frozen", Lost: ms(1)},
		{From: at(5), To: at(15), Who: "agent", Lost: ms(4)},
		{From: at(18), To: at(20), Who: "frozen", Lost: ms(2)},
	}
	if len(got) != len(want) {
		t.Fatalf("Within [0,20] ms = %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].From.Equal(want[i].From) || !got[i].To.Equal(want[i].To) || got[i].Who != want[i].Who || got[i].Lost != want[i].Lost {
			t.Errorf("span %d = %v, want %v", i, got[i], want[i])
		}
	}
	if l := MostLostByOne(got); l != ms(4) {
		t.Errorf("MostLostByOne(Within) = %v, want 4ms (the frozen process's 1+2 ms cut from 532 ms)", l)
	}
	if l := MostLostByOne(Overlaps(spans, at(0), at(20))); l != ms(532) {
		t.Errorf("MostLostByOne(Overlaps) = %v, want 532ms (whole spans)", l)
	}
}

// TestTimedOut: the stalls overlapping an RPC's life count only for a
// timeout (agent codes timeout and silent), and only when what they lost
// within its life accounts for its lateness (the old code took any
// overlapping stall: the 6 ms and 9 ms rows fail on it); a payload or
// unreachable failure inside a stall, and a timeout outside every stall,
// get none.
func TestTimedOut(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []Span{{From: at(10), To: at(20), Who: "agent on h2", Lost: 8 * time.Millisecond}}
	for _, c := range []struct {
		err      string
		from, to int
		late     time.Duration
		want     int
	}{
		{"timeout: homa: RPC timed out", 5, 15, 4 * time.Millisecond, 1},
		{"silent: no done event within 10s", 12, 30, 8 * time.Millisecond, 1},
		// The stall lost 8 ms, of which 5 ms within the RPC's life:
		// not the 6 ms it was late by (any overlap excused it before).
		{"timeout: homa: RPC timed out", 5, 15, 6 * time.Millisecond, 0},
		{"silent: no done event within 10s", 12, 30, 9 * time.Millisecond, 0},
		{"timeout: homa: RPC timed out", 25, 40, 0, 0},
		{"payload: response of 99 bytes, want 100", 5, 15, 0, 0},
		{"unreachable: no route", 5, 15, 0, 0},
		{"exited: agent exited", 5, 15, 0, 0},
		{"timeouts: not a code", 5, 15, 0, 0},
		{"", 5, 15, 0, 0},
	} {
		if got := TimedOut(c.err, at(c.from), at(c.to), c.late, spans); len(got) != c.want {
			t.Errorf("TimedOut(%q, %d..%d ms, %v late) = %v, want %d spans", c.err, c.from, c.to, c.late, got, c.want)
		}
	}
	if got := TimedOut("timeout: x", at(5), at(15), 0, nil); got != nil {
		t.Errorf("no measured stalls: %v, want none", got)
	}
}

// TestWatchedThreadStarved makes this process's threads wait for a CPU
// for certain: four busy OS threads per CPU cannot all run, so the
// watched threads accumulate run-queue wait far beyond Min.
func TestWatchedThreadStarved(t *testing.T) {
	if _, err := threadWaits(os.Getpid()); err != nil {
		t.Skipf("no /proc/self/task schedstat here: %v", err)
	}
	m := Start(Config{Min: time.Millisecond, Sample: 5 * time.Millisecond})
	defer m.Stop()
	m.Watch(os.Getpid(), "test")
	n := 4 * runtime.NumCPU()
	stop := busyThreads(n)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(m.Spans()) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	spans := m.Spans()
	if len(spans) == 0 {
		t.Fatalf("%d busy threads on %d CPUs for 10 s: no stall recorded", n, runtime.NumCPU())
	}
	for _, s := range spans {
		if s.Lost < time.Millisecond || !s.To.After(s.From) || s.Who == "" {
			t.Errorf("bad span %+v", s)
		}
	}
}

// TestProcessWait: this process's summed run-queue wait grows while more
// busy OS threads than CPUs run, and a process that is gone is an error.
func TestProcessWait(t *testing.T) {
	before, err := ProcessWait(os.Getpid())
	if err != nil {
		t.Skipf("no /proc/self/task schedstat here: %v", err)
	}
	n := 4 * runtime.NumCPU()
	stop := busyThreads(n)
	var after time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if after, err = ProcessWait(os.Getpid()); err != nil || after-before >= 5*time.Millisecond {
			break
		}
	}
	stop()
	if err != nil || after-before < 5*time.Millisecond {
		t.Fatalf("%d busy threads on %d CPUs for up to 10 s: wait grew from %v to %v (%v)", n, runtime.NumCPU(), before, after, err)
	}
	if _, err := ProcessWait(1 << 30); err == nil {
		t.Error("ProcessWait of a pid that does not exist: no error")
	}
}

// busyThreads keeps n goroutines spinning, each on its own OS thread,
// until the returned stop is called.
func busyThreads(n int) (stop func()) {
	done := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			for {
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	return func() { close(done) }
}

func TestExplaining(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	view := []spec.Event{{Time: at(0)}, {Time: at(10)}, {Time: at(100)}}
	spans := []Span{{From: at(40), To: at(80), Who: "agent h1", Lost: 40 * time.Millisecond}}
	cases := []struct {
		name string
		f    spec.Finding
		want bool
	}{
		{"answer late across the stall", spec.Finding{Frame: 2, Frames: []int{3}, Slack: time.Millisecond}, true},
		{"obligation whose deadline reaches the stall", spec.Finding{Frame: 2, Slack: 35 * time.Millisecond}, true},
		{"timing finding before the stall", spec.Finding{Frame: 1, Frames: []int{2}, Slack: 20 * time.Millisecond}, false},
		{"too early, the stall in the tolerance before it", spec.Finding{Frame: 3, Slack: 30 * time.Millisecond}, true},
		{"timing finding after the stall", spec.Finding{Frame: 3, Slack: 10 * time.Millisecond}, false},
		{"not a timing finding", spec.Finding{Frame: 2, Frames: []int{3}}, false},
		{"late by no more than the stall lost", spec.Finding{Frame: 2, Frames: []int{3}, Slack: time.Millisecond, Late: 40 * time.Millisecond}, true},
		{"late by more than the stall lost", spec.Finding{Frame: 2, Frames: []int{3}, Slack: time.Millisecond, Late: 41 * time.Millisecond}, false},
		{"a second late, a 40 ms stall", spec.Finding{Frame: 2, Frames: []int{3}, Slack: 25 * time.Millisecond, Late: time.Second}, false},
		{"frames outside the view", spec.Finding{Frame: 9, Slack: time.Second}, false},
		// A silence's end judged (a RESEND past timeout_ticks): a stall
		// during the silence kept the timer from counting.
		{"late after a silence the stall lay in", spec.Finding{Frame: 3, Time: at(100), Slack: time.Millisecond, Late: 30 * time.Millisecond, Since: at(5)}, true},
		{"late after a silence, more than the stall lost", spec.Finding{Frame: 3, Time: at(100), Slack: time.Millisecond, Late: 50 * time.Millisecond, Since: at(5)}, false},
		{"late after a silence that began after the stall", spec.Finding{Frame: 3, Time: at(100), Slack: time.Millisecond, Late: 10 * time.Millisecond, Since: at(90)}, false},
		// Too soon: a stall only delays a host or a packet, so it explains
		// an early event only by having moved its reference: a peer packet
		// the host had not processed (a stall between it and the event),
		// its own packet held back (stalls up to it that lost as much).
		{"too early after the RPC's received first packet", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: time.Millisecond, EarlyAt: at(95), EarlyRef: spec.EarlyFromStart}, false},
		{"too early after a peer packet that came during the stall", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: 19 * time.Millisecond, EarlyAt: at(50), EarlyRef: spec.EarlyFromPeer}, true},
		{"too early after a peer packet that came after the stall", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: time.Millisecond, EarlyAt: at(85), EarlyRef: spec.EarlyFromPeer}, false},
		{"too early after its own packet the stall may have held back", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: 40 * time.Millisecond, EarlyAt: at(75), EarlyRef: spec.EarlyFromOwn}, true},
		{"too early after its own packet by more than the stall lost", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: 41 * time.Millisecond, EarlyAt: at(75), EarlyRef: spec.EarlyFromOwn}, false},
		{"too early after its own packet sent before the stall", spec.Finding{Frame: 3, Time: at(100), Slack: 30 * time.Millisecond, Early: time.Millisecond, EarlyAt: at(30), EarlyRef: spec.EarlyFromOwn}, false},
	}
	for _, c := range cases {
		if got := Explaining(c.f, view, spans); (len(got) > 0) != c.want {
			t.Errorf("%s: Explaining = %v, want a span: %v", c.name, got, c.want)
		}
	}
	if got := Explaining(cases[0].f, view, nil); len(got) != 0 {
		t.Errorf("a finding explained by %v when nothing stalled", got)
	}
}

// TestSustainedStarvation: a thread that waits 3 ms of every 10 ms sample
// (never Min in one sample) is recorded once it has lost Min within the
// window, as one span that grows while the starvation lasts and ends when
// the thread keeps up; a lone short wait is not a stall.
func TestSustainedStarvation(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var wait uint64 // thread 7's cumulative run-queue wait, ns
	m := &Monitor{cfg: Config{Min: 5 * time.Millisecond, Sample: 10 * time.Millisecond, Window: 50 * time.Millisecond}.withDefaults(),
		watched: map[int]*proc{}, waits: func(int) (map[int]uint64, error) { return map[int]uint64{7: wait}, nil }}
	m.Watch(42, "agent h1")
	ms := uint64(time.Millisecond)
	for i := 0; i <= 100; i += 10 { // starved: 3 ms per sample from 10 to 100 ms
		if i > 0 {
			wait += 3 * ms
		}
		m.sample(at(i))
	}
	for i := 110; i <= 300; i += 10 { // keeps up, then one 2 ms wait at 250 ms
		if i == 250 {
			wait += 2 * ms
		}
		m.sample(at(i))
	}
	spans := m.Spans()
	if len(spans) != 1 {
		t.Fatalf("spans %v, want one", spans)
	}
	s := spans[0]
	// At 20 ms the window [0,20] holds 6 ms ≥ Min: the span opens there
	// and grows by 3 ms per sample up to 100 ms.
	if !s.From.Equal(at(0)) || !s.To.Equal(at(100)) || s.Lost != 30*time.Millisecond || s.Who != "agent h1" {
		t.Errorf("span %v (from %v to %v, lost %v), want agent h1 from 0 to 100 ms, lost 30ms", s, s.From.Sub(t0), s.To.Sub(t0), s.Lost)
	}
}

// TestNewThreadStarved: a thread that appears after its process's first
// sample was born since the sample before, so all of its run-queue wait
// (its wait for a first run included) is a stall there: 80 ms before its
// first sample is a span from that sample before to it. The old monitor
// took the first reading as the base and recorded nothing. A thread
// listed at the process's first sample keeps its reading as the base:
// the wait of a process not yet watched is no stall of the run.
func TestNewThreadStarved(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := uint64(time.Millisecond)
	waits := map[int]uint64{7: 0, 9: 500 * ms}
	m := &Monitor{cfg: Config{Min: 5 * time.Millisecond, Sample: 10 * time.Millisecond, Window: 50 * time.Millisecond}.withDefaults(),
		watched: map[int]*proc{}, waits: func(int) (map[int]uint64, error) { return maps.Clone(waits), nil }}
	m.Watch(42, "IUT agent on h1")
	m.sample(at(0))
	if spans := m.Spans(); len(spans) != 0 {
		t.Fatalf("first sample: spans %v, want none (waits before the watch are no stall)", spans)
	}
	waits[8] = 80 * ms // born after the first sample; waited 80 ms to run
	m.sample(at(10))
	spans := m.Spans()
	if len(spans) != 1 {
		t.Fatalf("spans %v, want one for the new thread's 80 ms", spans)
	}
	if s := spans[0]; !s.From.Equal(at(0)) || !s.To.Equal(at(10)) || s.Lost != 80*time.Millisecond || s.Who != "IUT agent on h1" {
		t.Errorf("span %v (from %v to %v, lost %v), want IUT agent on h1 from 0 to 10 ms, lost 80ms", s, s.From.Sub(t0), s.To.Sub(t0), s.Lost)
	}
	waits[10] = 2 * ms // a new thread that waited less than Min is no stall
	m.sample(at(20))
	if spans := m.Spans(); len(spans) != 1 {
		t.Errorf("spans %v after a new thread's 2 ms wait, want still one", spans)
	}
}

// TestSettle: Settle(t) returns only once a sample went Window past t
// (a stall covering t is recorded by then), at once for a t that far
// back, and when the context ends or the monitor stops. Samples are
// driven by hand, so no verdict depends on the machine's speed.
func TestSettle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	m := &Monitor{cfg: Config{Sample: time.Millisecond, Window: 50 * time.Millisecond}.withDefaults(),
		watched: map[int]*proc{}, stop: make(chan struct{}), waits: func(int) (map[int]uint64, error) { return nil, nil }}
	done := make(chan struct{})
	go func() {
		m.Settle(context.Background(), at(10))
		close(done)
	}()
	m.sample(at(59)) // 49 ms past t: not yet
	select {
	case <-done:
		t.Fatal("Settle returned before a sample went Window past t")
	default:
	}
	m.sample(at(60))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Settle did not return after a sample Window past t")
	}
	m.Settle(context.Background(), at(5)) // long past: at once

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.Settle(ctx, at(1000)) // an ended context: at once
	close(m.stop)
	m.Settle(context.Background(), at(1000)) // a stopped monitor: at once
}

// TestWatchSoftirq: on Linux every CPU has a ksoftirqd kernel thread; the
// monitor watches one per CPU, named after it, and samples its run-queue
// wait like any watched thread's.
func TestWatchSoftirq(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc:", err)
	}
	m := &Monitor{cfg: Config{}.withDefaults(), watched: map[int]*proc{}, waits: threadWaits}
	n := m.WatchSoftirq()
	if n < 1 || n > runtime.NumCPU()*2 {
		t.Fatalf("WatchSoftirq found %d threads on %d CPUs", n, runtime.NumCPU())
	}
	seen := 0
	for pid, p := range m.watched {
		if !strings.HasPrefix(p.name, "kernel ksoftirqd/") {
			t.Errorf("pid %d watched as %q", pid, p.name)
		}
		waits, err := threadWaits(pid)
		if err != nil || len(waits) != 1 {
			t.Errorf("%s: waits %v, %v: want its one thread's", p.name, waits, err)
		}
		seen++
	}
	if seen != n {
		t.Errorf("watched %d, WatchSoftirq said %d", seen, n)
	}
}

// TestMostLostByOne: one process's stalls add up; two processes waiting
// side by side count once, as the larger.
func TestMostLostByOne(t *testing.T) {
	spans := []Span{
		{Who: "harness", Lost: 10 * time.Millisecond},
		{Who: "agent h1", Lost: 12 * time.Millisecond},
		{Who: "harness", Lost: 5 * time.Millisecond},
	}
	if got := MostLostByOne(spans); got != 15*time.Millisecond {
		t.Errorf("MostLostByOne = %v, want 15ms (the harness's two stalls)", got)
	}
	if got := MostLostByOne(nil); got != 0 {
		t.Errorf("MostLostByOne(nil) = %v, want 0", got)
	}
}
