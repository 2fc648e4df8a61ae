package wire

import (
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// hexBytes decodes a hand-written hex dump. Each line may carry a trailing
// "//" comment; spaces, tabs and '|' separators are ignored. It fails the
// test on malformed input so typos in known encodings cannot go unnoticed.
func hexBytes(tb testing.TB, s string) []byte {
	tb.Helper()
	var sb strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		for _, r := range line {
			switch r {
			case ' ', '\t', '|', '\r':
			default:
				sb.WriteRune(r)
			}
		}
	}
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		tb.Fatalf("bad hex literal: %v", err)
	}
	return b
}

// exact returns a copy of b whose capacity equals its length, so that a
// decoder that reslices past len(b) would be caught.
func exact(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c[:len(b):len(b)]
}

// span is one wire field as read from facts.md §1.3/§1.4 (written here
// independently of layout.go).
type span struct {
	name      string
	off, size int
}

var commonSpans = []span{
	{"sport", 0, 2}, {"dport", 2, 2}, {"sequence", 4, 4}, {"ack", 8, 3}, {"type", 11, 1},
	{"doff", 12, 1}, {"flags", 13, 1}, {"window", 14, 2}, {"checksum", 16, 2},
	{"urgent", 18, 2}, {"sender_id", 20, 8},
}

func withCommonSpans(s ...span) []span { return append(append([]span(nil), commonSpans...), s...) }

// spansFor returns the facts.md layout of type t in version v.
func spansFor(t PacketType, v Version) []span {
	switch t {
	case TypeData:
		if v == Version2024 {
			return withCommonSpans(span{"message_length", 28, 4}, span{"incoming", 32, 4},
				span{"ack.client_id", 36, 8}, span{"ack.client_port", 44, 2}, span{"ack.server_port", 46, 2},
				span{"cutoff_version", 48, 2}, span{"retransmit", 50, 1}, span{"pad", 51, 1}, span{"seg.offset", 52, 4})
		}
		return withCommonSpans(span{"message_length", 28, 4}, span{"incoming", 32, 4},
			span{"ack.client_id", 36, 8}, span{"ack.server_port", 44, 2}, span{"cutoff_version", 46, 2},
			span{"retransmit", 48, 1}, span{"pad", 49, 3}, span{"seg.offset", 52, 4})
	case TypeGrant:
		if v == Version2024 {
			return withCommonSpans(span{"offset", 28, 4}, span{"priority", 32, 1}, span{"resend_all", 33, 1})
		}
		return withCommonSpans(span{"offset", 28, 4}, span{"priority", 32, 1})
	case TypeResend:
		if v == VersionUpstream {
			return withCommonSpans(span{"offset", 28, 4}, span{"length", 32, 4})
		}
		return withCommonSpans(span{"offset", 28, 4}, span{"length", 32, 4}, span{"priority", 36, 1})
	case TypeCutoffs:
		return withCommonSpans(span{"unsched_cutoffs", 28, 32}, span{"cutoff_version", 60, 2})
	case TypeAck:
		if v == Version2024 {
			return withCommonSpans(span{"num_acks", 28, 2}, span{"acks", 30, 60})
		}
		return withCommonSpans(span{"num_acks", 28, 2}, span{"acks", 30, 50})
	}
	return withCommonSpans()
}

// wantHeaderLen is the per-type header length from facts.md §1.2.
func wantHeaderLen(t PacketType, v Version) int {
	switch t {
	case TypeData:
		return 56
	case TypeGrant:
		if v == Version2024 || v == Version2025 {
			return 34
		}
		return 33
	case TypeResend:
		if v == VersionUpstream {
			return 36
		}
		return 37
	case TypeCutoffs:
		return 62
	case TypeAck:
		if v == Version2024 {
			return 90
		}
		return 80
	}
	return 28
}

// firstMissing returns the first span that does not fit in n bytes.
func firstMissing(spans []span, n int) span {
	for _, s := range spans {
		if s.off+s.size > n {
			return s
		}
	}
	return span{}
}

// checkPrefixes decodes every prefix of full shorter than the header length
// of t in v and checks that each fails with a *DecodeError wrapping
// ErrTruncated whose Type, Version, Field, Want and Have are right.
func checkPrefixes(t *testing.T, full []byte, typ PacketType, v Version) {
	t.Helper()
	hl := wantHeaderLen(typ, v)
	if len(full) < hl {
		t.Fatalf("test vector has %d bytes, shorter than header %d", len(full), hl)
	}
	spans := spansFor(typ, v)
	for n := 0; n < hl; n++ {
		var p Packet
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("prefix %d: Decode panicked: %v", n, r)
				}
			}()
			p, err = Decode(exact(full[:n]), DecodeOptions{Version: v})
		}()
		if err == nil {
			t.Errorf("prefix %d of %s/%s: got nil error, want ErrTruncated", n, typ, v)
			continue
		}
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("prefix %d: got error %T %v, want *DecodeError", n, err, err)
			continue
		}
		if !errors.Is(err, ErrTruncated) {
			t.Errorf("prefix %d: got %v, want errors.Is(ErrTruncated)", n, err)
		}
		wantType := PacketType(0)
		if n >= 12 {
			wantType = typ
		}
		want := firstMissing(spans, n)
		if de.Type != wantType {
			t.Errorf("prefix %d: Type got %v, want %v", n, de.Type, wantType)
		}
		if n >= 12 && de.Version != v {
			t.Errorf("prefix %d: Version got %v, want %v", n, de.Version, v)
		}
		if de.Field != want.name {
			t.Errorf("prefix %d: Field got %q, want %q", n, de.Field, want.name)
		}
		if de.Want != want.off+want.size {
			t.Errorf("prefix %d: Want got %d, want %d", n, de.Want, want.off+want.size)
		}
		if de.Have != n {
			t.Errorf("prefix %d: Have got %d, want %d", n, de.Have, n)
		}
		if p.Bytes() != nil || p.Type() != 0 || p.WireLen() != 0 {
			t.Errorf("prefix %d: got non-zero Packet %+v on error", n, p)
		}
		if msg := err.Error(); msg == "" || !strings.Contains(msg, want.name) {
			t.Errorf("prefix %d: Error() = %q, want it to name field %q", n, msg, want.name)
		}
		checkPartialPrefix(t, full, n, typ, v)
	}
}

// checkPartialPrefix decodes the first n bytes of full (a whole packet of
// type typ in version v) as a capture cut there by a snap length, with
// DecodeOptions.Partial: past the common header it must give the readable
// view (Partial, the type and version, every captured field as in the
// whole packet, Has exactly for those) beside the same truncation error;
// before it, or when the packet was not cut (no WireLen), the zero Packet.
func checkPartialPrefix(t *testing.T, full []byte, n int, typ PacketType, v Version) {
	t.Helper()
	whole := mustDecode(t, full, DecodeOptions{Version: v})
	hl := wantHeaderLen(typ, v)
	var p Packet
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("prefix %d: partial Decode panicked: %v", n, r)
			}
		}()
		p, err = Decode(exact(full[:n]), DecodeOptions{Version: v, WireLen: len(full), Partial: true})
	}()
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("prefix %d: partial Decode error %v, want ErrTruncated", n, err)
	}
	if short, _ := Decode(exact(full[:n]), DecodeOptions{Version: v, Partial: true}); short.Bytes() != nil || short.Partial() {
		t.Errorf("prefix %d without WireLen (sent short, not cut): got a view %+v, want the zero Packet", n, short)
	}
	if n < CommonHeaderLen {
		if p.Bytes() != nil || p.Partial() {
			t.Errorf("prefix %d: common header cut, got a view %+v, want the zero Packet", n, p)
		}
		return
	}
	if !p.Partial() || p.Type() != typ || p.Version() != v || len(p.Bytes()) != n || p.WireLen() != len(full) || !p.Truncated() || p.HeaderLen() != hl {
		t.Fatalf("prefix %d: partial view Partial %v type %v version %v len %d wire %d, want true %v %v %d %d", n, p.Partial(), p.Type(), p.Version(), len(p.Bytes()), p.WireLen(), typ, v, n, len(full))
	}
	if p.Common().Fields() != whole.Common().Fields() || p.SenderID() != whole.SenderID() || p.Role() != whole.Role() {
		t.Errorf("prefix %d: common header %+v, want %+v", n, p.Common().Fields(), whole.Common().Fields())
	}
	for _, f := range append(slices.Clone(CommonLayout()), Layout(typ, v)...) {
		captured := f.Off+f.Size <= n
		if p.Has(f.Name) != captured {
			t.Errorf("prefix %d: Has(%q) = %v, want %v (field at [%d, %d))", n, f.Name, p.Has(f.Name), captured, f.Off, f.Off+f.Size)
		}
		got, ok := p.Field(f.Name)
		want, wok := whole.Field(f.Name)
		if ok != (captured && wok) || ok && got != want {
			t.Errorf("prefix %d: Field(%q) = %d, %v; whole packet %d, %v", n, f.Name, got, ok, want, wok)
		}
	}
	if p.Has("no_such_field") {
		t.Errorf("prefix %d: Has of an unknown field", n)
	}
	// Complete: only an ACK whose num_acks entries were all captured; its
	// Fields (num_acks and those entries) are then the whole packet's.
	wantComplete := false
	if typ == TypeAck && n >= 30 {
		a := whole.Ack()
		wantComplete = true
		for i := range a.ValidAcks() {
			for _, m := range Layout(TypeAck, v) {
				if m.Name == "acks" && m.Off+(i+1)*m.Size/m.Count > n {
					wantComplete = false
				}
			}
		}
	}
	if p.Complete() != wantComplete {
		t.Errorf("prefix %d of %s/%s (num_acks %d): Complete %v, want %v", n, typ, v, whole.Ack().NumAcks(), p.Complete(), wantComplete)
	}
	if p.Complete() && fmt.Sprint(p.Fields()) != fmt.Sprint(whole.Fields()) {
		t.Errorf("prefix %d: a Complete cut has Fields %v, the whole packet %v", n, p.Fields(), whole.Fields())
	}
	// Every view reads without panicking; a DATA view has no segments.
	_ = p.Fields()
	if typ == TypeData {
		if segs, err := p.Data().Segments(nil, MaxSegDataIPv4); len(segs) != 0 || !errors.Is(err, ErrTruncated) {
			t.Errorf("prefix %d: Segments of a partial DATA = %v, %v; want none and ErrTruncated", n, segs, err)
		}
		if len(p.Data().Payload()) != 0 {
			t.Errorf("prefix %d: partial DATA has a payload", n)
		}
	}
}

// mustDecode decodes b with o and fails the test on error.
func mustDecode(t testing.TB, b []byte, o DecodeOptions) Packet {
	t.Helper()
	p, err := Decode(b, o)
	if err != nil {
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	return p
}

// checkCommon compares every accessor of the common header view c with want.
func checkCommon(t *testing.T, c Common, want CommonFields) {
	t.Helper()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Sport", c.Sport(), want.Sport},
		{"Dport", c.Dport(), want.Dport},
		{"Sequence", c.Sequence(), want.Sequence},
		{"AckBytes", c.AckBytes(), want.Ack},
		{"Type", c.Type(), want.Type},
		{"Doff", c.Doff(), want.Doff},
		{"Flags", c.Flags(), want.Flags},
		{"Window", c.Window(), want.Window},
		{"Checksum", c.Checksum(), want.Checksum},
		{"Urgent", c.Urgent(), want.Urgent},
		{"SenderID", c.SenderID(), want.SenderID},
		{"HasMarks", c.HasMarks(), want.Flags == 0x06 && want.Urgent == 0xB97D},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("Common.%s: got %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if got := c.Fields(); got != want {
		t.Errorf("Common.Fields:\n got %+v\nwant %+v", got, want)
	}
}

// checkPacket checks the generic Packet accessors.
func checkPacket(t *testing.T, p Packet, b []byte, typ PacketType, v Version, wireLen int) {
	t.Helper()
	if p.Type() != typ {
		t.Errorf("Type: got %v, want %v", p.Type(), typ)
	}
	if p.Version() != v {
		t.Errorf("Version: got %v, want %v", p.Version(), v)
	}
	if got, want := p.HeaderLen(), wantHeaderLen(typ, v); got != want {
		t.Errorf("HeaderLen: got %d, want %d", got, want)
	}
	if len(p.Bytes()) != len(b) || (len(b) > 0 && &p.Bytes()[0] != &b[0]) {
		t.Errorf("Bytes: got %d bytes (aliasing input: %v), want the %d input bytes without copy",
			len(p.Bytes()), len(p.Bytes()) > 0 && len(b) > 0 && &p.Bytes()[0] == &b[0], len(b))
	}
	if p.WireLen() != wireLen {
		t.Errorf("WireLen: got %d, want %d", p.WireLen(), wireLen)
	}
	if got, want := p.Truncated(), len(b) < wireLen; got != want {
		t.Errorf("Truncated: got %v, want %v", got, want)
	}
	sid := get64(b, 20)
	if p.SenderID() != sid {
		t.Errorf("SenderID: got %#x, want %#x", p.SenderID(), sid)
	}
	if got, want := p.Role(), Role(sid&1); got != want {
		t.Errorf("Role: got %v, want %v", got, want)
	}
	if p.Fields() == nil || p.Fields().PacketType() != typ {
		t.Errorf("Fields: got %T, want Fields of %v", p.Fields(), typ)
	}
}

// normalize makes nil and empty slices compare equal.
func normalize(f Fields) Fields {
	switch x := f.(type) {
	case *DataFields:
		y := *x
		if len(y.Payload) == 0 {
			y.Payload = nil
		}
		return &y
	case *AckFields:
		y := *x
		if len(y.Acks) == 0 {
			y.Acks = nil
		}
		return &y
	}
	return f
}

// fieldsEqual compares two Fields values with reflect.DeepEqual after
// normalising nil/empty slices.
func fieldsEqual(a, b Fields) bool { return reflect.DeepEqual(normalize(a), normalize(b)) }

func showFields(f Fields) string { return fmt.Sprintf("%T%+v", f, normalize(f)) }

// wantDecoded returns what Decode(...).Fields() must give for f encoded in
// version v with options o (ignoring the checksum when o.ComputeChecksums).
func wantDecoded(f Fields, v Version, o EncodeOptions) Fields {
	if v == VersionAuto {
		v = VersionCurrent
	}
	c := *f.CommonFields()
	if c.Type == 0 {
		c.Type = f.PacketType()
	}
	if o.FixLengths {
		if f.PacketType() == TypeData {
			c.Doff = 0xE0
		} else {
			c.Doff = 0x50
		}
	}
	if o.SetMarks {
		if v == VersionUpstream {
			c.Flags, c.Urgent = 0, 0
		} else {
			c.Flags, c.Urgent = 0x06, 0xB97D
		}
	}
	switch x := f.(type) {
	case *DataFields:
		y := *x
		y.Common = c
		if v != Version2024 {
			y.Ack.ClientPort = 0
		}
		return normalize(&y)
	case *GrantFields:
		y := *x
		y.Common = c
		if v != Version2024 && v != Version2025 {
			y.ResendAll = 0
		}
		return &y
	case *ResendFields:
		y := *x
		y.Common = c
		if v == VersionUpstream {
			y.Priority = 0
		}
		return &y
	case *CutoffsFields:
		y := *x
		y.Common = c
		return &y
	case *AckFields:
		num := x.NumAcks
		if o.FixLengths {
			num = uint16(min(len(x.Acks), 5))
		}
		n := min(int(num), 5)
		acks := make([]AckEntry, n)
		for i := range acks {
			if i < len(x.Acks) {
				acks[i] = x.Acks[i]
				if v != Version2024 {
					acks[i].ClientPort = 0
				}
			}
		}
		return normalize(&AckFields{Common: c, NumAcks: num, Acks: acks})
	case *RPCUnknownFields:
		return &RPCUnknownFields{Common: c}
	case *BusyFields:
		return &BusyFields{Common: c}
	case *FreezeFields:
		return &FreezeFields{Common: c}
	case *NeedAckFields:
		return &NeedAckFields{Common: c}
	}
	panic(fmt.Sprintf("unknown Fields %T", f))
}

// checkRoundTrip encodes f for version v with FixLengths+SetMarks, decodes the
// result and compares it with f.
func checkRoundTrip(t *testing.T, f Fields, v Version) {
	t.Helper()
	o := EncodeOptions{Version: v, FixLengths: true, SetMarks: true}
	b, err := f.AppendTo(nil, o)
	if err != nil {
		t.Fatalf("AppendTo(%v): got error %v, want nil", v, err)
	}
	payload := 0
	if d, ok := f.(*DataFields); ok {
		payload = len(d.Payload)
	}
	if want := wantHeaderLen(f.PacketType(), v) + payload; len(b) != want {
		t.Errorf("encoded length: got %d, want %d", len(b), want)
	}
	if got := f.PacketType().HeaderLen(v); got != wantHeaderLen(f.PacketType(), v) {
		t.Errorf("HeaderLen: got %d, want %d", got, wantHeaderLen(f.PacketType(), v))
	}
	enc, err := Encode(f, o)
	if err != nil || string(enc) != string(b) {
		t.Errorf("Encode differs from AppendTo(nil): %x vs %x (err %v)", enc, b, err)
	}
	p, err := Decode(b, DecodeOptions{Version: v})
	if err != nil {
		t.Fatalf("Decode: got error %v, want nil", err)
	}
	if p.HeaderLen() != wantHeaderLen(f.PacketType(), v) {
		t.Errorf("decoded HeaderLen: got %d, want %d", p.HeaderLen(), wantHeaderLen(f.PacketType(), v))
	}
	want := wantDecoded(f, v, o)
	if got := p.Fields(); !fieldsEqual(got, want) {
		t.Errorf("round trip %v:\n got %s\nwant %s", v, showFields(got), showFields(want))
	}
	// With the marks set, auto-detection from the IP protocol must find the
	// same version (2025 differs from current only in its GRANT).
	pa, err := Decode(b, DecodeOptions{IPProto: v.IPProtocol()})
	if err != nil {
		t.Fatalf("Decode auto: got error %v, want nil", err)
	}
	wantV := v
	if v == Version2025 && f.PacketType() != TypeGrant {
		wantV = VersionCurrent
	}
	if pa.Version() != wantV {
		t.Errorf("auto-detected version: got %v, want %v", pa.Version(), wantV)
	}
}

// versionsOf lists the wire versions that have type t.
func versionsOf(t PacketType) []Version {
	var vs []Version
	for _, v := range []Version{VersionCurrent, Version2024, VersionUpstream, Version2025} {
		if t != TypeGrant && t != TypeCutoffs && t != TypeFreeze || v != VersionUpstream {
			vs = append(vs, v)
		}
	}
	return vs
}
