package spec

import (
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestSend004ResponseAfterWholeRequest: a 3000-byte request and a 100-byte
// response. Clean: the response follows the request's last byte, and a
// retransmission of request bytes after it (a RESEND from a server that
// lost them before the response began cannot happen, but a network
// duplicate can) is not judged. Faulty: the response leaves while the
// request's second packet has not been sent yet.
func TestSend004ResponseAfterWholeRequest(t *testing.T) {
	build := func(fault bool) (*traceBuilder, int) {
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 10, 3000, 0, 1424, 5, nil)
		if fault {
			b.after(20*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
		}
		late := b.after(time.Microsecond).data(true, 10, 3000, 1424, 1424, 5, nil)
		b.after(time.Microsecond).data(true, 10, 3000, 2848, 152, 5, nil)
		if !fault {
			b.after(20*time.Microsecond).data(false, 10, 100, 0, 100, 7, nil)
			b.after(time.Microsecond).data(true, 10, 3000, 1424, 1424, 5, nil) // a duplicate
		}
		return b, late
	}
	b, _ := build(false)
	wantClean(t, b.check("linux", "HOMA-SEND-004"), "HOMA-SEND-004")
	b, late := build(true)
	wantViolations(t, b.check("linux", "HOMA-SEND-004"), "HOMA-SEND-004", late, late+1)
}
