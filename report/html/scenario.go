package html

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/scenario"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// ScenarioPage builds the page of a scenario run from its result (the run
// folder res.Dir holds the page): load, latency and drops, the rules by
// area and one by one, the failed RPCs, and every violation with its
// rule's statement, the finding, the sequence graph of its RPC (from the
// capture its frame is in) and the commands that replay the run, with
// links to the run folder's captures (annotated with the violations).
func ScenarioPage(res *scenario.Result, command string) *Page {
	s := res.Summary
	p := &Page{Title: "homatest scenario run", Command: command, Pass: s.Verdict == scenario.VerdictPass,
		Subtitle: fmt.Sprintf("%s (seed %d, backend %s)", s.Name, s.Seed, s.Backend), Notes: append(append([]string(nil), s.Incomplete...), s.Warnings...)}
	p.Verdict = "PASS"
	if s.Verdict == scenario.VerdictIncomplete {
		p.Incomplete = true
		p.Verdict = "INCOMPLETE: " + s.IncompleteHeadline()
	} else if !p.Pass {
		var why []string
		if s.Failed > 0 {
			why = append(why, plural.Of(s.Failed, "failed RPC", "failed RPCs"))
		}
		if s.Violated > 0 {
			why = append(why, plural.Of(s.Violated, "violation", "violations"))
		}
		p.Verdict = "FAIL: " + strings.Join(why, ", ")
	}
	mbit := func(b float64) string { return fmt.Sprintf("%.1f Mbit/s", b/1e6) }
	p.Facts = []Fact{
		{"RPCs", fmt.Sprintf("%d: %d ok, %d failed in %.2fs", s.RPCs, s.OK, s.Failed, s.Elapsed.Seconds())},
		{"load", fmt.Sprintf("offered %s per server (%.0f%% of the link), completed RPCs carried %s (%.0f%%), busiest downlink %s (%.0f%%), goodput %s",
			mbit(s.OfferedBps), 100*s.OfferedLoad, mbit(s.DeliveredBps), 100*s.DeliveredLoad, mbit(s.BusiestDownlinkBps), 100*s.BusiestDownlinkLoad, mbit(s.GoodputBps))},
		{"latency", fmt.Sprintf("p50 %v, p99 %v, max %v", s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.Max.Round(time.Microsecond))},
		{"drops", dropsText(s.Drops)},
		{"run folder", s.Dir},
	}
	for _, h := range s.PlanHits {
		p.Facts = append(p.Facts, Fact{fmt.Sprintf("plan rule %d", h.Rule), fmt.Sprintf("%q: %s", h.Name, plural.Of64(uint64(h.Hits), "hit", "hits"))})
	}
	if s.CaptureKernelDrops > 0 && s.CaptureDropExcused == 0 { // else a line of Incomplete says it (Summary.Incomplete)
		p.Notes = append(p.Notes, fmt.Sprintf("the capture lost %s: the check saw an incomplete capture", plural.Of64(uint64(s.CaptureKernelDrops), "frame", "frames")))
	}
	if s.Excused > 0 {
		p.Facts = append(p.Facts, Fact{"excused", plural.Of(s.Excused, "timing finding", "timing findings") + " (a host's timer acted right after a delivery for the same RPC)"})
	}
	if s.Altered > 0 {
		p.Facts = append(p.Facts, Fact{"not charged", plural.Of(s.Altered, "finding", "findings") + " (a packet of the RPC reached the host altered on the way: link corrupt)"})
	}
	for _, name := range []string{"scenario.yaml", "capture.pcapng", "sent.pcapng", "delivered.pcapng", "switch-notes.pcapng", "summary.json", "check.json", "drops.json", "rpcs.json"} {
		if _, err := os.Stat(filepath.Join(s.Dir, name)); err == nil {
			p.Links = append(p.Links, Link{Text: name, Href: name})
		}
	}
	var results []spec.RuleResult
	rules := Table{Title: "Rules (every host's view)", Head: []string{"rule", "level", "checked", "passed", "violated", "inconclusive"}}
	for _, r := range s.Rules {
		lvl := spec.Should
		if r.Level == spec.Must.String() {
			lvl = spec.Must
		}
		results = append(results, spec.RuleResult{ID: r.ID, Level: lvl, Checked: r.Checked, Passed: r.Passed, Violated: r.Violated, Inconclusive: r.Inconclusive})
		if r.Checked == 0 && r.Violated == 0 {
			continue
		}
		rules.Rows = append(rules.Rows, Row{Bad: r.Violated > 0, Cells: []string{r.ID, r.Level, fmt.Sprint(r.Checked), fmt.Sprint(r.Passed),
			fmt.Sprint(r.Violated), fmt.Sprint(r.Inconclusive)}})
	}
	p.Tables = []Table{AreaTable("Rules by area", results), rules}
	replay := fmt.Sprintf("homatest replay %s", s.Dir)
	if s.Failed > 0 || len(s.Errors) > 0 {
		p.Failures = append(p.Failures, Failure{Title: fmt.Sprintf("%s of %d", plural.Of(s.Failed, "RPC failed", "RPCs failed"), s.RPCs),
			Expected: "every RPC of the workload completes with the right response", Observed: strings.Join(s.Errors, "\n"), Rerun: replay})
	}
	captures := map[bool]*Capture{}
	// Only the RPCs of the violations listed are drawn: each capture is
	// read for those alone (a run's captures may hold millions of packets).
	keys := map[bool]map[spec.RPCKey]bool{}
	for _, v := range s.Violations {
		if v.Finding.RPC != nil {
			if keys[v.Delivered] == nil {
				keys[v.Delivered] = map[spec.RPCKey]bool{}
			}
			keys[v.Delivered][*v.Finding.RPC] = true
		}
	}
	graphs := 0
	drawn := map[string]*Picture{}
	for _, v := range s.Violations {
		file := "sent.pcapng"
		if v.Delivered {
			file = "delivered.pcapng"
		}
		f := v.Finding
		fl := Failure{Title: fmt.Sprintf("%s at frame %d of %s (host %s's view)", f.Rule, v.Frame, file, v.Host), Rules: []string{f.Rule},
			Level: f.Level.String(), Expected: Statements(f.Rule), Observed: fmt.Sprintf("%s %s: %s", f.Rule, f.Level, f.Why), Rerun: replay,
			Links: []Link{{Text: file + " (violations as packet comments)", Href: file}}}
		if f.RPC != nil {
			key := fmt.Sprintf("%v/%v", v.Delivered, *f.RPC)
			if pic, ok := drawn[key]; ok {
				fl.Picture = pic
			} else if graphs < MaxGraphs {
				c, ok := captures[v.Delivered]
				if !ok {
					c, _ = ReadCaptureRPCs(filepath.Join(s.Dir, file), wire.VersionAuto, keys[v.Delivered])
					captures[v.Delivered] = c
				}
				if r := c.Find(*f.RPC); r != nil {
					if pic, err := c.Graph(r); err == nil {
						graphs++
						drawn[key], fl.Picture = pic, pic
					}
				}
			}
		}
		p.Failures = append(p.Failures, fl)
	}
	if len(p.Failures) > 0 {
		p.Facts = append(p.Facts, Fact{"rerun", replay + " (or homatest scenario run " + filepath.Join(s.Dir, "scenario.yaml") + fmt.Sprintf(" --seed %d)", s.Seed)})
	}
	return p
}

func dropsText(d map[string]uint64) string {
	if len(d) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range []string{"plan", "loss", "buffer", "corrupt", "mtu", scenario.ReasonTC} {
		if n, ok := d[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}
