package tester

import (
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// loopTransport keeps what is sent and lets a test deliver packets to the
// Peer's handler.
type loopTransport struct {
	mu      sync.Mutex
	sent    [][]byte
	handler func(netip.Addr, uint8, []byte)
}

func (l *loopTransport) LocalAddr() netip.Addr { return testerAddr }
func (l *loopTransport) Send(_ netip.Addr, _ uint8, pkt []byte) error {
	l.mu.Lock()
	l.sent = append(l.sent, append([]byte(nil), pkt...))
	l.mu.Unlock()
	return nil
}
func (l *loopTransport) SetHandler(h func(netip.Addr, uint8, []byte)) { l.handler = h }
func (l *loopTransport) Close() error                                 { return nil }

// TestPeerWire2024 checks that a Peer set to the 2024 wire format
// (HomaModule linux_6.1.38) sends and reads that format: an ACK entry is
// 12 bytes there (client_port), so an ACK is 90 bytes where the current
// format's is 80, a received 2024 GRANT keeps its resend_all,
// and the Peer's per-test capture carries IP protocol 253. Before SetWire
// the Peer sent the current format to every IUT.
func TestPeerWire2024(t *testing.T) {
	for _, tc := range []struct {
		v       wire.Version
		ackLen  int
		ipProto uint8
	}{{wire.VersionCurrent, 80, wire.IPProtoHoma}, {wire.Version2024, 90, wire.IPProtoHoma2024}} {
		tr := &loopTransport{}
		p := New(tr, NewWallClock())
		p.SetWire(tc.v)
		c := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}
		ack := &wire.AckFields{Common: c, Acks: []wire.AckEntry{{ClientID: 102, ClientPort: 33000, ServerPort: 4000}}}
		if err := p.Send(iutAddr, 7, ack); err != nil {
			t.Fatal(err)
		}
		if n := len(tr.sent[0]); n != tc.ackLen {
			t.Errorf("%s: ACK is %d bytes, want %d", tc.v, n, tc.ackLen)
		}
		g, err := (&wire.GrantFields{Common: wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101}, Offset: 20000, Priority: 3, ResendAll: 1}).
			AppendTo(nil, wire.EncodeOptions{Version: tc.v, FixLengths: true})
		if err != nil {
			t.Fatal(err)
		}
		tr.handler(iutAddr, 7, g)
		log := p.Log()
		got := log[len(log)-1]
		if got.Err != nil || got.Pkt.Type() != wire.TypeGrant || got.Pkt.Grant().Offset() != 20000 || got.Pkt.Version() != tc.v {
			t.Errorf("%s: received GRANT decoded as %v (%v)", tc.v, got, got.Err)
		}
		var protos []uint8
		eachCaptureFrame(t, func(f *pcap.Frame) { protos = append(protos, f.IPProto) }, p)
		if len(protos) != 2 || protos[0] != tc.ipProto || protos[1] != tc.ipProto {
			t.Errorf("%s: capture IP protocols %v, want %d", tc.v, protos, tc.ipProto)
		}
	}
}

// batchTransport is a homa.BatchTransport at address local whose test
// delivers batches (homa.Received, traffic class and all) to the Peer.
type batchTransport struct {
	loopTransport
	local netip.Addr
	batch func([]homa.Received)
}

func (b *batchTransport) LocalAddr() netip.Addr                   { return b.local }
func (b *batchTransport) Headroom() int                           { return 0 }
func (b *batchTransport) SendBatch([]homa.Transmit) error         { return nil }
func (b *batchTransport) SetBatchHandler(h func([]homa.Received)) { b.batch = h }

// TestPeerIPv6Shift: the Peer reads a received IPv6 packet's level with
// the IUT profile's shift, and its capture keeps the traffic class the
// IUT sent. HomaModule before 548056f (linux_6.13.9, the linux-2025
// profile) writes level 6 as 0x60 (6<<4), which the transport's own
// reading (shift 5) takes for level 3: the tester read 3 and wrote 3<<4,
// 0x30, into its capture. Under main's profile (shift 5, or either) 0x60
// is level 3, until the source's class showed shift 4 (0x70: bit 4 set).
func TestPeerIPv6Shift(t *testing.T) {
	iut6, local6 := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	for _, tc := range []struct {
		profile string
		classes []uint8 // traffic classes the IUT sends, in order
		want    []uint8 // the levels read
	}{
		{"linux-2025", []uint8{0x60}, []uint8{6}},
		{"linux-2024", []uint8{0x60, 0x70}, []uint8{6, 7}},
		{"linux", []uint8{0x60}, []uint8{3}},
		{"linux", []uint8{0xe0, 0x60}, []uint8{7, 3}},
		// main's profile names no shift (either): a class only shift 4
		// writes makes the source's later classes read with 4.
		{"linux", []uint8{0x70, 0x60}, []uint8{7, 6}},
	} {
		prof, err := spec.LookupProfile(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		tr := &batchTransport{local: local6}
		p := New(tr, NewWallClock())
		p.SetWire(prof.Params.Wire)
		p.SetIPv6Shift(prof.Params.IPv6PrioShift)
		for i, class := range tc.classes {
			d, err := (&wire.DataFields{Common: wire.CommonFields{Sport: 4000, Dport: 33000, SenderID: 101},
				MessageLength: 100, Incoming: 100, SegOffset: 0, Payload: make([]byte, 100)}).
				AppendTo(nil, wire.EncodeOptions{Version: prof.Params.Wire, FixLengths: true})
			if err != nil {
				t.Fatal(err)
			}
			// Prio is the transport's own reading (shift 5), as rawip's.
			tr.batch([]homa.Received{{Src: iut6, Prio: wire.PriorityFromTrafficClass(class, 5), TOS: class, HasTOS: true, Packet: d}})
			if got := p.Log()[i]; got.Priority != tc.want[i] || got.Err != nil {
				t.Errorf("%s: class 0x%02x read as level %d (%v), want %d", tc.profile, class, got.Priority, got.Err, tc.want[i])
			}
		}
		var classes []uint8
		eachCaptureFrame(t, func(f *pcap.Frame) { classes = append(classes, f.TOS) }, p)
		if !slices.Equal(classes, tc.classes) {
			t.Errorf("%s: the capture's traffic classes are %x, want the IUT's %x", tc.profile, classes, tc.classes)
		}
	}
}

// TestPeerIPv6OwnClass: the Peer's capture records its own IPv6 packets
// with the traffic class its transport put on the wire, the level in the
// IP precedence bits (priority<<5, homa.Transport), whatever the IUT's
// wire format. Against a linux-2025 or linux-2024 IUT (shift 4) the
// capture wrote a GRANT at level 7 as 0x70 and DATA at level 3 as 0x30,
// where rawip and the simulator had sent 0xe0 and 0x60.
func TestPeerIPv6OwnClass(t *testing.T) {
	iut6, local6 := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	for _, profile := range []string{"linux", "linux-2025", "linux-2024"} {
		prof, err := spec.LookupProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		p := New(&batchTransport{local: local6}, NewWallClock())
		p.SetWire(prof.Params.Wire)
		p.SetIPv6Shift(prof.Params.IPv6PrioShift)
		c := wire.CommonFields{Sport: 33000, Dport: 4000, SenderID: 100}
		if err := p.Send(iut6, 7, &wire.GrantFields{Common: c, Offset: 20000, Priority: 3}); err != nil {
			t.Fatal(err)
		}
		if err := p.Send(iut6, 3, &wire.DataFields{Common: c, MessageLength: 100, Incoming: 100, Payload: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
		var classes []uint8
		eachCaptureFrame(t, func(f *pcap.Frame) { classes = append(classes, f.TOS) }, p)
		if want := []uint8{7 << 5, 3 << 5}; !slices.Equal(classes, want) {
			t.Errorf("%s: the capture's traffic classes of the tester's GRANT and DATA are %x, want %x as sent", profile, classes, want)
		}
	}
}
