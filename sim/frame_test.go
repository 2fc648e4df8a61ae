package sim

import (
	"bytes"
	"net/netip"
	"testing"
)

// TestFrameRoundTrip: unframe reads back what buildFrame wrote, for IPv4
// and IPv6 and every priority, and refuses every truncation of it.
func TestFrameRoundTrip(t *testing.T) {
	pkt := []byte("a Homa packet, any bytes")
	for _, pair := range [][2]string{{"198.18.0.1", "198.18.0.2"}, {"fd00::1", "fd00::2"}} {
		src, dst := netip.MustParseAddr(pair[0]), netip.MustParseAddr(pair[1])
		for prio := range uint8(8) {
			f := buildFrame(hostMAC(1), hostMAC(2), src, dst, prio, pkt)
			s, d, p, got, ok := unframe(f)
			if !ok || s != src || d != dst || p != prio || !bytes.Equal(got, pkt) {
				t.Fatalf("%v prio %d: got %v %v %d %q %v", src, prio, s, d, p, got, ok)
			}
			for n := range len(f) {
				if _, _, _, _, ok := unframe(f[:n]); ok {
					t.Fatalf("%v: a frame cut to %d of %d bytes was read", src, n, len(f))
				}
			}
		}
	}
}

// FuzzUnframe: unframe never panics, and what it returns lies inside the
// frame.
func FuzzUnframe(f *testing.F) {
	f.Add(buildFrame(hostMAC(1), hostMAC(2), netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), 3, []byte{1, 2, 3}))
	f.Add(buildFrame(hostMAC(1), hostMAC(2), netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2"), 7, []byte{1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, prio, pkt, ok := unframe(b); ok && (prio > 7 || len(pkt) > len(b)) {
			t.Fatalf("priority %d, packet of %d bytes from a %d-byte frame", prio, len(pkt), len(b))
		}
	})
}

// TestCollectiveStepBytes: the bytes CollectiveStepBytes names are the
// largest step's transfers, as ringSteps and halvingDoublingSteps build
// them (bench collective bounds --size by them).
func TestCollectiveStepBytes(t *testing.T) {
	largest := func(steps []step) int64 {
		var most int64
		for _, st := range steps {
			var sum int64
			for _, tr := range st {
				sum += tr.Bytes
			}
			most = max(most, sum)
		}
		return most
	}
	for _, c := range []struct {
		hosts int
		bytes int64
	}{{2, 2}, {8, 32e6}, {8, 32e6 + 3}, {16, 1e9 + 1}, {144, 64 << 20}} {
		if got, want := CollectiveStepBytes(Ring, c.hosts, c.bytes), largest(ringSteps(c.hosts, c.bytes)); got != want || got != c.bytes {
			t.Errorf("ring, %d hosts, %d bytes: %d, its steps send at most %d", c.hosts, c.bytes, got, want)
		}
		if c.hosts&(c.hosts-1) != 0 {
			continue
		}
		if got, want := CollectiveStepBytes(HalvingDoubling, c.hosts, c.bytes), largest(halvingDoublingSteps(c.hosts, c.bytes)); got != want {
			t.Errorf("halving-doubling, %d hosts, %d bytes: %d, its steps send at most %d", c.hosts, c.bytes, got, want)
		}
	}
	if got := CollectiveStepBytes("tree", 8, 1e6); got != 0 {
		t.Errorf("unknown algorithm: %d, want 0", got)
	}
}
