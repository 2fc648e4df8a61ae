package netem

import (
	"context"
	"encoding/binary"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/nsexec"
)

// TestMain removes first what a test binary killed before it cleaned up
// (its go test -timeout) left: harness.RemoveDeadRuns.
func TestMain(m *testing.M) {
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}

// testTopo is two host namespaces a and b, each with a veth whose peer is
// in the switch namespace s. Names carry a harness run id's prefix
// (ht3f9a1c-a, ht3f9a1c-sa, ...).
type testTopo struct {
	nsA, nsB, nsS  netns.NsHandle
	ifA, ifB       string // host ends
	swA, swB       string // switch ends
	macAHW, macBHW [6]byte
	prefix         string // namespace names: prefix+"a", "b", "s"
}

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces, veths and AF_PACKET sockets")
	}
}

// newNamedNS creates a named namespace without moving the caller's thread;
// the deletion is registered with t.Cleanup before it is created.
func newNamedNS(t testing.TB, name string) netns.NsHandle {
	t.Helper()
	t.Cleanup(func() { _ = netns.DeleteNamed(name) })
	h, err := nsexec.NewNamed(name)
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { h.Close() })
	if err := nsexec.Do(h, func() error {
		for _, f := range []string{"all", "default"} {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+f+"/disable_ipv6", []byte("1"), 0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("disable IPv6 in %s: %v", name, err)
	}
	return h
}

func newTestTopo(t testing.TB) *testTopo {
	t.Helper()
	needRoot(t)
	// A harness run id: homatest cleanup removes what a killed test left
	// and leaves a live one alone.
	id, release, err := harness.ReserveRun()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	p := id.Prefix() + "-"
	tp := &testTopo{ifA: p + "a", ifB: p + "b", swA: p + "sa", swB: p + "sb", prefix: p}
	tp.nsS = newNamedNS(t, p+"s")
	tp.nsA = newNamedNS(t, p+"a")
	tp.nsB = newNamedNS(t, p+"b")
	hs, err := netlink.NewHandleAt(tp.nsS)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	for _, h := range []struct {
		ns       netns.NsHandle
		host, sw string
		mac      *[6]byte
	}{{tp.nsA, tp.ifA, tp.swA, &tp.macAHW}, {tp.nsB, tp.ifB, tp.swB, &tp.macBHW}} {
		hh, err := netlink.NewHandleAt(h.ns)
		if err != nil {
			t.Fatal(err)
		}
		defer hh.Close()
		// Deleting the namespaces (registered above) removes the veths.
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: h.host, MTU: 1500, TxQLen: 1000}, PeerName: h.sw, PeerNamespace: netlink.NsFd(int(tp.nsS))}
		if err := hh.LinkAdd(v); err != nil {
			t.Fatalf("create veth %s: %v", h.host, err)
		}
		l, err := hh.LinkByName(h.host)
		if err != nil {
			t.Fatal(err)
		}
		copy(h.mac[:], l.Attrs().HardwareAddr)
		if err := hh.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
		sl, err := hs.LinkByName(h.sw)
		if err != nil {
			t.Fatal(err)
		}
		if err := hs.LinkSetUp(sl); err != nil {
			t.Fatal(err)
		}
		// Frames sent before the kernel activates a device (linkwatch,
		// up to a second late on a loaded machine) are dropped silently.
		waitOperUp(t, hh, h.host)
		waitOperUp(t, hs, h.sw)
	}
	return tp
}

// waitOperUp polls interface name through h until it is operationally up
// (5 s times HOMATEST_TIME_SCALE at most).
func waitOperUp(t testing.TB, h *netlink.Handle, name string) {
	t.Helper()
	deadline := time.Now().Add(scaled(5 * time.Second))
	for {
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().OperState == netlink.OperUp {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %v after 5 s", name, l.Attrs().OperState)
		}
		time.Sleep(5 * time.Millisecond) // polling the link state, bounded by deadline
	}
}

// hostSock opens an AF_PACKET socket with a receive ring on a host's veth.
func hostSock(t testing.TB, ns netns.NsHandle, name string) packetSock {
	t.Helper()
	s, err := openPacketSockets(ns, []string{name}, DefaultSocketBuffer, DefaultRxRing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s[0].close() })
	return s[0]
}

// startSwitch runs a switch on the topology's two switch ports.
func (tp *testTopo) startSwitch(t testing.TB, linkToB LinkConfig, seed uint64, plan *Plan, mod func(*SwitchConfig)) *Switch {
	t.Helper()
	cfg := SwitchConfig{Ports: []Port{{Name: tp.swA}, {Name: tp.swB, Link: linkToB}}, Seed: seed, Plan: plan}
	if mod != nil {
		mod(&cfg)
	}
	sw, err := StartSwitch(context.Background(), tp.nsS, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sw.Close() })
	return sw
}

// send writes frame b on s, retrying while the socket buffer is full.
func send(t testing.TB, s packetSock, b []byte) {
	for {
		_, err := unix.Write(s.fd, b)
		if err == unix.EAGAIN || err == unix.ENOBUFS {
			fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
			unix.Poll(fds, 10)
			continue
		}
		if err != nil {
			t.Errorf("send: %v", err)
		}
		return
	}
}

// Test frames: IPv4 from 198.18.0.1 to 198.18.0.99 (an address no
// namespace has, so hosts drop them silently), with a payload of magic,
// sequence number and the sender's clock.
const testMagic = 0x48544e31 // "HTN1"

func testFrame(src, dst [6]byte, prio uint8, seq uint32, size int) []byte {
	payload := make([]byte, max(16, size-34))
	binary.BigEndian.PutUint32(payload, testMagic)
	binary.BigEndian.PutUint32(payload[4:], seq)
	return ipv4Frame(src, dst, addrA, netipDst, prio, 254, payload)
}

// stamp writes the send time into a test frame just before it is sent.
func stamp(b []byte) { binary.BigEndian.PutUint64(b[34+8:], uint64(time.Now().UnixNano())) }

// rxFrame is a test frame as received.
type rxFrame struct {
	seq    uint32
	prio   uint8
	size   int
	tx, rx int64 // sender clock, kernel receive stamp (Unix ns)
	data   []byte
}

func (f rxFrame) oneWay() time.Duration { return time.Duration(f.rx - f.tx) }

// receive collects frames on s until want have arrived or nothing came for
// idle. Frames that are not test frames are kept only when keepAll is set.
func receive(s packetSock, want int, idle time.Duration, keepAll bool) []rxFrame {
	return receiveUntil(s, want, nil, idle, keepAll, nil)
}

// receiveUntil is receive whose idle timeout only starts once stop is
// closed (nil: at once), and which counts only the test frames whose
// sequence number match accepts (nil: all).
func receiveUntil(s packetSock, want int, stop <-chan struct{}, idle time.Duration, keepAll bool, match func(seq uint32) bool) []rxFrame {
	var got []rxFrame
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	last := time.Now()
	for len(got) < want {
		if stop != nil {
			select {
			case <-stop:
				stop, last = nil, time.Now()
			default:
				last = time.Now()
			}
		}
		if time.Since(last) >= idle {
			break
		}
		if err := ppoll(fds, 20*time.Millisecond); err != nil {
			return got
		}
		for {
			data, ts, ok, err := s.ring.Read(nil)
			if !ok {
				break
			}
			last = time.Now()
			f := rxFrame{size: len(data), rx: ts}
			switch {
			case err != nil:
			case len(data) >= 34+16 && binary.BigEndian.Uint32(data[34:]) == testMagic:
				f.seq = binary.BigEndian.Uint32(data[38:])
				f.tx = int64(binary.BigEndian.Uint64(data[42:]))
				f.prio = data[15] >> 5
				if match != nil && !match(f.seq) {
					break
				}
				if keepAll {
					f.data = slices.Clone(data)
				}
				got = append(got, f)
			case keepAll:
				f.data = slices.Clone(data)
				got = append(got, f)
			}
			s.ring.Release()
		}
	}
	return got
}

// quantile returns the q-quantile (0..1) of d (sorted in place).
func quantile[T int | float64 | time.Duration](d []T, q float64) T {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// sendProbes sends n stamped test frames (sequence seq0, seq0+1, ...) of
// size bytes at priority prio from a, about 1 ms apart (time.Sleep paces
// them; it is not used to synchronise).
func (tp *testTopo) sendProbes(tb testing.TB, a packetSock, n, size int, prio uint8, seq0 uint32) {
	for i := range n {
		f := testFrame(tp.macAHW, tp.macBHW, prio, seq0+uint32(i), size)
		stamp(f)
		send(tb, a, f)
		time.Sleep(time.Millisecond)
	}
}

// splitPriority sorts the frames of a strict-priority run: one-way delays
// of the priority-7 probes sent before the load (seq < 1000) and under it,
// and the low-priority frames.
func splitPriority(got []rxFrame) (base, loaded []time.Duration, low []rxFrame) {
	for _, f := range got {
		switch {
		case f.prio == 7 && f.seq < 1000:
			base = append(base, f.oneWay())
		case f.prio == 7:
			loaded = append(loaded, f.oneWay())
		default:
			low = append(low, f)
		}
	}
	return base, loaded, low
}
