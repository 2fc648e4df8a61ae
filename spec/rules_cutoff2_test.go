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
