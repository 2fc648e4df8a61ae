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

// TestAck004WrongServerPort: RPC 10 (server port 4000) completes; the
// client's next request carries a piggy-backed ack for RPC 10 naming
// port 4001. No socket there holds RPC 10, so the server keeps it and
// NEED_ACKs it (HOMA-ACK-003 passes), while the ack itself is the
// client's fault (HOMA-ACK-004). With the right port the NEED_ACK would
// follow an ack.
func TestAck004WrongServerPort(t *testing.T) {
	build := func(port uint16) (*traceBuilder, int, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 100, 0, 100, 7, nil)
		b.after(50*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
		pig := b.after(500*time.Microsecond).data(true, 12, 100, 0, 100, 7, func(f *wire.DataFields) {
			f.Ack = wire.AckEntry{ClientID: 10, ServerPort: port}
		})
		na := b.after(5*time.Millisecond).ctl(false, 10, wire.TypeNeedAck)
		return b, pig, na
	}
	b, pig, _ := build(4001)
	rep := b.check("linux", "HOMA-ACK-00[34]")
	wantViolations(t, rep, "HOMA-ACK-004", pig)
	wantViolations(t, rep, "HOMA-ACK-003")
	b, _, na := build(4000)
	rep = b.check("linux", "HOMA-ACK-00[34]")
	wantViolations(t, rep, "HOMA-ACK-004")
	wantViolations(t, rep, "HOMA-ACK-003", na)
}
