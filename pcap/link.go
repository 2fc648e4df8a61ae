package pcap

import (
	"fmt"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// unsupportedLink prefixes Stats.Other's kind for frames of a link type
// the reader cannot peel.
const unsupportedLink = "unsupported-link-"

// linkParser peels the link layer and IP header of one link type with a
// reusable DecodingLayerParser, so that reading does not allocate.
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
}

func newLinkParser(lt layers.LinkType) *linkParser {
	lp := &linkParser{decoded: make([]gopacket.LayerType, 0, 8), unsup: unsupportedLink + linkName(lt)}
	mk := func(first gopacket.LayerType) *gopacket.DecodingLayerParser {
		p := gopacket.NewDecodingLayerParser(first, &lp.eth, &lp.loop, &lp.dot1q, &lp.sll, &lp.sll2, &lp.ip4, &lp.ip6)
		p.IgnoreUnsupported = true
		return p
	}
	switch lt {
	case layers.LinkTypeEthernet:
		lp.p = mk(layers.LayerTypeEthernet)
	case layers.LinkTypeLinuxSLL:
		lp.p = mk(layers.LayerTypeLinuxSLL)
	case layers.LinkTypeLinuxSLL2:
		lp.p = mk(layers.LayerTypeLinuxSLL2)
	case layers.LinkTypeIPv4:
		lp.p = mk(layers.LayerTypeIPv4)
	case layers.LinkTypeIPv6:
		lp.p = mk(layers.LayerTypeIPv6)
	case layers.LinkTypeNull, layers.LinkTypeLoop: // BSD loopback: 4-byte address family
		lp.p = mk(layers.LayerTypeLoopback)
	case layers.LinkTypeRaw, 12, 14: // LINKTYPE_RAW, and DLT_RAW as some systems write it
		lp.p4, lp.p6 = mk(layers.LayerTypeIPv4), mk(layers.LayerTypeIPv6)
	}
	return lp
}

// decode returns the IP version (4 or 6) of the innermost IP header decoded
// from data, or false (with kind set) if the frame carries no IP packet.
// An IP header whose version nibble is not that of its EtherType (or, on
// a raw IP link, neither 4 nor 6) is no IP packet ("not-ip"): gopacket
// decodes an IPv4 or IPv6 header without looking at its version.
func (lp *linkParser) decode(data []byte) (uint8, bool) {
	lp.kind = "not-ip"
	p := lp.p
	if lp.p4 != nil {
		switch {
		case len(data) > 0 && data[0]>>4 == 4:
			p = lp.p4
		case len(data) > 0 && data[0]>>4 == 6:
			p = lp.p6
		default:
			return 0, false
		}
	}
	if p == nil {
		lp.kind = lp.unsup
		return 0, false
	}
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
	if ipv == 0 {
		if lp.isARP() {
			lp.kind = "arp"
		}
		return 0, false
	}
	return ipv, true
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
