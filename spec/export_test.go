package spec

// UseReferenceDispatch makes c visit every rule with the rules' own
// conditions (Checker.reference), for spec_test's comparison with the
// dispatch tables.
func UseReferenceDispatch(c *Checker) { c.reference = true }

// NewCheckerUnverified is NewChecker as it runs outside the package's
// tests: dispatch tables without the extra visits verifyPrefilters adds.
func NewCheckerUnverified(profile string, p Params, rules []*Rule) *Checker {
	return newChecker(profile, p, rules, false)
}
