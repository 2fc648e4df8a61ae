package wire

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// allFields returns one Fields value per packet type with non-zero values
// everywhere, including doff, flags and urgent values that differ from what
// FixLengths and SetMarks would write.
func allFields() []Fields {
	c := func() CommonFields {
		return CommonFields{Sport: 0x1111, Dport: 0x2222, Sequence: 0x33333333, Ack: [3]byte{4, 5, 6},
			Doff: 0x77, Flags: 0x88, Window: 0x9999, Checksum: 0xaaaa, Urgent: 0xbbbb, SenderID: 0xcccccccccccccccc}
	}
	return []Fields{
		&DataFields{Common: c(), MessageLength: 1000, Incoming: 900, Ack: AckEntry{ClientID: 8, ClientPort: 9, ServerPort: 10},
			CutoffVersion: 11, Retransmit: 1, SegOffset: 12, Payload: []byte("payload!")},
		&GrantFields{Common: c(), Offset: 13, Priority: 5, ResendAll: 1},
		&ResendFields{Common: c(), Offset: 14, Length: 15, Priority: 6},
		&RPCUnknownFields{Common: c()},
		&BusyFields{Common: c()},
		&CutoffsFields{Common: c(), UnschedCutoffs: [8]uint32{1, 2, 3, 4, 5, 6, 7, 8}, CutoffVersion: 16},
		&FreezeFields{Common: c()},
		&NeedAckFields{Common: c()},
		&AckFields{Common: c(), NumAcks: 7, Acks: []AckEntry{{ClientID: 17, ClientPort: 18, ServerPort: 19}, {ClientID: 20, ServerPort: 21}}},
	}
}

func TestEncodeNoOptions(t *testing.T) {
	for _, f := range allFields() {
		for _, v := range versionsOf(f.PacketType()) {
			t.Run(f.PacketType().String()+"/"+v.String(), func(t *testing.T) {
				b, err := f.AppendTo(nil, EncodeOptions{Version: v})
				if err != nil {
					t.Fatalf("AppendTo: %v", err)
				}
				c := Common(b)
				if c.Doff() != 0x77 || c.Flags() != 0x88 || c.Urgent() != 0xbbbb || c.Checksum() != 0xaaaa || c.Window() != 0x9999 {
					t.Errorf("doff %#x flags %#x urgent %#x checksum %#x window %#x, want the Fields' 0x77 0x88 0xbbbb 0xaaaa 0x9999",
						c.Doff(), c.Flags(), c.Urgent(), c.Checksum(), c.Window())
				}
				if c.AckBytes() != [3]byte{4, 5, 6} || c.Type() != f.PacketType() {
					t.Errorf("ack %v type %v, want [4 5 6] %v", c.AckBytes(), c.Type(), f.PacketType())
				}
				p := mustDecode(t, b, DecodeOptions{Version: v})
				want := wantDecoded(f, v, EncodeOptions{Version: v})
				if got := p.Fields(); !fieldsEqual(got, want) {
					t.Errorf("decoded:\n got %s\nwant %s", showFields(got), showFields(want))
				}
			})
		}
	}
}

func TestEncodeAckNumAcks(t *testing.T) {
	two := []AckEntry{{ClientID: 2, ServerPort: 1}, {ClientID: 4, ServerPort: 2}}
	seven := make([]AckEntry, 7)
	for i := range seven {
		seven[i] = AckEntry{ClientID: uint64(2 * (i + 1)), ServerPort: uint16(i + 1)}
	}
	for _, tc := range []struct {
		name      string
		num       uint16
		acks      []AckEntry
		fix       bool
		wantWire  uint16
		wantValid int
	}{
		{"7 with 2 entries, raw", 7, two, false, 7, 5},
		{"7 with 2 entries, fixed", 7, two, true, 2, 2},
		{"0 with 2 entries, raw", 0, two, false, 0, 0},
		{"0xffff raw", 0xffff, nil, false, 0xffff, 5},
		{"7 entries fixed", 0, seven, true, 5, 5},
		{"none fixed", 9, nil, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &AckFields{NumAcks: tc.num, Acks: tc.acks}
			b, err := f.AppendTo(nil, EncodeOptions{FixLengths: tc.fix})
			if err != nil || len(b) != 80 {
				t.Fatalf("AppendTo: %d bytes, %v; want 80", len(b), err)
			}
			if wire := uint16(b[28])<<8 | uint16(b[29]); wire != tc.wantWire {
				t.Errorf("num_acks on the wire: got %d, want %d", wire, tc.wantWire)
			}
			a := mustDecode(t, b, DecodeOptions{Version: VersionCurrent}).Ack()
			if a.NumAcks() != tc.wantWire || a.ValidAcks() != tc.wantValid || len(a.Fields().Acks) != tc.wantValid {
				t.Errorf("NumAcks %d ValidAcks %d len(Fields.Acks) %d, want %d %d %d",
					a.NumAcks(), a.ValidAcks(), len(a.Fields().Acks), tc.wantWire, tc.wantValid, tc.wantValid)
			}
			for i := range 5 {
				var want AckEntry
				if i < len(tc.acks) {
					want = tc.acks[i]
				}
				if got := a.Entry(i); got != want {
					t.Errorf("slot %d: got %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

func TestEncodeFixLengthsDoff(t *testing.T) {
	for _, f := range allFields() {
		for _, v := range versionsOf(f.PacketType()) {
			b, err := f.AppendTo(nil, EncodeOptions{Version: v, FixLengths: true})
			if err != nil {
				t.Fatalf("%v/%v: %v", f.PacketType(), v, err)
			}
			want := uint8(0x50)
			if f.PacketType() == TypeData {
				want = 0xE0
			}
			if b[12] != want {
				t.Errorf("%v/%v: doff got %#02x, want %#02x", f.PacketType(), v, b[12], want)
			}
			// FixLengths touches nothing else in the common header.
			if b[13] != 0x88 || b[18] != 0xbb || b[19] != 0xbb {
				t.Errorf("%v/%v: FixLengths changed flags/urgent: %x", f.PacketType(), v, b[12:20])
			}
		}
	}
}

func TestEncodeSetMarks(t *testing.T) {
	for _, f := range allFields() {
		for _, v := range versionsOf(f.PacketType()) {
			b, err := f.AppendTo(nil, EncodeOptions{Version: v, SetMarks: true})
			if err != nil {
				t.Fatalf("%v/%v: %v", f.PacketType(), v, err)
			}
			wantFlags, wantUrgent := uint8(0x06), uint16(0xB97D)
			if v == VersionUpstream {
				wantFlags, wantUrgent = 0, 0
			}
			c := Common(b)
			if c.Flags() != wantFlags || c.Urgent() != wantUrgent {
				t.Errorf("%v/%v: flags %#02x urgent %#04x, want %#02x %#04x", f.PacketType(), v, c.Flags(), c.Urgent(), wantFlags, wantUrgent)
			}
			if c.Doff() != 0x77 {
				t.Errorf("%v/%v: SetMarks changed doff to %#02x", f.PacketType(), v, c.Doff())
			}
			if got := c.HasMarks(); got != (v != VersionUpstream) {
				t.Errorf("%v/%v: HasMarks %v", f.PacketType(), v, got)
			}
		}
	}
}

func TestEncodeChecksums(t *testing.T) {
	for _, f := range allFields() {
		for _, v := range versionsOf(f.PacketType()) {
			name := f.PacketType().String() + "/" + v.String()
			t.Run(name, func(t *testing.T) {
				for _, o := range []EncodeOptions{
					{Version: v, ComputeChecksums: true},
					{Version: v, ComputeChecksums: true, Src: v4a},
					{Version: v, ComputeChecksums: true, Dst: v6a},
					{Version: v, ComputeChecksums: true, Src: v4a, Dst: v6a},
					{Version: v, ComputeChecksums: true, Src: v6a, Dst: v4a},
				} {
					_, err := f.AppendTo(nil, o)
					if !errors.Is(err, ErrChecksumAddrs) {
						t.Errorf("src %v dst %v: got %v, want ErrChecksumAddrs", o.Src, o.Dst, err)
					}
				}
				for _, pair := range [][2]netip.Addr{{v4a, v4b}, {v6a, v6b}} {
					o := EncodeOptions{Version: v, FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: pair[0], Dst: pair[1]}
					b, err := f.AppendTo(nil, o)
					if err != nil {
						t.Fatalf("%v->%v: %v", pair[0], pair[1], err)
					}
					if !ChecksumValid(pair[0], pair[1], b) {
						t.Errorf("%v->%v: ChecksumValid false", pair[0], pair[1])
					}
					if got, want := Common(b).Checksum(), refChecksum(pair[0], pair[1], b); got != want {
						t.Errorf("%v->%v: checksum %#04x, want reference %#04x", pair[0], pair[1], got, want)
					}
					// The checksum covers every byte, payload included.
					for _, i := range []int{0, 11, 15, 19, 27, len(b) - 1} {
						c := append([]byte(nil), b...)
						c[i] ^= 0x01
						if ChecksumValid(pair[0], pair[1], c) {
							t.Errorf("%v->%v: flipping byte %d left ChecksumValid true", pair[0], pair[1], i)
						}
					}
					// and the addresses
					if ChecksumValid(pair[1], netip.MustParseAddr(map[bool]string{true: "10.9.9.9", false: "fd00::9"}[pair[0].Is4()]), b) {
						t.Errorf("%v->%v: wrong address left ChecksumValid true", pair[0], pair[1])
					}
				}
			})
		}
	}
}

// TestEncodeChecksumMappedAddrs: EncodeOptions with IPv4-mapped addresses.
// Checksum's documentation says IPv4-mapped IPv6 addresses count as IPv4,
// so a v4 and a v4-mapped address are one family, and a v4-mapped with a
// native IPv6 address are not (ErrChecksumAddrs, never a panic).
func TestEncodeChecksumMappedAddrs(t *testing.T) {
	m1 := netip.MustParseAddr("::ffff:10.0.0.1")
	m2 := netip.MustParseAddr("::ffff:10.0.0.11")
	busy := &BusyFields{Common: CommonFields{Sport: 4000, Dport: 32768, SenderID: 3}}
	for _, tc := range []struct {
		name     string
		src, dst netip.Addr
		wantErr  bool
	}{
		{"mapped/mapped", m1, m2, false},
		{"v4/mapped", v4a, m2, false},
		{"mapped/v4", m1, v4b, false},
		{"mapped/v6", m1, v6a, true},
		{"v6/mapped", v6a, m2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("AppendTo panicked: %v", r)
				}
			}()
			b, err := busy.AppendTo(nil, EncodeOptions{FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: tc.src, Dst: tc.dst})
			if tc.wantErr {
				if !errors.Is(err, ErrChecksumAddrs) {
					t.Errorf("got %v, want ErrChecksumAddrs", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			// The IPv4 pseudo-header is used.
			if got, want := Common(b).Checksum(), refChecksum(tc.src.Unmap(), tc.dst.Unmap(), b); got != want {
				t.Errorf("checksum %#04x, want IPv4 value %#04x", got, want)
			}
		})
	}
}

// TestEncodeAppendToPrefix: AppendTo onto a non-empty buffer keeps the
// prefix and writes zeros for every field that is zero in the Fields, even
// when the spare capacity holds stale 0xFF bytes.
func TestEncodeAppendToPrefix(t *testing.T) {
	zero := []Fields{&DataFields{}, &GrantFields{}, &ResendFields{}, &RPCUnknownFields{}, &BusyFields{},
		&CutoffsFields{}, &FreezeFields{}, &NeedAckFields{}, &AckFields{}}
	prefix := []byte{0xde, 0xad, 0xbe, 0xef, 0x01}
	for _, f := range zero {
		for _, v := range versionsOf(f.PacketType()) {
			buf := make([]byte, 512)
			for i := range buf {
				buf[i] = 0xFF
			}
			copy(buf, prefix)
			out, err := f.AppendTo(buf[:len(prefix)], EncodeOptions{Version: v})
			if err != nil {
				t.Fatalf("%v/%v: %v", f.PacketType(), v, err)
			}
			if &out[0] != &buf[0] {
				t.Errorf("%v/%v: AppendTo reallocated although capacity sufficed", f.PacketType(), v)
			}
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Errorf("%v/%v: prefix changed to %x", f.PacketType(), v, out[:len(prefix)])
			}
			want := make([]byte, wantHeaderLen(f.PacketType(), v))
			want[11] = byte(f.PacketType())
			if got := out[len(prefix):]; !bytes.Equal(got, want) {
				t.Errorf("%v/%v: appended\n got %x\nwant %x", f.PacketType(), v, got, want)
			}
			// With options: only doff, flags and urgent become non-zero.
			out, err = f.AppendTo(buf[:len(prefix)], EncodeOptions{Version: v, FixLengths: true, SetMarks: true})
			if err != nil {
				t.Fatal(err)
			}
			want[12] = 0x50
			if f.PacketType() == TypeData {
				want[12] = 0xE0
			}
			if v != VersionUpstream {
				want[13], want[18], want[19] = 0x06, 0xB9, 0x7D
			}
			if got := out[len(prefix):]; !bytes.Equal(got, want) {
				t.Errorf("%v/%v with options: appended\n got %x\nwant %x", f.PacketType(), v, got, want)
			}
			// The checksum is computed over the new packet only, not the prefix.
			out, err = f.AppendTo(buf[:len(prefix)], EncodeOptions{Version: v, ComputeChecksums: true, Src: v4a, Dst: v4b})
			if err != nil {
				t.Fatal(err)
			}
			if pkt := out[len(prefix):]; !ChecksumValid(v4a, v4b, pkt) {
				t.Errorf("%v/%v: checksum not valid over the appended packet", f.PacketType(), v)
			}
		}
	}
}

func TestEncodeDataPayloadAppend(t *testing.T) {
	f := &DataFields{SegOffset: 0xFFFFFFFF, Payload: []byte{1, 2, 3}}
	buf := make([]byte, 3, 200)
	for i := range buf[:cap(buf)] {
		buf[:cap(buf)][i] = 0xFF
	}
	out, err := f.AppendTo(buf, EncodeOptions{})
	if err != nil || len(out) != 3+56+3 {
		t.Fatalf("got %d bytes, %v; want 62", len(out), err)
	}
	if !bytes.Equal(out[3+56:], []byte{1, 2, 3}) || !bytes.Equal(out[3+52:3+56], []byte{0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("payload/seg.offset wrong: %x", out[3:])
	}
	for i := 3 + 12; i < 3+52; i++ {
		if out[i] != 0 && i != 3+11 {
			t.Errorf("byte %d of header: got %#x, want 0", i-3, out[i])
		}
	}
}
