package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// sll returns a Linux cooked (SLL, 16-byte) header for an IP packet.
func sll(ipv6 bool) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[0:], 0) // to us
	binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(h[4:], 6)
	et := uint16(layers.EthernetTypeIPv4)
	if ipv6 {
		et = uint16(layers.EthernetTypeIPv6)
	}
	binary.BigEndian.PutUint16(h[14:], et)
	return h
}

// sll2 returns a Linux cooked v2 (SLL2, 20-byte) header for an IP packet.
func sll2(ipv6 bool) []byte {
	h := make([]byte, 20)
	et := uint16(layers.EthernetTypeIPv4)
	if ipv6 {
		et = uint16(layers.EthernetTypeIPv6)
	}
	binary.BigEndian.PutUint16(h[0:], et)
	binary.BigEndian.PutUint32(h[4:], 3) // ifindex
	binary.BigEndian.PutUint16(h[8:], 1) // ARPHRD_ETHER
	h[10] = 4                            // outgoing
	h[11] = 6
	return h
}

// TestLinkTypes writes the same Homa packets under every supported link
// type, in pcap and pcapng, and checks they decode with the right addresses,
// priority and fields.
func TestLinkTypes(t *testing.T) {
	grant := &wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 32768, SenderID: 7}, Offset: 123456, Priority: 3}
	for _, v6 := range []bool{false, true} {
		src, dst := addrA, addrB
		if v6 {
			src, dst = addr6A, addr6B
		}
		eth := buildFrame(t, FrameSpec{Src: src, Dst: dst, Priority: 7}, grant, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		vlan := buildFrame(t, FrameSpec{Src: src, Dst: dst, Priority: 7, VLAN: 42}, grant, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		ip := eth[14:]
		cases := []struct {
			name string
			lt   layers.LinkType
			data []byte
		}{
			{"ethernet", layers.LinkTypeEthernet, eth},
			{"vlan", layers.LinkTypeEthernet, vlan},
			{"sll", layers.LinkTypeLinuxSLL, append(sll(v6), ip...)},
			{"sll2", layers.LinkTypeLinuxSLL2, append(sll2(v6), ip...)},
			{"raw", layers.LinkTypeRaw, ip},
		}
		if v6 {
			cases = append(cases, struct {
				name string
				lt   layers.LinkType
				data []byte
			}{"ipv6", layers.LinkTypeIPv6, ip})
		} else {
			cases = append(cases, struct {
				name string
				lt   layers.LinkType
				data []byte
			}{"ipv4", layers.LinkTypeIPv4, ip})
		}
		for _, c := range cases {
			for _, ng := range []bool{false, true} {
				name := c.name + map[bool]string{false: "/v4", true: "/v6"}[v6] + map[bool]string{false: "/pcap", true: "/pcapng"}[ng]
				t.Run(name, func(t *testing.T) {
					var buf bytes.Buffer
					ts := time.Unix(1700000000, 123456789)
					if ng {
						w, err := NewWriter(&buf, Interface{Name: "x", LinkType: c.lt})
						if err != nil {
							t.Fatal(err)
						}
						if err := w.WritePacket(0, ts, c.data, 0, ""); err != nil {
							t.Fatal(err)
						}
						w.Flush()
					} else {
						w := pcapgo.NewWriterNanos(&buf)
						if err := w.WriteFileHeader(65536, c.lt); err != nil {
							t.Fatal(err)
						}
						if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(c.data), Length: len(c.data)}, c.data); err != nil {
							t.Fatal(err)
						}
					}
					r, err := NewReader(&buf, ReaderOptions{})
					if err != nil {
						t.Fatal(err)
					}
					f, err := r.Next()
					if err != nil {
						t.Fatal(err)
					}
					if f.Err != nil {
						t.Fatal(f.Err)
					}
					if f.Src != src || f.Dst != dst {
						t.Errorf("addresses %v > %v, want %v > %v", f.Src, f.Dst, src, dst)
					}
					if f.Priority != 7 {
						t.Errorf("priority %d (tos 0x%02x), want 7", f.Priority, f.TOS)
					}
					if !f.Time.Equal(ts) {
						t.Errorf("time %v, want %v", f.Time, ts)
					}
					g := f.Packet.Grant()
					if f.Packet.Type() != wire.TypeGrant || g.Offset() != 123456 || g.Priority() != 3 || g.SenderID() != 7 {
						t.Errorf("got %s offset %d priority %d id %d, want GRANT 123456 3 7", f.Packet.Type(), g.Offset(), g.Priority(), g.SenderID())
					}
					if _, err := r.Next(); !errors.Is(err, io.EOF) {
						t.Errorf("second Next: %v, want EOF", err)
					}
				})
			}
		}
	}
}

func TestNonHomaCounted(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Interface{Name: "x"})
	ts := time.Unix(1, 0)
	// an ARP frame, a UDP frame, a TCP frame without hijack marks, an IPv4 fragment
	arp := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(arp, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			SourceHwAddress: make([]byte, 6), SourceProtAddress: addrA.AsSlice(), DstHwAddress: make([]byte, 6), DstProtAddress: addrB.AsSlice()})
	w.WritePacket(0, ts, arp.Bytes(), 0, "")
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: addrA.AsSlice(), DstIP: addrB.AsSlice()}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	udp.SetNetworkLayerForChecksum(ip)
	b := gopacket.NewSerializeBuffer()
	gopacket.SerializeLayers(b, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload([]byte("x")))
	w.WritePacket(0, ts, b.Bytes(), 0, "")
	tcp := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, &wire.BusyFields{}, wire.EncodeOptions{}) // no marks: plain TCP
	w.WritePacket(0, ts, tcp, 0, "")
	frag := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.BusyFields{}, wire.EncodeOptions{SetMarks: true})
	frag[14+6] |= 0x20 // more fragments
	firstFrag := append([]byte(nil), frag...)
	frag[14+7] = 0x10 // offset 128 bytes: a later fragment, no Homa header
	w.WritePacket(0, ts, frag, 0, "")
	w.WritePacket(0, ts, firstFrag, 0, "")
	hij := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, IPProto: 6}, &wire.BusyFields{Common: wire.CommonFields{SenderID: 9}}, wire.EncodeOptions{SetMarks: true})
	w.WritePacket(0, ts, hij, 0, "")
	w.Flush()
	r, err := NewReader(&buf, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Homa packet's first fragment is read (the checker reports the
	// fragmentation, HOMA-WIRE-015); a later one holds no Homa header.
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !f.Fragment || f.Hijacked || f.Packet.Type() != wire.TypeBusy || f.Number != 5 {
		t.Errorf("got frame %d fragment %v hijacked %v %s, want 5 true false BUSY", f.Number, f.Fragment, f.Hijacked, f.Packet.Type())
	}
	if ev := f.Events(nil); len(ev) != 1 || !ev[0].IP.Fragment {
		t.Errorf("events %+v: want one with IP.Fragment", ev)
	}
	f, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !f.Hijacked || f.Fragment || f.Packet.Type() != wire.TypeBusy || f.Number != 6 || f.Packet.SenderID() != 9 {
		t.Errorf("got frame %d hijacked %v fragment %v %s id %d, want 6 true false BUSY 9", f.Number, f.Hijacked, f.Fragment, f.Packet.Type(), f.Packet.SenderID())
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF, got %v", err)
	}
	st := r.Stats()
	want := map[string]int{"arp": 1, "udp": 1, "tcp": 1, "fragment": 1}
	for k, v := range want {
		if st.Other[k] != v {
			t.Errorf("other[%s] = %d, want %d (all: %v)", k, st.Other[k], v, st.Other)
		}
	}
	if st.Frames != 6 || st.Homa != 2 {
		t.Errorf("frames %d homa %d, want 6 2", st.Frames, st.Homa)
	}
}

func TestBadFiles(t *testing.T) {
	cases := map[string][]byte{
		"empty":      nil,
		"short":      {0xa1, 0xb2},
		"text":       []byte("hello world, not a capture"),
		"pcap hdr":   {0xa1, 0xb2, 0xc3, 0xd4, 0, 2},
		"pcapng hdr": {0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0},
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
			if err == nil {
				_, err = r.Next()
				if err == nil || errors.Is(err, io.EOF) {
					t.Fatalf("want an error, got %v", err)
				}
				return
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", err)
			}
		})
	}
	t.Run("cut record", func(t *testing.T) {
		var buf bytes.Buffer
		w, _ := NewWriter(&buf, Interface{Name: "x"})
		fr := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.BusyFields{}, wire.EncodeOptions{})
		w.WritePacket(0, time.Unix(1, 0), fr, 0, "")
		w.WritePacket(0, time.Unix(2, 0), fr, 0, "")
		w.Flush()
		data := buf.Bytes()[:buf.Len()-10]
		r, err := NewReader(bytes.NewReader(data), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatalf("first frame: %v", err)
		}
		_, err = r.Next()
		if err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("want a read error for the cut frame, got %v", err)
		}
	})
}

// TestNoHomaError: a capture without Homa whose frames are on a link type
// the reader cannot peel says so, naming the type (by number where
// gopacket has no name); one without such frames gives ErrNoHoma alone.
func TestNoHomaError(t *testing.T) {
	lp := newLinkParser(layers.LinkType(147))
	st := Stats{Other: map[string]int{lp.unsup: 46, "arp": 2}}
	err := NoHomaError("x.pcap", st)
	if !errors.Is(err, ErrNoHoma) || !strings.HasSuffix(err.Error(), "; 46 frames are on link types homatest cannot read (147): capture on an Ethernet, cooked (SLL, SLL2), raw IP or loopback interface") {
		t.Errorf("unsupported link: %v", err)
	}
	if err := NoHomaError("x.pcap", Stats{Other: map[string]int{"arp": 2}}); !errors.Is(err, ErrNoHoma) || err.Error() != "x.pcap: "+ErrNoHoma.Error() {
		t.Errorf("other traffic only: %v", err)
	}
}

// TestIPVersionChecked: an IP header whose version nibble is not that of
// its EtherType (5 under 0x0800, 4 under 0x86DD) or, on a raw IP link,
// neither 4 nor 6, is no IP packet: counted as "not-ip", not read as
// Homa, and not as a link type the reader cannot peel.
func TestIPVersionChecked(t *testing.T) {
	busy := &wire.BusyFields{Common: wire.CommonFields{Sport: 1, Dport: 2, SenderID: 4}}
	v4 := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, busy, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	v6 := buildFrame(t, FrameSpec{Src: addr6A, Dst: addr6B}, busy, wire.EncodeOptions{FixLengths: true, SetMarks: true})
	bad4, bad6 := bytes.Clone(v4), bytes.Clone(v6)
	bad4[14] = 0x55 // version 5, IHL 5
	bad6[14] = 0x40 // version 4 in an IPv6 header
	st, err := readAll(t, writeFrames(t, bad4, bad6, v4))
	if err != nil || st.Homa != 1 || st.Other["not-ip"] != 2 || st.Frames != 3 {
		t.Errorf("ethernet: homa %d other %v frames %d (err %v), want 1 map[not-ip:2] 3", st.Homa, st.Other, st.Frames, err)
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Interface{Name: "raw", LinkType: layers.LinkTypeRaw})
	if err != nil {
		t.Fatal(err)
	}
	w.WritePacket(0, time.Unix(1, 0), bad4[14:], 0, "")
	w.WritePacket(0, time.Unix(2, 0), v4[14:], 0, "")
	w.Flush()
	st, err = readAll(t, buf.Bytes())
	if err != nil || st.Homa != 1 || st.Other["not-ip"] != 1 || st.UnreadLink() != 0 {
		t.Errorf("raw: homa %d other %v unread link %d (err %v), want 1 map[not-ip:1] 0", st.Homa, st.Other, st.UnreadLink(), err)
	}
}

// TestIPv4OptionsRead: a Homa packet whose IPv4 header carries options
// is read whole (checksum fixed), with IPOptions set on the frame and
// Options on its event (HOMA-WIRE-015 judges it) for four NOP bytes, and
// not for a CIPSO label padded with NOPs, which a Linux security module
// puts on every AF_INET socket (helper-149), nor for the plain 20-byte
// header.
func TestIPv4OptionsRead(t *testing.T) {
	plain := buildFrame(t, FrameSpec{Src: addrA, Dst: addrB}, &wire.BusyFields{Common: wire.CommonFields{SenderID: 4}}, wire.EncodeOptions{SetMarks: true})
	const ipAt = 14
	withOpts := func(opts ...byte) []byte {
		f := append(append(append([]byte(nil), plain[:ipAt+20]...), opts...), plain[ipAt+20:]...)
		f[ipAt] = 0x40 | byte(5+len(opts)/4)
		binary.BigEndian.PutUint16(f[ipAt+2:], binary.BigEndian.Uint16(f[ipAt+2:])+uint16(len(opts)))
		f[ipAt+10], f[ipAt+11] = 0, 0
		binary.BigEndian.PutUint16(f[ipAt+10:], wire.IPv4HeaderChecksum(f[ipAt:ipAt+20+len(opts)]))
		return f
	}
	frames := [][]byte{plain, withOpts(1, 1, 1, 1), withOpts(134, 10, 0, 0, 0, 3, 1, 4, 0, 5, 1, 1)}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Interface{Name: "x"})
	for _, f := range frames {
		w.WritePacket(0, time.Unix(1, 0), f, 0, "")
	}
	w.Flush()
	r, err := NewReader(&buf, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false} {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		ev := f.Events(nil)
		if f.IPOptions != want || f.BadIPChecksum || f.Packet.Type() != wire.TypeBusy || f.Packet.SenderID() != 4 || len(ev) != 1 || ev[0].IP.Options != want {
			t.Errorf("frame %d: options %v, bad checksum %v, %s id %d, events %d: want options %v, a valid BUSY id 4", i+1, f.IPOptions, f.BadIPChecksum, f.Packet.Type(), f.Packet.SenderID(), len(ev), want)
		}
	}
}
