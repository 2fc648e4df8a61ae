package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant014FullyGrantedLeaves: linux_6.1.38 grants one message per
// sender at a time, but a message granted to its length leaves the
// grantable set (homa_grant_check_rpc: homa_grant_remove_rpc, then
// homa_grant_recalc), so the receiver may go back to the sender's other
// message while the first one's last bytes are still on their way. Seen
// in the lab (GRANT-fifo-oldest against linux_6.1.38: GRANT to 410000 of
// a 410000-byte message, then at once a GRANT to the other message) and
// warned before the Granted test. A return while the first message is
// granted short of its length stays a finding.
func TestGrant014FullyGrantedLeaves(t *testing.T) {
	build := func(lastGrant uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 30000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 2, 12000, 0)
		b.message(true, 4, 20000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 4, 12000, 0)
		b.after(time.Millisecond).message(true, 4, 20000, 10000, 12000, 10000, 6)
		b.after(time.Millisecond).grant(false, 4, lastGrant, 0)
		return b, b.after(time.Millisecond).grant(false, 2, 14000, 0)
	}
	b, _ := build(20000)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014")
	b, back := build(16000)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014", back)
	// With max_rpcs_per_peer 4 (lab: GRANT-srpt, GRANT-overcommit-all,
	// GRANT-srpt-priority-top were warned) a sender's messages may all
	// be active: no finding.
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014", "max_rpcs_per_peer=4"), "HOMA-GRANT-014")
}

// TestGrant014AfterClientUnknown: a request whose client sent RPC_UNKNOWN
// has left the server's grantable set (linux_6.1.38 homa_unknown_pkt
// frees the server RPC). Going back to the sender's other message then is
// no second active message; and a GRANT to the forgotten request itself
// may be for an incarnation a request DATA created anew after the free
// (the lab, linux_6.1.38, whole suite: the tester's DATA 21360-30000 of a
// 50000-byte request reached the module just before its RPC_UNKNOWN, the
// module took the RPC_UNKNOWN first, freed the RPC, re-created it from the
// DATA and granted 18640, received plus its window, after a GRANT to the
// sender's 92848-byte message: warned as two active messages). Before, both
// were HOMA-GRANT-014 findings.
func TestGrant014AfterClientUnknown(t *testing.T) {
	build := func(forgotten uint64) (*traceBuilder, int) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 70000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 2, 12000, 0)
		b.message(true, 4, 50000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).message(true, 2, 70000, 10000, 12000, 10000, 0)
		b.after(time.Millisecond).grant(false, 4, 20000, 0)
		if forgotten != 0 {
			b.after(time.Millisecond).ctl(true, forgotten, wire.TypeRPCUnknown)
		}
		return b, b.after(time.Millisecond).grant(false, 2, 14000, 0)
	}
	b, back := build(0)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014", back)
	// The other message's client forgot it: the receiver freed it.
	b, _ = build(4)
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014")
	// This message's client forgot it: a GRANT for it now may be for a
	// new incarnation.
	b, back = build(2)
	rep := b.check("linux-2024", "HOMA-GRANT-014")
	wantViolations(t, rep, "HOMA-GRANT-014")
	wantInconclusive(t, rep, "HOMA-GRANT-014", back)
}

// TestGrant014FIFOGrantNotJudged: a FIFO GRANT goes to the receiver's
// oldest message whether or not it is one of the active ones
// (linux_6.13.9 homa_grant_find_oldest scans the grantable lists), so a
// FIFO GRANT to a sender's older message while its newer, shorter one is
// being granted is no second active message. The lab (linux_6.13.9,
// GRANT-fifo-counted, check --profile linux-2025): 4-15 HOMA-GRANT-014
// warnings per pass, each at a level-6 GRANT adding fifo_grant_increment
// 50000 to the old message. Before, this was a finding.
func TestGrant014FIFOGrantNotJudged(t *testing.T) {
	build := func(prio uint8) (*traceBuilder, int) {
		b := newTrace(t, wire.Version2025)
		b.message(true, 2, 300000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 2, 20000, 0)
		b.message(true, 4, 50000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 4, 20000, 0)
		return b, b.after(time.Millisecond).grant(false, 2, 70000, prio)
	}
	b, back := build(0)
	wantViolations(t, b.check("linux-2025", "HOMA-GRANT-014", "fifo_grant_increment=50000"), "HOMA-GRANT-014", back)
	b, _ = build(6) // num_priorities 8: the FIFO level
	wantViolations(t, b.check("linux-2025", "HOMA-GRANT-014", "fifo_grant_increment=50000"), "HOMA-GRANT-014")
}

// TestGrant014ReturnToShorter: a sender's message that now has fewer bytes
// left than the one being granted outranks it and may take the sender's
// one slot back (linux_6.13.9 homa_grant_manage_rpc bumps the same peer's
// lower-ranked RPC; linux_6.1.38 homa_grant_recalc keeps each host's
// best). The lab (linux_6.13.9, GRANT-fifo-counted, check --profile
// linux-2025): FIFO GRANTs brought the old 1000000-byte message to 249552
// bytes left, under the newer 340000-byte one's 288736, and the module
// granted the old one again at an SRPT level: warned before. A return to a
// message with more bytes left stays a finding.
func TestGrant014ReturnToShorter(t *testing.T) {
	build := func(sent uint32) (*traceBuilder, int) {
		b := newTrace(t, wire.Version2024)
		b.message(true, 2, 100000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 2, 20000, 0)
		b.message(true, 4, 60000, 0, 10000, 10000, 6)
		b.after(time.Millisecond).grant(false, 4, 20000, 0)
		b.after(time.Millisecond).message(true, 2, 100000, 10000, sent, 10000, 0)
		return b, b.after(time.Millisecond).grant(false, 2, sent+10000, 0)
	}
	b, back := build(20000) // 80000 bytes left against 50000
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014", back)
	b, _ = build(60000) // 40000 left against 50000
	wantViolations(t, b.check("linux-2024", "HOMA-GRANT-014"), "HOMA-GRANT-014")
	// linux_6.13.9 ranks by bytes not yet granted (homa_grant_outranks):
	// a FIFO GRANT of 50000 leaves the old message 30000 to grant against
	// the newer one's 40000, though it has 80000 to receive.
	b = newTrace(t, wire.Version2025)
	b.message(true, 2, 100000, 0, 10000, 10000, 6)
	b.after(time.Millisecond).grant(false, 2, 20000, 0)
	b.message(true, 4, 60000, 0, 10000, 10000, 6)
	b.after(time.Millisecond).grant(false, 4, 20000, 0)
	b.after(time.Millisecond).message(true, 2, 100000, 10000, 20000, 10000, 0)
	b.after(time.Millisecond).grant(false, 2, 70000, 6)
	b.after(time.Millisecond).grant(false, 2, 71424, 0)
	wantViolations(t, b.check("linux-2025", "HOMA-GRANT-014", "fifo_grant_increment=50000"), "HOMA-GRANT-014")
}
