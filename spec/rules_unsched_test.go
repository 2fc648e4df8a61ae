package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// br14 plays BR-14 (@ca8782f) on linux_6.1.38 settings: to fill TSO
// batches the sender rounds unsched_bytes 10000 up to two GSO batches of
// 6 × 1424 bytes and sends [0, 17088) before any GRANT, announcing 17088 in
// DATA.incoming. It returns the DATA frames.
func br14(b *traceBuilder) []int {
	return b.message(true, 2, 100000, 0, 17088, 17088, 4)
}

// TestUnsched001OnlyUnschedBeforeGrant: before any GRANT or RESEND, a
// sender transmits only bytes below U.
func TestUnsched001OnlyUnschedBeforeGrant(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		// main: 100000-byte request, unscheduled packets 0..38448 plus
		// 128 bytes at 39872, then GRANT 100000 and the rest.
		b := newTrace(t, wire.VersionCurrent)
		x := b.xferRequest(2, 100000, 40000, 200000, 4, 0)
		if len(x.unsched) != 29 || len(x.grants) != 1 {
			t.Fatalf("built %d unscheduled packets and %d GRANTs, want 29 and 1", len(x.unsched), len(x.grants))
		}
		b.message(false, 2, 1000, 0, 1000, 40000, 6) // short response: all unscheduled
		wantClean(t, b.check("linux", "HOMA-UNSCHED-001"), "HOMA-UNSCHED-001")

		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0)
		wantClean(t, b.check("linux-2024", "HOMA-UNSCHED-001"), "HOMA-UNSCHED-001")

		// RTX-08: the GRANT was lost; the receiver's RESEND reaching past
		// U lets the sender send new data although no GRANT was seen.
		b = newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 100000, 0, 40000, 40000, 4)
		b.after(5 * time.Millisecond)
		b.resend(false, 2, 40000, 60000, 7)
		b.message(true, 2, 100000, 40000, 100000, 40000, 0)
		wantClean(t, b.check("linux", "HOMA-UNSCHED-001"), "HOMA-UNSCHED-001")
	})
	t.Run("violation", func(t *testing.T) {
		// BR-14: every packet ending past U = 10000 before the first
		// GRANT: [9968, 11392) up to [15664, 17088).
		b := newTrace(t, wire.Version2024)
		frames := br14(b)
		b.grant(false, 2, 27088, 0)
		b.message(true, 2, 100000, 17088, 27088, 17088, 0) // after the GRANT: not judged
		rep := b.check("linux-2024", "HOMA-UNSCHED-001")
		wantViolations(t, rep, "HOMA-UNSCHED-001", frames[7:]...)

		// protocol.md's "round the unscheduled bytes up to a full packet"
		// (facts §7.1), on main: the 29th packet is a full 1424 bytes.
		b = newTrace(t, wire.VersionCurrent)
		frames = b.message(true, 2, 100000, 0, 41296, 41296, 4)
		rep = b.check("linux", "HOMA-UNSCHED-001")
		wantViolations(t, rep, "HOMA-UNSCHED-001", frames[28])
	})
}

// TestUnsched002NoPacketStraddlesU: the unscheduled part ends on a packet
// boundary at U exactly.
func TestUnsched002NoPacketStraddlesU(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		x := b.xferRequest(2, 100000, 40000, 200000, 4, 0)
		if last := b.events[x.unsched[len(x.unsched)-1]-1]; last.Offset != 39872 || last.Length != 128 {
			t.Fatalf("last unscheduled packet [%d, +%d), want [39872, +128)", last.Offset, last.Length)
		}
		b.xferRequest(4, 40001, 40000, 200000, 4, 0) // one byte past U
		wantClean(t, b.check("linux", "HOMA-UNSCHED-002"), "HOMA-UNSCHED-002")

		b = newTrace(t, wire.Version2024)
		b.xferRequest(2, 100000, 10000, 10000, 4, 0) // 32 bytes at 9968
		wantClean(t, b.check("linux-2024", "HOMA-UNSCHED-002"), "HOMA-UNSCHED-002")
	})
	t.Run("violation", func(t *testing.T) {
		// BR-14: the batch boundary, not U, ends the unscheduled part, so
		// [9968, 11392) straddles U = 10000.
		b := newTrace(t, wire.Version2024)
		frames := br14(b)
		rep := b.check("linux-2024", "HOMA-UNSCHED-002")
		wantViolations(t, rep, "HOMA-UNSCHED-002", frames[7])

		// Rounded up to a full packet on main: [39872, 41296) straddles
		// U = 40000.
		b = newTrace(t, wire.VersionCurrent)
		frames = b.message(true, 2, 100000, 0, 41296, 41296, 4)
		b.grant(false, 2, 100000, 0)
		b.message(true, 2, 100000, 41296, 100000, 41296, 0)
		rep = b.check("linux", "HOMA-UNSCHED-002")
		wantViolations(t, rep, "HOMA-UNSCHED-002", frames[28])
	})
}
