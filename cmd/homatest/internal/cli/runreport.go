package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/report/html"
	"github.com/homatest/homatest/spec/wire"
)

// reportFile is the report page every run folder gets.
const reportFile = "report.html"

// areaCounts counts specs by area and state, for the text table and the
// report page.
type areaCounts struct{ passed, failed, unsupported, skipped int }

func countAreas(specs []conformance.SpecResult) (areas []string, rows map[string]*areaCounts) {
	rows = map[string]*areaCounts{}
	for _, s := range specs {
		r := rows[s.Area]
		if r == nil {
			r = &areaCounts{}
			rows[s.Area] = r
			areas = append(areas, s.Area)
		}
		switch s.State {
		case "passed":
			r.passed++
		case "failed", "error":
			r.failed++
		case "unsupported":
			r.unsupported++
		default:
			r.skipped++
		}
	}
	sort.Strings(areas)
	return areas, rows
}

// runPage builds the report page of the passes: verdict, specs by area and
// by rule, and every failed spec with its rules' statements, its failure,
// the sequence graph of the worst RPC of its capture, its rerun command
// and a link to its annotated capture.
func (o *runOpts) runPage(passes []*conformance.Result) *html.Page {
	p := &html.Page{Title: "homatest run", Pass: failedPasses(passes) == 0, Command: "homatest " + strings.Join(os.Args[1:], " ")}
	if len(passes) > 0 {
		p.Subtitle = passes[0].Env
	}
	var all []conformance.SpecResult
	failed := 0
	for _, ps := range passes {
		all = append(all, ps.Specs...)
		failed += ps.Failed()
	}
	p.Verdict = "PASS"
	if !p.Pass {
		p.Verdict = fmt.Sprintf("FAIL: %d of %d specs failed", failed, len(all))
		if len(passes) > 1 {
			p.Verdict += fmt.Sprintf(" (%d of %d passes)", failedPasses(passes), len(passes))
		}
	}
	p.Facts = append(p.Facts, html.Fact{Name: "passes", Value: fmt.Sprint(len(passes))}, html.Fact{Name: "implementation", Value: o.impl},
		html.Fact{Name: "environment", Value: o.env}, html.Fact{Name: "run folder", Value: o.artifacts})
	if o.fault != "" {
		p.Facts = append(p.Facts, html.Fact{Name: "fault knob", Value: o.fault})
	}
	for i, ps := range passes {
		p.Facts = append(p.Facts, html.Fact{Name: fmt.Sprintf("pass %d", i+1), Value: fmt.Sprintf("%d specs in %.1fs", len(ps.Specs), ps.Duration.Seconds())})
	}
	areas, rows := countAreas(all)
	t := html.Table{Title: "Specs by area", Head: []string{"area", "passed", "failed", "unsupported", "skipped"}}
	for _, a := range areas {
		r := rows[a]
		t.Rows = append(t.Rows, html.Row{Bad: r.failed > 0, Cells: []string{a, fmt.Sprint(r.passed), fmt.Sprint(r.failed), fmt.Sprint(r.unsupported), fmt.Sprint(r.skipped)}})
	}
	p.Tables = append(p.Tables, t)
	type ruleRow struct {
		level          string
		specs, ok, bad int
	}
	byRule := map[string]*ruleRow{}
	var rules []string
	for _, s := range all {
		for _, id := range s.Rules {
			r := byRule[id]
			if r == nil {
				r = &ruleRow{level: s.Level}
				byRule[id] = r
				rules = append(rules, id)
			}
			r.specs++
			switch s.State {
			case "passed":
				r.ok++
			case "failed", "error":
				r.bad++
			}
		}
	}
	sort.Strings(rules)
	t = html.Table{Title: "Specs by rule", Head: []string{"rule", "level", "specs", "passed", "failed"}}
	for _, id := range rules {
		r := byRule[id]
		t.Rows = append(t.Rows, html.Row{Bad: r.bad > 0, Cells: []string{id, r.level, fmt.Sprint(r.specs), fmt.Sprint(r.ok), fmt.Sprint(r.bad)}})
	}
	p.Tables = append(p.Tables, t)
	graphs := 0
	for i, ps := range passes {
		for _, s := range ps.Specs {
			if s.State == "unsupported" {
				p.Notes = append(p.Notes, fmt.Sprintf("unsupported: %s: %s", s.Name, s.Failure))
			}
			if s.State != "failed" && s.State != "error" {
				continue
			}
			f := html.Failure{Title: s.Name, Rules: s.Rules, Level: s.Level, Expected: html.Statements(s.Rules...),
				Observed: strings.TrimSpace(s.Failure), Rerun: o.rerun(s)}
			if len(passes) > 1 {
				f.Title = fmt.Sprintf("pass %d: %s", i+1, s.Name)
			}
			if s.Capture != "" {
				f.Links = append(f.Links, html.Link{Text: filepath.Base(s.Capture) + " (the spec's packets; findings as packet comments)",
					Href: html.Rel(o.artifacts, s.Capture)})
				if graphs < html.MaxGraphs {
					if c, err := html.ReadCapture(s.Capture, wire.VersionAuto); err == nil {
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
