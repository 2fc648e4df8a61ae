package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/homatest/homatest/internal/atomicfile"
	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// writeJUnit writes report as JUnit XML to path: one testcase per spec
// (suite setup nodes left out), each with its rule IDs, slack and capture
// as properties. Ginkgo writes a property's value as the JSON encoding of
// the report entry ("\"HOMA-GRANT-001\""); string values are unquoted here
// so CI tools show the text. Errors: path cannot be written.
func writeJUnit(report types.Report, path string) error {
	cfg := reporters.JunitReportConfig{OmitTimelinesForSpecState: types.SpecStatePassed, OmitSuiteSetupNodes: true}
	b, err := ginkgoJUnit(report, cfg)
	if err != nil {
		return err
	}
	var suites JUnitSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return fmt.Errorf("conformance: Ginkgo's JUnit report: %w", err)
	}
	for i := range suites.TestSuites {
		for j := range suites.TestSuites[i].TestCases {
			props := suites.TestSuites[i].TestCases[j].Properties
			if props == nil {
				continue
			}
			for k, p := range props.Properties {
				var s string
				if json.Unmarshal([]byte(p.Value), &s) == nil {
					props.Properties[k].Value = s
				}
			}
		}
	}
	return writeJUnitFile(path, suites)
}

// ginkgoJUnit returns Ginkgo's JUnit XML of report. Ginkgo writes it only
// to a path and drops its write errors (a full disk left an empty file,
// reported later as "EOF"), so it writes into a pipe read here, and the
// report reaches its file through atomicfile, which reports ENOSPC with
// the path and leaves nothing half-written.
func ginkgoJUnit(report types.Report, cfg reporters.JunitReportConfig) ([]byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("conformance: JUnit report: %w", err)
	}
	defer r.Close()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	err = reporters.GenerateJUnitReportWithConfig(report, fmt.Sprintf("/dev/fd/%d", w.Fd()), cfg)
	w.Close()
	b := <-got
	if err != nil {
		return nil, fmt.Errorf("conformance: JUnit report: %w", err)
	}
	return b, nil
}

// JUnitRun is what MergeJUnit needs to know of the run whose passes it
// merges.
type JUnitRun struct {
	// Passes is the number of passes the run was asked for (--repeat):
	// above 1 every suite is named "... (pass N)" (namePass), even when
	// fewer finished.
	Passes int
	// Interrupted, when not "", marks a run interrupted after the passes
	// merged ("interrupted during pass 2, after 1 finished pass"): each
	// suite gets the property "interrupted" with it as value, and an
	// <error> testcase of type "interrupted" says it (ProblemSuite), so
	// the report of an interrupted run never reads as green.
	Interrupted string
	// Problem, when set, is a testcase of the run itself, after the
	// passes' suites in a suite of its own (ProblemSuite): an <error>
	// (the run could not run its specs: an environment that could not be
	// built, a filter that matches no spec) or a <failure> (the IUT failed
	// outside any spec).
	Problem *JUnitCase
}

// ProblemSuiteName is the name of the testsuite holding a run's own
// testcases (JUnitRun.Problem, Interrupted).
const ProblemSuiteName = "homatest run"

// ErrorCase is a testcase that errored (an <error> of type typ with msg),
// for JUnitRun.Problem.
func ErrorCase(name, typ, msg string) *JUnitCase {
	return &JUnitCase{Name: name, Classname: ProblemSuiteName, Status: "errored",
		Error: &reporters.JUnitError{Message: msg, Type: typ, Description: msg}}
}

// FailureCase is a testcase that failed (a <failure> of type typ with
// msg), for JUnitRun.Problem.
func FailureCase(name, typ, msg string) *JUnitCase {
	return &JUnitCase{Name: name, Classname: ProblemSuiteName, Status: "failed",
		Failure: &JUnitFailure{Message: msg, Type: typ, Description: msg}}
}

// MergeJUnit merges the JUnit reports of several passes (sources, as
// writeJUnit wrote them and ApplyResult brought in line with each pass's
// Result) into dst, one testsuite per pass, and removes the sources. With
// several passes (r.Passes or sources above 1) each suite's name, and its
// cases' classname, end in " (pass N)" (namePass), so that CI dashboards
// keep the passes apart. r.Interrupted and r.Problem add the run's own
// testcases (JUnitRun). dst is written once, through atomicfile (a
// symlink is followed, a device or FIFO written through). Errors: an
// unreadable source, an unwritable dst ("cannot write DST: cause").
func MergeJUnit(sources []string, dst string, r JUnitRun) error {
	var merged JUnitSuites
	for i, src := range sources {
		suites, err := readJUnitFile(src)
		if err != nil {
			return fmt.Errorf("conformance: merging JUnit reports: %s: %w", src, err)
		}
		if len(sources) > 1 || r.Passes > 1 {
			namePass(&suites, i+1)
		}
		merged.Time += suites.Time
		merged.TestSuites = append(merged.TestSuites, suites.TestSuites...)
	}
	var own []JUnitCase
	if r.Interrupted != "" {
		c := ErrorCase("interrupted", "interrupted", r.Interrupted)
		c.Status = "interrupted"
		own = append(own, *c)
	}
	if r.Problem != nil {
		own = append(own, *r.Problem)
	}
	if len(own) > 0 {
		ps := JUnitSuite{Name: ProblemSuiteName, Tests: len(own), TestCases: own}
		for _, c := range own {
			switch {
			case c.Error != nil:
				ps.Errors++
			case c.Failure != nil:
				ps.Failures++
			}
		}
		merged.TestSuites = append(merged.TestSuites, ps)
	}
	if r.Interrupted != "" {
		for i := range merged.TestSuites {
			ps := &merged.TestSuites[i].Properties
			ps.Properties = append(ps.Properties, reporters.JUnitProperty{Name: "interrupted", Value: r.Interrupted})
		}
	}
	if err := atomicfile.Write(dst, func(w io.Writer) error { return WriteJUnit(w, merged) }); err != nil {
		return err
	}
	for _, src := range sources {
		os.Remove(src)
	}
	return nil
}

// keepFinishedCases rewrites the JUnit file of an interrupted pass at
// path with only the testcases of specs that finished: the one the
// interrupt cut short (status "interrupted") and those it kept from
// beginning (skipped) are left out, so that the run's report has one
// error for the interruption (MergeJUnit's JUnitRun.Interrupted).
func keepFinishedCases(path string) error {
	suites, err := readJUnitFile(path)
	if err != nil {
		return err
	}
	suites.Tests, suites.Errors, suites.Failures, suites.Disabled = 0, 0, 0, 0
	for i := range suites.TestSuites {
		ts := &suites.TestSuites[i]
		var kept []JUnitCase
		ts.Tests, ts.Errors, ts.Failures, ts.Skipped = 0, 0, 0, 0
		for _, c := range ts.TestCases {
			if c.Status == "interrupted" || c.Skipped != nil {
				continue
			}
			kept = append(kept, c)
			ts.Tests++
			switch {
			case c.Error != nil:
				ts.Errors++
			case c.Failure != nil:
				ts.Failures++
			}
		}
		ts.TestCases = kept
		suites.Tests += ts.Tests
		suites.Errors += ts.Errors
		suites.Failures += ts.Failures
	}
	return writeJUnitFile(path, suites)
}

// namePass suffixes " (pass n)" to the name of each suite of a pass's
// report and to the classname of its cases that carry the suite's name
// (Ginkgo's: the suite description), n counting from 1: every pass's
// suite is otherwise named alike, and dashboards that key test cases by
// suite or class merge the passes into one.
func namePass(suites *JUnitSuites, n int) {
	for i := range suites.TestSuites {
		ts := &suites.TestSuites[i]
		name := fmt.Sprintf("%s (pass %d)", ts.Name, n)
		for j := range ts.TestCases {
			if ts.TestCases[j].Classname == ts.Name {
				ts.TestCases[j].Classname = name
			}
		}
		ts.Name = name
	}
}

// The JUnit report's elements: Ginkgo's, which CI tools read. Every JUnit
// report of homatest (the suite's passes, homatest check) is built from
// them and written by WriteJUnit.
type (
	// JUnitSuites is the <testsuites> element.
	JUnitSuites = reporters.JUnitTestSuites
	// JUnitSuite is one <testsuite>.
	JUnitSuite = reporters.JUnitTestSuite
	// JUnitCase is one <testcase>.
	JUnitCase = reporters.JUnitTestCase
	// JUnitFailure is a test case's <failure>.
	JUnitFailure = reporters.JUnitFailure
	// JUnitSkipped is a test case's <skipped>.
	JUnitSkipped = reporters.JUnitSkipped
)

// WriteJUnit writes suites to w as JUnit XML (the XML header, indented
// elements), the top element's counts summed from the suites'. Errors:
// w's.
func WriteJUnit(w io.Writer, suites JUnitSuites) error {
	suites.Tests, suites.Failures, suites.Errors, suites.Disabled = 0, 0, 0, 0
	for _, s := range suites.TestSuites {
		suites.Tests += s.Tests
		suites.Failures += s.Failures
		suites.Errors += s.Errors
		suites.Disabled += s.Disabled
	}
	out, err := xml.MarshalIndent(suites, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append([]byte(xml.Header), append(out, '\n')...))
	return err
}

// readJUnitFile reads the JUnit report at path. Errors: path cannot be
// read or parsed.
func readJUnitFile(path string) (JUnitSuites, error) {
	var suites JUnitSuites
	b, err := os.ReadFile(path)
	if err != nil {
		return suites, err
	}
	return suites, xml.Unmarshal(b, &suites)
}

// writeJUnitFile writes suites to path atomically (atomicfile).
func writeJUnitFile(path string, suites JUnitSuites) error {
	return atomicfile.Write(path, func(w io.Writer) error { return WriteJUnit(w, suites) })
}

// ApplyResult brings the JUnit report of a pass (at path, as writeJUnit
// wrote it) in line with res, strict as --strict, so that each case reads
// as the spec counts in homatest run's verdict (SpecResult.Outcome), which
// the pass's own report cannot know: it predates the reruns
// (rerunInconclusive) and knows nothing of levels. Cases are matched by
// spec name (junitSpec); each spec's case becomes (applySpec):
//   - with SHOULD findings of other rules, with strict: a <failure> of
//     type "should" listing them, judged or not (they fail the run:
//     SpecResult.Fails); without strict, the findings in <system-err>
//     after "WARNING (SHOULD): ";
//   - inconclusive (never judged, which is not a pass): an <error> of
//     type "inconclusive" with its reason;
//   - failed by a rerun: a <failure> with the rerun's message;
//   - a warning (SpecResult.Warns, without strict: a failed SHOULD spec, or
//     one that passed with SHOULD findings of other rules): "passed", the
//     failure or findings in <system-err> after "WARNING (SHOULD): ";
//   - unsupported (skipped, not run), with strict: a <failure> of type
//     "unsupported" with the reason, as --strict fails on specs not run
//     (Tally.Incomplete); a spec --focus, --rules or --label-filter left
//     out stays skipped.
//
// The pass's whole capture (judgeRunCapture), which has no Ginkgo case,
// gets one at the end of the first suite. The suites' counts follow.
// Errors: path cannot be read or written.
func ApplyResult(path string, res *Result, strict bool) error {
	byName := map[string]SpecResult{}
	for _, s := range res.Specs {
		byName[s.Name] = s
	}
	suites, err := readJUnitFile(path)
	if err != nil {
		return err
	}
	changed := false
	for i := range suites.TestSuites {
		ts := &suites.TestSuites[i]
		for j := range ts.TestCases {
			tc := &ts.TestCases[j]
			if s, ok := junitSpec(byName, tc.Name); ok && applySpec(ts, tc, s, strict) {
				changed = true
			}
		}
	}
	if s, ok := byName[runCaptureName]; ok && len(suites.TestSuites) > 0 {
		// The pass's whole capture has no Ginkgo case: it is judged
		// after the suite (judgeRunCapture).
		// Named and labelled as Ginkgo names a spec's case, its rules
		// as "rule" properties.
		ts := &suites.TestSuites[0]
		labels := append([]string{s.Area, s.Level}, s.Rules...)
		tc := JUnitCase{Name: "[It] " + s.Name + " [" + strings.Join(labels, ", ") + "]", Classname: ts.Name, Status: "passed", Time: s.Duration.Seconds()}
		if len(s.Rules) > 0 {
			tc.Properties = &reporters.JUnitProperties{}
			for _, r := range s.Rules {
				tc.Properties.Properties = append(tc.Properties.Properties, reporters.JUnitProperty{Name: entryRule, Value: r})
			}
		}
		switch s.State {
		case "failed":
			tc.Status, tc.Failure = "failed", &JUnitFailure{Message: s.Failure, Type: "failed", Description: s.Failure}
			ts.Failures++
		case "error":
			tc.Status, tc.Error = "errored", &reporters.JUnitError{Message: s.Failure, Type: "error", Description: s.Failure}
			ts.Errors++
		}
		if s.State == "failed" || s.State == "error" {
			for i := range ts.Properties.Properties {
				if ts.Properties.Properties[i].Name == "SuiteSucceeded" {
					ts.Properties.Properties[i].Value = "false"
				}
			}
		}
		ts.Tests++
		applySpec(ts, &tc, s, strict)
		ts.TestCases = append(ts.TestCases, tc)
		changed = true
	}
	if !changed {
		return nil
	}
	return writeJUnitFile(path, suites)
}

// junitSpec finds the spec of a Ginkgo JUnit case's name in byName: the
// name without the node type ("[It] ") and, when Ginkgo appended them,
// the labels (" [grant, MUST, HOMA-GRANT-001]"); a spec without labels
// whose name has " [" in it is found whole.
func junitSpec(byName map[string]SpecResult, name string) (SpecResult, bool) {
	name = strings.TrimPrefix(name, "[It] ")
	if s, ok := byName[name]; ok {
		return s, true
	}
	if k := strings.LastIndex(name, " ["); k >= 0 {
		s, ok := byName[name[:k]]
		return s, ok
	}
	return SpecResult{}, false
}

// applySpec makes tc, spec s's case in suite ts, read as s counts (see
// ApplyResult) and reports whether it changed tc.
func applySpec(ts *JUnitSuite, tc *JUnitCase, s SpecResult, strict bool) bool {
	warning := !strict && s.Warns() // counts as a pass, its reason in system-err
	if tc.Status == "passed" {
		switch {
		case s.Rerun == "failed" && warning:
			warn(tc, s.Failure, "")
			return true
		case s.Rerun == "failed":
			tc.Failure = &JUnitFailure{Message: s.Failure, Type: "failed", Description: s.Failure}
			tc.Status = "failed"
			ts.Failures++
			return true
		case len(s.OtherShould) > 0 && (s.State == "passed" || s.State == "inconclusive"):
			// Other rules' SHOULD findings: a failure with strict (judged or
			// not, they fail the run: SpecResult.Fails), else a warning.
			msg := fmt.Sprintf("%d SHOULD findings of other rules (--strict fails on them)", s.ShouldCount())
			if strict {
				desc := strings.Join(s.OtherShould, "\n")
				if s.State == "inconclusive" {
					desc += "\n" + s.Failure
				}
				tc.Failure = &JUnitFailure{Message: msg, Type: "should", Description: desc}
				tc.Status = "failed"
				ts.Failures++
				return true
			}
			warn(tc, msg, strings.Join(s.OtherShould, "\n"))
			if s.State == "passed" {
				return true
			}
		}
		if s.State == "inconclusive" {
			tc.Error = &reporters.JUnitError{Message: s.Failure, Type: "inconclusive", Description: strings.Join(s.TimingInconclusive, "\n")}
			tc.Status = "inconclusive"
			ts.Errors++
			return true
		}
		return false
	}
	switch {
	case strict && s.State == "unsupported" && tc.Skipped != nil:
		msg := "not run (--strict fails on it): " + strings.TrimPrefix(s.Failure, "unsupported: ")
		tc.Failure = &JUnitFailure{Message: msg, Type: "unsupported", Description: msg}
		tc.Skipped = nil
		tc.Status = "failed"
		ts.Skipped--
		ts.Failures++
	case warning && tc.Failure != nil:
		warn(tc, tc.Failure.Message, tc.Failure.Description)
		tc.Failure = nil
		ts.Failures--
	case warning && tc.Error != nil:
		warn(tc, tc.Error.Message, tc.Error.Description)
		tc.Error = nil
		ts.Errors--
	default:
		return false
	}
	return true
}

// warn makes tc a passed case with a warning: msg and detail at the head
// of its system-err after "WARNING (SHOULD): ".
func warn(tc *JUnitCase, msg, detail string) {
	w := "WARNING (SHOULD): " + msg + "\n"
	if detail != "" {
		w += detail + "\n"
	}
	tc.SystemErr = w + tc.SystemErr
	tc.Status = "passed"
}
