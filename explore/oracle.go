package explore

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
)

// oracle judges the IUT online: every packet of its own view (what it
// sent, as it sent it, and what it was given, as it got it) goes to a
// spec.Checker as it happens, and each new violation charged to the IUT
// (at a frame it sent, or for an answer obligation at a frame it
// received) is returned at once. It also keeps which rules were
// evaluated at packets the IUT sent (the rules a run exercised on the
// IUT, not on the tester's own packets).
type oracle struct {
	ctx     context.Context
	c       *spec.Checker
	iut     netip.Addr
	charges map[string]bool
	level   spec.Level
	stalls  *stall.Monitor
	// reaction excuses a timing finding at a packet the IUT sent less
	// than this after a packet of the same RPC was given to it (see
	// spec.Params.Reaction): 0 in the simulator; in real time the view's
	// slack, since the tester stamps its packets as it sends them and the
	// IUT's as they reach it, so within slack the view cannot order an
	// IUT timer pass and a packet on its way to the IUT's protocol code.
	reaction time.Duration
	seen     int
	view     []spec.Event // frame i is view[i-1]
	prev     []spec.RuleResult
	cur      []spec.RuleResult
	// exercised: rules evaluated at a packet the IUT sent.
	exercised map[string]bool
	// excused are timing findings a measured stall or the reaction race
	// explained (real time), each with its reason.
	excused []excusedFinding
}

// excusedFinding is a finding the oracle did not charge, and why.
type excusedFinding struct {
	spec.Finding
	why string
}

func newOracle(ctx context.Context, w *world, rules []*spec.Rule, level spec.Level) *oracle {
	o := &oracle{ctx: ctx, c: spec.NewChecker(w.ce.Profile, w.params, rules), iut: w.info.Addr, charges: map[string]bool{},
		level: level, stalls: w.ce.Stalls, reaction: w.params.Reaction, exercised: map[string]bool{}}
	// The view is a tap on the IUT's own link: its packets as it sent
	// them, the tester's as it got them (what the explored network lost
	// never reached it).
	o.c.SetCaptureFromStart() // a case's capture holds it from its first packet
	o.c.SetCapturePoint(spec.HostPoint(o.iut))
	for _, r := range rules {
		o.charges[r.ID] = r.ChargesReceiver()
	}
	o.prev = o.c.Results(nil)
	return o
}

// feed gives the checker e (its Frame is set here) and returns the first
// new violation charged to the IUT at level o.level or stricter, if any.
func (o *oracle) feed(e *spec.Event) *spec.Finding {
	e.Frame = len(o.view) + 1
	o.view = append(o.view, *e)
	o.c.Feed(e)
	o.cur = o.c.Results(o.cur)
	if e.Src == o.iut {
		for i := range o.cur {
			if o.cur[i].Checked > o.prev[i].Checked {
				o.exercised[o.cur[i].ID] = true
			}
		}
	}
	o.prev, o.cur = o.cur, o.prev
	return o.fresh(o.c.Violations())
}

// fresh returns the first violation of vs not looked at yet that is
// charged to the IUT.
func (o *oracle) fresh(vs []spec.Finding) *spec.Finding {
	for ; o.seen < len(vs); o.seen++ {
		if f := vs[o.seen]; o.charged(f) {
			o.seen++
			return &f
		}
	}
	return nil
}

// charged reports whether finding f is the IUT's doing at a level judged,
// and not explained by a stall the environment measured.
func (o *oracle) charged(f spec.Finding) bool {
	if f.Level > o.level || f.Frame < 1 || f.Frame > len(o.view) {
		return false
	}
	e := &o.view[f.Frame-1]
	owner := f.ChargedTo
	if !owner.IsValid() {
		owner = e.Src
		if o.charges[f.Rule] {
			owner = e.Dst
		}
	}
	if owner != o.iut {
		return false
	}
	if spec.Raced(f, o.view, f.Frame-1, o.iut, o.reaction) {
		o.excused = append(o.excused, excusedFinding{f, fmt.Sprintf("sent less than %v after a packet of the RPC was given to the IUT: its timer may have decided before that packet reached it", o.reaction)})
		return false
	}
	if o.stalls != nil && f.Timing() {
		if sp := o.stalled(f); len(sp) > 0 {
			o.excused = append(o.excused, excusedFinding{f, "during a measured stall: " + sp[0].String()})
			return false
		}
	}
	return true
}

// stalled returns the measured stalls that explain timing finding f. A
// stall is recorded some time after it began (stall.Monitor.Settle), so
// when none explains f yet the oracle waits until every stall around f's
// frames would have been recorded, then looks again.
func (o *oracle) stalled(f spec.Finding) []stall.Span {
	if sp := stall.Explaining(f, o.view, o.stalls.Spans()); len(sp) > 0 {
		return sp
	}
	var last time.Time
	for _, n := range append([]int{f.Frame}, f.Frames...) {
		if t := o.frameTime(n); t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		return nil
	}
	o.stalls.Settle(o.ctx, last.Add(f.Slack))
	return stall.Explaining(f, o.view, o.stalls.Spans())
}

// finish closes the checker (open obligations past their deadline are
// violations) and returns the first violation charged to the IUT among
// those it adds, with the report.
func (o *oracle) finish() (*spec.Finding, *spec.Report) {
	type key struct {
		rule  string
		frame int
		why   string
	}
	before := map[key]bool{}
	for _, f := range o.c.Violations() {
		before[key{f.Rule, f.Frame, f.Why}] = true
	}
	rep := o.c.Finish()
	for _, f := range rep.Violations {
		if !before[key{f.Rule, f.Frame, f.Why}] && o.charged(f) {
			return &f, rep
		}
	}
	return nil, rep
}

// frameTime returns the time of frame n (zero if out of range).
func (o *oracle) frameTime(n int) time.Time {
	if n < 1 || n > len(o.view) {
		return time.Time{}
	}
	return o.view[n-1].Time
}
