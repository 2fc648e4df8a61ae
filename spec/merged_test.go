package spec

import (
	"net/netip"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/homatest/homatest/spec/wire"
)

// wantMerged checks that rep diagnoses two interleaved instances at
// frame, saying why (with want in it), and that no violation is left: each
// became inconclusive for CauseMerged.
func wantMerged(t *testing.T, rep *Report, frame int, want string) {
	t.Helper()
	if rep.Merged == nil {
		t.Fatalf("no merged-capture diagnosis; violations %v", rep.Violations)
	}
	if rep.Merged.Frame != frame || !strings.Contains(rep.Merged.Why, want) {
		t.Fatalf("merged %+v, want frame %d and %q in why", rep.Merged, frame, want)
	}
	if len(rep.Violations) != 0 || rep.Violated() {
		t.Fatalf("violations left in a merged capture: %v", rep.Violations)
	}
	n := 0
	for _, d := range rep.Downgrades {
		if d.Cause == CauseMerged {
			n += d.Count
		}
	}
	if n == 0 {
		t.Fatalf("no finding made inconclusive for %q: %+v", CauseMerged, rep.Downgrades)
	}
}

// twoCounters follows instance A's RPCs 2, 4 and 6 of the client with
// instance B's: B begins 2 and 4 (requests of reqLen bytes, cutoff_version
// 2: no byte-for-byte copy of A's) while A goes on above its newest, 6
// (8, 10), and B begins A's 6 and 8 again. It returns the frames of B's
// 2 and 4.
func (b *traceBuilder) twoCounters(reqLen uint32) (two, four int) {
	two = b.smallRPC(2, reqLen, 2)
	four = b.smallRPC(4, reqLen, 2)
	b.smallRPC(8, 100, 1)
	b.smallRPC(6, reqLen, 2)
	b.smallRPC(10, 100, 1)
	b.smallRPC(8, reqLen, 2)
	return two, four
}

// TestMergedCaptures: two captures of one host's traffic merged with
// overlapping times (mergecap without -a) interleave two module instances
// under one address, which reuse RPC ids: the checker says so once and
// makes every violation inconclusive, whichever signature shows it: the
// same id starting with two message lengths, one message sent twice as
// first transmissions with each stream sending the other's bytes, or
// several requests begun again after newer ones. Before this diagnosis
// each gave MUST violations (HOMA-WIRE-003, HOMA-RESEND-010, HOMA-ID-004)
// and no word on the cause.
func TestMergedCaptures(t *testing.T) {
	t.Run("two-lengths", func(t *testing.T) {
		// Instance B's RPC 2 starts with another length than A's; A goes
		// on above its newest id (4, 6) while B begins A's ids again (4,
		// 6): two counters at once. (A's 4 alone would be a module
		// reloaded: ids-reloaded.)
		b, at := twoLengthsTrace(t)
		rep := b.check("linux", "")
		wantMerged(t, rep, at, "starts twice with different message lengths, 100 at frame 1 and 5000")
		// The ids in words (was "(RPC 10 at frame 35, above 4)").
		if !strings.Contains(rep.Merged.Why, ", the newest id it had used before (RPC ") || !strings.Contains(rep.Merged.Why, "two id counters run at once") {
			t.Errorf("why %q does not say what showed two instances", rep.Merged.Why)
		}
	})
	t.Run("leapfrog", func(t *testing.T) {
		// Instance A sends [0, 14240) of a 30000-byte request; instance
		// B's copy of the same RPC sends [0, 21360); A goes on at 14240,
		// bytes B already sent.
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 30000, 0, 14240, 30000, 4)
		b.after(time.Millisecond)
		b.message(true, 2, 30000, 0, 21360, 30000, 4)
		b.after(time.Millisecond)
		at := b.data(true, 2, 30000, 14240, 1424, 4, nil)
		rep := b.check("linux", "")
		wantMerged(t, rep, at, "resumes at offset 14240, which the other already sent")
	})
	t.Run("ids-again", func(t *testing.T) {
		// One-packet requests: instance B's RPCs 2 and 4 begin after
		// instance A's 4 and 6.
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(2, 100, 1)
		b.smallRPC(4, 100, 1)
		b.smallRPC(6, 100, 1)
		// cutoff_version 2: not a byte-for-byte copy of A's (that is
		// "shifted-copy").
		_, at := b.twoCounters(100)
		rep := b.check("linux", "")
		wantMerged(t, rep, at, "begins the requests of RPCs 2 and 4 a second time")
	})
	t.Run("one-instance", func(t *testing.T) {
		// The two-lengths trace from a capture of one instance per host
		// (scenario run's, Judge.OneInstance): the second starts of ids 2,
		// 4 and 6 are the host's own (helper-227's outsider fault: a
		// client recycling the ids of its completed RPCs while its
		// counter goes on; a w4 incast sim run with it: 417 of 869 RPCs
		// failed and 0 violations, every finding excused as a merged
		// capture's).
		b, at := twoLengthsTrace(t)
		prof, err := LookupProfile("linux")
		if err != nil {
			t.Fatal(err)
		}
		j := Judge{Profile: "linux", Params: prof.Params, Rules: Rules(), FromStart: true}
		if rep := j.Capture(Switch, b.events); rep.Merged == nil {
			t.Fatalf("without OneInstance: no merged diagnosis; violations %v", rep.Violations)
		}
		j.OneInstance = true
		rep := j.Capture(Switch, b.events)
		if rep.Merged != nil {
			t.Fatalf("one instance per host diagnosed as merged: %+v", rep.Merged)
		}
		found := false
		for _, v := range rep.Violations {
			if v.Rule == "HOMA-WIRE-003" && v.Frame == at {
				found = true
			}
		}
		if !found {
			t.Fatalf("no HOMA-WIRE-003 violation at frame %d: %v", at, rep.Violations)
		}
	})
	t.Run("one-host-ids-wrap", func(t *testing.T) {
		// One host whose id counter wraps while it runs (helper-208's
		// outsider fault: back to 2 after 64) begins RPCs 2 and 4 again,
		// with other lengths, and never an id above its newest, 6: its
		// own fault (HOMA-ID-004: ids at or below acknowledged ones), not
		// a second instance, which would go on above 6. Before, the
		// restarts were diagnosed as a merged capture and every finding
		// made inconclusive (a w4 sim run with the fault: 0 violations,
		// 4816 of 4911 RPCs failed).
		b := newTrace(t, wire.VersionCurrent)
		b.smallRPC(2, 100, 1)
		b.smallRPC(4, 100, 1)
		b.smallRPC(6, 100, 1)
		b.after(30 * time.Millisecond)
		again := b.smallRPC(2, 300, 1)
		b.smallRPC(4, 300, 1)
		rep := b.check("linux", "")
		if rep.Merged != nil {
			t.Fatalf("one host's reused ids diagnosed as merged: %+v", rep.Merged)
		}
		found := false
		for _, v := range rep.Violations {
			if v.Rule == "HOMA-ID-004" && v.Frame == again {
				found = true
			}
		}
		if !found {
			t.Fatalf("no HOMA-ID-004 violation at frame %d: %v", again, rep.Violations)
		}
	})
	t.Run("one-sender-go-back", func(t *testing.T) {
		// One faulty sender repeats [0, 2848) with retransmit=0 and goes
		// on from where it was: a violation of its own, not two
		// instances (no byte sent by the repeat is sent again after).
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 30000, 0, 14240, 30000, 4)
		b.message(true, 2, 30000, 0, 2848, 30000, 4)
		b.message(true, 2, 30000, 14240, 30000, 30000, 4)
		rep := b.check("linux", "")
		if rep.Merged != nil {
			t.Fatalf("one sender's go-back diagnosed as merged: %+v", rep.Merged)
		}
		wantViolations(t, rep, "HOMA-RESEND-010", 11, 12)
	})
	t.Run("each-packet-twice", func(t *testing.T) {
		// One faulty sender sends every first transmission twice in a
		// row (the ref's duplicate-data knob): the copies go in lockstep,
		// HOMA-RESEND-010's fault, not two instances (on the sender's
		// link, where no network duplicate can excuse a copy).
		b := newTrace(t, wire.VersionCurrent)
		var dups []int
		for off := uint32(0); off < 30000; off += 1424 {
			n := int(min(1424, 30000-off))
			b.data(true, 2, 30000, off, n, 4, nil)
			dups = append(dups, b.data(true, 2, 30000, off, n, 4, nil))
		}
		rep := b.checkAt(HostPoint(b.client), "linux", "")
		if rep.Merged != nil {
			t.Fatalf("each packet sent twice diagnosed as merged: %+v", rep.Merged)
		}
		wantViolations(t, rep, "HOMA-RESEND-010", dups...)
	})
	t.Run("asked-again", func(t *testing.T) {
		// A message started again after its receiver's RESEND or
		// RPC_UNKNOWN (a sender restarting it without retransmit=1) is no
		// evidence of a second instance.
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 30000, 0, 14240, 30000, 4)
		b.after(time.Millisecond).ctl(false, 2, wire.TypeRPCUnknown)
		b.message(true, 2, 30000, 0, 21360, 30000, 4)
		b.data(true, 2, 30000, 14240, 1424, 4, nil)
		if rep := b.check("linux", ""); rep.Merged != nil {
			t.Fatalf("restart after RPC_UNKNOWN diagnosed as merged: %+v", rep.Merged)
		}
	})
	t.Run("shifted-copy", func(t *testing.T) {
		// A capture merged with a copy of itself shifted in time
		// (mergecap of it and its editcap -t copy), here by 1.5 ms: one
		// RPC whose request the server asked for again (an RPC_UNKNOWN,
		// so that the request's restart alone proves nothing), and the
		// whole exchange again, interleaved. The request and the
		// response each start again byte for byte exactly 1.5 ms after
		// their first start. Before, check gave HOMA-RESEND-010 MUST
		// violations (a linux-6.1 capture merged so with itself, shifted
		// by 0.2 s: 16 to 31).
		b := newTrace(t, wire.VersionCurrent)
		b.message(true, 2, 5000, 0, 5000, 5000, 4)
		b.after(time.Millisecond).ctl(false, 2, wire.TypeRPCUnknown)
		b.after(50*time.Microsecond).data(false, 2, 100, 0, 100, 7, nil)
		b.after(time.Millisecond).ack(2, 2)
		n := len(b.events)
		for i := range n {
			e := b.events[i]
			e.Time = e.Time.Add(1500 * time.Microsecond)
			b.events = append(b.events, e)
		}
		sort.SliceStable(b.events, func(i, j int) bool { return b.events[i].Time.Before(b.events[j].Time) })
		at := 0
		for i := range b.events {
			b.events[i].Frame = i + 1
			if b.events[i].Type() == wire.TypeData && !b.events[i].FromClient() {
				at = i + 1 // the second copy of the response's start
			}
		}
		rep := b.check("linux", "")
		wantMerged(t, rep, at, "exactly 1.5ms after their first start")
	})
	t.Run("two-repeats-two-delays", func(t *testing.T) {
		// One faulty sender that starts two messages again, byte for
		// byte but at different delays, is its own fault (HOMA-RESEND-010),
		// not a copy of the capture.
		b := newTrace(t, wire.VersionCurrent)
		b.data(true, 2, 100, 0, 100, 7, nil)
		b.after(time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
		b.after(time.Millisecond).data(true, 2, 100, 0, 100, 7, nil)
		b.after(3*time.Millisecond).data(true, 4, 100, 0, 100, 7, nil)
		rep := b.check("linux", "")
		if rep.Merged != nil {
			t.Fatalf("two repeats at different delays diagnosed as merged: %+v", rep.Merged)
		}
		wantViolations(t, rep, "HOMA-RESEND-010", 3, 4)
	})
}

// TestMergeTrackerEntry: the detector keeps up to two generations of
// mergedGeneration messages each, so each entry's size is what the
// checker's peak memory grows by on a long capture (BenchmarkCheckScaling):
// a msgID key of 24 bytes (not msgKey's 64) and 64 bytes of streams. Its
// host numbers must tell every address apart, cache slot collisions (the
// same last byte) included, and stay the same for an address.
func TestMergeTrackerEntry(t *testing.T) {
	if got := unsafe.Sizeof(msgID{}); got != 24 {
		t.Errorf("msgID is %d bytes, want 24", got)
	}
	if got := unsafe.Sizeof(msgStreams{}); got > 64 {
		t.Errorf("msgStreams is %d bytes, want at most 64", got)
	}
	var m mergeTracker
	seen := map[uint32]netip.Addr{}
	var addrs []netip.Addr
	for i := range 300 {
		// 300 addresses, IPv4 and IPv6, many sharing a last byte.
		a := netip.AddrFrom4([4]byte{10, 0, byte(i / 7), byte(i % 7)})
		if i%2 == 1 {
			a = netip.AddrFrom16([16]byte{0xfd, 15: byte(i % 5), 14: byte(i)})
		}
		addrs = append(addrs, a)
	}
	for round := range 2 {
		for _, a := range addrs {
			n := m.host(a)
			if b, ok := seen[n]; ok && b != a {
				t.Fatalf("round %d: %v and %v both numbered %d", round, a, b, n)
			}
			seen[n] = a
		}
	}
	if len(seen) != len(addrs) {
		t.Errorf("%d numbers for %d addresses", len(seen), len(addrs))
	}
	k1 := msgKey{rpc: RPCKey{Client: addrs[0], Server: addrs[1], ClientID: 4}, cport: 1, sport: 2, fromClient: true}
	k2 := k1
	k2.fromClient = false
	k3 := k1
	k3.rpc.Client, k3.rpc.Server = k1.rpc.Server, k1.rpc.Client
	if m.idOf(&k1) == m.idOf(&k2) || m.idOf(&k1) == m.idOf(&k3) || m.idOf(&k1) != m.idOf(&k1) {
		t.Errorf("msgIDs %v %v %v: the message's sender and the hosts' roles must tell them apart", m.idOf(&k1), m.idOf(&k2), m.idOf(&k3))
	}
	// Two IPv4 hosts go by their addresses: the roles, the sender, and
	// a numbered pair whose numbers equal the addresses stay apart.
	v4 := msgKey{rpc: RPCKey{Client: netip.AddrFrom4([4]byte{0, 0, 0, 1}), Server: netip.AddrFrom4([4]byte{0, 0, 0, 2}), ClientID: 4}, cport: 1, sport: 2, fromClient: true}
	v4b, v4c := v4, v4
	v4b.fromClient = false
	v4c.rpc.Client, v4c.rpc.Server = v4.rpc.Server, v4.rpc.Client
	ids := map[msgID]string{}
	for name, k := range map[string]msgKey{"v4": v4, "v4 from server": v4b, "v4 roles swapped": v4c, "numbered": k1, "numbered from server": k2} {
		id := m.idOf(&k)
		if o, ok := ids[id]; ok {
			t.Errorf("%s and %s have one msgID %v", name, o, id)
		}
		ids[id] = name
	}
	numbered := msgID{clientID: 4, hosts: uint64(m.host(k1.rpc.Client))<<32 | uint64(m.host(k1.rpc.Server)), ports: 1<<16 | 2 | fromClientPorts}
	if m.idOf(&k1) != numbered {
		t.Errorf("numbered msgID %v, want %v", m.idOf(&k1), numbered)
	}
}

// TestMergeGenIndex: a generation of the detector finds every message
// filed, with its streams, through its table's growth, and no other.
func TestMergeGenIndex(t *testing.T) {
	var g mergeGen
	id := func(i int) msgID {
		return msgID{clientID: uint64(2 * i), hosts: uint64(i%7)<<32 | uint64(i%3), ports: uint64(i % 5)}
	}
	for i := range 5000 {
		x := id(i)
		if _, ok := g.find(&x); ok {
			t.Fatalf("id %d found before it was filed", i)
		}
		g.add(&x, msgStreams{length: uint32(i)})
		if i%499 == 0 {
			for j := 0; j <= i; j++ {
				y := id(j)
				if got, ok := g.find(&y); !ok || got != int32(j) || g.s[got].length != uint32(j) {
					t.Fatalf("after %d ids: id %d gives %d, %v", i+1, j, got, ok)
				}
			}
		}
	}
	if len(g.slots) < 2*len(g.s) {
		t.Errorf("%d ids in %d slots, want at most half full", len(g.s), len(g.slots))
	}
}

// TestMergeGenerations: the detector knows a message of the current and
// of the previous generation (an entry of the previous one copied with its
// streams), none of a generation dropped, though the next generation
// reuses the dropped one's arrays, and fills them without allocating.
func TestMergeGenerations(t *testing.T) {
	var m mergeTracker
	key := func(i int) msgKey {
		return msgKey{rpc: RPCKey{Client: netip.AddrFrom4([4]byte{10, 0, 0, 1}), Server: netip.AddrFrom4([4]byte{10, 0, 0, 2}), ClientID: uint64(2 * i)}, cport: 1, sport: 2, fromClient: true}
	}
	const g = mergedGeneration
	for i := range 3 * g {
		k := key(i)
		s, ok := m.entry(&k)
		if ok {
			t.Fatalf("message %d known before it came", i)
		}
		s.length = uint32(i + 1)
	}
	// Generations: [0, g) dropped, [g, 2g) old, [2g, 3g) current, full.
	if len(m.cur.s) != g || len(m.old.s) != g {
		t.Fatalf("generations of %d and %d messages, want %d each", len(m.cur.s), len(m.old.s), g)
	}
	known := func(i int, want bool) {
		t.Helper()
		k := key(i)
		s, ok := m.entry(&k)
		if l := uint32(i + 1); ok != want || want && s.length != l || !want && s.length != 0 {
			t.Errorf("message %d: known %v, length %d, want %v", i, ok, s.length, want)
		}
	}
	known(2*g, true)
	known(3*g-1, true)
	dropped := &m.old.s[0]
	known(g, true) // copied into a new generation, in the old one's arrays
	if &m.cur.s[0] != dropped || len(m.cur.s) != 1 || len(m.old.s) != g {
		t.Fatalf("the new generation (%d messages, old %d) does not reuse the dropped one's arrays", len(m.cur.s), len(m.old.s))
	}
	known(g+1, false) // its generation was dropped
	known(0, false)
	known(3*g-2, true)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 3 * g; len(m.cur.s) < g; i++ {
		k := key(i)
		m.entry(&k)
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 10 {
		t.Errorf("filling a reused generation allocated %d times, want none", n)
	}
}

// TestMergedOrRestarted tells a capture across one instance's restart
// from two instances' captures merged. A host whose module was reloaded
// (its id counter back at 2; here too soon for a new section) begins its
// old ids again and grows past them: the first instance's RPCs stopped,
// so no request above the old newest id comes while old ids are begun
// again, and the capture is judged (HOMA-ID-004 charges the reused ids
// where the capture does not show the reload for one). Before, the
// checker took any request above the old newest id after a restart for
// the first instance going on: ids 2..20 then 2..40 were called merged
// and every finding made inconclusive (0 violations). Two instances at
// once show both counters running: requests above the old newest
// between ids begun again. Each host's restart is followed on its own:
// before, only the first suspicion was kept, so one host's reused ids
// hid another host's merge; and timestamps that step back after a
// suspicion confirm it.
func TestMergedOrRestarted(t *testing.T) {
	t.Run("reloaded", func(t *testing.T) {
		b := newTrace(t, wire.VersionCurrent)
		for id := uint64(2); id <= 20; id += 2 {
			b.smallRPC(id, 100, 1)
		}
		b.after(30 * time.Millisecond)
		var again []int
		for id := uint64(2); id <= 40; id += 2 {
			f := b.smallRPC(id, 300, 1)
			if id <= 20 {
				again = append(again, f)
			}
		}
		rep := b.check("linux", "")
		if rep.Merged != nil {
			t.Fatalf("one host's restart diagnosed as merged: %+v", rep.Merged)
		}
		var reused []int
		for _, v := range rep.Violations {
			if v.Rule == "HOMA-ID-004" {
				reused = append(reused, v.Frame)
			}
		}
		if len(reused) == 0 || reused[0] != again[0] {
			t.Fatalf("HOMA-ID-004 violations at frames %v, want them from the first id begun again, frame %d (ids begun again at %v)", reused, again[0], again)
		}
	})
	t.Run("overlapping", func(t *testing.T) {
		// Instance A (ids 2..20) goes on with 22, 24, ... while instance
		// B, whose capture began later, begins 2, 4, ...: mergecap
		// interleaves them by time.
		b := newTrace(t, wire.VersionCurrent)
		for id := uint64(2); id <= 20; id += 2 {
			b.smallRPC(id, 100, 1)
		}
		var at int
		for i := uint64(0); i < 4; i++ {
			f := b.smallRPC(2+2*i, 300, 2) // B
			if i == 0 {
				at = f
			}
			b.smallRPC(22+2*i, 100, 1) // A
		}
		wantMerged(t, b.check("linux", ""), at, "two id counters run at once")
	})
	t.Run("two-hosts", func(t *testing.T) {
		// Host 198.18.0.1 reuses ids 2 and 4 and never goes above its
		// newest (its own fault); later host 198.18.0.3's capture shows
		// two instances at once.
		b := newTrace(t, wire.VersionCurrent)
		for id := uint64(2); id <= 6; id += 2 {
			b.smallRPC(id, 100, 1)
		}
		b.after(30 * time.Millisecond)
		b.smallRPC(2, 300, 1)
		b.smallRPC(4, 300, 1)
		b.client = netip.MustParseAddr("198.18.0.3")
		for id := uint64(2); id <= 6; id += 2 {
			b.smallRPC(id, 100, 1)
		}
		at, _ := b.twoCounters(300)
		rep := b.check("linux", "")
		wantMerged(t, rep, at, "198.18.0.3's request) starts twice with different message lengths")
	})
	t.Run("stepped-back", func(t *testing.T) {
		// Ids begun again, then a timestamp 20 ms before the previous
		// one (captures joined end to end, within TimeJump).
		b := newTrace(t, wire.VersionCurrent)
		for id := uint64(2); id <= 6; id += 2 {
			b.smallRPC(id, 100, 1)
		}
		at := b.smallRPC(2, 300, 2)
		b.smallRPC(4, 300, 2)
		b.now = b.events[len(b.events)-1].Time.Add(-20 * time.Millisecond)
		b.data(false, 4, 100, 0, 100, 7, nil)
		wantMerged(t, b.check("linux", ""), at, "starts twice with different message lengths, 100 at frame 1 and 300")
	})
}

// twoLengthsTrace builds TestMergedCaptures' two-lengths trace: RPC 2
// started with a 100-byte request and again with a 5000-byte one (at is
// the second start's first frame), then ids 4 and 6 each started twice,
// once by each counter.
func twoLengthsTrace(t *testing.T) (*traceBuilder, int) {
	b := newTrace(t, wire.VersionCurrent)
	b.smallRPC(2, 100, 1)
	b.after(time.Millisecond)
	at := b.data(true, 2, 5000, 0, 1424, 7, nil)
	b.message(true, 2, 5000, 1424, 5000, 5000, 7)
	b.smallRPC(4, 100, 1) // the first instance goes on
	b.smallRPC(4, 300, 2) // the second begins id 4 again
	b.smallRPC(6, 100, 1)
	b.smallRPC(6, 300, 2)
	return b, at
}
