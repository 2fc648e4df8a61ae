package check

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// writeBenchCapture writes a pcapng of about n Homa packets: RPCs from 8
// client hosts to one server, conc of them in flight at once, each a
// 100000-byte request (unscheduled 0..40000, then GRANTed in 10000-byte
// steps at priority 0) and a 100-byte response, packets of the live RPCs
// interleaved round-robin, gap apart, cut to a 128-byte snap length. It
// returns the number of RPCs started.
func writeBenchCapture(b *testing.B, path string, n, conc int, gap time.Duration) int {
	fw, err := pcap.Create(path, pcap.Interface{Name: "bench", SnapLen: 128})
	if err != nil {
		b.Fatal(err)
	}
	server := netip.MustParseAddr("198.18.0.100")
	type rpc struct {
		id         uint64
		client     netip.Addr
		sent       uint32
		granted    uint32
		stage      int
		nextGrant  uint32
		responding bool
		active     bool
	}
	active := 0 // RPCs being granted: at most max_overcommit (8)
	sb := gopacket.NewSerializeBuffer()
	o := wire.EncodeOptions{FixLengths: true, SetMarks: true}
	ts := time.Unix(1700000000, 0)
	payload := make([]byte, 1424)
	written := 0
	emit := func(src, dst netip.Addr, prio uint8, f wire.Fields) {
		fr, err := pcap.BuildFrame(sb, pcap.FrameSpec{Src: src, Dst: dst, Priority: prio}, f, o)
		if err != nil {
			b.Fatal(err)
		}
		ts = ts.Add(gap)
		if err := fw.WritePacket(0, ts, fr[:min(len(fr), 128)], len(fr), ""); err != nil {
			b.Fatal(err)
		}
		written++
	}
	var nextID uint64 = 2
	// acks holds each client's RPCs whose response came and that it has
	// not yet acknowledged: its next DATA packets carry them, one each,
	// as piggy-backed acks (HomaModule homa_peer_add_ack at the RPC's
	// end, homa_peer_get_acks as DATA is built), which end the server's
	// duty to ask for them (HOMA-ACK-013).
	acks := map[netip.Addr][]uint64{}
	live := make([]*rpc, 0, conc)
	newRPC := func() *rpc {
		r := &rpc{id: nextID, client: netip.AddrFrom4([4]byte{198, 18, 0, byte(1 + nextID/2%8)}), granted: 40000, nextGrant: 50000}
		nextID += 2
		return r
	}
	for len(live) < conc {
		live = append(live, newRPC())
	}
	const msg = 100000
	for written < n {
		for i, r := range live {
			switch {
			case !r.responding && r.sent >= r.granted:
				// waiting for grants
			case !r.responding && r.sent < r.granted:
				l := min(uint32(1424), r.granted-r.sent, msg-r.sent)
				if r.sent < 40000 && r.sent+l > 40000 {
					l = 40000 - r.sent
				}
				prio := uint8(0)
				if r.sent < 40000 {
					prio = 4
				}
				f := &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: r.id, Sequence: r.sent},
					MessageLength: msg, Incoming: 40000, CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: payload[:l]}
				if q := acks[r.client]; len(q) > 0 {
					f.Ack = wire.AckEntry{ClientID: q[0], ServerPort: 4000}
					acks[r.client] = q[1:]
				}
				emit(r.client, server, prio, f)
				r.sent += l
				if r.sent >= 40000 && !r.active && active < 8 {
					r.active = true
					active++
				}
				if r.active && r.granted < msg && r.sent+20000 > r.granted {
					r.granted = min(r.granted+10000, msg)
					emit(server, r.client, 7, &wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: r.id | 1}, Offset: r.granted})
				}
				if r.sent == msg {
					r.responding = true
					if r.active {
						active--
					}
				}
			default:
				emit(server, r.client, 7, &wire.DataFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: r.id | 1},
					MessageLength: 100, Incoming: 100, CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: payload[:100]})
				acks[r.client] = append(acks[r.client], r.id)
				live[i] = newRPC()
			}
			if written >= n {
				break
			}
		}
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
	return int(nextID/2) - 1
}

// checkGap spaces the benchmark captures' packets: 50 µs (20,000 packets
// per second of capture time), so that a 1M-packet capture spans 50 s,
// longer than the trace keeps a finished RPC (spec.EvictAfter): the state
// then follows the RPCs alive, and 1M and 4M packets have the same RPC
// density.
const checkGap = 50 * time.Microsecond

// benchCaptures holds the generated captures by size, written once per
// test binary run.
var benchCaptures = map[int]string{}

func benchCapturePath(b *testing.B, n int) string {
	if p, ok := benchCaptures[n]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "homatest-checkbench-")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, dir)
	p := filepath.Join(dir, fmt.Sprintf("check%d.pcapng", n))
	rpcs := writeBenchCapture(b, p, n, 1000, checkGap)
	st, _ := os.Stat(p)
	b.Logf("capture %s: %d MB, %d RPCs started, 1000 in flight", filepath.Base(p), st.Size()>>20, rpcs)
	benchCaptures[n] = p
	return p
}

// benchDirs are removed when the test binary ends (TestMain).
var benchDirs []string

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pass is one timed pass over a capture: packets, wall and CPU time.
type pass struct {
	n         int
	wall, cpu time.Duration
}

func (p *pass) add(q pass) { p.n, p.wall, p.cpu = p.n+q.n, p.wall+q.wall, p.cpu+q.cpu }

// rate returns packets per wall second and per CPU second.
func (p pass) rate() (float64, float64) {
	return float64(p.n) / p.wall.Seconds(), float64(p.n) / p.cpu.Seconds()
}

func timed(fn func() int) pass {
	runtime.GC()
	w, c := time.Now(), cpuTime()
	n := fn()
	return pass{n: n, wall: time.Since(w), cpu: cpuTime() - c}
}

// openNg opens the pcapng at path with pcapgo; done closes it.
func openNg(b testing.TB, path string) (ng *pcapgo.NgReader, done func()) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ng, err = pcapgo.NewNgReader(bufio.NewReaderSize(f, 1<<16), pcapgo.NgReaderOptions{})
	if err != nil {
		f.Close()
		b.Fatal(err)
	}
	return ng, func() { f.Close() }
}

// rawRead reads every frame of path with pcapgo and nothing else: the
// floor a checker's throughput is measured against.
func rawRead(b *testing.B, path string) int {
	ng, done := openNg(b, path)
	defer done()
	n := 0
	for {
		if _, _, err := ng.ZeroCopyReadPacketData(); err != nil {
			return n
		}
		n++
	}
}

// checkRun is what one check of a capture measured.
type checkRun struct {
	check, raw pass
	allocs     uint64
	rep        *spec.Report
}

// checkOnce checks the capture at path as homatest check does (rules and
// parameter inference on one trace), paired with a raw read of the same
// file.
func checkOnce(b *testing.B, path string) checkRun {
	prof, _ := spec.LookupProfile("linux")
	rules, _ := spec.Select(spec.Rules(), "", spec.Should, "linux")
	var out checkRun
	out.raw = timed(func() int { return rawRead(b, path) })
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	out.check = timed(func() int {
		run, err := runRules(path, pcap.ReaderOptions{ICMP: true}, capturePlan{mode: oneView, cp: spec.Switch}, spec.Judge{Profile: "linux", Params: prof.Params, Rules: rules})
		if err != nil {
			b.Fatal(err)
		}
		out.rep = run.rep
		return run.rep.Events
	})
	runtime.ReadMemStats(&m1)
	out.allocs = m1.Mallocs - m0.Mallocs
	if out.rep.Violated() {
		var buf bytes.Buffer
		for _, v := range out.rep.Violations[:min(5, len(out.rep.Violations))] {
			fmt.Fprintln(&buf, v)
		}
		b.Fatalf("generated capture violates rules:\n%s", buf.String())
	}
	return out
}

// peakState checks the capture at path again (untimed) the way checkOnce
// does, collecting garbage every 250,000 packets, and returns the largest
// heap still in use right after such a collection: the checker's state
// (RPCs, messages, open obligations, inference), free of the garbage
// collector's timing.
func peakState(b *testing.B, path string) uint64 {
	prof, _ := spec.LookupProfile("linux")
	rules, _ := spec.Select(spec.Rules(), "", spec.Should, "linux")
	c := spec.NewChecker("linux", prof.Params, rules)
	c.SetInferrer(spec.NewInferrer(prof.Params))
	var peak uint64
	var ms runtime.MemStats
	n := 0
	if _, err := pcap.StreamPath(path, pcap.ReaderOptions{ICMP: true}, func(e *spec.Event) {
		c.Feed(e)
		if n++; n%250_000 == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}); err != nil {
		b.Fatal(err)
	}
	c.Finish()
	return peak
}

// tsharkRate times tshark -r path -q (Wireshark reading the file without
// printing) and returns packets per wall second, or 0 without tshark.
func tsharkRate(b *testing.B, path string, n int) float64 {
	ts, err := exec.LookPath("tshark")
	if err != nil {
		return 0
	}
	start := time.Now()
	cmd := exec.Command(ts, "-r", path, "-q")
	cmd.Env = append(os.Environ(), "HOME="+b.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Logf("tshark: %v: %s", err, out)
		return 0
	}
	return float64(n) / time.Since(start).Seconds()
}

// benchCheck checks a generated capture of n packets per iteration and
// reports packets per wall and per CPU second, the ratio to pcapgo's raw
// read of the same file in the same iteration (and to tshark's plain
// read, once, when tshark is installed), allocations per packet and,
// from one more untimed pass, the peak state (peakState).
func benchCheck(b *testing.B, n int) {
	path := benchCapturePath(b, n)
	var check, raw pass
	var allocs uint64
	for b.Loop() {
		r := checkOnce(b, path)
		check.add(r.check)
		raw.add(r.raw)
		allocs += r.allocs
	}
	b.StopTimer()
	peak := peakState(b, path)
	cw, cc := check.rate()
	rw, rc := raw.rate()
	b.ReportMetric(cw, "check-pkts/s")
	b.ReportMetric(cc, "check-pkts/cpu-s")
	b.ReportMetric(rc, "raw-pkts/cpu-s")
	b.ReportMetric(check.cpu.Seconds()/raw.cpu.Seconds(), "check/raw-cpu")
	b.ReportMetric(float64(allocs)/float64(check.n), "allocs/pkt")
	b.ReportMetric(float64(peak)/(1<<20), "peak-state-MB")
	if t := tsharkRate(b, path, check.n/max(1, b.N)); t > 0 {
		b.ReportMetric(cw/t, "check/tshark")
	}
	_ = rw
}

// BenchmarkCheck1M checks a generated capture of 1,000,000 Homa packets
// (1000 RPCs in flight) against every rule of the linux profile, with
// parameter inference, as homatest check does (see benchCheck).
func BenchmarkCheck1M(b *testing.B) { benchCheck(b, 1_000_000) }

// BenchmarkCheck4M is BenchmarkCheck1M on 4,000,000 packets of the same
// RPC density.
func BenchmarkCheck4M(b *testing.B) { benchCheck(b, 4_000_000) }

// BenchmarkCheckScaling checks the 1M and the 4M captures in each
// iteration and reports the ratio of their CPU times (4 would be linear)
// and, from untimed passes, of their peak states (1 would be flat).
func BenchmarkCheckScaling(b *testing.B) {
	p1, p4 := benchCapturePath(b, 1_000_000), benchCapturePath(b, 4_000_000)
	var c1, c4 time.Duration
	for b.Loop() {
		c1 += checkOnce(b, p1).check.cpu
		c4 += checkOnce(b, p4).check.cpu
	}
	b.StopTimer()
	s1, s4 := peakState(b, p1), peakState(b, p4)
	b.ReportMetric(c4.Seconds()/c1.Seconds(), "cpu-4M/1M")
	b.ReportMetric(float64(s4)/float64(s1), "state-4M/1M")
	b.ReportMetric(float64(s1)/(1<<20), "peak-state-1M-MB")
	b.ReportMetric(float64(s4)/(1<<20), "peak-state-4M-MB")
}

// writePortsCapture rewrites the one-view capture at src as homatest run
// writes a switch's ports (capture.pcapng): one interface per host, each
// frame twice, inbound on its sender's port (as the switch got it) and
// outbound on its receiver's (as the switch delivered it).
func writePortsCapture(b *testing.B, src, path string) {
	ng, done := openNg(b, src)
	defer done()
	r, err := pcap.OpenPath(src, pcap.ReaderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	idx := map[netip.Addr]int{}
	var ifs []pcap.Interface
	port := func(a netip.Addr) int {
		if i, ok := idx[a]; ok {
			return i
		}
		idx[a] = len(ifs)
		ifs = append(ifs, pcap.Interface{Name: a.String(), SnapLen: 128})
		return idx[a]
	}
	type frame struct {
		data     []byte
		ts       time.Time
		n        int
		src, dst int
	}
	var frames []frame
	for {
		data, ci, err := ng.ReadPacketData()
		if err != nil {
			break
		}
		f, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, frame{data, ci.Timestamp, ci.Length, port(f.Src), port(f.Dst)})
	}
	fw, err := pcap.Create(path, ifs...)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range frames {
		if err := fw.WritePacketDir(f.src, f.ts, f.data, f.n, pcap.DirInbound, ""); err != nil {
			b.Fatal(err)
		}
		if err := fw.WritePacketDir(f.dst, f.ts, f.data, f.n, pcap.DirOutbound, ""); err != nil {
			b.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCheckPorts checks a capture as homatest run writes a switch's
// ports (writePortsCapture of 300,000 generated packets: 9 hosts, 600,000
// frames) the way homatest check does (the layout pass, the plan, every
// host's view), and reports frames per wall and per CPU second and the
// ratio of its CPU to pcapgo's raw read of the same file in the same
// iteration.
func BenchmarkCheckPorts(b *testing.B) {
	dir := b.TempDir()
	src, path := filepath.Join(dir, "one.pcapng"), filepath.Join(dir, "ports.pcapng")
	writeBenchCapture(b, src, 300_000, 300, checkGap)
	writePortsCapture(b, src, path)
	prof, _ := spec.LookupProfile("linux")
	rules, _ := spec.Select(spec.Rules(), "", spec.Should, "linux")
	var check, raw pass
	for b.Loop() {
		raw.add(timed(func() int { return rawRead(b, path) }))
		check.add(timed(func() int {
			lay, _, err := readLayout(context.Background(), path, -1)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := planCapture("ports", lay)
			if err != nil {
				b.Fatal(err)
			}
			run, err := runRules(path, pcap.ReaderOptions{ICMP: true}, plan, spec.Judge{Profile: "linux", Params: prof.Params, Rules: rules})
			if err != nil {
				b.Fatal(err)
			}
			if len(run.hosts) != 9 || run.rep.Violated() {
				b.Fatalf("%d hosts, violated %v: want 9 clean host views", len(run.hosts), run.rep.Violated())
			}
			return lay.homa
		}))
	}
	cw, cc := check.rate()
	b.ReportMetric(cw, "check-frames/s")
	b.ReportMetric(cc, "check-frames/cpu-s")
	b.ReportMetric(check.cpu.Seconds()/raw.cpu.Seconds(), "check/raw-cpu")
}

// BenchmarkHostsStream judges every host of a generated capture (300,000
// packets, 9 hosts) on its own link the way a scenario run judges its
// sent and delivered captures (spec.Judge.HostsStream, the one-view
// capture standing for both), and reports host-view events per wall
// second and the ratio of its CPU to pcapgo's raw read of both files in
// the same iteration.
func BenchmarkHostsStream(b *testing.B) {
	path := filepath.Join(b.TempDir(), "one.pcapng")
	writeBenchCapture(b, path, 300_000, 300, checkGap)
	prof, _ := spec.LookupProfile("linux")
	rules, _ := spec.Select(spec.Rules(), "", spec.Should, "linux")
	var hosts []netip.Addr
	for i := 1; i <= 8; i++ {
		hosts = append(hosts, netip.AddrFrom4([4]byte{198, 18, 0, byte(i)}))
	}
	hosts = append(hosts, netip.MustParseAddr("198.18.0.100"))
	open := func() (spec.EventStream, error) { return pcap.OpenEventStream(path, pcap.ReaderOptions{}) }
	var check, raw pass
	for b.Loop() {
		raw.add(timed(func() int { return rawRead(b, path) + rawRead(b, path) }))
		check.add(timed(func() int {
			j := spec.Judge{Profile: "linux", Params: prof.Params, Rules: rules}
			hrs, err := j.HostsStream(context.Background(), open, open, hosts)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, hr := range hrs {
				if len(hr.Violations) > 0 {
					b.Fatalf("%v: %v", hr.Host, hr.Violations[0])
				}
				n += hr.Report.Events
			}
			return n
		}))
	}
	cw, cc := check.rate()
	b.ReportMetric(cw, "view-events/s")
	b.ReportMetric(cc, "view-events/cpu-s")
	b.ReportMetric(check.cpu.Seconds()/raw.cpu.Seconds(), "check/raw-cpu")
}
