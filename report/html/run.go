package html

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// RunInput says how homatest run ran, for RunPage.
type RunInput struct {
	// Impl, Env and Fault are the --impl, --env and --fault values.
	Impl, Env, Fault string
	// Dir is the run folder (the page's folder: links are relative to it).
	Dir string
	// Command is the command line.
	Command string
	// Params are the --param overrides, NAME=VALUE, as given.
	Params []string
	// Rerun returns the command that reruns one spec.
	Rerun func(conformance.SpecResult) string
	// Strict: failed SHOULD specs fail the run (homatest run --strict);
	// otherwise they are warnings.
	Strict bool
}

// RunPage builds the report page of homatest run's passes: verdict, specs by area and
// by rule, and every failed spec with its rules' statements, its failure,
// the sequence graph of the worst RPC of its capture, its rerun command
// and a link to its annotated capture.
func RunPage(passes []*conformance.Result, in RunInput) *Page {
	tally := conformance.Count(passes, in.Strict)
	rerun := in.Rerun
	if rerun == nil {
		rerun = func(conformance.SpecResult) string { return "" }
	}
	p := &Page{Title: "homatest run", Pass: tally.Verdict() == "pass", Command: in.Command}
	if len(passes) > 0 {
		p.Subtitle = passes[0].Env
	}
	var all []conformance.SpecResult
	for _, ps := range passes {
		all = append(all, ps.Specs...)
	}
	switch tally.Verdict() {
	case "fail":
		p.Verdict = fmt.Sprintf("FAIL: %d of %s failed", tally.Failing, plural.Of(len(all), "spec", "specs"))
		if len(passes) > 1 {
			p.Verdict += fmt.Sprintf(" (%d of %d passes)", tally.FailedPasses, len(passes))
		}
	case "incomplete":
		p.Incomplete = true
		p.Verdict = fmt.Sprintf("INCOMPLETE: %s run, %d not run (unsupported)", plural.Of(tally.Run, "spec", "specs"), tally.Unsupported)
		switch {
		case tally.Inconclusive > 0:
			p.Verdict += fmt.Sprintf(", %d not judged (timing-inconclusive in every rerun)", tally.Inconclusive)
		case tally.Run > 0:
			p.Verdict += "; --strict fails on specs not run"
		}
	default:
		p.Verdict = "PASS"
		if tally.Warned > 0 {
			p.Verdict = fmt.Sprintf("PASS with %s (--strict fails on them)", plural.Of(tally.Warned, "SHOULD warning", "SHOULD warnings"))
		}
	}
	p.Facts = append(p.Facts, Fact{Name: "passes", Value: fmt.Sprint(len(passes))}, Fact{Name: "implementation", Value: in.Impl},
		Fact{Name: "environment", Value: in.Env}, Fact{Name: "run folder", Value: in.Dir})
	if in.Fault != "" {
		p.Facts = append(p.Facts, Fact{Name: "fault knob", Value: in.Fault})
	}
	if len(in.Params) > 0 {
		p.Facts = append(p.Facts, Fact{Name: "parameters overridden (--param)", Value: strings.Join(in.Params, " ")})
	}
	for i, ps := range passes {
		p.Facts = append(p.Facts, Fact{Name: fmt.Sprintf("pass %d", i+1), Value: fmt.Sprintf("%s in %.1fs", plural.Of(len(ps.Specs), "spec", "specs"), ps.Duration.Seconds())})
	}
	// Counted as the verdict line counts them (conformance.Counts): a
	// warning is not a failure, nor a spec not judged a skipped one.
	t := Table{Title: "Specs by area", Head: []string{"area", "passed", "failed", "warned", "unsupported", "not judged", "skipped"}}
	for _, r := range conformance.CountAreas(all, in.Strict) {
		t.Rows = append(t.Rows, Row{Bad: r.Failed > 0, Cells: []string{r.Area, fmt.Sprint(r.Passed), fmt.Sprint(r.Failed), fmt.Sprint(r.Warned),
			fmt.Sprint(r.Unsupported), fmt.Sprint(r.Inconclusive), fmt.Sprint(r.Skipped)}})
	}
	p.Tables = append(p.Tables, t)
	type ruleRow struct {
		level                  string
		specs, ok, bad, warned int
	}
	byRule := map[string]*ruleRow{}
	var rules []string
	for _, s := range all {
		for _, id := range s.Rules {
			r := byRule[id]
			if r == nil {
				r = &ruleRow{level: s.Level} // a rule the rule book lacks: its spec's
				if rule := spec.RuleByID(id); rule != nil {
					r.level = rule.Level.String()
				}
				byRule[id] = r
				rules = append(rules, id)
			}
			r.specs++
			switch s.Outcome(in.Strict) {
			case "passed":
				r.ok++
			case "failed":
				r.bad++
			case "warned":
				r.warned++
			}
		}
	}
	sort.Strings(rules)
	t = Table{Title: "Specs by rule", Head: []string{"rule", "level", "specs", "passed", "failed", "warned"}}
	for _, id := range rules {
		r := byRule[id]
		t.Rows = append(t.Rows, Row{Bad: r.bad > 0, Cells: []string{id, r.level, fmt.Sprint(r.specs), fmt.Sprint(r.ok), fmt.Sprint(r.bad), fmt.Sprint(r.warned)}})
	}
	p.Tables = append(p.Tables, t)
	graphs := 0
	for i, ps := range passes {
		// The unsupported specs, one line per reason (as run's text).
		for _, l := range conformance.Unsupported(ps.Specs) {
			if len(passes) > 1 {
				l = fmt.Sprintf("pass %d: %s", i+1, l)
			}
			p.Notes = append(p.Notes, l)
		}
		for _, s := range ps.Specs {
			// Each spec as the tables count it (conformance.Counts).
			outcome := s.Outcome(in.Strict)
			if outcome == "inconclusive" {
				l := "NOT JUDGED " + s.Name + ": " + s.Failure
				if len(passes) > 1 {
					l = fmt.Sprintf("pass %d: %s", i+1, l)
				}
				p.Notes = append(p.Notes, l)
			}
			if outcome == "warned" {
				// A failed SHOULD spec is a warning without --strict, as
				// in run's text and the verdict: a note, not a failure.
				l := "WARN (SHOULD) " + s.Name + ": " + observed(s)
				if len(passes) > 1 {
					l = fmt.Sprintf("pass %d: %s", i+1, l)
				}
				p.Notes = append(p.Notes, l)
				continue
			}
			if outcome != "failed" {
				continue
			}
			f := Failure{Title: s.Name, Rules: s.Rules, Level: s.Level, Observed: observed(s), Rerun: rerun(s)}
			want := slices.Clone(s.Rules)
			named := s.NamedRules()
			for _, r := range named {
				// A rule other than its own broke it: name the rules
				// the failure names, and what they require.
				if !slices.Contains(s.Rules, r) {
					f.Violated = named
					want = append(want, r)
				}
			}
			f.Expected = Statements(want...)
			if len(passes) > 1 {
				f.Title = fmt.Sprintf("pass %d: %s", i+1, s.Name)
			}
			if s.Capture != "" && s.ShortName() == conformance.RunCaptureShort {
				// The pass's whole capture: its findings are homatest
				// check's, at the frames the failure names; no one RPC
				// to draw.
				f.Links = append(f.Links, Link{Text: filepath.Base(s.Capture) + " (the pass's whole capture; homatest check on it shows the findings)",
					Href: Rel(in.Dir, s.Capture)})
			} else if s.Capture != "" {
				f.Links = append(f.Links, Link{Text: filepath.Base(s.Capture) + " (the spec's packets; findings as packet comments)",
					Href: Rel(in.Dir, s.Capture)})
				if graphs < MaxGraphs {
					if c, err := ReadCapture(s.Capture, wire.VersionAuto); err == nil {
						if r := c.Worst(); r != nil {
							if pic, err := c.Graph(r); err == nil {
								f.Picture = pic
								graphs++
							}
						}
					}
				}
			}
			p.Failures = append(p.Failures, f)
		}
	}
	return p
}

// observed is what spec s observed, as run's text gives it: its failure,
// then its SHOULD findings of other rules (SpecResult.OtherShould), one
// line each.
func observed(s conformance.SpecResult) string {
	lines := []string{}
	if f := strings.TrimSpace(s.Failure); f != "" {
		lines = append(lines, f)
	}
	for _, l := range s.OtherShould {
		lines = append(lines, s.ShouldLine(l))
	}
	return strings.Join(lines, "\n")
}
