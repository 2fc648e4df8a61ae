package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// smallRPC runs RPC cid to completion: a request of reqLen bytes, a
// 100-byte response and the client's ACK (cutoff_version v in the DATA).
func (b *traceBuilder) smallRPC(cid uint64, reqLen uint32, v uint16) (first int) {
	ver := func(f *wire.DataFields) { f.CutoffVersion = v }
	first = b.data(true, cid, reqLen, 0, int(reqLen), 7, ver)
	b.after(50*time.Microsecond).data(false, cid, 100, 0, 100, 7, ver)
	b.after(2*time.Millisecond).ack(cid, cid)
	b.after(time.Millisecond)
	return first
}

func wantSections(t *testing.T, rep *Report, frames ...int) {
	t.Helper()
	if len(rep.Sections) != len(frames) {
		t.Fatalf("sections %+v, want them at frames %v", rep.Sections, frames)
	}
	for i, s := range rep.Sections {
		if s.Frame != frames[i] || s.Why == "" {
			t.Fatalf("sections %+v, want them at frames %v", rep.Sections, frames)
		}
	}
}

// TestRestartStartsSection: a client host whose RPC ids start again at 2
// after it was silent (its Homa module reloaded: homa_init) begins a new
// section: neither HOMA-ID-004 (id reuse) nor HOMA-WIRE-003 (the old RPC
// 2's length) judges the new incarnation against the old. Ids that go
// back without a fresh module's signs (the catalogue's ID-004 fault: back
// to 10 after 60 ms), or while the host is active, stay violations.
func TestRestartStartsSection(t *testing.T) {
	t.Run("ids-start-again", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		for _, id := range []uint64{2, 4, 6} {
			b.smallRPC(id, 100, 1)
		}
		restart := b.after(time.Second).smallRPC(2, 300, 1)
		rep := b.check("linux", "")
		for _, r := range []string{"HOMA-ID-004", "HOMA-WIRE-003"} {
			wantViolations(t, rep, r)
		}
		wantSections(t, rep, restart)
		if rep.Sections[0].Restarted != b.client {
			t.Errorf("restarted host %v, want %v", rep.Sections[0].Restarted, b.client)
		}
		if rep.RPCs != 4 {
			t.Errorf("%d RPCs, want 4 (3 before the restart, 1 after)", rep.RPCs)
		}
	})
	t.Run("fresh-cutoffs", func(t *testing.T) {
		// Not id 2 (the capture may miss it), but back to the lowest id
		// and cutoff_version 0 where the host had carried 1: a new
		// module knows no peer's cutoffs.
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(10, 100, 1)
		b.smallRPC(12, 100, 1)
		restart := b.after(time.Second).smallRPC(10, 100, 0)
		rep := b.check("linux", "")
		wantViolations(t, rep, "HOMA-ID-004")
		wantViolations(t, rep, "HOMA-CUTOFF-001")
		wantSections(t, rep, restart)
	})
	// Ids back without a fresh module's signs (the catalogue's fault:
	// back to 10, cutoff_version as before), and back at 2 after less
	// than timeout_ticks (100 ms; the host's peers may still hold its
	// RPCs): one incarnation, id reuse.
	for _, tc := range []struct {
		name   string
		first  uint64
		silent time.Duration
	}{{"id-back-without-restart", 10, 60 * time.Millisecond}, {"silent-less-than-timeout", 2, 50 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.smallRPC(tc.first, 100, 1)
			b.smallRPC(tc.first+2, 100, 1)
			reuse := b.after(tc.silent).smallRPC(tc.first, 100, 1)
			rep := b.check("linux", "")
			wantViolations(t, rep, "HOMA-ID-004", reuse)
			wantSections(t, rep)
		})
	}
	t.Run("active-host", func(t *testing.T) {
		// Ids back at 2 while the host is sending RPC 6's request.
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(2, 100, 1)
		b.smallRPC(4, 100, 1)
		b.after(25*time.Millisecond).data(true, 6, 20000, 0, 1424, 7, nil)
		reuse := b.after(5*time.Millisecond).data(true, 2, 100, 0, 100, 7, nil)
		rep := b.check("linux", "HOMA-ID-004")
		wantViolations(t, rep, "HOMA-ID-004", reuse)
		wantSections(t, rep)
	})
}

// TestTimeJumpStartsSection: a timestamp more than TimeJump before the
// previous frame's (captures joined with mergecap -a) starts a new
// section, so the second capture's RPC 2 is not judged against the
// first's (HOMA-WIRE-003); a step back within TimeJump is judged in file
// order as one section, where RPC 2 starting again with another length
// shows two instances interleaved (Report.Merged): the HOMA-WIRE-003
// finding is inconclusive, not a violation.
func TestTimeJumpStartsSection(t *testing.T) {
	for _, tc := range []struct {
		back    time.Duration
		section bool
	}{{back: 5 * time.Second, section: true}, {back: TimeJump + time.Millisecond, section: true}, {back: TimeJump - 10*time.Millisecond}} {
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(2, 100, 1)
		b.smallRPC(4, 100, 1)
		b.now = b.events[len(b.events)-1].Time.Add(-tc.back)
		jump := b.data(true, 2, 500, 0, 500, 7, nil)
		rep := b.check("linux", "HOMA-WIRE-003")
		if tc.section {
			wantSections(t, rep, jump)
			wantViolations(t, rep, "HOMA-WIRE-003")
		} else {
			wantSections(t, rep)
			wantMerged(t, rep, jump, "starts twice with different message lengths")
		}
	}
}

// TestRestartExcusesWhatTheHostOwed: an answer the restarted host owed
// when it went silent is not missed but inconclusive (CauseClose): the
// restart ended the RPC.
func TestRestartExcusesWhatTheHostOwed(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.smallRPC(2, 100, 1)
	b.data(true, 4, 3000, 0, 1424, 7, nil)
	resend := b.after(5*time.Millisecond).resend(false, 4, 1424, 1576, 7)
	restart := b.after(time.Second).smallRPC(2, 100, 1)
	rep := b.check("linux", "HOMA-RESEND-*")
	wantSections(t, rep, restart)
	for _, v := range rep.Violations {
		t.Errorf("violation %v", v)
	}
	found := false
	for _, f := range rep.Inconclusive {
		if f.Frame == resend && f.Cause == CauseClose {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding at the RESEND (frame %d) excused by the restart; inconclusive: %v", resend, rep.Inconclusive)
	}
}

// TestMovedRecord: a response's record moved 300 ms later in the file
// (by hand, editcap, a script), as a user trying check on a mangled copy
// did: the next request's ack of that RPC came before any byte of the
// response in the file (HOMA-ACK-004), and the response's timestamp
// then lies 300 ms back. The jump back begins a section, and so does
// the return to the time before it, which TimeJumps finds the same in
// the file's order; the ack's violation, found before the moved record
// at a time after its, is inconclusive (CauseTimeOrder), since the
// record was missing where its time puts it. The RPCs under way at
// the sections' starts are carried: none of them is taken for one the
// capture saw start when its packet shows up a timeout later.
func TestMovedRecord(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.after(time.Millisecond)
	b.data(true, 2, 100, 0, 100, 7, nil)
	resp := b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).dataAcking(true, 4, 100, 0, 100, 7, 2)
	b.after(50*time.Microsecond).data(false, 4, 100, 0, 100, 7, nil)
	for id := uint64(6); id < 36; id += 2 {
		b.after(20*time.Millisecond).smallRPC(id, 100, 0)
	}
	moved := append([]Event(nil), b.events[:resp-1]...)
	moved = append(moved, b.events[resp:]...)
	moved = append(moved, b.events[resp-1])
	tail := len(moved) + 1
	b.after(20*time.Millisecond).smallRPC(40, 100, 0)
	moved = append(moved, b.events[len(moved):]...)
	for i := range moved {
		moved[i].Frame = i + 1
	}
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	rep := Judge{Profile: "linux", Params: prof.Params, Rules: Rules()}.Capture(Switch, moved)
	jump := tail - 1
	wantSections(t, rep, jump, tail)
	if s := rep.Sections[0]; !strings.HasPrefix(s.Why, "timestamps jump ") || s.Back < 300*time.Millisecond {
		t.Errorf("section %+v: want a jump 300ms back", s)
	}
	if tj := TimeJumps(moved); len(tj) != 2 || tj[0].Frame != jump || tj[1].Frame != tail || tj[0].Why != rep.Sections[0].Why {
		t.Errorf("TimeJumps %+v, want the checker's sections %+v", tj, rep.Sections)
	}
	for _, v := range rep.Violations {
		if v.Rule == "HOMA-ACK-004" {
			t.Errorf("violation %v stands: the response it rests on was moved back past it", v)
		}
	}
	found := false
	for _, f := range rep.Inconclusive {
		found = found || f.Rule == "HOMA-ACK-004" && f.Cause == CauseTimeOrder
	}
	if !found {
		t.Errorf("no HOMA-ACK-004 inconclusive for %q: %+v", CauseTimeOrder, rep.Inconclusive)
	}
}

// TestTimeComesBackPast: after a jump back, the section of the return
// begins at the first time past the latest before the jump, not at a
// record at that very time (it lies within the time already judged).
// Before, a record at the latest time began it: one frame early.
func TestTimeComesBackPast(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var tl timeline
	steps := []struct {
		last, t int
		want    string
	}{
		{0, 1000, ""},
		{1000, 0, "timestamps jump "}, // back a second
		{0, 500, ""},
		{500, 1000, ""}, // the latest time before the jump: still within it
		{1000, 1001, "timestamps come back "},
		{1001, 1002, ""},
	}
	for i, s := range steps {
		why, _ := tl.step(at(s.last), at(s.t))
		if s.want == "" && why != "" || s.want != "" && !strings.HasPrefix(why, s.want) {
			t.Errorf("step %d (%dms to %dms): %q, want %q", i, s.last, s.t, why, s.want)
		}
	}
	ev := func(frame, ms int) Event { return Event{Frame: frame, Time: at(ms)} }
	tj := TimeJumps([]Event{ev(1, 1000), ev(2, 0), ev(3, 500), ev(4, 1000), ev(5, 1001)})
	if len(tj) != 2 || tj[0].Frame != 2 || tj[1].Frame != 5 {
		t.Errorf("TimeJumps %+v, want sections from frames 2 and 5", tj)
	}
}
