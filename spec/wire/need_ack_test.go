package wire

import (
	"bytes"
	"testing"
)

// needAckHex: NEED_ACK, 28 bytes, sent by the server (odd sender_id).
const needAckHex = `
0fa0 8000        // 0 sport 4000, 2 dport 32768
00000000         // 4 sequence
000000 17        // 8 ack[3], 11 type NEED_ACK
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000029 // 20 sender_id 41
`

// Real NEED_ACKs: linux-6.13-proto146/a-small-rpcs.pcap frame 44 (identical
// to needAckHex) and linux-6.1-proto253/a-small-rpcs.pcap frame 45.
const realNeedAck61Hex = "0fa080010000000000000017000600000000b97d0000000000000029"

func TestNeedAckKnownEncoding(t *testing.T) {
	tests := []struct {
		name   string
		hex    string
		opt    DecodeOptions
		v      Version
		common CommonFields
	}{
		{"current", needAckHex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32768, Type: TypeNeedAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 41}},
		{"upstream", needAckHex, DecodeOptions{Version: VersionUpstream}, VersionUpstream,
			CommonFields{Sport: 4000, Dport: 32768, Type: TypeNeedAck, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 41}},
		{"real-6.1", realNeedAck61Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeNeedAck, Flags: 6, Urgent: 0xB97D, SenderID: 41}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeNeedAck, tc.v, len(b))
			if p.Role() != RoleServer {
				t.Errorf("Role: got %v, want server", p.Role())
			}
			v := p.NeedAck()
			checkCommon(t, v.Common(), tc.common)
			want := NeedAckFields{Common: tc.common}
			if got := v.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*NeedAckFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestNeedAckTruncatedPrefixes(t *testing.T) {
	for _, v := range versionsOf(TypeNeedAck) {
		t.Run(v.String(), func(t *testing.T) { checkPrefixes(t, hexBytes(t, needAckHex), TypeNeedAck, v) })
	}
}

func TestNeedAckRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeNeedAck) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &NeedAckFields{Common: CommonFields{Sport: 4000, Dport: 32768, SenderID: 41}}, v)
		})
	}
}

func TestNeedAckEncodeLayout(t *testing.T) {
	got, err := (&NeedAckFields{Common: CommonFields{Sport: 4000, Dport: 32768, SenderID: 41}}).AppendTo(nil,
		EncodeOptions{FixLengths: true, SetMarks: true})
	if want := hexBytes(t, needAckHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %x (err %v), want %x", got, err, want)
	}
}
