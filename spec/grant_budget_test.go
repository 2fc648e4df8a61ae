package spec

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestGrant010UnschedBytesHoldBudget: a receiver counts the unscheduled
// bytes still on their way of every message longer than unsched_bytes
// against max_incoming before it grants any of them (HomaModule
// homa_grant_init_rpc starts granted at U, homa_grant_update_incoming adds
// granted - received to total_incoming), so with 200000-byte requests
// whose first packet alone arrived holding more than max_incoming, a
// message waiting for its first GRANT is inconclusive, not a violation
// (the simulated overload run: receive queues hold the rest of many
// requests); with fewer of them it is a violation still.
func TestGrant010UnschedBytesHoldBudget(t *testing.T) {
	for _, c := range []struct {
		heads []uint64
		held  bool
	}{
		{[]uint64{4, 6, 8}, true}, // 3 x 38576 = 115728 bytes outstanding
		{[]uint64{4, 6}, false},   // 77152
	} {
		t.Run(fmt.Sprint(len(c.heads)), func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			for _, cid := range c.heads {
				b.message(true, cid, 200000, 0, 1424, 40000, 4)
			}
			waits := b.message(true, 2, 300000, 0, 40000, 40000, 4)
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_incoming=100000")
			last := waits[len(waits)-1]
			if !c.held {
				wantViolations(t, rep, "HOMA-GRANT-010", last)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010")
			wantInconclusive(t, rep, "HOMA-GRANT-010", last)
			if f := rep.Inconclusive[0]; f.Why != "198.18.0.2 has 115728 bytes authorised and not received (max_incoming 100000)" {
				t.Errorf("why %q", f.Why)
			}
		})
	}
}

// TestGrant010FIFOGrantFillsBudget: a FIFO grant of fifo_grant_increment
// is not held to max_incoming (HomaModule homa_grant_check_fifo), and the
// bytes it authorises count toward total_incoming, so a message waiting
// for its first GRANT after it is inconclusive at that GRANT, not a
// violation. The rules see a GRANT before the trace applies it, so the
// wait is judged with the bytes that GRANT adds. Without the FIFO grant
// the wait is a violation.
func TestGrant010FIFOGrantFillsBudget(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			b.message(true, 2, 300000, 0, 40000, 40000, 4)
			waits := b.message(true, 4, 300000, 0, 40000, 40000, 4)
			b.after(10*time.Microsecond).grant(false, 2, 42848, 0)
			if fifo {
				b.after(time.Microsecond).grant(false, 2, 92848, 7)
			}
			b.after(30*time.Millisecond).data(true, 20, 100, 0, 100, 7, nil)
			rep := b.check("linux", "HOMA-GRANT-010", "max_incoming=20000", "max_rpcs_per_peer=0")
			last := waits[len(waits)-1]
			if !fifo {
				wantViolations(t, rep, "HOMA-GRANT-010", last)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-010")
			wantInconclusive(t, rep, "HOMA-GRANT-010", last)
			if f := rep.Inconclusive[0]; f.Why != "198.18.0.2 has 52848 bytes authorised and not received (max_incoming 20000) (frame 60)" {
				t.Errorf("why %q", f.Why)
			}
		})
	}
}

// TestGrant013OtherHostGrantReordered: GRANTs from one receiver to two
// hosts, captured away from the receiver, may arrive in another order than
// they left: the second GRANT seen takes the sum over max_incoming only
// with the first, seen less than slack earlier and sent to another host,
// so it is inconclusive (cause reordering); on the receiver's own link,
// or with the first more than slack earlier, or to the same host, it is a
// violation.
func TestGrant013OtherHostGrantReordered(t *testing.T) {
	for _, c := range []struct {
		name      string
		gap       time.Duration
		otherHost bool
		cp        CapturePoint
		reordered bool
	}{
		{"switch", 5 * time.Microsecond, true, Switch, true},
		{"at-receiver", 5 * time.Microsecond, true, HostPoint(netip.MustParseAddr("198.18.0.2")), false},
		{"long-gap", 50 * time.Millisecond, true, Switch, false},
		{"same-host", 5 * time.Microsecond, false, Switch, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newTrace(t, wire.VersionCurrent)
			other := netip.MustParseAddr("198.18.0.9")
			first := b.client
			b.message(true, 2, 300000, 0, 40000, 40000, 4)
			if c.otherHost {
				b.client = other
			}
			b.message(true, 4, 300000, 0, 40000, 40000, 4)
			b.client = first
			b.after(10*time.Microsecond).grant(false, 2, 52000, 0)
			if c.otherHost {
				b.client = other
			}
			g := b.after(c.gap).grant(false, 4, 52000, 1)
			b.client = first
			rep := b.checkAt(c.cp, "linux", "HOMA-GRANT-013", "max_incoming=20000")
			if !c.reordered {
				wantViolations(t, rep, "HOMA-GRANT-013", g)
				return
			}
			wantViolations(t, rep, "HOMA-GRANT-013")
			wantInconclusive(t, rep, "HOMA-GRANT-013", g)
		})
	}
}
