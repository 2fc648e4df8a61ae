package spec

import (
	"encoding/binary"
	"hash/maphash"
	"time"
)

// Frames the network altered on the way (a corrupting link: netem's and
// the simulator's link.corrupt flip a bit of the frame, which Homa, with
// no checksum of its own, cannot tell). A host view (Judge.Hosts) holds
// what the host sent as it sent it and what it got as the switch
// delivered it; a delivered packet that no packet of the as-sent capture
// matches was changed in between. The host reacted to what it got, so
// its findings about that RPC from then on are not charged to it
// (HostReport.Altered); the sender is judged in its own view on what it
// sent.

// alterWindow is how long a streamed view (HostsStream) remembers a sent
// packet for its delivered copy: longer than any queueing or plan delay of
// a run; a copy delivered later is taken for altered (its RPC's findings
// are then not charged, which errs toward inconclusive).
const alterWindow = 2 * time.Second

// printSeed keys the fingerprints of one process.
var printSeed = maphash.MakeSeed()

// printBytes is how much of a packet's Homa bytes a fingerprint takes:
// the largest header (ACK, 80 bytes), so that two captures with other
// snap lengths still agree (payload bytes a link flipped change no
// protocol finding charged to the receiver).
const printBytes = 80

// fingerprint hashes what a link may not change of e: its addresses,
// segment and byte range, the first printBytes of its Homa bytes, IP
// flags, checksum and length verdicts, or its decode error. The TOS byte (a
// switch may rewrite the priority) and the TTL (a router decrements it)
// are left out.
func fingerprint(e *Event) uint64 {
	var h maphash.Hash
	h.SetSeed(printSeed)
	a, b := e.Src.As16(), e.Dst.As16()
	h.Write(a[:])
	h.Write(b[:])
	var n [16]byte
	binary.LittleEndian.PutUint32(n[:4], uint32(e.Segment))
	binary.LittleEndian.PutUint32(n[8:12], e.Offset)
	binary.LittleEndian.PutUint32(n[12:16], uint32(e.Length))
	var f byte
	if e.IP.BadChecksum {
		f |= 1
	}
	if e.IP.Fragment {
		f |= 2
	}
	if e.ICMP != nil {
		f |= 4
	}
	if e.IP.LengthPastFrame {
		f |= 8
	}
	n[4] = f
	h.Write(n[:])
	if e.Err != nil {
		h.WriteString(e.Err.Error())
	}
	pb := e.Packet.Bytes()
	h.Write(pb[:min(len(pb), printBytes)])
	return h.Sum64()
}

// sentPrints is the set of fingerprints of the packets a capture shows
// sent; with a window (streams) it forgets those sent more than
// alterWindow before the latest. A streamed delivered packet with no
// match yet waits among the suspects until a later sent packet matches it
// (a capture written host by host, not in time order, brings the sent
// copy after the delivered one).
type sentPrints struct {
	n        map[uint64]int32
	fifo     []printAt
	head     int
	window   bool
	suspects map[uint64][]suspect
}

type printAt struct {
	t time.Time
	p uint64
}

// suspect is a delivered packet no sent one matched when it was read:
// host index i and view frame, and what alteredSet.note keeps of it.
type suspect struct {
	i, frame int
	k        RPCKey
	keyed    bool
	t        time.Time
}

func newSentPrints(window bool) *sentPrints {
	return &sentPrints{n: map[uint64]int32{}, window: window}
}

// add records sent packet e, clearing the suspects it matches.
func (s *sentPrints) add(e *Event) {
	p := fingerprint(e)
	s.n[p]++
	delete(s.suspects, p)
	if !s.window {
		return
	}
	s.fifo = append(s.fifo, printAt{e.Time, p})
	for s.head < len(s.fifo) && e.Time.Sub(s.fifo[s.head].t) > alterWindow {
		old := s.fifo[s.head].p
		if s.n[old]--; s.n[old] <= 0 {
			delete(s.n, old)
		}
		s.head++
	}
	if s.head > len(s.fifo)/2 && s.head > 1024 {
		s.fifo = append(s.fifo[:0], s.fifo[s.head:]...)
		s.head = 0
	}
}

// altered reports whether delivered packet e matches no packet sent.
func (s *sentPrints) altered(e *Event) bool { return s.n[fingerprint(e)] == 0 }

// suspect notes delivered packet e, view frame frame of host i, unless a
// packet sent so far matches it.
func (s *sentPrints) suspect(i, frame int, e *Event) {
	p := fingerprint(e)
	if s.n[p] > 0 {
		return
	}
	if s.suspects == nil {
		s.suspects = map[uint64][]suspect{}
	}
	k, keyed := alteredKey(e)
	s.suspects[p] = append(s.suspects[p], suspect{i: i, frame: frame, k: k, keyed: keyed, t: e.Time})
}

// alteredSet is what a host's view shows of altered packets delivered to
// it: their view frames, and per RPC the time of the first.
type alteredSet struct {
	frames map[int]bool
	rpcs   map[RPCKey]time.Time
}

// alteredKey returns the RPC packet e names, if it names one.
func alteredKey(e *Event) (RPCKey, bool) {
	if e.Err != nil || e.ICMP != nil || !hasRPC(e) {
		return RPCKey{}, false
	}
	return KeyOf(e), true
}

// note records an altered packet delivered at time t, view frame frame,
// naming RPC k when keyed.
func (a *alteredSet) note(frame int, k RPCKey, keyed bool, t time.Time) {
	if a.frames == nil {
		a.frames, a.rpcs = map[int]bool{}, map[RPCKey]time.Time{}
	}
	a.frames[frame] = true
	if keyed {
		if old, ok := a.rpcs[k]; !ok || t.Before(old) {
			a.rpcs[k] = t
		}
	}
}

// touches reports whether finding f names an altered frame, or is about
// an RPC (its own or Finding.Also) an altered packet had reached the host
// of by f's time.
func (a *alteredSet) touches(f *Finding) bool {
	if a == nil || a.frames == nil {
		return false
	}
	if a.frames[f.Frame] {
		return true
	}
	for _, n := range f.Frames {
		if a.frames[n] {
			return true
		}
	}
	for _, k := range [...]*RPCKey{f.RPC, f.Also} {
		if k != nil {
			if t, ok := a.rpcs[*k]; ok && !f.Time.Before(t) {
				return true
			}
		}
	}
	return false
}
