package pcap

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// benchPackets is the size of the generated benchmark capture.
const benchPackets = 1_000_000

var (
	benchOnce sync.Once
	benchCap  []byte
)

// benchCapture returns a pcapng of benchPackets Homa frames shaped like a
// conformance capture taken with snap length 256: 500 KB requests (DATA of
// 1424 bytes cut to 256 captured bytes), one GRANT per five DATA, and the
// other control types sprinkled in.
func benchCapture(b *testing.B) []byte {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Interface{Name: "bench", SnapLen: 256})
		if err != nil {
			b.Fatal(err)
		}
		sb := gopacket.NewSerializeBuffer()
		spec := FrameSpec{Src: addrA, Dst: addrB, Priority: 4}
		o := wire.EncodeOptions{FixLengths: true, SetMarks: true}
		payload := make([]byte, 1424)
		ts := time.Unix(1700000000, 0)
		ctl := sampleFields()[1:]
		for i := 0; i < benchPackets; i++ {
			var f wire.Fields
			switch {
			case i%6 == 5:
				f = ctl[(i/6)%len(ctl)]
			default:
				off := uint32(i%351) * 1424
				f = &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: uint64(2 + 2*(i/351)), Sequence: off},
					MessageLength: 500000, Incoming: 40000, SegOffset: wire.SegOffsetInSequence, Payload: payload}
			}
			fr, err := BuildFrame(sb, spec, f, o)
			if err != nil {
				b.Fatal(err)
			}
			capLen := min(len(fr), 256)
			if err := w.WritePacket(0, ts.Add(time.Duration(i)*time.Microsecond), fr[:capLen], len(fr), ""); err != nil {
				b.Fatal(err)
			}
		}
		w.Flush()
		benchCap = buf.Bytes()
	})
	return benchCap
}

// BenchmarkReader decodes the whole generated capture per iteration with
// Reader (link + IP + Homa, no per-packet allocation expected) and reports
// packets/s and allocations per packet.
func BenchmarkReader(b *testing.B) {
	data := benchCapture(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	n := 0
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || f.Err != nil {
				b.Fatal(err, f.Err)
			}
			n++
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(n)/el.Seconds(), "pkts/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(n), "allocs/pkt")
}

// BenchmarkReadRawBaseline only reads the frames with pcapgo (no decoding):
// the floor that BenchmarkReader is compared against in the same run.
func BenchmarkReadRawBaseline(b *testing.B) {
	data := benchCapture(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	n := 0
	start := time.Now()
	for b.Loop() {
		ng, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.NgReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, _, err := ng.ZeroCopyReadPacketData()
			if err != nil {
				break
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "pkts/s")
}

// BenchmarkGopacketNewPacketBaseline decodes the same frames with
// gopacket.NewPacket (the generic, allocating path) for comparison.
func BenchmarkGopacketNewPacketBaseline(b *testing.B) {
	Register(RegisterOptions{})
	data := benchCapture(b)
	b.ReportAllocs()
	n := 0
	start := time.Now()
	for b.Loop() {
		ng, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.NgReaderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			d, _, err := ng.ZeroCopyReadPacketData()
			if err != nil {
				break
			}
			p := gopacket.NewPacket(d, layers.LayerTypeEthernet, gopacket.NoCopy)
			if p.Layer(LayerTypeHoma) == nil {
				b.Fatal("no Homa layer")
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "pkts/s")
}
