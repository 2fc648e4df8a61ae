package sim

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/netem"
)

// Config configures a Sim: the switch every host hangs off and the hosts'
// common model.
type Config struct {
	// Seed seeds every random choice of the switch (loss, jitter,
	// duplication, corruption, reordering: netem's PCG streams per port).
	Seed uint64
	// Link is every switch port's egress link (switch to host): rate,
	// strict-priority queues, buffer, delay, jitter, loss, duplication,
	// reordering, corruption (netem.LinkConfig).
	Link netem.LinkConfig
	// Plan is the switch's fault plan (nil: none).
	Plan *netem.Plan
	// UplinkRate is each host's link to the switch (host to switch), a
	// FIFO NIC queue served at this rate; 0 means Link.Rate (and both 0:
	// no serialisation).
	UplinkRate netem.BitRate
	// UplinkDelay is the propagation delay from a host to the switch (the
	// switch's Link.Delay applies on the way back).
	UplinkDelay time.Duration
	// Cost is every homa host's packet processing (nil: DefaultCost);
	// raw endpoints cost nothing.
	Cost *Cost
}

// Sim is a discrete-event simulation of hosts under one switch on one
// virtual clock (see the package doc). Build the topology (AddHost,
// AddRaw, Capture) before the clock first runs; then drive it with
// RunUntil, Step or RunWhile. Not safe for concurrent use.
type Sim struct {
	cfg    Config
	cost   Cost
	uplink netem.BitRate
	now    time.Duration
	q      eventQueue
	hosts  []*Host
	byAddr map[netip.Addr]*Host
	core   *netem.Core
	// portAt is, per switch port, the time of the earliest egress event
	// pending (-1: none).
	portAt []time.Duration
	sealed bool
	cap    *capture
	notes  func(Note)
	stats  Stats
	err    error
}

// Stats counts what a Sim did.
type Stats struct {
	// Events is the number of events processed.
	Events uint64
	// PacketEvents counts the packet events among them and inside them:
	// each packet a host sends, enters the switch, leaves it, and reaches
	// its destination counts once at each step.
	PacketEvents uint64
	// Frames is the number of frames hosts sent.
	Frames uint64
	// IPDropped counts the frames a host's IP layer dropped as Linux's
	// ip_rcv does: an IPv4 header whose checksum does not verify, or a
	// packet for another address (a frame a corrupting link altered).
	IPDropped uint64
}

// New returns an empty simulation at virtual time 0. Errors: a bad link
// config or fault plan (netem's one-line errors).
func New(cfg Config) (*Sim, error) {
	// A two-port core checks the link and the plan now rather than when
	// the clock first runs.
	if _, err := netem.NewCore([]netem.Port{{Name: "a", Link: cfg.Link}, {Name: "b", Link: cfg.Link}}, cfg.Seed, cfg.Plan); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, cost: DefaultCost, uplink: cfg.UplinkRate, byAddr: map[netip.Addr]*Host{}}
	if cfg.Cost != nil {
		if cfg.Cost.PerPacket < 0 || cfg.Cost.PerPacket > 0 && cfg.Cost.Cores < 1 {
			return nil, fmt.Errorf("sim: cost %v per packet on %d cores: want a non-negative cost and at least one core", cfg.Cost.PerPacket, cfg.Cost.Cores)
		}
		s.cost = *cfg.Cost
	}
	if s.uplink == 0 {
		s.uplink = cfg.Link.Rate
	}
	return s, nil
}

// Now returns the virtual time.
func (s *Sim) Now() time.Duration { return s.now }

// Stats returns the counters so far.
func (s *Sim) Stats() Stats { return s.stats }

// Switch returns the switch's counters and plan hits (zero before the
// clock first ran).
func (s *Sim) Switch() netem.Stats {
	if s.core == nil {
		return netem.Stats{}
	}
	return s.core.Stats()
}

// Hosts returns the hosts and raw endpoints in switch port order.
func (s *Sim) Hosts() []*Host { return s.hosts }

// Host returns the host or raw endpoint at addr, or nil.
func (s *Sim) Host(addr netip.Addr) *Host { return s.byAddr[addr] }

// Err returns the first error the simulation met while it ran (a capture
// that could not be written); the run goes on without the failed part.
func (s *Sim) Err() error { return s.err }

func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Note is a frame the switch dropped or altered, described as netem's
// switch record comments it.
type Note struct {
	// Port is the switch port index (the host's index in Hosts) the frame
	// was leaving by.
	Port int
	// Time is when the switch dropped it or sent it.
	Time time.Duration
	// Frame is the Ethernet frame.
	Frame []byte
	// Comment is what the switch did ("dropped: plan (plan rule 0
	// (name))", "plan rule 1: delay 5ms", "duplicate").
	Comment string
}

// OnNote sets fn to be called for every frame the switch drops or alters
// (a plan action, duplication, corruption, reordering). Set it before the
// clock first runs.
func (s *Sim) OnNote(fn func(Note)) { s.notes = fn }

// errSealed is returned when the topology changes after the clock ran.
var errSealed = errors.New("sim: the topology is fixed once the clock has run: add hosts and captures first")

// seal builds the switch once the topology is complete.
func (s *Sim) seal() {
	if s.sealed {
		return
	}
	s.sealed = true
	ports := make([]netem.Port, len(s.hosts))
	for i, h := range s.hosts {
		ports[i] = netem.Port{Name: h.name, Link: s.cfg.Link}
	}
	for i := 0; len(ports) < 2; i++ {
		// A switch needs two ports: fewer hosts get silent neighbours.
		ports = append(ports, netem.Port{Name: fmt.Sprintf("unused%d", i), Link: s.cfg.Link})
	}
	core, err := netem.NewCore(ports, s.cfg.Seed, s.cfg.Plan)
	if err != nil {
		panic(err) // New checked the link and the plan; names are ours
	}
	s.core = core
	s.portAt = make([]time.Duration, len(ports))
	for i := range s.portAt {
		s.portAt[i] = -1
	}
	core.OnDrop = func(port int, f *netem.Frame, r netem.DropReason, detail string) {
		s.note(port, f.Data, netem.DropNote(f, r, detail))
	}
	// Teach the bridge every host's MAC with one frame per port (not IP:
	// flooded, then ignored by the hosts), so that no Homa frame is ever
	// flooded.
	for i := range ports {
		f := make([]byte, 60)
		copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		m := hostMAC(i)
		copy(f[6:12], m[:])
		f[12], f[13] = 0x88, 0xb5 // IEEE local experimental ethertype
		if _, err := core.Ingress(s.now, i, f); err != nil {
			panic(err)
		}
	}
	for p := range ports {
		s.armPort(p)
	}
}

func (s *Sim) note(port int, frame []byte, comment string) {
	if s.notes != nil {
		s.notes(Note{Port: port, Time: s.now, Frame: frame, Comment: comment})
	}
	if s.cap != nil {
		s.cap.note(port, s.now, frame, comment)
	}
}

// At schedules fn to run at virtual time t (now if t is earlier).
func (s *Sim) At(t time.Duration, fn func()) {
	s.push(event{at: max(t, s.now), kind: evCall, fn: fn})
}

// After schedules fn to run d after now.
func (s *Sim) After(d time.Duration, fn func()) { s.At(s.now+d, fn) }

// Step processes the next event (exactly one) and returns false when no
// event is pending.
func (s *Sim) Step() bool {
	s.seal()
	if s.q.Len() == 0 {
		return false
	}
	e := s.q.pop()
	s.now = e.at
	s.stats.Events++
	s.handle(&e)
	return true
}

// Next returns the time of the earliest pending event (false: none), so
// that a caller stepping the clock can stop at a deadline of its own.
func (s *Sim) Next() (time.Duration, bool) {
	s.seal()
	if s.q.Len() == 0 {
		return 0, false
	}
	return s.q.peekAt(), true
}

// RunUntil processes every event due by t, then sets the clock to t (if
// it is later than now).
func (s *Sim) RunUntil(t time.Duration) {
	s.seal()
	for s.q.Len() > 0 && s.q.peekAt() <= t {
		s.Step()
	}
	s.now = max(s.now, t)
}

// RunFor runs the clock d further (RunUntil(Now()+d)).
func (s *Sim) RunFor(d time.Duration) { s.RunUntil(s.now + d) }

// RunWhile processes events while cond() holds (checked before each
// event) and returns false when it stopped because no event was left.
func (s *Sim) RunWhile(cond func() bool) bool {
	s.seal()
	for cond() {
		if !s.Step() {
			return false
		}
	}
	return true
}

// handle runs one event.
func (s *Sim) handle(e *event) {
	switch e.kind {
	case evCall:
		e.fn()
	case evIngress:
		s.stats.PacketEvents++
		if s.cap != nil && s.cap.wire {
			s.cap.sent(int(e.host), s.now, e.data)
		}
		if _, err := s.core.Ingress(s.now, int(e.host), e.data); err != nil {
			panic(err) // ports are ours
		}
		// The bridge learnt every host's MAC at the start (seal), so a
		// frame to a host goes to its port and any other is flooded.
		if d := s.byAddr[e.dst]; d != nil {
			s.armPort(d.index)
		} else {
			for p := range s.portAt {
				s.armPort(p)
			}
		}
	case evPort:
		p := int(e.host)
		if e.at == s.portAt[p] {
			s.portAt[p] = -1
		}
		eg := s.core.Egress(p)
		for {
			f := eg.Pop(s.now)
			if f == nil {
				break
			}
			s.stats.PacketEvents++
			if f.Comment != "" {
				s.note(p, f.Data, f.Comment)
			}
			if p < len(s.hosts) {
				s.hosts[p].arrive(f.Data)
			}
		}
		s.armPort(p)
	case evDeliver:
		s.hosts[e.host].deliver(e.data)
	case evTimer:
		s.hosts[e.host].timer(e.at)
	}
}

// armPort schedules switch port p's next egress event.
func (s *Sim) armPort(p int) {
	t, ok := s.core.Egress(p).Next()
	if !ok {
		return
	}
	t = max(t, s.now)
	if at := s.portAt[p]; at >= 0 && at <= t {
		return
	}
	s.portAt[p] = t
	s.push(event{at: t, kind: evPort, host: int32(p)})
}

func (s *Sim) push(e event) {
	s.q.push(e)
}

// Event kinds.
const (
	evCall    uint8 = iota // run fn
	evIngress              // frame data (to dst) enters the switch on port host
	evPort                 // switch port host has frames due
	evDeliver              // frame data reaches host's protocol code
	evTimer                // host's deadline
)

// event is one scheduled event.
type event struct {
	at   time.Duration
	kind uint8
	host int32
	dst  netip.Addr
	data []byte
	fn   func()
}

// eventQueue holds the pending events: a 4-ary min-heap of small keys
// (time, then the order they were scheduled, so that the simulation is
// deterministic) pointing into a slab of event bodies with a free list. A
// 4-ary heap is half as deep as a binary one, and its four children share
// a cache line or two: thousands of events are pending at 10 Gbit/s.
type eventQueue struct {
	keys []qkey
	slab []event
	free []int32
	seq  uint64
}

// qkey is one heap entry.
type qkey struct {
	at   time.Duration
	seq  uint64
	slot int32
}

func (q *eventQueue) Len() int { return len(q.keys) }

// peekAt returns the time of the earliest event (Len must be > 0).
func (q *eventQueue) peekAt() time.Duration { return q.keys[0].at }

func (a *qkey) less(b *qkey) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (q *eventQueue) push(e event) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[slot] = e
	} else {
		slot = int32(len(q.slab))
		q.slab = append(q.slab, e)
	}
	q.seq++
	k := qkey{at: e.at, seq: q.seq, slot: slot}
	i := len(q.keys)
	q.keys = append(q.keys, k)
	for i > 0 {
		p := (i - 1) / 4
		if !k.less(&q.keys[p]) {
			break
		}
		q.keys[i] = q.keys[p]
		i = p
	}
	q.keys[i] = k
}

func (q *eventQueue) pop() event {
	top := q.keys[0]
	n := len(q.keys) - 1
	last := q.keys[n]
	q.keys = q.keys[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < c+4 && j < n; j++ {
				if q.keys[j].less(&q.keys[m]) {
					m = j
				}
			}
			if !q.keys[m].less(&last) {
				break
			}
			q.keys[i] = q.keys[m]
			i = m
		}
		q.keys[i] = last
	}
	e := q.slab[top.slot]
	q.slab[top.slot] = event{}
	q.free = append(q.free, top.slot)
	return e
}
