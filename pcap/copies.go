package pcap

import (
	"hash/maphash"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// OtherCopy is Stats.Other's kind for a Homa frame that repeats, byte for
// byte from its IP header on, a frame captured just before at another
// capture point of the same capture (see copyTracker): one packet seen
// twice, counted once.
const OtherCopy = "copy on another interface"

// OtherSameInstant is Stats.Other's kind for a Homa frame that repeats
// an earlier one at the same instant, skipped under
// ReaderOptions.SkipSameInstant (Stats.SameInstant).
const OtherSameInstant = "same-instant copy"

// copyWindow is how far apart in capture time a packet's later sighting
// may lie from its first at other capture points of one capture: the two
// ends of a veth, a bridge and its ports, an interface and "any" are
// microseconds apart on one host's clock.
const copyWindow = time.Millisecond

// OtherCopy's frames are skipped; a frame that repeats another at the
// same point (or in a capture that does not say where frames were taken)
// at the very same timestamp is kept and counted (Stats.SameInstant): a
// host sends no packet twice within one timestamp tick as a rule, but
// one that does is judged for it, so the reader cannot drop either.

// copySlots is how many recent Homa frames copyTracker remembers: a
// packet's later sightings follow its first within a few frames.
const copySlots = 64

// copyTracker finds the Homa frames a capture holds more than once because
// it was taken at several points the packet crossed on one host: tcpdump
// -i any sees a packet on both ends of a veth pair (outgoing, then
// incoming), on a bridge's ingress port, on the bridge device and on its
// egress port (three sightings in a switch's namespace while the bridge
// is promiscuous), on a vlan device and its parent, on lo as sent and as
// received; dumpcap -i eth0 -i any, and mergecap of captures of a bridge
// and its port, put it on two pcapng interfaces. Where the capture says
// where a frame was taken (the pcapng interface, the Linux cooked
// header's interface index and packet type: sent by us, to us, to
// another host), a frame identical to a recent one, taken within
// copyWindow at a point none of that packet's sightings so far was
// taken at, is one more sighting of it: the reader skips it
// (Stats.Other[OtherCopy]) and keeps the first, as one tap on the host's
// link would have seen the packet once. A host that sends a packet twice
// (a fault, HOMA-RESEND-010) sends it twice past every capture point:
// the second send's first sighting is at a point the first send was
// already seen at, so it is kept, and its later sightings pair with it.
// Frames with pcapng direction flags are never skipped, as a capture of
// switch ports holds every packet at two ports on purpose
// (ReaderOptions.Direction), and neither are frames with a pcapng comment (a
// note on that sighting: a switch's "dropped: ...") and classic pcaps of
// a link type that says nothing of where a frame was taken (Ethernet),
// whose copies the checker's network model judges; their same-instant
// twins at one interface and direction are counted all the same
// (Reader.markedPoint: a ports capture merged with itself).
type copyTracker struct {
	seed maphash.Seed
	// sums[i] is the hash of slot i's bytes from the IP header on: the
	// slots are scanned by it alone, in 512 contiguous bytes.
	sums  [copySlots]uint64
	slots [copySlots]copySlot
	next  int
	// tops counts the used slots by their sum's top byte: a frame whose
	// top byte no slot has (nearly every frame) matches none, and the
	// 64 sums are not scanned for it.
	tops [256]uint8
}

// copySights bounds the sightings of one packet copyTracker counts once:
// a veth pair, a bridge, its ports and a vlan device are far fewer.
const copySights = 8

// copySlot is one remembered frame: its time, where it was taken
// (copyPoint), the points its later sightings were taken at (also), and
// whether a later frame was already taken for its same-instant twin (its
// hash is in copyTracker.sums).
type copySlot struct {
	at     int64
	point  uint64
	also   [copySights - 1]uint64
	nAlso  uint8
	paired bool
	used   bool
}

// sightedAt reports whether one of the slot's packet's sightings was
// taken at point.
func (s *copySlot) sightedAt(point uint64) bool {
	return s.point == point || slices.Contains(s.also[:s.nAlso], point)
}

// copyPoint returns where the frame the top-level parser lp last decoded
// was taken, on pcapng interface iface: the interface, and for a Linux
// cooked frame its interface index (SLL2) and whether the host sent it
// (packet type outgoing); ok is false when the capture does not say (a
// classic pcap of a link type other than Linux cooked).
func copyPoint(lp *linkParser, iface int, ng bool) (point uint64, ok bool) {
	point = uint64(iface) << 33
	for _, t := range lp.decoded {
		switch t {
		case layers.LayerTypeLinuxSLL:
			if lp.sll.PacketType == layers.LinuxSLLPacketTypeOutgoing {
				point |= 1
			}
			return point, true
		case layers.LayerTypeLinuxSLL2:
			point |= uint64(lp.sll2.InterfaceIndex) << 1
			if lp.sll2.PacketType == layers.LinuxSLL2PacketTypeOutgoing {
				point |= 1
			}
			return point, true
		}
	}
	return point, ng
}

// markedBit sets a marked frame's point (markedPoint) apart from every
// unmarked one's (copyPoint's: interface << 33 and below), so that no
// unmarked frame is taken for its copy at another point.
const markedBit = 1 << 63

// markedPoint returns where the frame being decoded, on pcapng
// interface iface and marked with a direction or comment (Reader.marked),
// was taken, for its same-instant twins only: the interface, its
// direction and whether it carries a comment (a switch's note on a
// sighting is not the sighting).
func (r *Reader) markedPoint(iface int) uint64 {
	p := markedBit | uint64(iface)<<33 | uint64(r.markDir)<<1
	if r.markNote {
		p |= 1
	}
	return p
}

// seen looks the Homa packet whose IP header is ip and whose captured
// bytes after it are payload, taken at point at time t, up among the
// recent frames. elsewhere: where the capture says where each frame was
// taken (known), it is one more sighting of a frame remembered within
// copyWindow, at a point none of that frame's sightings was taken at,
// which the reader skips. Otherwise twin: it repeats, byte for byte, a
// frame remembered from the same point (or a capture that does not say)
// at the very same timestamp, which the reader keeps and counts
// (Stats.SameInstant); a remembered frame pairs with one twin. A frame
// that is neither is remembered.
func (c *copyTracker) seen(ip, payload []byte, point uint64, known bool, t time.Time) (elsewhere, twin bool) {
	if c.seed == (maphash.Seed{}) {
		c.seed = maphash.MakeSeed()
	}
	var sum uint64
	if n := len(ip); len(payload) > 0 && n > 0 && cap(ip) >= n+len(payload) && &ip[:n+1][n] == &payload[0] {
		// The bytes follow the IP header in one array (as they do in a
		// frame): one call hashes both (a Hash's sum depends only on the
		// bytes written, not on how they were split).
		sum = maphash.Bytes(c.seed, ip[:n+len(payload)])
	} else {
		var h maphash.Hash
		h.SetSeed(c.seed)
		h.Write(ip)
		h.Write(payload)
		sum = h.Sum64()
	}
	at := t.UnixNano()
	if c.tops[sum>>56] != 0 {
		if elsewhere, twin = c.match(sum, point, known, at); elsewhere {
			return true, false
		}
	}
	if c.slots[c.next].used {
		c.tops[c.sums[c.next]>>56]--
	}
	c.tops[sum>>56]++
	c.sums[c.next], c.slots[c.next] = sum, copySlot{at: at, point: point, used: true}
	c.next = (c.next + 1) % copySlots
	return false, twin
}

// match is seen's search of the remembered frames for one whose sum is
// sum, on the terms seen gives; a sighting it pairs is added to the
// slot's points, a twin marks the slot paired.
func (c *copyTracker) match(sum, point uint64, known bool, at int64) (elsewhere, twin bool) {
	for i := range c.sums {
		if c.sums[i] != sum {
			continue
		}
		s := &c.slots[i]
		if !s.used {
			continue
		}
		if known && s.point&markedBit == 0 && !s.sightedAt(point) && int(s.nAlso) < len(s.also) &&
			max(at-s.at, s.at-at) <= int64(copyWindow) {
			s.also[s.nAlso] = point
			s.nAlso++
			return true, false
		}
		if !s.paired && s.point == point && s.at == at {
			s.paired = true
			return false, true
		}
	}
	return false, false
}
