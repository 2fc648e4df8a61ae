package pcap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

// Tunnel endpoints, which the reader must not take for the Homa hosts.
var (
	tunA  = netip.MustParseAddr("192.0.2.1")
	tunB  = netip.MustParseAddr("192.0.2.2")
	tun6A = netip.MustParseAddr("2001:db8::1")
	tun6B = netip.MustParseAddr("2001:db8::2")
)

// outerIP returns an Ethernet frame from src to dst (IPv4 or IPv6) of IP
// protocol proto carrying payload, lengths and checksums set.
func outerIP(t testing.TB, src, dst netip.Addr, proto layers.IPProtocol, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	var ip gopacket.SerializableLayer = &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	if src.Is6() {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip = &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

// vxlan returns inner (an Ethernet frame) in a VXLAN datagram (UDP port
// 4789, I flag, VNI 42) between src and dst.
func vxlan(t testing.TB, src, dst netip.Addr, inner []byte) []byte {
	udp := make([]byte, 8, 16+len(inner))
	binary.BigEndian.PutUint16(udp[0:], 49152)
	binary.BigEndian.PutUint16(udp[2:], 4789)
	binary.BigEndian.PutUint16(udp[4:], uint16(16+len(inner)))
	udp = append(udp, 0x08, 0, 0, 0, 0, 0, 42, 0)
	return outerIP(t, src, dst, layers.IPProtocolUDP, append(udp, inner...))
}

// gre returns inner in a GRE packet of protocol proto, flags flags (the
// checksum, key and sequence number words they call for are zero),
// then ext (an ERSPAN header), between tunA and tunB.
func gre(t testing.TB, flags, proto uint16, ext, inner []byte) []byte {
	h := binary.BigEndian.AppendUint16(nil, flags)
	h = binary.BigEndian.AppendUint16(h, proto)
	for _, bit := range []uint16{0x8000, 0x2000, 0x1000} {
		if flags&bit != 0 {
			h = append(h, 0, 0, 0, 7)
		}
	}
	h = append(append(h, ext...), inner...)
	return outerIP(t, tunA, tunB, layers.IPProtocolGRE, h)
}

// encapPcapng returns a pcapng of Homa frames in tunnels and tags (a
// seed of FuzzReader): VXLAN, a 0x9100 tag in VXLAN, ERSPAN III with its
// subheader, IP over GRE, and an IP header of version 5.
func encapPcapng(t testing.TB) []byte {
	busy := &wire.BusyFields{Common: wire.CommonFields{Sport: 1, Dport: 2, SenderID: 4}}
	eth := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, busy, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	tag := append(append(bytes.Clone(eth[:12]), 0x91, 0x00, 0, 100, 0x08, 0x00), eth[14:]...)
	erspan3o := []byte{0x20, 42, 0, 1, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	bad := bytes.Clone(eth)
	bad[14] = 0x55
	return writeFrames(t, vxlan(t, tunA, tunB, eth), vxlan(t, tun6A, tun6B, tag), gre(t, 0x1000, 0x22eb, erspan3o, eth),
		gre(t, 0xa000, 0x0800, nil, eth[14:]), bad)
}

// TestEncapsulations: Homa in frames carried inside others is read, with
// the inner frame's addresses: 802.1ad tags (TPID 0x88A8 and 0x9100),
// VXLAN over IPv4 and IPv6, Ethernet and IP over GRE, ERSPAN types I, II
// and III (with and without its platform-specific subheader); a frame
// nested deeper than maxEncap, a VXLAN datagram cut inside its inner
// frame, and GRE version 1 are not read, and count as what their outer
// frame is.
func TestEncapsulations(t *testing.T) {
	grant := &wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 7}, Offset: 123456, Priority: 3}
	eth := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 5}, grant, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	eth6 := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B, Priority: 5}, grant, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	tagged := func(tpid uint16) []byte { // outer tag tpid, inner 802.1Q tag, IPv4
		b := bytes.Clone(eth[:12])
		b = binary.BigEndian.AppendUint16(b, tpid)
		b = append(b, 0, 100, 0x81, 0x00, 0, 42, 0x08, 0x00)
		return append(b, eth[14:]...)
	}
	erspan2 := []byte{0x10, 42, 0, 1, 0, 0, 0, 0}                            // version 1, VLAN 42, session 1
	erspan3 := []byte{0x20, 42, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0}                // version 2, frame type 0 (Ethernet), no subheader
	erspan3o := append(bytes.Clone(erspan3[:11]), 1, 0, 0, 0, 0, 0, 0, 0, 0) // O bit and an 8-byte subheader
	erspan3ip := bytes.Clone(erspan3)
	erspan3ip[10] = 2 << 2 // frame type 2: IP
	deep := eth
	for range maxEncap + 1 {
		deep = vxlan(t, tunA, tunB, deep)
	}
	cases := []struct {
		name  string
		frame []byte
		homa  bool
		other string // what a frame not read counts as
		v6    bool
	}{
		{"802.1ad 0x88a8", tagged(0x88a8), true, "", false},
		{"802.1ad 0x9100", tagged(0x9100), true, "", false},
		{"vxlan", vxlan(t, tunA, tunB, eth), true, "", false},
		{"vxlan over ipv6", vxlan(t, tun6A, tun6B, eth), true, "", false},
		{"vxlan of ipv6", vxlan(t, tunA, tunB, eth6), true, "", true},
		{"vxlan in vxlan", vxlan(t, tunA, tunB, vxlan(t, tunA, tunB, eth)), true, "", false},
		{"vxlan of 0x9100", vxlan(t, tunA, tunB, tagged(0x9100)), true, "", false},
		{"gretap", gre(t, 0x2000, 0x6558, nil, eth), true, "", false},
		{"gre ipv4", gre(t, 0x8000, 0x0800, nil, eth[14:]), true, "", false},
		{"gre ipv6", gre(t, 0, 0x86dd, nil, eth6[14:]), true, "", true},
		{"erspan I", gre(t, 0, 0x88be, nil, eth), true, "", false},
		{"erspan II", gre(t, 0x1000, 0x88be, erspan2, eth), true, "", false},
		{"erspan III", gre(t, 0x1000, 0x22eb, erspan3, eth), true, "", false},
		{"erspan III subheader", gre(t, 0x1000, 0x22eb, erspan3o, eth), true, "", false},
		{"erspan III ip", gre(t, 0x1000, 0x22eb, erspan3ip, eth6[14:]), true, "", true},
		{"too deep", deep, false, "udp", false},
		{"vxlan cut", vxlan(t, tunA, tunB, eth[:20]), false, "udp", false},
		{"gre version 1", gre(t, 0x0001, 0x880b, nil, eth), false, "ip", false},
		{"gre ipv4 of version 5", gre(t, 0, 0x0800, nil, append([]byte{0x55}, eth[15:]...)), false, "ip", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(writeFrames(t, c.frame)), ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f, err := r.Next()
			if !c.homa {
				if st := r.Stats(); err == nil || st.Homa != 0 || st.Other[c.other] != 1 {
					t.Errorf("read %v, other %v; want no Homa, 1 %s", err, st.Other, c.other)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src, dst := addrA, addrB
			if c.v6 {
				src, dst = addr6A, addr6B
			}
			g := f.Packet.Grant()
			if f.Err != nil || f.Src != src || f.Dst != dst || f.Priority != 5 || f.Packet.Type() != wire.TypeGrant || g.Offset() != 123456 || g.SenderID() != 7 {
				t.Errorf("got err %v %v > %v p%d %s offset %d id %d; want %v > %v p5 GRANT 123456 7", f.Err, f.Src, f.Dst, f.Priority, f.Packet.Type(), g.Offset(), g.SenderID(), src, dst)
			}
		})
	}
}
