// Package memnet is an in-memory network for homa hosts: one switch with
// an egress port per host, 8 strict-priority queues per port, a link rate,
// a one-way delay, seeded random loss and a drop hook. Under
// testing/synctest all its timing runs on virtual time, so protocol tests
// are fast and repeatable.
//
// It is a test transport for the real-time driver homa.Host (and the ref
// agent's in-process tests), which delivers on goroutines and timers;
// homatest's environments that run without namespaces use the simulator
// (package sim), which drives homa.Machine on one virtual clock.
package memnet

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// Config describes every link of the network.
type Config struct {
	// Rate is each egress port's rate in bit/s; 0 means no serialisation
	// delay.
	Rate int64
	// Delay is the one-way propagation delay added after serialisation.
	Delay time.Duration
	// Loss is the probability (0..1) that a packet is dropped, drawn from a
	// generator seeded with Seed.
	Loss float64
	// Seed seeds the loss generator.
	Seed uint64
	// BufferBytes bounds each egress port's queue; packets that do not fit
	// are dropped (0: unbounded).
	BufferBytes int
	// Drop, when set, is asked about every packet before loss is applied;
	// returning true drops it (a fault plan).
	Drop func(src, dst netip.Addr, prio uint8, pkt []byte) bool
	// Delivered, when set, sees every packet just before the destination
	// host's handler gets it (a capture on the receiver's link: after
	// drops, loss and queueing). pkt must not be kept.
	Delivered func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte)
	// Tap, when set, sees every packet as it enters the switch (a capture
	// on the sender's link): before drops, loss and queueing. pkt must not
	// be kept.
	Tap func(t time.Time, src, dst netip.Addr, prio uint8, pkt []byte)
}

// Stats counts packets over the whole network.
type Stats struct {
	Sent, Delivered, Lost, Dropped, Overflow, NoRoute int
}

// Network is the switch and its ports.
type Network struct {
	cfg    Config
	mu     sync.Mutex
	rng    *rand.Rand
	ports  map[netip.Addr]*port
	stats  Stats
	closed bool
	wg     sync.WaitGroup
}

type packet struct {
	src   netip.Addr
	prio  uint8
	data  []byte
	bytes int
}

// port is the egress port toward one host: 8 queues served strictly by
// priority, at the link rate.
type port struct {
	ep     *Endpoint
	queues [8][]packet
	queued int
	kick   chan struct{}
	done   chan struct{}
	// line is the propagation delay line (under lineMu): packets in
	// transmission order with their delivery time, delivered by one
	// goroutine (propagate, woken by lineKick) or by Endpoint.Drain, one
	// delivery at a time (deliverMu), so that a port delivers in the
	// order it transmitted.
	lineMu    sync.Mutex
	line      []delayed
	lineKick  chan struct{}
	deliverMu sync.Mutex
	handler   func(src netip.Addr, prio uint8, pkt []byte)
}

// New returns an empty network.
func New(cfg Config) *Network {
	return &Network{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), ports: map[netip.Addr]*port{}}
}

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("memnet: network closed")

// Endpoint is a host's attachment to the network (a homa.Transport).
type Endpoint struct {
	n    *Network
	addr netip.Addr
}

// Attach adds a host with address addr and returns its endpoint.
func (n *Network) Attach(addr netip.Addr) *Endpoint {
	n.mu.Lock()
	defer n.mu.Unlock()
	ep := &Endpoint{n: n, addr: addr}
	p := &port{ep: ep, kick: make(chan struct{}, 1), done: make(chan struct{}), lineKick: make(chan struct{}, 1)}
	n.ports[addr] = p
	n.wg.Add(2)
	go n.serve(p)
	go n.propagate(p)
	return ep
}

// LocalAddr returns the endpoint's address.
func (e *Endpoint) LocalAddr() netip.Addr { return e.addr }

// SetHandler installs the receive function.
func (e *Endpoint) SetHandler(h func(src netip.Addr, prio uint8, pkt []byte)) {
	e.n.mu.Lock()
	defer e.n.mu.Unlock()
	if p := e.n.ports[e.addr]; p != nil {
		p.handler = h
	}
}

// Send queues a copy of pkt on the egress port toward dst.
func (e *Endpoint) Send(dst netip.Addr, prio uint8, pkt []byte) error {
	n := e.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	n.stats.Sent++
	if n.cfg.Tap != nil {
		n.cfg.Tap(time.Now(), e.addr, dst, prio, pkt)
	}
	p := n.ports[dst]
	if p == nil {
		n.stats.NoRoute++
		return nil
	}
	if n.cfg.Drop != nil && n.cfg.Drop(e.addr, dst, prio, pkt) {
		n.stats.Dropped++
		return nil
	}
	if n.cfg.Loss > 0 && n.rng.Float64() < n.cfg.Loss {
		n.stats.Lost++
		return nil
	}
	if n.cfg.BufferBytes > 0 && p.queued+len(pkt) > n.cfg.BufferBytes {
		n.stats.Overflow++
		return nil
	}
	prio &= 7
	p.queues[prio] = append(p.queues[prio], packet{src: e.addr, prio: prio, data: append([]byte(nil), pkt...), bytes: len(pkt)})
	p.queued += len(pkt)
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return nil
}

// Close detaches the endpoint (its queued packets are discarded).
func (e *Endpoint) Close() error {
	n := e.n
	n.mu.Lock()
	p := n.ports[e.addr]
	delete(n.ports, e.addr)
	n.mu.Unlock()
	if p != nil {
		close(p.done)
	}
	return nil
}

// Stats returns the packet counts so far.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Close stops every port and waits for them.
func (n *Network) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	ports := n.ports
	n.ports = map[netip.Addr]*port{}
	n.mu.Unlock()
	for _, p := range ports {
		close(p.done)
	}
	n.wg.Wait()
}

// serve transmits p's queued packets, highest priority first, each after
// its serialisation time, and delivers it after the propagation delay.
func (n *Network) serve(p *port) {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		var pk packet
		found := false
		for q := 7; q >= 0; q-- {
			if len(p.queues[q]) > 0 {
				pk, p.queues[q] = p.queues[q][0], p.queues[q][1:]
				p.queued -= pk.bytes
				found = true
				break
			}
		}
		rate, delay := n.cfg.Rate, n.cfg.Delay
		n.mu.Unlock()
		if !found {
			select {
			case <-p.kick:
				continue
			case <-p.done:
				return
			}
		}
		if rate > 0 {
			// Ethernet + IP headers count toward the wire time.
			tx := time.Duration(int64(pk.bytes+14+20) * 8 * int64(time.Second) / rate)
			select {
			case <-time.After(tx):
			case <-p.done:
				return
			}
		}
		deliver := func() {
			n.mu.Lock()
			h := p.handler
			closed := n.closed || n.ports[p.ep.addr] != p
			if !closed {
				n.stats.Delivered++
			}
			n.mu.Unlock()
			if h != nil && !closed {
				if n.cfg.Delivered != nil {
					n.cfg.Delivered(time.Now(), pk.src, p.ep.addr, pk.prio, pk.data)
				}
				h(pk.src, pk.prio, pk.data)
			}
		}
		if delay > 0 {
			p.lineMu.Lock()
			p.line = append(p.line, delayed{at: time.Now().Add(delay), deliver: deliver})
			p.lineMu.Unlock()
			select {
			case p.lineKick <- struct{}{}:
			default:
			}
		} else {
			deliver()
		}
	}
}

// delayed is a packet on a port's delay line.
type delayed struct {
	at      time.Time
	deliver func()
}

// propagate delivers the packets on p's delay line at their times, in order.
func (n *Network) propagate(p *port) {
	defer n.wg.Done()
	for {
		p.lineMu.Lock()
		empty := len(p.line) == 0
		var wait time.Duration
		if !empty {
			wait = time.Until(p.line[0].at)
		}
		p.lineMu.Unlock()
		switch {
		case empty:
			select {
			case <-p.lineKick:
			case <-p.done:
				return
			}
		case wait > 0:
			select {
			case <-time.After(wait):
			case <-p.done:
				return
			}
		default:
			p.deliverDue(time.Now())
		}
	}
}

// deliverDue delivers, in the calling goroutine and in order, the packets
// at the head of p's delay line whose time is at or before now, and
// returns how many it took off the line.
func (p *port) deliverDue(now time.Time) int {
	p.deliverMu.Lock()
	defer p.deliverMu.Unlock()
	count := 0
	for {
		p.lineMu.Lock()
		if len(p.line) == 0 || p.line[0].at.After(now) {
			p.lineMu.Unlock()
			return count
		}
		d := p.line[0]
		p.line[0] = delayed{}
		p.line = p.line[1:]
		p.lineMu.Unlock()
		d.deliver()
		count++
	}
}

// Drain delivers to the endpoint's handler, in the calling goroutine, the
// packets that have arrived (their propagation delay is over) but wait on
// the delay line for the port's delivery goroutine, in order, and returns
// how many (homa.DrainTransport: a homa.Host calls it before a timer
// pass). It must not be called with a lock the handler takes.
func (e *Endpoint) Drain() int {
	e.n.mu.Lock()
	p := e.n.ports[e.addr]
	e.n.mu.Unlock()
	if p == nil {
		return 0
	}
	return p.deliverDue(time.Now())
}
