package netem

import (
	"math"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/spec/wire"
)

// testSwitch is a Switch without sockets or forwarding loop: two ports of
// MTU 1500 whose receive calls are recvFn.
func testSwitch(t *testing.T, recvFn func(fd int, rx *rxBatch) (int, error)) *Switch {
	t.Helper()
	core, err := NewCore([]Port{{Name: "p0"}, {Name: "p1"}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Switch{core: core, socks: []packetSock{{fd: -1, name: "p0"}, {fd: -1, name: "p1"}}, mtu: []int{1500, 1500},
		txErrors: make([]uint64, 2), rxDrops: make([]uint64, 2), rxErrors: make([]uint64, 2), rxFirst: make([]string, 2),
		rxSeg: make([]uint64, 2), rxBig: make([]uint64, 2), recvFn: recvFn}
}

// egressed pops every frame due on port p.
func egressed(s *Switch, p int) [][]byte {
	var out [][]byte
	for f := s.core.Egress(p).Pop(math.MaxInt64); f != nil; f = s.core.Egress(p).Pop(math.MaxInt64) {
		out = append(out, f.Data)
	}
	return out
}

// TestSwitchSegmentsGSOFrames feeds the switch a HomaModule super-frame
// (6 segments, 8674 bytes on a 1500-byte port, as AF_PACKET reads a GSO
// skb a veth passed on unsegmented): it forwards 6 MTU-sized frames; a
// TCP super-frame it cannot segment is counted and dropped.
func TestSwitchSegmentsGSOFrames(t *testing.T) {
	s := testSwitch(t, nil)
	super := ipv4Frame(macA, macB, addrA, addrB, 4, wire.IPProtoHoma, gsoHoma(t, 100000, 0, 1424, 6))
	s.ingest(0, 0, 0, super)
	s.ingest(0, 0, 0, ipv4Frame(macA, macB, addrA, addrB, 0, 6, make([]byte, 8000)))
	out := egressed(s, 1)
	if len(out) != 6 || s.rxSeg[0] != 1 || s.rxBig[0] != 1 {
		t.Fatalf("%d frames forwarded, %d segmented, %d oversize; want 6, 1, 1", len(out), s.rxSeg[0], s.rxBig[0])
	}
	for i, f := range out {
		p, err := wire.Decode(f[34:], wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil || len(f) > 1514 || int(p.Data().Offset()) != i*1424 {
			t.Errorf("frame %d: %d bytes, %v, offset %d", i, len(f), err, p.Data().Offset())
		}
	}
}

// TestSwitchCountsReadErrors makes the first receive call fail with
// EFAULT (what recvmmsg returned for skbs HomaModule's GRO built): the
// switch counts it, reports it in Stats and keeps forwarding; EBADF (a
// broken socket) still ends the loop.
func TestSwitchCountsReadErrors(t *testing.T) {
	calls := 0
	frame := dataFrame(t, true, 2, 0, 100, false)
	s := testSwitch(t, func(fd int, rx *rxBatch) (int, error) {
		calls++
		switch calls {
		case 1:
			return 0, unix.EFAULT
		case 2:
			n := copy(rx.bufs[0], frame)
			rx.hdrs[0].Len = uint32(n)
			rx.hdrs[0].Hdr.Controllen = 0
			return 1, nil
		}
		return 0, nil
	})
	rx := newRxBatch(4)
	if err := s.receive(0, rx); err != nil {
		t.Fatalf("receive with EFAULT: %v", err)
	}
	if err := s.receive(0, rx); err != nil {
		t.Fatal(err)
	}
	if got := len(egressed(s, 1)); got != 1 {
		t.Errorf("%d frames forwarded after the read error, want 1", got)
	}
	if s.rxErrors[0] != 1 || s.rxFirst[0] != "recvmmsg: bad address" {
		t.Errorf("read errors %d (%q), want 1 (recvmmsg: bad address)", s.rxErrors[0], s.rxFirst[0])
	}
	s.recvFn = func(int, *rxBatch) (int, error) { return 0, unix.EBADF }
	if err := s.receive(0, rx); err == nil {
		t.Error("EBADF did not end the loop")
	}
}
