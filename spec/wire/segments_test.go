package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// gsoPrefixHex is the 52-byte DATA prefix that GSO replicates in a
// non-hijacked multi-segment frame (facts.md §1.7): doff 13 words (0xD0),
// sequence = offset of the batch's first segment (40000 = U, the first
// scheduled byte of a 100000-byte message).
const gsoPrefixHex = `
8001 0fa0        // 0 sport, 2 dport
00009c40         // 4 sequence 40000
000000 10        // 8 ack[3], 11 type DATA
d0 06 0000       // 12 doff 0xD0, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000064 // 20 sender_id 100
000186a0         // 28 message_length 100000
00009c40         // 32 incoming 40000
0000000000000000 // 36 ack.client_id
0000 0001        // 44 ack.server_port, 46 cutoff_version 1
00 000000        // 48 retransmit, 49 pad
`

// gsoFrame builds a pre-segmentation GSO frame by hand: the 52-byte prefix,
// then for each segment a 4-byte big-endian seg.offset and its data bytes
// (segment k filled with 0xA0+k, so no data byte run looks like an offset).
func gsoFrame(t testing.TB, prefixHex string, segOffsets []uint32, sizes []int) []byte {
	t.Helper()
	b := hexBytes(t, prefixHex)
	if len(b) != 52 {
		t.Fatalf("prefix has %d bytes, want 52", len(b))
	}
	for k, off := range segOffsets {
		b = append(b, byte(off>>24), byte(off>>16), byte(off>>8), byte(off))
		b = append(b, bytes.Repeat([]byte{0xA0 + byte(k)}, sizes[k])...)
	}
	return b
}

// threeSegFrame is a 3-segment frame with max_seg_data 1424 and a short last
// segment of 100 bytes: 52 + (4+1424) + (4+1424) + (4+100) = 3012 bytes.
func threeSegFrame(t testing.TB) []byte {
	b := gsoFrame(t, gsoPrefixHex, []uint32{40000, 41424, 42848}, []int{1424, 1424, 100})
	if len(b) != 3012 {
		t.Fatalf("frame has %d bytes, want 3012", len(b))
	}
	return b
}

func wantThreeSegs(b []byte) []Segment {
	return []Segment{
		{Offset: 40000, Length: 1424, Data: b[56:1480]},
		{Offset: 41424, Length: 1424, Data: b[1484:2908]},
		{Offset: 42848, Length: 100, Data: b[2912:3012]},
	}
}

func seg(off uint32, n int, data []byte) Segment { return Segment{Offset: off, Length: n, Data: data} }

func assumed(s ...Segment) []Segment {
	for i := range s {
		s[i].Assumed = true
	}
	return s
}

func segmentsEqual(a, b []Segment) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Offset != b[i].Offset || a[i].Length != b[i].Length || a[i].Assumed != b[i].Assumed || !bytes.Equal(a[i].Data, b[i].Data) ||
			(a[i].Data == nil) != (b[i].Data == nil) {
			return false
		}
	}
	return true
}

func showSegs(s []Segment) string {
	out := "["
	for _, x := range s {
		out += fmt.Sprintf(" {off %d len %d data %d nil=%v assumed=%v}", x.Offset, x.Length, len(x.Data), x.Data == nil, x.Assumed)
	}
	return out + " ]"
}

func TestSegmentsThreeSegmentFrame(t *testing.T) {
	b := threeSegFrame(t)
	p := mustDecode(t, b, DecodeOptions{IPProto: 146})
	d := p.Data()
	if d.Offset() != 40000 || d.SegOffset() != 40000 || d.DataLen() != 2956 {
		t.Fatalf("Offset %d SegOffset %d DataLen %d, want 40000 40000 2956", d.Offset(), d.SegOffset(), d.DataLen())
	}
	if !d.IsGSO(1424) {
		t.Errorf("IsGSO(1424): got false, want true")
	}
	got, err := d.Segments(nil, MaxSegDataIPv4)
	if err != nil || !segmentsEqual(got, wantThreeSegs(b)) {
		t.Errorf("Segments(1424): got %s, %v; want %s", showSegs(got), err, showSegs(wantThreeSegs(b)))
	}
	// Appending to a non-empty dst keeps what was there.
	pre := []Segment{{Offset: 7, Length: 7}}
	got, err = d.Segments(pre, 1424)
	if err != nil || len(got) != 4 || got[0].Offset != 7 || got[0].Length != 7 || !segmentsEqual(got[1:], wantThreeSegs(b)) {
		t.Errorf("Segments(dst with 1 entry): got %s, %v", showSegs(got), err)
	}
}

func TestSegmentsTwoFullSegments(t *testing.T) {
	b := gsoFrame(t, gsoPrefixHex, []uint32{40000, 41424}, []int{1424, 1424})
	d := mustDecode(t, b, DecodeOptions{}).Data()
	want := []Segment{{Offset: 40000, Length: 1424, Data: b[56:1480]}, {Offset: 41424, Length: 1424, Data: b[1484:2908]}}
	if got, err := d.Segments(nil, 1424); err != nil || !segmentsEqual(got, want) {
		t.Errorf("got %s, %v; want %s", showSegs(got), err, showSegs(want))
	}
}

// TestSegmentsWrongMaxSegData: when the captured interleaved headers
// contradict maxSegData, the real segment size (1424) is inferred.
func TestSegmentsWrongMaxSegData(t *testing.T) {
	b := threeSegFrame(t)
	d := mustDecode(t, b, DecodeOptions{}).Data()
	for _, m := range []int{1, 2, 100, 1000, 1400, MaxSegDataIPv6, 1423, 1425, 1428, 1500, 2000, 2951} {
		got, err := d.Segments(nil, m)
		if err != nil || !segmentsEqual(got, wantThreeSegs(b)) {
			t.Errorf("Segments(%d): got %s, %v; want %s", m, showSegs(got), err, showSegs(wantThreeSegs(b)))
		}
	}
	// maxSegData at least the data length means "not GSO" (IsGSO doc): one
	// segment spanning the whole frame, interleaved headers included.
	for _, m := range []int{2956, 5000, 0, -1} {
		if d.IsGSO(m) {
			t.Errorf("IsGSO(%d): got true, want false", m)
		}
		got, err := d.Segments(nil, m)
		want := []Segment{{Offset: 40000, Length: 2956, Data: b[56:]}}
		if err != nil || !segmentsEqual(got, want) {
			t.Errorf("Segments(%d): got %s, %v; want %s", m, showSegs(got), err, showSegs(want))
		}
	}
}

// TestSegmentsSingleSegmentWrongMaxSegData: a fully captured post-GSO
// segment (doff 0xD0, 1424 data bytes, no interleaved header) decoded with a
// max_seg_data that is too small (e.g. the IPv6 value 1404 for an IPv4
// capture) is explained by one segment of 1424 bytes; Segments must not
// report ErrSegments ("when no segment size explains the frame").
func TestSegmentsSingleSegmentWrongMaxSegData(t *testing.T) {
	b := gsoFrame(t, gsoPrefixHex, []uint32{2848}, []int{1424})
	d := mustDecode(t, b, DecodeOptions{}).Data()
	want := []Segment{{Offset: 2848, Length: 1424, Data: b[56:]}}
	if got, err := d.Segments(nil, 1424); err != nil || !segmentsEqual(got, want) {
		t.Fatalf("Segments(1424): got %s, %v; want %s", showSegs(got), err, showSegs(want))
	}
	for _, m := range []int{MaxSegDataIPv6, 1000, 1} {
		got, err := d.Segments(nil, m)
		if err != nil || !segmentsEqual(got, want) {
			t.Errorf("Segments(%d) of a single 1424-byte segment: got %s, %v; want %s", m, showSegs(got), err, showSegs(want))
		}
	}
}

// TestSegmentsSnaplen: a frame cut by the capture snap length. WireLen
// gives the real size; segments past the capture have nil Data.
func TestSegmentsSnaplen(t *testing.T) {
	full := threeSegFrame(t)
	for _, tc := range []struct {
		caplen int
		want   []Segment
	}{
		// No interleaved header captured: the segments are Assumed.
		{256, assumed(seg(40000, 1424, full[56:256]), seg(41424, 1424, nil), seg(42848, 100, nil))},
		{1480, assumed(seg(40000, 1424, full[56:1480]), seg(41424, 1424, nil), seg(42848, 100, nil))},
		// header of segment 2 only partly captured
		{1482, assumed(seg(40000, 1424, full[56:1480]), seg(41424, 1424, nil), seg(42848, 100, nil))},
		{1500, []Segment{seg(40000, 1424, full[56:1480]), seg(41424, 1424, full[1484:1500]), seg(42848, 100, nil)}},
		{2950, []Segment{seg(40000, 1424, full[56:1480]), seg(41424, 1424, full[1484:2908]), seg(42848, 100, full[2912:2950])}},
		{3011, []Segment{seg(40000, 1424, full[56:1480]), seg(41424, 1424, full[1484:2908]), seg(42848, 100, full[2912:3011])}},
	} {
		b := exact(full[:tc.caplen])
		p := mustDecode(t, b, DecodeOptions{WireLen: 3012})
		if !p.Truncated() || p.Data().DataLen() != 2956 {
			t.Errorf("caplen %d: Truncated %v DataLen %d, want true 2956", tc.caplen, p.Truncated(), p.Data().DataLen())
		}
		// the expected slices must point into b, compare by content
		got, err := p.Data().Segments(nil, 1424)
		if err != nil || !segmentsEqual(got, tc.want) {
			t.Errorf("caplen %d: got %s, %v; want %s", tc.caplen, showSegs(got), err, showSegs(tc.want))
		}
		// While no interleaved header is captured nothing contradicts
		// maxSegData, so it is used as given (here wrongly, 1400).
		if tc.caplen < 56+1400+4 {
			want := assumed(seg(40000, 1400, full[56:min(tc.caplen, 1456)]), seg(41400, 1400, nil), seg(42800, 148, nil))
			got, err := p.Data().Segments(nil, 1400)
			if err != nil || !segmentsEqual(got, want) {
				t.Errorf("caplen %d, maxSegData 1400, no header captured: got %s, %v; want %s", tc.caplen, showSegs(got), err, showSegs(want))
			}
		}
		// Once a later header is captured, a wrong maxSegData is corrected.
		if tc.caplen >= 1484 {
			got, err := p.Data().Segments(nil, 1400)
			if err != nil || !segmentsEqual(got, tc.want) {
				t.Errorf("caplen %d, maxSegData 1400: got %s, %v; want %s", tc.caplen, showSegs(got), err, showSegs(tc.want))
			}
		}
	}
}

// TestSegmentsRealSnaplenFrame: linux-6.13-proto146/b-500k-grants.pcap
// frame 3 (snaplen 256: 222 of 1480 transport bytes): a post-GSO segment.
func TestSegmentsRealSnaplenFrame(t *testing.T) {
	b := hexBytes(t, realGSOSegment613Hex)
	if len(b) != 222 {
		t.Fatalf("vector has %d bytes, want 222", len(b))
	}
	p := mustDecode(t, b, DecodeOptions{IPProto: 146, WireLen: 1480})
	d := p.Data()
	if d.Common().Doff() != 0xD0 || d.MessageLength() != 500000 || d.Incoming() != 40000 || d.Offset() != 0 {
		t.Errorf("doff %#x msglen %d incoming %d offset %d, want 0xd0 500000 40000 0",
			d.Common().Doff(), d.MessageLength(), d.Incoming(), d.Offset())
	}
	got, err := d.Segments(nil, MaxSegDataIPv4)
	want := []Segment{{Offset: 0, Length: 1424, Data: b[56:]}}
	if err != nil || !segmentsEqual(got, want) {
		t.Errorf("got %s, %v; want %s", showSegs(got), err, showSegs(want))
	}
}

// TestSegmentsOffsetSentinel: seg.offset 0xFFFFFFFF means the offset is in
// sequence (facts.md §1.6), for single packets and for GSO frames.
func TestSegmentsOffsetSentinel(t *testing.T) {
	b := gsoFrame(t, gsoPrefixHex, []uint32{0xFFFFFFFF, 41424, 42848}, []int{1424, 1424, 100})
	d := mustDecode(t, b, DecodeOptions{}).Data()
	if d.SegOffset() != 0xFFFFFFFF || d.Offset() != 40000 {
		t.Errorf("SegOffset %#x Offset %d, want 0xffffffff 40000", d.SegOffset(), d.Offset())
	}
	got, err := d.Segments(nil, 1424)
	if err != nil || !segmentsEqual(got, wantThreeSegs(b)) {
		t.Errorf("got %s, %v; want %s", showSegs(got), err, showSegs(wantThreeSegs(b)))
	}
	// A real offset in seg.offset wins over sequence, even 0.
	b[52], b[53], b[54], b[55] = 0, 0, 0, 0
	if off := mustDecode(t, b, DecodeOptions{}).Data().Offset(); off != 0 {
		t.Errorf("seg.offset 0: Offset got %d, want 0", off)
	}
	// 0xFFFFFFFE is not the sentinel.
	b[52], b[53], b[54], b[55] = 0xFF, 0xFF, 0xFF, 0xFE
	if off := mustDecode(t, b, DecodeOptions{}).Data().Offset(); off != 0xFFFFFFFE {
		t.Errorf("seg.offset 0xfffffffe: Offset got %#x, want 0xfffffffe", off)
	}
	single := hexBytes(t, dataCurrentHex)
	sd := mustDecode(t, single, DecodeOptions{}).Data()
	segs, err := sd.Segments(nil, 1424)
	if err != nil || len(segs) != 1 || segs[0].Offset != 11392 || segs[0].Length != 6 || string(segs[0].Data) != "hello!" {
		t.Errorf("single packet: got %s, %v; want {11392 6 hello!}", showSegs(segs), err)
	}
}

// realHijackedDataHex: linux-6.13-proto146/f4-hijack-tcp.pcap frame 17,
// first 64 of 1480 bytes: hijacked GSO-split DATA (IP protocol 6), doff 14,
// seg.offset -1, sequence 1424 = this segment's own offset.
const realHijackedDataHex = "80010fa00000059000000010e0060000e42fb97d000000000000000c0000753000007530000000000000000a0fa0000100000000fffffffff3fa01080f161d24"

// realGSOSegment613Hex: see TestSegmentsRealSnaplenFrame.
const realGSOSegment613Hex = "80000fa00000000000000010d00600000000b97d00000000000000020007a12000009c40000000000000000000000000000000000000000020a10700640000003b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d14" +
	"1b222930373e454c535a61686f767d848b9299a0a7aeb5bcc3cad1d8dfe6edf4fb020910171e252c333a41484f565d646b727980878e959ca3aab1b8bfc6cdd4dbe2e9f0f7fe050c131a21282f363d444b525960676e757c838a91989fa6adb4bbc2c9d0d7dee5ecf3fa01080f161d242b323940474e555c636a71787f86"

// TestSegmentsHijacked: a hijacked frame (doff 0xE0) never has interleaved
// headers and stays one segment, whatever its size.
func TestSegmentsHijacked(t *testing.T) {
	b := hexBytes(t, realHijackedDataHex)
	p := mustDecode(t, b, DecodeOptions{IPProto: 6, WireLen: 1480})
	if p.Version() != VersionCurrent || !IsHijacked(b) {
		t.Errorf("Version %v IsHijacked %v, want current true", p.Version(), IsHijacked(b))
	}
	d := p.Data()
	if d.Offset() != 1424 || d.MessageLength() != 30000 || d.AckClientID() != 10 || d.AckServerPort() != 4000 ||
		d.CutoffVersion() != 1 || d.Common().Checksum() != 0xe42f {
		t.Errorf("got offset %d msglen %d ack %d/%d cutoff %d checksum %#x, want 1424 30000 10/4000 1 0xe42f",
			d.Offset(), d.MessageLength(), d.AckClientID(), d.AckServerPort(), d.CutoffVersion(), d.Common().Checksum())
	}
	for _, m := range []int{1424, 1000, 1} {
		if d.IsGSO(m) {
			t.Errorf("IsGSO(%d): got true for doff 0xE0", m)
		}
		got, err := d.Segments(nil, m)
		want := []Segment{{Offset: 1424, Length: 1424, Data: b[56:]}}
		if err != nil || !segmentsEqual(got, want) {
			t.Errorf("Segments(%d): got %s, %v; want %s", m, showSegs(got), err, showSegs(want))
		}
	}
	// A pre-TSO hijacked super-packet on the sending host (doff 0xE0, 3 full
	// segments of data, seg.offset -1): still one segment.
	big := hexBytes(t, realHijackedDataHex)[:56]
	big = append(big, bytes.Repeat([]byte{0x55}, 3*1424)...)
	d = mustDecode(t, big, DecodeOptions{IPProto: 6}).Data()
	got, err := d.Segments(nil, 1424)
	if err != nil || len(got) != 1 || got[0].Offset != 1424 || got[0].Length != 3*1424 || len(got[0].Data) != 3*1424 {
		t.Errorf("hijacked super-packet: got %s, %v; want one segment {1424 4272}", showSegs(got), err)
	}
}

// TestSegmentsBadLayout: headers that no segment size explains give a
// *DecodeError wrapping ErrSegments and leave dst as it was.
func TestSegmentsBadLayout(t *testing.T) {
	b := gsoFrame(t, gsoPrefixHex, []uint32{40000, 41424, 99999}, []int{1424, 1424, 100})
	d := mustDecode(t, b, DecodeOptions{}).Data()
	dst := []Segment{{Offset: 1, Length: 2}}
	got, err := d.Segments(dst, 1424)
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrSegments) {
		t.Fatalf("got %s, %v; want ErrSegments", showSegs(got), err)
	}
	if de.Type != TypeData || de.Field != "seg.offset" {
		t.Errorf("DecodeError: got Type %v Field %q, want DATA seg.offset", de.Type, de.Field)
	}
	// The detail names the first header that disagrees with 1424-byte
	// segments: byte 2908 holds 99999 where 42848 was expected.
	for _, w := range []string{"2908", "99999", "42848", "1424"} {
		if !strings.Contains(de.Detail, w) {
			t.Errorf("Detail %q does not mention %s", de.Detail, w)
		}
	}
	if !strings.HasPrefix(err.Error(), "bad GSO DATA frame: ") {
		t.Errorf("Error(): got %q, want prefix %q", err.Error(), "bad GSO DATA frame: ")
	}
	if len(got) != 1 || got[0].Offset != 1 || got[0].Length != 2 {
		t.Errorf("dst changed on error: got %s", showSegs(got))
	}
}

// TestSegmentsShortTail: 1 to 4 bytes after a frame's last whole segment
// hold neither a seg header and data nor a segment: 1425 bytes in a
// one-segment frame are one oversize segment (HOMA-WIRE-013 judges it),
// not a 1424-byte segment with a byte dropped, and two whole segments
// with 2 more bytes are a bad layout.
func TestSegmentsShortTail(t *testing.T) {
	for _, extra := range []int{1, 4} {
		b := gsoFrame(t, gsoPrefixHex, []uint32{40000}, []int{1424 + extra})
		d := mustDecode(t, b, DecodeOptions{}).Data()
		want := []Segment{{Offset: 40000, Length: 1424 + extra, Data: b[56:]}}
		if got, err := d.Segments(nil, 1424); err != nil || !segmentsEqual(got, want) {
			t.Errorf("one segment of %d bytes: got %s, %v; want %s", 1424+extra, showSegs(got), err, showSegs(want))
		}
	}
	b := append(gsoFrame(t, gsoPrefixHex, []uint32{40000, 41424}, []int{1424, 1424}), 0xEE, 0xEE)
	d := mustDecode(t, b, DecodeOptions{}).Data()
	got, err := d.Segments(nil, 1424)
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrSegments) {
		t.Fatalf("two segments and 2 bytes: got %s, %v; want ErrSegments", showSegs(got), err)
	}
	if want := "2 bytes after the last 1424-byte segment (byte 2908) are too few"; !strings.HasPrefix(de.Detail, want) {
		t.Errorf("Detail %q, want prefix %q", de.Detail, want)
	}
}

func TestSegmentsNoAlloc(t *testing.T) {
	b := threeSegFrame(t)
	d := mustDecode(t, b, DecodeOptions{}).Data()
	dst := make([]Segment, 0, 8)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		dst, err = d.Segments(dst[:0], 1424)
		if err != nil || len(dst) != 3 {
			t.Fatalf("Segments: %v, %d segments", err, len(dst))
		}
	})
	if allocs != 0 {
		t.Errorf("Segments into a reused dst: got %v allocs/op, want 0", allocs)
	}
}
