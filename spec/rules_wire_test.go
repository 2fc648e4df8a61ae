package spec

import (
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

func TestWire002DataRange(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 1000, 0, 1000, 7, nil)
	bad := b.data(true, 4, 1000, 900, 200, 7, nil) // runs past the end
	zero := b.data(true, 6, 0, 0, 10, 7, nil)     // message_length 0
	rep := b.check("linux", "HOMA-WIRE-002")
	wantViolations(t, rep, "HOMA-WIRE-002", bad, zero)
}

func TestWire003SameLength(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 2, 3000, 0, 1424, 7, nil)
	bad := b.data(true, 2, 3001, 1424, 1424, 7, nil)
	rep := b.check("linux", "HOMA-WIRE-003")
	wantViolations(t, rep, "HOMA-WIRE-003", bad)
}
