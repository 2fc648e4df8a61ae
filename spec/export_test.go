package spec

import "github.com/homatest/homatest/spec/wire"

// UseReferenceDispatch makes c visit every rule with the rules' own
// conditions (Checker.reference), for spec_test's comparison with the
// dispatch tables.
func UseReferenceDispatch(c *Checker) { c.reference = true }

// NewCheckerUnverified is NewChecker as it runs outside the package's
// tests: dispatch tables without the extra visits verifyPrefilters adds.
func NewCheckerUnverified(profile string, p Params, rules []*Rule) *Checker {
	return newChecker(profile, p, rules, false)
}

// TakesPartial reports whether rule r judges p, the readable part of a
// header the snap length cut (compiled.takesPartial), for spec_test.
func TakesPartial(r *Rule, p wire.Packet) bool {
	cp, ok := compile(r.Property)
	return ok && cp.takesPartial(p)
}

// NewSwitchNetwork is a capture between the hosts' network model, for
// spec_test's contexts.
func NewSwitchNetwork(p *Params) *Network { return newNetwork(Switch, p) }

// UsualVerified returns how many Usual results c's verification confirmed
// (verifyUsual), for spec_test.
func UsualVerified(c *Checker) int { return c.usualVerified }

// PredictVerified returns how many predicted DATA packets c's
// verification confirmed (verifyPredicted), for spec_test.
func PredictVerified(c *Checker) int { return c.predictVerified }

// ApplyVerified returns how many predicted DATA packets' lean trace
// updates c's verification confirmed (Checker.applyPredicted), for
// spec_test.
func ApplyVerified(c *Checker) int { return c.applyVerified }

// BoundVerified returns how many GRANT rule answers the granting set's
// bounds gave that c's verification confirmed (boundedPass,
// boundedMeasure), for spec_test.
func BoundVerified(c *Checker) int { return c.ctx.boundVerified }

// Bounded returns how many GRANT rule answers the granting set's bounds
// gave in c, verified or not, for spec_test.
func Bounded(c *Checker) int { return c.ctx.bounded }
