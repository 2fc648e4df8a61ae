package spec

// Violations returns the violations found so far, in the order they were
// found (at most MaxFindings per rule), without closing open obligations:
// a caller that judges a trace as it happens (homatest explore) looks at
// the new ones after each Feed. The slice must not be modified.
func (c *Checker) Violations() []Finding { return c.report.Violations }

// Results appends to dst[:0], per rule in the order NewChecker kept them,
// the rule's counts so far (evaluated, passed, violated, inconclusive),
// without closing open obligations, and returns it: a caller measuring
// which rules a run exercises compares them before and after each Feed.
func (c *Checker) Results(dst []RuleResult) []RuleResult {
	dst = dst[:0]
	c.foldPasses()
	for _, st := range c.state {
		dst = append(dst, st.res)
	}
	return dst
}
