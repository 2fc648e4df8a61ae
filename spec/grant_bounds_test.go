package spec

import (
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrantBoundsHideNoFinding: HOMA-GRANT-013 (granted bytes not
// received against max_incoming) and HOMA-GRANT-006 (messages granted at
// once against max_overcommit) answer a stretch of GRANTs within their
// limits from the trace's running bounds over the granting set
// (boundedPass, boundedMeasure), without scanning it; a GRANT past the
// limit right after that stretch is still a violation, with and without
// the Checker's verification, whether the GRANT's own message or the
// others' take the count over (each family: the sum, the count).
func TestGrantBoundsHideNoFinding(t *testing.T) {
	for _, c := range []struct {
		name, rule, profile, param string
		v                          wire.Version
		build                      func(b *traceBuilder) int // returns the faulty GRANT's frame
	}{
		{"incoming-own", "HOMA-GRANT-013", "linux", "max_incoming=20000", wire.VersionCurrent, func(b *traceBuilder) int {
			// RPC 2's request granted 10000 bytes at a time, each
			// received before the next GRANT; then a GRANT 25000 bytes
			// past what arrived.
			b.message(true, 2, 300000, 0, 40000, 40000, 4)
			at := uint32(40000)
			for range 8 {
				b.grant(false, 2, at+10000, 0)
				b.message(true, 2, 300000, at, at+10000, 40000, 0)
				at += 10000
			}
			return b.grant(false, 2, at+25000, 0)
		}},
		{"incoming-others", "HOMA-GRANT-013", "linux", "max_incoming=20000", wire.VersionCurrent, func(b *traceBuilder) int {
			// RPC 4's request keeps 12000 granted bytes outstanding
			// while RPC 2's gets 5000 at a time (17000 in all); then
			// RPC 2 gets 10000 more (22000).
			b.message(true, 4, 300000, 0, 40000, 40000, 4)
			b.message(true, 2, 300000, 0, 40000, 40000, 4)
			b.grant(false, 4, 52000, 1)
			at := uint32(40000)
			for range 8 {
				b.grant(false, 2, at+5000, 0)
				b.message(true, 2, 300000, at, at+5000, 40000, 0)
				at += 5000
			}
			return b.grant(false, 2, at+10000, 0)
		}},
		{"overcommit", "HOMA-GRANT-006", "linux-2024", "max_overcommit=2", wire.Version2024, func(b *traceBuilder) int {
			// RPCs 2 and 4 granted in turn, both with bytes granted and
			// not received (2 messages); then RPC 6 granted too (3).
			for _, cid := range []uint64{2, 4, 6} {
				b.message(true, cid, 200000, 0, 10000, 10000, 4)
			}
			at := uint32(10000)
			for range 8 {
				b.grant(false, 2, at+5000, 0)
				b.grant(false, 4, at+5000, 1)
				b.message(true, 2, 200000, at, at+5000, 10000, 0)
				b.message(true, 4, 200000, at, at+5000, 10000, 1)
				at += 5000
			}
			b.grant(false, 2, at+5000, 0)
			b.grant(false, 4, at+5000, 1)
			return b.grant(false, 6, 15000, 0)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, c.v)
			bad := c.build(b)
			for _, verify := range []bool{false, true} {
				rep, ch := b.checkVerify(Switch, c.profile, c.rule, verify, c.param)
				wantViolations(t, rep, c.rule, bad)
				if n := ch.ctx.bounded; n < 8 {
					t.Errorf("verify %v: %d GRANTs answered by the bounds, want the stretch's (at least 8)", verify, n)
				}
				if verify && ch.ctx.boundVerified != ch.ctx.bounded {
					t.Errorf("%d bound answers, %d verified", ch.ctx.bounded, ch.ctx.boundVerified)
				}
			}
		})
	}
}

// TestGrantBoundsTrackSet: the running sum and count over a receiver's
// granting set (outstandingSum.granted and .held) follow the messages in
// it as GRANTs and DATA change them and as they leave it (complete),
// ending at 0.
func TestGrantBoundsTrackSet(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.message(true, 2, 60000, 0, 40000, 40000, 4)
	b.message(true, 4, 60000, 0, 40000, 40000, 4)
	b.grant(false, 2, 50000, 0)
	b.grant(false, 4, 45000, 1)
	b.message(true, 2, 60000, 40000, 42000, 40000, 0)
	_, c := b.checkVerify(Switch, "linux", "HOMA-GRANT-013", true)
	s := c.trace.outstanding[b.server]
	if s == nil || s.granted != 8000+5000 || s.held != 2 {
		t.Fatalf("after two GRANTs and 2000 bytes: %+v, want granted 13000, held 2", s)
	}
	b.message(true, 2, 60000, 42000, 60000, 40000, 0) // RPC 2's request complete
	b.message(true, 4, 60000, 40000, 45000, 40000, 0) // RPC 4's caught up
	_, c = b.checkVerify(Switch, "linux", "HOMA-GRANT-013", true)
	if s := c.trace.outstanding[b.server]; s.granted != 0 || s.held != 0 {
		t.Fatalf("after RPC 2 complete and RPC 4 caught up: %+v, want granted 0, held 0", s)
	}
}
