package wire

import (
	"bytes"
	"errors"
	"testing"
)

// freezeHex: FREEZE as debugging code sends it (facts.md §1.4): dport 0 and
// sender_id 0; 28 bytes.
const freezeHex = `
8003 0000        // 0 sport 32771, 2 dport 0
00000000         // 4 sequence
000000 16        // 8 ack[3], 11 type FREEZE
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000000 // 20 sender_id 0
`

func TestFreezeKnownEncoding(t *testing.T) {
	want := CommonFields{Sport: 32771, Dport: 0, Type: TypeFreeze, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 0}
	for _, tc := range []struct {
		name string
		opt  DecodeOptions
		v    Version
	}{
		{"current", DecodeOptions{Version: VersionCurrent}, VersionCurrent},
		{"2024", DecodeOptions{Version: Version2024}, Version2024},
		{"auto-146", DecodeOptions{IPProto: 146}, VersionCurrent},
		{"auto-253", DecodeOptions{IPProto: 253}, Version2024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, freezeHex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeFreeze, tc.v, 28)
			v := p.Freeze()
			checkCommon(t, v.Common(), want)
			if got := v.Fields(); got != (FreezeFields{Common: want}) {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, FreezeFields{Common: want})
			}
			if got, ok := p.Fields().(*FreezeFields); !ok || got.Common != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
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

func TestFreezeTruncatedPrefixes(t *testing.T) {
	for _, v := range versionsOf(TypeFreeze) {
		t.Run(v.String(), func(t *testing.T) { checkPrefixes(t, hexBytes(t, freezeHex), TypeFreeze, v) })
	}
}

func TestFreezeRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeFreeze) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &FreezeFields{Common: CommonFields{Sport: 32771}}, v)
		})
	}
}

func TestFreezeEncodeLayout(t *testing.T) {
	got, err := (&FreezeFields{Common: CommonFields{Sport: 32771}}).AppendTo(nil,
		EncodeOptions{Version: VersionCurrent, FixLengths: true, SetMarks: true})
	if want := hexBytes(t, freezeHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %x (err %v), want %x", got, err, want)
	}
}
