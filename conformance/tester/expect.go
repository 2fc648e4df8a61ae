package tester

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Expect waits until a received packet that was not returned by an earlier
// Expect matches m, consumes it and returns it. It waits at most within
// (and no longer than ctx allows). On timeout the error says what was
// expected and lists the unconsumed candidates of the right type, sender and
// RPC with the first check each failed, e.g.
//
//	no GRANT from 198.18.0.1 for RPC 100 within 50ms; candidates: GRANT … offset 30000 (offset: want 20000, got 30000)
func (p *Peer) Expect(ctx context.Context, m Match, within time.Duration) (*Packet, error) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, r := range p.log {
			if r.consumed || !m.selects(r) || m.check(r) != nil {
				continue
			}
			r.consumed = true
			p.mu.Unlock()
			return r, nil
		}
		arrived := p.arrived
		p.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline.C:
			return nil, p.missing(m, within)
		case <-ctx.Done():
			return nil, fmt.Errorf("%v: %w", p.missing(m, within), ctx.Err())
		}
	}
}

// missing builds Expect's timeout error.
func (p *Peer) missing(m Match, within time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var cands []string
	for _, r := range p.log {
		if r.consumed || !m.selects(r) {
			continue
		}
		cands = append(cands, fmt.Sprintf("%s (%v)", r, m.check(r)))
		if len(cands) == 5 {
			break
		}
	}
	msg := fmt.Sprintf("no %s within %v", m, within)
	if len(cands) > 0 {
		msg += "; candidates: " + strings.Join(cands, "; ")
	}
	return fmt.Errorf("%s", msg)
}

// ExpectNone waits for d and fails if an unconsumed packet matching m
// arrives in that time (or had arrived already); the packet is named in the
// error.
func (p *Peer) ExpectNone(ctx context.Context, m Match, d time.Duration) error {
	wait := time.NewTimer(d)
	defer wait.Stop()
	for {
		p.mu.Lock()
		for _, r := range p.log {
			if !r.consumed && m.selects(r) && m.check(r) == nil {
				p.mu.Unlock()
				return fmt.Errorf("unexpected %s: got %s", m, r)
			}
		}
		arrived := p.arrived
		p.mu.Unlock()
		select {
		case <-arrived:
		case <-wait.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Received returns the unconsumed received packets matching m without
// consuming them.
func (p *Peer) Received(m Match) []*Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Packet
	for _, r := range p.log {
		if !r.consumed && m.selects(r) && m.check(r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// WaitArrival blocks until the next packet arrives at the Peer or d has
// passed, whichever is first (a bounded wait for drivers that poll several
// peers).
func (p *Peer) WaitArrival(d time.Duration) {
	p.mu.Lock()
	arrived := p.arrived
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-arrived:
	case <-t.C:
	}
}
