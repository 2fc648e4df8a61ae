package workload

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Overhead models what a message costs on a link.
type Overhead interface {
	// WireBytes returns the bytes a message of length payload bytes
	// occupies on the link, payload included.
	WireBytes(length int) int
}

// Ethernet framing per packet on the wire, in bytes: preamble and start
// delimiter 8, MAC header 14, FCS 4, minimum inter-frame gap 12 (IEEE
// 802.3).
const EthernetFraming = 8 + 14 + 4 + 12

// HomaDataOverhead is the overhead of a Homa message on the receiver's
// downlink: the message travels in ceil(length / max_seg_data) DATA packets
// with max_seg_data = MTU - IP header - 56 (HomaModule homa_wire.h
// homa_data_hdr, one segment per packet as the reference implementation
// sends), and each packet adds the 56-byte DATA header, the IP header (20
// bytes IPv4, 40 IPv6) and EthernetFraming. GRANT, ACK and the other
// control packets of the message travel the other way (on the receiver's
// uplink) and RESENDs only follow loss, so they are not counted.
type HomaDataOverhead struct {
	// MTU is the IP MTU in bytes (1500 if 0).
	MTU int
	// IPv6 selects the 40-byte IPv6 header.
	IPv6 bool
}

// WireBytes implements Overhead.
func (o HomaDataOverhead) WireBytes(length int) int {
	perPacket := EthernetFraming + wire.DataHeaderLen + 20
	if o.IPv6 {
		perPacket += 20
	}
	mtu := o.MTU
	if mtu == 0 {
		mtu = 1500
	}
	seg := mtu - (perPacket - EthernetFraming)
	if seg < 1 || length < 1 {
		return length
	}
	packets := (length + seg - 1) / seg
	return length + packets*perPacket
}

// MeanWireBytes returns the mean of o.WireBytes over d's lengths, in
// bytes: the link bytes one message costs on average.
func (d Dist) MeanWireBytes(o Overhead) float64 {
	mean, prev := 0.0, 0.0
	for _, p := range d.points {
		mean += float64(o.WireBytes(p.Length)) * (p.Fraction - prev)
		prev = p.Fraction
	}
	return mean
}

// Arrivals is a Poisson arrival process: exponentially distributed gaps
// between messages.
type Arrivals struct {
	// Rate is the mean arrival rate in messages per second.
	Rate float64
}

// MaxLoad is the largest offered load Poisson takes, as a fraction of the
// link rate. Loads above 1 overload the link (many-to-one at 2 offers each
// server's downlink twice what it carries): the regime where receivers
// ration grants, queues overflow and RPCs time out, which a testbed must
// be able to reproduce; 4 covers the overloads the checker was tried on.
const MaxLoad = 4

// Poisson returns the arrivals of messages with sizes from d that offer
// loadFraction (0 < loadFraction ≤ MaxLoad, e.g. 0.8 for 80 %) of a link of
// linkBps bit/s, counting each message as o.WireBytes of its length:
// Rate = loadFraction · linkBps / (8 · d.MeanWireBytes(o)). (It takes the
// distribution rather than a mean size because the per-packet overhead
// depends on every size, not on the mean.) Errors: a load outside (0, MaxLoad],
// a non-positive link rate, or the zero Dist.
func Poisson(loadFraction, linkBps float64, d Dist, o Overhead) (Arrivals, error) {
	switch {
	case !(loadFraction > 0 && loadFraction <= MaxLoad):
		return Arrivals{}, fmt.Errorf("workload: load %v: want a fraction of the link rate in (0, %d], e.g. 0.5 for 50 %% (above 1 overloads the link)", loadFraction, MaxLoad)
	case !(linkBps > 0):
		return Arrivals{}, fmt.Errorf("workload: link rate %v bit/s: must be positive", linkBps)
	case len(d.points) == 0:
		return Arrivals{}, fmt.Errorf("workload: no size distribution: use Parse")
	}
	return Arrivals{Rate: loadFraction * linkBps / (8 * d.MeanWireBytes(o))}, nil
}

// Mean returns the mean gap between arrivals.
func (a Arrivals) Mean() time.Duration { return time.Duration(float64(time.Second) / a.Rate) }

// Next draws the gap before the next arrival: exponential with mean 1/Rate
// seconds, from r.ExpFloat64. It allocates nothing.
func (a Arrivals) Next(r *rand.Rand) time.Duration {
	return time.Duration(r.ExpFloat64() / a.Rate * float64(time.Second))
}
