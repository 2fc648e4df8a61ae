package spec

import (
	"strings"
	"testing"

	"github.com/homatest/homatest/spec/wire"
)

// TestFactCoverage: every fact of docs/homa-facts.md §4 has a rule or the
// reason no packet trace can judge it (never both), at least 95 % of the
// checkable facts have rules, and every fact a rule names exists.
func TestFactCoverage(t *testing.T) {
	cov := Coverage(Rules())
	if len(cov) != len(facts) || len(cov) < 57 {
		t.Fatalf("coverage has %d rows for %d facts", len(cov), len(facts))
	}
	seen := map[string]bool{}
	for _, c := range cov {
		if seen[c.Fact] {
			t.Errorf("fact %s twice", c.Fact)
		}
		seen[c.Fact] = true
		switch {
		case len(c.Rules) == 0 && c.Reason == "":
			t.Errorf("fact %s: no rule implements it and no reason says why it cannot be checked", c.Fact)
		case len(c.Rules) > 0 && c.Reason != "":
			t.Errorf("fact %s: rules %v and a not-checkable reason", c.Fact, c.Rules)
		}
	}
	checkable, implemented, _ := CoverageSummary(cov)
	if implemented*100 < checkable*95 {
		t.Errorf("%d of %d checkable facts implemented, want at least 95 %%", implemented, checkable)
	}
	for _, r := range Rules() {
		for _, f := range r.Facts {
			if !seen[f] {
				t.Errorf("%s names fact %s, which is not in the facts", r.ID, f)
			}
		}
	}
}

// TestWireCoverage: every field of every packet type of every wire
// version, and the IP fields HomaModule sets, has a rule constraining it
// or the reason it is free; every rule named exists; every packet type has
// its send conditions.
func TestWireCoverage(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules() {
		ids[r.ID] = true
	}
	rows := WireCoverage()
	got := map[string]bool{}
	for _, fc := range rows {
		got[fc.Type+"."+fc.Field] = true
		if len(fc.Rules) == 0 && fc.Free == "" {
			t.Errorf("%s.%s: no rule constrains it and no reason says it is free", fc.Type, fc.Field)
		}
		for _, r := range fc.Rules {
			if !ids[r] {
				t.Errorf("%s.%s: rule %s does not exist", fc.Type, fc.Field, r)
			}
		}
	}
	for k := range fieldRules {
		if !got[k] {
			t.Errorf("fieldRules has %s, which no layout has", k)
		}
	}
	for _, want := range []string{"*.sender_id", "DATA.seg.offset", "GRANT.resend_all", "ACK.acks", "IP.tos", "IP.ipv4_id", "IP.df"} {
		if !got[want] {
			t.Errorf("no row for %s", want)
		}
	}
	types := map[string]bool{}
	for _, sc := range SendConditions() {
		types[sc.Type] = true
		if len(sc.May) == 0 && len(sc.Must) == 0 && sc.Note == "" {
			t.Errorf("%s: no send condition", sc.Type)
		}
		for _, r := range append(append([]string{}, sc.May...), sc.Must...) {
			if !ids[r] {
				t.Errorf("%s send condition: rule %s does not exist", sc.Type, r)
			}
		}
	}
	for _, typ := range wire.AllTypes {
		if !types[typ.String()] {
			t.Errorf("no send conditions for %s", typ)
		}
	}
	if strings.Contains(WireCoverage()[0].Type, " ") {
		t.Errorf("bad type name %q", WireCoverage()[0].Type)
	}
}
