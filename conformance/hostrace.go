package conformance

import (
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec"
)

// timerRace is how long a packet recorded as delivered to an in-process
// host may take to reach the host's protocol code while the host's timer
// holds it (a timer tick walks every RPC under the host's lock, sending
// RESENDs and NEED_ACKs as it goes): a tenth of the bench hosts' 10 ms
// tick, well below the one silent tick by which an early RESEND is early.
const timerRace = time.Millisecond

// justDelivered reports whether timing finding f (one with a tolerance),
// charged to a packet host h sent, comes less than timerRace after a
// packet of the same RPC was delivered to h in view (h's view, frames
// 1-based): h's timer may have decided before that packet reached it, so
// the view cannot order the two. Other findings never do.
func justDelivered(f spec.Finding, view []spec.Event, h netip.Addr) bool {
	if f.Slack <= 0 || f.RPC == nil || f.Frame < 1 || f.Frame > len(view) {
		return false
	}
	act := view[f.Frame-1]
	if act.Src != h {
		return false
	}
	for i := f.Frame - 2; i >= 0; i-- {
		e := &view[i]
		if act.Time.Sub(e.Time) >= timerRace {
			return false
		}
		if e.Dst == h && e.Err == nil && spec.KeyOf(e) == *f.RPC {
			return true
		}
	}
	return false
}
