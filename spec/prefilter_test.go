package spec

import (
	"os"
	"testing"
	"time"

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
