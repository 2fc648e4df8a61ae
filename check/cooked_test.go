package check

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/spec/wire"
)

// writeCooked writes a classic pcap of Linux cooked frames (SLL or, with
// v2, SLL2) to path: eight one-packet RPCs from client to server, each
// answered, every frame with the packet type mark(src) gives it.
func writeCooked(t *testing.T, path string, v2 bool, client, server netip.Addr, mark func(src netip.Addr) uint8) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriterNanos(f)
	lt := layers.LinkTypeLinuxSLL
	if v2 {
		lt = layers.LinkTypeLinuxSLL2
	}
	if err := w.WriteFileHeader(65535, lt); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	for i := range 16 {
		src, dst := client, server
		id := uint64(2 + 2*(i/2))
		sport, dport := uint16(32768), uint16(4000)
		if i%2 == 1 {
			src, dst, id, sport, dport = server, client, id|1, dport, sport
		}
		d := &wire.DataFields{Common: wire.CommonFields{Sport: sport, Dport: dport, SenderID: id},
			MessageLength: 100, Incoming: 100, SegOffset: wire.SegOffsetInSequence, Payload: make([]byte, 100)}
		eth, err := pcap.BuildFrame(gopacket.NewSerializeBuffer(), pcap.FrameSpec{Src: src, Dst: dst}, d, wire.EncodeOptions{FixLengths: true, SetMarks: true})
		if err != nil {
			t.Fatal(err)
		}
		var h []byte
		if v2 {
			// protocol, reserved, ifindex, ARPHRD, packet type, address
			// length, address (8 bytes).
			h = make([]byte, 20)
			copy(h[0:2], eth[12:14])
			binary.BigEndian.PutUint32(h[4:], 2)
			binary.BigEndian.PutUint16(h[8:], 1)
			h[10], h[11] = mark(src), 6
		} else {
			// packet type, ARPHRD, address length, address, protocol.
			h = make([]byte, 16)
			binary.BigEndian.PutUint16(h[0:], uint16(mark(src)))
			binary.BigEndian.PutUint16(h[2:], 1)
			binary.BigEndian.PutUint16(h[4:], 6)
			copy(h[14:16], eth[12:14])
		}
		fr := append(h, eth[14:]...)
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCookedCapturePoint: a Linux cooked capture (tcpdump -i any) whose
// frames the capturing host marked sent by it (packet type outgoing)
// and to it (host) is taken at that host: judged on its own link
// (host:ADDR), SLL and SLL2 alike. Before, its marks were ignored and
// two hosts without pcapng direction flags made it "switch". Frames
// marked outgoing from both hosts (a bridge's ports forward them) are
// no one host's: still a tap between them.
func TestCookedCapturePoint(t *testing.T) {
	client, server := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.1")
	const outgoing, toUs = 4, 0
	atClient := func(src netip.Addr) uint8 {
		if src == client {
			return outgoing
		}
		return toUs
	}
	atServer := func(src netip.Addr) uint8 {
		if src == server {
			return outgoing
		}
		return toUs
	}
	forwarded := func(netip.Addr) uint8 { return outgoing }
	for _, tc := range []struct {
		name      string
		v2        bool
		mark      func(netip.Addr) uint8
		want, why string
	}{
		{"SLL at the client", false, atClient, "host:10.0.0.11", "8 frames sent by it, all from 10.0.0.11, and 8 frames to it"},
		{"SLL2 at the server", true, atServer, "host:10.0.0.1", "8 frames sent by it, all from 10.0.0.1"},
		{"SLL forwarded", false, forwarded, "switch", "marked sent by the capturing host from 2 addresses: taken where the packets are forwarded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "any.pcap")
			writeCooked(t, path, tc.v2, client, server, tc.mark)
			fr := File(opts(), path)
			if fr.Error != "" {
				t.Fatal(fr.Error)
			}
			if fr.CapturePoint != tc.want || !strings.Contains(fr.CapturePointWhy, tc.why) {
				t.Errorf("capture point %s (%s), want %s (%s)", fr.CapturePoint, fr.CapturePointWhy, tc.want, tc.why)
			}
		})
	}
}
