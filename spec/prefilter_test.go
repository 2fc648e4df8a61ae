package spec

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/homatest/homatest/spec/wire"
)

// TestMain runs the package's tests with verifyPrefilters set: every
// checker a test runs also asks the functions the rules' pre-filters
// spare, and panics if one would have acted.
func TestMain(m *testing.M) {
	verifyPrefilters = true
	os.Exit(m.Run())
}

// TestPrefilterVerified shows that the verification catches a pre-filter
// narrower than its function: a Within rule whose Trigger fires on GRANT
// but whose TriggerTypes names only DATA.
func TestPrefilterVerified(t *testing.T) {
	bad := &Rule{ID: "HOMA-TEST-009", Level: Must, Statement: "s", Source: "s", Property: Within{
		TriggerTypes: []wire.PacketType{wire.TypeData},
		Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
			return Obligation{Key: 1, Match: func(*Ctx, *Event) bool { return true }, Expect: "x"}, e.Type() == wire.TypeGrant
		},
		Bound: func(*Params) time.Duration { return time.Second },
	}}
	defer func() {
		if recover() == nil {
			t.Fatal("a TriggerTypes that excludes a type its Trigger fires on was not caught")
		}
	}()
	b := newTrace(t, wire.VersionCurrent)
	b.grant(false, 2, 50000, 7)
	p, _ := LookupProfile("linux")
	c := NewChecker("linux", p.Params, []*Rule{bad})
	c.Feed(&b.events[0])
}

// TestNeedsVerified shows that the verification catches an Each rule
// whose Needs spares packets its Check acts on (a rule that needs
// retransmitted DATA but judges a first transmission), on the dispatch
// tables' path and on the reference path, and that a packet meeting the
// gate is checked as usual.
func TestNeedsVerified(t *testing.T) {
	bad := &Rule{ID: "HOMA-TEST-011", Level: Must, Statement: "s", Source: "s", Property: Each{
		Types: []wire.PacketType{wire.TypeData}, Needs: NeedsRetransmit,
		Check: func(*Ctx, *Event) Result { return Violation("acts on every DATA") },
	}}
	p, _ := LookupProfile("linux")
	for _, reference := range []bool{false, true} {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 1000, 0, 1000, 7, func(d *wire.DataFields) { d.Retransmit = 1 })
		b.data(true, 2, 1000, 0, 1000, 7, nil)
		c := NewChecker("linux", p.Params, []*Rule{bad})
		c.SetCaptureFromStart() // the retransmission is no capture's start
		c.reference = reference
		c.Feed(&b.events[0])
		if n := len(c.report.Violations); n != 1 {
			t.Fatalf("reference %v: the retransmission gave %d violations, want 1", reference, n)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("reference %v: a Needs that spares a first transmission its Check judges was not caught", reference)
				}
			}()
			c.Feed(&b.events[1])
		}()
	}
}

// TestHotValuesFitRegisters guards the sizes the checker's speed rests
// on: a struct of at most four fields and 32 bytes is kept in registers
// by the Go compiler, a larger one is spilled and copied at every call.
// Every rule returns a Result and reads Packet views per packet; and the
// trace allocates an RPC per RPC of the capture.
func TestHotValuesFitRegisters(t *testing.T) {
	if n := unsafe.Sizeof(Result{}); n > 32 {
		t.Errorf("spec.Result is %d bytes: keep it within 32 (rare fields behind a pointer)", n)
	}
	if n := unsafe.Sizeof(wire.Packet{}); n > 32 {
		t.Errorf("wire.Packet is %d bytes: keep it within 32", n)
	}
	// An RPC is allocated per RPC of the capture, and the trace holds
	// those of the last EvictAfter: the largest share of the checker's
	// peak memory (issue 17). Above 1792 bytes Go's allocator rounds it
	// up to the 2048-byte size class, 14% more (2304 above that).
	if n := unsafe.Sizeof(RPC{}); n > 1792 {
		t.Errorf("spec.RPC is %d bytes: keep it within 1792 (Go's size class; rare fields behind a pointer, as Message.resend)", n)
	}
	// A pending is allocated per obligation opened (about 3 per RPC);
	// above 512 bytes it takes the 576-byte size class.
	if n := unsafe.Sizeof(pending{}); n > 512 {
		t.Errorf("spec.pending is %d bytes: keep it within 512 (Go's size class)", n)
	}
}

// TestMissedObligationsKeptInOrder opens more obligations than a rule
// keeps findings (MaxFindings) and lets them all expire at one packet:
// the findings kept must be those of the first triggers, in every run,
// not whichever the map of open obligations yields first.
func TestMissedObligationsKeptInOrder(t *testing.T) {
	never := &Rule{ID: "HOMA-TEST-010", Level: Must, Statement: "s", Source: "s", Alone: true, Property: Within{
		TriggerTypes: []wire.PacketType{wire.TypeGrant},
		Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
			return Obligation{Key: e.Frame, Match: func(*Ctx, *Event) bool { return false }, Expect: "nothing"}, true
		},
		Bound: func(*Params) time.Duration { return time.Millisecond },
	}}
	b := newTrace(t, wire.VersionCurrent)
	n := MaxFindings + 50
	for i := range n {
		b.after(time.Microsecond).grant(false, 2*uint64(i+1), 50000, 7)
	}
	b.after(10*time.Millisecond).grant(false, 2, 60000, 7)
	p, _ := LookupProfile("linux")
	for run := range 5 {
		c := NewChecker("linux", p.Params, []*Rule{never})
		for i := range b.events {
			c.Feed(&b.events[i])
		}
		rep := c.Finish()
		if got := rep.Rules[0].Violated; got != n {
			t.Fatalf("run %d: %d violations, want %d", run, got, n)
		}
		if len(rep.Violations) != MaxFindings {
			t.Fatalf("run %d: %d findings kept, want %d", run, len(rep.Violations), MaxFindings)
		}
		for i, v := range rep.Violations {
			if v.Frame != i+1 {
				t.Fatalf("run %d: finding %d is at frame %d, want %d (the first triggers' findings)", run, i, v.Frame, i+1)
			}
		}
	}
}

// TestUsualCaught shows that the verification catches an Each rule whose
// Usual declares a result its Check does not give: a rule that declares
// first transmissions pass but finds every DATA a violation.
func TestUsualCaught(t *testing.T) {
	bad := &Rule{ID: "HOMA-TEST-012", Level: Must, Statement: "s", Source: "s", Property: Each{
		Types: []wire.PacketType{wire.TypeData}, Usual: Usual{FactFresh, Passed},
		Check: func(*Ctx, *Event) Result { return Violation("acts on every DATA") },
	}}
	p, _ := LookupProfile("linux")
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 1000, 0, 1000, 7, func(d *wire.DataFields) { d.Retransmit = 1 })
	b.data(true, 2, 1000, 0, 1000, 7, nil)
	c := NewChecker("linux", p.Params, []*Rule{bad})
	c.SetCaptureFromStart() // the retransmission is no capture's start
	c.Feed(&b.events[0])
	if n := len(c.report.Violations); n != 1 {
		t.Fatalf("the retransmission (not Usual) gave %d violations, want 1", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("a Usual result that Check does not give was not caught")
		}
	}()
	c.Feed(&b.events[1])
}

// TestUsualTriggerCaught shows that the verification catches a Within
// rule whose Usual says its Trigger opens nothing at packets where it
// does.
func TestUsualTriggerCaught(t *testing.T) {
	bad := &Rule{ID: "HOMA-TEST-013", Level: Must, Statement: "s", Source: "s", Property: Within{
		TriggerTypes: []wire.PacketType{wire.TypeData}, Usual: Usual{When: FactFresh},
		Trigger: func(c *Ctx, e *Event) (Obligation, bool) {
			return Obligation{Key: 1, Match: func(*Ctx, *Event) bool { return true }, Expect: "x"}, true
		},
		Bound: func(*Params) time.Duration { return time.Second },
	}}
	p, _ := LookupProfile("linux")
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 1000, 0, 1000, 7, nil)
	c := NewChecker("linux", p.Params, []*Rule{bad})
	defer func() {
		if recover() == nil {
			t.Error("a Usual that spares a Trigger that opens an obligation was not caught")
		}
	}()
	c.Feed(&b.events[0])
}
