package spec

import (
	"net/netip"
	"time"
)

// Judge is the one way into the checker for a verdict: the rules, the
// parameters and the profile they are judged under. Its methods apply the
// capture-point model (where the capture was taken decides what a
// capture can prove; see CapturePoint) and charge every finding to the
// host that owed the behaviour (Finding.ChargedTo: the sender of the
// finding's frame, or for an obligation, Rule.ChargesReceiver, the
// receiver of its trigger). homatest check, the suite's tester and
// passive specs and scenario run all judge through it; what a caller adds
// is its own (a measured stall excusing a timing finding, say).
type Judge struct {
	// Profile names the parameter profile, for the report; rules that do
	// not apply to it are dropped.
	Profile string
	// Params are the parameters the rules are judged against.
	Params Params
	// Rules are the rules to judge (Rules, or a Select of them).
	Rules []*Rule
	// FromStart says the captures began before any of their RPCs (those
	// homatest makes of its own runs): see Checker.SetCaptureFromStart.
	FromStart bool
	// OneInstance says each host address in the captures is one module
	// instance throughout (those homatest makes of its own runs): see
	// Checker.SetOneInstance.
	OneInstance bool
	// CaptureDrops is the number of packets the captures say they dropped
	// themselves (0: none): see Checker.SetCaptureDrops.
	CaptureDrops uint64
	// CaptureDropsDeclared says the captures declare their own drops
	// (CaptureDrops is then the whole truth): see
	// Checker.SetCaptureDropsDeclared.
	CaptureDropsDeclared bool
	// OneDirection makes a capture that holds packets in one direction
	// only between every two hosts excuse what the other side's unseen
	// packets may explain: see Checker.SetOneDirectionExcuse. For
	// captures of unknown making (check); a testbed's capture records
	// both directions of the host under test, whose silence is its own.
	OneDirection bool
	// OneEnd says the capture is one end of every host's link by its
	// shape only: see Checker.SetOneEndExcuse, which OneEndSpare is
	// given to.
	OneEnd      bool
	OneEndSpare func(*Finding) bool
	// NotUnderTest, when set, reports a violation charged to no
	// implementation under test (a tester's): it does not use up the
	// capture drops' budget (see Checker.SetNotUnderTest).
	NotUnderTest func(*Finding) bool
	// Restarts are host restarts another view of the capture found, and
	// the capture's timestamp jumps: see Checker.SetRestarts.
	Restarts []SectionStart
	// Started, when set, holds the RPCs whose request's first
	// transmission of offset 0 the whole capture shows, at the time it
	// did: a capture of several ports judged one port's view at a time
	// (a host's own link) may miss that packet on the port (lost on its
	// way there) though the capture saw it start. See
	// Checker.SetStarted.
	Started map[RPCKey]time.Time
}

// NewJudge returns the Judge of the rules the comma-separated ID globs
// name (Select: "" is every rule) at level min or above that apply to
// profile, against p. Errors: Select's (a malformed glob or one that
// matches no rule).
func NewJudge(profile string, p Params, globs string, min Level) (Judge, error) {
	rules, err := Select(Rules(), globs, min, profile)
	return Judge{Profile: profile, Params: p, Rules: rules}, err
}

// Stream returns a Checker for one capture taken at cp: Feed it the
// capture's events in order, as they are read, then Finish. Each
// violation of the report carries ChargedTo (see Charged).
func (j Judge) Stream(cp CapturePoint) *Checker {
	c := NewChecker(j.Profile, j.Params, j.Rules)
	c.SetCapturePoint(cp)
	if j.FromStart {
		c.SetCaptureFromStart()
	}
	if j.OneInstance {
		c.SetOneInstance()
	}
	c.SetCaptureDrops(j.CaptureDrops)
	c.SetCaptureDropsDeclared(j.CaptureDropsDeclared)
	c.SetNotUnderTest(j.NotUnderTest)
	c.SetStarted(j.Started)
	if j.OneDirection {
		c.SetOneDirectionExcuse()
	}
	if j.OneEnd {
		c.SetOneEndExcuse(j.OneEndSpare)
	}
	c.SetRestarts(j.Restarts)
	return c
}

// Capture judges events, one capture taken at cp in capture order, and
// returns the checker's report (see Stream).
func (j Judge) Capture(cp CapturePoint, events []Event) *Report {
	c := j.Stream(cp)
	for i := range events {
		c.Feed(&events[i])
	}
	return c.Finish()
}

// Charged returns the findings in fs charged to any of hosts (their
// ChargedTo), in fs's order: the side of an exchange under test, when a
// capture also holds its peer's packets (a tester's, say).
func Charged(fs []Finding, hosts ...netip.Addr) []Finding {
	var out []Finding
	for _, f := range fs {
		for _, h := range hosts {
			if h.IsValid() && f.ChargedTo == h {
				out = append(out, f)
				break
			}
		}
	}
	return out
}
