package pcap

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

func TestRegisterNewPacket(t *testing.T) {
	Register(RegisterOptions{Hijack: true})
	Register(RegisterOptions{}) // idempotent
	for _, c := range []struct {
		name  string
		spec  FrameSpec
		ver   wire.Version
		ltype gopacket.LayerType
	}{
		{"146", FrameSpec{Src: addrA, Dst: addrB}, wire.VersionCurrent, LayerTypeHoma},
		{"253", FrameSpec{Src: addrA, Dst: addrB}, wire.Version2024, LayerTypeHoma2024},
		{"hijack", FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, wire.VersionCurrent, LayerTypeHomaHijacked},
		{"ipv6", FrameSpec{Src: addr6A, Dst: addr6B}, wire.VersionCurrent, LayerTypeHoma},
	} {
		t.Run(c.name, func(t *testing.T) {
			df := &wire.DataFields{Common: wire.CommonFields{Sport: 1, Dport: 2, SenderID: 4, Sequence: 1424},
				MessageLength: 3000, Incoming: 3000, SegOffset: wire.SegOffsetInSequence, Payload: []byte("hello")}
			fr := buildFrame(t, c.spec, df, wire.EncodeOptions{Version: c.ver, FixLengths: true, SetMarks: true})
			pkt := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.Default)
			l := pkt.Layer(c.ltype)
			if l == nil {
				t.Fatalf("no %v layer in %v", c.ltype, pkt)
			}
			h := l.(*Homa)
			d := h.Packet.Data()
			if h.Packet.Version() != c.ver || d.Offset() != 1424 || d.MessageLength() != 3000 || string(h.Payload) != "hello" {
				t.Errorf("version %v offset %d msg %d payload %q", h.Packet.Version(), d.Offset(), d.MessageLength(), h.Payload)
			}
			if pkt.ApplicationLayer() == nil || string(pkt.ApplicationLayer().Payload()) != "hello" {
				t.Errorf("payload layer missing")
			}
		})
	}
	// A normal TCP segment still decodes as TCP after the hijack hook.
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, &wire.BusyFields{}, wire.EncodeOptions{})
	pkt := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.Default)
	if pkt.Layer(layers.LayerTypeTCP) == nil || pkt.Layer(LayerTypeHomaHijacked) != nil {
		t.Errorf("plain TCP: layers %v", pkt.Layers())
	}
}

func TestHomaLayerTruncated(t *testing.T) {
	Register(RegisterOptions{})
	fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.GrantFields{Offset: 1}, wire.EncodeOptions{})
	fr = fr[:len(fr)-3] // cut the GRANT's priority and the end of offset
	pkt := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.Default)
	if pkt.ErrorLayer() == nil {
		t.Fatal("no error layer for a truncated GRANT")
	}
	if !pkt.Metadata().Truncated {
		t.Error("packet not marked truncated")
	}
}

func TestHomaSerializeChecksum(t *testing.T) {
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: wire.IPProtoHoma, SrcIP: addrA.AsSlice(), DstIP: addrB.AsSlice()}
	h := &Homa{Fields: &wire.ResendFields{Offset: 10, Length: wire.ResendAll, Priority: 7}, SetMarks: true}
	if err := h.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, h); err != nil {
		t.Fatal(err)
	}
	homa := buf.Bytes()[20:]
	if len(homa) != 37 {
		t.Fatalf("RESEND length %d, want 37", len(homa))
	}
	if !wire.ChecksumValid(addrA, addrB, homa) {
		t.Error("checksum not valid")
	}
	c := wire.Common(homa)
	if c.Doff() != wire.DoffControl || !c.HasMarks() {
		t.Errorf("doff 0x%02x marks %v", c.Doff(), c.HasMarks())
	}
	// Without FixLengths/ComputeChecksums the bytes are as given.
	buf2 := gopacket.NewSerializeBuffer()
	h2 := &Homa{Fields: &wire.ResendFields{Common: wire.CommonFields{Doff: 0x90, Checksum: 0xbeef}}}
	if err := gopacket.SerializeLayers(buf2, gopacket.SerializeOptions{}, h2); err != nil {
		t.Fatal(err)
	}
	c2 := wire.Common(buf2.Bytes())
	if c2.Doff() != 0x90 || c2.Checksum() != 0xbeef {
		t.Errorf("doff 0x%02x checksum 0x%04x, want 0x90 0xbeef", c2.Doff(), c2.Checksum())
	}
}
