package pcap

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/spec/wire"
)

// sllAt returns the Linux cooked header (v1 when v2 is false) of an IPv4
// packet taken on interface ifindex (SLL2 only), sent by the host when
// out (packet type outgoing, else to us).
func sllAt(v2 bool, ifindex uint32, out bool) []byte {
	var h []byte
	if v2 {
		h = sll2(false)
		binary.BigEndian.PutUint32(h[4:], ifindex)
		h[10] = 0
		if out {
			h[10] = 4
		}
		return h
	}
	h = sll(false)
	if out {
		binary.BigEndian.PutUint16(h[0:], 4)
	}
	return h
}

// copyFrame is one frame of a copies test capture: its time in µs, the
// index of its Homa packet among the test's, and where it was taken.
type copyFrame struct {
	us      int64
	pkt     int
	iface   int    // pcapng interface
	ifindex uint32 // SLL2 interface index
	out     bool   // SLL packet type outgoing
	other   bool   // SLL2 packet type to another host (a bridge forwarding it)
	dir     Direction
}

// copiesCapture returns frames (of link type lt: Ethernet, SLL or SLL2)
// as a classic pcap, or as a pcapng of two interfaces when ng.
func copiesCapture(t testing.TB, lt layers.LinkType, ng bool, frames []copyFrame) []byte {
	t.Helper()
	var pkts [][]byte
	for i := range 3 {
		d := &wire.DataFields{Common: wire.CommonFields{Sport: 32768, Dport: 4000, SenderID: 2}, MessageLength: 3000, Incoming: 3000,
			SegOffset: uint32(i * 1000), Payload: bytes.Repeat([]byte{byte(i)}, 1000)}
		pkts = append(pkts, buildFrame(t, FrameSpec{Src: addrA, Dst: addrB, Priority: 6}, d, wire.EncodeOptions{FixLengths: true, SetMarks: true}))
	}
	base := time.Unix(1700000000, 0)
	var buf bytes.Buffer
	var ngw *Writer
	var w *pcapgo.Writer
	if ng {
		var err error
		if ngw, err = NewWriter(&buf, Interface{Name: "eth0", LinkType: lt}, Interface{Name: "any", LinkType: lt}); err != nil {
			t.Fatal(err)
		}
	} else {
		w = pcapgo.NewWriterNanos(&buf)
		if err := w.WriteFileHeader(65536, lt); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range frames {
		data := pkts[f.pkt]
		switch lt {
		case layers.LinkTypeLinuxSLL:
			data = append(sllAt(false, 0, f.out), data[14:]...)
		case layers.LinkTypeLinuxSLL2:
			data = append(sllAt(true, f.ifindex, f.out), data[14:]...)
			if f.other {
				data[10] = 3
			}
		}
		ts := base.Add(time.Duration(f.us) * time.Microsecond)
		var err error
		if ng {
			err = ngw.WritePacketDir(f.iface, ts, data, 0, f.dir, "")
		} else {
			err = w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: len(data)}, data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if ng {
		ngw.Flush()
	}
	return buf.Bytes()
}

// readCopies reads copiesCapture's capture of frames and returns the
// numbers of the Homa frames the reader returns and its stats.
func readCopies(t *testing.T, lt layers.LinkType, ng bool, frames []copyFrame) ([]int, Stats) {
	t.Helper()
	var got []int
	st, err := readEach(t, copiesCapture(t, lt, ng, frames), func(f *Frame) { got = append(got, f.Number) })
	if err != nil {
		t.Fatal(err)
	}
	return got, st
}

// TestCopiesOnAnotherInterface: a capture taken at two points a packet
// crosses on one host (tcpdump -i any: both ends of a veth, a bridge and
// its port, lo as sent and received; dumpcap on two interfaces) holds
// each packet twice; the reader returns it once and counts the copy
// (OtherCopy). Before, check took the copies for a capture merged with a
// time-shifted copy of itself (INCOMPLETE), or, given the host's link as
// capture point, for the host sending every packet twice (HOMA-RESEND-010,
// HOMA-GRANT-003 MUST violations).
func TestCopiesOnAnotherInterface(t *testing.T) {
	cases := []struct {
		name   string
		lt     layers.LinkType
		ng     bool
		frames []copyFrame
		want   []int
	}{
		{"sll2 veth pair", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 3, pkt: 0, ifindex: 3},
			{us: 10, pkt: 1, ifindex: 2, out: true}, {us: 12, pkt: 1, ifindex: 3},
			{us: 20, pkt: 2, ifindex: 2, out: true}, {us: 21, pkt: 2, ifindex: 3}}, []int{1, 3, 5}},
		{"sll2 lo sent and received", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 1, out: true}, {us: 1, pkt: 0, ifindex: 1},
			{us: 2, pkt: 1, ifindex: 1, out: true}, {us: 3, pkt: 1, ifindex: 1}}, []int{1, 3}},
		{"sll bridge and port, interleaved", layers.LinkTypeLinuxSLL, false, []copyFrame{
			{us: 0, pkt: 0, out: true}, {us: 1, pkt: 1, out: true}, {us: 2, pkt: 0}, {us: 3, pkt: 1}}, []int{1, 2}},
		// Later than copyWindow: not one packet's two sightings.
		{"sll2 too far apart", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 1001, pkt: 0, ifindex: 3}}, []int{1, 2}},
		// The same point twice: a sender that sends a packet twice, for
		// the checker to judge.
		{"sll2 sent twice at one point", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 1, pkt: 0, ifindex: 2, out: true}}, []int{1, 2}},
		// Sent twice and seen at two points: each sighting pairs with its
		// own, and both sends remain.
		{"sll2 sent twice at two points", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 1, pkt: 0, ifindex: 3},
			{us: 5, pkt: 0, ifindex: 2, out: true}, {us: 6, pkt: 0, ifindex: 3}}, []int{1, 3}},
		// tcpdump -i any in a switch's namespace while the bridge is
		// promiscuous: each packet at its ingress port and on the bridge
		// at one instant (to another host), then at its egress port
		// (sent by us), in that order in the file (helper-259's
		// min-any.pcap). Before, the third sighting was judged a second
		// send (HOMA-RESEND-010 MUST violations).
		{"sll2 bridge, its ingress and egress ports", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, other: true}, {us: 2, pkt: 0, ifindex: 4, out: true}, {us: 0, pkt: 0, ifindex: 5, other: true},
			{us: 10, pkt: 1, ifindex: 3, other: true}, {us: 13, pkt: 1, ifindex: 4, out: true}, {us: 10, pkt: 1, ifindex: 5, other: true}}, []int{1, 4}},
		// A host's veth, a vlan device on it, the peer's end and a bridge:
		// four sightings, one packet.
		{"sll2 four points", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 6, out: true}, {us: 0, pkt: 0, ifindex: 2, out: true},
			{us: 3, pkt: 0, ifindex: 3}, {us: 4, pkt: 0, ifindex: 5, other: true},
			{us: 9, pkt: 1, ifindex: 6, out: true}}, []int{1, 5}},
		// Sent twice and seen at three points each time: both sends
		// remain, each sighting counted with its own send.
		{"sll2 sent twice at three points", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, other: true}, {us: 2, pkt: 0, ifindex: 4, out: true}, {us: 0, pkt: 0, ifindex: 5, other: true},
			{us: 5, pkt: 0, ifindex: 2, other: true}, {us: 7, pkt: 0, ifindex: 4, out: true}, {us: 5, pkt: 0, ifindex: 5, other: true}}, []int{1, 4}},
		// Sent twice at one point, the second before the first's other
		// sightings: the sightings pair with the first, the second send stays.
		{"sll2 sent twice before its copies", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 1, pkt: 0, ifindex: 2, out: true},
			{us: 3, pkt: 0, ifindex: 3}, {us: 4, pkt: 0, ifindex: 3}}, []int{1, 2}},
		{"pcapng two interfaces", layers.LinkTypeEthernet, true, []copyFrame{
			{us: 0, pkt: 0, iface: 0}, {us: 2, pkt: 0, iface: 1},
			{us: 4, pkt: 1, iface: 1}, {us: 3, pkt: 1, iface: 0}}, []int{1, 3}},
		// Switch ports in both directions (homatest run's capture.pcapng):
		// every packet twice on purpose, left to ReaderOptions.Direction.
		{"pcapng switch ports", layers.LinkTypeEthernet, true, []copyFrame{
			{us: 0, pkt: 0, iface: 0, dir: DirInbound}, {us: 2, pkt: 0, iface: 1, dir: DirOutbound}}, []int{1, 2}},
		// Ethernet in a classic pcap says nothing of where a frame was
		// taken: its copies stay, for the checker's network model.
		{"ethernet pcap", layers.LinkTypeEthernet, false, []copyFrame{
			{us: 0, pkt: 0}, {us: 0, pkt: 0}}, []int{1, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, st := readCopies(t, c.lt, c.ng, c.frames)
			if !slices.Equal(got, c.want) {
				t.Errorf("Homa frames %v, want %v", got, c.want)
			}
			if n := len(c.frames) - len(c.want); st.Other[OtherCopy] != n || st.Homa != len(c.want) {
				t.Errorf("stats Homa %d, Other %v; want Homa %d, %q %d", st.Homa, st.Other, len(c.want), OtherCopy, n)
			}
		})
	}
}

// TestSameInstantCopies: a Homa frame that repeats an earlier one byte
// for byte at the very same timestamp and capture point (a classic
// Ethernet pcap merged with itself: mergecap a.pcap a.pcap) is kept and
// counted in Stats.SameInstant with its frame number; a repeat a
// microsecond later, or a copy at another capture point (OtherCopy), or
// one packet at two switch ports (pcapng direction marks) is not; a
// marked frame repeated at its own port and direction is.
// SkipSameInstant skips them (Other[OtherSameInstant]). Before, nothing
// counted them: decode's summary did not say, and check charged the
// host every copy.
func TestSameInstantCopies(t *testing.T) {
	eth := layers.LinkTypeEthernet
	cases := []struct {
		name   string
		lt     layers.LinkType
		ng     bool
		frames []copyFrame
		same   []int
	}{
		{"ethernet pcap doubled", eth, false, []copyFrame{{us: 0, pkt: 0}, {us: 0, pkt: 0}, {us: 5, pkt: 1}, {us: 5, pkt: 1}}, []int{2, 4}},
		{"ethernet pcap interleaved", eth, false, []copyFrame{{us: 0, pkt: 0}, {us: 0, pkt: 1}, {us: 0, pkt: 0}, {us: 0, pkt: 1}}, []int{3, 4}},
		{"ethernet pcap tripled", eth, false, []copyFrame{{us: 0, pkt: 0}, {us: 0, pkt: 0}, {us: 0, pkt: 0}}, []int{2, 3}},
		// A sender's second copy a microsecond later: not the same instant.
		{"ethernet pcap 1us apart", eth, false, []copyFrame{{us: 0, pkt: 0}, {us: 1, pkt: 0}}, nil},
		{"pcapng doubled on one interface", eth, true, []copyFrame{{us: 0, pkt: 0}, {us: 0, pkt: 0}}, []int{2}},
		{"sll2 same point doubled", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 0, pkt: 0, ifindex: 2, out: true}}, []int{2}},
		// Two points at one instant: a copy (skipped), not a repeat.
		{"sll2 two points", layers.LinkTypeLinuxSLL2, false, []copyFrame{
			{us: 0, pkt: 0, ifindex: 2, out: true}, {us: 0, pkt: 0, ifindex: 3}}, nil},
		// A ports capture merged with itself: a twin at its own port,
		// direction and instant (it was not counted, so such a file got
		// no doubled diagnosis).
		{"pcapng switch ports doubled", eth, true, []copyFrame{
			{us: 0, pkt: 0, iface: 0, dir: DirInbound}, {us: 0, pkt: 0, iface: 0, dir: DirInbound}}, []int{2}},
		// One packet at two ports, or both ways at one, is no twin.
		{"pcapng switch ports", eth, true, []copyFrame{
			{us: 0, pkt: 0, iface: 0, dir: DirInbound}, {us: 0, pkt: 0, iface: 1, dir: DirOutbound}, {us: 0, pkt: 0, iface: 0, dir: DirOutbound}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, st := readCopies(t, c.lt, c.ng, c.frames)
			if !slices.Equal(st.SameInstantFrames, c.same) || st.SameInstant != len(c.same) {
				t.Errorf("same-instant frames %v (count %d), want %v", st.SameInstantFrames, st.SameInstant, c.same)
			}
			if len(c.same) == 0 {
				return
			}
			var got []int
			st, err := readEachWith(t, copiesCapture(t, c.lt, c.ng, c.frames), ReaderOptions{SkipSameInstant: true}, func(f *Frame) { got = append(got, f.Number) })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.frames)-len(c.same) || slices.ContainsFunc(got, func(n int) bool { return slices.Contains(c.same, n) }) ||
				st.Other[OtherSameInstant] != len(c.same) || st.SameInstant != len(c.same) {
				t.Errorf("with SkipSameInstant: frames %v, other %v, count %d; want all but %v", got, st.Other, st.SameInstant, c.same)
			}
		})
	}
}

// TestCopyTrackerSplitBytes: a frame whose bytes after the IP header lie
// in the same array (one hash call) and its copy whose two parts lie in
// separate arrays (hashed in two writes) are one packet's two sightings.
func TestCopyTrackerSplitBytes(t *testing.T) {
	frame := []byte{0x45, 0, 0, 28, 1, 2, 3, 4, 64, 146, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 9, 8, 7, 6, 5, 4, 3, 2}
	at := time.Unix(1700000000, 0)
	var c copyTracker
	if elsewhere, twin := c.seen(frame[:20], frame[20:], 1<<33, true, at); elsewhere || twin {
		t.Fatalf("first sighting: elsewhere %v, twin %v", elsewhere, twin)
	}
	ip, rest := append([]byte(nil), frame[:20]...), append([]byte(nil), frame[20:]...)
	if elsewhere, _ := c.seen(ip, rest, 2<<33, true, at.Add(time.Microsecond)); !elsewhere {
		t.Fatal("the same bytes in two arrays at another point within copyWindow: not taken for the copy")
	}
	rest[0]++
	if elsewhere, twin := c.seen(ip, rest, 2<<33, true, at.Add(2*time.Microsecond)); elsewhere || twin {
		t.Fatalf("other bytes: elsewhere %v, twin %v", elsewhere, twin)
	}
}

// TestCopyTrackerTops: the count of remembered sums by top byte, which
// spares the scan for a frame no slot can match, follows the ring as it
// wraps: over a run of frames many times copySlots long, repeating
// earlier ones at several distances (within and past the ring), every
// answer is the plain scan's (the tracker with tops forced non-zero).
func TestCopyTrackerTops(t *testing.T) {
	var c, plain copyTracker
	plain.seed = maphash.MakeSeed()
	c.seed = plain.seed
	at := time.Unix(1700000000, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	frames := make([][]byte, 0, 4000)
	matched := 0
	for i := range 4000 {
		b := []byte{0x45, 0, 0, 24, 0, 0, 0, 0, 64, 146, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, byte(i), byte(i >> 8), 1, 2}
		if len(frames) > 0 && rng.IntN(3) == 0 {
			// A sighting of a frame up to 100 frames back.
			b = frames[max(0, len(frames)-1-rng.IntN(100))]
		}
		frames = append(frames, b)
		point := uint64(rng.IntN(2)) << 33
		at = at.Add(time.Duration(rng.IntN(3)) * time.Microsecond)
		for k := range plain.tops {
			plain.tops[k] = 1
		}
		e1, t1 := c.seen(b[:20], b[20:], point, true, at)
		e2, t2 := plain.seen(b[:20], b[20:], point, true, at)
		if e1 != e2 || t1 != t2 {
			t.Fatalf("frame %d: elsewhere %v twin %v, the plain scan %v %v", i, e1, t1, e2, t2)
		}
		if e1 || t1 {
			matched++
		}
	}
	if matched < 100 {
		t.Fatalf("only %d frames matched: the run tests too little", matched)
	}
}
