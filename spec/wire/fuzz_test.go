package wire

import (
	"bytes"
	"errors"
	"testing"
)

// maxFuzzWireLen bounds the WireLen the fuzz target passes to Decode. Real
// callers take WireLen from an IP total length (≤ 65535) or IPv6 payload
// length; Segments does work proportional to WireLen/maxSegData (it walks and
// returns every segment the frame claims), so an unbounded fuzzed WireLen
// only measures that, and would make the target hang or run out of memory.
const maxFuzzWireLen = 1 << 17

// decodeSeeds are valid and invalid encodings for f.Add; the same inputs are
// committed under testdata/fuzz/FuzzDecode.
func decodeSeeds(tb testing.TB) []struct {
	b       []byte
	version uint8
	proto   uint8
	wireLen int
} {
	type seed = struct {
		b       []byte
		version uint8
		proto   uint8
		wireLen int
	}
	s := []seed{
		{hexBytes(tb, dataCurrentHex), uint8(VersionCurrent), 146, 0},
		{hexBytes(tb, data2024Hex), uint8(Version2024), 253, 0},
		{hexBytes(tb, realData613Hex), 0, 146, 0},
		{hexBytes(tb, realData2024Hex), 0, 253, 1460},
		{hexBytes(tb, realHijackedDataHex), 0, 6, 1480},
		{hexBytes(tb, realGSOSegment613Hex), 0, 146, 1480},
		{hexBytes(tb, grantCurrentHex), 0, 146, 0},
		{hexBytes(tb, grant2024Hex), 0, 253, 0},
		{hexBytes(tb, resendCurrentHex), 0, 146, 0},
		{hexBytes(tb, resendUpstreamHex), 0, 146, 0},
		{hexBytes(tb, rpcUnknownHex), uint8(VersionCurrent), 146, 0},
		{hexBytes(tb, busyHex), 0, 146, 0},
		{hexBytes(tb, cutoffsHex), 0, 146, 0},
		{hexBytes(tb, freezeHex), 0, 146, 0},
		{hexBytes(tb, needAckHex), uint8(VersionUpstream), 146, 0},
		{hexBytes(tb, ackCurrentHex), 0, 146, 0},
		{hexBytes(tb, ack2024Hex), 0, 253, 0},
		{hexBytes(tb, ackOverflowHex), 0, 146, 0},
		{hexBytes(tb, grantCurrentHex)[:30], uint8(VersionCurrent), 146, 0},
		{hexBytes(tb, grantCurrentHex)[:30], uint8(VersionCurrent), 146, 33}, // a snap length cut it: a partial view
		{hexBytes(tb, dataCurrentHex)[:40], 0, 146, 1000},
		{hexBytes(tb, busyHex)[:11], 0, 0, 0},
		{nil, 0, 0, 0},
	}
	g := threeSegFrame(tb)
	s = append(s, seed{g, 0, 146, 0}, seed{g[:256], 0, 146, 3012})
	return s
}

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds(f) {
		f.Add(s.b, s.version, s.proto, s.wireLen)
	}

	f.Fuzz(func(t *testing.T, data []byte, version uint8, ipproto uint8, wirelen int) {
		if wirelen > maxFuzzWireLen {
			wirelen = maxFuzzWireLen
		}
		checkDecodeInvariants(t, data, DecodeOptions{Version: Version(version), IPProto: ipproto, WireLen: wirelen})
	})
}

func checkDecodeInvariants(t *testing.T, data []byte, o DecodeOptions) {
	_ = IsHijacked(data)
	_ = DetectVersion(data, o.IPProto, o.WireLen)
	_ = Common(data).Fields() // a hand-made view over any bytes
	p, err := Decode(data, o)
	have := len(data)
	if o.WireLen > 0 && o.WireLen < have {
		have = o.WireLen
	}
	checkPartialInvariants(t, data, o, p, err, have)
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("error %T %v is not a *DecodeError", err, err)
		}
		_ = de.Error()
		switch {
		case errors.Is(err, ErrTruncated):
			if de.Field == "" || de.Want <= de.Have || de.Have != have {
				t.Fatalf("bad truncation error %+v (input %d bytes, usable %d)", de, len(data), have)
			}
		case errors.Is(err, ErrUnknownType):
			if have < 12 || de.Type.IsValid() || uint8(de.Type) != data[11] {
				t.Fatalf("bad unknown-type error %+v", de)
			}
		case errors.Is(err, ErrUnsupported):
			if de.Type.SupportedBy(de.Version) {
				t.Fatalf("ErrUnsupported for %v in %v, which supports it", de.Type, de.Version)
			}
		default:
			t.Fatalf("unexpected sentinel in %v", err)
		}
		return
	}
	b := p.Bytes()
	if len(b) != have || (len(b) > 0 && &b[0] != &data[0]) {
		t.Fatalf("Bytes: %d bytes, want the first %d input bytes without copy", len(b), have)
	}
	hl := p.HeaderLen()
	if hl < CommonHeaderLen || hl > MaxHeaderLen || hl > len(b) {
		t.Fatalf("HeaderLen %d, len %d", hl, len(b))
	}
	if p.WireLen() < len(b) || p.Truncated() != (len(b) < p.WireLen()) {
		t.Fatalf("WireLen %d Truncated %v with %d bytes", p.WireLen(), p.Truncated(), len(b))
	}
	if p.Type() != PacketType(data[11]) || !p.Type().IsValid() || !p.Type().SupportedBy(p.Version()) {
		t.Fatalf("Type %v Version %v", p.Type(), p.Version())
	}
	if o.Version == VersionAuto && (p.Version() < VersionCurrent || p.Version() > Version2025) {
		t.Fatalf("auto-detected version %v", p.Version())
	}
	if o.Version != VersionAuto && p.Version() != o.Version {
		t.Fatalf("Version %v, asked for %v", p.Version(), o.Version)
	}
	c := p.Common()
	cf := c.Fields()
	if cf.Type != p.Type() || c.SenderID() != p.SenderID() || p.Role() != RoleOf(c.SenderID()) {
		t.Fatalf("common header inconsistent: %+v", cf)
	}
	_ = c.HasMarks()
	_ = ChecksumValid(v4a, v4b, b)

	// Every accessor of every view, whatever the type.
	d := p.Data()
	_, _, _, _, _, _, _, _ = d.MessageLength(), d.Incoming(), d.AckClientID(), d.AckClientPort(), d.AckServerPort(),
		d.CutoffVersion(), d.Retransmit(), d.SegOffset()
	_, _, _, _ = d.Offset(), d.DataLen(), d.Payload(), d.Fields()
	g := p.Grant()
	_, _, _, _ = g.Offset(), g.Priority(), g.ResendAll(), g.Fields()
	r := p.Resend()
	_, _, _, _, _ = r.Offset(), r.Length(), r.Priority(), r.IsResendAll(), r.Fields()
	cu := p.Cutoffs()
	_, _, _, _ = cu.UnschedCutoff(3), cu.UnschedCutoffs(), cu.CutoffVersion(), cu.Fields()
	a := p.Ack()
	if a.ValidAcks() < 0 || a.ValidAcks() > MaxAcksPerPkt {
		t.Fatalf("ValidAcks %d", a.ValidAcks())
	}
	for i := -1; i <= MaxAcksPerPkt; i++ {
		_ = a.Entry(i)
	}
	_, _ = a.NumAcks(), a.Fields()
	_, _, _, _ = p.RPCUnknown().Fields(), p.Busy().Fields(), p.Freeze().Fields(), p.NeedAck().Fields()

	checkViewsAndLayout(t, p)

	f := p.Fields()
	if f == nil || f.PacketType() != p.Type() || *f.CommonFields() != cf {
		t.Fatalf("Fields %T", f)
	}

	// Re-encoding the decoded Fields with no options reproduces the bytes.
	out, err := f.AppendTo(nil, EncodeOptions{Version: p.Version()})
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	switch p.Type() {
	case TypeData:
		if len(out) != len(b) {
			t.Fatalf("re-encoded DATA has %d bytes, want %d", len(out), len(b))
		}
		want := append([]byte(nil), b...)
		// The pad bytes are not in DataFields; the encoder writes zeros.
		for _, f := range Layout(TypeData, p.Version()) {
			if f.Name == "pad" {
				clear(want[f.Off : f.Off+f.Size])
			}
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("re-encoded DATA differs:\n got %x\nwant %x", out, want)
		}
	case TypeAck:
		if len(out) != hl {
			t.Fatalf("re-encoded ACK has %d bytes, want %d", len(out), hl)
		}
		// Fields keeps only the valid entries; the rest re-encode as zero.
		n := 30 + a.ValidAcks()*(hl-30)/MaxAcksPerPkt
		if !bytes.Equal(out[:n], b[:n]) || !bytes.Equal(out[n:], make([]byte, hl-n)) {
			t.Fatalf("re-encoded ACK differs:\n got %x\nwant %x", out, b[:hl])
		}
	default:
		if !bytes.Equal(out, b[:hl]) {
			t.Fatalf("re-encoded %v differs:\n got %x\nwant %x", p.Type(), out, b[:hl])
		}
	}

	if p.Type() == TypeData {
		if d.DataLen() != p.WireLen()-DataHeaderLen || len(d.Payload()) != len(b)-DataHeaderLen {
			t.Fatalf("DataLen %d Payload %d WireLen %d len %d", d.DataLen(), len(d.Payload()), p.WireLen(), len(b))
		}
		for _, m := range []int{MaxSegDataIPv4, 1} {
			checkSegmentInvariants(t, d, m)
		}
	}
}

func checkSegmentInvariants(t *testing.T, d Data, maxSegData int) {
	segs, err := d.Segments(nil, maxSegData)
	if err != nil {
		if !errors.Is(err, ErrSegments) || len(segs) != 0 {
			t.Fatalf("Segments(%d): %d segments, error %v", maxSegData, len(segs), err)
		}
		return
	}
	if len(segs) == 0 {
		t.Fatalf("Segments(%d): no segments", maxSegData)
	}
	if len(segs) > 1 && !d.IsGSO(maxSegData) {
		t.Fatalf("Segments(%d): %d segments of a non-GSO packet", maxSegData, len(segs))
	}
	if !d.IsGSO(maxSegData) && segs[0].Assumed {
		t.Fatalf("Segments(%d): single segment of a non-GSO packet marked Assumed", maxSegData)
	}
	b := d.Bytes()
	pos := DataHeaderLen
	off := d.Offset()
	for i, s := range segs {
		if s.Assumed != segs[0].Assumed {
			t.Fatalf("Segments(%d)[%d]: Assumed %v differs from segment 0", maxSegData, i, s.Assumed)
		}
		if s.Offset != off {
			t.Fatalf("Segments(%d)[%d]: offset %d, want %d", maxSegData, i, s.Offset, off)
		}
		if s.Length < 0 || (len(segs) > 1 && s.Length < 1) || len(s.Data) > s.Length {
			t.Fatalf("Segments(%d)[%d]: Length %d, %d data bytes", maxSegData, i, s.Length, len(s.Data))
		}
		if pos < len(b) {
			if want := b[pos:min(pos+s.Length, len(b))]; !bytes.Equal(s.Data, want) {
				t.Fatalf("Segments(%d)[%d]: data is not bytes %d..%d of the frame", maxSegData, i, pos, pos+len(want))
			}
		} else if s.Data != nil {
			t.Fatalf("Segments(%d)[%d]: %d data bytes past the capture", maxSegData, i, len(s.Data))
		}
		off += uint32(s.Length)
		pos += s.Length + SegHeaderLen
	}
	if used := pos - SegHeaderLen - DataHeaderLen; used > d.DataLen() {
		t.Fatalf("Segments(%d): segments cover %d bytes, DataLen %d", maxSegData, used, d.DataLen())
	}
}

// reader hands out big-endian values from fuzz bytes, zero when exhausted.
type reader struct{ b []byte }

func (r *reader) u8() uint8 {
	if len(r.b) == 0 {
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}
func (r *reader) u16() uint16 { return uint16(r.u8())<<8 | uint16(r.u8()) }
func (r *reader) u32() uint32 { return uint32(r.u16())<<16 | uint32(r.u16()) }
func (r *reader) u64() uint64 { return uint64(r.u32())<<32 | uint64(r.u32()) }

// fieldsFrom builds a Fields value of type t from fuzz bytes.
func fieldsFrom(t PacketType, raw, payload []byte) Fields {
	r := &reader{raw}
	c := CommonFields{Sport: r.u16(), Dport: r.u16(), Sequence: r.u32(), Ack: [3]byte{r.u8(), r.u8(), r.u8()},
		Doff: r.u8(), Flags: r.u8(), Window: r.u16(), Checksum: r.u16(), Urgent: r.u16(), SenderID: r.u64()}
	switch t {
	case TypeData:
		return &DataFields{Common: c, MessageLength: r.u32(), Incoming: r.u32(),
			Ack:           AckEntry{ClientID: r.u64(), ClientPort: r.u16(), ServerPort: r.u16()},
			CutoffVersion: r.u16(), Retransmit: r.u8(), SegOffset: r.u32(), Payload: payload}
	case TypeGrant:
		return &GrantFields{Common: c, Offset: r.u32(), Priority: r.u8(), ResendAll: r.u8()}
	case TypeResend:
		return &ResendFields{Common: c, Offset: r.u32(), Length: r.u32(), Priority: r.u8()}
	case TypeCutoffs:
		f := &CutoffsFields{Common: c}
		for i := range f.UnschedCutoffs {
			f.UnschedCutoffs[i] = r.u32()
		}
		f.CutoffVersion = r.u16()
		return f
	case TypeAck:
		f := &AckFields{Common: c, NumAcks: r.u16()}
		for n := int(r.u8() % 8); n > 0; n-- {
			f.Acks = append(f.Acks, AckEntry{ClientID: r.u64(), ClientPort: r.u16(), ServerPort: r.u16()})
		}
		return f
	case TypeRPCUnknown:
		return &RPCUnknownFields{Common: c}
	case TypeBusy:
		return &BusyFields{Common: c}
	case TypeFreeze:
		return &FreezeFields{Common: c}
	}
	return &NeedAckFields{Common: c}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(3), []byte("\x80\x01\x0f\xa0\x00\x00\x2c\x80"), []byte("hello!"))
	f.Add(uint8(1), uint8(1), uint8(3), []byte("\x0f\xa0\x80\x01"), []byte(nil))
	f.Add(uint8(2), uint8(2), uint8(7), bytes.Repeat([]byte{0xff}, 60), []byte(nil))
	f.Add(uint8(5), uint8(0), uint8(0x0f), bytes.Repeat([]byte{0x5a}, 70), []byte(nil))
	f.Add(uint8(8), uint8(1), uint8(0x13), bytes.Repeat([]byte{0x07}, 120), []byte(nil))
	f.Add(uint8(8), uint8(0), uint8(0), bytes.Repeat([]byte{0x00, 0x07}, 60), []byte(nil))
	for i := range uint8(9) {
		f.Add(i, i%3, uint8(0x1b), []byte{byte(i), 0x55, 0xaa}, []byte{0x01, 0x02, 0x03})
	}
	f.Fuzz(func(t *testing.T, typ uint8, version uint8, opts uint8, raw []byte, payload []byte) {
		pt := AllTypes[int(typ)%len(AllTypes)]
		v := Version(1 + version%4)
		fields := fieldsFrom(pt, raw, payload)
		o := EncodeOptions{Version: v, FixLengths: opts&1 != 0, SetMarks: opts&2 != 0, ComputeChecksums: opts&4 != 0}
		if opts&8 != 0 {
			o.Src, o.Dst = v6a, v6b
		} else {
			o.Src, o.Dst = v4a, v4b
		}
		var prefix []byte
		if opts&16 != 0 {
			prefix = make([]byte, 3, 3+MaxHeaderLen+len(payload)+8)
			for i := range prefix[:cap(prefix)] {
				prefix[:cap(prefix)][i] = 0xFF
			}
		}
		out, err := fields.AppendTo(prefix, o)
		if !pt.SupportedBy(v) {
			if !errors.Is(err, ErrUnsupported) || len(out) != len(prefix) {
				t.Fatalf("%v in %v: got %d bytes, %v; want ErrUnsupported", pt, v, len(out), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendTo: %v", err)
		}
		if !bytes.Equal(out[:len(prefix)], prefix) {
			t.Fatalf("prefix changed")
		}
		b := out[len(prefix):]
		n := pt.HeaderLen(v)
		if pt == TypeData {
			n += len(payload)
		}
		if len(b) != n {
			t.Fatalf("encoded %d bytes, want %d", len(b), n)
		}
		p, err := Decode(b, DecodeOptions{Version: v})
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		want := wantDecoded(fields, v, o)
		if o.ComputeChecksums {
			if !ChecksumValid(o.Src, o.Dst, b) {
				t.Fatalf("ChecksumValid false")
			}
			if got, ref := Common(b).Checksum(), refChecksum(o.Src, o.Dst, b); got != ref {
				t.Fatalf("checksum %#04x, reference %#04x", got, ref)
			}
			want.CommonFields().Checksum = Common(b).Checksum()
		}
		if got := p.Fields(); !fieldsEqual(got, want) {
			t.Fatalf("round trip:\n got %s\nwant %s", showFields(got), showFields(want))
		}
		if o.SetMarks {
			pa, err := Decode(b, DecodeOptions{IPProto: v.IPProtocol()})
			wantV := v
			if v == Version2025 && pt != TypeGrant {
				wantV = VersionCurrent // 2025 differs from current only in its GRANT
			}
			if err != nil || pa.Version() != wantV {
				t.Fatalf("auto-detect: version %v, error %v; want %v", pa.Version(), err, wantV)
			}
		}
		checkDecodeInvariants(t, b, DecodeOptions{Version: v})
	})
}

// TestFuzzSeedsDecode runs the decode invariants over the seeds in normal
// test runs too (go test also replays testdata/fuzz).
func TestFuzzSeedsDecode(t *testing.T) {
	for _, s := range decodeSeeds(t) {
		checkDecodeInvariants(t, s.b, DecodeOptions{Version: Version(s.version), IPProto: s.proto, WireLen: s.wireLen})
	}
}

// checkViewsAndLayout: every view of another type than p's is empty, and
// Packet.Field reads each scalar of p's Layout as the bytes at its offset.
func checkViewsAndLayout(t *testing.T, p Packet) {
	other := []struct {
		typ   PacketType
		bytes []byte
	}{
		{TypeData, p.Data().Bytes()}, {TypeGrant, p.Grant().Bytes()}, {TypeResend, p.Resend().Bytes()},
		{TypeRPCUnknown, p.RPCUnknown().Bytes()}, {TypeBusy, p.Busy().Bytes()}, {TypeCutoffs, p.Cutoffs().Bytes()},
		{TypeFreeze, p.Freeze().Bytes()}, {TypeNeedAck, p.NeedAck().Bytes()}, {TypeAck, p.Ack().Bytes()},
	}
	for _, o := range other {
		if (o.typ == p.Type()) != (o.bytes != nil) {
			t.Fatalf("%v view of a %v has %d bytes", o.typ, p.Type(), len(o.bytes))
		}
	}
	for _, f := range Layout(p.Type(), p.Version()) {
		got, ok := p.Field(f.Name)
		if ok != (f.Count == 0) {
			t.Fatalf("Field(%q): found %v, scalar %v", f.Name, ok, f.Count == 0)
		}
		var want uint64
		for _, c := range p.Bytes()[f.Off : f.Off+f.Size] {
			want = want<<8 | uint64(c)
		}
		if ok && got != want {
			t.Fatalf("Field(%q) = %#x, bytes at %d+%d hold %#x", f.Name, got, f.Off, f.Size, want)
		}
	}
}

// checkPartialInvariants decodes data again with DecodeOptions.Partial:
// where the plain Decode (p, err) succeeded it must give the same packet,
// a partial view only for a header cut by the capture (WireLen above the
// usable bytes) after the common header, the zero Packet otherwise, and
// the same error.
func checkPartialInvariants(t *testing.T, data []byte, o DecodeOptions, p Packet, err error, have int) {
	o.Partial = true
	pp, perr := Decode(data, o)
	if (perr == nil) != (err == nil) || perr != nil && perr.Error() != err.Error() {
		t.Fatalf("Partial changed the error: %v, plain %v", perr, err)
	}
	if err == nil {
		if !samePacket(pp, p) {
			t.Fatalf("Partial changed a whole packet")
		}
		return
	}
	cut := errors.Is(err, ErrTruncated) && o.WireLen > have && have >= CommonHeaderLen
	if !cut {
		if !samePacket(pp, Packet{}) {
			t.Fatalf("Partial gave a view %+v for %v (usable %d, WireLen %d)", pp, err, have, o.WireLen)
		}
		return
	}
	if !pp.Partial() || len(pp.Bytes()) != have || pp.Type() != PacketType(data[11]) || pp.HeaderLen() <= have {
		t.Fatalf("partial view: Partial %v len %d type %v header %d (usable %d)", pp.Partial(), len(pp.Bytes()), pp.Type(), pp.HeaderLen(), have)
	}
	for _, f := range Layout(pp.Type(), pp.Version()) {
		if pp.Has(f.Name) != (f.Off+f.Size <= have) {
			t.Fatalf("Has(%q) = %v with %d bytes", f.Name, pp.Has(f.Name), have)
		}
	}
	_, _ = pp.Fields(), pp.Data().Payload()
	if segs, serr := pp.Data().Segments(nil, MaxSegDataIPv4); pp.Type() == TypeData && (len(segs) != 0 || !errors.Is(serr, ErrTruncated)) {
		t.Fatalf("Segments of a partial DATA: %v, %v", segs, serr)
	}
}

// samePacket reports whether a and b are the same view of the same bytes.
func samePacket(a, b Packet) bool {
	return len(a.b) == len(b.b) && (len(a.b) == 0 || &a.b[0] == &b.b[0]) && a.wireLen == b.wireLen && a.v == b.v && a.t == b.t && a.partial == b.partial
}
