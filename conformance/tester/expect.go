package tester

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Expect waits until a received packet that was not returned by an earlier
// Expect matches m, consumes it and returns it. It waits at most within on
// the Peer's clock (and no longer than ctx allows). On timeout the error
// says what was expected and lists the unconsumed candidates of the right
// type, sender and RPC with the first check each failed, e.g.
//
//	no GRANT from 198.18.0.1 for RPC 100 within 50ms; candidates: GRANT … offset 30000 (offset: want 20000, got 30000)
func (p *Peer) Expect(ctx context.Context, m Match, within time.Duration) (*Packet, error) {
	var found *Packet
	seen := -1
	ready := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.arrivals == seen {
			return false // nothing new since the last look
		}
		seen = p.arrivals
		for _, r := range p.log {
			if r.consumed || !m.selects(r) || m.check(r) != nil {
				continue
			}
			r.consumed = true
			found = r
			return true
		}
		return false
	}
	from := p.clock.Now()
	ok, err := p.clock.Wait(ctx, from.Add(within), ready)
	switch {
	case ok:
		return found, nil
	case err != nil:
		return nil, fmt.Errorf("%v: %w", p.missing(m, within), err)
	}
	return nil, &MissingError{From: from, To: p.clock.Now(), msg: p.missing(m, within).Error(), p: p, m: m}
}

// MissingError is Expect's error when no packet matched within its
// window, which ran from From to To on the Peer's clock: a caller may ask
// whether a stall of the machine then explains it, and whether the packet
// came late (ArrivedBy).
type MissingError struct {
	From, To time.Time
	msg      string
	p        *Peer
	m        Match
}

// ArrivedBy waits on the Peer's clock until t at most for an unconsumed
// packet matching what Expect awaited, and reports whether one came (it
// stays unconsumed): whether a missing packet was late or absent. It
// returns ctx's error if ctx ends first.
func (e *MissingError) ArrivedBy(ctx context.Context, t time.Time) (bool, error) {
	seen := -1
	return e.p.clock.Wait(ctx, t, func() bool {
		e.p.mu.Lock()
		defer e.p.mu.Unlock()
		if e.p.arrivals == seen {
			return false
		}
		seen = e.p.arrivals
		for _, r := range e.p.log {
			if !r.consumed && e.m.selects(r) && e.m.check(r) == nil {
				return true
			}
		}
		return false
	})
}

func (e *MissingError) Error() string { return e.msg }

// RPC is the client RPC id the failed Expect awaited a packet of (its
// Match.RPC; 0: any RPC): the RPC whose packet is missing.
func (e *MissingError) RPC() uint64 { return e.m.RPC }

// missing builds Expect's timeout error text.
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
	// "no packet from ...", not "no any packet from ...".
	msg := fmt.Sprintf("no %s within %v", strings.Replace(m.String(), "any packet", "packet", 1), within)
	if len(cands) > 0 {
		msg += "; candidates: " + strings.Join(cands, "; ")
	}
	return fmt.Errorf("%s", msg)
}

// ExpectNone waits for d on the Peer's clock and fails if an unconsumed
// packet matching m arrives in that time (or had arrived already); the
// packet is named in the error.
func (p *Peer) ExpectNone(ctx context.Context, m Match, d time.Duration) error {
	var bad *Packet
	seen := -1
	ready := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.arrivals == seen {
			return false
		}
		seen = p.arrivals
		for _, r := range p.log {
			if !r.consumed && m.selects(r) && m.check(r) == nil {
				bad = r
				return true
			}
		}
		return false
	}
	got, err := p.clock.Wait(ctx, p.clock.Now().Add(d), ready)
	if got {
		return fmt.Errorf("unexpected %s: got %s", m, bad)
	}
	return err
}

// Received returns the unconsumed received packets matching m without
// consuming them.
func (p *Peer) Received(m Match) []*Packet { return p.received(m, false) }

// Latest returns the packet matching m the peer received last, consumed
// or not (nil if none): the GRANT a sender has processed last, whose
// priority its next scheduled DATA takes.
func (p *Peer) Latest(m Match) *Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.log) - 1; i >= 0; i-- {
		if r := p.log[i]; m.selects(r) && m.check(r) == nil {
			return r
		}
	}
	return nil
}

// ReceivedAll returns every received packet matching m, those an Expect
// consumed included, without consuming any: what the peer got in all.
func (p *Peer) ReceivedAll(m Match) []*Packet { return p.received(m, true) }

func (p *Peer) received(m Match, all bool) []*Packet {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Packet
	for _, r := range p.log {
		if (all || !r.consumed) && m.selects(r) && m.check(r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// Arrivals counts the packets the peers have received so far (the mark
// WaitArrival waits past).
func Arrivals(peers ...*Peer) int {
	n := 0
	for _, p := range peers {
		p.mu.Lock()
		n += p.arrivals
		p.mu.Unlock()
	}
	return n
}

// WaitArrival blocks until the peers have received more than since
// packets in all (Arrivals, taken before the caller last looked at what
// they received, so that nothing arriving meanwhile is missed) or d has
// passed on their clock, whichever is first: a bounded wait for drivers
// that poll several peers (the peers share one clock). It returns ctx's
// error if ctx ends first.
func WaitArrival(ctx context.Context, d time.Duration, since int, peers ...*Peer) error {
	if len(peers) == 0 {
		return nil
	}
	c := peers[0].clock
	_, err := c.Wait(ctx, c.Now().Add(d), func() bool { return Arrivals(peers...) != since })
	return err
}
