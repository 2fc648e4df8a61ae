package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// dataCurrentHex is a DATA packet in the current layout (facts.md §1.4),
// written field by field: single-segment initial transmission, so seg.offset
// is the 0xFFFFFFFF sentinel and the offset is in common.sequence.
const dataCurrentHex = `
8001             // 0  sport 32769
0fa0             // 2  dport 4000
00002c80         // 4  sequence 11392
a1a2a3           // 8  ack[3]
10               // 11 type DATA
e0               // 12 doff 14 words
06               // 13 flags SYN+RST
1415             // 14 window
1617             // 16 checksum
b97d             // 18 urgent
1122334455667788 // 20 sender_id (even: client)
000186a0         // 28 message_length 100000
00009c40         // 32 incoming 40000
2122232425262728 // 36 ack.client_id
0bb8             // 44 ack.server_port 3000
0007             // 46 cutoff_version 7
01               // 48 retransmit
000000           // 49 pad
ffffffff         // 52 seg.offset: use sequence
68656c6c6f21     // 56 data "hello!"
`

// data2024Hex is a DATA packet in the linux_6.1.38 layout (facts.md §1.4
// "DATA, 6.1.38 variant"): a post-GSO segment whose seg.offset (2848) is the
// true offset while sequence (0) is the offset of the batch's first segment.
const data2024Hex = `
8002 0fa0        // 0 sport 32770, 2 dport 4000
00000000         // 4 sequence 0
000000 10        // 8 ack[3], 11 type DATA
d0 06 0000       // 12 doff 13 words, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
000000000000000d // 20 sender_id 13 (odd: server)
00007530         // 28 message_length 30000
00002710         // 32 incoming 10000
000000000000000a // 36 ack.client_id 10
8001             // 44 ack.client_port 32769
0fa0             // 46 ack.server_port 4000
0001             // 48 cutoff_version 1
01               // 50 retransmit
00               // 51 pad
00000b20         // 52 seg.offset 2848
61626364         // 56 data "abcd"
`

type dataWant struct {
	common                             CommonFields
	msgLen, incoming                   uint32
	ackID                              uint64
	ackClientPort, ackServerPort, cutV uint16
	retransmit                         uint8
	segOffset, offset                  uint32
	dataLen                            int
	payload                            []byte
}

func checkData(t *testing.T, d Data, w dataWant) {
	t.Helper()
	checkCommon(t, d.Common(), w.common)
	checks := []struct {
		name      string
		got, want any
	}{
		{"MessageLength", d.MessageLength(), w.msgLen},
		{"Incoming", d.Incoming(), w.incoming},
		{"AckClientID", d.AckClientID(), w.ackID},
		{"AckClientPort", d.AckClientPort(), w.ackClientPort},
		{"AckServerPort", d.AckServerPort(), w.ackServerPort},
		{"CutoffVersion", d.CutoffVersion(), w.cutV},
		{"Retransmit", d.Retransmit(), w.retransmit},
		{"SegOffset", d.SegOffset(), w.segOffset},
		{"Offset", d.Offset(), w.offset},
		{"DataLen", d.DataLen(), w.dataLen},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("Data.%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if !bytes.Equal(d.Payload(), w.payload) {
		t.Errorf("Data.Payload: got %x, want %x", d.Payload(), w.payload)
	}
	wantFields := DataFields{
		Common: w.common, MessageLength: w.msgLen, Incoming: w.incoming,
		Ack:           AckEntry{ClientID: w.ackID, ClientPort: w.ackClientPort, ServerPort: w.ackServerPort},
		CutoffVersion: w.cutV, Retransmit: w.retransmit, SegOffset: w.segOffset, Payload: w.payload,
	}
	if got := d.Fields(); !fieldsEqual(&got, &wantFields) {
		t.Errorf("Data.Fields:\n got %s\nwant %s", showFields(&got), showFields(&wantFields))
	}
}

var dataCurrentCommon = CommonFields{
	Sport: 32769, Dport: 4000, Sequence: 11392, Ack: [3]byte{0xa1, 0xa2, 0xa3}, Type: TypeData,
	Doff: 0xE0, Flags: 0x06, Window: 0x1415, Checksum: 0x1617, Urgent: 0xB97D, SenderID: 0x1122334455667788,
}

func TestDataKnownEncoding(t *testing.T) {
	cur := hexBytes(t, dataCurrentHex)
	v24 := hexBytes(t, data2024Hex)
	if len(cur) != 62 || len(v24) != 60 {
		t.Fatalf("vector lengths %d, %d; want 62, 60", len(cur), len(v24))
	}
	tests := []struct {
		name string
		b    []byte
		opt  DecodeOptions
		v    Version
		want dataWant
	}{
		{
			name: "current", b: cur, opt: DecodeOptions{Version: VersionCurrent}, v: VersionCurrent,
			want: dataWant{
				common: dataCurrentCommon, msgLen: 100000, incoming: 40000, ackID: 0x2122232425262728,
				ackClientPort: 0, ackServerPort: 3000, cutV: 7, retransmit: 1,
				segOffset: 0xFFFFFFFF, offset: 11392, dataLen: 6, payload: []byte("hello!"),
			},
		},
		{
			name: "current/auto-146", b: cur, opt: DecodeOptions{IPProto: 146}, v: VersionCurrent,
			want: dataWant{
				common: dataCurrentCommon, msgLen: 100000, incoming: 40000, ackID: 0x2122232425262728,
				ackClientPort: 0, ackServerPort: 3000, cutV: 7, retransmit: 1,
				segOffset: 0xFFFFFFFF, offset: 11392, dataLen: 6, payload: []byte("hello!"),
			},
		},
		{
			// The same bytes read with the 2024 layout: bytes 44..51 shift
			// meaning (client_port, server_port, cutoff_version, retransmit).
			name: "current-bytes-as-2024", b: cur, opt: DecodeOptions{Version: Version2024}, v: Version2024,
			want: dataWant{
				common: dataCurrentCommon, msgLen: 100000, incoming: 40000, ackID: 0x2122232425262728,
				ackClientPort: 3000, ackServerPort: 7, cutV: 0x0100, retransmit: 0,
				segOffset: 0xFFFFFFFF, offset: 11392, dataLen: 6, payload: []byte("hello!"),
			},
		},
		{
			name: "2024", b: v24, opt: DecodeOptions{Version: Version2024}, v: Version2024,
			want: dataWant{
				common: CommonFields{Sport: 32770, Dport: 4000, Type: TypeData, Doff: 0xD0, Flags: 0x06,
					Urgent: 0xB97D, SenderID: 13},
				msgLen: 30000, incoming: 10000, ackID: 10, ackClientPort: 32769, ackServerPort: 4000,
				cutV: 1, retransmit: 1, segOffset: 2848, offset: 2848, dataLen: 4, payload: []byte("abcd"),
			},
		},
		{
			name: "2024/auto-253", b: v24, opt: DecodeOptions{IPProto: 253}, v: Version2024,
			want: dataWant{
				common: CommonFields{Sport: 32770, Dport: 4000, Type: TypeData, Doff: 0xD0, Flags: 0x06,
					Urgent: 0xB97D, SenderID: 13},
				msgLen: 30000, incoming: 10000, ackID: 10, ackClientPort: 32769, ackServerPort: 4000,
				cutV: 1, retransmit: 1, segOffset: 2848, offset: 2848, dataLen: 4, payload: []byte("abcd"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(tc.b)
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeData, tc.v, len(b))
			checkData(t, p.Data(), tc.want)
			pf, ok := p.Fields().(*DataFields)
			if !ok {
				t.Fatalf("Packet.Fields: got %T, want *DataFields", p.Fields())
			}
			if df := p.Data().Fields(); !fieldsEqual(pf, &df) {
				t.Errorf("Packet.Fields differs from Data.Fields: %s vs %s", showFields(pf), showFields(&df))
			}
		})
	}
}

// Real frames (transport bytes) from pcap/testdata/real.
const (
	// linux-6.13-proto146/a-small-rpcs.pcap frame 2: 100-byte request, first
	// packet of the trace (cutoff_version 0), seg.offset -1.
	realData613Hex = "80000fa00000000000000010e00600000000b97d0000000000000002000000640000006400000000000000000000000000000000ffffffff" +
		"6400000064000000393000003a3000003b3000003c3000003d3000003e3000003f300000403000004130000042300000433000004430000045300000463000004730000048300000493000004a3000004b3000004c3000004d3000004e3000004f300000"
	// linux-6.1-proto253/f1-ipv6.pcap frame 16, first 96 of 1460 bytes:
	// post-GSO segment (doff 13) carrying ack {10, 32769, 4000}.
	realData2024Hex = "80020fa00000000000000010d00600000000b97d000000000000000c0000753000002710000000000000000a80010fa00001000000000000" +
		"30750000640000003b424950575e656c737a81888f969da4abb2b9c0c7ced5dce3eaf1f8ff060d14"
)

func TestDataRealCaptures(t *testing.T) {
	t.Run("6.13-single-segment", func(t *testing.T) {
		b := hexBytes(t, realData613Hex)
		if len(b) != 156 {
			t.Fatalf("vector length %d, want 156", len(b))
		}
		p := mustDecode(t, b, DecodeOptions{IPProto: 146})
		checkPacket(t, p, b, TypeData, VersionCurrent, 156)
		checkData(t, p.Data(), dataWant{
			common: CommonFields{Sport: 32768, Dport: 4000, Type: TypeData, Doff: 0xE0, Flags: 0x06,
				Urgent: 0xB97D, SenderID: 2},
			msgLen: 100, incoming: 100, segOffset: 0xFFFFFFFF, offset: 0, dataLen: 100, payload: b[56:],
		})
	})
	t.Run("6.1-ipv6-gso-segment-snaplen", func(t *testing.T) {
		b := hexBytes(t, realData2024Hex)
		if len(b) != 96 {
			t.Fatalf("vector length %d, want 96", len(b))
		}
		p := mustDecode(t, b, DecodeOptions{IPProto: 253, WireLen: 1460})
		checkPacket(t, p, b, TypeData, Version2024, 1460)
		if !p.Truncated() {
			t.Errorf("Truncated: got false, want true")
		}
		checkData(t, p.Data(), dataWant{
			common: CommonFields{Sport: 32770, Dport: 4000, Type: TypeData, Doff: 0xD0, Flags: 0x06,
				Urgent: 0xB97D, SenderID: 12},
			msgLen: 30000, incoming: 10000, ackID: 10, ackClientPort: 32769, ackServerPort: 4000, cutV: 1,
			segOffset: 0, offset: 0, dataLen: 1404, payload: b[56:],
		})
		segs, err := p.Data().Segments(nil, MaxSegDataIPv6)
		if err != nil || len(segs) != 1 || segs[0].Offset != 0 || segs[0].Length != 1404 || len(segs[0].Data) != 40 {
			t.Errorf("Segments(1404): got %+v, %v; want one segment {0, 1404, 40 captured bytes}", segs, err)
		}
	})
}

func TestDataTruncatedPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		v    Version
	}{
		{"current", dataCurrentHex, VersionCurrent},
		{"2024", data2024Hex, Version2024},
		{"upstream", dataCurrentHex, VersionUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := hexBytes(t, tc.hex)
			checkPrefixes(t, full, TypeData, tc.v)
			// From the header length on, a prefix is a valid DATA packet
			// with fewer data bytes.
			for n := 56; n <= len(full); n++ {
				p, err := Decode(exact(full[:n]), DecodeOptions{Version: tc.v})
				if err != nil {
					t.Errorf("prefix %d: got error %v, want nil", n, err)
					continue
				}
				if got := p.Data().DataLen(); got != n-56 {
					t.Errorf("prefix %d: DataLen got %d, want %d", n, got, n-56)
				}
			}
		})
	}
}

func TestDataTruncatedMessage(t *testing.T) {
	b := exact(hexBytes(t, dataCurrentHex)[:55])
	_, err := Decode(b, DecodeOptions{Version: VersionCurrent})
	want := "truncated DATA header: field seg.offset needs 56 bytes, have 55"
	if err == nil || err.Error() != want {
		t.Errorf("Error(): got %v, want %q", err, want)
	}
}

func sampleDataFields(v Version) *DataFields {
	f := &DataFields{
		Common: CommonFields{Sport: 32769, Dport: 4000, Sequence: 2848, Ack: [3]byte{0, 0, 0},
			SenderID: 0x24, Window: 0, Checksum: 0},
		MessageLength: 500000, Incoming: 40000,
		Ack:           AckEntry{ClientID: 0x22, ServerPort: 4000},
		CutoffVersion: 2, Retransmit: 1, SegOffset: 2848,
		Payload: bytes.Repeat([]byte{0x5a, 0xa5, 0x3c}, 475), // 1425 bytes
	}
	if v == Version2024 {
		f.Ack.ClientPort = 32769
	}
	return f
}

func TestDataRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeData) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, sampleDataFields(v), v)
			// header only, no payload
			f := sampleDataFields(v)
			f.Payload = nil
			checkRoundTrip(t, f, v)
		})
	}
}

// TestDataEncodeLayout checks the encoder against the hand-written bytes.
func TestDataEncodeLayout(t *testing.T) {
	want := hexBytes(t, dataCurrentHex)
	f := DataFields{
		Common: dataCurrentCommon, MessageLength: 100000, Incoming: 40000,
		Ack:           AckEntry{ClientID: 0x2122232425262728, ServerPort: 3000},
		CutoffVersion: 7, Retransmit: 1, SegOffset: 0xFFFFFFFF, Payload: []byte("hello!"),
	}
	got, err := f.AppendTo(nil, EncodeOptions{Version: VersionCurrent})
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("current encoding:\n got %x (err %v)\nwant %x", got, err, want)
	}
	want24 := hexBytes(t, data2024Hex)
	f24 := DataFields{
		Common:        CommonFields{Sport: 32770, Dport: 4000, Doff: 0xD0, Flags: 0x06, Urgent: 0xB97D, SenderID: 13},
		MessageLength: 30000, Incoming: 10000,
		Ack:           AckEntry{ClientID: 10, ClientPort: 32769, ServerPort: 4000},
		CutoffVersion: 1, Retransmit: 1, SegOffset: 2848, Payload: []byte("abcd"),
	}
	got, err = f24.AppendTo(nil, EncodeOptions{Version: Version2024})
	if err != nil || !bytes.Equal(got, want24) {
		t.Errorf("2024 encoding:\n got %x (err %v)\nwant %x", got, err, want24)
	}
}

// TestDataFieldsJSON: DataFields marshal with HomaModule's names, seg.offset
// nested as "seg": {"offset": N}, and no payload.
func TestDataFieldsJSON(t *testing.T) {
	f := DataFields{
		Common:        CommonFields{Sport: 32769, Dport: 4000, Sequence: 11392, Type: TypeData, Doff: 0xE0, Flags: 6, Urgent: 0xB97D, SenderID: 2},
		MessageLength: 100000, Incoming: 40000, Ack: AckEntry{ClientID: 38, ServerPort: 4000},
		CutoffVersion: 1, Retransmit: 1, SegOffset: 0xFFFFFFFF, Payload: []byte("secret"),
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Unmarshal: %v (%s)", err, b)
	}
	want := map[string]any{
		"message_length": 100000.0, "incoming": 40000.0, "cutoff_version": 1.0, "retransmit": 1.0,
		"seg": map[string]any{"offset": 4294967295.0},
		"ack": map[string]any{"client_id": 38.0, "server_port": 4000.0},
		"common": map[string]any{"sport": 32769.0, "dport": 4000.0, "sequence": 11392.0, "doff": 224.0, "flags": 6.0,
			"window": 0.0, "checksum": 0.0, "urgent": 47485.0, "sender_id": 2.0},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("JSON:\n got %v\nwant %v", m, want)
	}
	// Pointer receivers marshal the same way.
	if b2, err := json.Marshal(&f); err != nil || !bytes.Equal(b, b2) {
		t.Errorf("Marshal(&f): got %s, %v; want %s", b2, err, b)
	}
}

// TestNewData: a first transmission has retransmit 0, the offset in
// sequence and seg.offset 0xFFFFFFFF; a retransmission retransmit 1 and
// the offset in both (WIRE-05); decoded, both give the offset back.
func TestNewData(t *testing.T) {
	c := CommonFields{Sport: 40000, Dport: 4000, SenderID: 6}
	for _, retx := range []bool{false, true} {
		f := NewData(c, 30000, 10000, 3, 2848, []byte("abcd"), retx)
		wantSeg, wantRetx := uint32(SegOffsetInSequence), uint8(0)
		if retx {
			wantSeg, wantRetx = 2848, 1
		}
		if f.Common.Sequence != 2848 || f.SegOffset != wantSeg || f.Retransmit != wantRetx || f.MessageLength != 30000 ||
			f.Incoming != 10000 || f.CutoffVersion != 3 || f.Common.SenderID != 6 || string(f.Payload) != "abcd" || f.Ack != (AckEntry{}) {
			t.Errorf("retransmit %v: %+v", retx, *f)
		}
		b, err := Encode(f, EncodeOptions{Version: VersionCurrent, FixLengths: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Decode(b, DecodeOptions{Version: VersionCurrent})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Data(); d.Offset() != 2848 || d.Retransmit() != wantRetx {
			t.Errorf("retransmit %v: decoded offset %d, retransmit %d; want 2848, %d", retx, d.Offset(), d.Retransmit(), wantRetx)
		}
	}
}
