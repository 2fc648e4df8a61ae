package explore

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// TestOracleReactionRace: in real time the view stamps the tester's
// packets as it sends them and the IUT's as they reach the tester, so a
// RESEND the IUT's timer pass decided before a DATA reached its protocol
// code can show up just after that DATA (seen in namespaces: 105 µs). The
// oracle charges that RESEND (HOMA-RESEND-001, a timing finding) only
// when it comes at least the reaction time after the DATA: never in the
// simulator (reaction 0), where the view is the IUT's own order.
func TestOracleReactionRace(t *testing.T) {
	ctx := context.Background()
	w, err := newWorld(ctx, SimEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	iut, tester := w.info.Addr, w.hosts[0].addr
	var rules []*spec.Rule
	for _, r := range spec.Rules() {
		if r.AppliesTo(w.ce.Profile) {
			rules = append(rules, r)
		}
	}
	t0 := time.Unix(1000, 0)
	// A 4272-byte request (three packets, all unscheduled): the first at
	// 0, the third at 30 ms (the second lost), then the IUT's RESEND for
	// the second, gap after the third DATA.
	run := func(gap, reaction time.Duration) *spec.Finding {
		w.params.Reaction = reaction
		o := newOracle(ctx, w, rules, spec.Should)
		c := wire.CommonFields{Sport: 40000, Dport: serverPort, SenderID: 2}
		payload := make([]byte, 1424)
		feed := func(at time.Duration, src, dst netip.Addr, f wire.Fields) *spec.Finding {
			b, err := f.AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: src, Dst: dst})
			if err != nil {
				t.Fatal(err)
			}
			ev := viewEvents(nil, t0.Add(at), src, dst, 7, b, w.params.Wire)
			return o.feed(&ev[0])
		}
		for _, off := range []uint32{0, 2848} {
			d := &wire.DataFields{Common: c, MessageLength: 4272, Incoming: 4272, SegOffset: off, Payload: payload}
			d.Common.Sequence = off
			at := time.Duration(0)
			if off > 0 {
				at = 30 * time.Millisecond
			}
			if f := feed(at, tester, iut, d); f != nil {
				t.Fatalf("DATA at offset %d: %v", off, f)
			}
		}
		rs := &wire.ResendFields{Common: wire.CommonFields{Sport: serverPort, Dport: 40000, SenderID: 3}, Offset: 1424, Length: 1424, Priority: 7}
		return feed(30*time.Millisecond+gap, iut, tester, rs)
	}
	if f := run(105*time.Microsecond, 0); f == nil || f.Rule != "HOMA-RESEND-001" {
		t.Errorf("RESEND 105 µs after DATA, no reaction time: %v, want HOMA-RESEND-001", f)
	}
	if f := run(105*time.Microsecond, 5*time.Millisecond); f != nil {
		t.Errorf("RESEND 105 µs after DATA, reaction 5 ms: charged %v, want excused", f)
	}
	if f := run(3*time.Millisecond, time.Millisecond); f == nil || f.Rule != "HOMA-RESEND-001" {
		t.Errorf("RESEND 3 ms after DATA (resend_ticks 5 of 1 ms), reaction 1 ms: %v, want HOMA-RESEND-001", f)
	}
}
