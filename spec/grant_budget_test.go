package spec

import (
	"fmt"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant010UnschedBytesHoldBudget: a receiver counts the unscheduled
// bytes still on their way of every message longer than unsched_bytes
// against max_incoming before it grants any of them (HomaModule
// homa_grant_init_rpc starts granted at U, homa_grant_update_incoming adds
// granted - received to total_incoming), so with 200000-byte requests
// whose first packet alone arrived holding more than max_incoming, a
// message waiting for its first GRANT is inconclusive, not a violation
// (the simulated overload run: receive queues hold the rest of many
// requests); with fewer of them it is a violation still.
func TestGrant010UnschedBytesHoldBudget(t *testing.T) {
	for _, c := range []struct {
		heads []uint64
		held  bool
	}{
		{[]uint64{4, 6, 8}, true}, // 3 x 38576 = 115728 bytes outstanding
		{[]uint64{4, 6}, false},   // 77152
	} {
		t.Run(fmt.Sprint(len(c.heads)), func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			for _, cid := range c.heads {
				b.message(true, cid, 200000, 0, 1424, 40000, 4)
			}
			waits := b.message(true, 2, 300000, 0, 40000, 40000, 4)
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_incoming=100000")
			last := waits[len(waits)-1]
			if !c.held {
				wantViolations(t, rep, "HOMA-GRANT-010", last)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010")
			wantInconclusive(t, rep, "HOMA-GRANT-010", last)
			if f := rep.Inconclusive[0]; f.Why != "198.18.0.2 has 115728 bytes authorised and not received (max_incoming 100000)" {
				t.Errorf("why %q", f.Why)
			}
		})
	}
}
