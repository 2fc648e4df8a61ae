package workload

import (
	"errors"
	"math/rand/v2"
	"time"
)

// RPC is one generated RPC.
type RPC struct {
	// At is the time the client issues the RPC, measured from the start
	// of the run.
	At time.Duration
	// Request and Response are the message lengths in bytes.
	Request, Response int
}

// GeneratorConfig configures a Generator.
type GeneratorConfig struct {
	// Request is the request size distribution (required).
	Request Dist
	// Response is the response size distribution; the zero Dist makes
	// every response as long as its request (an echo).
	Response Dist
	// Arrivals times the RPCs (Rate > 0 required).
	Arrivals Arrivals
	// Seed selects the sequence: equal configs and seeds give equal
	// sequences on every platform (math/rand/v2 PCG).
	Seed uint64
}

// Generator produces a deterministic sequence of RPCs. It is not safe for
// concurrent use.
type Generator struct {
	cfg GeneratorConfig
	r   *rand.Rand
	at  time.Duration
}

// NewGenerator returns a Generator for cfg. Errors: no request
// distribution, or a non-positive arrival rate.
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	if len(cfg.Request.points) == 0 {
		return nil, errors.New("workload: GeneratorConfig.Request is required (use Parse)")
	}
	if !(cfg.Arrivals.Rate > 0) {
		return nil, errors.New("workload: GeneratorConfig.Arrivals.Rate must be positive (use Poisson)")
	}
	return &Generator{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, 0x686f6d61))}, nil
}

// Next returns the next RPC: its arrival time (the previous one's plus an
// exponential gap), then its request size and its response size, drawn in
// that order. It allocates nothing.
func (g *Generator) Next() RPC {
	g.at += g.cfg.Arrivals.Next(g.r)
	req := g.cfg.Request.Sample(g.r)
	resp := req
	if len(g.cfg.Response.points) > 0 {
		resp = g.cfg.Response.Sample(g.r)
	}
	return RPC{At: g.at, Request: req, Response: resp}
}
