package traffic

import (
	"math/rand/v2"
	"sort"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness/workload"
)

// Sequence yields the RPCs of a workload in issue order: arrival times
// (open loop only), clients, servers and sizes, all from the seed. Run
// issues it through agents; package sim issues it to simulated hosts.
type Sequence struct {
	cfg      *Config
	hosts    int
	rng      *rand.Rand
	arrivals workload.Arrivals
	at       time.Duration
	n        int
	list     []RPC // explicit RPCs sorted by At
	issued   []int // closed loop with Count: RPCs issued per client
}

// NewSequence returns the sequence of cfg's workload on n hosts (host
// indexes 0..n-1; cfg.Hosts is not used). Errors: a config Run would
// refuse (the message names the field). For an open loop the arrival rate
// is one server link's Poisson rate times the number of servers.
func NewSequence(cfg Config, n int) (*Sequence, error) {
	if err := cfg.validateWorkload(n); err != nil {
		return nil, err
	}
	return newSequence(&cfg, n)
}

// newSequence returns the sequence of cfg (validated) on n hosts.
func newSequence(cfg *Config, n int) (*Sequence, error) {
	s := &Sequence{cfg: cfg, hosts: n, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7472616666696300))}
	if len(cfg.RPCs) > 0 {
		s.list = append([]RPC(nil), cfg.RPCs...)
		sort.SliceStable(s.list, func(i, j int) bool { return s.list[i].At < s.list[j].At })
		return s, nil
	}
	if cfg.Load > 0 {
		a, err := workload.Poisson(cfg.Load, cfg.LinkBps, cfg.Requests, workload.HomaDataOverhead{})
		if err != nil {
			return nil, err
		}
		a.Rate *= float64(len(cfg.Servers(n)))
		s.arrivals = a
	}
	return s, nil
}

// Config returns the workload the sequence issues, with Run's defaults
// filled in (Pattern, Port, ResponseBytes, Timeout).
func (s *Sequence) Config() Config { return *s.cfg }

// Expected returns how many RPCs the sequence will issue, or 0 when that
// depends on the run (a closed loop bounded by time only). For an open
// loop bounded by time it is the mean count.
func (s *Sequence) Expected() int {
	switch {
	case s.list != nil:
		return len(s.list)
	case s.cfg.Duration <= 0:
		return s.cfg.Count
	case s.arrivals.Rate > 0:
		n := int(s.arrivals.Rate * s.cfg.Duration.Seconds())
		if s.cfg.Count > 0 && s.cfg.Count < n {
			n = s.cfg.Count
		}
		return n
	}
	return s.cfg.Count
}

// Next returns the next RPC and false when the sequence is over: the list
// is exhausted, Count RPCs were issued, or (open loop) the next arrival is
// past Duration. For a closed loop At is 0 and client is chosen by the
// caller (the client whose slot freed); pass it as client (-1 otherwise).
// A closed loop's Count is shared evenly among the clients (the first
// Count mod clients issue one more), so how many RPCs each client issues
// does not depend on which of them the scheduler ran first: Next(client)
// returns false once that client's share is issued.
func (s *Sequence) Next(client int) (RPC, bool) {
	if s.list != nil {
		if s.n >= len(s.list) {
			return RPC{}, false
		}
		s.n++
		return s.list[s.n-1], true
	}
	if s.cfg.Count > 0 && s.n >= s.cfg.Count {
		return RPC{}, false
	}
	if client >= 0 && s.cfg.Count > 0 {
		clients := s.hosts
		if s.cfg.Pattern == ManyToOne {
			clients--
		}
		if s.issued == nil {
			s.issued = make([]int, clients)
		}
		share := s.cfg.Count / clients
		if client < s.cfg.Count%clients {
			share++
		}
		if client >= clients || s.issued[client] >= share {
			return RPC{}, false
		}
		s.issued[client]++
	}
	var r RPC
	if s.arrivals.Rate > 0 {
		s.at += s.arrivals.Next(s.rng)
		if s.cfg.Duration > 0 && s.at > s.cfg.Duration {
			return RPC{}, false
		}
		r.At = s.at
	}
	hosts := s.hosts
	if s.cfg.Pattern == ManyToOne {
		r.Server = hosts - 1
		if client < 0 {
			client = s.rng.IntN(hosts - 1)
		}
	} else {
		if client < 0 {
			client = s.rng.IntN(hosts)
		}
		r.Server = s.rng.IntN(hosts - 1)
		if r.Server >= client {
			r.Server++
		}
	}
	r.Client = client
	r.Request = min(s.cfg.Requests.Sample(s.rng), agent.MaxMessage)
	r.Response = s.cfg.ResponseBytes
	if s.cfg.Responses.Name() != "" {
		r.Response = min(s.cfg.Responses.Sample(s.rng), agent.MaxMessage)
	}
	if r.Request < agent.PayloadHeaderLen {
		r.Response = r.Request // no room for a response length: the response echoes the request
	}
	s.n++
	return r, true
}
