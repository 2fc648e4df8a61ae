package spec

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TestFirstTxLossLLR checks the statistic on counts worked out by hand.
func TestFirstTxLossLLR(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, f, b, r int
		want       float64
	}{
		// k lost of k, 0 of k: p̄ = 1/2, each side k·ln 2.
		{"all first lost, no retx lost, k=10", 10, 10, 0, 10, 20 * math.Ln2},
		{"all first lost, no retx lost, k=1", 1, 1, 0, 1, 2 * math.Ln2},
		// 2 of 4 and 0 of 4: p̄ = 1/4; 4·KL(1/2‖1/4) = 2·ln(4/3),
		// 4·KL(0‖1/4) = 4·ln(4/3).
		{"half of first lost", 2, 4, 0, 4, 6 * math.Log(4.0/3)},
		// 3 of 3 and 0 of 6: p̄ = 1/3; 3·ln 3 + 6·ln(3/2).
		{"more retransmissions", 3, 3, 0, 6, 3*math.Log(3) + 6*math.Log(1.5)},
		// Equal fractions, or retransmissions lost more often: 0.
		{"equal rates", 1, 10, 1, 10, 0},
		{"retx worse", 1, 10, 3, 10, 0},
		{"nothing lost", 0, 10, 0, 10, 0},
		{"no retransmissions", 5, 10, 0, 0, 0},
		{"no first transmissions", 0, 0, 0, 5, 0},
	} {
		if got := firstTxLossLLR(c.a, c.f, c.b, c.r); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: firstTxLossLLR(%d, %d, %d, %d) = %.15g, want %.15g", c.name, c.a, c.f, c.b, c.r, got, c.want)
		}
	}
}

// TestFirstTxLossLLRBoundsTails checks the claim the threshold rests on:
// for every common loss rate p, P(≥ a of f lost) · P(≤ b of r lost) is at
// most exp(-LLR).
func TestFirstTxLossLLRBoundsTails(t *testing.T) {
	binom := func(n, k int, p float64) float64 { // P(X = k), X ~ Bin(n, p)
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
		return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	for _, c := range [][4]int{{2, 4, 0, 4}, {10, 10, 0, 10}, {20, 40, 1, 20}, {5, 100, 0, 5}, {30, 60, 3, 33}} {
		a, f, b, r := c[0], c[1], c[2], c[3]
		bound := math.Exp(-firstTxLossLLR(a, f, b, r))
		for i := 1; i < 1000; i++ {
			p := float64(i) / 1000
			var up, low float64
			for k := a; k <= f; k++ {
				up += binom(f, k, p)
			}
			for k := 0; k <= b; k++ {
				low += binom(r, k, p)
			}
			if up*low > bound*(1+1e-9) {
				t.Fatalf("%v at p=%v: tails %g above exp(-LLR) %g", c, p, up*low, bound)
			}
		}
	}
}

// TestFirstLossThreshold: ln(1e9) + ln(n(n+1)).
func TestFirstLossThreshold(t *testing.T) {
	for n, want := range map[int]float64{1: 9*math.Ln10 + math.Ln2, 2: 9*math.Ln10 + math.Log(6), 10: 9*math.Ln10 + math.Log(110)} {
		if got := firstLossThreshold(n); math.Abs(got-want) > 1e-12 {
			t.Errorf("firstLossThreshold(%d) = %v, want %v", n, got, want)
		}
	}
}

// br35Trace builds rpcs RPCs of a 100-byte request and a 30000-byte
// response (22 segments), one after the other. lost(i, off) says whether
// the first transmission of the segment at off of RPC i's response is
// lost before the capture (the client RESENDs 5 ms later and the server
// retransmits what is missing); concurrent makes every request go before
// any response; sent keeps the lost first transmissions in the trace (a
// capture at the server, the loss after it). It returns, per RPC, the
// frame of its first retransmission (0: none).
func br35Trace(t *testing.T, rpcs int, concurrent, sent bool, lost func(i int, off uint32) bool) (*traceBuilder, []int) {
	b := newTrace(t, wire.VersionCurrent)
	const L = 30000
	first := make([]int, rpcs)
	cid := func(i int) uint64 { return uint64(10 + 2*i) }
	respond := func(i int) {
		var missing []uint32
		b.after(20 * time.Microsecond)
		for off := uint32(0); off < L; off += 1424 {
			b.after(time.Microsecond)
			if lost(i, off) {
				missing = append(missing, off)
				if !sent {
					continue
				}
			}
			b.data(false, cid(i), L, off, int(min(1424, L-off)), 4, func(f *wire.DataFields) { f.Incoming = L })
		}
		if len(missing) == 0 {
			return
		}
		b.after(5 * time.Millisecond)
		if len(missing) == (L+1423)/1424 {
			b.resend(true, cid(i), 0, wire.ResendAll, 7)
		} else {
			for _, off := range missing {
				b.resend(true, cid(i), off, min(1424, L-off), 7)
			}
		}
		b.after(20 * time.Microsecond)
		for _, off := range missing {
			b.after(time.Microsecond)
			f := b.data(false, cid(i), L, off, int(min(1424, L-off)), 7, func(f *wire.DataFields) {
				f.Incoming, f.Retransmit, f.SegOffset = L, 1, off
			})
			if first[i] == 0 {
				first[i] = f
			}
		}
	}
	for i := 0; i < rpcs; i++ {
		b.after(100 * time.Microsecond)
		b.data(true, cid(i), 100, 0, 100, 7, nil)
		if !concurrent {
			respond(i)
			b.after(2500 * time.Microsecond)
			b.ctl(false, cid(i), wire.TypeNeedAck)
			b.after(20 * time.Microsecond)
			b.ack(cid(i), cid(i))
		}
	}
	if concurrent {
		for i := 0; i < rpcs; i++ {
			respond(i)
		}
	}
	return b, first
}

func TestFirstLossBR35(t *testing.T) {
	allLost := func(int, uint32) bool { return true }
	b, first := br35Trace(t, 5, false, false, allLost)
	// Third episode: 45 first transmissions lost, none seen; 45
	// retransmissions seen, none lost: LLR 90·ln 2 ≈ 62.4 ≥ 21.4.
	rep := b.check("linux", "HOMA-SEND-003")
	wantViolations(t, rep, "HOMA-SEND-003", first[2])
	if v := rep.Violations[0]; len(v.Frames) != 2 || v.Frames[0] != first[0] || v.Frames[1] != first[1] {
		t.Errorf("frames %v, want the first two episodes' %v", v.Frames, first[:2])
	}
	// Judged at the receiver's link: the same finding.
	rep = b.checkAt(HostPoint(b.client), "linux", "HOMA-SEND-003")
	wantViolations(t, rep, "HOMA-SEND-003", first[2])

	// Two episodes are not enough, however many segments they lost.
	b, _ = br35Trace(t, 2, false, false, allLost)
	wantViolations(t, b.check("linux", "HOMA-SEND-003"), "HOMA-SEND-003")
}

// At the server, the GSO frames are seen leaving and the client's RESENDs
// ask for them: first transmissions lost after the capture point. The
// retransmissions arrived once the client acks the RPC; the third
// episode's ack (RPC 2's) is followed by the server's first packet of RPC
// 3, where the finding is.
func TestFirstLossBR35SenderSide(t *testing.T) {
	b, _ := br35Trace(t, 5, false, true, func(int, uint32) bool { return true })
	var want int
	for i, e := range b.events { // the server's first packet after RPC 14's ACK
		if e.Type() == wire.TypeAck && e.Packet.SenderID() == 14 {
			for _, x := range b.events[i+1:] {
				if x.Src == b.server {
					want = x.Frame
					break
				}
			}
		}
	}
	rep := b.checkAt(HostPoint(b.server), "linux", "HOMA-SEND-003")
	wantViolations(t, rep, "HOMA-SEND-003", want)
	fl := tallyOf(b, HostPoint(b.server))
	// The last RPC's ack ends the capture: no packet after it settles
	// its retransmissions.
	if fl.FirstSeen != 110 || fl.FirstLost != 110 || fl.RetxSeen != 88 || fl.RetxLost != 0 || fl.Episodes != 4 {
		t.Errorf("tally %+v, want 110 of 110 first transmissions lost, 88 retransmissions arrived, 4 episodes", fl)
	}
	// Between the hosts the same packets show loss after the tap, which
	// the tally does not count there (the capture saw the bytes).
	wantClean(t, b.check("linux", "HOMA-SEND-003"), "HOMA-SEND-003")
}

// One outage that eats every response of concurrent RPCs is one episode.
func TestFirstLossOneOutage(t *testing.T) {
	b, _ := br35Trace(t, 6, true, false, func(int, uint32) bool { return true })
	rep := b.check("linux", "HOMA-SEND-003")
	wantClean(t, rep, "HOMA-SEND-003")
	if got := tallyOf(b, Switch); got.FirstSeen != 0 || got.FirstLost != 132 || got.RetxSeen != 132 || got.RetxLost != 0 || got.Episodes != 1 ||
		math.Abs(got.LLR-264*math.Ln2) > 1e-9 || got.Frame != 0 {
		t.Errorf("tally %+v, want 132 first transmissions lost, 132 retransmissions seen, 1 episode, LLR 264·ln 2, no crossing", got)
	}
}

// Loss that does not look at how a packet was sent: every fourth segment
// of every response is lost, and the first retransmission of RPC i's
// first lost segment is lost too for every other RPC (the client asks
// again). Many episodes, but first transmissions lose 25% and
// retransmissions about 9%: far from the threshold.
func TestFirstLossRandomLoss(t *testing.T) {
	b := randomLossTrace(t, false)
	rep := b.check("linux", "HOMA-SEND-003")
	wantClean(t, rep, "HOMA-SEND-003")
	// 22 segments per response, 5 or 6 lost (offsets ≡ -i mod 4), 20
	// episodes; 10 retransmissions lost.
	got := tallyOf(b, Switch)
	if got.FirstSeen+got.FirstLost != 440 || got.FirstLost != 110 || got.RetxLost != 10 || got.Episodes != 20 || got.Frame != 0 {
		t.Errorf("tally %+v, want 110 of 440 first transmissions lost, 10 retransmissions lost, 20 episodes, no crossing", got)
	}
	// The same loss seen at the server: the first transmissions leave,
	// the client's RESENDs ask for them.
	b = randomLossTrace(t, true)
	wantClean(t, b.checkAt(HostPoint(b.server), "linux", "HOMA-SEND-003"), "HOMA-SEND-003")
	got = tallyOf(b, HostPoint(b.server))
	if got.FirstSeen != 440 || got.FirstLost != 110 || got.RetxLost != 10 || got.RetxSeen != 104 || got.Episodes != 19 || got.Frame != 0 {
		t.Errorf("tally %+v, want 110 of 440 first transmissions lost, 10 retransmissions lost, 104 arrived (the last RPC unsettled), 19 episodes, no crossing", got)
	}
}

// randomLossTrace is TestFirstLossRandomLoss's traffic; sent keeps the
// lost first transmissions (a capture at the server).
func randomLossTrace(t *testing.T, sent bool) *traceBuilder {
	b := newTrace(t, wire.VersionCurrent)
	const L = 30000
	for i := 0; i < 20; i++ {
		c := uint64(10 + 2*i)
		b.after(100 * time.Microsecond)
		b.data(true, c, 100, 0, 100, 7, nil)
		b.after(20 * time.Microsecond)
		var missing []uint32
		for off := uint32(0); off < L; off += 1424 {
			b.after(time.Microsecond)
			if (off/1424+uint32(i))%4 == 0 {
				missing = append(missing, off)
				if !sent {
					continue
				}
			}
			b.data(false, c, L, off, int(min(1424, L-off)), 4, func(f *wire.DataFields) { f.Incoming = L })
		}
		b.after(5 * time.Millisecond)
		for _, off := range missing {
			b.resend(true, c, off, min(1424, L-off), 7)
		}
		for k, off := range missing {
			if k == 0 && i%2 == 0 && !sent {
				continue // this retransmission is lost
			}
			b.data(false, c, L, off, int(min(1424, L-off)), 7, func(f *wire.DataFields) { f.Incoming, f.Retransmit, f.SegOffset = L, 1, off })
		}
		if i%2 == 0 {
			b.after(5 * time.Millisecond)
			b.resend(true, c, missing[0], 1424, 7)
			b.data(false, c, L, missing[0], 1424, 7, func(f *wire.DataFields) { f.Incoming, f.Retransmit, f.SegOffset = L, 1, missing[0] })
		}
		b.after(2500 * time.Microsecond)
		b.ctl(false, c, wire.TypeNeedAck)
		b.ack(c, c)
	}
	return b
}

// tallyOf feeds b's trace to a checker with capture point cp and returns
// the tally of the path server → client.
func tallyOf(b *traceBuilder, cp CapturePoint) FirstLoss {
	prof, _ := LookupProfile("linux")
	c := NewChecker("linux", prof.Params, nil)
	c.SetCapturePoint(cp)
	for i := range b.events {
		c.Feed(&b.events[i])
	}
	c.Finish()
	return c.net.FirstLoss(b.server, b.client)
}

// Bursty loss favours first transmissions, sent back to back, over the
// retransmissions that follow one by one: here the first half of every
// response is lost and every retransmission arrives, over 10 episodes.
// The statistic alone would flag it (110 of 220 against 0 of 110); a path
// that lost only half its first transmissions is not a device dropping
// every GSO frame (firstLossMajority), so the rule stays quiet.
func TestFirstLossBurstsFavourFirst(t *testing.T) {
	half := func(_ int, off uint32) bool { return off < 15000 }
	b, _ := br35Trace(t, 10, false, false, half)
	wantClean(t, b.check("linux", "HOMA-SEND-003"), "HOMA-SEND-003")
	got := tallyOf(b, Switch)
	if got.FirstLost*2 != got.FirstSeen+got.FirstLost || got.RetxLost != 0 || got.Episodes < firstLossEpisodes ||
		firstTxLossLLR(got.FirstLost, got.FirstSeen+got.FirstLost, got.RetxLost, got.RetxSeen+got.RetxLost) < firstLossThreshold(1) {
		t.Errorf("tally %+v: want half the first transmissions lost, no retransmission, ≥ %d episodes and an LLR above the threshold", got, firstLossEpisodes)
	}
}

// TestFirstLossSettleOrder: at the server, one ACK acks five RPCs whose
// responses lost their first transmissions: they settle at one event, as
// one episode (each began before the ACK showed the previous recovered).
// The episode is the one whose loss showed first, whatever the order of
// the path's map of pending messages (it varied run to run).
func TestFirstLossSettleOrder(t *testing.T) {
	b, _ := br35Trace(t, 5, true, true, func(int, uint32) bool { return true })
	b.after(20 * time.Microsecond)
	b.ack(10, 10, 12, 14, 16, 18)
	b.after(20 * time.Microsecond)
	b.ctl(false, 10, wire.TypeBusy)
	prof, _ := LookupProfile("linux")
	var want []int
	for i := range 20 {
		c := NewChecker("linux", prof.Params, nil)
		c.SetCapturePoint(HostPoint(b.server))
		for j := range b.events {
			c.Feed(&b.events[j])
		}
		pl := c.net.firstLoss[hostPair{b.server, b.client}]
		if pl == nil || pl.episodes != 1 {
			t.Fatalf("tally %+v, want 1 episode", pl)
		}
		if i == 0 {
			want = pl.episodeFrames
			continue
		}
		if !slices.Equal(pl.episodeFrames, want) {
			t.Fatalf("check %d: episode frames %v, check 1 %v", i+1, pl.episodeFrames, want)
		}
	}
	// The client's first RESEND showed the first loss.
	first := 0
	for _, e := range b.events {
		if e.Src == b.client && e.Type() == wire.TypeResend {
			first = e.Frame
			break
		}
	}
	if len(want) != 1 || want[0] != first {
		t.Errorf("episode frames %v, want [%d] (the first RESEND)", want, first)
	}
}
