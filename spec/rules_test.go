package spec

import (
	"strings"
	"testing"
)

// ruleIDs returns the IDs of rules.
func ruleIDs(rules []*Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.ID
	}
	return out
}

// TestRulesValidate: every rule of every area validates, IDs are unique
// and sorted, and every profile a rule names exists.
func TestRulesValidate(t *testing.T) {
	rules := Rules()
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	areas := map[string]bool{}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		if i > 0 && rules[i-1].ID >= r.ID {
			t.Errorf("rules out of order or duplicated: %s before %s", rules[i-1].ID, r.ID)
		}
		for _, p := range r.Profiles {
			if _, err := LookupProfile(p); err != nil {
				t.Errorf("%s names profile %q: %v", r.ID, p, err)
			}
		}
		if r.Area() == "" {
			t.Errorf("%s: no area", r.ID)
		}
		areas[r.Area()] = true
	}
	// One area per rules_<area>.go file.
	for _, a := range []string{"wire", "id", "unsched", "grant"} {
		if !areas[a] {
			t.Errorf("no rules in area %q", a)
		}
	}
	// Each area function on its own holds distinct IDs of its own area.
	for _, f := range ruleSets {
		seen := map[string]bool{}
		for _, r := range f() {
			if seen[r.ID] {
				t.Errorf("duplicate rule ID %s", r.ID)
			}
			seen[r.ID] = true
		}
	}
}

// TestRuleValidateRejects: Validate catches the malformed rules Rules()
// would panic on.
func TestRuleValidateRejects(t *testing.T) {
	good := func() *Rule {
		return &Rule{ID: "HOMA-TEST-001", Level: Must, Statement: "s", Source: "src", Property: Each{Check: nil}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("good rule: %v", err)
	}
	for name, mod := range map[string]func(*Rule){
		"id":       func(r *Rule) { r.ID = "HOMA-TEST-1" },
		"lower id": func(r *Rule) { r.ID = "homa-test-001" },
		"level":    func(r *Rule) { r.Level = 0 },
		"stmt":     func(r *Rule) { r.Statement = "" },
		"source":   func(r *Rule) { r.Source = "" },
		"property": func(r *Rule) { r.Property = nil },
		"profile":  func(r *Rule) { r.Profiles = []string{"linux", "bsd"} },
	} {
		r := good()
		mod(r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, r)
		}
	}
}

// The IDs this package's tests cover (rules_wire/id/unsched/grant.go).
var (
	wireIDs = []string{"HOMA-WIRE-001", "HOMA-WIRE-002", "HOMA-WIRE-003", "HOMA-WIRE-004", "HOMA-WIRE-005", "HOMA-WIRE-006", "HOMA-WIRE-007", "HOMA-WIRE-008",
		"HOMA-WIRE-009", "HOMA-WIRE-010", "HOMA-WIRE-011", "HOMA-WIRE-012", "HOMA-WIRE-013", "HOMA-WIRE-014", "HOMA-WIRE-015", "HOMA-WIRE-016"}
	grantIDs = []string{"HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-004", "HOMA-GRANT-005", "HOMA-GRANT-006", "HOMA-GRANT-007", "HOMA-GRANT-008", "HOMA-GRANT-009", "HOMA-GRANT-010", "HOMA-GRANT-011",
		"HOMA-GRANT-012", "HOMA-GRANT-013", "HOMA-GRANT-015", "HOMA-GRANT-016", "HOMA-GRANT-018", "HOMA-GRANT-019", "HOMA-GRANT-020", "HOMA-GRANT-021", "HOMA-GRANT-022", "HOMA-GRANT-023", "HOMA-GRANT-024"}
	idIDs      = []string{"HOMA-ID-001", "HOMA-ID-002", "HOMA-ID-003", "HOMA-ID-004", "HOMA-ID-005", "HOMA-ID-006"}
	unschedIDs = []string{"HOMA-UNSCHED-001", "HOMA-UNSCHED-002"}
)

func wantIDs(t *testing.T, got []*Rule, want []string) {
	t.Helper()
	if g := strings.Join(ruleIDs(got), ","); g != strings.Join(want, ",") {
		t.Errorf("selected %s, want %s", g, strings.Join(want, ","))
	}
}

// TestSelectGlobs: path.Match globs, comma lists, any case, blanks around
// the commas.
func TestSelectGlobs(t *testing.T) {
	all := Rules()
	sel := func(globs string) []*Rule {
		t.Helper()
		rs, err := Select(all, globs, 0, "linux")
		if err != nil {
			t.Fatalf("Select(%q): %v", globs, err)
		}
		return rs
	}
	wantIDs(t, sel("HOMA-GRANT-*"), grantIDs)
	wantIDs(t, sel("HOMA-WIRE-*"), wireIDs)
	wantIDs(t, sel("homa-grant-*"), grantIDs)
	wantIDs(t, sel("Homa-Unsched-00?"), unschedIDs)
	wantIDs(t, sel("HOMA-ID-*,HOMA-UNSCHED-*"), append(append([]string{}, idIDs...), unschedIDs...))
	wantIDs(t, sel(" homa-wire-008 , HOMA-WIRE-00[12]"), []string{"HOMA-WIRE-001", "HOMA-WIRE-002", "HOMA-WIRE-008"})
	wantIDs(t, sel("HOMA-GRANT-003,HOMA-GRANT-0*"), grantIDs) // overlapping globs select once
	linux := 0
	for _, r := range all {
		if r.AppliesTo("linux") {
			linux++
		}
	}
	if got := sel(""); len(got) != linux {
		t.Errorf("empty glob selected %d of the %d linux rules", len(got), linux)
	}
}

// TestSelectErrors: a glob matching no rule, or a malformed one, is an
// error naming it.
func TestSelectErrors(t *testing.T) {
	all := Rules()
	for _, globs := range []string{"HOMA-NOPE-*", "HOMA-GRANT-*,HOMA-GRANT-999", "GRANT-*", "HOMA-[", "HOMA-GRANT-*,"} {
		rs, err := Select(all, globs, 0, "linux")
		if err == nil {
			t.Errorf("Select(%q) = %v, want an error", globs, ruleIDs(rs))
			continue
		}
		if !strings.Contains(err.Error(), "pattern") {
			t.Errorf("Select(%q): error %q does not name the pattern", globs, err)
		}
	}
}

// TestSelectSome: a selection that judges nothing is an error saying
// which rules the pattern matched and why they fell out (before, Select
// returned no rule and no error: check passed "PASS 0 rules"); one that
// keeps a rule is Select's.
func TestSelectSome(t *testing.T) {
	all := Rules()
	if _, err := SelectSome(all, "HOMA-ACK-011", Must, ""); err == nil || !strings.Contains(err.Error(), `"HOMA-ACK-011" matches only SHOULD rules (HOMA-ACK-011), none at level must`) {
		t.Errorf("SHOULD rule at level must: %v", err)
	}
	var upstreamOut *Rule
	for _, r := range all {
		if !r.AppliesTo("upstream") {
			upstreamOut = r
			break
		}
	}
	if _, err := SelectSome(all, upstreamOut.ID, 0, "upstream"); err == nil || !strings.Contains(err.Error(), "matches no rule profile upstream judges ("+upstreamOut.ID+" apply to other profiles)") {
		t.Errorf("%s under upstream: %v", upstreamOut.ID, err)
	}
	rs, err := SelectSome(all, "HOMA-ACK-011,HOMA-ACK-001", Must, "")
	if err != nil || len(rs) != 1 || rs[0].ID != "HOMA-ACK-001" {
		t.Errorf("with a MUST rule: %v %v, want HOMA-ACK-001", ruleIDs(rs), err)
	}
	if rs, err := SelectSome(all, "", Must, ""); err != nil || len(rs) == 0 {
		t.Errorf("all MUST rules: %d, %v", len(rs), err)
	}
}

// TestSelectLevel: Must selects only MUST rules; Should (or 0) selects
// MUST and SHOULD.
func TestSelectLevel(t *testing.T) {
	all := Rules()
	must, err := Select(all, "HOMA-GRANT-*", Must, "linux")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range must {
		if r.Level != Must {
			t.Errorf("Must selected %s (%v)", r.ID, r.Level)
		}
	}
	var wantMust []string
	for _, id := range grantIDs {
		if id != "HOMA-GRANT-006" && id != "HOMA-GRANT-011" && id != "HOMA-GRANT-013" && id != "HOMA-GRANT-018" && id != "HOMA-GRANT-020" && id != "HOMA-GRANT-022" { // the SHOULD rules
			wantMust = append(wantMust, id)
		}
	}
	wantIDs(t, must, wantMust)
	should, err := Select(all, "HOMA-GRANT-*", Should, "linux")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, should, grantIDs)
	everyMust, _ := Select(all, "", Must, "linux")
	everyAny, _ := Select(all, "", 0, "linux")
	nShould := 0
	for _, r := range everyAny {
		if r.Level == Should {
			nShould++
		}
	}
	if nShould == 0 || len(everyMust) != len(everyAny)-nShould {
		t.Errorf("Must selected %d of %d rules, %d of them SHOULD", len(everyMust), len(everyAny), nShould)
	}
}

// TestSelectProfile: rules outside a profile are dropped without error:
// upstream has no GRANT (nor unscheduled limit, priorities, or the
// TCP-imitation marks); only main sets control doff 0x50.
func TestSelectProfile(t *testing.T) {
	all := Rules()
	up, err := Select(all, "HOMA-GRANT-*", 0, "upstream")
	if err != nil || len(up) != 0 {
		t.Errorf("upstream GRANT rules: %v, %v; want none and no error", ruleIDs(up), err)
	}
	up, err = Select(all, "HOMA-WIRE-*,HOMA-ID-*,HOMA-UNSCHED-*", 0, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, up, []string{"HOMA-ID-001", "HOMA-ID-002", "HOMA-ID-003", "HOMA-ID-004", "HOMA-ID-005", "HOMA-ID-006",
		"HOMA-WIRE-001", "HOMA-WIRE-002", "HOMA-WIRE-003", "HOMA-WIRE-008", "HOMA-WIRE-009", "HOMA-WIRE-010", "HOMA-WIRE-011", "HOMA-WIRE-013", "HOMA-WIRE-014", "HOMA-WIRE-015", "HOMA-WIRE-016"})
	for _, r := range all {
		if r.Area() == "grant" && r.AppliesTo("upstream") {
			t.Errorf("%s applies to upstream, which has no GRANT", r.ID)
		}
	}
	l24, err := Select(all, "HOMA-WIRE-*", 0, "linux-2024")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, l24, []string{"HOMA-WIRE-001", "HOMA-WIRE-002", "HOMA-WIRE-003", "HOMA-WIRE-004", "HOMA-WIRE-006", "HOMA-WIRE-007", "HOMA-WIRE-008",
		"HOMA-WIRE-010", "HOMA-WIRE-011", "HOMA-WIRE-012", "HOMA-WIRE-013", "HOMA-WIRE-014", "HOMA-WIRE-015", "HOMA-WIRE-016"})
	g24, _ := Select(all, "HOMA-GRANT-*", 0, "linux-2024")
	wantIDs(t, g24, []string{"HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-004", "HOMA-GRANT-005", "HOMA-GRANT-006", "HOMA-GRANT-007", "HOMA-GRANT-008", "HOMA-GRANT-009", "HOMA-GRANT-010", "HOMA-GRANT-011",
		"HOMA-GRANT-012", "HOMA-GRANT-013", "HOMA-GRANT-014", "HOMA-GRANT-015", "HOMA-GRANT-016", "HOMA-GRANT-019", "HOMA-GRANT-020", "HOMA-GRANT-021", "HOMA-GRANT-024"})

	// NewChecker drops rules of other profiles too, so the report has
	// no entry for them.
	c := NewChecker("upstream", profileForTest(t, "upstream").Params, all)
	for _, rr := range c.Finish().Rules {
		if strings.HasPrefix(rr.ID, "HOMA-GRANT-") {
			t.Errorf("upstream report holds %s", rr.ID)
		}
	}
}

func profileForTest(t *testing.T, name string) Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestChargesReceiver(t *testing.T) {
	got := map[string]bool{}
	for _, r := range Rules() {
		if r.ChargesReceiver() {
			got[r.ID] = true
		}
	}
	want := []string{"HOMA-RESEND-002", "HOMA-RESEND-007", "HOMA-RESEND-016", "HOMA-ACK-002", "HOMA-ACK-009", "HOMA-GRANT-010", "HOMA-GRANT-019", "HOMA-CUTOFF-002", "HOMA-SEND-001",
		"HOMA-SEND-004"} // an Each rule whose packet proves its receiver's fault
	for _, id := range want {
		if !got[id] {
			t.Errorf("%s charges the receiver of its frame, but ChargesReceiver is false", id)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rules charge the receiver (%v), want the %d", len(got), got, len(want))
	}
	for _, id := range []string{"HOMA-RESEND-001", "HOMA-GRANT-002", "HOMA-ACK-001"} {
		if got[id] {
			t.Errorf("%s is charged to the sender of its frame", id)
		}
	}
}
