package wire

import (
	"bytes"
	"errors"
	"testing"
)

// grantCurrentHex: GRANT, current layout, 33 bytes (facts.md §1.4).
const grantCurrentHex = `
0fa0 8001        // 0 sport 4000, 2 dport 32769
00000000         // 4 sequence
000000 11        // 8 ack[3], 11 type GRANT
50 06 0000       // 12 doff 5 words, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000025 // 20 sender_id 37 (odd: server grants a request)
0000ac90         // 28 offset 44176
03               // 32 priority 3
`

// grant2024Hex: GRANT, linux_6.1.38 layout, 34 bytes with resend_all.
const grant2024Hex = `
0fa0 8001        // 0 sport, 2 dport
00000000         // 4 sequence
000000 11        // 8 ack[3], 11 type GRANT
00 06 0000       // 12 doff (not set on 6.1.38 control packets), flags, window
0000 b97d        // 16 checksum, urgent
0000000000000003 // 20 sender_id 3
00004e20         // 28 offset 20000
02               // 32 priority 2
01               // 33 resend_all
`

// Real GRANTs: linux-6.13-proto146/b-500k-grants.pcap frame 28 and
// linux-6.1-proto253/b-500k-grants.pcap frame 15.
const (
	realGrant613Hex = "0fa080000000000000000011500600000000b97d00000000000000030000ac9000"
	realGrant61Hex  = "0fa080010000000000000011000600000000b97d000000000000000300004e200000"
)

func TestGrantKnownEncoding(t *testing.T) {
	tests := []struct {
		name      string
		hex       string
		opt       DecodeOptions
		v         Version
		common    CommonFields
		offset    uint32
		priority  uint8
		resendAll uint8
	}{
		{"current", grantCurrentHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 37},
			44176, 3, 0},
		{"current/auto", grantCurrentHex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 37},
			44176, 3, 0},
		{"2024", grant2024Hex, DecodeOptions{Version: Version2024}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			20000, 2, 1},
		// A 34-byte GRANT without IP protocol 253 is main's between
		// be127d8 and 04df9e0 (linux_6.10.6): 2025, with resend_all.
		{"2025/auto-by-length", grant2024Hex, DecodeOptions{}, Version2025,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			20000, 2, 1},
		{"2024/auto-by-protocol", grant2024Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			20000, 2, 1},
		// Read as current, byte 33 is not a field: ResendAll reads 0.
		{"2024-bytes-as-current", grant2024Hex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			20000, 2, 0},
		{"real-6.13", realGrant613Hex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32768, Type: TypeGrant, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			44176, 0, 0},
		{"real-6.1", realGrant61Hex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeGrant, Doff: 0, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			20000, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeGrant, tc.v, len(b))
			g := p.Grant()
			checkCommon(t, g.Common(), tc.common)
			if g.Offset() != tc.offset {
				t.Errorf("Offset: got %d, want %d", g.Offset(), tc.offset)
			}
			if g.Priority() != tc.priority {
				t.Errorf("Priority: got %d, want %d", g.Priority(), tc.priority)
			}
			if g.ResendAll() != tc.resendAll {
				t.Errorf("ResendAll: got %d, want %d", g.ResendAll(), tc.resendAll)
			}
			want := GrantFields{Common: tc.common, Offset: tc.offset, Priority: tc.priority, ResendAll: tc.resendAll}
			if got := g.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*GrantFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestGrantUnsupportedUpstream(t *testing.T) {
	b := hexBytes(t, grantCurrentHex)
	_, err := Decode(b, DecodeOptions{Version: VersionUpstream})
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Decode upstream: got %v, want *DecodeError wrapping ErrUnsupported", err)
	}
	if de.Type != TypeGrant || de.Version != VersionUpstream {
		t.Errorf("DecodeError: got Type %v Version %v, want GRANT upstream", de.Type, de.Version)
	}
	prefix := []byte{1, 2, 3}
	out, err := (&GrantFields{Offset: 1}).AppendTo(prefix, EncodeOptions{Version: VersionUpstream})
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("AppendTo upstream: got %v, want ErrUnsupported", err)
	}
	if !bytes.Equal(out, prefix) {
		t.Errorf("AppendTo upstream: got %x, want the input %x unchanged", out, prefix)
	}
}

func TestGrantTruncatedPrefixes(t *testing.T) {
	t.Run("current", func(t *testing.T) { checkPrefixes(t, hexBytes(t, grantCurrentHex), TypeGrant, VersionCurrent) })
	t.Run("2024", func(t *testing.T) { checkPrefixes(t, hexBytes(t, grant2024Hex), TypeGrant, Version2024) })
	t.Run("30-bytes", func(t *testing.T) {
		_, err := Decode(exact(hexBytes(t, grantCurrentHex)[:30]), DecodeOptions{Version: VersionCurrent})
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("got %v, want *DecodeError", err)
		}
		if de.Field != "offset" || de.Want != 32 || de.Have != 30 || de.Type != TypeGrant {
			t.Errorf("got Type %v Field %q Want %d Have %d, want GRANT offset 32 30", de.Type, de.Field, de.Want, de.Have)
		}
		if want := "truncated GRANT header: field offset needs 32 bytes, have 30"; err.Error() != want {
			t.Errorf("Error(): got %q, want %q", err.Error(), want)
		}
	})
}

func TestGrantRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeGrant) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &GrantFields{
				Common: CommonFields{Sport: 4000, Dport: 32770, SenderID: 0x1235},
				Offset: 58544, Priority: 6, ResendAll: 1,
			}, v)
		})
	}
}

func TestGrantEncodeLayout(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		f    GrantFields
		v    Version
	}{
		{"current", grantCurrentHex, GrantFields{Common: CommonFields{Sport: 4000, Dport: 32769, Doff: 0x50, Flags: 6,
			Urgent: 0xB97D, SenderID: 37}, Offset: 44176, Priority: 3, ResendAll: 1 /* not in this version */}, VersionCurrent},
		{"2024", grant2024Hex, GrantFields{Common: CommonFields{Sport: 4000, Dport: 32769, Flags: 6,
			Urgent: 0xB97D, SenderID: 3}, Offset: 20000, Priority: 2, ResendAll: 1}, Version2024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.AppendTo(nil, EncodeOptions{Version: tc.v})
			if want := hexBytes(t, tc.hex); err != nil || !bytes.Equal(got, want) {
				t.Errorf("got %x (err %v), want %x", got, err, want)
			}
		})
	}
}
