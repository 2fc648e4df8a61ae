package sim

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
)

// Collective algorithms.
const (
	// Ring is ring all-reduce: the data split into N chunks, N-1
	// reduce-scatter steps then N-1 all-gather steps, in each of which
	// every host sends one chunk to the next host on the ring (NCCL's and
	// Horovod's ring; each host sends 2(N-1)/N of the data).
	Ring = "ring"
	// HalvingDoubling is recursive halving then doubling (Rabenseifner's
	// all-reduce, hosts a power of two): log2 N reduce-scatter steps in
	// which hosts exchange half, a quarter, ... of the data with a partner
	// at distance N/2, N/4, ..., then log2 N all-gather steps in the
	// reverse order; each host also sends 2(N-1)/N of the data.
	HalvingDoubling = "halving-doubling"
)

// CollectiveConfig is one collective operation.
type CollectiveConfig struct {
	// Algorithm is Ring (default) or HalvingDoubling.
	Algorithm string
	// Bytes is the size of the data every host all-reduces.
	Bytes int64
	// Port is the port the hosts listen on for the collective's messages.
	Port uint16
	// Iterations is how many all-reduces run back to back (1 if 0).
	Iterations int
}

// Collective runs all-reduces over RPC hosts in lockstep: a step starts
// when every transfer of the step before has arrived. A transfer of more
// than agent.MaxMessage bytes (the largest Homa message) is sent as
// several messages at once. A message is one RPC whose request carries
// the data (the agent payload format) and whose response is 1 byte; a
// transfer has arrived when its receiver has every request of it (the
// responses only complete the RPCs). Start it with StartCollective and
// run the Sim until Done.
type Collective struct {
	s      *Sim
	cfg    CollectiveConfig
	hosts  []RPCHost
	steps  []step
	step   int
	iter   int
	left   int // messages of the step not yet arrived
	start  time.Duration
	starts []time.Duration
	times  []time.Duration
	ids    uint64
	failed string
}

// step is one lockstep step: each transfer is from host From to host To
// of Bytes bytes.
type step []transfer

type transfer struct {
	From, To int
	Bytes    int64
}

// StartCollective starts cfg's collective over hosts now. Errors: fewer
// than 2 hosts, a size smaller than the hosts, an unknown algorithm,
// halving-doubling on a number of hosts that is not a power of two, a
// port in use.
func (s *Sim) StartCollective(hosts []RPCHost, cfg CollectiveConfig) (*Collective, error) {
	n := len(hosts)
	switch {
	case n < 2:
		return nil, fmt.Errorf("sim: a collective over %d hosts: need at least 2", n)
	case cfg.Bytes < int64(n):
		return nil, fmt.Errorf("sim: a collective of %d bytes over %d hosts: give at least one byte per host", cfg.Bytes, n)
	}
	if cfg.Iterations <= 0 {
		cfg.Iterations = 1
	}
	c := &Collective{s: s, cfg: cfg, hosts: hosts}
	switch cfg.Algorithm {
	case "", Ring:
		c.cfg.Algorithm = Ring
		c.steps = ringSteps(n, cfg.Bytes)
	case HalvingDoubling:
		if n&(n-1) != 0 {
			return nil, fmt.Errorf("sim: halving-doubling over %d hosts: want a power of two", n)
		}
		c.steps = halvingDoublingSteps(n, cfg.Bytes)
	default:
		return nil, fmt.Errorf("sim: collective algorithm %q: want %s or %s", cfg.Algorithm, Ring, HalvingDoubling)
	}
	for i, h := range hosts {
		if err := h.Listen(cfg.Port, func(req []byte, _ netip.AddrPort, reply func([]byte)) { c.arrived(i, req, reply) }); err != nil {
			return nil, fmt.Errorf("sim: listen on %v port %d: %w", h.Addr(), cfg.Port, err)
		}
	}
	c.start = s.now
	c.begin()
	return c, nil
}

// CollectiveStepBytes returns the most bytes one lockstep step of an
// all-reduce of bytes over hosts hosts with algorithm (Ring if "") sends:
// every message of a step is built when the step starts, so this is the
// payload the collective holds in memory at once (ring: bytes, one chunk
// per host; halving-doubling: half of bytes per host in its first step).
// 0 for an unknown algorithm or fewer than 2 hosts.
func CollectiveStepBytes(algorithm string, hosts int, bytes int64) int64 {
	if hosts < 2 {
		return 0
	}
	switch algorithm {
	case "", Ring:
		// Every step sends each of the hosts chunks once.
		return bytes
	case HalvingDoubling:
		// The first (and last) step: every host sends half.
		return int64(hosts) * max(1, (bytes+1)/2)
	}
	return 0
}

// ringSteps returns ring all-reduce's 2(N-1) steps: host i sends chunk
// bytes to host i+1 (chunks as equal as bytes allow).
func ringSteps(n int, bytes int64) []step {
	var out []step
	for k := range 2 * (n - 1) {
		st := make(step, n)
		for i := range n {
			// The chunk host i sends in step k (its index on the ring).
			ch := ((i-k)%n + n) % n
			st[i] = transfer{From: i, To: (i + 1) % n, Bytes: chunk(bytes, n, ch)}
		}
		out = append(out, st)
	}
	return out
}

// halvingDoublingSteps returns recursive halving then doubling's 2 log2 N
// steps: in halving step j every host exchanges bytes/2^(j+1) with the
// host at distance N/2^(j+1); doubling retraces them.
func halvingDoublingSteps(n int, bytes int64) []step {
	var half []step
	size := bytes
	for d := n / 2; d >= 1; d /= 2 {
		size = (size + 1) / 2
		st := make(step, n)
		for i := range n {
			st[i] = transfer{From: i, To: i ^ d, Bytes: max(1, size)}
		}
		half = append(half, st)
	}
	out := append([]step(nil), half...)
	for j := len(half) - 1; j >= 0; j-- {
		out = append(out, half[j])
	}
	return out
}

// chunk returns the size of chunk i of bytes split into n.
func chunk(bytes int64, n, i int) int64 {
	c := bytes / int64(n)
	if int64(i) < bytes%int64(n) {
		c++
	}
	return c
}

// Ideal returns the collective's ideal completion time on links of bps
// bit/s: the bytes every host sends (the largest share) at the link rate,
// per iteration, with no latency.
func (c *Collective) Ideal(bps float64) time.Duration {
	var most int64
	sent := make([]int64, len(c.hosts))
	for _, st := range c.steps {
		for _, t := range st {
			sent[t.From] += t.Bytes
			most = max(most, sent[t.From])
		}
	}
	return time.Duration(float64(most) * 8 / bps * 1e9)
}

// begin starts the current step's transfers.
func (c *Collective) begin() {
	if c.step == 0 {
		c.starts = append(c.starts, c.s.now)
	}
	c.left = 0
	for _, t := range c.steps[c.step] {
		dst := netip.AddrPortFrom(c.hosts[t.To].Addr(), c.cfg.Port)
		for left := t.Bytes; left > 0; {
			n := min(left, agent.MaxMessage)
			left -= n
			c.ids++
			req := make([]byte, n)
			agent.FillPayload(req, c.ids, 1)
			c.left++
			if _, err := c.hosts[t.From].Call(dst, req, func(_ []byte, err error) {
				if err != nil && c.failed == "" {
					c.failed = fmt.Sprintf("%v to %v: %v", c.hosts[t.From].Addr(), dst, err)
				}
			}); err != nil && c.failed == "" {
				c.failed = err.Error()
			}
		}
	}
}

// arrived takes one message at host i: the step ends with its last one.
func (c *Collective) arrived(i int, req []byte, reply func([]byte)) {
	reply([]byte{0})
	c.left--
	if c.left > 0 {
		return
	}
	if c.step++; c.step < len(c.steps) {
		c.begin()
		return
	}
	c.times = append(c.times, c.s.now-c.starts[len(c.starts)-1])
	c.step = 0
	if c.iter++; c.iter < c.cfg.Iterations {
		c.begin()
	}
}

// Done reports whether every iteration completed (or a message failed).
func (c *Collective) Done() bool { return c.iter >= c.cfg.Iterations || c.failed != "" }

// Times returns each completed iteration's completion time, from its
// first step's start to its last step's last arrival.
func (c *Collective) Times() []time.Duration { return c.times }

// Err returns the first failed message ("" when none).
func (c *Collective) Err() string { return c.failed }
