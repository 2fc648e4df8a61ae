package traffic

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/timescale"
)

// Endpoint is one host's agent: its name in the topology (e.g. "h1"), the
// address other hosts call it at, and the agent protocol client, on which
// hello has been said. Run reads the client's Completions channel while it
// runs; nobody else may read it then.
type Endpoint struct {
	Name   string
	Addr   netip.Addr
	Client *agent.Client
}

// Pattern says which hosts call which.
type Pattern string

// The patterns.
const (
	// ManyToOne: the last host serves; every other host calls it, each
	// RPC from a client chosen uniformly at random.
	ManyToOne Pattern = "many-to-one"
	// AllToAll: every host serves and calls; each RPC goes from a
	// uniformly random client to a uniformly random other host.
	AllToAll Pattern = "all-to-all"
)

// RPC is one RPC of an explicit list: issued At after the start by host
// Client (index into Config.Hosts) to host Server, with Request and
// Response lengths in bytes (1..agent.MaxMessage).
type RPC struct {
	At                time.Duration
	Client, Server    int
	Request, Response int
}

// DefaultPort is the Homa port servers listen on when Config.Port is 0.
const DefaultPort = 4000

// DefaultResponseBytes is the response length in bytes when neither
// Config.Responses nor Config.ResponseBytes is set: short responses, so
// that the load is the requests' (as HomaModule's cp_node one-way
// workloads).
const DefaultResponseBytes = 100

// DefaultTimeout is the per-RPC wait (times HOMATEST_TIME_SCALE) when
// Config.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Config is one workload. Exactly one of Load (open loop), Concurrency
// (closed loop) or RPCs (explicit list) selects how RPCs are issued; open
// and closed loops draw sizes from Requests (and Responses) and stop after
// Duration or Count, whichever comes first (at least one is required).
type Config struct {
	// Hosts are the endpoints, in host order (at least 2).
	Hosts []Endpoint
	// Pattern is ManyToOne (default) or AllToAll; ignored with RPCs.
	Pattern Pattern
	// Port is the servers' Homa port (DefaultPort if 0).
	Port uint16
	// Requests is the request length distribution (workload.Parse).
	Requests workload.Dist
	// Responses is the response length distribution; the zero Dist makes
	// every response ResponseBytes long.
	Responses workload.Dist
	// ResponseBytes is the fixed response length in bytes when Responses
	// is zero (DefaultResponseBytes if 0). A request shorter than
	// agent.PayloadHeaderLen always gets a response of its own length
	// (docs/agent-protocol.md).
	ResponseBytes int
	// Load is the offered load, a fraction in (0, workload.MaxLoad] of
	// LinkBps on each server's downlink (requests only, counted with
	// Homa's DATA overhead: workload.HomaDataOverhead), with Poisson
	// arrivals; above 1 the downlinks are overloaded.
	Load float64
	// LinkBps is the link rate in bit/s that Load is a fraction of.
	LinkBps float64
	// Concurrency is the number of calls each client keeps outstanding
	// (closed loop), instead of Load.
	Concurrency int
	// Duration stops issuing RPCs after this time from the start.
	Duration time.Duration
	// Count stops after this many RPCs; a closed loop shares them evenly
	// among its clients (Sequence.Next).
	Count int
	// RPCs is an explicit list (sorted by At or not), instead of the above.
	RPCs []RPC
	// Seed selects sizes, arrivals, clients and servers: equal configs
	// and seeds issue equal sequences.
	Seed uint64
	// Timeout bounds the wait for each RPC's done event, from its issue;
	// a call still without one gets Record.Err "silent: …" (DefaultTimeout
	// times HOMATEST_TIME_SCALE if 0).
	Timeout time.Duration
	// IDBase is added to every call id (the agent protocol wants ids
	// unique per agent: set it when an agent already took calls); ids are
	// IDBase+1, IDBase+2, … in RPC order.
	IDBase uint64
	// Progress, when set, is called after each RPC completes with the
	// number completed and the number expected (0 when not known ahead:
	// closed loop bounded by Duration only). It runs on Run's goroutines
	// and must be quick.
	Progress func(done, total int)
}

// validate checks c and fills defaults. Errors name the field and the fix.
func (c *Config) validate() error {
	for i, h := range c.Hosts {
		if h.Client == nil || !h.Addr.IsValid() {
			return fmt.Errorf("traffic: host %d (%q) needs an agent client and an address", i, h.Name)
		}
	}
	return c.validateWorkload(len(c.Hosts))
}

// validateWorkload checks everything but Hosts for a run on n hosts and
// fills defaults.
func (c *Config) validateWorkload(n int) error {
	if n < 2 {
		return fmt.Errorf("traffic: %d hosts: need at least 2 (a client and a server)", n)
	}
	if c.Pattern == "" {
		c.Pattern = ManyToOne
	}
	if c.Pattern != ManyToOne && c.Pattern != AllToAll {
		return fmt.Errorf("traffic: pattern %q: want %q or %q", c.Pattern, ManyToOne, AllToAll)
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.ResponseBytes == 0 {
		c.ResponseBytes = DefaultResponseBytes
	}
	if c.ResponseBytes < 1 || c.ResponseBytes > agent.MaxMessage {
		return fmt.Errorf("traffic: response of %d bytes: want 1..%d", c.ResponseBytes, agent.MaxMessage)
	}
	if c.Timeout <= 0 {
		c.Timeout = timescale.D(DefaultTimeout)
	}
	modes := 0
	for _, on := range []bool{c.Load != 0, c.Concurrency != 0, len(c.RPCs) > 0} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return fmt.Errorf("traffic: set exactly one of load (open loop), concurrency (closed loop) or an explicit RPC list")
	}
	if len(c.RPCs) > 0 {
		for i, r := range c.RPCs {
			switch {
			case r.Client < 0 || r.Client >= n || r.Server < 0 || r.Server >= n:
				return fmt.Errorf("traffic: RPC %d: client %d or server %d is not a host index 0..%d", i, r.Client, r.Server, n-1)
			case r.Client == r.Server:
				return fmt.Errorf("traffic: RPC %d: host %d calls itself; pick another server", i, r.Client)
			case r.Request < 1 || r.Request > agent.MaxMessage || r.Response < 1 || r.Response > agent.MaxMessage:
				return fmt.Errorf("traffic: RPC %d: request %d and response %d bytes must be 1..%d", i, r.Request, r.Response, agent.MaxMessage)
			case r.At < 0:
				return fmt.Errorf("traffic: RPC %d: negative start time %v", i, r.At)
			}
		}
		return nil
	}
	if c.Requests.Name() == "" {
		return fmt.Errorf("traffic: no request size distribution (workload.Parse: w1..w5 or a size in bytes)")
	}
	if c.Duration <= 0 && c.Count <= 0 {
		return fmt.Errorf("traffic: set a duration or a count of RPCs")
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("traffic: concurrency %d: must be positive", c.Concurrency)
	}
	if c.Load != 0 {
		if !(c.Load > 0 && c.Load <= workload.MaxLoad) {
			return fmt.Errorf("traffic: load %v: want a fraction of the link rate in (0, %d], e.g. 0.5 (above 1 overloads the link)", c.Load, workload.MaxLoad)
		}
		if !(c.LinkBps > 0) {
			return fmt.Errorf("traffic: an offered load needs the link rate (LinkBps, bit/s)")
		}
	}
	return nil
}

// Servers returns the indexes of the hosts that serve when the workload
// runs on n hosts: the hosts an explicit list calls, else the last host
// (ManyToOne) or all of them (AllToAll).
func (c *Config) Servers(n int) []int {
	if len(c.RPCs) > 0 {
		seen := map[int]bool{}
		var out []int
		for _, r := range c.RPCs {
			if !seen[r.Server] {
				seen[r.Server] = true
				out = append(out, r.Server)
			}
		}
		return out
	}
	if c.Pattern == ManyToOne {
		return []int{n - 1}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
