package netem

import (
	"math"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/afpacket"
	"github.com/homatest/homatest/spec/wire"
)

// testSwitch is a Switch without sockets or forwarding loop: two ports of
// MTU 1500, each with a ring of 8 slots in memory (testRing), whose
// oversize frames are read with readCopy.
func testSwitch(t *testing.T, readCopy func(fd int, buf []byte) (int, error)) *Switch {
	t.Helper()
	core, err := NewCore([]Port{{Name: "p0"}, {Name: "p1"}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Switch{core: core, socks: []packetSock{{fd: -1, name: "p0", ring: testRing(8)}, {fd: -1, name: "p1", ring: testRing(8)}},
		mtu: []int{1500, 1500}, readCopy: readCopy}
	s.init()
	return s
}

// testRing is a receive ring of n 2048-byte slots in memory.
func testRing(n int) *afpacket.SlotRing { return afpacket.MemSlotRing(n, 2048) }

// put writes frame into r's next free slot as the kernel does
// (afpacket.SlotRing.Put); a full ring fails the test.
func put(t testing.TB, r *afpacket.SlotRing, frame []byte, wireLen int, extra uint32) {
	t.Helper()
	if !r.Put(frame, wireLen, extra) {
		t.Fatal("test ring full")
	}
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
	if st := s.Stats(); len(out) != 6 || st.Ports[0].RxSegmented != 1 || st.Ports[0].Drops.Oversize != 1 || st.Drops.Oversize != 1 {
		t.Fatalf("%d frames forwarded, %d segmented, %d oversize; want 6, 1, 1", len(out), st.Ports[0].RxSegmented, st.Ports[0].Drops.Oversize)
	}
	for i, f := range out {
		p, err := wire.Decode(f[34:], wire.DecodeOptions{Version: wire.VersionCurrent})
		if err != nil || len(f) > 1514 || int(p.Data().Offset()) != i*1424 {
			t.Errorf("frame %d: %d bytes, %v, offset %d", i, len(f), err, p.Data().Offset())
		}
	}
}

// TestSwitchReadsRing feeds port 0's ring three frames: a plain one, one
// cut to its slot whose whole copy waits on the socket (TP_STATUS_COPY: a
// 6-segment HomaModule super-frame, segmented on arrival), and one cut
// without a copy (the socket buffer was full). The switch forwards 1+6
// frames, counts the third as unreadable, and hands every slot back.
func TestSwitchReadsRing(t *testing.T) {
	super := ipv4Frame(macA, macB, addrA, addrB, 4, wire.IPProtoHoma, gsoHoma(t, 100000, 0, 1424, 6))
	s := testSwitch(t, func(fd int, buf []byte) (int, error) { return copy(buf, super), nil })
	r := s.socks[0].ring
	plain := dataFrame(t, true, 2, 0, 100, false)
	put(t, r, plain, len(plain), 0)
	put(t, r, super, len(super), unix.TP_STATUS_COPY)
	put(t, r, super, len(super), 0)
	if _, err := s.receive(0); err != nil {
		t.Fatal(err)
	}
	if got := len(egressed(s, 1)); got != 7 {
		t.Errorf("%d frames forwarded, want 7", got)
	}
	st := s.Stats()
	if d := st.Ports[0].Drops; d.Unreadable != 1 || d.Total() != 1 || st.Drops.Unreadable != 1 || st.Ports[0].RxSegmented != 1 {
		t.Errorf("port 0 drops %+v, segmented %d; want 1 unreadable, 1 segmented", d, st.Ports[0].RxSegmented)
	}
	if !strings.Contains(st.Ports[0].FirstRxError, "larger than a ring slot") {
		t.Errorf("first read error %q", st.Ports[0].FirstRxError)
	}
	if r.Ready() {
		t.Error("a frame left to read")
	}
	for i := range 8 {
		if !r.Put(plain, len(plain), 0) {
			t.Fatalf("slot %d of 8 not handed back", i+1)
		}
	}
}

// TestSwitchCountsReadErrors makes the socket read of an oversize frame
// fail with EFAULT (what recvmsg returned for skbs HomaModule's GRO
// built): the switch counts it as unreadable with its error, reports it in
// Stats and keeps forwarding; EBADF (a broken socket) ends the loop.
func TestSwitchCountsReadErrors(t *testing.T) {
	readErr := error(unix.EFAULT)
	s := testSwitch(t, func(int, []byte) (int, error) { return 0, readErr })
	r := s.socks[0].ring
	frame := dataFrame(t, true, 2, 0, 100, false)
	put(t, r, frame, 70000, unix.TP_STATUS_COPY)
	put(t, r, frame, len(frame), 0)
	if _, err := s.receive(0); err != nil {
		t.Fatalf("receive with EFAULT: %v", err)
	}
	if got := len(egressed(s, 1)); got != 1 {
		t.Errorf("%d frames forwarded after the read error, want 1", got)
	}
	st := s.Stats()
	if st.Drops.Unreadable != 1 || st.Ports[0].FirstRxError != "recvmsg: bad address" {
		t.Errorf("unreadable %d (%q), want 1 (recvmsg: bad address)", st.Drops.Unreadable, st.Ports[0].FirstRxError)
	}
	readErr = unix.EBADF
	put(t, r, frame, 70000, unix.TP_STATUS_COPY)
	if _, err := s.receive(0); err == nil {
		t.Error("EBADF did not end the loop")
	}
}

// BenchmarkSwitchPath measures the switch's own work per frame, without
// system calls: a 1500-byte frame read from a ring in memory, through the
// core to the egress port, popped for sending and its buffer recycled.
func BenchmarkSwitchPath(b *testing.B) {
	core, err := NewCore([]Port{{Name: "p0"}, {Name: "p1"}}, 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := &Switch{core: core, socks: []packetSock{{fd: -1, name: "p0", ring: testRing(64)}, {fd: -1, name: "p1", ring: testRing(64)}}, mtu: []int{1500, 1500}}
	s.init()
	frame := dataFrame(b, true, 2, 0, 1400, false)
	s.ingest(0, 0, 1, grantFrame(b, false, 2, 1000)) // learn B
	r := s.socks[0].ring
	e := s.core.Egress(1)
	b.ReportAllocs()
	for b.Loop() {
		put(b, r, frame, len(frame), 0)
		s.receive(0)
		f := e.Pop(math.MaxInt64)
		s.put(f.Data)
		s.core.Release(f)
	}
}
