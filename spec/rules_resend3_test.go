package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestResend020RetransmissionIncoming: a 100000-byte request whose
// second packet is lost; the server RESENDs [1424, 2848). The
// retransmission carries incoming 2848 (the RESEND's end, main since
// 2025-05) or 40000 (the granted offset, the unscheduled bytes: main
// before 2025-05); one carrying the message length, 100000, claims bytes
// nobody asked for or granted.
func TestResend020RetransmissionIncoming(t *testing.T) {
	build := func(incoming uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 100000, 0, 1424, 5, nil)
		b.after(time.Microsecond).data(true, 10, 100000, 2848, 1424, 5, nil)
		b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
		rx := b.after(20*time.Microsecond).data(true, 10, 100000, 1424, 1424, 7, func(f *wire.DataFields) {
			f.Retransmit, f.SegOffset, f.Incoming = 1, 1424, incoming
		})
		return b, rx
	}
	for _, inc := range []uint32{2848, 40000} {
		b, _ := build(inc)
		wantClean(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020")
	}
	b, rx := build(100000)
	wantViolations(t, b.check("linux", "HOMA-RESEND-020"), "HOMA-RESEND-020", rx)
	// linux_6.1.38 wrote the granted offset: not judged there.
	if rep := b.check("linux-2024", "HOMA-RESEND-020"); len(rep.Violations) != 0 {
		t.Fatalf("linux-2024: %v", rep.Violations)
	}
}

// TestResend021RetransmitOnlyAsked: the server RESENDs [1424, 2848) of a
// 5696-byte request; the client retransmits that packet (clean) or also
// the packets at 2848 and 4272, which nobody asked for.
func TestResend021RetransmitOnlyAsked(t *testing.T) {
	build := func(extra bool) (*traceBuilder, []int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 10, 5696, 0, 1424, 40000, 5)
		b.after(time.Microsecond).message(true, 10, 5696, 2848, 5696, 40000, 5)
		b.after(5*time.Millisecond).resend(false, 10, 1424, 1424, 7)
		b.after(20*time.Microsecond).resent(true, 10, 5696, 1424, 1424, 7)
		var bad []int
		if extra {
			bad = append(bad, b.resent(true, 10, 5696, 2848, 1424, 7), b.resent(true, 10, 5696, 4272, 1424, 7))
		}
		return b, bad
	}
	b, _ := build(false)
	wantClean(t, b.check("linux", "HOMA-RESEND-021"), "HOMA-RESEND-021")
	b, bad := build(true)
	wantViolations(t, b.check("linux", "HOMA-RESEND-021"), "HOMA-RESEND-021", bad...)
}
