package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// shorterGranted adds to b a 200000-byte request (id 6) from a third
// client that the server grants to 100000 at once: it has fewer bytes to
// grant than a 1 MB message granted to 110000 by far more than
// rank_tolerance, so that one is surely not the server's first active
// message, which linux_6.13.9's homa_grant_find_oldest skips.
func shorterGranted(b *traceBuilder) {
	c := b.client
	b.client = netip.MustParseAddr("198.18.0.4")
	b.after(10*time.Microsecond).message(true, 6, 200000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 6, 100000, 0)
	b.client = c
}

// olderAndYounger writes the GRANT-022 tests' start: a 1 MB request (id 2)
// from b's client, granted to 100000, a 1 MB request (id 4) from another
// client 3 ms later, then other's packets, then the older request's SRPT
// GRANT to 110000 (b's client is the first client again); it returns the
// second client.
func olderAndYounger(b *traceBuilder, other func(*traceBuilder)) netip.Addr {
	c1, c2 := b.client, netip.MustParseAddr("198.18.0.3")
	b.message(true, 2, 1000000, 0, 40000, 40000, 4)
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0)
	b.client = c2
	b.after(3*time.Millisecond).message(true, 4, 1000000, 0, 40000, 40000, 4)
	other(b)
	b.client = c1
	b.after(10*time.Microsecond).grant(false, 2, 110000, 0)
	return c2
}

// TestGrant022FIFOToYounger: a server granting a 1 MB request from one
// client gets a 1 MB request from another client 3 ms later, and its
// first FIFO GRANT goes to the younger one while the older one, granted
// less than slack before, is far from granted to its end and holds 70000
// granted bytes not yet seen (window + 2·fifo_grant_increment is 144444
// at the smallest dynamic window), and a 200000-byte message it grants
// ranks ahead of it: a violation (HomaModule homa_grant_find_oldest picks
// the earliest birth). The same GRANT to the older message passes.
func TestGrant022FIFOToYounger(t *testing.T) {
	const id = "HOMA-GRANT-022"
	for _, toOldest := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		c2 := olderAndYounger(b, shorterGranted)
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

// TestGrant022SkipsFirstActive: as TestGrant022FIFOToYounger without the
// shorter message, the older 1 MB message has the fewest bytes to grant
// of the server's messages, so it may be its first active message, which
// linux_6.13.9's homa_grant_find_oldest skips (active_rpcs[0] gets SRPT
// grants anyway): the FIFO GRANT to the younger one is allowed. Once a
// message the server grants has fewer bytes to grant than the older one
// by rank_tolerance (the shorter one), it is a violation; not where that
// message's only GRANT is a FIFO one (it may be waiting), nor where it
// leads by less than rank_tolerance.
func TestGrant022SkipsFirstActive(t *testing.T) {
	const id = "HOMA-GRANT-022"
	for _, tc := range []struct {
		name    string
		other   func(b *traceBuilder)
		violate bool
	}{
		{"alone", func(*traceBuilder) {}, false},
		{"shorter", shorterGranted, true},
		{"shorter FIFO-granted", func(b *traceBuilder) {
			b.client = netip.MustParseAddr("198.18.0.4")
			b.after(10*time.Microsecond).message(true, 6, 200000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(false, 6, 90000, 6)
		}, false},
		{"within tolerance", func(b *traceBuilder) {
			// 1 MB granted to 125000 now, 40000 slack before: 960000
			// bytes to grant, not 870000 + 20000 below the older one's
			// 890000.
			b.client = netip.MustParseAddr("198.18.0.4")
			b.after(10*time.Microsecond).message(true, 6, 1000000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(false, 6, 125000, 0)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.client = olderAndYounger(b, tc.other)
			fifo := b.grant(false, 4, 90000, 6)
			rep := b.check("linux", id)
			if !tc.violate {
				wantClean(t, rep, id)
				return
			}
			wantViolations(t, rep, id, fifo)
		})
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
// violation (a shorter message granted just before ranks ahead of the
// older one, which is then surely not the first active message that
// linux_6.13.9 skips).
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
		shorterGranted(b)
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

// fifoPaceTrace builds four 1 MB requests to one server and then 64 FIFO
// GRANTs (level 6) from it, fifo_grant_increment apart in offset, turn by
// turn across the messages; gap(i) is the time before the i-th. It
// returns the frames of the FIFO GRANTs.
func fifoPaceTrace(t *testing.T, gap func(i int) time.Duration) (*traceBuilder, []int) {
	b := newTrace(t, wire.VersionCurrent)
	for id := uint64(2); id <= 8; id += 2 {
		b.message(true, id, 1000000, 0, 40000, 40000, 4)
		b.after(10 * time.Microsecond)
	}
	granted := map[uint64]uint32{2: 40000, 4: 40000, 6: 40000, 8: 40000}
	var fifo []int
	for i := range 64 {
		id := uint64(2 + 2*(i%4))
		granted[id] += 50000
		fifo = append(fifo, b.after(gap(i)).grant(false, id, granted[id], 6))
	}
	return b, fifo
}

// TestGrant023FIFOPace: a receiver's FIFO GRANTs come at most
// fifoRacers per fifo_grant_interval (320 µs at the defaults). One every
// 320 µs passes, as do pairs that two cores raced into, 320 µs apart;
// one every 16 µs (a FIFO grant at every SRPT grant decision, rt4's u23)
// is flagged once 64 of them span less than 15 intervals less slack and
// jitter (2.6 ms at the profile's 2 ms slack; 32 need only 40 µs), and
// with a quiet machine's slack of 100 µs already at 16 (660 µs); so is one every 40 µs at
// the default link_mbps, which --param link_mbps=200000 (a faster link:
// a 40 µs interval) allows.
func TestGrant023FIFOPace(t *testing.T) {
	const id = "HOMA-GRANT-023"
	b, _ := fifoPaceTrace(t, func(int) time.Duration { return 320 * time.Microsecond })
	wantClean(t, b.check("linux", id), id)
	b, _ = fifoPaceTrace(t, func(i int) time.Duration {
		if i%2 == 1 {
			return 0
		}
		return 320 * time.Microsecond
	})
	wantClean(t, b.check("linux", id), id)
	b, fifo := fifoPaceTrace(t, func(int) time.Duration { return 16 * time.Microsecond })
	rep := b.check("linux", id)
	wantViolations(t, rep, id, fifo[63])
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "64 FIFO GRANTs from 198.18.0.2 in 1.008ms, the first at frame") {
		t.Errorf("why %q", f.Why)
	}
	rep = b.check("linux", id, "slack=100us")
	wantViolations(t, rep, id, fifo[15:]...)
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "16 FIFO GRANTs from 198.18.0.2 in 240µs") {
		t.Errorf("why %q", f.Why)
	}
	b, fifo = fifoPaceTrace(t, func(int) time.Duration { return 40 * time.Microsecond })
	wantViolations(t, b.check("linux", id), id, fifo[63])
	wantClean(t, b.check("linux", id, "link_mbps=200000"), id)
}

// TestGrant023CopiesNotCounted: a GRANT the network duplicated (the same
// offset again) is no new FIFO grant, and FIFO GRANTs are not judged
// where SRPT GRANTs share their level.
func TestGrant023CopiesNotCounted(t *testing.T) {
	const id = "HOMA-GRANT-023"
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 1000000, 0, 40000, 40000, 4)
	for g := uint32(90000); g <= 1000000; g += 50000 {
		b.after(320*time.Microsecond).grant(false, 2, g, 6)
		for range 8 {
			b.after(time.Microsecond).grant(false, 2, g, 6)
		}
	}
	wantClean(t, b.check("linux", id), id)
	b, _ = fifoPaceTrace(t, func(int) time.Duration { return 16 * time.Microsecond })
	wantViolations(t, b.check("linux", id, "max_sched_prio=6"), id)
}
