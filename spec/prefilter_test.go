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

// TestHotValuesFitRegisters guards the sizes the checker's speed rests
// on: a struct of at most four fields and 32 bytes is kept in registers
// by the Go compiler, a larger one is spilled and copied at every call.
// Every rule returns a Result and reads Packet views per packet.
func TestHotValuesFitRegisters(t *testing.T) {
	if n := unsafe.Sizeof(Result{}); n > 32 {
		t.Errorf("spec.Result is %d bytes: keep it within 32 (rare fields behind a pointer)", n)
	}
	if n := unsafe.Sizeof(wire.Packet{}); n > 32 {
		t.Errorf("wire.Packet is %d bytes: keep it within 32", n)
	}
}
