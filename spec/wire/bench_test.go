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

// BenchmarkGetters reads every header field of a decoded packet through its
// typed view (the checker's and the pcap reader's hot path), per type and
// version; it must not allocate.
func BenchmarkGetters(b *testing.B) {
	for _, bc := range []struct {
		name string
		hex  string
		v    Version
	}{
		{"DATA", dataCurrentHex, VersionCurrent},
		{"DATA-2024", data2024Hex, Version2024},
		{"GRANT-2024", grant2024Hex, Version2024},
		{"RESEND", resendCurrentHex, VersionCurrent},
		{"CUTOFFS", cutoffsHex, VersionCurrent},
		{"ACK-2024", ack2024Hex, Version2024},
	} {
		p := mustDecode(b, hexBytes(b, bc.hex), DecodeOptions{Version: bc.v})
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := p.Common()
				sinkU64 += c.SenderID() + uint64(c.Sport()) + uint64(c.Dport()) + uint64(c.Sequence()) + uint64(c.Type())
				switch p.Type() {
				case TypeData:
					d := p.Data()
					sinkU32 += d.MessageLength() + d.Incoming() + uint32(d.AckClientPort()) + uint32(d.AckServerPort()) +
						uint32(d.CutoffVersion()) + uint32(d.Retransmit()) + d.Offset()
					sinkU64 += d.AckClientID()
				case TypeGrant:
					g := p.Grant()
					sinkU32 += g.Offset() + uint32(g.Priority()) + uint32(g.ResendAll())
				case TypeResend:
					r := p.Resend()
					sinkU32 += r.Offset() + r.Length() + uint32(r.Priority())
				case TypeCutoffs:
					cu := p.Cutoffs()
					for i := range NumCutoffs {
						sinkU32 += cu.UnschedCutoff(i)
					}
					sinkU32 += uint32(cu.CutoffVersion())
				case TypeAck:
					a := p.Ack()
					for i := range a.ValidAcks() {
						e := a.Entry(i)
						sinkU64 += e.ClientID + uint64(e.ClientPort) + uint64(e.ServerPort)
					}
				}
			}
		})
	}
}

// BenchmarkAppendTo encodes a DATA and an ACK header into a reused buffer
// (the reference implementation's and the tester's send path).
func BenchmarkAppendTo(b *testing.B) {
	payload := make([]byte, 1024)
	for _, bc := range []struct {
		name string
		f    Fields
		v    Version
	}{
		{"DATA", &DataFields{MessageLength: 100000, Incoming: 10000, Ack: AckEntry{ClientID: 8, ServerPort: 4000}, SegOffset: 2048, Payload: payload}, VersionCurrent},
		{"DATA-2024", &DataFields{MessageLength: 100000, Incoming: 10000, Ack: AckEntry{ClientID: 8, ClientPort: 32768, ServerPort: 4000}, SegOffset: 2048, Payload: payload}, Version2024},
		{"ACK", &AckFields{Acks: []AckEntry{{ClientID: 2, ServerPort: 4000}, {ClientID: 4, ServerPort: 4000}}}, VersionCurrent},
	} {
		buf := make([]byte, 0, 2048)
		o := EncodeOptions{Version: bc.v, FixLengths: true, SetMarks: true}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := bc.f.AppendTo(buf[:0], o)
				if err != nil {
					b.Fatal(err)
				}
				sinkU32 += uint32(len(out))
			}
		})
	}
}

// TestAppendToNoAlloc: encoding any type into a buffer with room does not
// allocate (the encoders' per-type field writers must not escape).
func TestAppendToNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 2*MaxHeaderLen)
	for _, typ := range AllTypes {
		f := fieldsFrom(typ, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []byte("payload"))
		for _, v := range versionsOf(typ) {
			o := EncodeOptions{Version: v, FixLengths: true, SetMarks: true, ComputeChecksums: true, Src: v4a, Dst: v4b}
			if n := testing.AllocsPerRun(100, func() {
				if _, err := f.AppendTo(buf[:0], o); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Errorf("%v %v AppendTo: %v allocs/op, want 0", typ, v, n)
			}
		}
	}
}
