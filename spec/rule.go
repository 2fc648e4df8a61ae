package spec

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Level is a rule's requirement level (RFC 2119).
type Level uint8

const (
	// Must: a violation means the implementation is not Homa.
	Must Level = iota + 1
	// Should: a violation is reported but may be justified.
	Should
)

// String returns "MUST" or "SHOULD".
func (l Level) String() string {
	if l == Must {
		return "MUST"
	}
	return "SHOULD"
}

// MarshalText encodes the level as its string.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads "MUST" or "SHOULD" (any case), so a report with
// findings (a scenario's summary.json, check -o json) reads back.
func (l *Level) UnmarshalText(b []byte) error {
	switch strings.ToUpper(string(b)) {
	case "MUST":
		*l = Must
	case "SHOULD":
		*l = Should
	default:
		return fmt.Errorf("spec: level %q: want MUST or SHOULD", b)
	}
	return nil
}

// Rule is one protocol requirement, checkable on a packet trace.
type Rule struct {
	// ID is HOMA-<AREA>-<NNN>, never reused.
	ID string `json:"id"`
	// Level is MUST or SHOULD.
	Level Level `json:"level"`
	// Statement says in one sentence what an observer of the wire sees.
	Statement string `json:"statement"`
	// Source is the HomaModule file and function, or paper section.
	Source string `json:"source"`
	// Profiles lists the profiles the rule applies to; empty means all.
	Profiles []string `json:"profiles,omitempty"`
	// Facts names the facts of docs/homa-facts.md §4 the rule implements
	// (e.g. "RTX-06"); see Facts and Coverage.
	Facts []string `json:"facts,omitempty"`
	// Capture, when set, says which capture point the rule needs (e.g. a
	// switch port: host taps hide GRO-batched packets); the rule reports
	// inconclusive rather than violated where the capture cannot tell.
	Capture string `json:"capture,omitempty"`
	// Alone says no packet missing from the capture can make a violation
	// of the rule appear while the hosts were correct: the rule judges a
	// packet's own fields (its ids, ports, TOS byte, lengths, priority
	// field) against the parameters or against packets the capture holds
	// (and its finding names) that no unseen GRANT, RESEND, ACK, NEED_ACK,
	// CUTOFFS, BUSY, RPC_UNKNOWN or DATA could reconcile with it. Its violations are
	// then never excused by a capture that began while an RPC was under
	// way (CauseCaptureStart) nor by one that dropped packets
	// (CauseCaptureDrop): both ask "does the verdict rest on a packet not
	// in the capture?". Rules of the WIRE area are alone whether or not
	// they say so; a rule whose violations are alone only sometimes marks
	// those with Result.Alone.
	Alone bool `json:"-"`
	// AnyEnd says the rule's violations hold whichever end of each path
	// stamped the packets (a GRANT leaves its receiver after the DATA it
	// answers arrived there, which is after that DATA left its sender), so
	// a capture that is one end of every link does not excuse them
	// (CauseOneEnd), though a capture drop still may.
	AnyEnd bool `json:"-"`
	// Property is the executable form.
	Property Property `json:"-"`
}

// Area returns the <AREA> part of the ID, lower case.
func (r *Rule) Area() string { return strings.ToLower(r.area()) }

// area is Area as the ID spells it (not lowercased), without allocating.
func (r *Rule) area() string {
	_, rest, ok := strings.Cut(r.ID, "-")
	area, num, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 || strings.Contains(num, "-") {
		return ""
	}
	return area
}

// AppliesTo reports whether the rule applies to the named profile.
func (r *Rule) AppliesTo(profile string) bool {
	if len(r.Profiles) == 0 {
		return true
	}
	for _, p := range r.Profiles {
		if p == profile {
			return true
		}
	}
	return false
}

var idPattern = regexp.MustCompile(`^HOMA-[A-Z]+-[0-9]{3}$`)

// Validate checks the rule's fields: ID form, level, statement, source,
// property, known profiles.
func (r *Rule) Validate() error {
	switch {
	case !idPattern.MatchString(r.ID):
		return fmt.Errorf("rule %q: ID must look like HOMA-AREA-001", r.ID)
	case r.Level != Must && r.Level != Should:
		return fmt.Errorf("rule %s: no level", r.ID)
	case r.Statement == "" || r.Source == "":
		return fmt.Errorf("rule %s: statement and source are required", r.ID)
	case r.Property == nil:
		return fmt.Errorf("rule %s: no property", r.ID)
	}
	if a, ok := r.Property.(AtMost); ok && (a.Measure == nil || a.What == nil) {
		return fmt.Errorf("rule %s: AtMost needs Measure and What", r.ID)
	}
	for _, p := range r.Profiles {
		if _, err := LookupProfile(p); err != nil {
			return fmt.Errorf("rule %s: %w", r.ID, err)
		}
	}
	for _, f := range r.Facts {
		if _, ok := LookupFact(f); !ok {
			return fmt.Errorf("rule %s: names fact %q, which docs/homa-facts.md §4 does not have", r.ID, f)
		}
	}
	return nil
}

// ruleSets lists the functions that return each area's rules (one per
// rules_<area>.go file).
var ruleSets = []func() []*Rule{
	wireRules, wireRules2, wireRules3, idRules, idRules2, unschedRules, grantRules, grantRules2, grantRules3, grantRankRules, prioRules, cutoffRules, cutoffRules2,
	resendRules, resendRules2, resendRules3, ackRules, ackRules2, ackRules3, ackRules4, sendRules, sendRules2,
}

// Rules returns every rule, sorted by ID. It panics if two rules share an
// ID or a rule is malformed (a programming error caught by the tests).
func Rules() []*Rule {
	return append([]*Rule(nil), allRules()...)
}

// allRules builds and validates the rule list once; Rules hands out copies
// of the slice (the rules themselves are never modified).
var allRules = sync.OnceValue(func() []*Rule {
	var all []*Rule
	seen := map[string]bool{}
	for _, f := range ruleSets {
		for _, r := range f() {
			if err := r.Validate(); err != nil {
				panic(err)
			}
			if seen[r.ID] {
				panic("duplicate rule ID " + r.ID)
			}
			seen[r.ID] = true
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all
})

// RuleByID returns the rule with ID id (as "HOMA-GRANT-011"), nil if
// the rule book has none.
func RuleByID(id string) *Rule {
	return rulesByID()[id]
}

// rulesByID indexes allRules by ID, once.
var rulesByID = sync.OnceValue(func() map[string]*Rule {
	m := map[string]*Rule{}
	for _, r := range allRules() {
		m[r.ID] = r
	}
	return m
})

// CheckRulePatterns reports the first malformed glob among the
// comma-separated rule-ID globs (path.Match syntax), as "bad rule pattern
// "[": syntax error in pattern"; whether a glob matches a rule is Select's
// business.
func CheckRulePatterns(globs string) error {
	if globs == "" {
		return nil
	}
	for _, p := range strings.Split(globs, ",") {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad rule pattern %q: %v", p, err)
		}
	}
	return nil
}

// Select returns the rules that match the ID glob (path.Match syntax, e.g.
// "HOMA-GRANT-*"; empty matches all; several globs may be comma-separated),
// have at least level min (Should includes Must), and apply to profile
// ("" means any profile).
// It returns an error for a malformed glob or a glob that matches nothing.
func Select(rules []*Rule, globs string, min Level, profile string) ([]*Rule, error) {
	var pats []string
	if globs != "" {
		pats = strings.Split(globs, ",")
	}
	if err := CheckRulePatterns(globs); err != nil {
		return nil, err
	}
	var out []*Rule
	matched := make([]bool, len(pats))
	for _, r := range rules {
		ok := len(pats) == 0
		for i, p := range pats {
			if m, _ := path.Match(strings.ToUpper(strings.TrimSpace(p)), r.ID); m {
				ok, matched[i] = true, true
			}
		}
		if ok && (min == 0 || r.Level <= min) && (profile == "" || r.AppliesTo(profile)) {
			out = append(out, r)
		}
	}
	for i, m := range matched {
		if !m {
			return nil, fmt.Errorf("rule pattern %q matches no rule (see homatest spec list)", pats[i])
		}
	}
	return out, nil
}

// SelectSome is Select for a selection that must judge something: it also
// returns an error when globs match rules but none of them has level min
// (a SHOULD rule asked for at level must) or applies to profile, saying
// which rules the globs matched and why they fell out. An empty selection
// judges nothing, so a check of it would pass green.
func SelectSome(rules []*Rule, globs string, min Level, profile string) ([]*Rule, error) {
	out, err := Select(rules, globs, min, profile)
	if err != nil || len(out) > 0 {
		return out, err
	}
	matched, _ := Select(rules, globs, 0, "")
	atLevel, _ := Select(rules, globs, min, "")
	if len(matched) == 0 || len(atLevel) > 0 && profile == "" {
		return out, nil // no rule at all (globs empty and rules empty)
	}
	if len(atLevel) == 0 {
		return nil, fmt.Errorf("rule pattern %q matches only SHOULD rules (%s), none at level must, so nothing would be judged: use level should, or a pattern that matches MUST rules", globs, idList(matched))
	}
	return nil, fmt.Errorf("rule pattern %q matches no rule profile %s judges (%s apply to other profiles), so nothing would be judged: pick a pattern with rules of that profile (see homatest spec list)", globs, profile, idList(atLevel))
}

// idList lists the IDs of rs, the first three and a count of the rest.
func idList(rs []*Rule) string {
	var b strings.Builder
	for i, r := range rs {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(rs)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.ID)
	}
	return b.String()
}

// ChargesReceiver reports whether a violation of r is the doing of the
// host that received the finding's frame rather than of the host that sent
// it: true for obligations (the Within form, "after A, B within T"), whose
// finding names the trigger A while the host that owed B is A's receiver.
// Tools that judge one side of an exchange (a tester playing the peer, a
// per-host view) use it to charge each finding to the right host. A
// Within rule with Witness or SenderOwes set judges its trigger's sender;
// an Each rule with ChargeReceiver set, its packet's receiver.
func (r *Rule) ChargesReceiver() bool {
	switch p := r.Property.(type) {
	case Within:
		return !p.Witness && !p.SenderOwes
	case Each:
		return p.ChargeReceiver
	}
	return false
}

// CutHeaders reports whether r judges the readable part of a header the
// snap length cut after the common header (Each.Partial, AtMost.Partial),
// and the fields past the common header such a packet must hold for it
// (PartialNeeds, where the packet's type has them).
func (r *Rule) CutHeaders() (bool, []string) {
	switch p := r.Property.(type) {
	case Each:
		return p.Partial, p.PartialNeeds
	case AtMost:
		return p.Partial, p.PartialNeeds
	}
	return false, nil
}
