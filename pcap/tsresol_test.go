package pcap

import (
	"bytes"
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
)

// TestBinaryTimestampResolution reads frames of pcapng interfaces whose
// if_tsresol is 2^-20 and 2^-32 s, through the fast path (no options) and
// pcapgo's (a comment), and wants each timestamp exact to below one unit
// of its resolution. pcapgo alone read 2^-20 units as 953 ns (a frame at
// .999 s 0.7 ms early) and 2^-32 units as 0.25 ns (70 ms early), and a
// check of a 2^-32 copy of the lossy 6.13 capture found HOMA-RESEND-001
// violations that the µs original does not have.
func TestBinaryTimestampResolution(t *testing.T) {
	frame := make([]byte, 60)
	type want struct {
		ifc   uint32
		ts    uint64
		exp   uint
		opts  bool
		nanos *big.Int // the exact time in ns, rounded down
	}
	var ws []want
	n := &ngBlocks{order: binary.LittleEndian}
	n.shb()
	n.idb(1, 0x80|32, 0)
	n.idb(1, 0x80|20, 0)
	for _, sec := range []uint64{1700000000, 1700000001} {
		for _, f := range []float64{0, 0.0001, 0.05, 0.5, 0.93, 0.999999} {
			for i, exp := range []uint{32, 20} {
				for _, opts := range []bool{false, true} {
					units := uint64(f * float64(uint64(1)<<exp))
					ts := sec<<exp | units
					var o []byte
					if opts {
						o = append(n.opt(1, []byte("c")), n.opt(0, nil)...)
					}
					n.epb(uint32(i), ts, frame, len(frame), o)
					ns := new(big.Int).Mul(new(big.Int).SetUint64(ts), big.NewInt(1e9))
					ws = append(ws, want{uint32(i), ts, exp, opts, ns.Rsh(ns, exp)})
				}
			}
		}
	}
	r, err := NewReader(bytes.NewReader(n.b), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		var ci gopacket.CaptureInfo
		if _, _, err := r.read(&ci); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		got := new(big.Int).Add(new(big.Int).Mul(big.NewInt(ci.Timestamp.Unix()), big.NewInt(1e9)), big.NewInt(int64(ci.Timestamp.Nanosecond())))
		// 2^-20 units through pcapgo's whole nanoseconds per unit are
		// exact; 2^-32 units come back through its rounding to within a
		// nanosecond.
		d := new(big.Int).Sub(got, w.nanos)
		if d.Sign() < 0 || d.Cmp(big.NewInt(1)) > 0 && w.exp == 32 || d.Sign() != 0 && w.exp == 20 {
			t.Errorf("frame %d (2^-%d, options %v, units %#x): %v, want %s ns (off by %s ns)", i, w.exp, w.opts, w.ts, ci.Timestamp.Format(time.RFC3339Nano), w.nanos, d)
		}
	}
}

// TestBinaryTimeFromPcapgo holds binaryTime, the correction of what
// pcapgo made of a binary timestamp where the raw one cannot be peeked
// (a later section), to the exact time: 2^-20 exactly, 2^-32 to within a
// nanosecond when the previous frame came shortly before, also where
// pcapgo carried the fraction into the next second.
func TestBinaryTimeFromPcapgo(t *testing.T) {
	for _, e := range []uint8{20, 32} {
		for _, f := range []float64{0, 0.001, 0.05, 0.5, 0.93, 0.99, 0.999999} {
			ts := uint64(1700000000)<<e | uint64(f*float64(uint64(1)<<e))
			exact := exactBinaryTime(ts, e, 0)
			// pcapgo: whole nanoseconds per unit, or whole units per
			// nanosecond, and time.Unix's carry.
			mask := uint64(1) << e
			frac := ts & (mask - 1)
			var nsec uint64
			if mask < 1e9 {
				nsec = frac * (1e9 / mask)
			} else {
				nsec = frac / (mask / 1e9)
			}
			pcapgo := time.Unix(int64(ts>>e), int64(nsec)).UTC()
			got := binaryTime(pcapgo, e, exact.Add(-time.Microsecond))
			if d := got.Sub(exact); d < 0 || d > time.Nanosecond || e == 20 && d != 0 {
				t.Errorf("2^-%d at %.6f s: %v from pcapgo's %v, want %v", e, f, got.Format(time.RFC3339Nano), pcapgo.Format(time.RFC3339Nano), exact.Format(time.RFC3339Nano))
			}
		}
	}
}
