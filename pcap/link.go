package pcap

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// unsupportedLink prefixes Stats.Other's kind for frames of a link type
// the reader cannot peel.
const unsupportedLink = "unsupported-link-"

// linkParser peels the link layer and IP header of one link type with a
// reusable DecodingLayerParser, so that reading does not allocate. It
// also peels what carries a frame inside another (802.1ad tags of TPID
// 0x9100, VXLAN, GRE and ERSPAN over GRE: see encapsulated), to at most
// maxEncap levels, each with a parser of its own (inner).
type linkParser struct {
	eth     layers.Ethernet
	loop    layers.Loopback
	dot1q   layers.Dot1Q
	sll     layers.LinuxSLL
	sll2    layers.LinuxSLL2
	ip4     layers.IPv4
	ip6     layers.IPv6
	p4, p6  *gopacket.DecodingLayerParser // raw IP link types: chosen by version nibble
	p       *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	kind    string // why the last frame was not IP
	unsup   string // "unsupported-link-<name>" for a link type we cannot peel
	// in is the parser whose ip4 or ip6 holds the innermost IP header of
	// the last frame: lp, or for a frame carried inside another, an inner
	// parser's.
	in *linkParser
	// inner parses the frames this parser's frames carry (made on first
	// use); pEth, pTag hold its parsers that start at an Ethernet header
	// and at an 802.1Q tag (with p4 and p6 at an IP header).
	inner      *linkParser
	pEth, pTag *gopacket.DecodingLayerParser
	// first is the layer a frame of the link type starts with (p's
	// first; zero for raw IP, whose version nibble picks p4 or p6).
	first gopacket.LayerType
	// fast is how the link type starts a frame for fastDecode:
	// fastEthernet, fastRaw, or fastNone for a link type it leaves to p.
	fast uint8
}

// Link types fastDecode reads: none, Ethernet, raw IP.
const (
	fastNone uint8 = iota
	fastEthernet
	fastRaw
)

// maxEncap bounds how many encapsulations (tags the parser does not peel
// itself, tunnels) the reader peels off one frame.
const maxEncap = 4

func newLinkParser(lt layers.LinkType) *linkParser {
	lp := &linkParser{decoded: make([]gopacket.LayerType, 0, 8), unsup: unsupportedLink + linkName(lt)}
	switch lt {
	case layers.LinkTypeEthernet:
		lp.first, lp.fast = layers.LayerTypeEthernet, fastEthernet
	case layers.LinkTypeLinuxSLL:
		lp.first = layers.LayerTypeLinuxSLL
	case layers.LinkTypeLinuxSLL2:
		lp.first = layers.LayerTypeLinuxSLL2
	case layers.LinkTypeIPv4:
		lp.first = layers.LayerTypeIPv4
	case layers.LinkTypeIPv6:
		lp.first = layers.LayerTypeIPv6
	case layers.LinkTypeNull, layers.LinkTypeLoop: // BSD loopback: 4-byte address family
		lp.first = layers.LayerTypeLoopback
	case layers.LinkTypeRaw, 12, 14: // LINKTYPE_RAW, and DLT_RAW as some systems write it
		lp.p4, lp.p6 = lp.mk(layers.LayerTypeIPv4), lp.mk(layers.LayerTypeIPv6)
		lp.fast = fastRaw
	}
	if lp.first != gopacket.LayerTypeZero {
		lp.p = lp.mk(lp.first)
	}
	return lp
}

// mk returns a parser into lp's layers that starts at layer first.
func (lp *linkParser) mk(first gopacket.LayerType) *gopacket.DecodingLayerParser {
	p := gopacket.NewDecodingLayerParser(first, &lp.eth, &lp.loop, &lp.dot1q, &lp.sll, &lp.sll2, &lp.ip4, &lp.ip6)
	p.IgnoreUnsupported = true
	return p
}

// decode returns the IP version (4 or 6) of the innermost IP header decoded
// from data, or false (with kind set) if the frame carries no IP packet.
// An IP header whose version nibble is not that of its EtherType (or, on
// a raw IP link, neither 4 nor 6) is no IP packet ("not-ip"): gopacket
// decodes an IPv4 or IPv6 header without looking at its version.
func (lp *linkParser) decode(data []byte) (uint8, bool) {
	lp.kind, lp.in = "not-ip", lp
	if v := lp.fastDecode(data); v != 0 {
		return v, true
	}
	p := lp.p
	if lp.p4 != nil {
		if p = lp.byVersion(data); p == nil {
			return 0, false
		}
	}
	if p == nil {
		lp.kind = lp.unsup
		return 0, false
	}
	return lp.run(p, data, 0)
}

// fastDecode decodes the frame shapes a Homa capture is made of without
// gopacket's DecodingLayerParser (a tenth of the check's CPU per packet):
// on an Ethernet link with no tag, or a raw IP link, an IPv4 header of 20
// bytes, not a fragment, or an IPv6 header with no extension header,
// carrying IP protocol 146 or 253. It fills lp's layers (eth, ip4 or
// ip6) and decoded as the parser would for that frame and returns the
// IP version, or 0 for any other frame, which decode hands to the parser
// (tags, tunnels, options, fragments, other protocols, a damaged or
// short header). TestFastDecodeAsParser and FuzzFastDecode hold it to
// the parser's result.
func (lp *linkParser) fastDecode(data []byte) uint8 {
	ip, v4 := data, false
	switch lp.fast {
	case fastEthernet:
		if len(data) < 14 {
			return 0
		}
		switch layers.EthernetType(binary.BigEndian.Uint16(data[12:14])) {
		case layers.EthernetTypeIPv4:
			v4 = true
		case layers.EthernetTypeIPv6:
		default:
			return 0
		}
		ip = data[14:]
	case fastRaw:
		v4 = len(ip) > 0 && ip[0]>>4 == 4
	default:
		return 0
	}
	var v uint8
	if v4 {
		v = fastIPv4(&lp.ip4, ip)
	} else {
		v = fastIPv6(&lp.ip6, ip)
	}
	if v == 0 {
		return 0
	}
	lp.decoded = lp.decoded[:0]
	if lp.fast == fastEthernet {
		lp.eth = layers.Ethernet{BaseLayer: layers.BaseLayer{Contents: data[:14], Payload: data[14:]},
			SrcMAC: data[6:12], DstMAC: data[0:6], EthernetType: layers.EthernetType(binary.BigEndian.Uint16(data[12:14]))}
		lp.decoded = append(lp.decoded, layers.LayerTypeEthernet)
	}
	if v == 4 {
		lp.decoded = append(lp.decoded, layers.LayerTypeIPv4)
	} else {
		lp.decoded = append(lp.decoded, layers.LayerTypeIPv6)
	}
	return v
}

// fastHoma reports whether IP protocol p is Homa's (146, or 253 before
// 2024): a protocol gopacket decodes no layer of, so that its parser
// stops at the IP header.
func fastHoma(p uint8) bool { return p == 146 || p == 253 }

// fastIPv4 fills ip from b as layers.IPv4.DecodeFromBytes does and
// returns 4, when b is an IPv4 header of 20 bytes, no fragment, carrying
// Homa, whose total length covers the header; else it returns 0 and
// leaves ip alone.
func fastIPv4(ip *layers.IPv4, b []byte) uint8 {
	if len(b) < 20 || b[0] != 0x45 || !fastHoma(b[9]) {
		return 0
	}
	length := int(binary.BigEndian.Uint16(b[2:4]))
	flagsfrags := binary.BigEndian.Uint16(b[6:8])
	if length < 20 || flagsfrags&0x3fff != 0 { // 0: TSO's length, left to gopacket
		return 0
	}
	if len(b) > length {
		b = b[:length]
	}
	*ip = layers.IPv4{BaseLayer: layers.BaseLayer{Contents: b[:20], Payload: b[20:]},
		Version: 4, IHL: 5, TOS: b[1], Length: uint16(length), Id: binary.BigEndian.Uint16(b[4:6]),
		Flags: layers.IPv4Flag(flagsfrags >> 13), TTL: b[8], Protocol: layers.IPProtocol(b[9]),
		Checksum: binary.BigEndian.Uint16(b[10:12]), SrcIP: b[12:16], DstIP: b[16:20], Options: ip.Options[:0]}
	return 4
}

// fastIPv6 fills ip from b as layers.IPv6.DecodeFromBytes does and
// returns 6, when b is an IPv6 header whose next header is Homa and whose
// payload length is not 0 (a jumbogram's); else it returns 0 and leaves
// ip alone.
func fastIPv6(ip *layers.IPv6, b []byte) uint8 {
	if len(b) < 40 || b[0]>>4 != 6 || !fastHoma(b[6]) {
		return 0
	}
	length := binary.BigEndian.Uint16(b[4:6])
	if length == 0 {
		return 0
	}
	payload := b[40:]
	payload = payload[:min(int(length), len(payload))]
	*ip = layers.IPv6{BaseLayer: layers.BaseLayer{Contents: b[:40], Payload: payload},
		Version: 6, TrafficClass: uint8(binary.BigEndian.Uint16(b[0:2]) >> 4), FlowLabel: binary.BigEndian.Uint32(b[0:4]) & 0x000FFFFF,
		Length: length, NextHeader: layers.IPProtocol(b[6]), HopLimit: b[7], SrcIP: b[8:24], DstIP: b[24:40]}
	return 6
}

// byVersion returns the parser of the IP version in data's first nibble
// (p4 or p6), or nil for another version.
func (lp *linkParser) byVersion(data []byte) *gopacket.DecodingLayerParser {
	switch {
	case len(data) > 0 && data[0]>>4 == 4:
		return lp.p4
	case len(data) > 0 && data[0]>>4 == 6:
		return lp.p6
	}
	return nil
}

// run is decode with parser p, at depth encapsulations into the frame:
// when what p decoded carries another frame (encapsulated), that frame is
// decoded by lp.inner, and its innermost IP header is the frame's, if it
// has one; else the frame is what p decoded (a VXLAN datagram whose inner
// frame holds no IP packet is UDP).
func (lp *linkParser) run(p *gopacket.DecodingLayerParser, data []byte, depth int) (uint8, bool) {
	lp.kind, lp.in = "not-ip", lp
	lp.decoded = lp.decoded[:0]
	_ = p.DecodeLayers(data, &lp.decoded)
	var ipv uint8
	for _, t := range lp.decoded {
		switch t {
		case layers.LayerTypeIPv4:
			ipv = 4
		case layers.LayerTypeIPv6:
			ipv = 6
		}
	}
	if ipv == 4 && lp.ip4.Version != 4 || ipv == 6 && lp.ip6.Version != 6 {
		return 0, false
	}
	if depth < maxEncap {
		if first, rest := lp.encapsulated(ipv); rest != nil {
			in := lp.innerParser()
			var ip *gopacket.DecodingLayerParser
			switch first {
			case layers.LayerTypeEthernet:
				ip = in.pEth
			case layers.LayerTypeDot1Q:
				ip = in.pTag
			case layers.LayerTypeIPv4:
				ip = in.p4
			case layers.LayerTypeIPv6:
				ip = in.p6
			default: // IP of either version
				ip = in.byVersion(rest)
			}
			if ip != nil {
				if v, ok := in.run(ip, rest, depth+1); ok {
					lp.in = in.in
					return v, true
				}
				if ipv == 0 {
					lp.kind = in.kind
					return 0, false
				}
			}
		}
	}
	if ipv == 0 {
		if lp.isARP() {
			lp.kind = "arp"
		}
		return 0, false
	}
	return ipv, true
}

// cutBeforeIP reports whether data, a frame lp's decode found no IP
// packet in and the snap length cut, may hide a Homa packet: it stops
// before the end of the link header, or inside the IPv4 or IPv6 header
// the link header announces, before that header's protocol byte or at
// one naming Homa or TCP (which may be hijacked Homa).
func (lp *linkParser) cutBeforeIP(data []byte) bool {
	next, ip := lp.first, data
	switch {
	case lp.p4 != nil: // raw IP: the version nibble says which
		switch {
		case len(data) == 0:
			return true
		case data[0]>>4 == 4:
			next = layers.LayerTypeIPv4
		case data[0]>>4 == 6:
			next = layers.LayerTypeIPv6
		default:
			return false
		}
	case next == layers.LayerTypeIPv4 || next == layers.LayerTypeIPv6:
	case len(lp.decoded) == 0:
		return true // the link header itself was cut
	default:
		var l gopacket.DecodingLayer
		switch lp.decoded[len(lp.decoded)-1] {
		case layers.LayerTypeEthernet:
			l = &lp.eth
		case layers.LayerTypeDot1Q:
			l = &lp.dot1q
		case layers.LayerTypeLinuxSLL:
			l = &lp.sll
		case layers.LayerTypeLinuxSLL2:
			l = &lp.sll2
		case layers.LayerTypeLoopback:
			l = &lp.loop
		default:
			return false
		}
		next, ip = l.NextLayerType(), l.LayerPayload()
	}
	proto := -1
	switch next {
	case layers.LayerTypeIPv4:
		if len(ip) >= 20 {
			return false
		}
		if len(ip) > 9 {
			proto = int(ip[9])
		}
	case layers.LayerTypeIPv6:
		if len(ip) >= 40 {
			return false
		}
		if len(ip) > 6 {
			proto = int(ip[6])
		}
	default:
		return false
	}
	return proto < 0 || fastHoma(uint8(proto)) || proto == int(layers.IPProtocolTCP)
}

// innerParser returns lp.inner, made on first use.
func (lp *linkParser) innerParser() *linkParser {
	if lp.inner == nil {
		in := &linkParser{decoded: make([]gopacket.LayerType, 0, 8), unsup: lp.unsup}
		in.pEth, in.pTag = in.mk(layers.LayerTypeEthernet), in.mk(layers.LayerTypeDot1Q)
		in.p4, in.p6 = in.mk(layers.LayerTypeIPv4), in.mk(layers.LayerTypeIPv6)
		lp.inner = in
	}
	return lp.inner
}

// EtherTypes and ports of the encapsulations encapsulated peels.
const (
	etherTypeQinQ9100 = 0x9100 // 802.1ad outer tag as older switches write it (gopacket peels 0x88A8 and 0x8100 itself)
	etherTypeTEB      = 0x6558 // transparent Ethernet bridging: Ethernet over GRE (gretap, NVGRE)
	etherTypeERSPAN2  = 0x88be // ERSPAN type I (no sequence number) and II
	etherTypeERSPAN3  = 0x22eb
	udpPortVXLAN      = 4789
)

// encapsulated returns the frame that the layers lp last decoded carry
// (ipv is the version of its innermost IP header, 0 for none), and the
// layer it starts with: after an Ethernet header or 802.1Q tag of
// EtherType 0x9100, the next tag; in a UDP datagram to port 4789 with the
// VXLAN I flag, an Ethernet frame; in GRE (IP protocol 47), what
// peelGRE finds. rest is nil when it carries none (a fragment included).
func (lp *linkParser) encapsulated(ipv uint8) (first gopacket.LayerType, rest []byte) {
	var proto uint8
	var payload []byte
	switch ipv {
	case 0:
		if len(lp.decoded) == 0 {
			return 0, nil
		}
		switch lp.decoded[len(lp.decoded)-1] {
		case layers.LayerTypeEthernet:
			if lp.eth.EthernetType == etherTypeQinQ9100 {
				return layers.LayerTypeDot1Q, lp.eth.Payload
			}
		case layers.LayerTypeDot1Q:
			if lp.dot1q.Type == etherTypeQinQ9100 {
				return layers.LayerTypeDot1Q, lp.dot1q.Payload
			}
		}
		return 0, nil
	case 4:
		if lp.ip4.Flags&layers.IPv4MoreFragments != 0 || lp.ip4.FragOffset != 0 {
			return 0, nil
		}
		proto, payload = uint8(lp.ip4.Protocol), lp.ip4.Payload
	case 6:
		proto, payload = uint8(lp.ip6.NextHeader), lp.ip6.Payload
		if lp.ip6.HopByHop != nil {
			proto = uint8(lp.ip6.HopByHop.NextHeader)
		}
		var frag bool
		if proto, payload, _, frag, _ = skipIPv6Ext(proto, payload); frag {
			return 0, nil
		}
	}
	switch proto {
	case uint8(layers.IPProtocolUDP):
		if len(payload) >= 16 && binary.BigEndian.Uint16(payload[2:]) == udpPortVXLAN && payload[8]&0x08 != 0 {
			return layers.LayerTypeEthernet, payload[16:]
		}
	case uint8(layers.IPProtocolGRE):
		return peelGRE(payload)
	}
	return 0, nil
}

// peelGRE returns the frame a GRE packet b carries (RFC 2784, 2890) and
// the layer it starts with: Ethernet for transparent Ethernet bridging
// and ERSPAN (type I: no ERSPAN header, type II: 8 bytes, type III: 12,
// or 20 with the platform-specific subheader; a type III frame of type
// IP starts at an IP header of either version: LayerTypeZero), IPv4 or
// IPv6 for IP over GRE. rest is nil
// for anything else: GRE version 1 (PPTP), a routing field (RFC 1701),
// another protocol, a header the capture cut.
func peelGRE(b []byte) (first gopacket.LayerType, rest []byte) {
	if len(b) < 4 {
		return 0, nil
	}
	flags := binary.BigEndian.Uint16(b)
	if flags&0x4007 != 0 { // routing present, or version not 0
		return 0, nil
	}
	n := 4
	for _, bit := range []uint16{0x8000, 0x2000, 0x1000} { // checksum, key, sequence number
		if flags&bit != 0 {
			n += 4
		}
	}
	if len(b) < n {
		return 0, nil
	}
	proto, b := binary.BigEndian.Uint16(b[2:]), b[n:]
	switch proto {
	case etherTypeTEB:
		return layers.LayerTypeEthernet, b
	case uint16(layers.EthernetTypeIPv4):
		return layers.LayerTypeIPv4, b
	case uint16(layers.EthernetTypeIPv6):
		return layers.LayerTypeIPv6, b
	case etherTypeERSPAN2:
		if flags&0x1000 == 0 { // type I
			return layers.LayerTypeEthernet, b
		}
		if len(b) < 8 || b[0]>>4 != 1 {
			return 0, nil
		}
		return layers.LayerTypeEthernet, b[8:]
	case etherTypeERSPAN3:
		if len(b) < 12 || b[0]>>4 != 2 {
			return 0, nil
		}
		h := 12
		if b[11]&1 != 0 { // O: platform-specific subheader
			h += 8
		}
		if len(b) < h {
			return 0, nil
		}
		switch b[10] >> 2 & 0x1f { // frame type
		case 0:
			return layers.LayerTypeEthernet, b[h:]
		case 2:
			return gopacket.LayerTypeZero, b[h:] // IP, either version
		}
	}
	return 0, nil
}

func (lp *linkParser) isARP() bool {
	for _, t := range lp.decoded {
		switch t {
		case layers.LayerTypeEthernet:
			if lp.eth.EthernetType == layers.EthernetTypeARP {
				return true
			}
		case layers.LayerTypeDot1Q:
			if lp.dot1q.Type == layers.EthernetTypeARP {
				return true
			}
		case layers.LayerTypeLinuxSLL:
			if lp.sll.EthernetType == layers.EthernetTypeARP {
				return true
			}
		case layers.LayerTypeLinuxSLL2:
			if lp.sll2.ProtocolType == layers.EthernetTypeARP {
				return true
			}
		}
	}
	return false
}

// linkName is lt's name, or its number where gopacket knows no name (its
// String is then "UnknownLinkType", which does not say which).
func linkName(lt layers.LinkType) string {
	if n := lt.String(); !strings.HasPrefix(n, "Unknown") {
		return n
	}
	return fmt.Sprint(int(lt))
}
