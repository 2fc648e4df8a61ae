package spec

import (
	"fmt"
	"net/netip"
	"strings"
)

// CaptureKind says where on the path between two hosts a capture saw its
// packets.
type CaptureKind uint8

// Capture kinds.
const (
	// CaptureSwitch is a tap between the hosts (a switch mirror port, a
	// bridge port, tcpdump on a router): every packet passed it after
	// leaving its sender and before reaching its receiver, so loss,
	// queueing, reordering and duplication can happen on either side.
	CaptureSwitch CaptureKind = iota
	// CaptureHost is a tap on one host's own link (host:ADDR): that host's
	// packets are seen as it sent them and as it received them; packets
	// of other hosts are not seen at all.
	CaptureHost
	// CaptureSent holds every packet as its sender sent it (each host's
	// uplink, e.g. a run's sent.pcapng): nothing happened to a packet
	// before it was seen, anything may happen after.
	CaptureSent
	// CaptureDelivered holds every packet as it was delivered (each
	// host's downlink, e.g. a run's delivered.pcapng): a packet may have
	// been delayed, reordered or duplicated before it was seen, and
	// packets lost on the way are not in it.
	CaptureDelivered
)

// CapturePoint is where a capture was taken: a kind and, for CaptureHost,
// the host whose link was tapped.
type CapturePoint struct {
	Kind CaptureKind `json:"kind"`
	// Host is the tapped host (CaptureHost only).
	Host netip.Addr `json:"host,omitzero"`
	// Open marks a tap between hosts that was inferred, not declared
	// (homatest check's auto from a capture of two or more hosts): its
	// hosts may also exchange packets with hosts it does not show (a
	// tcpdump on a client that talks to one server, a mirror of some
	// ports), so it is not taken to hold every packet of any host
	// (SeesAllOf). CaptureSwitch only.
	Open bool `json:"open,omitempty"`
}

// Switch is the capture point between the hosts, the default.
var Switch = CapturePoint{Kind: CaptureSwitch}

// HostPoint returns the capture point on host h's own link.
func HostPoint(h netip.Addr) CapturePoint { return CapturePoint{Kind: CaptureHost, Host: h} }

// ParseCapturePoint parses "switch", "host:ADDR", "sent" or "delivered"
// (as --capture-point takes them; "auto" and "ports", a switch-port
// capture judged per host, are homatest check's business). Errors name
// every form --capture-point accepts.
func ParseCapturePoint(s string) (CapturePoint, error) {
	switch {
	case s == "switch":
		return Switch, nil
	case s == "sent":
		return CapturePoint{Kind: CaptureSent}, nil
	case s == "delivered":
		return CapturePoint{Kind: CaptureDelivered}, nil
	case strings.HasPrefix(s, "host:"):
		a, err := netip.ParseAddr(strings.TrimPrefix(s, "host:"))
		if err != nil {
			return CapturePoint{}, fmt.Errorf("capture point %q: %q is not an IP address (want host:10.0.0.1 or host:fd00::1)", s, strings.TrimPrefix(s, "host:"))
		}
		return HostPoint(a.Unmap()), nil
	}
	return CapturePoint{}, fmt.Errorf("capture point %q: want auto, switch, host:ADDR, sent, delivered or ports", s)
}

// String returns the form ParseCapturePoint reads.
func (cp CapturePoint) String() string {
	switch cp.Kind {
	case CaptureHost:
		return "host:" + cp.Host.String()
	case CaptureSent:
		return "sent"
	case CaptureDelivered:
		return "delivered"
	}
	return "switch"
}

// AtSender reports whether the capture saw e exactly as its sender sent
// it: no network lay between the sender and the capture point.
func (cp CapturePoint) AtSender(e *Event) bool {
	switch cp.Kind {
	case CaptureHost:
		return e.Src == cp.Host
	case CaptureSent:
		return true
	}
	return false
}

// AtReceiver reports whether the capture saw e exactly as its receiver
// got it: no network lay between the capture point and the receiver.
func (cp CapturePoint) AtReceiver(e *Event) bool {
	switch cp.Kind {
	case CaptureHost:
		return e.Dst == cp.Host
	case CaptureDelivered:
		return true
	}
	return false
}

// TimesArrivalsAt reports whether the capture holds every packet host h
// received, stamped where the rules granting bounds use it (on h's link,
// as delivered, or at a full tap, whose stamps the rules' slack covers):
// SeesAllOf(h), but not CaptureSent, which stamps each packet when its
// sender sent it (queueing on the way may hold it for milliseconds), so
// what h held at a time (its messages being granted) cannot be read from
// it.
func (cp CapturePoint) TimesArrivalsAt(h netip.Addr) bool {
	return cp.Kind != CaptureSent && cp.SeesAllOf(h)
}

// SeesAllOf reports whether the capture holds every packet host h sent and
// received (so that "h received nothing" or "h sent nothing" can be read
// from it): true for CaptureSwitch (a tap all traffic crosses) unless
// Open, for the tapped host of CaptureHost, and for CaptureSent (what h
// sent; what h received up to loss) and CaptureDelivered (the reverse).
func (cp CapturePoint) SeesAllOf(h netip.Addr) bool {
	switch {
	case cp.Kind == CaptureHost:
		return h == cp.Host
	case cp.Kind == CaptureSwitch && cp.Open:
		return false
	}
	return true
}
