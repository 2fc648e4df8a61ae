package spec

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestCutoff001EchoesVersion: first contact on main. The client's first
// DATA carries version 0; once the server's CUTOFFS (version 1) is out,
// DATA already in flight may still carry 0 (within the slack), and every
// later DATA, retransmissions included, carries 1.
func TestCutoff001EchoesVersion(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0) // no CUTOFFS yet: not judged
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(500*time.Microsecond).dataVersion(true, 4, 100, 0, 100, 6, 0) // queued before the CUTOFFS arrived
	b.after(3*time.Millisecond).data(true, 6, 3000, 0, 1424, 5, nil)
	b.data(true, 6, 3000, 2848, 152, 5, nil) // [1424, 2848) lost
	b.after(5*time.Millisecond).resend(false, 6, 1424, 1424, 7)
	b.after(30*time.Microsecond).resent(true, 6, 3000, 1424, 1424, 7)
	b.dataVersion(false, 4, 100, 0, 100, 6, 0) // the server has no CUTOFFS from the client: not judged
	rep := b.check("linux", "HOMA-CUTOFF-001")
	wantClean(t, rep, "HOMA-CUTOFF-001")
	wantCounts(t, rep, "HOMA-CUTOFF-001", 4, 4, 0, 0)
}

// TestCutoff001StaleVersionAfterCutoffs: a sysctl write on the server bumps
// its cutoff_version to 2; the client keeps sending version 1 after the
// CUTOFFS (and after the repeat) reached it.
func TestCutoff001StaleVersionAfterCutoffs(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	cut := b.after(20*time.Microsecond).cutoffs(false, 4, 2)
	b.after(480*time.Microsecond).data(true, 6, 100, 0, 100, 7, nil) // in flight
	stale := b.after(4520*time.Microsecond).data(true, 8, 100, 0, 100, 7, nil)
	cut2 := b.after(20*time.Microsecond).cutoffs(false, 8, 2)
	stale2 := b.after(5*time.Millisecond).data(true, 10, 100, 0, 100, 7, nil)
	rep := b.check("linux", "HOMA-CUTOFF-001")
	wantViolations(t, rep, "HOMA-CUTOFF-001", stale, stale2)
	wantCounts(t, rep, "HOMA-CUTOFF-001", 3, 1, 2, 0)
	f := rep.Violations[0]
	if len(f.Frames) != 1 || f.Frames[0] != cut || f.Why != "DATA carries cutoff_version 1, 5ms after CUTOFFS version 2 from 198.18.0.2 (frame 3)" {
		t.Errorf("finding %+v: want the CUTOFFS frame %d", f, cut)
	}
	// The allowance runs from the first CUTOFFS of the current version
	// (frame 3): a receiver repeating CUTOFFS while stale DATA comes in
	// (cut2) does not restart it.
	if f := rep.Violations[1]; len(f.Frames) != 1 || f.Frames[0] != cut || cut2 <= cut {
		t.Errorf("finding %+v: want the first CUTOFFS frame %d", f, cut)
	}
}

// TestCutoff002CutoffsOnStaleVersion: each direction's first DATA carries
// version 0 (fresh peers) and is answered by a CUTOFFS; DATA still in
// flight right after it triggers nothing more.
func TestCutoff002CutoffsOnStaleVersion(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	for off := uint32(0); off < 10000; off += 1424 { // a fresh peer: version 0, level 6
		b.dataVersion(true, 2, 10000, off, int(min(1424, 10000-off)), 6, 0)
	}
	b.after(20*time.Microsecond).cutoffs(false, 2, 1)
	b.after(10*time.Microsecond).dataVersion(true, 4, 100, 0, 100, 6, 0) // in flight
	b.after(200*time.Microsecond).dataVersion(false, 2, 100, 0, 100, 6, 0)
	b.after(30*time.Microsecond).cutoffs(true, 2, 1)
	b.after(time.Millisecond).data(true, 6, 100, 0, 100, 7, nil) // up to date
	rep := b.check("linux", "HOMA-CUTOFF-002")
	wantClean(t, rep, "HOMA-CUTOFF-002")
	wantCounts(t, rep, "HOMA-CUTOFF-002", 2, 2, 0, 0) // one obligation per direction
	// linux_6.1.38 behaves the same.
	b2 := newTrace(t, wire.Version2024)
	b2.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b2.after(20*time.Microsecond).cutoffs(false, 2, 1)
	wantClean(t, b2.check("linux-2024", "HOMA-CUTOFF-002"), "HOMA-CUTOFF-002")
}

// TestCutoff002NoCutoffs: the server never answers the client's stale
// version with CUTOFFS. More stale DATA does not postpone the deadline of
// the first; the last one is still open when the capture ends.
func TestCutoff002NoCutoffs(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	first := b.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b.after(100*time.Microsecond).dataVersion(false, 2, 100, 0, 100, 6, 0) // stale the other way ...
	b.after(20*time.Microsecond).cutoffs(true, 2, 1)                       // ... answered
	b.after(10*time.Millisecond).dataVersion(true, 4, 100, 0, 100, 6, 0)
	last := b.after(15*time.Millisecond).dataVersion(true, 6, 100, 0, 100, 6, 0)
	rep := b.check("linux", "HOMA-CUTOFF-002", "slack=0s")
	wantViolations(t, rep, "HOMA-CUTOFF-002", first)
	wantInconclusive(t, rep, "HOMA-CUTOFF-002", last)
	wantCounts(t, rep, "HOMA-CUTOFF-002", 3, 1, 1, 1)
	if f := rep.Violations[0]; !strings.HasPrefix(f.Why, "no CUTOFFS from 198.18.0.2 to 198.18.0.1 within 20ms") {
		t.Errorf("why %q", f.Why)
	}
}

// TestCutoff003Counted: each CUTOFFS is paid for by its own earlier DATA
// with another cutoff_version, however late (a loaded host processes
// packets late); one more CUTOFFS than such DATA is a violation, at a tap
// on either host's link too (the DATA come from the CUTOFFS' receiver).
func TestCutoff003Counted(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.dataVersion(true, 2, 100, 0, 100, 6, 0)
	b.dataVersion(true, 4, 100, 0, 100, 6, 0)
	b.after(40*time.Millisecond).cutoffs(false, 2, 1) // 40 ms late: paid by the first
	b.after(time.Millisecond).cutoffs(false, 4, 1)    // paid by the second
	b.after(time.Millisecond).dataVersion(true, 6, 100, 0, 100, 6, 1)
	extra := b.after(time.Millisecond).cutoffs(false, 6, 1) // current version: unpaid
	wantViolations(t, b.check("linux", "HOMA-CUTOFF-003"), "HOMA-CUTOFF-003", extra)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-CUTOFF-003"), "HOMA-CUTOFF-003", extra)
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-CUTOFF-003"), "HOMA-CUTOFF-003", extra)
}

// TestCutoff001Queueing: captured as delivered, DATA that left before the
// CUTOFFS reached the client may arrive after it (queued in the switch):
// inconclusive (queueing) until the client's DATA at that level carry the
// new version; a stale one after that is a violation. On the client's own
// link the first stale one already is.
func TestCutoff001Queueing(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(20*time.Microsecond).cutoffs(false, 2, 2)
	queued := b.after(3*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).dataVersion(true, 6, 100, 0, 100, 7, 2)
	stale := b.after(time.Millisecond).data(true, 8, 100, 0, 100, 7, nil)
	rep := b.checkAt(CapturePoint{Kind: CaptureDelivered}, "linux", "HOMA-CUTOFF-001")
	wantViolations(t, rep, "HOMA-CUTOFF-001", stale)
	wantDowngraded(t, rep, "HOMA-CUTOFF-001", queued, CauseQueueing)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux", "HOMA-CUTOFF-001"), "HOMA-CUTOFF-001", queued, stale)
}

// TestCutoff001BeforeMain: a linux_6.1.38 capture shows DATA of messages
// begun before the CUTOFFS carrying the old version long after it, so
// before main a long message's packet is not judged; a 100-byte request
// sent 5 ms after the CUTOFFS began as it left (the pacer never holds one
// of at most defer_min_bytes) and must carry the new version (helper-144:
// no rule judged cutoff_version under linux-2024).
func TestCutoff001BeforeMain(t *testing.T) {
	const id = "HOMA-CUTOFF-001"
	b := newTrace(t, wire.Version2024)
	b.data(true, 2, 100, 0, 100, 7, nil)
	b.after(20*time.Microsecond).cutoffs(false, 2, 2)
	b.after(5*time.Millisecond).data(true, 4, 20000, 1424, 1424, 5, nil) // built before: version 1
	small := b.after(time.Millisecond).data(true, 6, 100, 0, 100, 7, nil)
	b.after(time.Millisecond).dataVersion(true, 8, 100, 0, 100, 7, 2)
	wantViolations(t, b.checkAt(HostPoint(b.client), "linux-2024", id), id, small)
}

// TestCutoff006OneTable: a host's cutoff_version names one table, to
// every peer. A CUTOFFS with the version of an earlier one and another
// table is inconclusive the first time (a sysctl write racing the CUTOFFS
// writes the table before raising the version); one more CUTOFFS with
// that version, to any peer, more than slack later is a violation, with
// the new table or the old one. A new version with the new table passes,
// and CUTOFFS more than timeout_ticks apart (a module reload counts from
// 1 again) are not compared.
func TestCutoff006OneTable(t *testing.T) {
	other := [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 300}
	b := newTrace(t, wire.VersionCurrent)
	b.cutoffs(false, 2, 1)
	b.client = netip.MustParseAddr("198.18.0.3")
	b.after(time.Millisecond).cutoffs(false, 2, 1) // same table to another peer
	raced := b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
	again := b.after(5*time.Millisecond).cutoffsTable(false, 2, 1, other) // to a third peer
	b.client = netip.MustParseAddr("198.18.0.4")
	old := b.after(time.Millisecond).cutoffs(false, 2, 1)
	b.after(time.Millisecond).cutoffsTable(false, 2, 2, other) // the version raised: fine
	rep := b.check("linux", "HOMA-CUTOFF-006")
	wantViolations(t, rep, "HOMA-CUTOFF-006", again, old)
	wantInconclusive(t, rep, "HOMA-CUTOFF-006", raced)
	wantCounts(t, rep, "HOMA-CUTOFF-006", 6, 3, 2, 1)

	// A copy within slack of the raced one is the same race; a reload
	// (timeout_ticks later) starts the count afresh.
	b = newTrace(t, wire.VersionCurrent)
	b.cutoffs(false, 2, 1)
	raced = b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
	b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
	b.after(time.Second).cutoffsTable(false, 2, 1, [8]uint32{0, 0, 0, 0, 1000000, 9000, 2000, 100}) // after a reload
	b.after(time.Millisecond).cutoffs(false, 2, 1)
	rep = b.check("linux", "HOMA-CUTOFF-006")
	wantViolations(t, rep, "HOMA-CUTOFF-006")
	wantInconclusive(t, rep, "HOMA-CUTOFF-006", raced)
	wantCounts(t, rep, "HOMA-CUTOFF-006", 5, 2, 0, 3)
}

// TestCutoff006SysctlWriteStalled: on the sender's own link too, the
// version may rise well after a sysctl write changed the table: the writer
// raises cutoff_version in process context after proc_dointvec and the
// sysctl dependents (homa_dointvec), where softirqs and other work may hold
// its core for a stalled CPU's delay, and a CUTOFFS built just before the
// raise leaves through its core's NIC queue. A second CUTOFFS with the new
// table under the old version 1 ms after the first is inconclusive; 5 ms
// after, past slack, still a violation.
func TestCutoff006SysctlWriteStalled(t *testing.T) {
	other := [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 300}
	b := newTrace(t, wire.VersionCurrent)
	b.cutoffs(false, 2, 1)
	b.client = netip.MustParseAddr("198.18.0.3")
	raced := b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
	b.client = netip.MustParseAddr("198.18.0.4")
	stalled := b.after(time.Millisecond).cutoffsTable(false, 2, 1, other)
	b.client = netip.MustParseAddr("198.18.0.5")
	late := b.after(4*time.Millisecond).cutoffsTable(false, 2, 1, other)
	rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-CUTOFF-006")
	wantViolations(t, rep, "HOMA-CUTOFF-006", late)
	wantInconclusive(t, rep, "HOMA-CUTOFF-006", raced)
	wantInconclusive(t, rep, "HOMA-CUTOFF-006", stalled)
}
