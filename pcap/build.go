package pcap

import (
	"errors"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/homatest/homatest/spec/wire"
)

// FrameSpec says how to wrap a Homa packet into an Ethernet frame.
type FrameSpec struct {
	// SrcMAC and DstMAC of the Ethernet header (zero MACs if nil).
	SrcMAC, DstMAC net.HardwareAddr
	// Src and Dst IP addresses, both IPv4 or both IPv6.
	Src, Dst netip.Addr
	// Priority 0..7, written as priority<<5 in the IPv4 TOS or as
	// priority<<IPv6Shift in the IPv6 traffic class.
	Priority uint8
	// IPv6Shift is the traffic-class shift (0 means by wire version).
	IPv6Shift uint8
	// TOS, when KeepTOS, is written as it is as the IPv4 TOS byte or the
	// IPv6 traffic class (a received packet's own, whatever shift its
	// sender used); Priority and IPv6Shift are then unused.
	TOS     uint8
	KeepTOS bool
	// IPProto overrides the IP protocol (0 means the version's native one;
	// set 6 for a TCP-hijacked frame).
	IPProto uint8
	// VLAN, when nonzero, adds an 802.1Q tag with this VLAN id.
	VLAN uint16
}

// BuildFrame serializes Ethernet (+ optional 802.1Q), IPv4 or IPv6 (DF set,
// TTL 64) and the Homa packet f into buf, with lengths fixed and the IP
// header checksum computed. o selects the Homa wire version and options.
// It returns buf.Bytes().
func BuildFrame(buf gopacket.SerializeBuffer, s FrameSpec, f wire.Fields, o wire.EncodeOptions) ([]byte, error) {
	if !s.Src.IsValid() || !s.Dst.IsValid() || s.Src.Is4() != s.Dst.Is4() {
		return nil, errors.New("pcap: BuildFrame needs Src and Dst of one IP family")
	}
	v := o.Version
	if v == wire.VersionAuto {
		v = wire.VersionCurrent
	}
	proto := s.IPProto
	if proto == 0 {
		proto = v.IPProtocol()
	}
	if o.ComputeChecksums && !o.Src.IsValid() {
		o.Src, o.Dst = s.Src, s.Dst
	}
	enc, err := f.AppendTo(nil, o)
	if err != nil {
		return nil, err
	}
	mac := func(m net.HardwareAddr) net.HardwareAddr {
		if m == nil {
			return make(net.HardwareAddr, 6)
		}
		return m
	}
	eth := &layers.Ethernet{SrcMAC: mac(s.SrcMAC), DstMAC: mac(s.DstMAC)}
	var ls []gopacket.SerializableLayer
	ethType := layers.EthernetTypeIPv4
	if s.Src.Is6() {
		ethType = layers.EthernetTypeIPv6
	}
	if s.VLAN != 0 {
		eth.EthernetType = layers.EthernetTypeDot1Q
		ls = append(ls, eth, &layers.Dot1Q{VLANIdentifier: s.VLAN, Type: ethType})
	} else {
		eth.EthernetType = ethType
		ls = append(ls, eth)
	}
	if s.Src.Is4() {
		tos := wire.TOSForPriority(s.Priority)
		if s.KeepTOS {
			tos = s.TOS
		}
		ls = append(ls, &layers.IPv4{Version: 4, IHL: 5, TOS: tos, TTL: 64,
			Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocol(proto),
			SrcIP: s.Src.AsSlice(), DstIP: s.Dst.AsSlice()})
	} else {
		shift := s.IPv6Shift
		if shift == 0 {
			shift = wire.IPv6PriorityShift(v)
		}
		tc := (s.Priority & 7) << shift
		if s.KeepTOS {
			tc = s.TOS
		}
		ls = append(ls, &layers.IPv6{Version: 6, TrafficClass: tc, HopLimit: 64,
			NextHeader: layers.IPProtocol(proto), SrcIP: s.Src.AsSlice(), DstIP: s.Dst.AsSlice()})
	}
	ls = append(ls, gopacket.Payload(enc))
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
