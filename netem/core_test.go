package netem

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// out is a frame the core sent: port, frame number, departure.
type out struct {
	port int
	num  uint64
	at   time.Duration
	f    *Frame
}

// drain pops every frame the core will send, advancing a fake clock to
// each Next time.
func drain(c *Core) []out {
	var o []out
	for {
		t, ok := c.Next()
		if !ok {
			return o
		}
		for {
			p, f := c.Pop(t)
			if f == nil {
				break
			}
			o = append(o, out{p, f.Num, t, f})
		}
	}
}

func nums(o []out) []uint64 {
	var n []uint64
	for _, x := range o {
		n = append(n, x.num)
	}
	return n
}

// twoPorts is a core with ports a (0) and b (1), b's egress configured by link.
func twoPorts(t *testing.T, link LinkConfig, seed uint64, plan *Plan) *Core {
	t.Helper()
	c, err := NewCore([]Port{{Name: "a"}, {Name: "b", Link: link}}, seed, plan)
	if err != nil {
		t.Fatal(err)
	}
	// Teach the bridge where B lives so frames A->B are unicast to port 1.
	learn := ipv4Frame(macB, macA, addrB, addrA, 0, 17, make([]byte, 8))
	if _, err := c.Ingress(0, 1, learn); err != nil {
		t.Fatal(err)
	}
	drain(c)
	return c
}

// udp is a frame from A to B with priority prio and n bytes of IP payload.
func udp(prio uint8, n int) []byte {
	return ipv4Frame(macA, macB, addrA, addrB, prio, 17, make([]byte, n))
}

func TestStrictPriorityOrder(t *testing.T) {
	c := twoPorts(t, LinkConfig{Rate: 100 * Mbit}, 1, nil)
	// Frames 2..6 low (priority 0), then 7..9 high (priority 7), all at t=1ms.
	now := time.Millisecond
	for range 5 {
		c.Ingress(now, 0, udp(0, 1000))
	}
	for range 3 {
		c.Ingress(now, 0, udp(7, 1000))
	}
	o := drain(c)
	// Frame 2 was already on the wire when the highs arrived.
	want := []uint64{2, 7, 8, 9, 3, 4, 5, 6}
	if got := nums(o); !reflect.DeepEqual(got, want) {
		t.Fatalf("departure order %v, want %v", got, want)
	}
	// Back to back at 1034 bytes * 8 / 100 Mbit/s = 82.72 µs each.
	tx := (100 * Mbit).TxTime(1034)
	for i, x := range o {
		if want := now + time.Duration(i+1)*tx; x.at != want {
			t.Errorf("frame %d left at %v, want %v", x.num, x.at, want)
		}
	}
}

func TestPriorityLevelsFewer(t *testing.T) {
	// 2 levels, clamp: priorities 1..7 share the top queue (FIFO among them).
	c := twoPorts(t, LinkConfig{Rate: 100 * Mbit, Priorities: 2}, 1, nil)
	for _, p := range []uint8{0, 0, 3, 7, 1} {
		c.Ingress(time.Millisecond, 0, udp(p, 1000))
	}
	if got, want := nums(drain(c)), []uint64{2, 4, 5, 6, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestRateAndDelayTiming(t *testing.T) {
	link := LinkConfig{Rate: 10 * Mbit, Delay: 2 * time.Millisecond}
	c := twoPorts(t, link, 1, nil)
	start := 10 * time.Millisecond
	// 5 frames back to back, then one after the link went idle.
	for range 5 {
		c.Ingress(start, 0, udp(0, 1466))
	}
	late := start + 50*time.Millisecond
	c.Ingress(late, 0, udp(0, 66))
	o := drain(c)
	tx := (10 * Mbit).TxTime(1500) // 1.2 ms
	if tx != 1200*time.Microsecond {
		t.Fatalf("TxTime(1500) at 10 Mbit/s = %v", tx)
	}
	for i := range 5 {
		if want := start + time.Duration(i+1)*tx + 2*time.Millisecond; o[i].at != want {
			t.Errorf("frame %d left at %v, want %v", o[i].num, o[i].at, want)
		}
	}
	if want := late + (10 * Mbit).TxTime(100) + 2*time.Millisecond; o[5].at != want {
		t.Errorf("idle-link frame left at %v, want %v", o[5].at, want)
	}
}

func TestBufferTailDrop(t *testing.T) {
	c := twoPorts(t, LinkConfig{Rate: 10 * Mbit, BufferBytes: 3500}, 1, nil)
	var dropped []uint64
	c.OnDrop = func(p int, f *Frame, r DropReason, d string) {
		if r != DropBuffer || p != 1 {
			t.Errorf("drop of %d on port %d for %v", f.Num, p, r)
		}
		dropped = append(dropped, f.Num)
	}
	// The first frame goes straight onto the wire; 3 more fit the buffer.
	for range 8 {
		c.Ingress(time.Millisecond, 0, udp(0, 966))
	}
	if got := nums(drain(c)); !reflect.DeepEqual(got, []uint64{2, 3, 4, 5}) {
		t.Errorf("sent %v, want [2 3 4 5]", got)
	}
	if !reflect.DeepEqual(dropped, []uint64{6, 7, 8, 9}) {
		t.Errorf("dropped %v, want [6 7 8 9]", dropped)
	}
	if s := c.Stats(); s.Drops.Buffer != 4 || s.Ports[1].Drops.Buffer != 4 || s.Ports[1].MaxQueueBytes != 3000 {
		t.Errorf("stats %+v", s.Ports[1])
	}
}

// lossRun sends n frames through a lossy port and returns the dropped frame numbers.
func lossRun(t *testing.T, seed uint64, loss LossConfig, n int) []uint64 {
	c := twoPorts(t, LinkConfig{Loss: loss}, seed, nil)
	var dropped []uint64
	c.OnDrop = func(p int, f *Frame, r DropReason, d string) { dropped = append(dropped, f.Num) }
	for i := range n {
		c.Ingress(time.Duration(i)*time.Microsecond, 0, udp(0, 50))
		drain(c)
	}
	return dropped
}

func TestSeededLossReproduces(t *testing.T) {
	loss := LossConfig{Model: "random", Probability: 0.1}
	a, b := lossRun(t, 42, loss, 10000), lossRun(t, 42, loss, 10000)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different drops: %d vs %d frames", len(a), len(b))
	}
	if c := lossRun(t, 43, loss, 10000); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 42 and 43 dropped the same frames")
	}
	// 10000 frames at p = 0.1: mean 1000, sd 30.
	if len(a) < 900 || len(a) > 1100 {
		t.Errorf("dropped %d of 10000, want about 1000", len(a))
	}
	t.Logf("seed 42 drops %d frames, first %v", len(a), a[:5])
	// Enabling jitter and duplication does not change which frames are lost.
	c := twoPorts(t, LinkConfig{Loss: loss, Jitter: time.Microsecond, Duplicate: 0.1}, 42, nil)
	var d []uint64
	c.OnDrop = func(p int, f *Frame, r DropReason, _ string) { d = append(d, f.Num) }
	for i := range 10000 {
		c.Ingress(time.Duration(i)*time.Microsecond, 0, udp(0, 50))
		drain(c)
	}
	if !reflect.DeepEqual(a, d) {
		t.Errorf("jitter/duplication changed the loss pattern")
	}
}

func TestGilbertElliottBursts(t *testing.T) {
	// p = 0.02, r = 0.25, lossless good state, lossy bad state: bursts are
	// geometric with mean 1/r = 4 frames; loss rate p/(p+r) = 7.4 %.
	loss := LossConfig{Model: "gilbert-elliott", P: 0.02, R: 0.25, LossBad: 1}
	e, err := NewEgress(LinkConfig{Loss: loss}, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200000
	lost, bursts, run := 0, []int{}, 0
	for range n {
		if l, _ := e.lost(); l {
			lost++
			run++
		} else if run > 0 {
			bursts = append(bursts, run)
			run = 0
		}
	}
	mean := float64(lost) / float64(len(bursts))
	rate := float64(lost) / n
	t.Logf("loss rate %.4f (want %.4f), %d bursts, mean burst %.3f (want 4)", rate, 0.02/0.27, len(bursts), mean)
	if math.Abs(mean-4)/4 > 0.05 {
		t.Errorf("mean burst %.3f, want 4 ± 5%%", mean)
	}
	if want := 0.02 / 0.27; math.Abs(rate-want)/want > 0.05 {
		t.Errorf("loss rate %.4f, want %.4f ± 5%%", rate, want)
	}
	// Geometric: P(burst = 1) = r.
	ones := 0
	for _, b := range bursts {
		if b == 1 {
			ones++
		}
	}
	if f := float64(ones) / float64(len(bursts)); math.Abs(f-0.25) > 0.02 {
		t.Errorf("P(burst=1) = %.3f, want 0.25", f)
	}
}

func TestPlanDropsExactlyNamed(t *testing.T) {
	plan, err := ParsePlan([]byte(`
rules:
  - name: 2nd GRANT of first RPC
    match: {type: GRANT, rpc: 1, nth: 2}
    action: drop
  - name: first retransmission
    match: {type: DATA, retransmit: true, nth: 1}
    action: drop
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCore([]Port{{Name: "a"}, {Name: "b"}}, 1, plan)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for i := range 20 {
		id := uint64(2 + 2*(i%3)) // RPCs 2, 4, 6 interleaved: ordinals 1, 2, 3
		frames = append(frames, dataFrame(t, true, id, uint32(i*1000), 1000, i == 13 || i == 16), grantFrame(t, false, id, uint32(i*2000)))
	}
	var drops []string
	c.OnDrop = func(p int, f *Frame, r DropReason, d string) { drops = append(drops, d) }
	for i, f := range frames {
		c.Ingress(time.Duration(i)*time.Microsecond, i%2, f)
	}
	got := nums(drain(c))
	// RPC 2's grants are frames 2, 8, 14, ...: the 2nd is frame 8.
	// Retransmitted DATA: i = 13 is frame 27, i = 16 frame 33.
	var want []uint64
	for n := uint64(1); n <= 40; n++ {
		if n != 8 && n != 27 {
			want = append(want, n)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("delivered %v\nwant %v", got, want)
	}
	s := c.Stats()
	if len(s.Hits) != 2 || s.Hits[0] != (Hit{Rule: 0, Name: "2nd GRANT of first RPC", Frame: 8, Action: "drop"}) || s.Hits[1].Frame != 27 {
		t.Errorf("hits %+v", s.Hits)
	}
	if s.Drops.Plan != 2 || s.Drops.Total() != 2 {
		t.Errorf("drops %+v", s.Drops)
	}
	if drops[0] != "plan rule 0 (2nd GRANT of first RPC)" {
		t.Errorf("drop detail %q", drops[0])
	}
}

func TestPlanActions(t *testing.T) {
	plan := &Plan{Rules: []Rule{
		{Match: Match{Type: "DATA", Nth: 1}, Action: Action{Hold: 2}},
		{Match: Match{Type: "DATA", Nth: 4}, Action: Action{Delay: time.Millisecond}},
		{Match: Match{Type: "DATA", Nth: 5}, Action: Action{Duplicate: 2}},
		{Match: Match{Type: "GRANT"}, Action: Action{Priority: ptr(0)}},
	}}
	c := twoPorts(t, LinkConfig{Rate: Gbit}, 1, plan)
	for i := range 6 {
		c.Ingress(time.Duration(i)*100*time.Microsecond, 0, dataFrame(t, true, 2, uint32(i*1000), 1000, false))
	}
	o := drain(c)
	// DATA frames are 2..7: 2 held for 2 frames, 5 delayed 1 ms, 6 tripled.
	if got, want := nums(o), []uint64{3, 4, 2, 6, 6, 6, 7, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if o[2].f.Comment != "plan rule 0: hold 2" {
		t.Errorf("comment %q", o[2].f.Comment)
	}
	// Priority rewrite: the GRANT leaves with precedence 0 and a valid IPv4 checksum.
	g := grantFrame(t, true, 2, 5000) // client to server, A -> B
	c.Ingress(10*time.Millisecond, 0, g)
	o = drain(c)
	f := o[0].f.Data
	if f[15]>>5 != 0 || wire.IPv4HeaderChecksum(f[14:34]) != 0 {
		t.Errorf("rewritten TOS %#x, header checksum residue %#x", f[15], wire.IPv4HeaderChecksum(f[14:34]))
	}
	fi := classify(f)
	if !fi.homa || fi.pkt.Type() != wire.TypeGrant {
		t.Errorf("rewritten frame no longer a GRANT")
	}
}

func ptr[T any](v T) *T { return &v }

func TestImpairments(t *testing.T) {
	t.Run("mtu", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{MTU: 1500}, 1, nil)
		c.Ingress(0, 0, udp(0, 1480))
		c.Ingress(0, 0, udp(0, 1481))
		if got := nums(drain(c)); !reflect.DeepEqual(got, []uint64{2}) || c.Stats().Drops.MTU != 1 {
			t.Errorf("sent %v, drops %+v", got, c.Stats().Drops)
		}
	})
	t.Run("corrupt flip", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{Corrupt: 1}, 1, nil)
		orig := udp(0, 100)
		c.Ingress(0, 0, slices.Clone(orig))
		o := drain(c)
		diff := 0
		for i := range orig {
			for b := o[0].f.Data[i] ^ orig[i]; b != 0; b &= b - 1 {
				diff++
			}
			if i < 14 && o[0].f.Data[i] != orig[i] {
				t.Errorf("Ethernet header byte %d changed", i)
			}
		}
		if diff != 1 || c.Stats().Ports[1].Corrupted != 1 {
			t.Errorf("%d bits differ, want 1", diff)
		}
	})
	t.Run("corrupt drop", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{Corrupt: 1, CorruptMode: "drop"}, 1, nil)
		c.Ingress(0, 0, udp(0, 100))
		if o := drain(c); len(o) != 0 || c.Stats().Drops.Corrupt != 1 {
			t.Errorf("sent %d, drops %+v", len(o), c.Stats().Drops)
		}
	})
	t.Run("duplicate", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{Duplicate: 1}, 1, nil)
		c.Ingress(0, 0, udp(0, 100))
		if got := nums(drain(c)); !reflect.DeepEqual(got, []uint64{2, 2}) {
			t.Errorf("sent %v", got)
		}
	})
	t.Run("reorder", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{Reorder: ReorderConfig{Probability: 1, Gap: 2}}, 1, nil)
		c.OnDrop = func(int, *Frame, DropReason, string) { t.Error("drop") }
		c.Ingress(0, 0, udp(0, 100))
		// Only one frame: it is released after the max hold.
		o := drain(c)
		if len(o) != 1 || o[0].at != DefaultMaxHold {
			t.Errorf("lone reordered frame: %v", o)
		}
	})
	t.Run("jitter uniform bounds", func(t *testing.T) {
		c := twoPorts(t, LinkConfig{Delay: time.Millisecond, Jitter: 200 * time.Microsecond}, 1, nil)
		lo, hi := time.Hour, time.Duration(0)
		for i := range 2000 {
			at := time.Duration(i) * 10 * time.Millisecond
			c.Ingress(at, 0, udp(0, 100))
			o := drain(c)
			d := o[0].at - at
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < 800*time.Microsecond || hi > 1200*time.Microsecond || lo > 810*time.Microsecond || hi < 1190*time.Microsecond {
			t.Errorf("delay range [%v, %v], want [800µs, 1.2ms] filled", lo, hi)
		}
	})
}

func TestLearningBridge(t *testing.T) {
	c, err := NewCore([]Port{{Name: "a"}, {Name: "b"}, {Name: "c"}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Ingress(0, 0, udp(0, 10)) // A->B, B unknown: flood to b and c
	o := drain(c)
	if len(o) != 2 || o[0].port == o[1].port || o[0].port == 0 || o[1].port == 0 {
		t.Fatalf("flood went to %v", o)
	}
	c.Ingress(1, 1, ipv4Frame(macB, macA, addrB, addrA, 0, 17, nil)) // B->A, A learned on a
	if o := drain(c); len(o) != 1 || o[0].port != 0 {
		t.Fatalf("unicast went to %v", o)
	}
	c.Ingress(2, 0, udp(0, 10)) // A->B, B learned on b
	if o := drain(c); len(o) != 1 || o[0].port != 1 {
		t.Fatalf("unicast went to %v", o)
	}
	c.Ingress(3, 1, udp(0, 10)) // to B from b's own segment: filtered
	if o := drain(c); len(o) != 0 || c.Stats().Filtered != 1 || c.Stats().Flooded != 1 {
		t.Errorf("filtered frame sent %v, stats %+v", o, c.Stats())
	}
	if _, err := NewCore([]Port{{Name: "a"}, {Name: "a"}}, 1, nil); err == nil {
		t.Error("duplicate port names accepted")
	}
}

func TestLagHist(t *testing.T) {
	var h lagHist
	if h.quantile(0.5) != 0 {
		t.Error("empty histogram has a median")
	}
	for range 90 {
		h.add(3 * time.Microsecond) // bucket [2048, 4096) ns
	}
	for range 10 {
		h.add(5 * time.Millisecond) // bucket [4194304, 8388608) ns
	}
	if got := h.quantile(0.5); got != 4095 {
		t.Errorf("p50 = %v, want 4.095µs", got)
	}
	if got := h.quantile(0.99); got != 8388607 {
		t.Errorf("p99 = %v, want 8.388607ms", got)
	}
}

// FuzzCore: any bytes through a switch with every impairment and a plan
// never panic, and every frame is sent or counted as dropped.
func FuzzCore(f *testing.F) {
	f.Add(udp(3, 100), uint8(0))
	f.Add(dataFrame(f, true, 2, 0, 100, false), uint8(1))
	f.Add(grantFrame(f, false, 2, 1000), uint8(2))
	plan := &Plan{Rules: []Rule{
		{Match: Match{Type: "GRANT", Nth: 2}, Action: Action{Drop: true}},
		{Match: Match{Type: "DATA"}, Action: Action{Hold: 1, Priority: ptr(7), Duplicate: 1}},
	}}
	link := LinkConfig{Rate: 10 * Mbit, BufferBytes: 4000, Priorities: 3, Delay: time.Millisecond, Jitter: 500 * time.Microsecond,
		Loss: LossConfig{Model: "gilbert-elliott", P: 0.1, R: 0.5, LossBad: 0.5}, Duplicate: 0.1, Corrupt: 0.1,
		Reorder: ReorderConfig{Probability: 0.2, Gap: 2}, MTU: 1500}
	f.Fuzz(func(t *testing.T, frame []byte, port uint8) {
		c, err := NewCore([]Port{{Name: "a", Link: link}, {Name: "b", Link: link}, {Name: "c", Link: link}}, 1, plan)
		if err != nil {
			t.Fatal(err)
		}
		var dropped int
		c.OnDrop = func(int, *Frame, DropReason, string) { dropped++ }
		for i := range 3 {
			c.Ingress(time.Duration(i)*time.Millisecond, int(port)%3, append([]byte(nil), frame...))
		}
		sent := len(drain(c))
		if s := c.Stats(); uint64(dropped) != s.Drops.Total() || sent < 0 {
			t.Errorf("OnDrop saw %d drops, stats %d", dropped, s.Drops.Total())
		}
	})
}

// TestRateClock checks the serialisation clock at 10 Mbit/s, 100 Mbit/s,
// 1 Gbit/s and 10 Gbit/s (1534-byte frames: 1227.2 ns at 10 Gbit/s, not a
// whole number of ns) with a fake clock: the live rate tests measure it
// through the switch's CPU budget, this one alone. 2000 frames enter
// together, read late (IngressStamped: the kernel stamps carry the
// arrival); the departures are exactly n*8/rate apart from the stamp,
// however late the switch pops them.
func TestRateClock(t *testing.T) {
	for _, rate := range []BitRate{10 * Mbit, 100 * Mbit, Gbit, 10 * Gbit} {
		c := twoPorts(t, LinkConfig{Rate: rate, BufferBytes: 64 << 20}, 1, nil)
		stamp := 5 * time.Millisecond
		const n = 2000
		for range n {
			c.IngressStamped(stamp+3*time.Millisecond, stamp, 0, udp(0, 1500))
		}
		var o []out
		// Pop late: every 7 ms of fake time, whatever is due.
		for now := stamp; len(o) < n; now += 7 * time.Millisecond {
			for {
				p, f := c.Pop(now)
				if f == nil {
					break
				}
				if f.Departure > now {
					t.Fatalf("%v: frame %d popped at %v before its departure %v", rate, f.Num, now, f.Departure)
				}
				o = append(o, out{p, f.Num, f.Departure, f})
			}
		}
		bits := float64(n * len(o[0].f.Data) * 8)
		got := bits / (o[n-1].at - stamp).Seconds()
		if rel := math.Abs(got-float64(rate)) / float64(rate); rel > 1e-6 {
			t.Errorf("%v: %d frames took %v: %.6g bit/s, error %.2g", rate, n, o[n-1].at-stamp, got, rel)
		}
	}
}
