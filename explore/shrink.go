package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/homatest/homatest/internal/plural"
)

// measure orders failing cases by size: packets the tester hosts gave the
// IUT up to the failure first, then RPCs, decisions, message bytes.
type measure struct {
	sent, rpcs, choices, bytes int
}

func (m measure) less(o measure) bool {
	switch {
	case m.sent != o.sent:
		return m.sent < o.sent
	case m.rpcs != o.rpcs:
		return m.rpcs < o.rpcs
	case m.choices != o.choices:
		return m.choices < o.choices
	}
	return m.bytes < o.bytes
}

func measureOf(c *Case, out *outcome) measure {
	return measure{sent: out.sent, rpcs: len(c.RPCs), choices: len(out.choices), bytes: c.bytes()}
}

// shrinker minimises one failing case: it reruns smaller variants and
// keeps any that still fails with the same rule and is smaller.
type shrinker struct {
	s    *session
	rule string
	best *Case
	out  *outcome
	m    measure
	runs int
	max  int
	// play runs a case without random decisions (session.play; a test
	// gives its own).
	play func(c *Case) (*outcome, error)
}

// shrink minimises failing case c (whose run gave out) and returns the
// failure found, with its script and capture from a last, logged run of
// the smallest case.
func (s *session) shrink(c *Case, out *outcome) (*Found, error) {
	f := &Found{Failure: *out.fail, Case: s.res.Cases, After: time.Since(s.start), Original: c, OriginalPackets: out.sent}
	k := &shrinker{s: s, rule: out.fail.Rule, best: c, out: out, m: measureOf(c, out), max: s.cfg.ShrinkRuns,
		play: func(c *Case) (*outcome, error) { return s.play(c, [numKinds]float64{}, 0, false) }}
	if err := k.search(f); err != nil {
		return nil, err
	}
	// A last run with the log, for the script and the capture.
	final, err := s.play(k.best, [numKinds]float64{}, 0, true)
	if err != nil {
		return nil, err
	}
	f.Shrunk = k.best
	if final.fail != nil && final.fail.Rule == k.rule {
		f.Failure = *final.fail
		f.Packets = final.sent
	} else {
		// Not reproduced (real time): report the shrunk case's last
		// failing run, with its own log (play keeps it in real time), so
		// that the script and the capture mark the frame the finding
		// names in that run.
		f.Packets = k.out.sent
		f.Failure = *k.out.fail
		f.Unstable = true
		if len(k.out.log) > 0 {
			final = k.out
		}
	}
	f.Script = writeScript(s, f, final)
	f.Capture = writeCapture(s, final, f)
	return f, nil
}

// search shrinks f's case: in real time it first reruns the case as
// found (rerun), and shrinks it only if a rerun failed again with the
// rule. A case that never failed again cannot be shrunk: every smaller
// candidate that does not fail is rejected whether or not the failure
// needed what it left out, so all the shrink runs go by and the case
// comes out as found, reported as shrunk (a HOMA-GRANT-013 of the ref in
// namespaces, "shrunk from 316 to 316 tester packets in 400 runs"). It
// sets f's Reruns, Refailed, ShrinkRuns and Unstable (a rerun that did
// not fail again).
func (k *shrinker) search(f *Found) error {
	if !k.s.info.virtual && k.max > 0 {
		var err error
		if f.Reruns, f.Refailed, err = k.rerun(k.best); err != nil {
			return err
		}
	}
	if k.max > 0 && (f.Reruns == 0 || f.Refailed > 0) {
		if err := k.run(); err != nil {
			return err
		}
	}
	f.ShrinkRuns = k.runs
	f.ShrinkOff = k.max <= 0
	f.Unstable = f.Refailed < f.Reruns
	return nil
}

// stableReruns is how many times, in real time, a failing case is rerun
// as found before it is shrunk: a verdict that does not recur in each of
// them depends on timing (Found.Unstable).
const stableReruns = 3

// rerun runs case c, as found, stableReruns times (within the shrink
// runs) and returns how many runs it made and how many failed again
// with the rule.
func (k *shrinker) rerun(c *Case) (runs, failed int, err error) {
	for ; runs < stableReruns && k.runs < k.max; runs++ {
		if err := k.s.ctx.Err(); err != nil {
			return runs, failed, err
		}
		k.runs++
		k.s.report(false, k.rule)
		out, err := k.play(c)
		if err != nil {
			return runs, failed, err
		}
		if out.interrupted != nil {
			return runs, failed, out.interrupted
		}
		if out.fail != nil && out.fail.Rule == k.rule {
			failed++
		}
	}
	return runs, failed, nil
}

// ShrinkText says what shrinking made of f's case: from how many tester
// packets to how many in how many runs, or that a case that never failed
// again, or one with shrinking off, was not shrunk.
func (f *Found) ShrinkText() string {
	if f.ShrinkOff {
		return fmt.Sprintf("%d tester packets, not shrunk (--shrink-runs 0)", f.Packets)
	}
	if f.Reruns > 0 && f.Refailed == 0 {
		return fmt.Sprintf("%d tester packets, not shrunk (%s)", f.Packets, plural.Of(f.ShrinkRuns, "run", "runs"))
	}
	return fmt.Sprintf("shrunk from %d to %d tester packets in %s", f.OriginalPackets, f.Packets, plural.Of(f.ShrinkRuns, "run", "runs"))
}

// UnstableWhy says why f is unstable ("" when it is not): how often its
// case as found failed again, or that its shrunk case's last run did not.
func (f *Found) UnstableWhy() string {
	switch {
	case !f.Unstable:
		return ""
	case f.Refailed < f.Reruns:
		what := "the shrunk case is not shown minimal"
		if f.Refailed == 0 {
			what = "not shrunk"
		}
		return fmt.Sprintf("the case as found failed again with %s in %d of %d reruns (real time): the verdict depends on timing, and %s; replay it several times", f.Rule, f.Refailed, f.Reruns, what)
	}
	return "the shrunk case did not fail when run again (real time): the script is its last failing run; replay it several times"
}

// try reruns candidate c and keeps it if it fails with the rule and is
// smaller; it reports whether it did.
func (k *shrinker) try(c *Case) bool { return k.attempt(c, false) }

// attempt reruns candidate c and keeps it if it fails with the rule and
// is smaller (or, with same, no larger: a simpler timing).
func (k *shrinker) attempt(c *Case, same bool) bool {
	if k.runs >= k.max || k.s.ctx.Err() != nil {
		return false
	}
	k.runs++
	k.s.report(false, k.rule)
	c.sortChoices()
	out, err := k.play(c)
	if err != nil || out.interrupted != nil || out.fail == nil || out.fail.Rule != k.rule {
		return false
	}
	ran := c.clone()
	ran.Choices = out.choices
	m := measureOf(ran, out)
	if !m.less(k.m) && !(same && !k.m.less(m)) {
		return false
	}
	k.best, k.out, k.m = ran, out, m
	return true
}

// run applies the shrinking passes until none makes progress or the runs
// are spent.
func (k *shrinker) run() error {
	for progress := true; progress && k.runs < k.max; {
		progress = false
		progress = k.dropRPCs() || progress
		progress = k.dropCutoffs() || progress
		// Packets first: they are the measure that counts most.
		progress = k.losePackets() || progress
		progress = k.dropChoices() || progress
		progress = k.smallerMessages() || progress
		progress = k.widerTiming() || progress
	}
	return k.s.ctx.Err()
}

// dropRPCs removes RPCs one at a time, the last first.
func (k *shrinker) dropRPCs() bool {
	any := false
	for i := len(k.best.RPCs) - 1; i >= 0 && len(k.best.RPCs) > 1; i-- {
		if i < len(k.best.RPCs) && k.try(removeRPC(k.best, i)) {
			any = true
		}
	}
	return any
}

// dropCutoffs removes cutoff changes.
func (k *shrinker) dropCutoffs() bool {
	any := false
	for i := len(k.best.Cutoffs) - 1; i >= 0; i-- {
		if i >= len(k.best.Cutoffs) {
			continue
		}
		c := k.best.clone()
		c.Cutoffs = slices.Delete(c.Cutoffs, i, i+1)
		if k.try(c) {
			any = true
		}
	}
	return any
}

// dropChoices removes decisions by halves, then quarters, down to single
// ones (delta debugging's complement steps).
func (k *shrinker) dropChoices() bool {
	any := false
	for chunk := max(1, len(k.best.Choices)/2); chunk >= 1; chunk /= 2 {
		for i := 0; i < len(k.best.Choices); {
			c := k.best.clone()
			end := min(i+chunk, len(c.Choices))
			c.Choices = slices.Delete(c.Choices, i, end)
			if k.try(c) {
				any = true
				continue // the same i now names the next chunk
			}
			i += chunk
		}
		if chunk == 1 {
			break
		}
	}
	return any
}

// smallerMessages tries smaller sizes for each message: 1, the payload
// header, one segment, unsched_bytes and one more, half and less one
// segment, smallest first.
func (k *shrinker) smallerMessages() bool {
	p := &k.s.info.params
	seg := int(k.s.info.mtu)
	u := int(p.UnschedBytes)
	any := false
	for i := range k.best.RPCs {
		for _, field := range []int{0, 1} {
			if i >= len(k.best.RPCs) {
				break
			}
			cur := k.best.RPCs[i].Request
			if field == 1 {
				cur = k.best.RPCs[i].Response
			}
			cands := []int{1, 12, seg, u, u + 1, cur / 2, cur - seg, cur - 1}
			slices.Sort(cands)
			for _, n := range slices.Compact(cands) {
				if n < 1 || n >= cur {
					continue
				}
				c := k.best.clone()
				r := &c.RPCs[i]
				if field == 0 {
					r.Request = n
				} else {
					r.Response = n
				}
				if r.Request < 12 {
					r.Response = r.Request
				}
				if k.try(c) {
					any = true
					break
				}
			}
		}
	}
	return any
}

// widerTiming moves starts to 0 or spreads them a tick apart, and drops a
// long tail: a failure that does not need tight timing is easier to read
// and to reproduce in real time.
func (k *shrinker) widerTiming() bool {
	any := false
	if k.best.Tail != 0 {
		c := k.best.clone()
		c.Tail = 0
		any = k.attempt(c, true) || any
	}
	for i := range k.best.RPCs {
		if i >= len(k.best.RPCs) || k.best.RPCs[i].Start == 0 {
			continue
		}
		c := k.best.clone()
		c.RPCs[i].Start = 0
		any = k.attempt(c, true) || any
	}
	return any
}

// losePackets makes the network lose the tester's packets that came
// before the failure, by halves, then quarters, down to single ones:
// packets the failure does not need disappear from the exchange (a
// NEED_ACK repeated every tick, the unscheduled bytes after the one that
// drew a GRANT).
func (k *shrinker) losePackets() bool {
	any := false
	keys := slices.Clone(k.out.sentKeys)
	for chunk := max(1, len(keys)/2); chunk >= 1; chunk /= 2 {
		for i := 0; i < len(keys); i += chunk {
			c := k.best.clone()
			lose := map[Key]bool{}
			for _, key := range keys[i:min(i+chunk, len(keys))] {
				lose[key] = true
			}
			c.Choices = slices.DeleteFunc(c.Choices, func(ch Choice) bool { return lose[ch.Key] })
			for key := range lose {
				c.Choices = append(c.Choices, Choice{Key: key, Value: FateDrop})
			}
			if k.try(c) {
				any = true
				keys = slices.Clone(k.out.sentKeys)
				i = -chunk // the kept run's packets differ: start this size over
			}
			if k.runs >= k.max {
				return any
			}
		}
		if chunk == 1 {
			break
		}
	}
	return any
}
