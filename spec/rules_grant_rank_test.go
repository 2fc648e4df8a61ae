package spec

import (
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// rankTrace: two clients' requests to one server; the server grants both
// after their unscheduled bytes, with priorities p1 (100 KB request, RPC 2)
// and p2 (500 KB request, RPC 4, from another client). It returns the
// builder and the frame of the second GRANT.
func rankTrace(t *testing.T, p1, p2 uint8) (*traceBuilder, int) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	b.after(10*time.Microsecond).grant(false, 2, 60000, p1)
	b.client = netipAddr("198.18.0.3")
	g := b.after(10*time.Microsecond).grant(false, 4, 60000, p2)
	return b, g
}

// TestGrant011SRPTRanking: the message with fewer bytes left (100 KB
// request, 60000 left) gets the higher scheduled priority: priorities 1
// and 0 pass; giving the 500 KB request (460000 left) priority 1 while the
// short one holds 0 violates (BR-10-like inversion).
func TestGrant011SRPTRanking(t *testing.T) {
	b, _ := rankTrace(t, 1, 0)
	wantClean(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011")

	b, bad := rankTrace(t, 0, 1)
	wantViolations(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011", bad)

	// Within rank_tolerance the inversion is tolerated (stale ranking).
	b, _ = rankTrace(t, 0, 1)
	rep := b.check("linux", "HOMA-GRANT-011", "rank_tolerance=500000")
	wantViolations(t, rep, "HOMA-GRANT-011")

	// FIFO grants (level 6 with fifo_grant_increment set) are outside SRPT.
	b, _ = rankTrace(t, 0, 6)
	wantViolations(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011")
}

func netipAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// TestGrant011FullyGrantedLeavesActiveSet: once the 100 KB request is
// granted to its end it leaves the receiver's active set, so the 500 KB
// request may then get a higher priority than the 100 KB request's last
// GRANT carried.
func TestGrant011FullyGrantedLeavesActiveSet(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.3")
	b.message(true, 4, 500000, 0, 40000, 40000, 4)
	b.client = netipAddr("198.18.0.1")
	b.after(10*time.Microsecond).grant(false, 2, 100000, 0) // to the end
	b.client = netipAddr("198.18.0.3")
	b.after(10*time.Microsecond).grant(false, 4, 60000, 1)
	wantClean(t, b.check("linux", "HOMA-GRANT-011"), "HOMA-GRANT-011")
}
