package wire

import (
	"bytes"
	"testing"
)

// ackCurrentHex: ACK, current layout, 80 bytes = 28 + 2 + 5×10
// (facts.md §1.4). num_acks is 2 but slot 2 holds a stale entry: receivers
// must use only the first two.
const ackCurrentHex = `
8001 0fa0        // 0 sport 32769, 2 dport 4000
00000000         // 4 sequence
000000 18        // 8 ack[3], 11 type ACK
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000028 // 20 sender_id 40
0002             // 28 num_acks 2
0000000000000026 0fa0 // 30 acks[0] {38, 4000}
0000000000000024 0fa1 // 40 acks[1] {36, 4001}
0000000000000022 0fa2 // 50 acks[2] {34, 4002} (unused)
0000000000000000 0000 // 60 acks[3]
0000000000000000 0000 // 70 acks[4]
`

// ack2024Hex: ACK, linux_6.1.38 layout, 90 bytes = 28 + 2 + 5×12 with
// client_port in every entry.
const ack2024Hex = `
8001 0fa0        // 0 sport 32769, 2 dport 4000
00000000         // 4 sequence
000000 18        // 8 ack[3], 11 type ACK
00 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000028 // 20 sender_id 40
0003             // 28 num_acks 3
0000000000000026 8001 0fa0 // 30 acks[0] {38, 32769, 4000}
0000000000000024 8002 0fa1 // 42 acks[1] {36, 32770, 4001}
0000000000000022 8003 0fa2 // 54 acks[2] {34, 32771, 4002}
0000000000000020 8004 0fa3 // 66 acks[3] (unused)
0000000000000000 0000 0000 // 78 acks[4]
`

// ackOverflowHex: current layout with num_acks 7 (> 5): receivers clamp to 5.
const ackOverflowHex = `
8001 0fa0 00000000 000000 18 50 06 0000 0000 b97d 0000000000000028
0007
0000000000000002 0001
0000000000000004 0002
0000000000000006 0003
0000000000000008 0004
000000000000000a 0005
`

// Real ACKs: linux-6.13-proto146/a-small-rpcs.pcap frame 45 and
// linux-6.1-proto253/a-small-rpcs.pcap frame 46.
const (
	realAck613Hex = "80000fa00000000000000018500600000000b97d0000000000000028000100000000000000280fa000000000000000000000000000000000000000000000000000000000000000000000000000000000"
	realAck61Hex  = "80010fa00000000000000018000600000000b97d00000000000000280001000000000000002880010fa0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
)

func TestAckKnownEncoding(t *testing.T) {
	tests := []struct {
		name    string
		hex     string
		opt     DecodeOptions
		v       Version
		common  CommonFields
		numAcks uint16
		valid   int
		slots   [5]AckEntry
	}{
		{"current", ackCurrentHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			2, 2, [5]AckEntry{{ClientID: 38, ServerPort: 4000}, {ClientID: 36, ServerPort: 4001}, {ClientID: 34, ServerPort: 4002}}},
		{"current/auto", ackCurrentHex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			2, 2, [5]AckEntry{{ClientID: 38, ServerPort: 4000}, {ClientID: 36, ServerPort: 4001}, {ClientID: 34, ServerPort: 4002}}},
		{"2024", ack2024Hex, DecodeOptions{Version: Version2024}, Version2024,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			3, 3, [5]AckEntry{{38, 32769, 4000}, {36, 32770, 4001}, {34, 32771, 4002}, {32, 32772, 4003}}},
		// A 90-byte ACK is 2024 whatever the IP protocol.
		{"2024/auto-by-length", ack2024Hex, DecodeOptions{IPProto: 146}, Version2024,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			3, 3, [5]AckEntry{{38, 32769, 4000}, {36, 32770, 4001}, {34, 32771, 4002}, {32, 32772, 4003}}},
		{"num_acks-7", ackOverflowHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			7, 5, [5]AckEntry{{ClientID: 2, ServerPort: 1}, {ClientID: 4, ServerPort: 2}, {ClientID: 6, ServerPort: 3},
				{ClientID: 8, ServerPort: 4}, {ClientID: 10, ServerPort: 5}}},
		{"real-6.13", realAck613Hex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 32768, Dport: 4000, Type: TypeAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			1, 1, [5]AckEntry{{ClientID: 40, ServerPort: 4000}}},
		{"real-6.1", realAck61Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeAck, Flags: 6, Urgent: 0xB97D, SenderID: 40},
			1, 1, [5]AckEntry{{ClientID: 40, ClientPort: 32769, ServerPort: 4000}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeAck, tc.v, len(b))
			a := p.Ack()
			checkCommon(t, a.Common(), tc.common)
			if a.NumAcks() != tc.numAcks {
				t.Errorf("NumAcks: got %d, want %d", a.NumAcks(), tc.numAcks)
			}
			if a.ValidAcks() != tc.valid {
				t.Errorf("ValidAcks: got %d, want %d", a.ValidAcks(), tc.valid)
			}
			for i := range 5 {
				if got := a.Entry(i); got != tc.slots[i] {
					t.Errorf("Entry(%d): got %+v, want %+v", i, got, tc.slots[i])
				}
			}
			for _, i := range []int{-1, 5, 6} {
				if got := a.Entry(i); got != (AckEntry{}) {
					t.Errorf("Entry(%d): got %+v, want zero", i, got)
				}
			}
			want := AckFields{Common: tc.common, NumAcks: tc.numAcks, Acks: tc.slots[:tc.valid]}
			got := a.Fields()
			if !fieldsEqual(&got, &want) {
				t.Errorf("Fields:\n got %s\nwant %s", showFields(&got), showFields(&want))
			}
			if pf := p.Fields(); !fieldsEqual(pf, &want) {
				t.Errorf("Packet.Fields: got %s, want %s", showFields(pf), showFields(&want))
			}
		})
	}
}

func TestAckTruncatedPrefixes(t *testing.T) {
	t.Run("current", func(t *testing.T) { checkPrefixes(t, hexBytes(t, ackCurrentHex), TypeAck, VersionCurrent) })
	t.Run("upstream", func(t *testing.T) { checkPrefixes(t, hexBytes(t, ackCurrentHex), TypeAck, VersionUpstream) })
	t.Run("2024", func(t *testing.T) { checkPrefixes(t, hexBytes(t, ack2024Hex), TypeAck, Version2024) })
}

func TestAckRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeAck) {
		t.Run(v.String(), func(t *testing.T) {
			for n := 0; n <= 5; n++ {
				acks := make([]AckEntry, n)
				for i := range acks {
					acks[i] = AckEntry{ClientID: uint64(2*i + 100), ServerPort: uint16(4000 + i)}
					if v == Version2024 {
						acks[i].ClientPort = uint16(32768 + i)
					}
				}
				checkRoundTrip(t, &AckFields{Common: CommonFields{Sport: 32769, Dport: 4000, SenderID: 98}, Acks: acks}, v)
			}
		})
	}
}

func TestAckEncodeLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		f    AckFields
		v    Version
	}{
		{"current", ackCurrentHex, AckFields{
			Common: CommonFields{Sport: 32769, Dport: 4000, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40}, NumAcks: 2,
			Acks: []AckEntry{{ClientID: 38, ServerPort: 4000}, {ClientID: 36, ServerPort: 4001}, {ClientID: 34, ServerPort: 4002}},
		}, VersionCurrent},
		{"2024", ack2024Hex, AckFields{
			Common: CommonFields{Sport: 32769, Dport: 4000, Flags: 6, Urgent: 0xB97D, SenderID: 40}, NumAcks: 3,
			Acks: []AckEntry{{38, 32769, 4000}, {36, 32770, 4001}, {34, 32771, 4002}, {32, 32772, 4003}},
		}, Version2024},
		// Seven entries: only five slots exist; num_acks stays 7 without FixLengths.
		{"overflow", ackOverflowHex, AckFields{
			Common: CommonFields{Sport: 32769, Dport: 4000, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 40}, NumAcks: 7,
			Acks: []AckEntry{{ClientID: 2, ServerPort: 1}, {ClientID: 4, ServerPort: 2}, {ClientID: 6, ServerPort: 3},
				{ClientID: 8, ServerPort: 4}, {ClientID: 10, ServerPort: 5}, {ClientID: 12, ServerPort: 6}, {ClientID: 14, ServerPort: 7}},
		}, VersionCurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.AppendTo(nil, EncodeOptions{Version: tc.v})
			if want := hexBytes(t, tc.hex); err != nil || !bytes.Equal(got, want) {
				t.Errorf("got %x (err %v), want %x", got, err, want)
			}
		})
	}
}
