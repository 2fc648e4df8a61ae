package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestCutoff001UnannouncedVersion: the server announced version 1; DATA
// right after it (within the slack that excuses DATA queued before the
// CUTOFFS arrived) may carry 0 or 1 but not 2, a version the server never
// sent: no queueing explains it.
func TestCutoff001UnannouncedVersion(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(10*time.Microsecond).dataVersion(true, 4, 100, 0, 100, 6, 0)
	bad := b.after(10*time.Microsecond).dataVersion(true, 6, 100, 0, 100, 7, 2)
	b.after(10*time.Microsecond).dataVersion(true, 8, 100, 0, 100, 7, 1)
	rep := b.check("linux", "HOMA-CUTOFF-001")
	wantViolations(t, rep, "HOMA-CUTOFF-001", bad)
}

// TestCutoff001RestartedReceiver: a sender carried version 5 (learned
// before the capture); the receiver, restarted, counts from 1 again and
// announces it: DATA queued before the CUTOFFS arrived still carry 5
// within slack (legal), and so may DATA seen right after a CUTOFFS that
// opens the capture (what the sender held is unknown).
func TestCutoff001RestartedReceiver(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 5)
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(10*time.Microsecond).dataVersion(true, 4, 100, 0, 100, 6, 5)
	b.after(10*time.Microsecond).dataVersion(true, 8, 100, 0, 100, 7, 1)
	wantClean(t, b.check("linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001")

	b = newTrace(t, wire.VersionCurrent)
	b.cutoffs(false, 2, 1)
	b.after(10*time.Microsecond).dataVersion(true, 4, 100, 0, 100, 6, 5)
	b.after(10*time.Microsecond).dataVersion(true, 8, 100, 0, 100, 7, 1)
	wantClean(t, b.check("linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001")
}

// TestInferMaxSchedPrio: CUTOFFS whose lowest unscheduled level is 5 imply
// max_sched_prio 4 (HomaModule derives it from the cutoffs).
func TestInferMaxSchedPrio(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.emit(false, 7, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: 3},
		UnschedCutoffs: [8]uint32{0x7fffffff, 0, 0, 0, 0, 1000000, 5000, 500}, CutoffVersion: 2}, nil)
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	in := NewInferrer(prof.Params)
	for i := range b.events {
		in.Feed(&b.events[i])
	}
	for _, x := range in.Result() {
		if x.Name == "max_sched_prio" {
			if x.Value != "4" {
				t.Fatalf("max_sched_prio inferred %s, want 4", x.Value)
			}
			return
		}
	}
	t.Fatalf("max_sched_prio not inferred: %+v", in.Result())
}

// TestCutoff001LateOlderCutoffs: a CUTOFFS of version 1 that the network
// delayed reaches the client after the server's version 2: the client
// takes the last CUTOFFS that arrives (homa_cutoffs_pkt overwrites
// peer->cutoff_version), so its DATA carry 1 again, legally. The server's
// next CUTOFFS (version 2 again, answering that stale DATA) starts a new
// allowance: DATA queued before it arrived may still carry 1, and only
// DATA well after it must carry 2, judged from it, not from the first
// version 2 CUTOFFS.
func TestCutoff001LateOlderCutoffs(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(time.Millisecond).dataVersion(true, 4, 100, 0, 100, 6, 1)
	b.after(time.Millisecond).cutoffs(false, 4, 2)
	b.after(10*time.Microsecond).dataVersion(true, 6, 100, 0, 100, 6, 2)
	b.after(5*time.Millisecond).cutoffs(false, 2, 1) // the late version 1
	b.after(time.Millisecond).dataVersion(true, 8, 100, 0, 100, 6, 1)
	again := b.after(20*time.Microsecond).cutoffs(false, 8, 2)
	b.after(10*time.Microsecond).dataVersion(true, 10, 100, 0, 100, 6, 1) // queued before it arrived
	b.after(10*time.Microsecond).dataVersion(true, 12, 100, 0, 100, 6, 2)
	stale := b.after(5*time.Millisecond).dataVersion(true, 14, 100, 0, 100, 6, 1)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-CUTOFF-001")
	wantViolations(t, rep, "HOMA-CUTOFF-001", stale)
	if f := rep.Violations[0]; len(f.Frames) != 1 || f.Frames[0] != again {
		t.Errorf("finding %+v: want it judged from the latest run's first CUTOFFS, frame %d", f, again)
	}
}

// TestCutoff001CutoffsOrderUnknown: on the server's link the capture sees
// the CUTOFFS leave, not the order they reach the client: DATA carrying
// version 1 after a version 2 CUTOFFS seen 2 ms after a version 1 one is
// inconclusive there (the two may have swapped on the way, and the client
// rightly hold 1), a violation on the client's link (which shows the order
// they arrived in). A version 2 CUTOFFS seen longer than response_timeout
// plus slack after the version 1 one reached the client after it: DATA
// queued before it arrived may carry 1, later ones may not (once the
// client's DATA at that level show 2), judged from it.
func TestCutoff001CutoffsOrderUnknown(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(2*time.Millisecond).dataVersion(true, 4, 100, 0, 100, 6, 1)
	b.after(20*time.Microsecond).cutoffs(false, 4, 2)
	stale := b.after(5*time.Millisecond).dataVersion(true, 6, 100, 0, 100, 6, 1)
	wantInconclusive(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001", stale)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001", stale)
	late := b.after(time.Second).dataVersion(true, 8, 100, 0, 100, 6, 1)
	again := b.after(20*time.Microsecond).cutoffs(false, 8, 2)
	b.after(10*time.Microsecond).dataVersion(true, 10, 100, 0, 100, 6, 1) // queued before it arrived
	b.after(10*time.Microsecond).dataVersion(true, 12, 100, 0, 100, 6, 2)
	stale2 := b.after(5*time.Millisecond).dataVersion(true, 14, 100, 0, 100, 6, 1)
	rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-CUTOFF-001")
	wantInconclusive(t, rep, "HOMA-CUTOFF-001", stale)
	wantInconclusive(t, rep, "HOMA-CUTOFF-001", late)
	wantViolations(t, rep, "HOMA-CUTOFF-001", stale2)
	if f := rep.Violations[0]; len(f.Frames) != 1 || f.Frames[0] != again {
		t.Errorf("finding %+v: want it judged from frame %d", f, again)
	}
}

// TestCutoff004Tables: HomaModule's homa_prios_changed keeps the
// CUTOFFS table consistent with num_priorities: entry 0 INT_MAX, entries
// at or above num_priorities 0, max_sched_prio one below the lowest
// unscheduled level, or 0 when only entry 0 holds a message of
// HOMA_MAX_MESSAGE_LENGTH (num_priorities 4 with the default cutoffs).
// Tables it cannot produce are violations.
func TestCutoff004Tables(t *testing.T) {
	const intMax = 0x7fffffff
	for _, c := range []struct {
		name   string
		cut    [8]uint32
		params []string
		ok     bool
	}{
		{"defaults", [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, nil, true},
		{"prios-changed-8", [8]uint32{intMax, 0, 0, 0, 1000000, 15000, 2800, 200}, nil, true},
		{"prios-changed-4", [8]uint32{intMax, 0, 0, 0, 0, 0, 0, 0}, []string{"num_priorities=4", "max_sched_prio=0"}, true},
		{"prios-changed-1", [8]uint32{intMax, 0, 0, 0, 0, 0, 0, 0}, []string{"max_sched_prio=0", "num_priorities=1"}, true},
		{"only-entry-0-but-sched-3", [8]uint32{intMax, 0, 0, 0, 0, 0, 0, 0}, []string{"num_priorities=4"}, false},
		{"none-holds-long", [8]uint32{0, 0, 0, 0, 0, 0, 0, 0}, []string{"num_priorities=4", "max_sched_prio=0"}, false},
		{"increasing", [8]uint32{0, 0, 0, 0, 1000000, 2800, 15000, 200}, nil, false},
		{"entry-0", [8]uint32{5, 0, 0, 0, 1000000, 15000, 2800, 200}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			f := b.emit(false, 7, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: sid(2, false)}, UnschedCutoffs: c.cut, CutoffVersion: 2}, nil)
			rep := b.check("linux", "HOMA-CUTOFF-004", c.params...)
			if c.ok {
				wantViolations(t, rep, "HOMA-CUTOFF-004")
			} else {
				wantViolations(t, rep, "HOMA-CUTOFF-004", f)
			}
		})
	}
}

// TestInferredTickWithinJitter: a tick measured within the timestamp
// noise (Params.Jitter) of the configured one is that tick, not another
// setting: Apply leaves the parameters alone (check starred 4.995ms of a
// 5ms tick as differing); one further off is applied.
func TestInferredTickWithinJitter(t *testing.T) {
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	p := prof.Params
	p.Tick, p.Jitter = 5*time.Millisecond, 200*time.Microsecond
	for _, c := range []struct {
		value string
		want  bool
	}{{"4.995ms", false}, {"5.2ms", false}, {"4.7ms", true}, {"1ms", true}} {
		q := p
		if got := (Inferred{Name: "tick", Value: c.value}).Apply(&q); got != c.want {
			t.Errorf("tick %s inferred of 5ms (jitter 200µs): Apply %v, want %v", c.value, got, c.want)
		}
	}
}

// TestCutoff005StaleDataOfSeveralRPCs: HomaModule checks and sets a
// peer's last_update_jiffies under the lock of the RPC whose stale DATA it
// is handling (homa_data_pkt), not the peer's, and records the jiffy only
// after the CUTOFFS is sent: cores handling stale DATA of two RPCs from
// one peer may each send a CUTOFFS in the same jiffy. With stale DATA of
// two RPCs arriving, four CUTOFFS within a few microseconds (two jiffies'
// worth, a jiffy boundary between) are inconclusive; a fifth, or the same
// burst answering one RPC's DATA (whose packets one lock serialises),
// stays a violation.
func TestCutoff005StaleDataOfSeveralRPCs(t *testing.T) {
	burst := func(rpcs []uint64, n int) (*traceBuilder, []int) {
		b := newTrace(t, wire.VersionCurrent)
		var cut []int
		for i := range n {
			cid := rpcs[i%len(rpcs)]
			b.after(time.Microsecond).data(true, cid, 30000, uint32(i)*1424, 1424, 6, func(f *wire.DataFields) { f.CutoffVersion = 0 })
			cut = append(cut, b.after(time.Microsecond).cutoffs(false, cid, 1))
		}
		return b, cut
	}
	const id = "HOMA-CUTOFF-005"
	b, cut := burst([]uint64{2, 4}, 4)
	rep := b.checkAt(HostPoint(b.server), "linux", id)
	wantViolations(t, rep, id)
	wantInconclusive(t, rep, id, cut[2])
	wantInconclusive(t, rep, id, cut[3])

	b, cut = burst([]uint64{2, 4}, 5)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", id), id, cut[4])

	b, cut = burst([]uint64{2}, 4)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", id), id, cut[2], cut[3])
}

// TestCutoff005OneRPCsBurstAmongStaleRPCs: each CUTOFFS names the RPC
// whose stale DATA it answers (homa_xmit_control sends it with that RPC's
// id), and that RPC's DATA are handled under its lock, which also records
// the peer's jiffy: CUTOFFS all naming one RPC come one per jiffy even while
// stale DATA of other RPCs from the peer arrive (here RPC 4's, 3 ms
// earlier, and interleaved). A burst of them stays a violation.
func TestCutoff005OneRPCsBurstAmongStaleRPCs(t *testing.T) {
	const id = "HOMA-CUTOFF-005"
	stale := func(f *wire.DataFields) { f.CutoffVersion = 0 }
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 4, 30000, 0, 1424, 6, stale)
	b.after(time.Microsecond).cutoffs(false, 4, 1)
	b.after(3 * time.Millisecond)
	var cut []int
	for i := range 4 {
		b.after(time.Microsecond).data(true, 2+2*uint64(i%2), 30000, uint32(i/2+1)*1424, 1424, 6, stale)
		cut = append(cut, b.after(time.Microsecond).cutoffs(false, 2, 1))
	}
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", id), id, cut[2], cut[3])
}
