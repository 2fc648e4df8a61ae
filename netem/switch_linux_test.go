package netem

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/pcap"
)

// blast sends n test frames of size bytes at about offered bit/s in 1 ms
// bursts (time.Sleep paces the bursts; it is not used to synchronise), or
// as fast as it can when offered is 0.
func blast(t testing.TB, s packetSock, src, dst [6]byte, prio uint8, n, size int, offered BitRate, firstSeq uint32) {
	perMs := max(1, int(math.Ceil(float64(offered)/float64(size*8)/1000)))
	if offered == 0 {
		perMs = n
	}
	start := time.Now()
	for i := 0; i < n; {
		for k := 0; k < perMs && i < n; k++ {
			b := testFrame(src, dst, prio, firstSeq+uint32(i), size)
			stamp(b)
			send(t, s, b)
			i++
		}
		// Stay on schedule even when Sleep oversleeps.
		ahead := time.Duration(i/perMs)*time.Millisecond - time.Since(start)
		if ahead > 0 {
			time.Sleep(ahead)
		}
	}
}

// measuredRate is the receive rate in bit/s from kernel receive stamps.
// A frame can leave the switch late (its thread descheduled on this VM) but
// never early, so the rate is the slope of the lower envelope: in each of
// 10 segments the least-late frame (smallest rx - bits/nominal) is taken,
// and a least-squares line through those points gives bits per second.
func measuredRate(fs []rxFrame, nominal BitRate) float64 {
	cum := make([]float64, len(fs))
	for i := 1; i < len(fs); i++ {
		cum[i] = cum[i-1] + float64(fs[i].size*8)
	}
	const segs = 10
	var sx, sy, sxx, sxy float64
	for s := range segs {
		lo, hi := s*len(fs)/segs, (s+1)*len(fs)/segs
		best, bx := math.Inf(1), 0
		for i := lo; i < hi; i++ {
			if late := float64(fs[i].rx-fs[0].rx)/1e9 - cum[i]/float64(nominal); late < best {
				best, bx = late, i
			}
		}
		x, y := float64(fs[bx].rx-fs[0].rx)/1e9, cum[bx]
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (segs*sxy - sx*sy) / (segs*sxx - sx*sx)
}

// lateness returns how late each frame left compared with the line of
// measuredRate (p50 and p99), for the log.
func lateness(fs []rxFrame, rate float64) (time.Duration, time.Duration) {
	var cum float64
	var l []time.Duration
	for i, f := range fs {
		if i > 0 {
			cum += float64(f.size * 8)
		}
		l = append(l, time.Duration(f.rx-fs[0].rx)-time.Duration(cum/rate*1e9))
	}
	m := quantile(l, 0)
	return quantile(l, 0.5) - m, quantile(l, 0.99) - m
}

func TestSwitchRate(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	// Jumbo frames for the 1 Gbit/s case (MTU 9000 on every veth end).
	setMTU(t, tp, 9000)
	gbit := os.Getenv("HOMATEST_NETEM_GBIT") == "1"
	for _, tc := range []struct {
		rate    BitRate
		n, size int
		strict  bool // assert the rate even when the switch fell behind
	}{
		{10 * Mbit, 400, 1514, true},
		{100 * Mbit, 3000, 1514, true},
		// At 1 Gbit/s the switch may be the bottleneck: 82 500 frames/s of
		// 1514 bytes (or 13 900 of 9014 bytes) on 2 vCPUs shared with the
		// sender, the receiver and other work. Then frames leave late
		// (send lag p50 over a frame time) and the receiver measures the
		// switch's throughput (BenchmarkSwitch's subject), not the rate
		// clock: measured -42%, -15%, +0.3% at load average 15 and -0.02%
		// quiet with 1514-byte frames. The rate is asserted whenever the
		// switch kept its schedule in an attempt, and always with
		// HOMATEST_NETEM_GBIT=1.
		{Gbit, 5000, 9014, gbit},
		{Gbit, 20000, 1514, gbit},
	} {
		t.Run(fmt.Sprintf("%v/%dB", tc.rate, tc.size), func(t *testing.T) {
			// The sender shares 2 vCPUs with the switch, the receiver and
			// other work; when it is descheduled the port can run dry. Only
			// the longest stretch in which the port stayed busy is measured,
			// and the run is repeated (up to 3 times) until that stretch
			// holds at least half the frames.
			for attempt := 1; ; attempt++ {
				got, st := rateRun(t, tp, a, b, tc.rate, tc.n, tc.size)
				run := busyRun(got, tc.rate.TxTime(tc.size))
				var r, errPct float64
				var l50, l99 time.Duration
				if len(run) >= 10 {
					r = measuredRate(run, tc.rate)
					errPct = 100 * (r - float64(tc.rate)) / float64(tc.rate)
					l50, l99 = lateness(run, r)
				}
				frameTime := tc.rate.TxTime(tc.size)
				t.Logf("attempt %d, rate %v, %d-byte frames: %d frames received, %d measured in one busy period, measured %.3f Mbit/s (error %+.2f%%), departure lateness p50 %v p99 %v, switch send lag p50 %v p99 %v (frame time %v), switch drops %+v, max queue %d B",
					attempt, tc.rate, tc.size, len(got), len(run), r/1e6, errPct, l50, l99, st.SendLagP50, st.SendLagP99, frameTime, st.Drops, st.Ports[1].MaxQueueBytes)
				// A run is disturbed when the port ran dry (the sender was
				// descheduled), the switch thread itself was starved for
				// the CPU (median lateness over 1 ms) or it could not send
				// as fast as its schedule (send lag p50 over a frame time,
				// lagHist's buckets overestimate up to 2x): measure again.
				behind := st.SendLagP50 > 2*frameTime
				disturbed := len(run) < tc.n/2 || l50 > scaled(time.Millisecond) || behind
				failed := len(run) < tc.n/2 || math.Abs(errPct) > 2*timeScale()
				if disturbed && failed && attempt < 3 {
					continue
				}
				if failed && behind && tc.rate >= Gbit && !tc.strict {
					// The switch's own lag explains the shortfall: it
					// measured throughput, not the rate clock.
					t.Logf("the switch was behind its schedule in every attempt (send lag p50 %v > 2 frame times): throughput-limited on this machine now, the rate clock was not measurable (HOMATEST_NETEM_GBIT=1 makes this an error)", st.SendLagP50)
					return
				}
				if failed && disturbed {
					// Every attempt measured a stall (the port ran dry,
					// the switch was late or behind): the rate clock was
					// not observable on this machine now. Its arithmetic
					// is asserted in virtual time (TestRateAndDelayTiming,
					// TestRateClock); here the stall is reported, not
					// charged.
					t.Logf("timing inconclusive: all 3 attempts stalled (busy run %d of %d frames, lateness p50 %v, send lag p50 %v)", len(run), tc.n, l50, st.SendLagP50)
					return
				}
				if math.Abs(errPct) > 2*timeScale() {
					t.Errorf("measured %.3f Mbit/s at %v: error %+.2f%%, want within ±%.1f%% (switch send lag p50 %v)", r/1e6, tc.rate, errPct, 2*timeScale(), st.SendLagP50)
				}
				return
			}
		})
	}
}

// rateRun sends n frames of size bytes unpaced from a to b through a
// switch whose port to b runs at rate with a 64 MiB buffer.
func rateRun(t *testing.T, tp *testTopo, a, b packetSock, rate BitRate, n, size int) ([]rxFrame, Stats) {
	sw := tp.startSwitch(t, LinkConfig{Rate: rate, BufferBytes: 64 << 20}, 1, nil, nil)
	done := make(chan []rxFrame)
	go func() { done <- receive(b, n, scaled(500*time.Millisecond), false) }()
	blast(t, a, tp.macAHW, tp.macBHW, 0, n, size, 0, 0)
	got := <-done
	sw.Close()
	return got, sw.Stats()
}

// busyRun returns the longest run of frames during which the port was
// never idle: each frame was sent (sender clock) at least one frame time
// before the previous one left, so it was already queued.
func busyRun(fs []rxFrame, frameTime time.Duration) []rxFrame {
	best, start := []rxFrame(nil), 0
	for k := 1; k <= len(fs); k++ {
		if k == len(fs) || fs[k].tx+int64(frameTime) > fs[k-1].rx || fs[k].seq != fs[k-1].seq+1 {
			if k-start > len(best) {
				best = fs[start:k]
			}
			start = k
		}
	}
	return best
}

func TestSwitchDelay(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	probe := func(delay time.Duration) ([]time.Duration, Stats) {
		sw := tp.startSwitch(t, LinkConfig{Delay: delay}, 1, nil, nil)
		defer sw.Close()
		const n = 300
		done := make(chan []rxFrame)
		go func() { done <- receive(b, n, scaled(time.Second), false) }()
		tp.sendProbes(t, a, n, 100, 0, 0)
		var d []time.Duration
		for _, f := range <-done {
			d = append(d, f.oneWay())
		}
		if len(d) < n*9/10 {
			t.Fatalf("received %d of %d probes", len(d), n)
		}
		return d, sw.Stats()
	}
	starvedRetry(t, func(try int, last bool) bool {
		base, _ := probe(0)
		d, st := probe(time.Millisecond)
		bmed, b99 := quantile(base, 0.5), quantile(base, 0.99)
		med, p99, lo := quantile(d, 0.5), quantile(d, 0.99), quantile(d, 0)
		t.Logf("attempt %d: emulator latency (delay 0): median %v, p99 %v", try, bmed, b99)
		t.Logf("attempt %d: delay 1ms: min %v, median %v (error %+v), p99 %v (error %+v); switch read lag p50 %v p99 %v, send lag p50 %v p99 %v",
			try, lo, med, med-time.Millisecond, p99, p99-time.Millisecond, st.ReadLagP50, st.ReadLagP99, st.SendLagP50, st.SendLagP99)
		if lo < time.Millisecond {
			t.Errorf("a probe arrived after %v, before the configured 1ms", lo)
		}
		tol := scaled(500 * time.Microsecond)
		if med-time.Millisecond > tol {
			if starved(st) || bmed > tol {
				if !last {
					return true
				}
				// A measured stall explains the excess; the delay line
				// itself is asserted in virtual time (TestRateAndDelayTiming).
				t.Logf("timing inconclusive: the switch read or sent frames late in every attempt (read lag p50 %v, send lag p50 %v, unloaded median %v)", st.ReadLagP50, st.SendLagP50, bmed)
				return false
			}
			t.Errorf("median delay %v, want 1ms + at most %v", med, tol)
		}
		return false
	})
}

// starvedRetry runs attempt up to 3 times. An attempt reports whether the
// switch thread or the sender was starved of CPU (this 2-vCPU machine is
// shared with other test packages), which makes timing meaningless; on
// the last attempt a measured stall makes the timing inconclusive (logged)
// and everything else is asserted.
func starvedRetry(t *testing.T, attempt func(try int, last bool) (starved bool)) {
	for try := 1; try <= 3; try++ {
		if !attempt(try, try == 3) {
			return
		}
		t.Logf("attempt %d: the switch or the sender was short of CPU; measuring again", try)
	}
}

// starved reports whether the switch was short of CPU by its own
// measure: it read its frames late, or sent them late against its
// schedule (a delay line's frames leave late when its thread wakes late),
// median lag over 300 µs (scaled) either way.
func starved(st Stats) bool {
	return st.ReadLagP50 > scaled(300*time.Microsecond) || st.SendLagP50 > scaled(300*time.Microsecond)
}

func TestSwitchStrictPriority(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	link := LinkConfig{Rate: 100 * Mbit, BufferBytes: 1 << 20}
	starvedRetry(t, func(try int, last bool) bool {
		// Stalls of this process (the switch, the sender and the
		// receiver all run in it) excuse the timing assertions below.
		mon := stall.Start(stall.Config{})
		defer mon.Stop()
		mon.Watch(os.Getpid(), "netem test")
		sw := tp.startSwitch(t, link, 1, nil, nil)
		defer sw.Close()
		// Probes: 100-byte frames at priority 7, one per ms (0.8 Mbit/s).
		probes := func(n int, seq0 uint32) { tp.sendProbes(t, a, n, 100, 7, seq0) }
		const nBase, nLoaded, nLow = 150, 300, 8000
		done, sent := make(chan []rxFrame), make(chan struct{})
		go func() { done <- receiveUntil(b, math.MaxInt, sent, scaled(300*time.Millisecond), false, nil) }()
		probes(nBase, 0)
		lowDone := make(chan struct{})
		go func() {
			blast(t, a, tp.macAHW, tp.macBHW, 0, nLow, 1514, 200*Mbit, 1<<20) // ~0.42 s at 200 Mbit/s
			close(lowDone)
		}()
		time.Sleep(100 * time.Millisecond) // let the low queue build before probing
		probes(nLoaded, 1000)
		<-lowDone
		close(sent)
		got := <-done
		mon.Stop()
		stalls := mon.Spans()
		st := sw.Stats()
		base, loaded, lowFrames := splitPriority(got)
		var low []time.Duration
		for _, f := range lowFrames {
			low = append(low, f.oneWay())
		}
		if len(base) < nBase*9/10 || len(loaded) < nLoaded*9/10 || len(lowFrames) < 1000 {
			// Too few frames to judge. A stalled switch holds frames past
			// the receiver's patience, and a full buffer drops probes
			// too (tail drop); on a quiet machine neither happens.
			if len(stalls) > 0 && !last {
				return true
			}
			if len(stalls) > 0 {
				t.Logf("inconclusive: received %d base, %d loaded probes, %d low frames in every attempt; %d stalls measured (first: %s)", len(base), len(loaded), len(lowFrames), len(stalls), stalls[0])
				return false
			}
			t.Fatalf("received %d base, %d loaded probes, %d low frames, on a quiet machine; stats %+v", len(base), len(loaded), len(lowFrames), st.Ports[1])
		}
		lowRate := measuredRate(lowFrames, link.Rate)
		mtuTime := link.Rate.TxTime(1514)
		bmed, lmed, l99 := quantile(base, 0.5), quantile(loaded, 0.5), quantile(loaded, 0.99)
		fractions := overtaken(got, 10)
		t.Logf("attempt %d: probe one-way: unloaded median %v p99 %v; under saturation median %v p99 %v; one 1514-byte frame = %v; switch read lag p50 %v p99 %v; %d stalls of this process",
			try, bmed, quantile(base, 0.99), lmed, l99, mtuTime, st.ReadLagP50, st.ReadLagP99, len(stalls))
		t.Logf("attempt %d: low level: %d frames, %.2f Mbit/s, median one-way %v; switch buffer drops %d, max queue %d B; %d probes found >= 10 low frames queued ahead, median %.0f%% of them overtaken",
			try, len(lowFrames), lowRate/1e6, quantile(low, 0.5), st.Ports[1].Drops.Buffer, st.Ports[1].MaxQueueBytes, len(fractions), 100*quantile(fractions, 0.5))
		// Function, whatever the load: strict priority sends a probe ahead
		// of the low frames queued before it (FIFO would overtake none).
		// Only probes sent while low frames were queued say anything; a
		// stalled sender may probe after the queue drained.
		if len(fractions) < 30 {
			if !last {
				return true
			}
			if len(stalls) > 0 {
				t.Logf("inconclusive: only %d probes were sent while the low level was queued; %d stalls measured (first: %s)", len(fractions), len(stalls), stalls[0])
				return false
			}
			t.Fatalf("only %d probes were sent while the low level was queued, on a quiet machine", len(fractions))
		}
		if m := quantile(fractions, 0.5); m < 0.5 {
			// A switch that reads its socket late takes in frames whose
			// kernel stamps say their link time has passed, so it sends
			// them before the probe behind them in the socket is read:
			// its read lag is the measured stall that excuses this.
			if starved(st) {
				if !last {
					return true
				}
				t.Logf("inconclusive: probes overtook a median %.0f%% of the low frames queued ahead, but the switch read frames late in every attempt (read lag p50 %v)", 100*m, st.ReadLagP50)
				return false
			}
			t.Errorf("loaded probes overtook a median %.0f%% of the low frames queued ahead of them, want >= 50%% (strict priority; switch read lag p50 %v)", 100*m, st.ReadLagP50)
		}
		if st.Ports[1].Drops.Buffer == 0 {
			t.Errorf("no buffer drops: the port was not saturated")
		}
		// Timing: the probe waits at most the low frame being sent (one
		// MTU), and the low level gets the rest of the rate. The same
		// bounds are asserted exactly in virtual time
		// (TestStrictPriorityOrder, TestRateAndDelayTiming); in real time
		// only when no stall of this process was measured.
		slack := scaled(300 * time.Microsecond)
		timingOK := lmed <= bmed+mtuTime+slack && lowRate >= 95e6/timeScale() && lowRate <= 100.5e6
		if !timingOK && (len(stalls) > 0 || starved(st) || bmed > slack) {
			if !last {
				return true
			}
			first := "none"
			if len(stalls) > 0 {
				first = stalls[0].String()
			}
			t.Logf("timing inconclusive: %d stalls of this process measured (first: %s), switch read lag p50 %v, unloaded probe median %v", len(stalls), first, st.ReadLagP50, bmed)
			return false
		}
		if lmed > bmed+mtuTime+slack {
			t.Errorf("high-priority probe median %v under saturation, want <= unloaded %v + one MTU %v + %v", lmed, bmed, mtuTime, slack)
		}
		// Low gets what is left: 100 Mbit/s minus the probes' 0.8 Mbit/s.
		if lowRate < 95e6/timeScale() || lowRate > 100.5e6 {
			t.Errorf("low level got %.2f Mbit/s, want about 99 Mbit/s", lowRate/1e6)
		}
		return false
	})
}

// overtaken returns, for each priority-7 probe sent under load (seq >=
// 1000) that found at least min low-priority frames queued ahead of it
// (sent before it, sender clock, and not yet received when it was sent),
// the fraction of those that arrived after it.
func overtaken(got []rxFrame, min int) []float64 {
	var out []float64
	for i, f := range got {
		if f.prio != 7 || f.seq < 1000 {
			continue
		}
		ahead, after := 0, 0
		for k, g := range got {
			if g.prio == 7 || g.tx >= f.tx || g.rx <= f.tx {
				continue
			}
			ahead++
			if k > i {
				after++
			}
		}
		if ahead >= min {
			out = append(out, float64(after)/float64(ahead))
		}
	}
	return out
}

// lossPattern runs a lossy switch with seed and returns the sequence numbers
// that did not arrive and the switch's loss counter.
func lossPattern(t *testing.T, tp *testTopo, a, b packetSock, seed uint64) ([]uint32, uint64) {
	sw := tp.startSwitch(t, LinkConfig{Loss: LossConfig{Model: "random", Probability: 0.2}}, seed, nil, nil)
	const n = 400
	done := make(chan []rxFrame)
	go func() { done <- receive(b, n, scaled(time.Second), false) }()
	blast(t, a, tp.macAHW, tp.macBHW, 0, n, 200, 10*Mbit, 0)
	got := <-done
	sw.Close()
	seen := make([]bool, n)
	for _, f := range got {
		seen[f.seq] = true
	}
	var missing []uint32
	for i, ok := range seen {
		if !ok {
			missing = append(missing, uint32(i))
		}
	}
	return missing, sw.Stats().Drops.Loss
}

func TestSwitchSeededLoss(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	m1, l1 := lossPattern(t, tp, a, b, 7)
	m2, l2 := lossPattern(t, tp, a, b, 7)
	if !reflect.DeepEqual(m1, m2) && (uint64(len(m1)) != l1 || uint64(len(m2)) != l2) {
		// A frame lost outside the switch (a kernel socket overflowed on
		// this loaded machine) is not the loss model's doing: run again.
		t.Logf("frames lost outside the switch (%d/%d missing, %d/%d loss drops); running both again", len(m1), len(m2), l1, l2)
		m1, l1 = lossPattern(t, tp, a, b, 7)
		m2, l2 = lossPattern(t, tp, a, b, 7)
	}
	m3, _ := lossPattern(t, tp, a, b, 8)
	t.Logf("seed 7: %d of 400 lost, first %v", len(m1), m1[:min(8, len(m1))])
	if !reflect.DeepEqual(m1, m2) {
		t.Errorf("seed 7 lost different frames on rerun:\n%v\n%v", m1, m2)
	}
	if uint64(len(m1)) != l1 || uint64(len(m2)) != l2 {
		t.Errorf("missing %d/%d frames, switch counted %d/%d loss drops", len(m1), len(m2), l1, l2)
	}
	if reflect.DeepEqual(m1, m3) {
		t.Errorf("seeds 7 and 8 lost the same frames")
	}
	if len(m1) < 50 || len(m1) > 110 {
		t.Errorf("lost %d of 400 at p = 0.2", len(m1))
	}
}

func TestSwitchPlan(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	plan, err := ParsePlan([]byte(`
rules:
  - name: 2nd GRANT of the first RPC
    match: {type: GRANT, rpc: 1, nth: 2}
    action: drop
  - name: DATA at 3000 of RPC 2
    match: {type: DATA, rpc: 2, offset: [3000, 4000]}
    action: drop
  - name: mark retransmissions
    match: {retransmit: true}
    action: {priority: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	var rec bytes.Buffer
	sw := tp.startSwitch(t, LinkConfig{}, 1, plan, func(c *SwitchConfig) { c.Record = &rec })
	var frames [][]byte
	for i := range 10 {
		for _, id := range []uint64{2, 4, 6} { // RPC ordinals 1, 2, 3
			frames = append(frames, dataFrame(t, true, id, uint32(i*1000), 1000, i == 9), grantFrame(t, false, id, uint32(10000+i*1000)))
		}
	}
	done := make(chan []rxFrame)
	go func() { done <- receive(b, len(frames)-2, scaled(2*time.Second), true) }()
	for _, f := range frames {
		// Every frame goes A -> B; the plan reads roles from sender_id.
		copy(f[0:6], tp.macBHW[:])
		copy(f[6:12], tp.macAHW[:])
		send(t, a, f)
	}
	got := <-done
	sw.Close()
	// Frame numbers are 1-based in sending order: RPC 1's GRANTs are
	// frames 2, 8, 14, ...; RPC 2's DATA at offset 3000 is frame 3*6+3 = 21.
	var want, have []int
	for i := range frames {
		if i+1 != 8 && i+1 != 21 {
			want = append(want, i+1)
		}
	}
	for _, f := range got {
		i := slices.IndexFunc(frames, func(b []byte) bool { return bytes.Equal(b[34:], f.data[34:]) })
		have = append(have, i+1)
	}
	slices.Sort(have)
	if !reflect.DeepEqual(have, want) {
		t.Errorf("received frames %v\nwant %v", have, want)
	}
	st := sw.Stats()
	if len(st.Hits) != 5 || st.Hits[0].Frame != 8 || st.Hits[1].Frame != 21 || st.Drops.Plan != 2 || st.Drops.Total() != 2 {
		t.Errorf("hits %+v, drops %+v", st.Hits, st.Drops)
	}
	for _, f := range got {
		if f.data[23] == 254 {
			continue
		}
		fi := classify(f.data)
		if fi.homa && fi.pkt.Type() == 0x10 && fi.pkt.Data().Retransmit() != 0 && fi.prio != 1 {
			t.Errorf("retransmission left with priority %d, want 1", fi.prio)
		}
	}
	// The record reads back: every Homa frame forwarded (58, on port b's
	// interface) or dropped (2).
	r, err := pcap.NewReader(bytes.NewReader(rec.Bytes()), pcap.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, onB := 0, 0
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		n++
		if f.Interface == 1 {
			onB++
		}
	}
	if n != 60 || onB != 60 {
		t.Errorf("record holds %d Homa frames (%d on port b), want 60", n, onB)
	}
	for _, c := range []string{"dropped: plan (plan rule 0 (2nd GRANT of the first RPC))", "plan rule 2 (mark retransmissions): priority 1"} {
		if !bytes.Contains(rec.Bytes(), []byte(c)) {
			t.Errorf("record has no comment %q", c)
		}
	}
}

func TestSwitchFabric(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	f := &SwitchFabric{Links: map[string]LinkConfig{tp.swB: {Loss: LossConfig{Model: "random", Probability: 1}}}}
	t.Cleanup(func() { f.Close() })
	// ctx bounds the start only (harness.Fabric): cancelling it afterwards
	// does not stop the switch.
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.Start(ctx, tp.nsS, []string{tp.swA, tp.swB}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := f.Start(context.Background(), tp.nsS, []string{tp.swA, tp.swB}); err == nil {
		t.Error("second Start succeeded")
	}
	// Everything towards b is lost; the other direction is a perfect link.
	done := make(chan []rxFrame)
	go func() { done <- receive(a, 10, scaled(200*time.Millisecond), false) }()
	for i := range 10 {
		send(t, a, testFrame(tp.macAHW, tp.macBHW, 0, uint32(i), 100))
		send(t, b, testFrame(tp.macBHW, tp.macAHW, 0, uint32(i), 100))
	}
	if got := len(<-done); got != 10 {
		t.Errorf("a received %d of 10 frames from b", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st := f.Stats(); st.Ports[1].Drops.Loss != 10 || st.Ports[0].TxFrames != 10 {
		t.Errorf("stats %+v", st.Ports)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestSwitchForwardingCPU checks Stats.ForwardingCPU: it counts the
// forwarding thread's CPU from the switch's start (not the OS thread's
// earlier work for other goroutines), grows while the switch forwards,
// stays bounded by the process's CPU over the same span, and keeps its
// last value after Close.
func TestSwitchForwardingCPU(t *testing.T) {
	tp := newTestTopo(t)
	a, b := hostSock(t, tp.nsA, tp.ifA), hostSock(t, tp.nsB, tp.ifB)
	cpu0 := processCPU(t)
	sw := tp.startSwitch(t, LinkConfig{}, 1, nil, nil)
	const n = 3000
	done := make(chan []rxFrame)
	go func() { done <- receive(b, n, scaled(500*time.Millisecond), false) }()
	blast(t, a, tp.macAHW, tp.macBHW, 0, n, 200, 0, 0)
	got := <-done
	running := sw.Stats().ForwardingCPU
	cpu := processCPU(t) - cpu0
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	closed := sw.Stats().ForwardingCPU
	t.Logf("%d frames forwarded: forwarding thread %v (%v per frame), process %v; after Close %v", len(got), running, running/time.Duration(max(1, len(got))), cpu, closed)
	if len(got) == 0 {
		t.Fatal("no frame forwarded")
	}
	if running <= 0 || running > cpu {
		t.Errorf("forwarding CPU %v while running, want in (0, %v] (the process's CPU since the switch started)", running, cpu)
	}
	if closed < running {
		t.Errorf("forwarding CPU %v after Close, want at least %v", closed, running)
	}
}
