package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// resendPastSeenGrants builds RPC 2: a 100000-byte request whose 40000
// unscheduled bytes arrive, then the server's RESEND for [40000, 60000)
// with no GRANT in the capture (one lost before the capture point would
// explain it). With lossyFirst, RPC 4 comes first: the server asks again
// for bytes [0, 1424) of a 5000-byte request the capture never saw,
// though the client sent past them: the path loses packets (client to
// server) before the capture point. It returns the RESEND's frame.
func resendPastSeenGrants(t *testing.T, lossyFirst bool) (*traceBuilder, int) {
	b := newTrace(t, wire.VersionCurrent)
	if lossyFirst {
		b.message(true, 4, 5000, 1424, 5000, 5000, 7)
		b.after(3*time.Millisecond).resend(false, 4, 0, 1424, 7)
		b.after(10*time.Microsecond).data(true, 4, 5000, 0, 1424, 7, func(f *wire.DataFields) { f.Retransmit = 1; f.Incoming = 5000 })
		b.after(time.Millisecond)
	}
	b.message(true, 2, 100000, 0, 40000, 40000, 4)
	return b, b.after(5*time.Millisecond).resend(false, 2, 40000, 20000, 7)
}

// TestNetworkLostBetween: a RESEND past every GRANT the capture saw is a
// violation unless the capture shows packets between the two hosts lost
// before the capture point (a GRANT leaves no trace of its own loss);
// captured as delivered, the evidence may come from the other direction
// (both cross the whole network before the capture point). At the RESEND
// sender's own link nothing it sent can be missing, and at a tap between
// the hosts the client's side says nothing of the server's: violations.
func TestNetworkLostBetween(t *testing.T) {
	delivered := CapturePoint{Kind: CaptureDelivered}
	b, rs := resendPastSeenGrants(t, false)
	wantViolations(t, b.checkAt(delivered, "linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", rs)

	b, rs = resendPastSeenGrants(t, true)
	rep := b.checkAt(delivered, "linux", "HOMA-RESEND-012")
	wantViolations(t, rep, "HOMA-RESEND-012")
	wantDowngraded(t, rep, "HOMA-RESEND-012", rs, CauseLossBefore)
	if len(rep.Downgrades) != 1 || rep.Downgrades[0].Count != 1 {
		t.Errorf("downgrades %+v, want one", rep.Downgrades)
	}
	wantViolations(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", rs)
	// A tap between the hosts sees each direction's stretch on its own:
	// loss of the client's DATA says nothing of the server's GRANTs.
	wantViolations(t, b.checkAt(Switch, "linux", "HOMA-RESEND-012"), "HOMA-RESEND-012", rs)
}
