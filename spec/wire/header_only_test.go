package wire

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// The packet types that are the 28-byte common header alone: RPC_UNKNOWN,
// BUSY, FREEZE and NEED_ACK. Each hand encoding gives every field a value
// that shows a wrong offset; real frames come from the shared captures.

const rpcUnknownHex = `
0fa0 8001        // 0 sport 4000, 2 dport 32769
01020304         // 4 sequence
0a0b0c 13        // 8 ack[3], 11 type RPC_UNKNOWN
50 06 1112       // 12 doff, 13 flags, 14 window
1314 b97d        // 16 checksum, 18 urgent
0000000000001235 // 20 sender_id 0x1235 (odd: server)
`

// busyHex: BUSY, 28 bytes.
const busyHex = `
8001 0fa0        // 0 sport 32769, 2 dport 4000
00000000         // 4 sequence
000000 14        // 8 ack[3], 11 type BUSY
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0123456789abcdef // 20 sender_id (odd)
`

// freezeHex: FREEZE as debugging code sends it (dport 0, sender_id 0).
const freezeHex = `
8003 0000        // 0 sport 32771, 2 dport 0
00000000         // 4 sequence
000000 16        // 8 ack[3], 11 type FREEZE
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000000 // 20 sender_id 0
`

const needAckHex = `
0fa0 8000        // 0 sport 4000, 2 dport 32768
00000000         // 4 sequence
000000 17        // 8 ack[3], 11 type NEED_ACK
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000029 // 20 sender_id 41
`

// Real frames: linux-6.1-proto253/e2-server-forgets-request.pcap frame 52
// (RPC_UNKNOWN, then named UNKNOWN); linux-6.13-proto146/c-500k-loss3pct
// frame 201 (BUSY); linux-6.1-proto253/a-small-rpcs.pcap frame 45 (NEED_ACK).
const (
	realRPCUnknown61Hex = "0fa080010000000000000013000600000000b97d0000000000000003"
	realBusy613Hex      = "0fa080000000000000000014500600000000b97d0000000000000003"
	realNeedAck61Hex    = "0fa080010000000000000017000600000000b97d0000000000000029"
)

type headerOnlyCase struct {
	typ    PacketType
	hex    string
	common CommonFields // decoded from hex
	real   string
	realV  Version
	realC  CommonFields
	mk     func(CommonFields) Fields
	view   func(Packet) (Common, Fields)
}

func headerOnlyCases() []headerOnlyCase {
	marks := func(c CommonFields) CommonFields { c.Doff, c.Flags, c.Urgent = 0x50, 6, 0xB97D; return c }
	return []headerOnlyCase{
		{TypeRPCUnknown, rpcUnknownHex,
			CommonFields{Sport: 4000, Dport: 32769, Sequence: 0x01020304, Ack: [3]byte{0x0a, 0x0b, 0x0c}, Type: TypeRPCUnknown,
				Doff: 0x50, Flags: 6, Window: 0x1112, Checksum: 0x1314, Urgent: 0xB97D, SenderID: 0x1235},
			realRPCUnknown61Hex, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeRPCUnknown, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			func(c CommonFields) Fields { return &RPCUnknownFields{Common: c} },
			func(p Packet) (Common, Fields) { v := p.RPCUnknown(); f := v.Fields(); return v.Common(), &f }},
		{TypeBusy, busyHex, marks(CommonFields{Sport: 32769, Dport: 4000, Type: TypeBusy, SenderID: 0x0123456789abcdef}),
			realBusy613Hex, VersionCurrent, marks(CommonFields{Sport: 4000, Dport: 32768, Type: TypeBusy, SenderID: 3}),
			func(c CommonFields) Fields { return &BusyFields{Common: c} },
			func(p Packet) (Common, Fields) { v := p.Busy(); f := v.Fields(); return v.Common(), &f }},
		{TypeFreeze, freezeHex, marks(CommonFields{Sport: 32771, Type: TypeFreeze}), "", 0, CommonFields{},
			func(c CommonFields) Fields { return &FreezeFields{Common: c} },
			func(p Packet) (Common, Fields) { v := p.Freeze(); f := v.Fields(); return v.Common(), &f }},
		{TypeNeedAck, needAckHex, marks(CommonFields{Sport: 4000, Dport: 32768, Type: TypeNeedAck, SenderID: 41}),
			realNeedAck61Hex, Version2024, CommonFields{Sport: 4000, Dport: 32769, Type: TypeNeedAck, Flags: 6, Urgent: 0xB97D, SenderID: 41},
			func(c CommonFields) Fields { return &NeedAckFields{Common: c} },
			func(p Packet) (Common, Fields) { v := p.NeedAck(); f := v.Fields(); return v.Common(), &f }},
	}
}

// TestHeaderOnlyKnownEncoding decodes each hand encoding in every version
// that has the type, and the real frames, field by field.
func TestHeaderOnlyKnownEncoding(t *testing.T) {
	for _, tc := range headerOnlyCases() {
		type run struct {
			name string
			hex  string
			opt  DecodeOptions
			v    Version
			want CommonFields
		}
		runs := []run{}
		for _, v := range versionsOf(tc.typ) {
			runs = append(runs, run{v.String(), tc.hex, DecodeOptions{Version: v}, v, tc.common})
		}
		if tc.real != "" {
			runs = append(runs, run{"real-" + tc.realV.String(), tc.real, DecodeOptions{IPProto: tc.realV.IPProtocol()}, tc.realV, tc.realC})
		}
		for _, r := range runs {
			t.Run(fmt.Sprintf("%s/%s", tc.typ, r.name), func(t *testing.T) {
				b := exact(hexBytes(t, r.hex))
				p := mustDecode(t, b, r.opt)
				checkPacket(t, p, b, tc.typ, r.v, CommonHeaderLen)
				c, f := tc.view(p)
				checkCommon(t, c, r.want)
				want := tc.mk(r.want)
				if fmt.Sprint(f) != fmt.Sprint(want) {
					t.Errorf("view Fields: got %s, want %s", showFields(f), showFields(want))
				}
				if got := p.Fields(); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("Packet.Fields: got %s, want %s", showFields(got), showFields(want))
				}
				if wantRole := RoleOf(r.want.SenderID); p.Role() != wantRole {
					t.Errorf("Role: got %v, want %v", p.Role(), wantRole)
				}
			})
		}
	}
}

func TestHeaderOnlyTruncatedPrefixes(t *testing.T) {
	for _, tc := range headerOnlyCases() {
		for _, v := range versionsOf(tc.typ) {
			t.Run(fmt.Sprintf("%s/%s", tc.typ, v), func(t *testing.T) { checkPrefixes(t, hexBytes(t, tc.hex), tc.typ, v) })
		}
	}
}

func TestHeaderOnlyRoundTrip(t *testing.T) {
	for _, tc := range headerOnlyCases() {
		for _, v := range versionsOf(tc.typ) {
			t.Run(fmt.Sprintf("%s/%s", tc.typ, v), func(t *testing.T) {
				checkRoundTrip(t, tc.mk(CommonFields{Sport: 32769, Dport: 4000, SenderID: 0x1234}), v)
			})
		}
	}
}

// TestHeaderOnlyEncodeLayout: encoding the decoded values without options
// reproduces the hand encoding byte for byte.
func TestHeaderOnlyEncodeLayout(t *testing.T) {
	for _, tc := range headerOnlyCases() {
		t.Run(tc.typ.String(), func(t *testing.T) {
			c := tc.common
			c.Type = 0 // the Fields' own type
			got, err := tc.mk(c).AppendTo(nil, EncodeOptions{Version: Version2024})
			if want := hexBytes(t, tc.hex); err != nil || !bytes.Equal(got, want) {
				t.Errorf("got %x (err %v), want %x", got, err, want)
			}
		})
	}
}

func TestFreezeUnsupportedUpstream(t *testing.T) {
	b := hexBytes(t, freezeHex)
	_, err := Decode(b, DecodeOptions{Version: VersionUpstream})
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnsupported) || de.Type != TypeFreeze {
		t.Errorf("Decode upstream: got %v, want *DecodeError{FREEZE, ErrUnsupported}", err)
	}
	// Without the marks and on IP protocol 146, auto-detection picks
	// upstream, which has no FREEZE.
	nomarks := append([]byte(nil), b...)
	nomarks[13], nomarks[18], nomarks[19] = 0, 0, 0
	if _, err := Decode(nomarks, DecodeOptions{IPProto: 146}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Decode auto unmarked: got %v, want ErrUnsupported", err)
	}
	if _, err := (&FreezeFields{}).AppendTo(nil, EncodeOptions{Version: VersionUpstream}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("AppendTo upstream: got %v, want ErrUnsupported", err)
	}
}
