package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestAck010NeedAckFromServerOnly: a 100-byte RPC; the server's NEED_ACK
// passes; a NEED_ACK with the client's (even) sender_id is a violation.
func TestAck010NeedAckFromServerOnly(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.data(true, 10, 100, 0, 100, 7, nil)
	bad := b.after(2*time.Millisecond).ctl(true, 10, wire.TypeNeedAck)
	b.after(time.Millisecond).data(false, 10, 100, 0, 100, 7, nil)
	b.after(2500*time.Microsecond).ctl(false, 10, wire.TypeNeedAck)
	b.after(20 * time.Microsecond).ack(10)
	rep := b.check("linux", "HOMA-ACK-010")
	wantViolations(t, rep, "HOMA-ACK-010", bad)
	wantCounts(t, rep, "HOMA-ACK-010", 2, 1, 1, 0)
}
