package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// ngBlocks builds pcapng blocks in one byte order, for the fast path's
// tests: the lengths are right unless a test edits them.
type ngBlocks struct {
	order interface {
		binary.ByteOrder
		binary.AppendByteOrder
	}
	b []byte
}

func (n *ngBlocks) block(typ uint32, body []byte) {
	l := 12 + (len(body)+3)&^3
	n.b = n.order.AppendUint32(n.b, typ)
	n.b = n.order.AppendUint32(n.b, uint32(l))
	n.b = append(n.b, body...)
	n.b = append(n.b, make([]byte, (4-len(body)&3)&3)...)
	n.b = n.order.AppendUint32(n.b, uint32(l))
}

// opt returns a pcapng option (code, value, padding).
func (n *ngBlocks) opt(code uint16, v []byte) []byte {
	o := n.order.AppendUint16(nil, code)
	o = n.order.AppendUint16(o, uint16(len(v)))
	o = append(o, v...)
	return append(o, make([]byte, (4-len(v)&3)&3)...)
}

func (n *ngBlocks) shb() {
	body := n.order.AppendUint32(nil, ngByteOrderMagic)
	body = n.order.AppendUint16(body, 1)
	body = n.order.AppendUint16(body, 0)
	body = append(body, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	n.block(ngSectionHeader, body)
}

// idb adds an interface of link type lt with if_tsresol res (0: none)
// and if_tsoffset off (0: none).
func (n *ngBlocks) idb(lt uint16, res uint8, off uint64) {
	body := n.order.AppendUint16(nil, lt)
	body = append(body, 0, 0)
	body = n.order.AppendUint32(body, 0) // snap length
	if res != 0 {
		body = append(body, n.opt(9, []byte{res})...)
	}
	if off != 0 {
		body = append(body, n.opt(14, n.order.AppendUint64(nil, off))...)
	}
	if res != 0 || off != 0 {
		body = append(body, n.opt(0, nil)...)
	}
	n.block(1, body)
}

// epb adds a packet of interface ifc at timestamp ts, frame data cut
// to caplen bytes, with options opts (appended as given).
func (n *ngBlocks) epb(ifc uint32, ts uint64, data []byte, caplen int, opts []byte) {
	body := n.order.AppendUint32(nil, ifc)
	body = n.order.AppendUint32(body, uint32(ts>>32))
	body = n.order.AppendUint32(body, uint32(ts))
	body = n.order.AppendUint32(body, uint32(caplen))
	body = n.order.AppendUint32(body, uint32(len(data)))
	body = append(body, data[:caplen]...)
	body = append(body, make([]byte, (4-caplen&3)&3)...)
	n.block(ngBlockEnhancedPacket, append(body, opts...))
}

// ngFastSamples are pcapng files that exercise the fast path and every
// way out of it.
func ngFastSamples(t testing.TB) map[string][]byte {
	frame := make([]byte, 90) // the bytes are not decoded here
	for i := range frame {
		frame[i] = byte(i * 7)
	}
	out := map[string][]byte{}
	for _, big := range []bool{false, true} {
		n, o, name := &ngBlocks{order: binary.LittleEndian}, &ngBlocks{order: binary.BigEndian}, "le"
		if big {
			n, o, name = o, n, "be"
		}
		n.shb()
		n.idb(1, 0, 0)       // µs
		n.idb(101, 9, 0)     // ns, raw IP
		n.idb(1, 0x80|20, 0) // 2^-20 s
		n.idb(1, 3, 1000)    // ms with an offset
		for i := range 4 {
			for caplen := len(frame) - 3; caplen <= len(frame); caplen++ {
				n.epb(uint32(i), 1700000000123456+uint64(i*caplen), frame, caplen, nil)
			}
		}
		n.epb(0, 5, frame, len(frame), append(n.opt(1, []byte("a comment")), n.opt(0, nil)...))
		n.epb(1, 6, frame, len(frame), append(n.opt(2, n.order.AppendUint32(nil, 1)), n.opt(0, nil)...)) // epb_flags: inbound
		n.block(3, append(n.order.AppendUint32(nil, uint32(len(frame))), frame...))                      // a simple packet block: pcapgo's
		n.epb(2, 7, frame, len(frame), nil)
		plain := bytes.Clone(n.b)
		// Longer than the input's buffer (readBuffer), blocks of every
		// length straddling its refills.
		for i := 0; i < 3000 || len(n.b) < 3*readBuffer; i++ {
			n.epb(uint32(i%4), uint64(i)<<20, frame, i%len(frame), nil)
		}
		out[name+"-long"] = bytes.Clone(n.b)
		n.b = bytes.Clone(plain)
		out[name] = plain
		n.idb(1, 6, 0) // an interface added late
		n.epb(4, 8, frame, len(frame), nil)
		out[name+"-late-iface"] = bytes.Clone(n.b)
		n.epb(9, 8, frame, len(frame), nil) // no such interface: pcapgo's error
		out[name+"-bad-iface"] = bytes.Clone(n.b)
		// A second section, in the other byte order.
		o.shb()
		o.idb(1, 9, 0)
		o.epb(0, 1700000000123456789, frame, len(frame), nil)
		out[name+"-two-sections"] = append(bytes.Clone(plain), o.b...)
		// Binary resolutions (tsresol.go): 2^-32 s units at the end and
		// the start of a second, where pcapgo's nanoseconds pass the
		// second, with and without options (pcapgo's path and the fast
		// path).
		bin := &ngBlocks{order: n.order}
		bin.shb()
		bin.idb(1, 0x80|32, 0)
		bin.idb(1, 0x80|20, 0)
		for _, frac := range []uint64{0, 1, 0xfffff000, 0x10000000, 0xffffffff} {
			bin.epb(0, 1700000000<<32|frac, frame, len(frame), nil)
			bin.epb(0, 1700000001<<32|frac, frame, len(frame), append(bin.opt(1, []byte("c")), bin.opt(0, nil)...))
			bin.epb(1, 1700000000<<20|frac>>12, frame, len(frame), nil)
		}
		out[name+"-binary"] = bin.b
		// Cut short, and a block whose length disagrees with its frame.
		out[name+"-cut"] = plain[:len(plain)-7]
		bad := bytes.Clone(plain)
		off := bytes.Index(bad, frame[:len(frame)-3]) - 28
		n.order.PutUint32(bad[off+20:], uint32(len(frame)+40)) // caplen past the block
		out[name+"-bad-caplen"] = bad
	}
	return out
}

// ngRead is one read's outcome, its frame bytes copied.
type ngRead struct {
	data []byte
	ci   gopacket.CaptureInfo
	opts pcapgo.NgPacketOptions
	err  string
}

// readAllNg reads b with Reader.read, the fast path on or off, until an
// error, and returns every outcome.
func readAllNg(t testing.TB, b []byte, fast bool) ([]ngRead, error) {
	r, err := NewReader(bytes.NewReader(b), ReaderOptions{})
	if err != nil {
		return nil, err
	}
	if r.fast == nil {
		return nil, nil
	}
	r.fast.off = !fast
	var out []ngRead
	for range 1 << 22 {
		var ci gopacket.CaptureInfo
		data, optp, err := r.read(&ci)
		if err != nil {
			// Next reads nothing but the error then (pcapgo returns what
			// its buffer held).
			return append(out, ngRead{err: err.Error()}), nil
		}
		rd := ngRead{data: bytes.Clone(data), ci: ci}
		if optp != nil {
			rd.opts = *optp
		}
		rd.ci.AncillaryData = slices.Clone(ci.AncillaryData) // pcapgo's is its own array, reused
		out = append(out, rd)
	}
	t.Fatal("no end")
	return nil, nil
}

// sameReads fails t at the first read where got (the fast path's) and
// want (pcapgo's) differ.
func sameReads(t testing.TB, name string, got, want []ngRead) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: read %d:\nfast   %+v %+v %q % x\npcapgo %+v %+v %q % x", name, i, got[i].ci, got[i].opts, got[i].err, got[i].data, want[i].ci, want[i].opts, want[i].err, want[i].data)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d reads with the fast path, %d without", name, len(got), len(want))
	}
}

// TestNgFastAsPcapgo reads every pcapng capture in the repository and
// synthetic ones (either byte order, timestamp resolutions and offsets,
// options, simple packet blocks, interfaces added late, a second
// section, damage) with the fast path and with pcapgo alone: every frame,
// its CaptureInfo and options, and the final error must agree.
func TestNgFastAsPcapgo(t *testing.T) {
	files := ngFastSamples(t)
	fastReads := 0
	filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pcapng") || strings.Contains(p, "fuzz") {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			files[p] = b
		}
		return nil
	})
	if len(files) < 20 {
		t.Fatalf("%d captures: the repository's were not found", len(files))
	}
	for name, b := range files {
		want, err := readAllNg(t, b, false)
		got, err2 := readAllNg(t, b, true)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("%s: NewReader %v, with the fast path %v", name, err, err2)
		}
		sameReads(t, name, got, want)
		if len(want) > 0 && !strings.Contains(name, "bad") && !strings.Contains(name, "cut") && want[len(want)-1].err != io.EOF.Error() {
			t.Errorf("%s: ends with %q, not EOF", name, want[len(want)-1].err)
		}
		r, _ := NewReader(bytes.NewReader(b), ReaderOptions{})
		for r != nil && r.fast != nil {
			var ci gopacket.CaptureInfo
			if _, ok := r.fast.next(&ci); !ok {
				if _, _, _, err := r.ng.ZeroCopyReadPacketDataWithOptions(); errors.Is(err, io.EOF) || err != nil {
					break
				}
				r.fast.sync(r.ng, nil)
				continue
			}
			fastReads++
		}
	}
	if fastReads < 1000 {
		t.Errorf("the fast path read %d frames of the samples: it should read most", fastReads)
	}
}

// FuzzNgFast holds the fast path to pcapgo on any input.
func FuzzNgFast(f *testing.F) {
	for _, b := range ngFastSamples(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := readAllNg(t, b, false)
		got, err2 := readAllNg(t, b, true)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("NewReader %v, with the fast path %v", err, err2)
		}
		sameReads(t, "input", got, want)
	})
}
