package html

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// MaxGraphs bounds the sequence graphs a page draws (one per RPC, the
// first failures first); later failures get none.
const MaxGraphs = 8

// Statements returns the statements of the rules ids, one "ID: statement"
// line each (what the spec requires), from the rule registry.
func Statements(ids ...string) string {
	var lines []string
	for _, id := range ids {
		if r := spec.RuleByID(id); r != nil {
			lines = append(lines, fmt.Sprintf("%s (%s): %s", id, r.Level, r.Statement))
		}
	}
	return strings.Join(lines, "\n")
}

// CheckFile is what homatest check found in one capture.
type CheckFile struct {
	// File is the capture; Error why it could not be checked.
	File  string
	Error string
	// Damaged says where a capture cut short stops (check.FileReport's
	// Damaged): Report covers the frames before it, and the check fails.
	Damaged string
	// Report is the check's result; Homa says how many Homa frames were
	// read, in the words of check's text report
	// (check.FileReport.HomaCount: packets, or a ports capture's frames,
	// each packet two), "" when not counted.
	Report *spec.Report
	Homa   string
	// Wire is the wire version the capture was read with.
	Wire wire.Version
	// Annotated is the capture written with the findings as comments
	// (homatest check --annotate), "" for none.
	Annotated string
	// Rerun returns the command that checks this capture for one rule.
	Rerun func(rule string) string
	// Strict: SHOULD violations fail the check too (check --strict);
	// otherwise they are warnings.
	Strict bool
	// Incomplete, when set, says why the check could not judge the
	// capture whole (check's verdict INCOMPLETE, exit 2: the snap length
	// hid headers, one direction only, nothing judged ...). Damaged
	// without Incomplete counts as incomplete too.
	Incomplete string
	// Tester, when set, says whether a finding is charged to a tester
	// (check.FileReport.TesterCharged): neither a failure nor a warning
	// of the implementation.
	Tester func(*spec.Finding) bool
}

// CheckPage builds the page of a homatest check over files: the verdict,
// one rule table per file, every violation that fails the check (MUST,
// and SHOULD with Strict) with the rule's statement against the finding,
// the sequence graph of its RPC (at most MaxGraphs) and the command that
// checks for that rule alone, and the SHOULD warnings and the findings
// charged to a tester as one line each. The verdict counts what fails the
// check, as check's text, JSON and JUnit outputs do: FAIL for violations
// or a file not checked, else INCOMPLETE for a file not judged whole. dir is where the page
// goes (links are made relative to it); command the command line.
func CheckPage(files []CheckFile, dir, command string) *Page {
	p := &Page{Title: "homatest check", Command: command, Pass: true}
	var names []string
	graphs, must, should, warned, tester, unchecked := 0, 0, 0, 0, 0, 0
	var incomplete []string
	for _, f := range files {
		names = append(names, f.File)
		if f.Error != "" {
			p.Pass = false
			unchecked++
			p.Failures = append(p.Failures, Failure{Title: f.File + ": not checked", Observed: f.Error})
			continue
		}
		switch {
		case f.Incomplete != "":
			p.Pass = false
			incomplete = append(incomplete, f.Incomplete)
			p.Failures = append(p.Failures, Failure{Title: f.File + ": not judged whole", Observed: f.Incomplete})
		case f.Damaged != "":
			p.Pass = false
			incomplete = append(incomplete, f.Damaged)
			p.Failures = append(p.Failures, Failure{Title: f.File + ": checked up to the damage", Observed: f.Damaged})
		}
		rep := f.Report
		fm, fs, ft := 0, 0, 0
		for i := range rep.Violations {
			switch v := &rep.Violations[i]; {
			case f.Tester != nil && f.Tester(v):
				ft++
			case v.Level == spec.Must:
				fm++
			default:
				fs++
			}
		}
		charged := ""
		if ft > 0 {
			charged = fmt.Sprintf(", %d charged to the tester", ft)
		}
		homa := ""
		if f.Homa != "" {
			homa = f.Homa + ", "
		}
		p.Facts = append(p.Facts, Fact{f.File, fmt.Sprintf("profile %s, %s%d RPCs, %d MUST and %d SHOULD violations%s",
			rep.Profile, homa, rep.RPCs, fm, fs, charged)})
		p.Tables = append(p.Tables, AreaTable("Areas: "+f.File, rep.Rules))
		t := Table{Title: "Rules: " + f.File, Head: []string{"rule", "level", "checked", "passed", "violated", "inconclusive", "tolerance"}}
		for _, rr := range rep.Rules {
			tol := "-"
			if rr.MaxSlack > 0 {
				tol = rr.MaxSlack.String()
			}
			t.Rows = append(t.Rows, Row{Bad: rr.Violated > 0, Cells: []string{rr.ID, rr.Level.String(), fmt.Sprint(rr.Checked),
				fmt.Sprint(rr.Passed), fmt.Sprint(rr.Violated), fmt.Sprint(rr.Inconclusive), tol}})
		}
		p.Tables = append(p.Tables, t)
		var links []Link
		if f.Annotated != "" {
			links = append(links, Link{Text: f.Annotated + " (every finding as a packet comment)", Href: Rel(dir, f.Annotated)})
			p.Links = append(p.Links, links...)
		}
		var capture *Capture
		drawn := map[spec.RPCKey]*Picture{}
		for i := range rep.Violations {
			v := &rep.Violations[i]
			where := fmt.Sprintf("%s (%s) at frame %d of %s", v.Rule, v.Level, v.Frame, f.File)
			switch {
			case f.Tester != nil && f.Tester(v):
				tester++
				p.Notes = append(p.Notes, "charged to the tester (a packet it sent), not the implementation: "+where+": "+annotate.Comment(*v))
				continue
			case v.Level != spec.Must && !f.Strict:
				warned++
				p.Notes = append(p.Notes, "warning: "+where+": "+annotate.Comment(*v))
				continue
			case v.Level == spec.Must:
				must++
			default:
				should++
			}
			p.Pass = false
			fl := Failure{Title: fmt.Sprintf("%s at frame %d of %s", v.Rule, v.Frame, f.File), Rules: []string{v.Rule},
				Level: v.Level.String(), Expected: Statements(v.Rule), Observed: annotate.Comment(*v), Links: links}
			if f.Rerun != nil {
				fl.Rerun = f.Rerun(v.Rule)
			}
			if v.RPC != nil {
				if pic, ok := drawn[*v.RPC]; ok {
					fl.Picture = pic
				} else if graphs < MaxGraphs {
					if capture == nil {
						capture, _ = ReadCapture(f.File, f.Wire)
					}
					if r := capture.Find(*v.RPC); r != nil {
						if pic, err := capture.Graph(r); err == nil {
							graphs++
							drawn[*v.RPC], fl.Picture = pic, pic
						}
					}
				}
			}
			p.Failures = append(p.Failures, fl)
		}
	}
	p.Subtitle = strings.Join(names, ", ")
	var parts []string
	switch {
	case should > 0:
		parts = append(parts, fmt.Sprintf("%d MUST and %d SHOULD violations (--strict)", must, should))
	case must > 0:
		parts = append(parts, plural.Of(must, "MUST violation", "MUST violations"))
	}
	if unchecked > 0 {
		parts = append(parts, plural.Of(unchecked, "file", "files")+" not checked")
	}
	if warned > 0 {
		parts = append(parts, plural.Of(warned, "SHOULD warning", "SHOULD warnings"))
	}
	switch {
	case !p.Pass && len(parts) == 0 && len(incomplete) == 1:
		p.Verdict, p.Incomplete = "INCOMPLETE: "+incomplete[0], true
	case !p.Pass && len(parts) == 0:
		p.Verdict, p.Incomplete = "INCOMPLETE: "+plural.Of(len(incomplete), "file", "files")+" not judged whole", true
	case !p.Pass:
		p.Verdict = "FAIL: " + strings.Join(parts, "; ")
	case warned > 0:
		p.Verdict = "PASS with warnings: " + plural.Of(warned, "SHOULD violation", "SHOULD violations")
	default:
		p.Verdict = "PASS"
	}
	return p
}

// BenchPage builds the page of a homatest bench: the setup, the slowdown
// plot, the per-transport and per-bucket tables, the warnings, and links to
// the run folder's files (relative to dir, the run folder). The verdict
// fails when an RPC failed, and says NOT COMPARABLE when a transport did not
// keep up (bench.Report.Saturated).
func BenchPage(r *bench.Report, dir, command string, files []string) (*Page, error) {
	var plot bytes.Buffer
	if err := r.WritePlot(&plot, "png"); err != nil {
		return nil, err
	}
	p := &Page{Title: "homatest bench", Command: command, Pass: true, Notes: r.Warnings,
		Subtitle: r.Setup(false), // the implementation is a fact of its own
		Pictures: []Picture{{Caption: "slowdown by message size (p99 solid, p50 dashed)", PNG: plot.Bytes()}}}
	if r.Impl != "" {
		p.Facts = append(p.Facts, Fact{"homa implementation", r.Impl})
	}
	if r.Env == "sim" {
		p.Facts = append(p.Facts, Fact{"hosts", "simulated (virtual time, modelled host processing): slowdowns are the model's, not a machine's"})
	}
	if len(r.Params) > 0 {
		var kv []string
		for k, v := range r.Params {
			kv = append(kv, fmt.Sprintf("%s %v", k, v))
		}
		p.Facts = append(p.Facts, Fact{"homa params", strings.Join(slices.Sorted(slices.Values(kv)), ", ")})
	}
	errs := 0
	for _, s := range r.Transports {
		errs += s.Errors
		if s.FirstError != "" {
			p.Failures = append(p.Failures, Failure{Title: fmt.Sprintf("%s: %d RPCs failed", s.Transport, s.Errors), Observed: "first error: " + s.FirstError})
		}
	}
	if r.Artifacts != "" {
		p.Facts = append(p.Facts, Fact{"run folder", r.Artifacts})
	}
	for _, f := range files {
		p.Links = append(p.Links, Link{Text: Rel(dir, f), Href: Rel(dir, f)})
	}
	head, rows := r.TransportTable()
	p.Tables = append(p.Tables, table("Transports", head, rows))
	head, rows = r.BucketTable()
	p.Tables = append(p.Tables, table("Slowdown by message size (buckets of equal workload probability)", head, rows))
	p.Verdict = "DONE"
	switch {
	case errs > 0:
		p.Pass, p.Verdict = false, "FAIL: "+plural.Of(errs, "RPC", "RPCs")+" failed"
	case len(r.Saturated) > 0:
		p.Pass, p.Verdict = false, "NOT COMPARABLE: "+strings.Join(r.Saturated, " and ")+" did not keep up with the offered load"
	}
	return p, nil
}

// AreaTable sums rule results by area (the AREA of HOMA-AREA-NNN): rules,
// rules exercised, checks, violations, inconclusive.
func AreaTable(title string, rules []spec.RuleResult) Table {
	type sum struct{ rules, exercised, checked, violated, inconclusive int }
	by := map[string]*sum{}
	var areas []string
	for _, rr := range rules {
		parts := strings.Split(rr.ID, "-")
		area := rr.ID
		if len(parts) == 3 {
			area = strings.ToLower(parts[1])
		}
		s := by[area]
		if s == nil {
			s = &sum{}
			by[area] = s
			areas = append(areas, area)
		}
		s.rules++
		if rr.Checked > 0 {
			s.exercised++
		}
		s.checked += rr.Checked
		s.violated += rr.Violated
		s.inconclusive += rr.Inconclusive
	}
	slices.Sort(areas)
	t := Table{Title: title, Head: []string{"area", "rules", "exercised", "checks", "violations", "inconclusive"}}
	for _, a := range areas {
		s := by[a]
		t.Rows = append(t.Rows, Row{Bad: s.violated > 0, Cells: []string{a, fmt.Sprint(s.rules), fmt.Sprint(s.exercised),
			fmt.Sprint(s.checked), fmt.Sprint(s.violated), fmt.Sprint(s.inconclusive)}})
	}
	return t
}

func table(title string, head []string, rows [][]string) Table {
	t := Table{Title: title, Head: head}
	for _, r := range rows {
		t.Rows = append(t.Rows, Row{Cells: r})
	}
	return t
}
