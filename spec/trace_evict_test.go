package spec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestEvictAndGrantableMatchScans streams random traffic (many RPCs, long
// messages, grants, acks, RPC_UNKNOWN, clock gaps of seconds and steps
// back) through a Trace and checks, at every packet, that the filed
// eviction and the completion heap give what a scan of every RPC and
// message would: after each eviction pass no RPC still due remains and
// every RPC forgotten was due, and Grantable counts exactly the long
// messages not complete for longer than slack.
func TestEvictAndGrantableMatchScans(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	t.Logf("seed 17,4")
	prof, _ := LookupProfile("linux")
	p := prof.Params
	b := newTrace(t, wire.VersionCurrent)
	type live struct {
		cid  uint64
		len  uint32
		sent uint32
	}
	var rpcs []*live
	next := uint64(2)
	for len(b.events) < 60000 {
		switch x := rng.IntN(1000); {
		case x < 3:
			b.after(time.Duration(rng.IntN(30)) * time.Second) // idle gaps: RPCs come due
		case x < 6:
			b.after(-time.Duration(rng.IntN(3000)) * time.Millisecond) // the capture clock steps back
		default:
			b.after(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
		if len(rpcs) < 50 && rng.IntN(4) == 0 {
			rpcs = append(rpcs, &live{cid: next, len: uint32(1000 + rng.IntN(200000))})
			next += 2
		}
		if len(rpcs) == 0 {
			continue
		}
		i := rng.IntN(len(rpcs))
		r := rpcs[i]
		switch y := rng.IntN(100); {
		case y < 70 && r.sent < r.len:
			n := min(1424, int(r.len-r.sent))
			off := r.sent
			if rng.IntN(20) == 0 && off > 0 {
				off = uint32(rng.IntN(int(off))) // a retransmission
			}
			b.data(true, r.cid, r.len, off, n, 4, nil)
			r.sent += uint32(n)
		case y < 80:
			b.grant(false, r.cid, min(r.len, r.sent+10000), 0)
		case y < 85:
			b.ctl(rng.IntN(2) == 0, r.cid, wire.TypeRPCUnknown)
		default:
			b.data(false, r.cid, 100, 0, 100, 7, nil)
			b.ack(r.cid)
			rpcs = append(rpcs[:i], rpcs[i+1:]...)
		}
	}
	tr := NewTrace(&p)
	tr.KeepFinished()
	server := b.server
	for i := range b.events {
		e := &b.events[i]
		if e.Packet.Type() == wire.TypeGrant {
			want := 0
			for m := range tr.longIn[server] {
				if !(m.Complete && e.Time.Sub(m.CompleteTime) > p.Slack) {
					want++
				}
			}
			if got := tr.Grantable(server, e.Time); got != want {
				t.Fatalf("frame %d: Grantable %d, a scan of the long messages gives %d", e.Frame, got, want)
			}
		}
		done := len(tr.done)
		evicts := (tr.applied+1)%4096 == 0
		tr.Apply(e)
		if !evicts {
			continue
		}
		for _, r := range tr.rpcs {
			if r.evictAt().Before(tr.Now) {
				t.Fatalf("frame %d: RPC %d idle since %v is still kept at %v", e.Frame, r.Key.ClientID, r.Last, tr.Now)
			}
		}
		for _, r := range tr.done[done:] {
			if !r.evictAt().Before(tr.Now) { // (ids are never reused here)
				t.Fatalf("frame %d: RPC %d forgotten before it was due (%v, now %v)", e.Frame, r.Key.ClientID, r.evictAt(), tr.Now)
			}
		}
	}
	if len(tr.done) == 0 {
		t.Fatal("no RPC was ever forgotten: the trace does not exercise eviction")
	}
}
