package wire

import (
	"bytes"
	"testing"
)

// rpcUnknownHex: RPC_UNKNOWN, 28 bytes (common header only), every field
// given a distinct value so that a wrong offset shows.
const rpcUnknownHex = `
0fa0 8001        // 0 sport 4000, 2 dport 32769
01020304         // 4 sequence
0a0b0c 13        // 8 ack[3], 11 type RPC_UNKNOWN
50 06 1112       // 12 doff, 13 flags, 14 window
1314 b97d        // 16 checksum, 18 urgent
0000000000001235 // 20 sender_id 0x1235 (odd: server)
`

// realRPCUnknown61Hex: linux-6.1-proto253/e2-server-forgets-request.pcap
// frame 52 (then named UNKNOWN).
const realRPCUnknown61Hex = "0fa080010000000000000013000600000000b97d0000000000000003"

func TestRPCUnknownKnownEncoding(t *testing.T) {
	tests := []struct {
		name   string
		hex    string
		opt    DecodeOptions
		v      Version
		common CommonFields
	}{
		{"current", rpcUnknownHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Sequence: 0x01020304, Ack: [3]byte{0x0a, 0x0b, 0x0c},
				Type: TypeRPCUnknown, Doff: 0x50, Flags: 6, Window: 0x1112, Checksum: 0x1314, Urgent: 0xB97D, SenderID: 0x1235}},
		{"upstream", rpcUnknownHex, DecodeOptions{Version: VersionUpstream}, VersionUpstream,
			CommonFields{Sport: 4000, Dport: 32769, Sequence: 0x01020304, Ack: [3]byte{0x0a, 0x0b, 0x0c},
				Type: TypeRPCUnknown, Doff: 0x50, Flags: 6, Window: 0x1112, Checksum: 0x1314, Urgent: 0xB97D, SenderID: 0x1235}},
		{"real-6.1", realRPCUnknown61Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeRPCUnknown, Flags: 6, Urgent: 0xB97D, SenderID: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeRPCUnknown, tc.v, len(b))
			v := p.RPCUnknown()
			checkCommon(t, v.Common(), tc.common)
			want := RPCUnknownFields{Common: tc.common}
			if got := v.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*RPCUnknownFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestRPCUnknownTruncatedPrefixes(t *testing.T) {
	for _, v := range versionsOf(TypeRPCUnknown) {
		t.Run(v.String(), func(t *testing.T) { checkPrefixes(t, hexBytes(t, rpcUnknownHex), TypeRPCUnknown, v) })
	}
}

func TestRPCUnknownRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeRPCUnknown) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &RPCUnknownFields{Common: CommonFields{Sport: 4000, Dport: 32769, SenderID: 0x1235}}, v)
		})
	}
}

func TestRPCUnknownEncodeLayout(t *testing.T) {
	f := RPCUnknownFields{Common: CommonFields{Sport: 4000, Dport: 32769, Sequence: 0x01020304,
		Ack: [3]byte{0x0a, 0x0b, 0x0c}, Doff: 0x50, Flags: 6, Window: 0x1112, Checksum: 0x1314, Urgent: 0xB97D, SenderID: 0x1235}}
	got, err := f.AppendTo(nil, EncodeOptions{})
	if want := hexBytes(t, rpcUnknownHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %x (err %v), want %x", got, err, want)
	}
}
