package netem

import (
	"encoding/binary"
	"math"
	"testing"
)

// netemOpts builds a netem TCA_OPTIONS payload: tc_netem_qopt then the
// given attributes (type, value).
func netemOpts(q [6]uint32, attrs ...netemTLV) []byte {
	b := make([]byte, netemQoptLen)
	for i, v := range q {
		binary.NativeEndian.PutUint32(b[4*i:], v)
	}
	for _, a := range attrs {
		h := make([]byte, 4)
		binary.NativeEndian.PutUint16(h, uint16(4+len(a.val)))
		binary.NativeEndian.PutUint16(h[2:], a.typ)
		b = append(b, h...)
		b = append(b, a.val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	return b
}

func u32s(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.NativeEndian.PutUint32(b[4*i:], x)
	}
	return b
}

func u64(v uint64) []byte { b := make([]byte, 8); binary.NativeEndian.PutUint64(b, v); return b }

func TestParseNetemOptions(t *testing.T) {
	// What the kernel dumps for tc's "delay 5ms 1ms loss 5% duplicate 1%
	// reorder 25% gap 5 corrupt 0.1%": 32-bit ticks (15.625 per µs) and
	// the 64-bit ns values.
	b := netemOpts([6]uint32{78125, 1000, prob32(0.05), 5, prob32(0.01), 15625},
		netemTLV{tcaNetemCorr, u32s(0, 0, 0)},
		netemTLV{tcaNetemReorder, u32s(prob32(0.25), 0)},
		netemTLV{tcaNetemCorrupt, u32s(prob32(0.001), 0)},
		netemTLV{tcaNetemLatency64, u64(5e6)},
		netemTLV{tcaNetemJitter64, u64(1e6)})
	q, err := ParseNetemOptions(b, 64)
	if err != nil {
		t.Fatal(err)
	}
	q.Handle, q.Parent = "10:", "1:10"
	if want := "netem 10: parent 1:10 limit 1000 delay 5ms  1ms loss 5% duplicate 1% reorder 25% corrupt 0.1% gap 5"; q.String() != want {
		t.Errorf("got  %q\nwant %q", q.String(), want)
	}
	if q.DelayNS != 5e6 || q.JitterNS != 1e6 || math.Abs(q.LossPct-5) > 1e-6 || math.Abs(q.ReorderPct-25) > 1e-6 {
		t.Errorf("values %+v", q)
	}
	// Without the 64-bit attributes the ticks are converted.
	q, _ = ParseNetemOptions(netemOpts([6]uint32{78125, 1000, 0, 0, 0, 15625}), 64)
	if q.DelayNS != 5e6 || q.JitterNS != 1e6 {
		t.Errorf("from ticks: delay %d jitter %d ns", q.DelayNS, q.JitterNS)
	}
	// Gilbert-Elliott: TCA_NETEM_LOSS holding NETEM_LOSS_GE {p, r, h, k1}.
	ge := netemOpts([6]uint32{0, 1000, 0, 0, 0, 0}, netemTLV{tcaNetemLoss, netemOpts([6]uint32{}, netemTLV{netemLossGEAttr, u32s(prob32(0.01), prob32(0.3), 0, 0)})[netemQoptLen:]})
	q, err = ParseNetemOptions(ge, 64)
	if err != nil || q.GE == nil {
		t.Fatalf("GE: %+v, %v", q, err)
	}
	if got := TCPercent(q.GE.P) + " " + TCPercent(q.GE.R) + " " + TCPercent(q.GE.OneMH) + " " + TCPercent(q.GE.OneMK); got != "1% 30% 100% 0%" {
		t.Errorf("GE = %s", got)
	}
	for _, tc := range []struct {
		ns   int64
		want string
	}{{5e6, "5ms"}, {1500, "1us"}, {960, "0us"}, {98968, "98us"}, {1234567, "1.23ms"}, {1004900, "1ms"}, {2e9, "2s"}, {123456789, "123ms"}} {
		if got := TCTime(tc.ns); got != tc.want {
			t.Errorf("TCTime(%d) = %s, want %s", tc.ns, got, tc.want)
		}
	}
}

func FuzzParseNetemOptions(f *testing.F) {
	f.Add(netemOpts([6]uint32{1, 2, 3, 4, 5, 6}, netemTLV{tcaNetemLoss, []byte{8, 0, 2, 0, 1, 2, 3, 4}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseNetemOptions(b, 64)
		if err == nil {
			_ = q.String()
		}
	})
}
