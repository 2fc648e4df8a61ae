package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// ignoredGrants sends, for each of rpcs RPCs, the unscheduled 40000
// bytes of a 500000-byte request and then new DATA up to 48544, as a
// sender that got a GRANT to 48544 would. The GRANT is not in the trace
// (the capture missed it, or the sender sent without one), so every
// packet past 40000 passes the horizon the capture shows (HOMA-GRANT-005,
// main HEAD without GSO). It returns those packets' frames.
func ignoredGrants(b *traceBuilder, rpcs int) []int {
	var past []int
	for i := range rpcs {
		cid := uint64(2 + 2*i)
		b.message(true, cid, 500000, 0, 40000, 40000, 4)
		frames := b.message(true, cid, 500000, 40000, 48544, 40000, 0)
		past = append(past, frames...)
	}
	return past
}

// checkDrops checks b's trace for rules glob (profile linux, no GSO) with
// the capture declaring drops packets dropped; set is when to say so:
// before the first Feed or, as check does for a pcapng's interface
// statistics (read at its end), just before Finish.
func checkDrops(b *traceBuilder, glob string, drops uint64, late bool, extra ...*Rule) *Report {
	b.t.Helper()
	prof, err := LookupProfile("linux")
	if err != nil {
		b.t.Fatal(err)
	}
	p := prof.Params
	if err := p.Set("max_gso_size", "0"); err != nil {
		b.t.Fatal(err)
	}
	rules, err := Select(Rules(), glob, 0, "linux")
	if err != nil {
		b.t.Fatal(err)
	}
	c := NewChecker("linux", p, append(rules, extra...))
	if !late {
		c.SetCaptureDrops(drops)
	}
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	if late {
		c.SetCaptureDrops(drops)
	}
	return c.Finish()
}

// TestCaptureDropExcusesMissingGrant: DATA past a GRANT the capture does
// not show is a violation when the capture declares no drops, and
// inconclusive (CauseCaptureDrop) when it declares one: the GRANT may be
// the packet it dropped. The drops are judged at Finish, whether they are
// known before the first packet or only at the capture's end.
func TestCaptureDropExcusesMissingGrant(t *testing.T) {
	const id = "HOMA-GRANT-005"
	b := newTrace(t, wire.VersionCurrent)
	past := ignoredGrants(b, 2)
	rep := checkDrops(b, id, 0, false)
	wantViolations(t, rep, id, past...)
	if rep.CaptureDrops != 0 || rep.CaptureDropExcused != 0 || rep.CaptureDropLimit != 0 || rep.Downgraded() != 0 {
		t.Fatalf("no drops declared: report says drops %d excused %d limit %d downgraded %d", rep.CaptureDrops, rep.CaptureDropExcused, rep.CaptureDropLimit, rep.Downgraded())
	}
	for _, late := range []bool{false, true} {
		rep := checkDrops(b, id, 1, late)
		wantViolations(t, rep, id)
		wantCounts(t, rep, id, len(past)+ruleResult(t, rep, id).Passed, ruleResult(t, rep, id).Passed, 0, len(past))
		for _, f := range past {
			wantDowngraded(t, rep, id, f, CauseCaptureDrop)
		}
		if rep.CaptureDrops != 1 || rep.CaptureDropLimit != 6 || rep.CaptureDropExcused != len(past) || rep.CaptureDropTooMany {
			t.Fatalf("late %v: drops %d limit %d excused %d too many %v, want 1, 6 (1 × (5 acks + 1)), %d, false",
				late, rep.CaptureDrops, rep.CaptureDropLimit, rep.CaptureDropExcused, rep.CaptureDropTooMany, len(past))
		}
		want := DowngradeCount{Rule: id, Cause: CauseCaptureDrop, Count: len(past), Frame: past[0]}
		if len(rep.Downgrades) != 1 || rep.Downgrades[0] != want {
			t.Fatalf("late %v: downgrades %+v, want [%+v]", late, rep.Downgrades, want)
		}
		if f := rep.Inconclusive[0]; !strings.Contains(f.Why, "the capture dropped 1") {
			t.Fatalf("late %v: why %q does not name the drops", late, f.Why)
		}
	}
}

// TestCaptureDropTooFew: one dropped packet touches at most 6 RPCs (an
// ACK names its own and 5 more); findings at 7 cannot all be its doing
// and stay violations, and the report says why.
func TestCaptureDropTooFew(t *testing.T) {
	const id = "HOMA-GRANT-005"
	for _, tc := range []struct {
		rpcs     int
		drops    uint64
		excused  bool
		tooMany  bool
		wantLim  int
		scenario string
	}{
		{rpcs: 6, drops: 1, excused: true, wantLim: 6, scenario: "6 RPCs, 1 drop: at the limit"},
		{rpcs: 7, drops: 1, tooMany: true, wantLim: 6, scenario: "7 RPCs, 1 drop: past it"},
		{rpcs: 7, drops: 2, excused: true, wantLim: 12, scenario: "7 RPCs, 2 drops"},
	} {
		for _, late := range []bool{false, true} {
			b := newTrace(t, wire.VersionCurrent)
			past := ignoredGrants(b, tc.rpcs)
			rep := checkDrops(b, id, tc.drops, late)
			if tc.excused {
				wantViolations(t, rep, id)
			} else {
				wantViolations(t, rep, id, past...)
			}
			if rep.CaptureDropTooMany != tc.tooMany || rep.CaptureDropLimit != tc.wantLim || rep.CaptureDrops != tc.drops {
				t.Fatalf("%s (late %v): too many %v limit %d drops %d, want %v %d %d", tc.scenario, late, rep.CaptureDropTooMany, rep.CaptureDropLimit, rep.CaptureDrops, tc.tooMany, tc.wantLim, tc.drops)
			}
			if tc.tooMany && (rep.CaptureDropExcused != 0 || rep.Downgraded() != 0) {
				t.Fatalf("%s: %d excused, %d downgraded, want none", tc.scenario, rep.CaptureDropExcused, rep.Downgraded())
			}
		}
	}
}

// TestCaptureDropNotForAlone: a finding about a packet's own fields
// (Rule.Alone, the WIRE area) is never a capture drop's doing, and its
// subject does not count toward the limit.
func TestCaptureDropNotForAlone(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	past := ignoredGrants(b, 1)
	alone := flagFrames("HOMA-TEST-009", Violated, 1, 2)
	alone.Alone = true
	wire := flagFrames("HOMA-WIRE-999", Violated, 3)
	rep := checkDrops(b, "HOMA-GRANT-005", 1, true, alone, wire)
	wantViolations(t, rep, "HOMA-TEST-009", 1, 2)
	wantViolations(t, rep, "HOMA-WIRE-999", 3)
	wantViolations(t, rep, "HOMA-GRANT-005")
	if rep.CaptureDropExcused != len(past) {
		t.Fatalf("excused %d, want the %d GRANT-005 findings", rep.CaptureDropExcused, len(past))
	}
}

// TestCaptureDropFindingsWithoutRPC: findings without an RPC count one
// subject per host pair, whatever their direction.
func TestCaptureDropFindingsWithoutRPC(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	var frames []int
	for i := range uint16(8) {
		// Each version differs: identical frames within jitter may be the
		// network's copies.
		frames = append(frames, b.cutoffs(true, 2, i+1), b.cutoffs(false, 2, i+1))
	}
	r := flagFrames("HOMA-TEST-010", Violated, frames...)
	rep := checkDrops(b, "HOMA-GRANT-005", 1, false, r)
	wantViolations(t, rep, "HOMA-TEST-010")
	if rep.CaptureDropExcused != len(frames) {
		t.Fatalf("excused %d of %d findings at one host pair", rep.CaptureDropExcused, len(frames))
	}
}

// TestCaptureDropPrio002: an unseen CUTOFFS can explain unscheduled DATA
// at a level other than the profile's cutoffs give only when the version
// it carries is not one whose CUTOFFS the capture holds, and only at a
// level some consistent cutoffs give an unscheduled message (1 and up).
// DATA with version 0 (the new-peer default) at the wrong level, with a
// version the capture shows, or at level 0 stays a violation whatever
// the capture dropped.
func TestCaptureDropPrio002(t *testing.T) {
	const id = "HOMA-PRIO-002"
	b := newTrace(t, wire.VersionCurrent)
	v0 := b.dataVersion(true, 2, 100, 0, 100, 1, 0)                             // default says 6
	unseen := b.after(time.Millisecond).dataVersion(true, 4, 100, 0, 100, 5, 1) // profile's v1 says 7: a CUTOFFS v1 may differ
	zero := b.after(time.Millisecond).dataVersion(true, 6, 100, 0, 100, 0, 1)   // no cutoffs give level 0
	b.after(time.Millisecond).cutoffs(false, 2, 2)
	seen := b.after(time.Millisecond).dataVersion(true, 8, 100, 0, 100, 5, 2) // the capture's v2 says 7
	rep := checkDrops(b, id, 0, false)
	wantViolations(t, rep, id, v0, unseen, zero, seen)
	for _, late := range []bool{false, true} {
		rep := checkDrops(b, id, 1, late)
		wantViolations(t, rep, id, v0, zero, seen)
		wantDowngraded(t, rep, id, unseen, CauseCaptureDrop)
		if rep.CaptureDropExcused != 1 {
			t.Fatalf("late %v: excused %d, want 1", late, rep.CaptureDropExcused)
		}
	}
}

// TestCaptureDropOwnFields: rules that judge a packet's own fields
// (control priority, ports, client id 0, a GRANT's offset and priority
// field, a RESEND's priority field, a NEED_ACK from the client, bytes sent
// twice as first transmissions) are Alone: a capture that dropped packets
// excuses none of their violations; a control packet below the top level
// stays a violation however many packets the capture dropped.
func TestCaptureDropOwnFields(t *testing.T) {
	alone := map[string]bool{}
	for _, r := range Rules() {
		alone[r.ID] = r.Alone
	}
	for _, id := range []string{"HOMA-PRIO-001", "HOMA-ID-002", "HOMA-ID-003", "HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-007",
		"HOMA-UNSCHED-002", "HOMA-RESEND-010", "HOMA-RESEND-013", "HOMA-ACK-010", "HOMA-CUTOFF-004"} {
		if !alone[id] {
			t.Errorf("%s is not Alone: a capture drop would excuse a violation of its packet's own fields", id)
		}
	}
	b := newTrace(t, wire.VersionCurrent)
	b.cutoffs(false, 2, 1)
	bad := b.emit(false, 3, &wire.CutoffsFields{Common: wire.CommonFields{SenderID: sid(2, false)},
		UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 1}, nil)
	rep := checkDrops(b, "HOMA-PRIO-001", 1, true)
	wantViolations(t, rep, "HOMA-PRIO-001", bad)
	if rep.CaptureDropExcused != 0 {
		t.Fatalf("excused %d, want 0", rep.CaptureDropExcused)
	}
}

// TestCaptureDropAckFromServer: an ACK with a server's sender_id is
// wrong by its own field (HOMA-ACK-007's first clause): no unseen NEED_ACK
// excuses it, while an ACK a client sends with no NEED_ACK in the capture
// may answer one the capture dropped.
func TestCaptureDropAckFromServer(t *testing.T) {
	const id = "HOMA-ACK-007"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(10*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	unprompted := b.after(time.Millisecond).ack(2)
	server := b.after(time.Millisecond).emit(false, 7, &wire.AckFields{Common: wire.CommonFields{SenderID: 3}}, nil)
	wantViolations(t, checkDrops(b, id, 0, false), id, unprompted, server)
	rep := checkDrops(b, id, 1, true)
	wantViolations(t, rep, id, server)
	wantDowngraded(t, rep, id, unprompted, CauseCaptureDrop)
}

// TestCaptureDropEarlyResend: a packet missing from the capture only
// hides activity, so it can make a silence look longer, never shorter: a
// RESEND 1 ms after the peer's last DATA (resend_ticks 5 need 4 ms) stays
// a violation however many packets the capture dropped. A trial found
// --capture-drops 1 turning the early-resend knob's capture into a PASS.
func TestCaptureDropEarlyResend(t *testing.T) {
	const id = "HOMA-RESEND-001"
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100000, 0, 1400, 7, nil)
	early := b.after(time.Millisecond).resend(false, 2, 1400, 1400, 7)
	wantViolations(t, checkDrops(b, id, 0, false), id, early)
	rep := checkDrops(b, id, 1, true)
	wantViolations(t, rep, id, early)
	if rep.CaptureDropExcused != 0 {
		t.Fatalf("excused %d, want 0", rep.CaptureDropExcused)
	}
}

// TestCaptureDropNotUnderTest: a tester (the server here) breaks seven
// responses on purpose, each sent past a grant horizon the capture shows;
// the implementation (the client) sends one request past a GRANT the
// capture missed, and the capture declares one drop (6 RPCs at most).
// Without SetNotUnderTest the findings are at 8 RPCs and all stay
// violations; with it the tester's do not use up the budget: the
// client's finding is inconclusive (the drop may be its GRANT), the
// tester's stay as they were.
func TestCaptureDropNotUnderTest(t *testing.T) {
	const id = "HOMA-GRANT-005"
	const note = "homatest tester: deliberate response past its grant"
	b := newTrace(t, wire.VersionCurrent)
	past := ignoredGrants(b, 1)
	var tester []int
	for i := range uint64(7) {
		cid := 100 + 2*i
		b.after(time.Millisecond).data(true, cid, 100, 0, 100, 7, nil)
		b.after(50 * time.Microsecond)
		b.message(false, cid, 500000, 0, 40000, 40000, 4)
		tester = append(tester, b.message(false, cid, 500000, 40000, 48544, 40000, 0)...)
	}
	for i := range b.events {
		if b.events[i].Src == b.server {
			b.events[i].Note = note
		}
	}
	rep := checkDrops(b, id, 1, false)
	wantViolations(t, rep, id, append(append([]int{}, past...), tester...)...)
	if !rep.CaptureDropTooMany {
		t.Fatal("findings at 8 RPCs, 1 drop: want CaptureDropTooMany")
	}
	notUnder := func(f *Finding) bool { return f.Note == note && f.ChargedTo == f.Src }
	for _, late := range []bool{false, true} {
		prof, _ := LookupProfile("linux")
		p := prof.Params
		if err := p.Set("max_gso_size", "0"); err != nil {
			t.Fatal(err)
		}
		j := Judge{Profile: "linux", Params: p, Rules: selectLinux(t, id), NotUnderTest: notUnder}
		if !late {
			j.CaptureDrops = 1
		}
		c := j.Stream(Switch)
		for i := range b.events {
			c.Feed(&b.events[i])
		}
		if late {
			c.SetCaptureDrops(1)
		}
		rep := c.Finish()
		wantViolations(t, rep, id, tester...)
		for _, f := range past {
			wantDowngraded(t, rep, id, f, CauseCaptureDrop)
		}
		if rep.CaptureDropTooMany || rep.CaptureDropExcused != len(past) {
			t.Fatalf("late %v: too many %v, excused %d, want false, %d", late, rep.CaptureDropTooMany, rep.CaptureDropExcused, len(past))
		}
		wantCounts(t, rep, id, ruleResult(t, rep, id).Checked, ruleResult(t, rep, id).Passed, len(tester), len(past))
	}
}

// selectLinux returns the rules glob selects for profile linux.
func selectLinux(t *testing.T, glob string) []*Rule {
	t.Helper()
	rules, err := Select(Rules(), glob, 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
