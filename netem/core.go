package netem

import (
	"errors"
	"fmt"
	"time"
)

// Port is one switch port: Name is the interface name inside the switch
// namespace (for Core, any label), Link the impairments of its egress side
// (frames the switch sends out of this port).
type Port struct {
	Name string     `yaml:"name" json:"name"`
	Link LinkConfig `yaml:"link" json:"link"`
}

// Core is the switch without sockets: a learning bridge over Egress ports
// with a fault plan. Frames enter with Ingress(now, port, data) and leave
// with Pop(now); times are offsets on the switch clock and must not go
// backwards. The same frames at the same times with the same seed give the
// same output. Not safe for concurrent use.
//
// Forwarding: the source MAC of each frame is learned on its ingress port
// (no aging); a frame to a learned unicast MAC goes to that port (or is
// filtered if that is the ingress port); broadcast, multicast and unknown
// destinations are flooded to every other port. The fault plan sees each
// frame once, after the lookup, before the egress impairments.
type Core struct {
	ports  []*Egress
	names  []string
	rx     []PortStats
	macs   map[[6]byte]int
	plan   *planRunner
	frames uint64
	stats  Stats
	next   int      // round-robin start for Pop
	free   []*Frame // frames given back by Release, reused by Ingress

	// OnDrop, if set, is called for every dropped frame with the egress
	// port index, the frame, the reason and a detail ("random",
	// "plan rule 0 (name)", "buffer full: ...").
	OnDrop func(port int, f *Frame, r DropReason, detail string)
}

// NewCore builds a core with the given ports (at least two; names unique),
// seed and plan (nil for none). Errors name the bad port or rule.
func NewCore(ports []Port, seed uint64, plan *Plan) (*Core, error) {
	if len(ports) < 2 {
		return nil, fmt.Errorf("netem: a switch needs at least 2 ports, have %d", len(ports))
	}
	c := &Core{macs: make(map[[6]byte]int), rx: make([]PortStats, len(ports))}
	seen := map[string]bool{}
	for i, p := range ports {
		if p.Name == "" {
			return nil, fmt.Errorf("netem: port %d has no name", i)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("netem: port name %q used twice", p.Name)
		}
		seen[p.Name] = true
		e, err := NewEgress(p.Link, seed, i)
		if err != nil {
			return nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		i := i
		e.onDrop = func(f *Frame, r DropReason, d string) {
			if c.OnDrop != nil {
				c.OnDrop(i, f, r, d)
			}
		}
		c.ports = append(c.ports, e)
		c.names = append(c.names, p.Name)
	}
	pr, err := newPlanRunner(plan)
	if err != nil {
		return nil, err
	}
	c.plan = pr
	return c, nil
}

// NumPorts returns the number of ports.
func (c *Core) NumPorts() int { return len(c.ports) }

// Egress returns port i's egress side.
func (c *Core) Egress(i int) *Egress { return c.ports[i] }

// Frames returns how many frames have entered the switch.
func (c *Core) Frames() uint64 { return c.frames }

var errBadPort = errors.New("netem: ingress port out of range")

// Ingress takes frame data (ownership passes to the core) arriving on port
// in at time now, and returns its frame number.
func (c *Core) Ingress(now time.Duration, in int, data []byte) (uint64, error) {
	return c.IngressStamped(now, now, in, data)
}

// IngressStamped is Ingress for a frame that arrived at stamp (<= now,
// e.g. the kernel receive stamp) but is handed to the core at now: link
// time and delay count from stamp.
func (c *Core) IngressStamped(now, stamp time.Duration, in int, data []byte) (uint64, error) {
	if in < 0 || in >= len(c.ports) {
		return 0, errBadPort
	}
	c.frames++
	num := c.frames
	c.rx[in].RxFrames++
	c.rx[in].RxBytes += uint64(len(data))
	if len(data) < ethHeaderLen {
		return num, nil
	}
	var src, dst [6]byte
	copy(dst[:], data[0:6])
	copy(src[:], data[6:12])
	if src[0]&1 == 0 {
		c.macs[src] = in
	}
	out, known := -1, false
	if dst[0]&1 == 0 {
		out, known = c.macs[dst]
	}
	if known && out == in {
		c.stats.Filtered++
		return num, nil
	}
	f := c.frame()
	*f = Frame{Data: data, Num: num, In: in, Arrival: min(stamp, now), info: classify(data)}
	outName := ""
	if known {
		outName = c.names[out]
	}
	act, fired := c.plan.apply(num, &f.info, c.names[in], outName)
	if fired {
		c.applyPlan(f, act)
	}
	if !known {
		c.stats.Flooded++
		first := true
		for p := range c.ports {
			if p == in {
				continue
			}
			g := f
			if !first {
				g = f.clone()
			}
			first = false
			c.send(now, p, g, act)
		}
		return num, nil
	}
	c.send(now, out, f, act)
	return num, nil
}

// applyPlan does the frame-wide part of a plan action (priority rewrite,
// notes); send does the per-port part.
func (c *Core) applyPlan(f *Frame, a Action) {
	rules := c.plan.lastRules(f.Num)
	if a.Priority != nil {
		setPriority(f.Data, &f.info, uint8(*a.Priority))
	}
	if !a.Drop {
		f.note(fmt.Sprintf("plan %s: %s", rules, a))
	}
	f.extraDelay, f.hold, f.holdMax = a.Delay, a.Hold, a.HoldMax
}

func (c *Core) send(now time.Duration, p int, f *Frame, a Action) {
	e := c.ports[p]
	// The port serialises what it could start by now before the frame
	// joins its queues (only its own queues matter to it: the other
	// ports catch up when they next get a frame or are asked).
	e.Advance(now)
	if a.Drop {
		e.drop(f, DropPlan, "plan "+c.plan.lastRules(f.Num))
		return
	}
	if a.Delay > 0 {
		e.stats.Delayed++
	}
	if a.Hold > 0 {
		e.stats.Held++
	}
	for range a.Duplicate {
		d := f.clone()
		d.note("plan duplicate")
		e.stats.Duplicated++
		e.Enqueue(now, d)
	}
	e.Enqueue(now, f)
}

// frame returns a Frame to fill: one given back by Release, or a new one.
func (c *Core) frame() *Frame {
	if n := len(c.free); n > 0 {
		f := c.free[n-1]
		c.free = c.free[:n-1]
		return f
	}
	return new(Frame)
}

// Release gives back a frame Pop returned once the caller has sent it and
// keeps no reference to it (nor to its Data through it): the core reuses
// it for a later frame, so that forwarding allocates nothing per frame.
// Releasing frames is optional.
func (c *Core) Release(f *Frame) {
	if len(c.free) < 4096 {
		*f = Frame{}
		c.free = append(c.free, f)
	}
}

// Next returns the earliest time any port has work, and false when all
// ports are idle.
func (c *Core) Next() (time.Duration, bool) {
	t, ok := time.Duration(1<<63-1), false
	for _, e := range c.ports {
		if u, has := e.Next(); has && u < t {
			t, ok = u, true
		}
	}
	return t, ok
}

// Pop returns a frame due by now and its egress port, or nil. Ports are
// served round-robin.
func (c *Core) Pop(now time.Duration) (int, *Frame) {
	n := len(c.ports)
	for k := range n {
		p := (c.next + k) % n
		if f := c.ports[p].Pop(now); f != nil {
			c.next = (p + 1) % n
			return p, f
		}
	}
	return -1, nil
}

// Stats returns a snapshot of the counters and plan hits.
func (c *Core) Stats() Stats {
	s := c.stats
	s.Frames = c.frames
	s.Ports = make([]PortStats, len(c.ports))
	for i, e := range c.ports {
		ps := e.Stats()
		ps.Name, ps.RxFrames, ps.RxBytes = c.names[i], c.rx[i].RxFrames, c.rx[i].RxBytes
		s.Ports[i] = ps
		s.Drops.sum(ps.Drops)
	}
	s.Hits = append([]Hit(nil), c.plan.hits...)
	return s
}

// Hits returns the plan hits so far.
func (c *Core) Hits() []Hit { return append([]Hit(nil), c.plan.hits...) }
