//go:build linux

package rawip_test

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/afpacket"
	"github.com/homatest/homatest/spec/wire"
)

// recorder is a homa.Transport that remembers the priorities each packet
// was sent with, keyed by the packet's bytes.
type recorder struct {
	homa.Transport
	mu   sync.Mutex
	sent map[string]map[uint8]bool
}

func newRecorder(tr homa.Transport) homa.Transport {
	return &recorder{Transport: tr, sent: map[string]map[uint8]bool{}}
}

func (r *recorder) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	r.mu.Lock()
	if r.sent[string(pkt)] == nil {
		r.sent[string(pkt)] = map[uint8]bool{}
	}
	r.sent[string(pkt)][prio] = true
	r.mu.Unlock()
	return r.Transport.Send(dst, prio, pkt)
}

// wirePacket is one Homa packet seen on a veth: the IPv4 TOS or IPv6
// traffic class byte, the Homa packet (the IP payload) and whether it may
// not be fragmented (IPv4 DF; always for IPv6, which routers never
// fragment).
type wirePacket struct {
	tos  uint8
	homa []byte
	df   bool
}

// captured is what capture saw: the Homa packets and the number of
// packets the kernel dropped at the capture socket (PACKET_STATISTICS).
type captured struct {
	pkts  []wirePacket
	drops uint32
}

// capture records the IP protocol 146 packets that cross host h's
// interface (both directions), on an AF_PACKET socket. The returned function
// reads what is queued, stops the capture and returns the packets; the
// socket is closed when the test ends in any case.
func capture(t *testing.T, h *harness.Host) func() captured {
	dev := h.Ifname
	t.Helper()
	fd := -1
	var stop atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(func() {
		stop.Store(true)
		wg.Wait()
		if fd >= 0 {
			unix.Close(fd)
		}
	})
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(afpacket.Htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		// 32 MiB (8 MiB showed no drops at 50 kpps in the platform
		// notes); reads time out every 50 ms so the loop sees stop.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20); err != nil {
			return err
		}
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 50000}); err != nil {
			return err
		}
		return afpacket.Bind(fd, ifi.Index)
	}); err != nil {
		t.Fatalf("capture on %s: %v", dev, err)
	}
	var pkts []wirePacket
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1<<16)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				if stop.Load() {
					return // drained: the read timed out after stop
				}
				continue
			}
			if p, ok := parseHoma(buf[:n]); ok {
				pkts = append(pkts, p)
			}
		}
	}()
	return func() captured {
		stop.Store(true)
		wg.Wait()
		c := captured{pkts: pkts}
		if st, err := unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			c.drops = st.Drops
		}
		return c
	}
}

// parseHoma returns the TOS / traffic class and payload of an IPv4 or
// IPv6 packet of IP protocol 146 (no IPv6 extension headers).
func parseHoma(b []byte) (wirePacket, bool) {
	if len(b) < 1 {
		return wirePacket{}, false
	}
	switch b[0] >> 4 {
	case 4:
		h, err := ipv4.ParseHeader(b)
		if err != nil || h.Protocol != wire.IPProtoHoma || h.TotalLen > len(b) {
			return wirePacket{}, false
		}
		return wirePacket{uint8(h.TOS), append([]byte(nil), b[h.Len:h.TotalLen]...), h.Flags&ipv4.DontFragment != 0}, true
	case 6:
		h, err := ipv6.ParseHeader(b)
		if err != nil || h.NextHeader != wire.IPProtoHoma || ipv6.HeaderLen+h.PayloadLen > len(b) {
			return wirePacket{}, false
		}
		return wirePacket{uint8(h.TrafficClass), append([]byte(nil), b[ipv6.HeaderLen:ipv6.HeaderLen+h.PayloadLen]...), true}, true
	}
	return wirePacket{}, false
}

// checkPriorities asserts that every captured Homa packet carries
// priority<<5 in its TOS / traffic class (HomaModule main; the ECN and low
// bits zero) for a priority its sender used for exactly those bytes and
// (IPv4) DF set (Transport.Send's promise; a Linux socket's default
// pmtudisc sets it on HomaModule's packets too), that every packet the
// senders sent was seen, and that at least minLevels
// distinct priority levels crossed the wire.
func checkPriorities(t *testing.T, c captured, senders ...homa.Transport) {
	t.Helper()
	pkts := c.pkts
	sent := map[string]map[uint8]bool{}
	for _, s := range senders {
		r := s.(*recorder)
		r.mu.Lock()
		for k, v := range r.sent {
			if sent[k] == nil {
				sent[k] = map[uint8]bool{}
			}
			for p := range v {
				sent[k][p] = true
			}
		}
		r.mu.Unlock()
	}
	levels := map[uint8]int{}
	seen := map[string]bool{}
	bad := 0
	for _, p := range pkts {
		prios, ok := sent[string(p.homa)]
		if !ok {
			t.Errorf("captured a Homa packet (%d bytes) that no sender sent", len(p.homa))
			continue
		}
		seen[string(p.homa)] = true
		if prio := wire.PriorityFromTOS(p.tos); !prios[prio] || p.tos != wire.TOSForPriority(prio) {
			if bad++; bad <= 5 {
				t.Errorf("packet type 0x%02x: TOS/traffic class 0x%02x on the wire, sender used priorities %v (want priority<<5)", p.homa[11], p.tos, prios)
			}
		}
		if !p.df {
			if bad++; bad <= 5 {
				t.Errorf("packet type 0x%02x: IPv4 DF not set", p.homa[11])
			}
		}
		levels[wire.PriorityFromTOS(p.tos)]++
	}
	if len(seen) != len(sent) {
		t.Errorf("captured %d distinct packets of %d sent (the capture socket dropped %d)", len(seen), len(sent), c.drops)
	}
	if len(levels) < minLevels {
		t.Errorf("only %d priority levels on the wire (%v), want at least %d", len(levels), levels, minLevels)
	}
	t.Logf("%d packets captured; packets per priority level %v", len(pkts), levels)
}

// minLevels is the number of priority levels the RPC tests must put on the
// wire: control packets (7), unscheduled levels from the cutoffs (4, 6, 7
// for 40001 B, 1404 B, 1 B) and scheduled levels from GRANTs.
const minLevels = 4
