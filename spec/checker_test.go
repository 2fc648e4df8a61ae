package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Engine tests: small rules of each form, built here, run over hand-made
// traces. The rule tests (rules_*_test.go) share the builder helpers at the
// end of this file.

// busyWithin: every RESEND must be followed by a BUSY for the same RPC
// within response_timeout (20 ms in profile linux).
func busyWithin() *Rule {
	return &Rule{ID: "HOMA-TEST-001", Level: Should, Statement: "s", Source: "s", Property: Within{
		Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
			if e.Type() != wire.TypeResend {
				return Obligation{}, false
			}
			k := KeyOf(e)
			return Obligation{Key: k, Expect: "BUSY", Match: func(c *Ctx, x *Event) bool {
				return x.Type() == wire.TypeBusy && KeyOf(x) == k
			}}, true
		},
		Bound: func(p *Params) time.Duration { return p.ResponseTimeout },
	}}
}

// busyAfter: BUSY only after a RESEND for the same RPC (no longer than
// bound before, if bound > 0).
func busyAfter(bound time.Duration) *Rule {
	p := After{
		A:       func(c *Ctx, e *Event) (rpcMsgKey, bool) { return rpcMsgKey{RPC: KeyOf(e)}, e.Type() == wire.TypeResend },
		B:       func(c *Ctx, e *Event) (rpcMsgKey, bool) { return rpcMsgKey{RPC: KeyOf(e)}, e.Type() == wire.TypeBusy },
		Missing: "BUSY without RESEND",
	}
	if bound > 0 {
		p.Bound = func(*Params) time.Duration { return bound }
	}
	return &Rule{ID: "HOMA-TEST-002", Level: Must, Statement: "s", Source: "s", Property: p}
}

// flagFrames: an Each rule violated at the given frames, passed elsewhere.
func flagFrames(id string, status Status, frames ...int) *Rule {
	return &Rule{ID: id, Level: Must, Statement: "s", Source: "s", Property: Each{Check: func(c *Ctx, e *Event) Result {
		for _, f := range frames {
			if e.Frame == f {
				return Result{Status: status, detail: &resultDetail{why: "flagged"}}
			}
		}
		return Pass()
	}}}
}

// runRules runs rules (which need not be registered) over the trace with
// profile linux.
func (b *traceBuilder) runRules(rules ...*Rule) *Report {
	b.t.Helper()
	prof, err := LookupProfile("linux")
	if err != nil {
		b.t.Fatal(err)
	}
	c := NewChecker("linux", prof.Params, rules)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	return c.Finish()
}

// ruleResult returns the counts of rule id in rep.
func ruleResult(t *testing.T, rep *Report, id string) RuleResult {
	t.Helper()
	for _, rr := range rep.Rules {
		if rr.ID == id {
			return rr
		}
	}
	t.Fatalf("%s not in report", id)
	return RuleResult{}
}

// wantCounts asserts the checked/passed/violated/inconclusive counts of id.
func wantCounts(t *testing.T, rep *Report, id string, checked, passed, violated, inconclusive int) {
	t.Helper()
	rr := ruleResult(t, rep, id)
	if rr.Checked != checked || rr.Passed != passed || rr.Violated != violated || rr.Inconclusive != inconclusive {
		t.Fatalf("%s: checked %d passed %d violated %d inconclusive %d, want %d %d %d %d; violations %v inconclusive %v",
			id, rr.Checked, rr.Passed, rr.Violated, rr.Inconclusive, checked, passed, violated, inconclusive, rep.Violations, rep.Inconclusive)
	}
}

// onlyFinding returns the only finding of rule id in fs.
func onlyFinding(t *testing.T, fs []Finding, id string) Finding {
	t.Helper()
	var out []Finding
	for _, f := range fs {
		if f.Rule == id {
			out = append(out, f)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d findings of %s, want 1: %v", len(out), id, fs)
	}
	return out[0]
}

func TestWithinDischarged(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(19*time.Millisecond).ctl(false, 2, wire.TypeBusy) // 19 ms: inside the 20 ms
	rep := b.runRules(busyWithin())
	wantCounts(t, rep, "HOMA-TEST-001", 1, 1, 0, 0)
}

// TestWithinViolatedPastBound: the finding names the trigger's frame, time
// and RPC, and is reported when the first packet past the deadline shows up.
func TestWithinViolatedPastBound(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(5 * time.Millisecond)
	trig := b.resend(true, 2, 0, wire.ResendAll, 7)
	trigTime := b.now
	b.after(10*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil) // another RPC, inside the bound
	next := b.after(11*time.Millisecond).data(true, 6, 100, 0, 100, 7, nil)
	rep := b.runRules(busyWithin())
	wantViolations(t, rep, "HOMA-TEST-001", trig)
	wantCounts(t, rep, "HOMA-TEST-001", 1, 0, 1, 0)
	f := onlyFinding(t, rep.Violations, "HOMA-TEST-001")
	if !f.Time.Equal(trigTime) || f.RPC == nil || f.RPC.ClientID != 2 {
		t.Errorf("finding %+v: want the trigger's time %v and RPC 2", f, trigTime)
	}
	if want := "no BUSY within 20ms (next packet 21ms later, frame 4)"; f.Why != want || next != 4 {
		t.Errorf("why %q, want %q", f.Why, want)
	}
}

// TestWithinLateMatchIsViolation: the awaited packet itself arriving past
// the bound (with no packet in between) is too late, not a pass.
func TestWithinLateMatchIsViolation(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	trig := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	late := b.after(25*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	rep := b.runRules(busyWithin())
	wantViolations(t, rep, "HOMA-TEST-001", trig)
	f := onlyFinding(t, rep.Violations, "HOMA-TEST-001")
	if len(f.Frames) != 1 || f.Frames[0] != late || !strings.Contains(f.Why, "came only 25ms later") {
		t.Errorf("finding %+v: want the late BUSY's frame %d and its delay", f, late)
	}
}

// TestWithinInconclusiveAtEnd: the capture ends before the deadline.
func TestWithinInconclusiveAtEnd(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	trig := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)
	b.after(15*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	rep := b.runRules(busyWithin())
	wantViolations(t, rep, "HOMA-TEST-001")
	wantInconclusive(t, rep, "HOMA-TEST-001", trig)
	wantCounts(t, rep, "HOMA-TEST-001", 1, 0, 0, 1)
}

// TestWithinDeadlinePassedAtEnd: the last event of the capture is past the
// deadline but is not judged (a malformed frame), so Finish reports the
// violation.
func TestWithinDeadlinePassedAtEnd(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil) // the RPC starts in the capture
	trig := b.resend(true, 2, 0, wire.ResendAll, 7)
	b.after(30 * time.Millisecond)
	b.frame++
	b.events = append(b.events, Event{Frame: b.frame, Time: b.now, Src: b.client, Dst: b.server, Err: errors.New("truncated")})
	rep := b.runRules(busyWithin())
	wantViolations(t, rep, "HOMA-TEST-001", trig)
	if f := onlyFinding(t, rep.Violations, "HOMA-TEST-001"); !strings.Contains(f.Why, "capture ended 30ms later") {
		t.Errorf("why %q", f.Why)
	}
}

// TestWithinSameKeyKeepsEarliestDeadline: a newer trigger with the same key
// is folded into the open obligation and does not postpone its deadline
// (else a trigger repeated more often than the bound, like NEED_ACK every
// tick, could never fail); one BUSY answers both; other keys are separate.
func TestWithinSameKeyKeepsEarliestDeadline(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.data(true, 4, 100, 0, 100, 7, nil)
	first := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7) // t=5
	b.resend(true, 4, 0, wire.ResendAll, 7)                                    // t=5, RPC 4
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)          // t=10: folded into first
	b.ctl(false, 4, wire.TypeBusy)                                             // answers RPC 4
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)          // t=15: folded
	b.after(11*time.Millisecond).ctl(false, 2, wire.TypeBusy)                  // t=26: 21 ms after first
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)          // t=30: a new obligation
	b.after(time.Millisecond).ctl(false, 2, wire.TypeBusy)
	rep := b.runRules(busyWithin())
	wantViolations(t, rep, "HOMA-TEST-001", first)
	wantCounts(t, rep, "HOMA-TEST-001", 3, 2, 1, 0) // first violated; other and again passed
}

func TestAfterWithoutBound(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	early := b.ctl(false, 2, wire.TypeBusy)                           // no RESEND yet
	b.after(5*time.Millisecond).resend(true, 4, 0, wire.ResendAll, 7) // another RPC's RESEND
	wrong := b.ctl(false, 2, wire.TypeBusy)
	b.resend(true, 2, 0, wire.ResendAll, 7)
	b.after(time.Second).ctl(false, 2, wire.TypeBusy) // any time later
	rep := b.runRules(busyAfter(0))
	wantViolations(t, rep, "HOMA-TEST-002", early, wrong)
	wantCounts(t, rep, "HOMA-TEST-002", 3, 1, 2, 0)
	if f := rep.Violations[0]; f.Why != "BUSY without RESEND" {
		t.Errorf("why %q, want the Missing text", f.Why)
	}
}

func TestAfterWithBound(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	a := b.resend(true, 2, 0, wire.ResendAll, 7)
	b.after(5*time.Millisecond).ctl(false, 2, wire.TypeBusy)           // 5 ms after: pass
	stale := b.after(10*time.Millisecond).ctl(false, 2, wire.TypeBusy) // 15 ms after the RESEND
	b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7)  // a newer A restarts the bound
	b.after(9*time.Millisecond).ctl(false, 2, wire.TypeBusy)
	rep := b.runRules(busyAfter(10 * time.Millisecond))
	wantViolations(t, rep, "HOMA-TEST-002", stale)
	wantCounts(t, rep, "HOMA-TEST-002", 3, 2, 1, 0)
	f := onlyFinding(t, rep.Violations, "HOMA-TEST-002")
	if f.Why != "BUSY without RESEND: the last one was 15ms earlier, over 10ms" {
		t.Errorf("why %q", f.Why)
	}
	// A timing finding: the bound is its tolerance and the A packet one of
	// its frames, so a stall measured between the two can explain it.
	if f.Slack != 10*time.Millisecond || !slices.Equal(f.Frames, []int{a}) {
		t.Errorf("tolerance %v, frames %v: want 10ms and [%d]", f.Slack, f.Frames, a)
	}
}

func TestAtMost(t *testing.T) {
	r := &Rule{ID: "HOMA-TEST-003", Level: Must, Statement: "s", Source: "s", Property: AtMost{
		Types: []wire.PacketType{wire.TypeAck},
		What:  func(*Event) string { return "acks in the packet" },
		Measure: func(c *Ctx, e *Event) (int64, int64, bool) {
			n := e.Packet.Ack().ValidAcks()
			return int64(n), 2, n > 0 // ACKs without entries are not measured
		}}}
	b := newTrace(t, wire.VersionCurrent)
	b.ack(2)
	b.ack(2, 4)
	b.ack(2, 4, 6)
	over := b.ack(2, 4, 6, 8)
	b.data(true, 10, 100, 0, 100, 7, nil) // not of Types
	rep := b.runRules(r)
	wantViolations(t, rep, "HOMA-TEST-003", over)
	wantCounts(t, rep, "HOMA-TEST-003", 3, 2, 1, 0)
	if f := onlyFinding(t, rep.Violations, "HOMA-TEST-003"); f.Why != "acks in the packet is 3, above the limit 2" {
		t.Errorf("why %q", f.Why)
	}
}

// TestTimestampsStepBack: capture clocks can step backwards (facts §8).
// Deadlines run on the capture time elapsed, counting forward steps only:
// a trigger after the step is not judged against the time before it, and
// a deadline still expires after a step within TimeJump (a larger one
// starts a new section: TestTimeJumpStartsSection).
func TestTimestampsStepBack(t *testing.T) {
	t.Run("trigger after the step", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(100*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
		b.after(-time.Second).resend(true, 2, 0, wire.ResendAll, 7) // clock steps back 1 s
		b.after(time.Millisecond).ctl(false, 2, wire.TypeBusy)
		rep := b.runRules(busyWithin(), busyAfter(10*time.Millisecond))
		wantCounts(t, rep, "HOMA-TEST-001", 1, 1, 0, 0)
		wantCounts(t, rep, "HOMA-TEST-002", 1, 1, 0, 0)
	})
	t.Run("deadline across the step", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		trig := b.resend(true, 2, 0, wire.ResendAll, 7)
		b.after(5*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)          // elapsed 5
		b.after(-50*time.Millisecond).data(true, 6, 100, 0, 100, 7, nil)        // step back: elapsed 5
		b.after(10*time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)         // elapsed 15
		past := b.after(6*time.Millisecond).data(true, 10, 100, 0, 100, 7, nil) // elapsed 21
		rep := b.runRules(busyWithin())
		wantViolations(t, rep, "HOMA-TEST-001", trig)
		if f := onlyFinding(t, rep.Violations, "HOMA-TEST-001"); !strings.Contains(f.Why, "21ms later") || past != 6 {
			t.Errorf("why %q", f.Why)
		}
	})
	t.Run("after bound across the step", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.resend(true, 2, 0, wire.ResendAll, 7)
		// A step back within TimeJump: one section, judged across.
		b.after(-50*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
		stale := b.after(12*time.Millisecond).ctl(false, 2, wire.TypeBusy)
		rep := b.runRules(busyAfter(10 * time.Millisecond))
		wantViolations(t, rep, "HOMA-TEST-002", stale)
	})
}

// TestMaxFindingsKeepsCountsExact: at most MaxFindings findings per rule
// and kind are kept, but the counts cover every evaluation.
func TestMaxFindingsKeepsCountsExact(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	var bad, unsure []int
	for i := range 3 * MaxFindings {
		f := b.data(true, uint64(2+2*i), 100, 0, 100, 7, nil)
		if i%2 == 0 {
			bad = append(bad, f) // 150
		}
		if i%3 != 0 {
			unsure = append(unsure, f) // 200
		}
	}
	rep := b.runRules(flagFrames("HOMA-TEST-004", Violated, bad...), flagFrames("HOMA-TEST-005", Inconclusive, unsure...))
	wantCounts(t, rep, "HOMA-TEST-004", 3*MaxFindings, 3*MaxFindings-len(bad), len(bad), 0)
	wantCounts(t, rep, "HOMA-TEST-005", 3*MaxFindings, 3*MaxFindings-len(unsure), 0, len(unsure))
	if len(bad) <= MaxFindings || len(unsure) <= MaxFindings {
		t.Fatalf("test needs more than %d findings: %d, %d", MaxFindings, len(bad), len(unsure))
	}
	if len(rep.Violations) != MaxFindings || rep.Violations[MaxFindings-1].Frame != bad[MaxFindings-1] {
		t.Errorf("kept %d violations, want the first %d", len(rep.Violations), MaxFindings)
	}
	if len(rep.Inconclusive) != MaxFindings {
		t.Errorf("kept %d inconclusive, want %d", len(rep.Inconclusive), MaxFindings)
	}
	if !rep.Violated() {
		t.Error("Violated() false")
	}
}

// TestFindingsSortedByFrame: a Within violation is found late (when the
// deadline passes) but reads in capture order with the others.
func TestFindingsSortedByFrame(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)                                      // 1
	trig := b.after(5*time.Millisecond).resend(true, 2, 0, wire.ResendAll, 7) // 2
	b.after(time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)              // 3
	b.data(true, 6, 100, 0, 100, 7, nil)                                      // 4
	b.after(30*time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)           // 5: the Within violation is recorded here
	rep := b.runRules(flagFrames("HOMA-TEST-004", Violated, 3, 5), busyWithin(), flagFrames("HOMA-TEST-005", Violated, 4))
	var got []int
	for _, f := range rep.Violations {
		got = append(got, f.Frame)
	}
	if want := []int{trig, 3, 4, 5}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("violations at frames %v, want %v", got, want)
	}
}

// Helpers for the rule tests.

// resent sends retransmitted DATA [off, off+n) as homa_resend_data builds it:
// retransmit=1, seg.offset = sequence = off, incoming = off+n.
func (b *traceBuilder) resent(fromClient bool, cid uint64, msgLen, off uint32, n int, prio uint8) int {
	return b.data(fromClient, cid, msgLen, off, n, prio, func(f *wire.DataFields) {
		f.Retransmit, f.SegOffset, f.Incoming = 1, off, off+uint32(n)
	})
}

// dataAcking sends DATA [off, off+n) of a msgLen-byte message (all of it
// unscheduled) carrying a piggy-backed ack for client id acked.
func (b *traceBuilder) dataAcking(fromClient bool, cid uint64, msgLen, off uint32, n int, prio uint8, acked uint64) int {
	return b.data(fromClient, cid, msgLen, off, n, prio, func(f *wire.DataFields) {
		f.Ack = wire.AckEntry{ClientID: acked, ServerPort: b.sport}
	})
}

// dataVersion sends DATA [off, off+n) carrying cutoff_version v.
func (b *traceBuilder) dataVersion(fromClient bool, cid uint64, msgLen, off uint32, n int, prio uint8, v uint16) int {
	return b.data(fromClient, cid, msgLen, off, n, prio, func(f *wire.DataFields) { f.CutoffVersion = v })
}

// withPrio sets the priority (as decoded from the IP header) of frame.
func (b *traceBuilder) withPrio(frame int, prio uint8) int {
	b.events[frame-1].Priority = prio
	return frame
}

// busyWithinExcused: busyWithin whose obligation is excused by RPC_UNKNOWN
// for the RPC, and at once when the RESEND asks for priority 6.
func busyWithinExcused() *Rule {
	r := busyWithin()
	w := r.Property.(Within)
	trigger := w.Trigger
	w.Trigger = func(c *Ctx, e *Event) (Obligation, bool) {
		o, ok := trigger(c, e)
		if !ok {
			return o, false
		}
		k, trig := KeyOf(e), e.Frame
		o.Excuse = func(c *Ctx, x *Event) (string, bool) {
			switch {
			case x.Frame == trig && x.Packet.Resend().Priority() == 6:
				return "priority 6", true
			case x.Type() == wire.TypeRPCUnknown && KeyOf(x) == k:
				return "unknown", true
			}
			return "", false
		}
		return o, true
	}
	r.Property = w
	return r
}

// TestWithinExcuse: an obligation whose Excuse applies closes as
// inconclusive (at the trigger, naming the excusing frame); an Excuse at
// the trigger opens no obligation; a match wins over an excuse; past the
// deadline the violation stands.
func TestWithinExcuse(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	r1 := b.resend(true, 2, 0, wire.ResendAll, 7)
	u1 := b.after(time.Millisecond).ctl(false, 2, wire.TypeRPCUnknown) // excuses r1
	r2 := b.resend(true, 4, 0, wire.ResendAll, 6)                      // excused at once
	b.after(time.Millisecond).resend(true, 6, 0, wire.ResendAll, 7)
	b.after(time.Millisecond).ctl(false, 6, wire.TypeBusy) // matches
	b.data(true, 8, 100, 0, 100, 7, nil)                   // starts in the capture: not excused by its start
	r4 := b.resend(true, 8, 0, wire.ResendAll, 7)
	// The server shows it got the request (its response): its later
	// RPC_UNKNOWN is no evidence that the request was lost on the way.
	b.after(time.Millisecond).data(false, 8, 100, 0, 100, 7, nil)
	b.after(24*time.Millisecond).ctl(false, 8, wire.TypeRPCUnknown) // too late to excuse
	rep := b.runRules(busyWithinExcused())
	wantCounts(t, rep, "HOMA-TEST-001", 4, 1, 1, 2)
	wantViolations(t, rep, "HOMA-TEST-001", r4)
	wantInconclusive(t, rep, "HOMA-TEST-001", r1)
	wantInconclusive(t, rep, "HOMA-TEST-001", r2)
	for _, f := range rep.Inconclusive {
		switch f.Frame {
		case r1:
			if f.Why != "unknown (frame 2)" || len(f.Frames) != 1 || f.Frames[0] != u1 {
				t.Errorf("r1 finding %+v", f)
			}
		case r2:
			if f.Why != "priority 6" || len(f.Frames) != 0 {
				t.Errorf("r2 finding %+v", f)
			}
		}
	}
}

// TestSeeFrames: one frame is "frame N", several "frames N,M", none "".
func TestSeeFrames(t *testing.T) {
	for _, c := range []struct {
		frames []int
		want   string
	}{{nil, ""}, {[]int{86}, "frame 86"}, {[]int{86, 90}, "frames 86,90"}} {
		f := Finding{Frames: c.frames}
		if got := f.SeeFrames(); got != c.want {
			t.Errorf("%v: %q, want %q", c.frames, got, c.want)
		}
	}
}
