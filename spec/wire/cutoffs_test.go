package wire

import (
	"bytes"
	"errors"
	"testing"
)

// cutoffsHex: CUTOFFS, 62 bytes, with eight distinct entries so that an
// off-by-one entry offset shows.
const cutoffsHex = `
0fa0 8001        // 0 sport 4000, 2 dport 32769
00000000         // 4 sequence
000000 15        // 8 ack[3], 11 type CUTOFFS
50 06 0000       // 12 doff, 13 flags, 14 window
0000 b97d        // 16 checksum, 18 urgent
0000000000000003 // 20 sender_id 3
7fffffff         // 28 unsched_cutoffs[0] INT_MAX
0a0b0c01         // 32 [1]
0a0b0c02         // 36 [2]
0a0b0c03         // 40 [3]
000f4240         // 44 [4] 1000000
00003a98         // 48 [5] 15000
00000af0         // 52 [6] 2800
000000c8         // 56 [7] 200
0002             // 60 cutoff_version 2
`

// realCutoffs613Hex: linux-6.13-proto146/a-small-rpcs.pcap frame 3: the
// module defaults 0,0,0,0,1000000,15000,2800,200 and cutoff_version 1.
const realCutoffs613Hex = "0fa080000000000000000015500600000000b97d000000000000000300000000000000000000000000000000000f424000003a9800000af0000000c80001"

func TestCutoffsKnownEncoding(t *testing.T) {
	tests := []struct {
		name    string
		hex     string
		opt     DecodeOptions
		v       Version
		common  CommonFields
		cutoffs [8]uint32
		version uint16
	}{
		{"current", cutoffsHex, DecodeOptions{Version: VersionCurrent}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeCutoffs, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			[8]uint32{0x7fffffff, 0x0a0b0c01, 0x0a0b0c02, 0x0a0b0c03, 1000000, 15000, 2800, 200}, 2},
		{"2024", cutoffsHex, DecodeOptions{IPProto: 253}, Version2024,
			CommonFields{Sport: 4000, Dport: 32769, Type: TypeCutoffs, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			[8]uint32{0x7fffffff, 0x0a0b0c01, 0x0a0b0c02, 0x0a0b0c03, 1000000, 15000, 2800, 200}, 2},
		{"real-6.13", realCutoffs613Hex, DecodeOptions{IPProto: 146}, VersionCurrent,
			CommonFields{Sport: 4000, Dport: 32768, Type: TypeCutoffs, Doff: 0x50, Flags: 6, Urgent: 0xB97D, SenderID: 3},
			[8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := exact(hexBytes(t, tc.hex))
			p := mustDecode(t, b, tc.opt)
			checkPacket(t, p, b, TypeCutoffs, tc.v, len(b))
			c := p.Cutoffs()
			checkCommon(t, c.Common(), tc.common)
			for i := range 8 {
				if got := c.UnschedCutoff(i); got != tc.cutoffs[i] {
					t.Errorf("UnschedCutoff(%d): got %d, want %d", i, got, tc.cutoffs[i])
				}
			}
			for _, i := range []int{-1, 8, 100} {
				if got := c.UnschedCutoff(i); got != 0 {
					t.Errorf("UnschedCutoff(%d): got %d, want 0", i, got)
				}
			}
			if got := c.UnschedCutoffs(); got != tc.cutoffs {
				t.Errorf("UnschedCutoffs: got %v, want %v", got, tc.cutoffs)
			}
			if got := c.CutoffVersion(); got != tc.version {
				t.Errorf("CutoffVersion: got %d, want %d", got, tc.version)
			}
			want := CutoffsFields{Common: tc.common, UnschedCutoffs: tc.cutoffs, CutoffVersion: tc.version}
			if got := c.Fields(); got != want {
				t.Errorf("Fields:\n got %+v\nwant %+v", got, want)
			}
			if got, ok := p.Fields().(*CutoffsFields); !ok || *got != want {
				t.Errorf("Packet.Fields: got %s, want %+v", showFields(p.Fields()), want)
			}
		})
	}
}

func TestCutoffsUnsupportedUpstream(t *testing.T) {
	_, err := Decode(hexBytes(t, cutoffsHex), DecodeOptions{Version: VersionUpstream})
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnsupported) || de.Type != TypeCutoffs || de.Version != VersionUpstream {
		t.Errorf("Decode upstream: got %v, want *DecodeError{CUTOFFS, upstream, ErrUnsupported}", err)
	}
	if _, err := (&CutoffsFields{}).AppendTo(nil, EncodeOptions{Version: VersionUpstream}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("AppendTo upstream: got %v, want ErrUnsupported", err)
	}
}

func TestCutoffsTruncatedPrefixes(t *testing.T) {
	for _, v := range versionsOf(TypeCutoffs) {
		t.Run(v.String(), func(t *testing.T) { checkPrefixes(t, hexBytes(t, cutoffsHex), TypeCutoffs, v) })
	}
}

func TestCutoffsRoundTrip(t *testing.T) {
	for _, v := range versionsOf(TypeCutoffs) {
		t.Run(v.String(), func(t *testing.T) {
			checkRoundTrip(t, &CutoffsFields{
				Common:         CommonFields{Sport: 4000, Dport: 32769, SenderID: 3},
				UnschedCutoffs: [8]uint32{0x7fffffff, 1, 2, 3, 1000000, 15000, 2800, 200},
				CutoffVersion:  0xfffe,
			}, v)
		})
	}
}

func TestCutoffsEncodeLayout(t *testing.T) {
	f := CutoffsFields{
		Common:         CommonFields{Sport: 4000, Dport: 32769, SenderID: 3},
		UnschedCutoffs: [8]uint32{0x7fffffff, 0x0a0b0c01, 0x0a0b0c02, 0x0a0b0c03, 1000000, 15000, 2800, 200},
		CutoffVersion:  2,
	}
	got, err := f.AppendTo(nil, EncodeOptions{FixLengths: true, SetMarks: true})
	if want := hexBytes(t, cutoffsHex); err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %x (err %v), want %x", got, err, want)
	}
}
