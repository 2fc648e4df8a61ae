package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
)

// allVersions lists every Version constant, VersionAuto first.
var allVersions = []Version{VersionAuto, VersionCurrent, Version2024, VersionUpstream, Version2025}

// TestLayoutTiles: in every type and version the fields of Layout follow
// one another from offset 0 to HeaderLen with no gap and no overlap, array
// elements tile their array, and the exported length constants agree with
// the tables. A field left out of a table leaves a gap here.
func TestLayoutTiles(t *testing.T) {
	maxLen := 0
	for _, typ := range AllTypes {
		for _, v := range allVersions {
			l := Layout(typ, v)
			if !typ.SupportedBy(v) {
				continue
			}
			end := 0
			for _, f := range l {
				if f.Off != end || f.Size <= 0 {
					t.Errorf("%v %v: field %s at %d+%d, want it to start at %d", typ, v, f.Name, f.Off, f.Size, end)
				}
				end = f.Off + f.Size
				if f.Count > 0 {
					checkElemTiles(t, fmt.Sprintf("%v %v %s", typ, v, f.Name), f)
				}
			}
			if end != typ.HeaderLen(v) {
				t.Errorf("%v %v: fields end at %d, HeaderLen %d", typ, v, end, typ.HeaderLen(v))
			}
			maxLen = max(maxLen, end)
			if n := len(CommonLayout()); !reflect.DeepEqual(l[:n], CommonLayout()) {
				t.Errorf("%v %v: layout does not start with the common header", typ, v)
			}
		}
	}
	c := CommonLayout()
	if last := c[len(c)-1]; last.Off+last.Size != CommonHeaderLen {
		t.Errorf("common header ends at %d, CommonHeaderLen %d", last.Off+last.Size, CommonHeaderLen)
	}
	if maxLen != MaxHeaderLen {
		t.Errorf("longest header %d bytes, MaxHeaderLen %d", maxLen, MaxHeaderLen)
	}
	if tcpHeaderLen != 20 {
		t.Errorf("tcpHeaderLen %d, want 20 (sport … urgent)", tcpHeaderLen)
	}
	for _, v := range allVersions {
		if n := TypeData.HeaderLen(v); n != DataHeaderLen {
			t.Errorf("DATA header in %v: %d bytes, DataHeaderLen %d", v, n, DataHeaderLen)
		}
		seg := Layout(TypeData, v)[len(Layout(TypeData, v))-1]
		if seg.Name != "seg.offset" || seg.Off != GSOPrefixLen || seg.Size != SegHeaderLen {
			t.Errorf("DATA in %v ends with %+v, want seg.offset at GSOPrefixLen, SegHeaderLen bytes", v, seg)
		}
	}
}

func checkElemTiles(t *testing.T, what string, f FieldLayout) {
	t.Helper()
	if f.Size%f.Count != 0 {
		t.Errorf("%s: %d bytes are not %d elements", what, f.Size, f.Count)
		return
	}
	end := 0
	for _, m := range f.Elem {
		if m.Off != end || m.Size <= 0 {
			t.Errorf("%s: member %s at %d+%d, want it to start at %d", what, m.Name, m.Off, m.Size, end)
		}
		end = m.Off + m.Size
	}
	if f.Elem != nil && end != f.Size/f.Count {
		t.Errorf("%s: members end at %d, element is %d bytes", what, end, f.Size/f.Count)
	}
}

// fillDistinct sets every integer of the Fields value f (common header and
// own fields, array and slice elements; not the forged Type nor the
// payload) so that no two bytes of the whole value are equal and none is
// zero: a getter, an encoder or a Layout entry that is off by even one
// byte, or reads another field, then sees a different value. Slices of
// ack entries get MaxAcksPerPkt elements.
func fillDistinct(f Fields) {
	next := byte(0)
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if v.Type() == reflect.TypeFor[PacketType]() {
				return
			}
			var x uint64
			for range v.Type().Size() {
				next++
				x = x<<8 | uint64(next)
			}
			v.SetUint(x)
		case reflect.Array:
			for i := range v.Len() {
				fill(v.Index(i))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return // Payload
			}
			v.Set(reflect.MakeSlice(v.Type(), MaxAcksPerPkt, MaxAcksPerPkt))
			for i := range v.Len() {
				fill(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		}
	}
	fill(reflect.ValueOf(f).Elem())
}

// byName flattens the JSON form of f (whose names follow HomaModule's) to
// dotted names as Layout spells them: the common header's fields without
// the "common." prefix, struct members as "ack.client_id", array elements
// as "acks[2].client_id" and "unsched_cutoffs[3]".
func byName(t *testing.T, f Fields) map[string]uint64 {
	t.Helper()
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // sender_id does not fit a float64
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, y := range x {
				p := prefix + k
				if prefix == "" && k == "common" {
					p = ""
				} else {
					p += "."
				}
				walk(p, y)
			}
		case []any:
			for i, y := range x {
				walk(fmt.Sprintf("%s[%d].", prefix[:len(prefix)-1], i), y)
			}
		case json.Number:
			n, err := strconv.ParseUint(string(x), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", prefix, err)
			}
			out[prefix[:len(prefix)-1]] = n
		default:
			t.Fatalf("%s: unexpected JSON %T", prefix, x)
		}
	}
	walk("", tree)
	return out
}

// layoutBytes reads every scalar of layout (array elements and their
// members too, named as byName names them) from b as a big-endian
// integer, at the offset and size Layout gives.
func layoutBytes(layout []FieldLayout, b []byte) map[string]uint64 {
	out := map[string]uint64{}
	read := func(name string, off, size int) {
		var x uint64
		for _, c := range b[off : off+size] {
			x = x<<8 | uint64(c)
		}
		out[name] = x
	}
	for _, f := range layout {
		if f.Count == 0 {
			read(f.Name, f.Off, f.Size)
			continue
		}
		n := f.Size / f.Count
		for i := range f.Count {
			name := fmt.Sprintf("%s[%d]", f.Name, i)
			if f.Elem == nil {
				read(name, f.Off+i*n, n)
			}
			for _, m := range f.Elem {
				read(name+"."+m.Name, f.Off+i*n+m.Off, m.Size)
			}
		}
	}
	return out
}

// TestGettersEncoderLayoutAgree encodes distinct values into every field
// of every type in every version and reads each back three ways: the
// bytes at Layout's offset and size, the typed views' getters (through
// Fields, as decoded) and Packet.Field. All three must agree with the
// value given to the encoder; a field the version lacks is neither encoded
// nor read (it decodes as 0).
func TestGettersEncoderLayoutAgree(t *testing.T) {
	for _, typ := range AllTypes {
		for _, v := range allVersions {
			if !typ.SupportedBy(v) {
				continue
			}
			t.Run(fmt.Sprintf("%v/%v", typ, v), func(t *testing.T) {
				in := fieldsFrom(typ, nil, nil)
				fillDistinct(in)
				b, err := in.AppendTo(nil, EncodeOptions{Version: v})
				if err != nil {
					t.Fatal(err)
				}
				dv := v
				if dv == VersionAuto {
					dv = VersionCurrent
				}
				p := mustDecode(t, b, DecodeOptions{Version: dv})
				layout := Layout(typ, v)
				raw := layoutBytes(layout, b)
				given, got := byName(t, in), byName(t, p.Fields())
				c := p.Common()
				// The common header's fields that JSON leaves out.
				given["type"], got["type"] = uint64(typ), uint64(c.Type())
				a, ga := in.CommonFields().Ack, c.AckBytes()
				given["ack"] = uint64(a[0])<<16 | uint64(a[1])<<8 | uint64(a[2])
				got["ack"] = uint64(ga[0])<<16 | uint64(ga[1])<<8 | uint64(ga[2])
				given["pad"], got["pad"] = 0, 0 // not in the Fields: encoded as zeros
				for name, r := range raw {
					g, okg := given[name]
					d, okd := got[name]
					switch {
					case !okg || !okd:
						t.Errorf("Layout field %s (%#x in the bytes): given %v, getter %v", name, r, okg, okd)
					case g != r || d != r:
						t.Errorf("%s: given %#x, encoded at Layout's offset as %#x, getter reads %#x", name, g, r, d)
					}
					if f, ok := p.Field(name); ok != !isArrayName(name) || ok && f != r {
						t.Errorf("Field(%q) = %#x, %v; Layout's bytes hold %#x", name, f, ok, r)
					}
				}
				for name, g := range given {
					if _, ok := raw[name]; ok {
						continue
					}
					// Not in this version's Layout: not encoded, reads 0.
					if d := got[name]; d != 0 {
						t.Errorf("%s (given %#x) is not in the %v layout, getter reads %#x", name, g, v, d)
					}
					if _, ok := p.Field(name); ok {
						t.Errorf("Field(%q) found a field the %v layout lacks", name, v)
					}
				}
				for i, c := range b {
					if c == 0 && !isPad(layout, i) {
						t.Errorf("byte %d of the encoding is 0: no field was encoded there", i)
					}
				}
			})
		}
	}
}

func isArrayName(name string) bool {
	for _, c := range name {
		if c == '[' {
			return true
		}
	}
	return false
}

func isPad(layout []FieldLayout, i int) bool {
	for _, f := range layout {
		if f.Name == "pad" && i >= f.Off && i < f.Off+f.Size {
			return true
		}
	}
	return false
}

// TestViewsOfOtherType: a typed view of a packet of another type is empty,
// whatever the type and version: its getters read zeros, its Fields are
// zero and its Bytes nil, so a caller that did not check Type reads
// nothing of another header (a GRANT's offset is not a DATA's
// message_length).
func TestViewsOfOtherType(t *testing.T) {
	for _, kv := range knownVectors {
		p := mustDecode(t, hexBytes(t, kv.hex), DecodeOptions{Version: kv.v})
		views := map[PacketType]struct {
			bytes  []byte
			fields any
			zero   any
		}{
			TypeData:       {p.Data().Bytes(), p.Data().Fields(), DataFields{}},
			TypeGrant:      {p.Grant().Bytes(), p.Grant().Fields(), GrantFields{}},
			TypeResend:     {p.Resend().Bytes(), p.Resend().Fields(), ResendFields{}},
			TypeRPCUnknown: {p.RPCUnknown().Bytes(), p.RPCUnknown().Fields(), RPCUnknownFields{}},
			TypeBusy:       {p.Busy().Bytes(), p.Busy().Fields(), BusyFields{}},
			TypeCutoffs:    {p.Cutoffs().Bytes(), p.Cutoffs().Fields(), CutoffsFields{}},
			TypeFreeze:     {p.Freeze().Bytes(), p.Freeze().Fields(), FreezeFields{}},
			TypeNeedAck:    {p.NeedAck().Bytes(), p.NeedAck().Fields(), NeedAckFields{}},
			TypeAck:        {p.Ack().Bytes(), p.Ack().Fields(), AckFields{Acks: []AckEntry{}}},
		}
		for typ, view := range views {
			if typ == kv.typ {
				if len(view.bytes) == 0 || reflect.DeepEqual(view.fields, view.zero) {
					t.Errorf("%v %v: its own view is empty", kv.typ, kv.v)
				}
				continue
			}
			if view.bytes != nil || !reflect.DeepEqual(view.fields, view.zero) {
				t.Errorf("%v view of a %v %v: got %d bytes, %+v; want an empty view", typ, kv.v, kv.typ, len(view.bytes), view.fields)
			}
		}
		if kv.typ == TypeData {
			continue
		}
		// The documented case, getter by getter: Data() of a control packet.
		d := p.Data()
		if d.MessageLength() != 0 || d.Incoming() != 0 || d.AckClientID() != 0 || d.AckServerPort() != 0 ||
			d.CutoffVersion() != 0 || d.Retransmit() != 0 || d.SegOffset() != 0 || d.Offset() != 0 ||
			d.DataLen() != 0 || d.Payload() != nil || d.IsGSO(1) || d.Common().SenderID() != 0 {
			t.Errorf("Data() of a %v %v reads non-zero: %+v", kv.v, kv.typ, d.Fields())
		}
		if segs, err := d.Segments(nil, MaxSegDataIPv4); err != nil || len(segs) != 1 || segs[0].Length != 0 || segs[0].Data != nil {
			t.Errorf("Data().Segments of a %v: got %+v, %v; want one empty segment", kv.typ, segs, err)
		}
	}
}

// TestFieldByName: Packet.Field reads a known encoding's fields by their
// HomaModule names and reports what the type, the version or the capture
// lacks.
func TestFieldByName(t *testing.T) {
	g := mustDecode(t, hexBytes(t, grant2024Hex), DecodeOptions{Version: Version2024})
	for name, want := range map[string]uint64{
		"offset": uint64(g.Grant().Offset()), "priority": uint64(g.Grant().Priority()),
		"resend_all": uint64(g.Grant().ResendAll()), "sender_id": g.SenderID(), "type": uint64(TypeGrant),
	} {
		if got, ok := g.Field(name); !ok || got != want {
			t.Errorf("GRANT 2024 Field(%q) = %d, %v; want %d, true", name, got, ok, want)
		}
	}
	gc := mustDecode(t, hexBytes(t, grantCurrentHex), DecodeOptions{Version: VersionCurrent})
	for _, name := range []string{"resend_all", "message_length", "acks", "", "nosuch"} {
		if got, ok := gc.Field(name); ok {
			t.Errorf("GRANT current Field(%q) = %d, true; want false", name, got)
		}
	}
	// A truncated capture: the fields past the captured bytes are absent.
	d := mustDecode(t, hexBytes(t, dataCurrentHex), DecodeOptions{Version: VersionCurrent})
	short := Packet{b: d.Bytes()[:40], wireLen: uint32(d.WireLen()), packetKind: packetKind{v: d.Version(), t: d.Type()}}
	if _, ok := short.Field("ack.client_id"); ok {
		t.Errorf("Field(ack.client_id) of a 40-byte capture: found, want absent")
	}
	if got, ok := short.Field("incoming"); !ok || got != uint64(d.Data().Incoming()) {
		t.Errorf("Field(incoming) of a 40-byte capture: %d, %v; want %d", got, ok, d.Data().Incoming())
	}
	var zero Packet
	if _, ok := zero.Field("sport"); ok {
		t.Errorf("Field of the zero Packet: found")
	}
	if n := testing.AllocsPerRun(100, func() { sinkU64, _ = d.Field("seg.offset") }); n != 0 {
		t.Errorf("Field: %v allocs/op, want 0", n)
	}
}

// TestLayoutField finds each field of every layout by its name, and none
// that the type or version lacks.
func TestLayoutField(t *testing.T) {
	for _, typ := range AllTypes {
		for _, v := range allVersions {
			for _, f := range Layout(typ, v) {
				if got, ok := LayoutField(typ, v, f.Name); !ok || !reflect.DeepEqual(got, f) {
					t.Errorf("LayoutField(%v, %v, %q) = %+v, %v; want %+v", typ, v, f.Name, got, ok, f)
				}
			}
		}
	}
	for _, c := range []struct {
		t    PacketType
		v    Version
		name string
		off  int
	}{
		{TypeData, VersionCurrent, "retransmit", 48}, {TypeData, Version2024, "retransmit", 50},
		{TypeGrant, Version2024, "resend_all", 33}, {TypeGrant, VersionCurrent, "resend_all", -1},
		{TypeGrant, VersionUpstream, "offset", -1}, {TypeResend, VersionUpstream, "priority", -1},
		{TypeAck, Version2024, "acks", 30}, {TypeBusy, VersionCurrent, "sender_id", 20},
		{TypeBusy, VersionCurrent, "offset", -1}, {PacketType(0x30), VersionCurrent, "sport", -1},
	} {
		f, ok := LayoutField(c.t, c.v, c.name)
		if ok != (c.off >= 0) || ok && f.Off != c.off {
			t.Errorf("LayoutField(%v, %v, %q) = %+v, %v; want offset %d", c.t, c.v, c.name, f, ok, c.off)
		}
	}
}
