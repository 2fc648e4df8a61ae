package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant022FIFOToYounger: a server granting a 1 MB request from one
// client gets a 1 MB request from another client 3 ms later, and its
// first FIFO GRANT goes to the younger one while the older one, granted
// less than slack before, is far from granted to its end and holds 70000
// granted bytes not yet seen (window + 2·fifo_grant_increment is 144444
// at the smallest dynamic window): a violation (HomaModule
// homa_grant_find_oldest picks the earliest birth). The same GRANT to the
// older message passes.
func TestGrant022FIFOToYounger(t *testing.T) {
	const id = "HOMA-GRANT-022"
	for _, toOldest := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		c1, c2 := b.client, netip.MustParseAddr("198.18.0.3")
		b.message(true, 2, 1000000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
		b.client = c2
		b.after(3*time.Millisecond).message(true, 4, 1000000, 0, 40000, 40000, 4)
		b.client = c1
		b.after(10*time.Microsecond).grant(false, 2, 110000, 0)
		var fifo int
		if toOldest {
			fifo = b.grant(false, 2, 160000, 6)
		} else {
			b.client = c2
			fifo = b.grant(false, 4, 90000, 6)
		}
		rep := b.check("linux", id)
		if toOldest {
			wantClean(t, rep, id)
			continue
		}
		wantViolations(t, rep, id, fifo)
		// Where SRPT GRANTs reach the FIFO level it is not judged.
		wantViolations(t, b.check("linux", id, "num_priorities=4", "max_sched_prio=2"), id)
	}
}

// TestGrant022CachedChoice: the receiver's FIFO choice is kept while it
// stays eligible (homa_grant_check_fifo keeps grant->oldest_rpc). Its
// first FIFO GRANT to the younger message comes while the older one has
// 210000 granted bytes not received (past window + 2·fifo_grant_increment:
// homa_grant_find_oldest skips it); once those bytes arrive the older one
// is eligible again, but the next FIFO GRANT may still go to the younger
// one, the receiver's cached choice. Had a FIFO GRANT to the older one
// come between, the next to the younger one would be a new choice: a
// violation.
func TestGrant022CachedChoice(t *testing.T) {
	const id = "HOMA-GRANT-022"
	for _, between := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		c1, c2 := b.client, netip.MustParseAddr("198.18.0.3")
		b.message(true, 2, 1000000, 0, 40000, 40000, 4)
		b.after(10*time.Microsecond).grant(false, 2, 200000, 0)
		b.grant(false, 2, 250000, 6)
		b.client = c2
		b.after(3*time.Millisecond).message(true, 4, 1000000, 0, 40000, 40000, 4)
		b.client = c1
		b.after(10*time.Microsecond).grant(false, 2, 251424, 0)
		b.client = c2
		b.grant(false, 4, 90000, 6) // the older message is not eligible: a new choice
		b.client = c1
		b.after(100*time.Microsecond).message(true, 2, 1000000, 40000, 250000, 40000, 0)
		b.after(3*time.Millisecond).grant(false, 2, 260000, 0)
		if between {
			b.grant(false, 2, 310000, 6)
			b.after(400*time.Microsecond).grant(false, 2, 311424, 0)
		}
		b.client = c2
		next := b.after(400*time.Microsecond).grant(false, 4, 140000, 6)
		rep := b.check("linux", id)
		if !between {
			wantClean(t, rep, id)
			continue
		}
		wantViolations(t, rep, id, next)
	}
}
