package wire

import (
	"bytes"
	"testing"
)

// resendCurrentHex: RESEND, current layout, 37 bytes; a client that has
// received nothing asks for everything (length -1, main since be5081e).
const resendCurrentHex = `
8001 0fa0        // 0 sport 32769, 2 dport 4000
00000000         // 4 sequence
000000 12        // 8 ack[3], 11 type RESEND
50 06 0000       // 12 doff, flags, window
0000 b97d        // 16 checksum, urgent
0000000000000042 // 20 sender_id 66
00000000         // 28 offset 0
ffffffff         // 32 length -1 (everything)
07               // 36 priority 7
`

// resendGapHex: RESEND for a known gap, current layout.
const resendGapHex = `
0fa0 8001        // 0 sport 4000, 2 dport 32769
00000000         // 4 sequence
000000 12        // 8 ack[3], 11 type RESEND
50 06 0000       // 12 doff, flags, window
0000 b97d        // 16 checksum, urgent
0000000000000043 // 20 sender_id 67
00002c80         // 28 offset 11392
00000590         // 32 length 1424
05               // 36 priority 5
`

// resendUpstreamHex: RESEND, upstream layout, 36 bytes: no priority byte,
// flags and urgent reserved (0).
const resendUpstreamHex = `
8001 0fa0        // 0 sport, 2 dport
00000000         // 4 sequence
000000 12        // 8 ack[3], 11 type RESEND
50 00 0000       // 12 doff, 13 reserved1, 14 window
0000 0000        // 16 checksum, 18 reserved2
0000000000000042 // 20 sender_id 66
00001000         // 28 offset 4096
00000200         // 32 length 512
`

// Real RESENDs: linux-6.13-proto146/c-500k-loss3pct-server-side.pcap frame
// 200 (offset 0, length -1, priority 7) and linux-6.1-proto253/c-...pcap
// frame 49 (6.1.38 encoded "nothing received" as offset 0, length 100).
const (
	realResend613Hex = "80000fa00000000000000012500600000000b97d000000000000000200000000ffffffff07"
	realResend61Hex  = "80010fa00000000000000012000600000000b97d0000000000000002000000000000006407"
)

func TestResendKnownEncoding(t *testing.T) {
	tests := []struct {
		name      string
		hex       string
		opt       DecodeOptions
		v         Version
		common    CommonFields
		offset    uint32
		length    uint32
		priority  uint8
		resendAll bool
	}{
		{"current-all", resendCurrentHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeResend, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 66},
			0, 0xFFFFFFFF, 7, true},
		{"current-gap", resendGapHex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeResend, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 67},
			11392, 1424, 5, false},
		{"upstream", resendUpstreamHex, DecodeOptions{Version: VersionUpstream}, VersionUpstream,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeResend, Doff: 0x50, SenderID: 66},
			4096, 512, 0, false},
		{"upstream/auto", resendUpstreamHex, DecodeOptions{IPProto: 146}, VersionUpstream,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeResend, Doff: 0x50, SenderID: 66},
			4096, 512, 0, false},
		// 37 bytes read as upstream: byte 36 is not a field, Priority is 0.
		{"current-bytes-as-upstream", resendGapHex, DecodeOptions{Version: VersionUpstream}, VersionUpstream,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeResend, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 67},
			11392, 1424, 0, false},
		{"real-6.13", realResend613Hex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 32768, Dport: 4000, Type: TypeResend, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 2},
			0, 0xFFFFFFFF, 7, true},
		{"real-6.1", realResend61Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 32769, Dport: 4000, Type: TypeResend, Flags: 6, Urgent: 0xB97D, SenderID: 2},
			0, 100, 7, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeResend, tc.v, len(b))
			r := p.Resend()
			checkCommon(t, r.Common(), tc.common)
			if r.Offset() != tc.offset {
				t.Errorf("Offset: got %d, want %d", r.Offset(), tc.offset)
			}
			if r.Length() != tc.length {
				t.Errorf("Length: got %#x, want %#x", r.Length(), tc.length)
			}
			if r.Priority() != tc.priority {
				t.Errorf("Priority: got %d, want %d", r.Priority(), tc.priority)
			}
			if r.IsResendAll() != tc.resendAll {
				t.Errorf("IsResendAll: got %v, want %v", r.IsResendAll(), tc.resendAll)
			}
			want := ResendFields{Common: tc.common, Offset: tc.offset, Length: tc.length, Priority: tc.priority}
			if got := r.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*ResendFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestResendTruncatedPrefixes(t *testing.T) {
	t.Run("current", func(t *testing.T) { checkPrefixes(t, hexBytes(t, resendCurrentHex), TypeResend, VersionCurrent) })
	t.Run("2024", func(t *testing.T) { checkPrefixes(t, hexBytes(t, realResend61Hex), TypeResend, Version2024) })
	t.Run("upstream", func(t *testing.T) {
		checkPrefixes(t, hexBytes(t, resendUpstreamHex), TypeResend, VersionUpstream)
	})
}

func TestResendRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeResend) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &ResendFields{
				Common: CommonFields{Sport: 4000, Dport: 32770, SenderID: 0x99},
				Offset: 2848, Length: 0xFFFFFFFF, Priority: 7,
			}, v)
		})
	}
}

func TestResendEncodeLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		f    ResendFields
		v    Version
	}{
		{"current", resendCurrentHex, ResendFields{Common: CommonFields{Sport: 32769, Dport: 4000, Doff: 0x50,
			Flags: 6, Urgent: 0xB97D, SenderID: 66}, Offset: 0, Length: 0xFFFFFFFF, Priority: 7}, VersionCurrent},
		{"upstream", resendUpstreamHex, ResendFields{Common: CommonFields{Sport: 32769, Dport: 4000, Doff: 0x50,
			SenderID: 66}, Offset: 4096, Length: 512, Priority: 7 /* ignored upstream */}, VersionUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.AppendTo(nil, EncodeOptions{Version: tc.v})
			if want := hexBytes(t, tc.hex); err != nil || !bytes.Equal(got, want) {
				t.Errorf("got %x (err %v), want %x", got, err, want)
			}
		})
	}
}
