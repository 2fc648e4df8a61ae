package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestAfterKeysForgottenWithRPC: an After rule's keys of an RPC go when
// the trace forgets the RPC (finished and idle for EvictAfter), not
// IdleEvictAfter later, so that a checker's state follows the live RPCs:
// 5000 finished RPCs 10 ms apart (50 s, under IdleEvictAfter) leave keys
// for only those of the last EvictAfter and of the packets since the
// trace's latest eviction pass (every 4096 packets), and the aged heap
// holds exactly the keys the map does.
func TestAfterKeysForgottenWithRPC(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	const n, gap = 5000, 10 * time.Millisecond
	for i := range n {
		cid := uint64(2 * (i + 1))
		b.data(true, cid, 100, 0, 100, 7, nil)
		b.after(50 * time.Microsecond)
		b.data(false, cid, 100, 0, 100, 7, nil)
		b.after(gap)
	}
	prof, err := LookupProfile("linux")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := Select(Rules(), "HOMA-RESEND-006", 0, "linux")
	if err != nil || len(rules) != 1 {
		t.Fatalf("select: %v, %d rules", err, len(rules))
	}
	c := NewChecker("linux", prof.Params, rules)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	st := c.state[0]
	t.Logf("%d keys, %d RPCs in the trace", len(st.seenA), len(c.trace.rpcs))
	// Two keys (one per side) of each RPC whose last packet is within
	// EvictAfter of the trace's latest eviction pass, and of the RPCs
	// since (two packets each).
	limit := 2 * (int(EvictAfter/gap) + 4096/2 + 2)
	if got := len(st.seenA); got == 0 || got > limit {
		t.Errorf("HOMA-RESEND-006 holds %d keys after %d finished RPCs over %v; want 1..%d (those of RPCs in the trace)", got, n, time.Duration(n)*gap, limit)
	}
	if st.aged.Len() != len(st.seenA) {
		t.Errorf("aged heap holds %d keys, the map %d", st.aged.Len(), len(st.seenA))
	}
	for j, a := range st.aged.s {
		if got := st.seenAt[a.slot].heapAt; int(got) != j {
			t.Fatalf("slot %d says heap position %d, is at %d", a.slot, got, j)
		}
	}
	if live := len(c.trace.rpcs); 2*live < len(st.seenA) {
		t.Errorf("%d keys for %d RPCs in the trace", len(st.seenA), live)
	}
	if rep := c.Finish(); len(rep.Violations) != 0 {
		t.Errorf("violations: %v", rep.Violations)
	}
}
