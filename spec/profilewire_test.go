package spec

import (
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestProfileForWire: each wire format names a profile whose parameters
// are of that format.
func TestProfileForWire(t *testing.T) {
	for _, v := range []wire.Version{wire.VersionCurrent, wire.Version2024, wire.VersionUpstream} {
		p, err := LookupProfile(ProfileForWire(v))
		if err != nil || p.Params.Wire != v {
			t.Errorf("%v: profile %s (%v), wire %v", v, ProfileForWire(v), err, p.Params.Wire)
		}
	}
}
