package conformance

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
)

// memSwitch is an in-process switch for the reference hosts of a bench:
// netem's socket-free switch core (learning bridge, fault plan, and on
// every egress port the impairments of a netem.LinkConfig: loss, bursts,
// duplication, delay and jitter, reordering) run in real time. Each
// host's packets enter the core as Ethernet frames on the host's port;
// the frames the core releases are handed to the destination host's
// handler by one goroutine per port, in the order the core released them
// (so a port reorders only where its impairments do).
type memSwitch struct {
	mu    sync.Mutex
	core  *netem.Core
	epoch time.Time
	ports []*memPort
	kick  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
	// tap sees every packet as its host sent it (before the switch);
	// delivered every packet as handed to its destination, with the
	// switch's note on what it did to the frame ("" when nothing).
	tap, delivered func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte, note string)
}

// memPort is one host's port and its homa.Transport.
type memPort struct {
	sw      *memSwitch
	index   int
	addr    netip.Addr
	pending []*netem.Frame // released by the core, not yet delivered (sw.mu)
	handler func(src netip.Addr, prio uint8, pkt []byte)
	wake    chan struct{}
	closed  bool
}

// memSwitchConfig configures newMemSwitch.
type memSwitchConfig struct {
	Addrs          []netip.Addr // one host per port, IPv4
	Link           netem.LinkConfig
	Plan           *netem.Plan
	Seed           uint64
	Tap, Delivered func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte, note string)
}

// newMemSwitch starts a switch with one port per address. Errors: a bad
// LinkConfig or plan (netem's one-line errors).
func newMemSwitch(cfg memSwitchConfig) (*memSwitch, error) {
	var ports []netem.Port
	for _, a := range cfg.Addrs {
		ports = append(ports, netem.Port{Name: a.String(), Link: cfg.Link})
	}
	core, err := netem.NewCore(ports, cfg.Seed, cfg.Plan)
	if err != nil {
		return nil, err
	}
	s := &memSwitch{core: core, epoch: time.Now(), kick: make(chan struct{}, 1), done: make(chan struct{}),
		tap: cfg.Tap, delivered: cfg.Delivered}
	for i, a := range cfg.Addrs {
		s.ports = append(s.ports, &memPort{sw: s, index: i, addr: a, wake: make(chan struct{}, 1)})
	}
	// Teach the bridge every host's MAC with one broadcast frame per port
	// (a non-IP frame: flooded, then ignored by the hosts), so that no
	// Homa frame is ever flooded to the wrong host.
	s.mu.Lock()
	for i, a := range cfg.Addrs {
		f := make([]byte, 60)
		copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		copy(f[6:12], hostMAC(a))
		binary.BigEndian.PutUint16(f[12:], 0x88b5) // IEEE local experimental
		if _, err := core.Ingress(s.now(), i, f); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.release()
	s.mu.Unlock()
	s.wg.Add(1 + len(s.ports))
	go s.clock()
	for _, p := range s.ports {
		go p.deliver()
	}
	return s, nil
}

// hostMAC is the locally administered MAC of the host with IPv4 address a.
func hostMAC(a netip.Addr) []byte {
	b := a.As4()
	return []byte{0x02, 0x00, b[0], b[1], b[2], b[3]}
}

// Transport returns host i's transport.
func (s *memSwitch) Transport(i int) homa.Transport { return s.ports[i] }

// Stats returns the core's counters and plan hits.
func (s *memSwitch) Stats() netem.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Stats()
}

// Close stops the switch; frames still in it are discarded.
func (s *memSwitch) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
}

// now is the switch clock. Called with s.mu held, so it never goes
// backwards between calls into the core.
func (s *memSwitch) now() time.Duration { return time.Since(s.epoch) }

// release moves every frame due by now from the core to its port's
// delivery queue. Called with s.mu held.
func (s *memSwitch) release() {
	now := s.now()
	for {
		i, f := s.core.Pop(now)
		if f == nil {
			return
		}
		p := s.ports[i]
		if p.closed {
			continue
		}
		p.pending = append(p.pending, f)
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// clock releases frames when they fall due (delayed, held or reordered
// frames; the others leave at once from Send).
func (s *memSwitch) clock() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		s.release()
		next, busy := s.core.Next()
		wait := time.Hour
		if busy {
			// At least 50 µs: a frame whose time has come but that waits
			// for something else (a hold) must not make this loop spin.
			wait = max(next-s.now(), 50*time.Microsecond)
		}
		s.mu.Unlock()
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.kick:
			if !t.Stop() {
				<-t.C
			}
		case <-s.done:
			return
		}
	}
}

// LocalAddr is the host's address.
func (p *memPort) LocalAddr() netip.Addr { return p.addr }

// SetHandler installs the receive function.
func (p *memPort) SetHandler(h func(src netip.Addr, prio uint8, pkt []byte)) {
	p.sw.mu.Lock()
	p.handler = h
	p.sw.mu.Unlock()
}

// Send puts pkt into the switch as a frame on the host's port. Packets
// to addresses with no port are dropped (as a switch floods them to no
// one).
func (p *memPort) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	s := p.sw
	t := time.Now()
	if s.tap != nil {
		s.tap(t, p.addr, dst, prio, pkt, "")
	}
	frame, err := tester.Frame(p.addr, dst, prio, pkt)
	if err != nil {
		return err
	}
	copy(frame[0:6], hostMAC(dst))
	copy(frame[6:12], hostMAC(p.addr))
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.closed {
		return homa.ErrClosed
	}
	if _, err := s.core.Ingress(s.now(), p.index, frame); err != nil {
		return err
	}
	s.release()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// Close stops delivery to the host.
func (p *memPort) Close() error {
	p.sw.mu.Lock()
	p.closed = true
	p.pending = nil
	p.sw.mu.Unlock()
	return nil
}

// deliver hands the port's released frames to its host, in order.
func (p *memPort) deliver() {
	s := p.sw
	defer s.wg.Done()
	for {
		select {
		case <-p.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		fs, h := p.pending, p.handler
		p.pending = nil
		if p.closed {
			h = nil
		}
		s.mu.Unlock()
		for _, f := range fs {
			src, dst, prio, pkt, ok := unframe(f.Data)
			if !ok || dst != p.addr || h == nil {
				continue // the learning frames, or a host gone
			}
			if s.delivered != nil {
				s.delivered(time.Now(), src, dst, prio, pkt, f.Comment)
			}
			h(src, prio, pkt)
		}
	}
}

// unframe reads the IPv4 addresses, Homa priority (IP precedence) and
// transport bytes of an Ethernet frame built by Send; ok is false for any
// other frame (never panics).
func unframe(b []byte) (src, dst netip.Addr, prio uint8, pkt []byte, ok bool) {
	const eth = 14
	if len(b) < eth+20 || binary.BigEndian.Uint16(b[12:]) != 0x0800 || b[eth]>>4 != 4 {
		return
	}
	ip := b[eth:]
	hl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:]))
	if hl < 20 || total < hl || total > len(ip) {
		return
	}
	src = netip.AddrFrom4([4]byte(ip[12:16]))
	dst = netip.AddrFrom4([4]byte(ip[16:20]))
	return src, dst, ip[1] >> 5, ip[hl:total], true
}
