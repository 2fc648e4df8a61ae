package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestOneEndExcuse: a capture taken for one end of every host's link by
// its shape (Judge.OneEnd; check's auto on a run's sent.pcapng or
// delivered.pcapng) keeps the violations of rules about a packet's own
// doing (HOMA-RESEND-010 is Alone: a first transmission repeated) and
// makes those of rules that relate packets (HOMA-ACK-007: an ACK with no
// NEED_ACK before it, which the other end may have seen first)
// inconclusive for CauseOneEnd. Without OneEnd both are violations.
func TestOneEndExcuse(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	repeat := b.after(10*time.Microsecond).data(true, 2, 100, 0, 100, 7, nil)
	b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
	ack := b.after(time.Millisecond).ack(2, 2)
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Select(Rules(), "HOMA-RESEND-010,HOMA-ACK-007", 0, "linux")
	if err != nil {
		t.Fatal(err)
	}
	for _, oneEnd := range []bool{false, true} {
		j := Judge{Profile: "linux", Params: prof.Params, Rules: rules, OneEnd: oneEnd}
		rep := j.Capture(CapturePoint{Kind: CaptureSent}, b.events)
		wantViolations(t, rep, "HOMA-RESEND-010", repeat)
		if !oneEnd {
			wantViolations(t, rep, "HOMA-ACK-007", ack)
			if rep.OneEnd || rep.OneEndExcused != 0 {
				t.Errorf("without OneEnd: one_end %v excused %d", rep.OneEnd, rep.OneEndExcused)
			}
			continue
		}
		wantViolations(t, rep, "HOMA-ACK-007")
		wantDowngraded(t, rep, "HOMA-ACK-007", ack, CauseOneEnd)
		if !rep.OneEnd || rep.OneEndExcused != 1 {
			t.Errorf("with OneEnd: one_end %v excused %d, want true 1", rep.OneEnd, rep.OneEndExcused)
		}
	}
}
