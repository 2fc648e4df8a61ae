package netem

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestSetTC: SetTC applies the link config, and a plan it cannot apply
// takes the link config away again: nothing is left half-set.
func TestSetTC(t *testing.T) {
	tp := newTestTopo(t)
	t.Cleanup(func() { _ = ResetTC(tp.nsA, tp.ifA) })
	hasHTB := func() bool {
		st, err := ShowTC(tp.nsA, tp.ifA)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(st.Qdiscs, func(q string) bool { return strings.HasPrefix(q, "htb ") })
	}
	cfg := LinkConfig{Rate: 100 * Mbit, Priorities: 4}
	if err := SetTC(tp.nsA, tp.ifA, cfg, nil); err != nil {
		t.Fatal(err)
	}
	if !hasHTB() {
		t.Fatal("no htb root after SetTC")
	}
	p, err := ParsePlan([]byte("rules:\n  - match: {type: DATA}\n    action: {delay: 1ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = SetTC(tp.nsA, tp.ifA, cfg, p)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "action.delay") {
		t.Fatalf("SetTC with a delaying plan: %v, want the unsupported delay", err)
	}
	if hasHTB() {
		t.Error("the htb root is still there after the plan failed")
	}
	// A plan set, then a SetTC without one: the plan is gone, as the new
	// call asked for nothing else.
	drop, err := ParsePlan([]byte("rules:\n  - match: {type: GRANT, nth: 2}\n    action: {drop: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := SetTC(tp.nsA, tp.ifA, cfg, drop); err != nil {
		t.Fatal(err)
	}
	if hits, err := TCPlanHits(tp.nsA, tp.ifA); err != nil || len(hits) != 1 {
		t.Fatalf("plan hits %v, %v: want the plan's one rule", hits, err)
	}
	if err := SetTC(tp.nsA, tp.ifA, cfg, nil); err != nil {
		t.Fatal(err)
	}
	if hits, err := TCPlanHits(tp.nsA, tp.ifA); err != nil || len(hits) != 0 {
		t.Errorf("plan hits %v, %v after SetTC without a plan: want none", hits, err)
	}
	if !hasHTB() {
		t.Error("no htb root after SetTC without a plan")
	}
}
