package pcap

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// dropsPcapng returns a pcapng with two interfaces, one Homa frame on
// each, and interface statistics blocks declaring drops per interface,
// in order (a later block of an interface replaces the earlier: the
// values are totals). A negative count writes a block without isb_ifdrop.
func dropsPcapng(t testing.TB, isbs ...[2]int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "a"}, Interface{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1, 0)
	for i := range 2 {
		frame := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err := w.WritePacket(i, ts, frame, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range isbs {
		if b[1] < 0 {
			err = w.ng.WriteInterfaceStats(int(b[0]), pcapgo.NgInterfaceStatistics{LastUpdate: ts, PacketsDropped: pcapgo.NgNoValue64, PacketsReceived: 10})
		} else {
			err = w.WriteInterfaceStats(int(b[0]), ts, uint64(b[1]))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads every frame of capture b and returns the reader's stats
// and the error that ended the read (nil at EOF).
func readAll(t testing.TB, b []byte) (Stats, error) {
	t.Helper()
	return readEach(t, b, nil)
}

// readEach is readAll calling each, if set, with every frame read.
func readEach(t testing.TB, b []byte, each func(*Frame)) (Stats, error) {
	t.Helper()
	return readEachWith(t, b, ReaderOptions{}, each)
}

// readEachWith is readEach with reader options o.
func readEachWith(t testing.TB, b []byte, o ReaderOptions, each func(*Frame)) (Stats, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), o)
	if err != nil {
		return Stats{}, err
	}
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return r.Stats(), err
		}
		if each != nil {
			each(f)
		}
	}
}

// TestCaptureDropsDeclared: the drops a pcapng declares are its
// interfaces' latest isb_ifdrop, summed; a block without isb_ifdrop
// declares nothing; a second section's interfaces add to the first's by
// index; classic pcap declares none.
func TestCaptureDropsDeclared(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want map[int]uint64
	}{
		{"none", dropsPcapng(t), nil},
		{"zero", dropsPcapng(t, [2]int64{0, 0}, [2]int64{1, 0}), map[int]uint64{0: 0, 1: 0}},
		{"latest per interface", dropsPcapng(t, [2]int64{0, 3}, [2]int64{1, 2}, [2]int64{0, 5}), map[int]uint64{0: 5, 1: 2}},
		{"no isb_ifdrop", dropsPcapng(t, [2]int64{0, -1}), nil},
		{"two sections", append(dropsPcapng(t, [2]int64{0, 5}), dropsPcapng(t, [2]int64{0, 4}, [2]int64{1, 1})...), map[int]uint64{0: 9, 1: 1}},
	} {
		st, err := readAll(t, tc.b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var sum uint64
		for _, d := range tc.want {
			sum += d
		}
		if st.CaptureDrops != sum || !maps.Equal(st.IfaceDrops, tc.want) {
			t.Errorf("%s: drops %d by interface %v, want %d %v", tc.name, st.CaptureDrops, st.IfaceDrops, sum, tc.want)
		}
		if tc.want == nil && st.IfaceDrops != nil {
			t.Errorf("%s: IfaceDrops %v, want nil", tc.name, st.IfaceDrops)
		}
	}
	st, err := readAll(t, classicPcap(t))
	if err != nil || st.CaptureDrops != 0 || st.IfaceDrops != nil {
		t.Errorf("classic pcap: drops %d %v, err %v; want none", st.CaptureDrops, st.IfaceDrops, err)
	}
	// A damaged block may declare any count: the sum saturates.
	st, err = readAll(t, dropsPcapng(t, [2]int64{0, 1 << 62}, [2]int64{1, 1 << 62}, [2]int64{1, 1<<63 - 1}))
	if err != nil || st.CaptureDrops != 1<<62+1<<63-1 {
		t.Errorf("huge: drops %d, err %v", st.CaptureDrops, err)
	}
	huge := append(dropsPcapng(t, [2]int64{0, 1<<63 - 1}), dropsPcapng(t, [2]int64{0, 1<<63 - 1}, [2]int64{1, 1<<63 - 1})...)
	if st, err = readAll(t, huge); err != nil || st.CaptureDrops != ^uint64(0) {
		t.Errorf("overflow: drops %d, err %v; want the largest uint64", st.CaptureDrops, err)
	}
}

// classicPcap returns a classic pcap file of one Homa frame.
func classicPcap(t testing.TB) []byte {
	t.Helper()
	frame := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 7}, sampleFields()[1], wire.EncodeOptions{FixLengths: true, SetMarks: true})
	return classicPcapOf(t, 65535, rec{time.Unix(1, 0), frame, len(frame)})
}

// TestCaptureDropsTruncatedISB: a capture cut anywhere in its statistics
// block, or whose isb_ifdrop option is too short, reads without a panic:
// an error or no drops, never a made-up count.
func TestCaptureDropsTruncatedISB(t *testing.T) {
	full := dropsPcapng(t, [2]int64{1, 7})
	plain := dropsPcapng(t)
	for n := len(plain); n < len(full); n++ {
		st, err := readAll(t, full[:n])
		if err == nil && st.CaptureDrops != 0 {
			t.Errorf("cut at %d of %d: drops %d without an error", n, len(full), st.CaptureDrops)
		}
	}
	// isb_ifdrop (code 5) with a 4-byte value instead of 8.
	short := bytes.Clone(full[len(plain):])
	opt := bytes.Index(short, []byte{5, 0, 8, 0})
	if opt < 0 {
		t.Fatal("no isb_ifdrop option in the block")
	}
	short[opt+2] = 4
	st, err := readAll(t, append(bytes.Clone(plain), short...))
	if err == nil && st.CaptureDrops != 0 {
		t.Errorf("short isb_ifdrop: drops %d without an error", st.CaptureDrops)
	}
}

// TestAnnotateKeepsDrops: an annotated copy declares the drops of the
// capture it copies, so that it is judged the same.
func TestAnnotateKeepsDrops(t *testing.T) {
	var out bytes.Buffer
	if _, err := Annotate(bytes.NewReader(dropsPcapng(t, [2]int64{0, 3}, [2]int64{1, 2}, [2]int64{0, 4})), &out, map[int][]string{1: {"note"}}, ""); err != nil {
		t.Fatal(err)
	}
	st, err := readAll(t, out.Bytes())
	if err != nil || st.CaptureDrops != 6 || !maps.Equal(st.IfaceDrops, map[int]uint64{0: 4, 1: 2}) {
		t.Errorf("annotated copy declares %d %v (err %v), want 6 map[0:4 1:2]", st.CaptureDrops, st.IfaceDrops, err)
	}
	out.Reset()
	if _, err := Annotate(bytes.NewReader(dropsPcapng(t)), &out, nil, ""); err != nil {
		t.Fatal(err)
	}
	if st, err := readAll(t, out.Bytes()); err != nil || st.IfaceDrops != nil {
		t.Errorf("annotated copy of a capture without statistics declares %v (err %v)", st.IfaceDrops, err)
	}
}
