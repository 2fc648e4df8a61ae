package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// icmpPortUnreachable appends the ICMP port unreachable the server host
// sends the client for a packet to server port sport.
func (b *traceBuilder) icmpPortUnreachable(sport uint16) int {
	b.frame++
	b.events = append(b.events, Event{Frame: b.frame, Time: b.now, Src: b.server, Dst: b.client,
		ICMP: &ICMP{PortUnreachable: true, Type: 3, Code: 3, QSrc: b.client, QDst: b.server, QSport: b.cport, QDport: sport}})
	return b.frame
}

// TestID006ClientAborts: a request to server port 4001, where no socket
// listens, gets ICMP port unreachable; the client aborts the RPC
// (ENOTCONN), but HomaModule's aborted client RPC stays active, its timer
// RESENDing, until the application collects the error: its RESEND 5 ms
// later is inconclusive on the client's link (it was a MUST violation),
// downgraded elsewhere; an ACK answering a NEED_ACK from a socket that
// came back on the port is not judged.
func TestID006ClientAborts(t *testing.T) {
	b := newTrace(t, wire.VersionCurrent)
	b.sport = 4001
	b.data(true, 10, 100, 0, 100, 7, nil)
	b.after(20 * time.Microsecond).icmpPortUnreachable(4001)
	bad := b.after(5*time.Millisecond).resend(true, 10, 0, wire.ResendAll, 7)
	b.after(5*time.Millisecond).ctl(false, 10, wire.TypeNeedAck)
	b.after(20 * time.Microsecond).ack(10)
	rep := b.checkAt(HostPoint(b.client), "linux", "HOMA-ID-006")
	wantViolations(t, rep, "HOMA-ID-006")
	wantInconclusive(t, rep, "HOMA-ID-006", bad)
	// Between the hosts the ICMP may have been lost after the tap.
	rep = b.check("linux", "HOMA-ID-006")
	wantViolations(t, rep, "HOMA-ID-006")
	wantDowngraded(t, rep, "HOMA-ID-006", bad, CauseLossAfter)
}
