package cli

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// writeBenchCapture writes a pcapng of about n Homa packets: RPCs from 8
// client hosts to one server, conc of them in flight at once, each a
// 100000-byte request (unscheduled 0..40000, then GRANTed in 10000-byte
// steps at priority 0) and a 100-byte response, packets of the live RPCs
// interleaved round-robin, 2 µs apart, cut to a 128-byte snap length.
func writeBenchCapture(b *testing.B, path string, n, conc int) int {
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
		ts = ts.Add(2 * time.Microsecond)
		if err := fw.WritePacket(0, ts, fr[:min(len(fr), 128)], len(fr), ""); err != nil {
			b.Fatal(err)
		}
		written++
	}
	var nextID uint64 = 2
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
				emit(r.client, server, prio, &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: r.id, Sequence: r.sent},
					MessageLength: msg, Incoming: 40000, CutoffVersion: 1, SegOffset: wire.SegOffsetInSequence, Payload: payload[:l]})
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

// BenchmarkCheck1M checks a generated capture of 1,000,000 Homa packets
// with 1000 RPCs in flight against every rule, and reports packets/s, peak
// heap and the ratio to decoding alone (reading the same capture without
// checking, measured in the same run).
func BenchmarkCheck1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.pcapng")
	rpcs := writeBenchCapture(b, path, 1_000_000, 1000)
	st, _ := os.Stat(path)
	b.Logf("capture: %d MB, %d RPCs started", st.Size()>>20, rpcs)
	prof, _ := spec.LookupProfile("linux")
	params := prof.Params

	decodeOnly := func() (int, time.Duration) {
		start := time.Now()
		n := 0
		if _, err := streamEvents(path, pcap.ReaderOptions{}, func(*spec.Event) { n++ }); err != nil {
			b.Fatal(err)
		}
		return n, time.Since(start)
	}
	var peak uint64
	check := func() (int, time.Duration, *spec.Report) {
		c := spec.NewChecker("linux", params, spec.Rules())
		start := time.Now()
		n := 0
		var ms runtime.MemStats
		if _, err := streamEvents(path, pcap.ReaderOptions{}, func(e *spec.Event) {
			c.Feed(e)
			n++
			if n%65536 == 0 {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}); err != nil {
			b.Fatal(err)
		}
		return n, time.Since(start), c.Finish()
	}
	var nd, nc int
	var td, tc time.Duration
	var rep *spec.Report
	for b.Loop() {
		n1, d1 := decodeOnly()
		n2, d2, r := check()
		nd, nc, td, tc, rep = nd+n1, nc+n2, td+d1, tc+d2, r
	}
	if rep.Violated() {
		var buf bytes.Buffer
		for _, v := range rep.Violations[:min(5, len(rep.Violations))] {
			fmt.Fprintln(&buf, v)
		}
		b.Fatalf("generated capture violates rules:\n%s", buf.String())
	}
	b.ReportMetric(float64(nc)/tc.Seconds(), "check-pkts/s")
	b.ReportMetric(float64(nd)/td.Seconds(), "decode-pkts/s")
	b.ReportMetric(tc.Seconds()/td.Seconds(), "check/decode-time")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
