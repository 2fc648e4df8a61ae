package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant011StaleActiveRemaining: three 1,000,000-byte messages enter
// the receiver's active set together and are then received to within
// about 80000 bytes of their ends; a 300 KB message arrives (260000 bytes
// left) and gets a GRANT at max_sched_prio. HomaModule main ranks the
// three by the bytes they had left on entering the active set (960000:
// active_remaining is written only by homa_grant_add_active), so the
// newcomer ranks first: legal on main. linux_6.1.38 re-ranks on live
// counts (homa_grant_recalc): there the three are ahead and level 3 is too
// high.
func TestGrant011StaleActiveRemaining(t *testing.T) {
	play := func(v wire.Version) (*traceBuilder, int) {
		b := newTrace(t, v)
		ids := []uint64{2, 4, 6}
		for _, id := range ids {
			b.message(true, id, 1000000, 0, 40000, 40000, 4)
		}
		sent := uint32(40000)
		for sent < 900000 {
			for i, id := range ids {
				b.after(10 * time.Microsecond)
				b.grant(false, id, sent+80000, uint8(2-i))
			}
			for i, id := range ids {
				b.message(true, id, 1000000, sent, sent+40000, 40000, uint8(2-i))
			}
			sent += 40000
		}
		// More than slack later the three are still being granted.
		for k := uint32(1); k <= 6; k++ {
			b.after(500 * time.Microsecond)
			for i, id := range ids {
				b.message(true, id, 1000000, sent, sent+1424, 40000, uint8(2-i))
				b.grant(false, id, 960000+1424*k, uint8(2-i))
			}
			sent += 1424
		}
		b.message(true, 8, 300000, 0, 40000, 40000, 4)
		return b, b.after(10*time.Microsecond).grant(false, 8, 120000, 3)
	}
	b, _ := play(wire.VersionCurrent)
	wantClean(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011")
	b, g := play(wire.Version2024)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-011"), "HOMA-GRANT-011", g)
}
