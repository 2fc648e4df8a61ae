package wire

import (
	"bytes"
	"testing"
)

// busyHex: BUSY, 28 bytes (common header only).
const busyHex = `
8001 0fa0        // 0 sport 32769, 2 dport 4000
00000000         // 4 sequence
000000 14        // 8 ack[3], 11 type BUSY
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0123456789abcdef // 20 sender_id (odd)
`

// realBusy613Hex: linux-6.13-proto146/c-500k-loss3pct-server-side.pcap frame 201.
const realBusy613Hex = "0fa080000000000000000014500600000000b97d0000000000000003"

func TestBusyKnownEncoding(t *testing.T) {
	tests := []struct {
		name   string
		hex    string
		opt    DecodeOptions
		v      Version
		common CommonFields
	}{
		{"current", busyHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeBusy, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 0x0123456789abcdef}},
		{"2024", busyHex, DecodeOptions{Version: Version2024}, Version2024,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeBusy, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 0x0123456789abcdef}},
		{"real-6.13", realBusy613Hex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32768, Type: TypeBusy, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeBusy, tc.v, len(b))
			v := p.Busy()
			checkCommon(t, v.Common(), tc.common)
			want := BusyFields{Common: tc.common}
			if got := v.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*BusyFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestBusyTruncatedPrefixes(t *testing.T) {
	for _, v := range versionsOf(TypeBusy) {
		t.Run(v.String(), func(t *testing.T) { checkPrefixes(t, hexBytes(t, busyHex), TypeBusy, v) })
	}
}

func TestBusyRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeBusy) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &BusyFields{Common: CommonFields{Sport: 32769, Dport: 4000, SenderID: 0x1234}}, v)
		})
	}
}

func TestBusyEncodeLayout(t *testing.T) {
	f := BusyFields{Common: CommonFields{Sport: 32769, Dport: 4000, Doff: 0x50, Flags: 6, Urgent: 0xB97D,
		SenderID: 0x0123456789abcdef}}
	got, err := f.AppendTo(nil, EncodeOptions{Version: Version2024})
	if want := hexBytes(t, busyHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %x (err %v), want %x", got, err, want)
	}
}
