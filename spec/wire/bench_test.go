package wire

import "testing"

var (
	sinkU32 uint32
	sinkU64 uint64
)

// BenchmarkDecode decodes a DATA and a GRANT packet and reads a few fields;
// the decode path must not allocate.
func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		hex  string
		opt  DecodeOptions
	}{
		{"DATA", realData613Hex, DecodeOptions{IPProto: IPProtoHoma}},
		{"DATA-2024-snaplen", realData2024Hex, DecodeOptions{IPProto: IPProtoHoma2024, WireLen: 1460}},
		{"GRANT", realGrant613Hex, DecodeOptions{IPProto: IPProtoHoma}},
		{"GRANT-2024", grant2024Hex, DecodeOptions{Version: Version2024}},
	} {
		pkt := hexBytes(b, bc.hex)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(pkt)))
			for b.Loop() {
				p, err := Decode(pkt, bc.opt)
				if err != nil {
					b.Fatal(err)
				}
				switch p.Type() {
				case TypeData:
					d := p.Data()
					sinkU32 += d.Offset() + d.MessageLength()
				case TypeGrant:
					g := p.Grant()
					sinkU32 += g.Offset() + uint32(g.Priority())
				}
				sinkU64 += p.SenderID()
			}
		})
	}
}

// TestDecodeNoAlloc enforces the zero-allocation claim in normal test runs.
func TestDecodeNoAlloc(t *testing.T) {
	for _, h := range []string{realData613Hex, realGrant613Hex, ackCurrentHex, cutoffsHex} {
		pkt := hexBytes(t, h)
		allocs := testing.AllocsPerRun(200, func() {
			p, err := Decode(pkt, DecodeOptions{IPProto: 146})
			if err != nil {
				t.Fatal(err)
			}
			sinkU32 += p.Data().Offset() + p.Grant().Offset() + p.Cutoffs().UnschedCutoff(4)
			sinkU64 += p.Ack().Entry(0).ClientID
		})
		if allocs != 0 {
			t.Errorf("Decode of type %#02x: got %v allocs/op, want 0", hexBytes(t, h)[11], allocs)
		}
	}
}
