package wire

import (
	"bytes"
	"testing"
)

// commonHex: a 28-byte common header with a distinct value in every field
// (facts.md §1.3), type BUSY.
const commonHex = `
a1a2             // 0 sport
b1b2             // 2 dport
c1c2c3c4         // 4 sequence
d1d2d3           // 8 ack[3]
14               // 11 type
50               // 12 doff
06               // 13 flags
e1e2             // 14 window
f1f2             // 16 checksum
b97d             // 18 urgent
0102030405060708 // 20 sender_id
`

var commonWant = CommonFields{
	Sport: 0xa1a2, Dport: 0xb1b2, Sequence: 0xc1c2c3c4, Ack: [3]byte{0xd1, 0xd2, 0xd3}, Type: TypeBusy,
	Doff: 0x50, Flags: 0x06, Window: 0xe1e2, Checksum: 0xf1f2, Urgent: 0xB97D, SenderID: 0x0102030405060708,
}

func TestCommonAccessors(t *testing.T) {
	b := hexBytes(t, commonHex)
	if len(b) != 28 {
		t.Fatalf("vector length %d, want 28", len(b))
	}
	checkCommon(t, Common(b), commonWant)
	// The view over a longer slice reads the same values.
	checkCommon(t, Common(append(b, 0xff, 0xff)), commonWant)
}

func TestCommonHasMarks(t *testing.T) {
	for _, tc := range []struct {
		flags  uint8
		urgent uint16
		want   bool
	}{
		{0x06, 0xB97D, true},
		{0x00, 0x0000, false},
		{0x06, 0x0000, false},
		{0x00, 0xB97D, false},
		{0x07, 0xB97D, false},
		{0x06, 0xB97C, false},
		{0x26, 0xB97D, false}, // URG bit set: not the Homa mark
	} {
		b := hexBytes(t, commonHex)
		b[13] = tc.flags
		b[18], b[19] = byte(tc.urgent>>8), byte(tc.urgent)
		if got := Common(b).HasMarks(); got != tc.want {
			t.Errorf("HasMarks(flags %#02x, urgent %#04x): got %v, want %v", tc.flags, tc.urgent, got, tc.want)
		}
	}
}

// TestCommonShort checks the documented "never panics" contract of Common
// on short slices: getters read zero for fields past the end, setters do
// nothing there.
func TestCommonShort(t *testing.T) {
	full := hexBytes(t, commonHex)
	for n := 0; n < 28; n++ {
		c := Common(exact(full[:n]))
		fits := func(off, size int) bool { return off+size <= n }
		want := CommonFields{}
		if fits(0, 2) {
			want.Sport = commonWant.Sport
		}
		if fits(2, 2) {
			want.Dport = commonWant.Dport
		}
		if fits(4, 4) {
			want.Sequence = commonWant.Sequence
		}
		for i := range 3 {
			if fits(8+i, 1) {
				want.Ack[i] = commonWant.Ack[i]
			}
		}
		if fits(11, 1) {
			want.Type = commonWant.Type
		}
		if fits(12, 1) {
			want.Doff = commonWant.Doff
		}
		if fits(13, 1) {
			want.Flags = commonWant.Flags
		}
		if fits(14, 2) {
			want.Window = commonWant.Window
		}
		if fits(16, 2) {
			want.Checksum = commonWant.Checksum
		}
		if fits(18, 2) {
			want.Urgent = commonWant.Urgent
		}
		if got := c.Fields(); got != want {
			t.Errorf("len %d: Fields got %+v, want %+v", n, got, want)
		}
		before := append([]byte(nil), c...)
		c.SetSport(1)
		c.SetDport(2)
		c.SetSequence(3)
		c.SetType(TypeAck)
		c.SetDoff(4)
		c.SetFlags(5)
		c.SetChecksum(6)
		c.SetUrgent(7)
		c.SetSenderID(8)
		// Setters write only fields that fit entirely.
		for i := range before {
			changed := before[i] != c[i]
			inWholeField := false
			for _, s := range []span{{"sport", 0, 2}, {"dport", 2, 2}, {"sequence", 4, 4}, {"type", 11, 1},
				{"doff", 12, 1}, {"flags", 13, 1}, {"checksum", 16, 2}, {"urgent", 18, 2}, {"sender_id", 20, 8}} {
				if i >= s.off && i < s.off+s.size && fits(s.off, s.size) {
					inWholeField = true
				}
			}
			if changed && !inWholeField {
				t.Errorf("len %d: setter changed byte %d of a partial field", n, i)
			}
		}
	}
}

func TestCommonSetters(t *testing.T) {
	c := Common(make([]byte, 28))
	c.SetSport(0xa1a2)
	c.SetDport(0xb1b2)
	c.SetSequence(0xc1c2c3c4)
	c.SetType(TypeBusy)
	c.SetDoff(0x50)
	c.SetFlags(0x06)
	c.SetChecksum(0xf1f2)
	c.SetUrgent(0xB97D)
	c.SetSenderID(0x0102030405060708)
	want := hexBytes(t, commonHex)
	// There are no setters for ack[3] and window.
	want[8], want[9], want[10], want[14], want[15] = 0, 0, 0, 0, 0
	if !bytes.Equal(c, want) {
		t.Errorf("setters:\n got %x\nwant %x", []byte(c), want)
	}
}

// TestCommonFieldsEncode checks CommonFields, including a forged opcode.
func TestCommonFieldsEncode(t *testing.T) {
	f := BusyFields{Common: commonWant}
	f.Common.Type = 0 // the Fields' own type
	got, err := f.AppendTo(nil, EncodeOptions{})
	if want := hexBytes(t, commonHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("BUSY encoding:\n got %x (err %v)\nwant %x", got, err, want)
	}
	// Forge a NEED_ACK opcode in a BUSY-shaped packet.
	f.Common.Type = TypeNeedAck
	got, err = f.AppendTo(nil, EncodeOptions{})
	if err != nil || len(got) != 28 || got[11] != 0x17 {
		t.Fatalf("forged type: got %x (err %v), want 28 bytes with byte 11 = 0x17", got, err)
	}
	p := mustDecode(t, got, DecodeOptions{Version: VersionCurrent})
	if p.Type() != TypeNeedAck {
		t.Errorf("forged type decodes as %v, want NEED_ACK", p.Type())
	}
	// Forge an invalid opcode: Decode rejects it.
	f.Common.Type = 0x42
	got, _ = f.AppendTo(nil, EncodeOptions{})
	if _, err := Decode(got, DecodeOptions{}); err == nil {
		t.Errorf("forged opcode 0x42 decoded without error")
	}
	if got := (&f).CommonFields(); got != &f.Common {
		t.Errorf("CommonFields: got %p, want %p", got, &f.Common)
	}
}
