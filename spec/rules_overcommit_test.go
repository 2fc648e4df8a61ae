package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant006NewcomerBumpsVictim: with max_overcommit 2, messages 2 and 4
// are being granted when a shorter message 6 arrives; the receiver moves
// 6 into the active set in place of 4 (the lowest-ranked), whose granted
// bytes stay outstanding (HomaModule homa_grant_manage_rpc,
// homa_grant_find_victim). Three messages then have outstanding grants,
// which is legal. A newcomer with more bytes remaining than both cannot
// take a slot, so granting it exceeds max_overcommit. (The next GRANT,
// to 2 with the same three outstanding, is not judged again: 2 outranks 4
// and was granted after it, and the checker leaves out every message one
// granted later outranks, lenient on purpose: under overload a receiver's
// demoted messages keep granted bytes outstanding for long.)
func TestGrant006NewcomerBumpsVictim(t *testing.T) {
	play := func(newLen uint32) (*traceBuilder, int, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 300000, 0, 40000, 40000, 4)
		b.after(10 * time.Microsecond)
		b.grant(false, 2, 100000, 0)
		b.message(true, 4, 600000, 0, 40000, 40000, 4)
		b.after(10 * time.Microsecond)
		b.grant(false, 4, 100000, 0)
		b.message(true, 2, 300000, 40000, 100000, 40000, 0)
		b.grant(false, 2, 160000, 1)
		b.message(true, 6, newLen, 0, 40000, 40000, 4)
		b.after(10 * time.Microsecond)
		g := b.grant(false, 6, min(newLen, 140000), 1)
		b.message(true, 2, 300000, 100000, 160000, 40000, 1)
		last := b.grant(false, 2, 220000, 0) // 2 and 6 active; 4 waits
		return b, g, last
	}
	b, _, _ := play(60000)
	wantClean(t, b.check("linux", "HOMA-GRANT-006", "max_overcommit=2"), "HOMA-GRANT-006")
	b, third, _ := play(900000)
	wantViolations(t, b.check("linux", "HOMA-GRANT-006", "max_overcommit=2"), "HOMA-GRANT-006", third)
}

// TestGrant010ShorterMessageTakesASlot: with max_overcommit 1 the
// receiver grants message 2 (600000 bytes) when message 4 arrives with far
// fewer bytes left; SRPT moves 4 into the active set in place of 2
// (homa_grant_find_victim), so a receiver that goes on granting only 2 for
// longer than response_timeout breaks HOMA-GRANT-010 at the packet that
// completed 4's unscheduled bytes. A newcomer with about as many bytes
// left as 2 (within rank_tolerance) may wait: inconclusive.
func TestGrant010ShorterMessageTakesASlot(t *testing.T) {
	play := func(newLen uint32, grantNew bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 600000, 0, 40000, 40000, 4)
		b.after(10 * time.Microsecond)
		b.grant(false, 2, 90000, 0)
		w := b.message(true, 4, newLen, 0, 40000, 40000, 4)
		last := w[len(w)-1]
		if grantNew {
			b.after(10 * time.Microsecond)
			b.grant(false, 4, newLen, 0)
		}
		sent := uint32(40000)
		for i := 0; i < 10; i++ {
			b.after(2500 * time.Microsecond)
			b.message(true, 2, 600000, sent, sent+50000, 40000, 0)
			sent += 50000
			b.after(10 * time.Microsecond)
			b.grant(false, 2, sent+50000, 0)
		}
		return b, last
	}
	b, _ := play(60000, true)
	wantClean(t, b.check("linux", "HOMA-GRANT-010", "max_overcommit=1"), "HOMA-GRANT-010")
	b, waiting := play(60000, false)
	wantViolations(t, b.check("linux", "HOMA-GRANT-010", "max_overcommit=1"), "HOMA-GRANT-010", waiting)
	// 560000 bytes left against 2's 550000 when it arrives.
	b, waiting = play(600000, false)
	rep := b.check("linux", "HOMA-GRANT-010", "max_overcommit=1")
	wantInconclusive(t, rep, "HOMA-GRANT-010", waiting)
	wantViolations(t, rep, "HOMA-GRANT-010")
}
