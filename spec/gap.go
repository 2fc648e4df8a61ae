package spec

import (
	"fmt"
	"net/netip"
	"time"
)

// TimeGap is a forward jump of the capture's timestamps over which an RPC
// went on as if no time had passed (Report.TimeGaps): the capture shows
// no packet at all for longer than timeout_ticks (stretched by
// timer_drift, plus slack), yet a packet after the silence continues an
// RPC neither acknowledged nor answered RPC_UNKNOWN whose previous packet
// came before it. A host whose timer ran through the silence would have
// sent RESEND after resend_ticks (or NEED_ACK every tick) and aborted the
// RPC after timeout_ticks (HomaModule homa_timer.c homa_timer_check_rpc),
// all of which the capture would show: either the capture lost the time
// (paused, cut and joined with editcap and mergecap -a, its clock stepped
// forward) or every host stalled (a paused VM's timer does not tick).
type TimeGap struct {
	// Frame is the first frame after the silence, After the last before.
	Frame int `json:"frame"`
	After int `json:"after_frame"`
	// From is frame After's time, when the silence began, and Gap its
	// length (ns in JSON).
	From time.Time     `json:"from"`
	Gap  time.Duration `json:"gap_ns"`
	// Continued is the first frame of an RPC of before the silence that
	// went on after it, and RPC that RPC.
	Continued int    `json:"continued_frame"`
	RPC       RPCKey `json:"rpc"`
	Why       string `json:"why"`
	// timer is what the hosts' timers would have sent in the silence,
	// and waiting the ends of RPC whose timers would have sent it.
	timer   string
	waiting []netip.Addr
}

// Waiting returns the ends of g's RPC whose timers would have sent a
// packet in the silence (HomaModule homa_timer.c homa_timer_check_rpc):
// the server, for NEED_ACK, once the response is complete; the client
// alone once the request is complete (a server sending its response
// counts no silent ticks: the client asks for what it misses); both
// while the request is incomplete. A silence kept only by these hosts'
// choice (a tester's, holding back a GRANT) is no sign of lost time.
func (g TimeGap) Waiting() []netip.Addr { return g.waiting }

// maxTimeGaps is the most TimeGaps a Report lists (the first ones).
const maxTimeGaps = 16

// openGap starts watching for an RPC that goes on across the silence
// before e (since: e's time less the previous event's, which Feed has
// computed) when that silence is longer than timeout_ticks allows
// (Params.LateTicks): Checker.noteGap then judges e and what follows.
func (c *Checker) openGap(e *Event, since time.Duration) {
	if c.events == 0 {
		return
	}
	if since > c.p.LateTicks(c.p.TimeoutTicks) && len(c.report.TimeGaps) < maxTimeGaps {
		c.gap = &TimeGap{Frame: e.Frame, After: c.lastFrame, Gap: since, From: c.last}
	}
}

// noteGap, while a silence is watched (Checker.gap), files it in the
// report at the first event that continues an RPC from before it which
// the protocol's timers would have kept busy (not acknowledged, no
// RPC_UNKNOWN). It stops watching once timeout_ticks more have passed
// without one: a host that aborted its RPCs in the silence shows nothing
// more of them.
func (c *Checker) noteGap(e *Event) {
	g := c.gap
	start := g.From
	r := c.trace.curRPC
	if c.trace.cur != e || r == nil || r.Acked || r.Unknown || r.Last.After(start) {
		if e.Time.Sub(start.Add(g.Gap)) > c.p.LateTicks(c.p.TimeoutTicks) {
			c.gap = nil
		}
		return
	}
	g.Continued, g.RPC = e.Frame, r.Key
	g.timer = fmt.Sprintf("would have sent RESEND within resend_ticks %d (HOMA-RESEND-014) and, still without an answer, aborted the RPC after timeout_ticks %d (HOMA-RESEND-009)", c.p.ResendTicks, c.p.TimeoutTicks)
	if r.Response.Complete {
		g.timer = "would have sent NEED_ACK for it every tick until the client acknowledged it (HOMA-ACK-008)"
	}
	switch {
	case r.Response.Complete:
		g.waiting = []netip.Addr{r.Key.Server}
	case r.Request.Complete:
		g.waiting = []netip.Addr{r.Key.Client}
	default:
		g.waiting = []netip.Addr{r.Key.Client, r.Key.Server}
	}
	g.timer += fmt.Sprintf(" (tick %v)", c.p.Tick)
	g.describe()
	c.report.TimeGaps = append(c.report.TimeGaps, *g)
	c.gap = nil
}

// describe sets g.Why from its fields.
func (g *TimeGap) describe() {
	g.Why = fmt.Sprintf("capture time jumps forward %v at frame %d (no packet since frame %d), yet %s went on after it at frame %d as if no time had passed: a host whose timer ran %s; either the capture lost that time (a capture gap: the capture paused, files cut and joined with editcap and mergecap -a, or its clock stepped forward), and findings timed across it are its doing, or every host stalled that long (a paused VM's timer does not tick)",
		g.Gap.Round(time.Millisecond), g.Frame, g.After, g.RPC.Label(), g.Continued, g.timer)
}

// Within returns g narrowed to the silence of gap from frame after (at
// from) to frame, which lies within g: a capture judged as several views
// (one per port) finds a silence in each view, and the whole capture's
// lies within them.
func (g TimeGap) Within(after, frame int, from time.Time, gap time.Duration) TimeGap {
	g.After, g.Frame, g.From, g.Gap = after, frame, from, gap
	g.describe()
	return g
}
