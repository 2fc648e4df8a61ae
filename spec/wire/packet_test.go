package wire

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// knownVectors lists a hand-written encoding per type and version.
var knownVectors = []struct {
	typ PacketType
	v   Version
	hex string
}{
	{TypeData, VersionCurrent, dataCurrentHex},
	{TypeData, Version2024, data2024Hex},
	{TypeGrant, VersionCurrent, grantCurrentHex},
	{TypeGrant, Version2024, grant2024Hex},
	{TypeResend, VersionCurrent, resendCurrentHex},
	{TypeResend, VersionUpstream, resendUpstreamHex},
	{TypeRPCUnknown, VersionCurrent, rpcUnknownHex},
	{TypeBusy, VersionCurrent, busyHex},
	{TypeCutoffs, VersionCurrent, cutoffsHex},
	{TypeFreeze, VersionCurrent, freezeHex},
	{TypeNeedAck, VersionCurrent, needAckHex},
	{TypeAck, VersionCurrent, ackCurrentHex},
	{TypeAck, Version2024, ack2024Hex},
}

func TestDecodeUnknownType(t *testing.T) {
	base := hexBytes(t, busyHex)
	for _, op := range []uint8{0x00, 0x01, 0x0f, 0x19, 0x20, 0x80, 0xff} {
		b := append([]byte(nil), base...)
		b[11] = op
		for _, v := range []Version{VersionAuto, VersionCurrent, Version2024, VersionUpstream, Version2025} {
			_, err := Decode(b, DecodeOptions{Version: v})
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrUnknownType) {
				t.Errorf("opcode %#02x %v: got %v, want *DecodeError wrapping ErrUnknownType", op, v, err)
				continue
			}
			if de.Type != PacketType(op) {
				t.Errorf("opcode %#02x: DecodeError.Type got %#02x", op, uint8(de.Type))
			}
			if errors.Is(err, ErrTruncated) {
				t.Errorf("opcode %#02x: error also matches ErrTruncated", op)
			}
		}
	}
	// An unknown opcode in a packet of only 12 bytes is still an unknown
	// type, not a truncation.
	_, err := Decode([]byte{0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0x42}, DecodeOptions{})
	if !errors.Is(err, ErrUnknownType) {
		t.Errorf("12-byte opcode 0x42: got %v, want ErrUnknownType", err)
	}
	if want := "unknown packet type 0x42 at offset 11"; err == nil || err.Error() != want {
		t.Errorf("Error(): got %v, want %q", err, want)
	}
}

func TestDecodeUnsupportedUpstream(t *testing.T) {
	for _, tc := range []struct {
		typ PacketType
		hex string
		ok  bool
	}{
		{TypeData, dataCurrentHex, true},
		{TypeGrant, grantCurrentHex, false},
		{TypeResend, resendCurrentHex, true},
		{TypeRPCUnknown, rpcUnknownHex, true},
		{TypeBusy, busyHex, true},
		{TypeCutoffs, cutoffsHex, false},
		{TypeFreeze, freezeHex, false},
		{TypeNeedAck, needAckHex, true},
		{TypeAck, ackCurrentHex, true},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			_, err := Decode(hexBytes(t, tc.hex), DecodeOptions{Version: VersionUpstream})
			if tc.ok {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
			if de.Type != tc.typ || de.Version != VersionUpstream {
				t.Errorf("got Type %v Version %v, want %v upstream", de.Type, de.Version, tc.typ)
			}
			if want := "packet type " + tc.typ.String() + " does not exist in wire version upstream"; err.Error() != want {
				t.Errorf("Error(): got %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestDecodeEmptyAndShort(t *testing.T) {
	for _, tc := range []struct {
		b     []byte
		field string
		want  int
	}{
		{nil, "sport", 2},
		{[]byte{}, "sport", 2},
		{[]byte{1}, "sport", 2},
		{[]byte{1, 2, 3}, "dport", 4},
		{make([]byte, 7), "sequence", 8},
		{make([]byte, 10), "ack", 11},
		{make([]byte, 11), "type", 12},
	} {
		_, err := Decode(tc.b, DecodeOptions{})
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrTruncated) {
			t.Errorf("len %d: got %v, want ErrTruncated", len(tc.b), err)
			continue
		}
		if de.Type != 0 || de.Field != tc.field || de.Want != tc.want || de.Have != len(tc.b) {
			t.Errorf("len %d: got Type %v Field %q Want %d Have %d, want 0 %q %d %d",
				len(tc.b), de.Type, de.Field, de.Want, de.Have, tc.field, tc.want, len(tc.b))
		}
		if !strings.HasPrefix(err.Error(), "truncated Homa header: field "+tc.field) {
			t.Errorf("len %d: Error() = %q", len(tc.b), err.Error())
		}
	}
}

func TestDecodeAllKnownPrefixesAuto(t *testing.T) {
	// Same as the per-type prefix tests, with the version auto-detected from
	// the IP protocol: Field/Want/Have must not depend on how the version
	// was chosen.
	for _, kv := range knownVectors {
		full := hexBytes(t, kv.hex)
		spans := spansFor(kv.typ, kv.v)
		for n := 0; n < wantHeaderLen(kv.typ, kv.v); n++ {
			_, err := Decode(exact(full[:n]), DecodeOptions{IPProto: kv.v.IPProtocol(), WireLen: len(full)})
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrTruncated) {
				t.Errorf("%v/%v prefix %d: got %v, want ErrTruncated", kv.typ, kv.v, n, err)
				continue
			}
			w := firstMissing(spans, n)
			if de.Field != w.name || de.Want != w.off+w.size || de.Have != n {
				t.Errorf("%v/%v prefix %d (WireLen %d): got %q %d %d, want %q %d %d", kv.typ, kv.v, n, len(full),
					de.Field, de.Want, de.Have, w.name, w.off+w.size, n)
			}
		}
	}
}

func TestDecodeWireLen(t *testing.T) {
	busy := hexBytes(t, busyHex)
	t.Run("padding-trimmed", func(t *testing.T) {
		// Link-layer padding after a 28-byte packet: WireLen (from the IP
		// total length) trims it.
		b := append(append([]byte(nil), busy...), 0, 0, 0, 0)
		p := mustDecode(t, b, DecodeOptions{WireLen: 28})
		if len(p.Bytes()) != 28 || p.WireLen() != 28 || p.Truncated() {
			t.Errorf("got len %d WireLen %d Truncated %v, want 28 28 false", len(p.Bytes()), p.WireLen(), p.Truncated())
		}
	})
	t.Run("trimmed-below-header", func(t *testing.T) {
		_, err := Decode(busy, DecodeOptions{WireLen: 20})
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrTruncated) || de.Have != 20 || de.Field != "sender_id" {
			t.Errorf("got %v, want ErrTruncated at sender_id with Have 20", err)
		}
	})
	t.Run("snaplen", func(t *testing.T) {
		d := hexBytes(t, dataCurrentHex)
		p := mustDecode(t, d[:58], DecodeOptions{Version: VersionCurrent, WireLen: 1480})
		if p.WireLen() != 1480 || !p.Truncated() || p.Data().DataLen() != 1424 || len(p.Data().Payload()) != 2 {
			t.Errorf("got WireLen %d Truncated %v DataLen %d payload %d, want 1480 true 1424 2",
				p.WireLen(), p.Truncated(), p.Data().DataLen(), len(p.Data().Payload()))
		}
	})
	t.Run("zero-and-negative", func(t *testing.T) {
		for _, wl := range []int{0, -1, -1000} {
			p := mustDecode(t, busy, DecodeOptions{WireLen: wl})
			if p.WireLen() != 28 || p.Truncated() {
				t.Errorf("WireLen %d: got WireLen %d Truncated %v, want 28 false", wl, p.WireLen(), p.Truncated())
			}
		}
	})
}

func TestDetectVersion(t *testing.T) {
	marked := hexBytes(t, busyHex) // flags 0x06, urgent 0xB97D
	unmarked := append([]byte(nil), marked...)
	unmarked[13], unmarked[18], unmarked[19] = 0, 0, 0
	flagsOnly := append([]byte(nil), unmarked...)
	flagsOnly[13] = 0x06
	ack80 := hexBytes(t, ackCurrentHex)
	ack90 := hexBytes(t, ack2024Hex)
	grant33 := hexBytes(t, grantCurrentHex)
	grant34 := hexBytes(t, grant2024Hex)
	tests := []struct {
		name    string
		b       []byte
		proto   uint8
		wireLen int
		want    Version
	}{
		{"253 marked", marked, 253, 0, Version2024},
		{"253 unmarked", unmarked, 253, 0, Version2024},
		{"253 ack80", ack80, 253, 0, Version2024},
		{"146 marked", marked, 146, 0, VersionCurrent},
		{"146 unmarked", unmarked, 146, 0, VersionUpstream},
		{"unknown proto unmarked", unmarked, 0, 0, VersionUpstream},
		{"146 flags only", flagsOnly, 146, 0, VersionCurrent},
		{"tcp marked", marked, 6, 0, VersionCurrent},
		{"tcp unmarked", unmarked, 6, 0, VersionCurrent},
		{"146 ack 80", ack80, 146, 0, VersionCurrent},
		{"146 ack 90", ack90, 146, 0, Version2024},
		{"tcp ack 90", ack90, 6, 0, Version2024},
		{"146 ack 80 bytes wirelen 90", ack80, 146, 90, Version2024},
		{"146 grant 33", grant33, 146, 0, VersionCurrent},
		{"146 grant 34", grant34, 146, 0, Version2025},
		{"tcp grant 34", grant34, 6, 0, Version2025},
		{"253 grant 34", grant34, 253, 0, Version2024},
		{"146 grant captured 33 of 34", grant34[:33], 146, 34, Version2025},
		{"short 19 bytes unmarked", unmarked[:19], 146, 0, VersionCurrent},
		{"empty", nil, 146, 0, VersionCurrent},
		{"empty 253", nil, 253, 0, Version2024},
	}
	for _, tc := range tests {
		if got := DetectVersion(tc.b, tc.proto, tc.wireLen); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPacketZeroValue(t *testing.T) {
	var p Packet
	if p.Bytes() != nil || p.WireLen() != 0 || p.Truncated() || p.Type() != 0 || p.Version() != VersionAuto ||
		p.HeaderLen() != 0 || p.SenderID() != 0 || p.Fields() != nil || len(p.Common()) != 0 {
		t.Errorf("zero Packet: got non-zero accessors")
	}
	if p.Data().MessageLength() != 0 || p.Grant().Offset() != 0 || p.Ack().NumAcks() != 0 ||
		p.Cutoffs().CutoffVersion() != 0 || p.Resend().Length() != 0 || p.Data().Payload() != nil {
		t.Errorf("zero Packet: typed views read non-zero")
	}
}

func TestPacketTypeProperties(t *testing.T) {
	want := []struct {
		t       PacketType
		op      uint8
		name    string
		control bool
		upOK    bool
		hl      [4]int // auto, current, 2024, upstream
	}{
		{TypeData, 0x10, "DATA", false, true, [4]int{56, 56, 56, 56}},
		{TypeGrant, 0x11, "GRANT", true, false, [4]int{33, 33, 34, 0}},
		{TypeResend, 0x12, "RESEND", true, true, [4]int{37, 37, 37, 36}},
		{TypeRPCUnknown, 0x13, "RPC_UNKNOWN", true, true, [4]int{28, 28, 28, 28}},
		{TypeBusy, 0x14, "BUSY", true, true, [4]int{28, 28, 28, 28}},
		{TypeCutoffs, 0x15, "CUTOFFS", true, false, [4]int{62, 62, 62, 0}},
		{TypeFreeze, 0x16, "FREEZE", true, false, [4]int{28, 28, 28, 0}},
		{TypeNeedAck, 0x17, "NEED_ACK", true, true, [4]int{28, 28, 28, 28}},
		{TypeAck, 0x18, "ACK", true, true, [4]int{80, 80, 90, 80}},
	}
	if len(AllTypes) != len(want) {
		t.Fatalf("AllTypes has %d entries, want %d", len(AllTypes), len(want))
	}
	for i, w := range want {
		if AllTypes[i] != w.t || uint8(w.t) != w.op {
			t.Errorf("AllTypes[%d]: got %#02x, want %#02x", i, uint8(AllTypes[i]), w.op)
		}
		if !w.t.IsValid() {
			t.Errorf("%s IsValid: got false", w.name)
		}
		if w.t.String() != w.name {
			t.Errorf("%#02x String: got %q, want %q", w.op, w.t.String(), w.name)
		}
		if got, err := ParsePacketType(w.name); err != nil || got != w.t {
			t.Errorf("ParsePacketType(%q): got %v, %v", w.name, got, err)
		}
		if w.t.IsControl() != w.control {
			t.Errorf("%s IsControl: got %v, want %v", w.name, w.t.IsControl(), w.control)
		}
		if w.t.SupportedBy(VersionUpstream) != w.upOK {
			t.Errorf("%s SupportedBy(upstream): got %v, want %v", w.name, !w.upOK, w.upOK)
		}
		for _, v := range []Version{VersionAuto, VersionCurrent, Version2024} {
			if !w.t.SupportedBy(v) {
				t.Errorf("%s SupportedBy(%v): got false", w.name, v)
			}
		}
		for vi, v := range []Version{VersionAuto, VersionCurrent, Version2024, VersionUpstream} {
			if got := w.t.HeaderLen(v); got != w.hl[vi] {
				t.Errorf("%s HeaderLen(%v): got %d, want %d", w.name, v, got, w.hl[vi])
			}
		}
	}
	if got, err := ParsePacketType("UNKNOWN"); err != nil || got != TypeRPCUnknown {
		t.Errorf("ParsePacketType(UNKNOWN): got %v, %v; want RPC_UNKNOWN", got, err)
	}
	for _, s := range []string{"", "data", "BOGUS", "TYPE(0x19)"} {
		if _, err := ParsePacketType(s); err == nil {
			t.Errorf("ParsePacketType(%q): got nil error", s)
		}
	}
	for _, op := range []uint8{0, 0x0f, 0x19, 0xff} {
		pt := PacketType(op)
		if pt.IsValid() || pt.SupportedBy(VersionCurrent) || pt.HeaderLen(VersionCurrent) != 0 {
			t.Errorf("opcode %#02x: got valid/supported", op)
		}
	}
	if got := PacketType(0x19).String(); got != "TYPE(0x19)" {
		t.Errorf("String(0x19): got %q, want TYPE(0x19)", got)
	}
	if MinType != 0x10 || MaxType != 0x18 {
		t.Errorf("MinType/MaxType: got %#x/%#x, want 0x10/0x18", uint8(MinType), uint8(MaxType))
	}
	if MaxHeaderLen != 90 || CommonHeaderLen != 28 || DataHeaderLen != 56 || GSOPrefixLen != 52 || SegHeaderLen != 4 {
		t.Errorf("header constants: got %d %d %d %d %d", MaxHeaderLen, CommonHeaderLen, DataHeaderLen, GSOPrefixLen, SegHeaderLen)
	}
}

func TestVersionProperties(t *testing.T) {
	for _, tc := range []struct {
		v     Version
		name  string
		proto uint8
		prios bool
	}{
		{VersionAuto, "auto", 0, true},
		{VersionCurrent, "current", 146, true},
		{Version2024, "2024", 253, true},
		{VersionUpstream, "upstream", 146, false},
	} {
		if tc.v.String() != tc.name {
			t.Errorf("String: got %q, want %q", tc.v.String(), tc.name)
		}
		if got, err := ParseVersion(tc.name); err != nil || got != tc.v {
			t.Errorf("ParseVersion(%q): got %v, %v", tc.name, got, err)
		}
		if tc.v.IPProtocol() != tc.proto {
			t.Errorf("%v IPProtocol: got %d, want %d", tc.v, tc.v.IPProtocol(), tc.proto)
		}
		if tc.v.HasPriorities() != tc.prios {
			t.Errorf("%v HasPriorities: got %v, want %v", tc.v, tc.v.HasPriorities(), tc.prios)
		}
	}
	if _, err := ParseVersion("6.1"); err == nil || !strings.Contains(err.Error(), "upstream") {
		t.Errorf("ParseVersion(6.1): got %v, want an error listing the choices", err)
	}
	if got := Version(9).String(); got != "Version(9)" {
		t.Errorf("Version(9).String: got %q", got)
	}
	if IPProtoHoma != 146 || IPProtoHoma2024 != 253 || IPProtoTCP != 6 {
		t.Errorf("protocol constants: got %d %d %d", IPProtoHoma, IPProtoHoma2024, IPProtoTCP)
	}
}

// TestLayout compares Layout with the layout written independently from
// facts.md in helpers_test.go.
func TestLayout(t *testing.T) {
	for _, typ := range AllTypes {
		for _, v := range []Version{VersionAuto, VersionCurrent, Version2024, VersionUpstream} {
			got := Layout(typ, v)
			if !typ.SupportedBy(v) {
				if got != nil {
					t.Errorf("Layout(%v, %v): got %v, want nil", typ, v, got)
				}
				continue
			}
			vv := v
			if vv == VersionAuto {
				vv = VersionCurrent
			}
			var want []FieldLayout
			for _, s := range spansFor(typ, vv) {
				want = append(want, FieldLayout{Name: s.name, Off: s.off, Size: s.size})
			}
			var flat []FieldLayout
			for _, f := range got {
				flat = append(flat, FieldLayout{Name: f.Name, Off: f.Off, Size: f.Size})
				if f.Count > 0 {
					checkArrayLayout(t, typ, vv, f)
				}
			}
			if !reflect.DeepEqual(flat, want) {
				t.Errorf("Layout(%v, %v):\n got %v\nwant %v", typ, v, flat, want)
			}
			last := got[len(got)-1]
			if end := last.Off + last.Size; end != wantHeaderLen(typ, vv) {
				t.Errorf("Layout(%v, %v) ends at %d, want %d", typ, v, end, wantHeaderLen(typ, vv))
			}
		}
	}
}

// checkArrayLayout checks an array field of Layout against the typed
// views: unsched_cutoffs elements are what Cutoffs.UnschedCutoff reads, and
// the members of each acks element are what Ack.Entry reads.
func checkArrayLayout(t *testing.T, typ PacketType, v Version, f FieldLayout) {
	t.Helper()
	if f.Size%f.Count != 0 {
		t.Fatalf("%v %v %s: size %d is not %d elements", typ, v, f.Name, f.Size, f.Count)
	}
	n := f.Size / f.Count
	b := make([]byte, typ.HeaderLen(v))
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	b[11] = byte(typ)
	p := mustDecode(t, b, DecodeOptions{Version: v})
	for i := range f.Count {
		at := f.Off + i*n
		switch {
		case typ == TypeCutoffs && f.Name == "unsched_cutoffs" && f.Elem == nil:
			if got, want := p.Cutoffs().UnschedCutoff(i), get32(b, at); got != want || n != 4 {
				t.Errorf("unsched_cutoffs[%d]: layout reads %d (%d bytes), view %d", i, want, n, got)
			}
		case typ == TypeAck && f.Name == "acks":
			e := p.Ack().Entry(i)
			seen := map[string]bool{}
			for _, m := range f.Elem {
				seen[m.Name] = true
				var got, want uint64
				switch m.Name {
				case "client_id":
					got, want = e.ClientID, get64(b, at+m.Off)
				case "client_port":
					got, want = uint64(e.ClientPort), uint64(get16(b, at+m.Off))
				case "server_port":
					got, want = uint64(e.ServerPort), uint64(get16(b, at+m.Off))
				default:
					t.Errorf("acks member %q unknown", m.Name)
				}
				if got != want || m.Off+m.Size > n {
					t.Errorf("%v acks[%d].%s: layout reads %d at %d, view %d", v, i, m.Name, want, at+m.Off, got)
				}
			}
			if seen["client_port"] != (v == Version2024) {
				t.Errorf("%v acks: client_port in layout %v, want only in 2024", v, seen["client_port"])
			}
		default:
			t.Errorf("%v %v: unexpected array field %s", typ, v, f.Name)
		}
	}
}

func TestPacketFieldsTypes(t *testing.T) {
	for _, kv := range knownVectors {
		p := mustDecode(t, hexBytes(t, kv.hex), DecodeOptions{Version: kv.v})
		f := p.Fields()
		var ok bool
		switch kv.typ {
		case TypeData:
			_, ok = f.(*DataFields)
		case TypeGrant:
			_, ok = f.(*GrantFields)
		case TypeResend:
			_, ok = f.(*ResendFields)
		case TypeRPCUnknown:
			_, ok = f.(*RPCUnknownFields)
		case TypeBusy:
			_, ok = f.(*BusyFields)
		case TypeCutoffs:
			_, ok = f.(*CutoffsFields)
		case TypeFreeze:
			_, ok = f.(*FreezeFields)
		case TypeNeedAck:
			_, ok = f.(*NeedAckFields)
		case TypeAck:
			_, ok = f.(*AckFields)
		}
		if !ok || f.PacketType() != kv.typ || *f.CommonFields() != p.Common().Fields() {
			t.Errorf("%v/%v: Fields got %T (PacketType %v)", kv.typ, kv.v, f, f.PacketType())
		}
	}
}

func TestDecodeErrorStrings(t *testing.T) {
	for _, tc := range []struct {
		e    *DecodeError
		want string
	}{
		{&DecodeError{Type: TypeGrant, Field: "offset", Want: 32, Have: 30, Err: ErrTruncated},
			"truncated GRANT header: field offset needs 32 bytes, have 30"},
		{&DecodeError{Type: 0, Field: "sport", Want: 2, Have: 0, Err: ErrTruncated},
			"truncated Homa header: field sport needs 2 bytes, have 0"},
		{&DecodeError{Type: 0x42, Err: ErrUnknownType}, "unknown packet type 0x42 at offset 11"},
		{&DecodeError{Type: TypeCutoffs, Version: VersionUpstream, Err: ErrUnsupported},
			"packet type CUTOFFS does not exist in wire version upstream"},
		{&DecodeError{Type: TypeData, Field: "seg.offset", Err: ErrSegments}, "DATA seg.offset: bad GSO segment layout"},
		{&DecodeError{Type: TypeData, Field: "seg.offset", Err: ErrSegments, Detail: "x"}, "bad GSO DATA frame: x"},
		{&DecodeError{Type: TypeData, Field: "f", Err: errors.New("e"), Detail: "d"}, "DATA f: e: d"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error(): got %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.e, tc.e.Err) || tc.e.Unwrap() != tc.e.Err {
			t.Errorf("Unwrap: got %v, want %v", tc.e.Unwrap(), tc.e.Err)
		}
	}
}
