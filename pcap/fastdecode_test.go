package pcap

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

// fastDecodeFrames returns frames of the shapes fastDecode reads and of
// shapes next to them that it leaves to gopacket's parser, on an
// Ethernet link (raw: the same frames without their Ethernet header):
// Homa over IPv4 and IPv6, cut by a snap length, padded past the IP
// length, with a TSO's length 0, IP options, a fragment, a version nibble
// that disagrees with the EtherType, a hop-by-hop header, a jumbogram's
// length 0, TCP, UDP, a tag, and every prefix of the first frame.
func fastDecodeFrames(t testing.TB) (eth [][]byte) {
	grant := &wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 7}, Offset: 123456, Priority: 3}
	data := &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 6}, MessageLength: 3000, Incoming: 3000,
		SegOffset: wire.SegOffsetInSequence, Payload: bytes.Repeat([]byte{7}, 100)}
	o := wire.EncodeOptions{FixLengths: true, SetMarks: true}
	v4 := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 5}, data, o)
	v6 := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 5}, grant, o)
	edit := func(b []byte, fn func(b []byte) []byte) []byte { return fn(bytes.Clone(b)) }
	eth = [][]byte{
		v4, v6,
		buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, grant, o),
		buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B}, data, o),
		v4[:60], v6[:70], // cut by a snap length
		append(bytes.Clone(v4), 0, 0, 0, 0), append(bytes.Clone(v6), 1, 2, 3), // trailer past the IP length
		edit(v4, func(b []byte) []byte { b[16], b[17] = 0, 0; return b }),                      // IPv4 total length 0 (TSO)
		edit(v4, func(b []byte) []byte { b[16], b[17] = 0, 19; return b }),                     // total length below the header
		edit(v4, func(b []byte) []byte { b[16], b[17] = 0, 21; return b }),                     // total length one past it
		edit(v4, func(b []byte) []byte { b[20] |= 0x20; return b }),                            // more fragments
		edit(v4, func(b []byte) []byte { b[21] = 1; return b }),                                // fragment offset
		edit(v4, func(b []byte) []byte { b[20] |= 0x40; return b }),                            // don't fragment
		edit(v4, func(b []byte) []byte { b[20] |= 0x80; return b }),                            // the reserved flag
		edit(v4, func(b []byte) []byte { b[14] = 0x46; return b }),                             // options
		edit(v4, func(b []byte) []byte { b[14] = 0x65; return b }),                             // version 6 under EtherType IPv4
		edit(v4, func(b []byte) []byte { b[23] = 253; return b }),                              // IP protocol 253
		edit(v4, func(b []byte) []byte { b[23] = 6; return b }),                                // TCP
		edit(v4, func(b []byte) []byte { b[23] = 17; return b }),                               // UDP
		edit(v4, func(b []byte) []byte { b[12], b[13] = 0x86, 0xdd; return b }),                // EtherType IPv6, IPv4 header
		edit(v6, func(b []byte) []byte { b[18], b[19] = 0, 0; return b }),                      // IPv6 payload length 0
		edit(v6, func(b []byte) []byte { b[20] = 0; return b }),                                // hop-by-hop header
		edit(v6, func(b []byte) []byte { b[20] = 253; return b }),                              // next header 253
		edit(v6, func(b []byte) []byte { b[14] = 0x40 | b[14]&0x0f; return b }),                // version 4 under EtherType IPv6
		edit(v6, func(b []byte) []byte { binary.BigEndian.PutUint16(b[18:], 9000); return b }), // payload length past the frame
		append(append(bytes.Clone(v4[:12]), 0x81, 0, 0, 5), v4[12:]...),                        // an 802.1Q tag
	}
	for n := range len(v4) {
		eth = append(eth, v4[:n])
	}
	for n := range len(v6) {
		eth = append(eth, v6[:n])
	}
	return eth
}

// fastDecodeAsParser decodes frame on link type lt with fastDecode and,
// in another linkParser, with gopacket's parser alone, and fails t when
// they differ in the result or in any layer decoded. It returns whether
// fastDecode read the frame.
func fastDecodeAsParser(t *testing.T, lt layers.LinkType, frame []byte) bool {
	t.Helper()
	fast, slow := newLinkParser(lt), newLinkParser(lt)
	slow.fast = fastNone
	took := fast.fastDecode(frame) != 0
	fast = newLinkParser(lt)
	v, ok := fast.decode(frame)
	sv, sok := slow.decode(frame)
	if v != sv || ok != sok || fast.kind != slow.kind || !slices.Equal(fast.decoded, slow.decoded) {
		t.Fatalf("link %v frame %x: fast path %d %v %q %v, parser %d %v %q %v", lt, frame, v, ok, fast.kind, fast.decoded, sv, sok, slow.kind, slow.decoded)
	}
	for _, l := range slow.decoded {
		var a, b any
		switch l {
		case layers.LayerTypeEthernet:
			a, b = fast.eth, slow.eth
		case layers.LayerTypeIPv4:
			fa, sa := fast.ip4, slow.ip4
			if len(fa.Options) == 0 && len(sa.Options) == 0 {
				fa.Options, sa.Options = nil, nil
			}
			a, b = fa, sa
		case layers.LayerTypeIPv6:
			a, b = fast.ip6, slow.ip6
		default:
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("link %v frame %x: %v layer: fast path %+v, parser %+v", lt, frame, l, a, b)
		}
	}
	return took
}

// TestFastDecodeAsParser: fastDecode reads the frames Homa captures are
// made of (Ethernet and raw IP links, IPv4 and IPv6, cut or padded)
// exactly as gopacket's parser does, and leaves every other shape to the
// parser.
func TestFastDecodeAsParser(t *testing.T) {
	took := 0
	for _, f := range fastDecodeFrames(t) {
		if fastDecodeAsParser(t, layers.LinkTypeEthernet, f) {
			took++
		}
		if len(f) >= 14 && fastDecodeAsParser(t, layers.LinkTypeRaw, f[14:]) {
			took++
		}
	}
	// The first 4 frames, the 2 cut, the 2 padded, one past the header,
	// don't fragment, reserved flag, 253 over IPv4 and IPv6, the payload
	// length past the frame, each on both links; the prefixes of v4 and
	// v6 that hold the IP header.
	if took == 0 {
		t.Fatal("fast path read no frame")
	}
	frames := fastDecodeFrames(t)
	for i, f := range frames[:27] {
		// Homa over IPv4 and IPv6, cut, padded, a length one past the
		// header, DF, the reserved flag, protocol 253, a payload length
		// past the frame: read; the rest: left to the parser.
		want := i <= 7 || i == 10 || i == 13 || i == 14 || i == 17 || i == 23 || i == 25
		if got := newLinkParser(layers.LinkTypeEthernet).fastDecode(f) != 0; got != want {
			t.Errorf("frame %d (%x): fast path %v, want %v", i, f, got, want)
		}
	}
}

// FuzzFastDecode: on any bytes, as an Ethernet or a raw IP frame,
// decode with fastDecode gives what gopacket's parser gives, and
// neither panics.
func FuzzFastDecode(f *testing.F) {
	for _, fr := range fastDecodeFrames(f) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fastDecodeAsParser(t, layers.LinkTypeEthernet, frame)
		fastDecodeAsParser(t, layers.LinkTypeRaw, frame)
	})
}
