package conformance

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
)

// TestJUnitShould: the passes' reports, each brought in line with its
// Result (ApplyResult) and then merged (MergeJUnit), keep every suite;
// without strict a failed SHOULD spec becomes a warning consistently (no
// <failure>, status "passed", counts without it, as check's JUnit), with
// strict it stays a failure with its <failure> element; a MUST failure is
// a failure either way, and so is a SHOULD spec failed by a MUST finding
// of another rule, whatever its labels say: the Result decides, not the
// case's name. The sources are removed and a symlinked dst keeps its link.
func TestJUnitShould(t *testing.T) {
	for _, strict := range []bool{false, true} {
		dir := t.TempDir()
		res := &Result{Specs: []SpecResult{
			{Name: "acks late [x]", Level: "SHOULD", State: "failed", Failure: "late"},
			{Name: "resends", Level: "MUST", State: "passed"},
			{Name: "grants", Level: "MUST", State: "failed", Failure: "no grant"},
			{Name: "acks soon", Level: "SHOULD", State: "failed", Failure: otherMustFailure + ", on packets the IUT sent"},
		}}
		pass := func(name string, cases ...JUnitCase) string {
			s := JUnitSuite{Name: name, TestCases: cases, Tests: len(cases)}
			for _, c := range cases {
				if c.Failure != nil {
					s.Failures++
				}
			}
			p := filepath.Join(dir, name+".xml")
			if err := writeJUnitFile(p, JUnitSuites{TestSuites: []JUnitSuite{s}}); err != nil {
				t.Fatal(err)
			}
			if err := ApplyResult(p, res, strict); err != nil {
				t.Fatal(err)
			}
			return p
		}
		// The level comes from the Result, not the case's name: that of
		// "acks late [x]" (no labels: Ginkgo appends none, and the bracket
		// is part of its name) does not say SHOULD, the labels of "grants"
		// do, and "acks soon" is SHOULD but failed by another rule's MUST
		// finding.
		should := JUnitCase{Name: "[It] acks late [x]", Status: "failed", Failure: &JUnitFailure{Message: "late", Description: "frame 9"}}
		must := JUnitCase{Name: "[It] grants [SHOULD-looking, HOMA-GRANT-001]", Status: "failed", Failure: &JUnitFailure{Message: "no grant"}}
		ok := JUnitCase{Name: "[It] resends [MUST, HOMA-RESEND-001]", Status: "passed"}
		otherMust := JUnitCase{Name: "[It] acks soon [SHOULD, HOMA-ACK-004]", Status: "failed", Failure: &JUnitFailure{Message: otherMustFailure}}
		srcs := []string{pass("p1", should, ok), pass("p2", must, otherMust)}
		real := filepath.Join(dir, "real.xml")
		dst := filepath.Join(dir, "junit.xml")
		if err := os.Symlink("real.xml", dst); err != nil {
			t.Fatal(err)
		}
		if err := MergeJUnit(srcs, dst, JUnitRun{}); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(dst); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("dst symlink replaced: %v", err)
		}
		for _, s := range srcs {
			if _, err := os.Stat(s); err == nil {
				t.Errorf("source %s left behind", s)
			}
		}
		b, err := os.ReadFile(real)
		if err != nil {
			t.Fatal(err)
		}
		var got JUnitSuites
		if err := xml.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.TestSuites) != 2 || got.Tests != 4 {
			t.Fatalf("strict=%v: %d suites, %d tests; want 2, 4", strict, len(got.TestSuites), got.Tests)
		}
		sc := got.TestSuites[0].TestCases[0]
		wantFailures := 2
		if strict {
			wantFailures = 3
			if sc.Failure == nil || sc.Status != "failed" {
				t.Errorf("strict: SHOULD case status %q, failure %v; want failed with a <failure>", sc.Status, sc.Failure)
			}
		} else if sc.Failure != nil || sc.Status != "passed" || sc.SystemErr == "" {
			t.Errorf("SHOULD case status %q, failure %v, system-err %q; want passed, none, the warning", sc.Status, sc.Failure, sc.SystemErr)
		} else if !strings.HasPrefix(sc.SystemErr, "WARNING (SHOULD): late\nframe 9") {
			t.Errorf("SHOULD case system-err %q, want the warning with the failure", sc.SystemErr)
		}
		for i, mc := range got.TestSuites[1].TestCases {
			if mc.Failure == nil || mc.Status != "failed" {
				t.Errorf("strict=%v: failing case %d status %q, failure %v; want failed", strict, i, mc.Status, mc.Failure)
			}
		}
		if got.Failures != wantFailures || got.TestSuites[0].Failures != wantFailures-2 {
			t.Errorf("strict=%v: failures %d (first suite %d), want %d (%d)", strict, got.Failures, got.TestSuites[0].Failures, wantFailures, wantFailures-2)
		}
		if tl := Count([]*Result{res}, strict); tl.Failing != wantFailures {
			t.Errorf("strict=%v: tally failing %d, want %d (the JUnit must agree with it)", strict, tl.Failing, wantFailures)
		}
	}
}

// TestApplyResultUnsupportedStrict: with strict an unsupported spec
// (skipped in its pass's report) is a failure of type "unsupported"
// naming the reason, as homatest run --strict fails on specs not run;
// without strict it stays skipped, and a spec --focus left out stays
// skipped either way.
func TestApplyResultUnsupportedStrict(t *testing.T) {
	for _, strict := range []bool{false, true} {
		dir := t.TempDir()
		unsup := JUnitCase{Name: "[It] W1 [MUST, HOMA-WORKLOAD-001]", Status: "skipped",
			Skipped: &JUnitSkipped{Message: "skipped - unsupported: this environment builds no bench of IUT hosts"}}
		left := JUnitCase{Name: "[It] grants [MUST, HOMA-GRANT-001]", Status: "skipped", Skipped: &JUnitSkipped{Message: "skipped"}}
		src := filepath.Join(dir, "p1.xml")
		if err := writeJUnitFile(src, JUnitSuites{TestSuites: []JUnitSuite{{Name: "s", TestCases: []JUnitCase{unsup, left}, Tests: 2, Skipped: 2}}}); err != nil {
			t.Fatal(err)
		}
		res := &Result{Specs: []SpecResult{
			{Name: "W1", Level: "MUST", State: "unsupported", Failure: "unsupported: this environment builds no bench of IUT hosts"},
			{Name: "grants", Level: "MUST", State: "skipped"},
		}}
		if err := ApplyResult(src, res, strict); err != nil {
			t.Fatal(err)
		}
		got := mergeRead(t, []string{src})
		s := got.TestSuites[0]
		u, l := s.TestCases[0], s.TestCases[1]
		if l.Skipped == nil || l.Failure != nil {
			t.Errorf("strict=%v: the case --focus left out: skipped %v, failure %v; want skipped", strict, l.Skipped, l.Failure)
		}
		if !strict {
			if u.Skipped == nil || u.Failure != nil || s.Failures != 0 || s.Skipped != 2 {
				t.Errorf("unsupported case without strict: %+v (suite failures %d, skipped %d); want skipped", u, s.Failures, s.Skipped)
			}
			continue
		}
		if u.Failure == nil || u.Failure.Type != "unsupported" || u.Skipped != nil || u.Status != "failed" ||
			u.Failure.Message != "not run (--strict fails on it): this environment builds no bench of IUT hosts" {
			t.Errorf("unsupported case with strict: %+v, failure %+v; want a failure of type unsupported with the reason", u, u.Failure)
		}
		if s.Failures != 1 || s.Skipped != 1 || got.Failures != 1 {
			t.Errorf("strict counts: suite failures %d skipped %d, total failures %d; want 1, 1, 1", s.Failures, s.Skipped, got.Failures)
		}
	}
}

// TestMergeJUnitPassNames: the suites of several passes, all named alike
// by Ginkgo, are told apart by their pass number in the suite's name and
// its cases' classname; a single pass keeps its name.
func TestMergeJUnitPassNames(t *testing.T) {
	dir := t.TempDir()
	pass := func(name string) string {
		c := JUnitCase{Name: "[It] grants [MUST, HOMA-GRANT-001]", Classname: "Homa conformance", Status: "passed"}
		p := filepath.Join(dir, name+".xml")
		if err := writeJUnitFile(p, JUnitSuites{TestSuites: []JUnitSuite{{Name: "Homa conformance", TestCases: []JUnitCase{c}, Tests: 1}}}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	merge := func(srcs ...string) JUnitSuites { return mergeRead(t, srcs) }
	got := merge(pass("p1"), pass("p2"), pass("p3"))
	for i, s := range got.TestSuites {
		want := fmt.Sprintf("Homa conformance (pass %d)", i+1)
		if s.Name != want || s.TestCases[0].Classname != want {
			t.Errorf("suite %d: name %q, classname %q; want %q for both", i+1, s.Name, s.TestCases[0].Classname, want)
		}
	}
	if len(got.TestSuites) != 3 {
		t.Errorf("%d suites, want 3", len(got.TestSuites))
	}
	if got := merge(pass("one")); got.TestSuites[0].Name != "Homa conformance" || got.TestSuites[0].TestCases[0].Classname != "Homa conformance" {
		t.Errorf("a single pass renamed: %+v", got.TestSuites[0])
	}
}

// mergeRead merges srcs (MergeJUnit) into a file beside the first and
// returns what it wrote.
func mergeRead(t *testing.T, srcs []string) JUnitSuites {
	t.Helper()
	dst := filepath.Join(filepath.Dir(srcs[0]), "junit.xml")
	if err := MergeJUnit(srcs, dst, JUnitRun{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	var got JUnitSuites
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestApplyResultOtherShouldStrict: a spec that passed with SHOULD
// findings of other rules fails a --strict run (SpecResult.Fails), so its
// JUnit case must fail too (type "should", the findings listed), or a CI
// job reading the JUnit would see green where the run exits 1; without
// --strict it stays a pass, with the warning in its system-err. So too a
// spec never judged (timing-inconclusive) with such findings: with
// --strict they fail it, as the verdict counts it; without, it is an
// <error> of type inconclusive, the warning in its system-err.
func TestApplyResultOtherShouldStrict(t *testing.T) {
	res := &Result{Specs: []SpecResult{
		{Name: "A passes", State: "passed", Level: "MUST"},
		{Name: "B warns", State: "passed", Level: "MUST", OtherShould: []string{"HOMA-ACK-008 frame 12: NEED_ACK gap 31 ms", "HOMA-GRANT-011 frame 40: x"}},
		{Name: "C unjudged", State: "inconclusive", Level: "MUST", Failure: "timing-inconclusive: not judged", TimingInconclusive: []string{"HOMA-ACK-001 late"}, OtherShould: []string{"HOMA-GRANT-006 frame 12: y"}},
	}}
	for _, strict := range []bool{false, true} {
		got := applyPassed(t, res, "ack, MUST, HOMA-ACK-002", strict)
		cs := got.TestSuites[0].TestCases
		if cs[0].Status != "passed" || cs[0].Failure != nil {
			t.Errorf("strict %v: clean spec %s, failure %+v; want passed", strict, cs[0].Status, cs[0].Failure)
		}
		if !strict {
			if cs[1].Status != "passed" || cs[1].Failure != nil || got.TestSuites[0].Failures != 0 || !strings.HasPrefix(cs[1].SystemErr, "WARNING (SHOULD): 2 SHOULD findings") || !strings.Contains(cs[1].SystemErr, "HOMA-GRANT-011 frame 40") {
				t.Errorf("without strict: warned spec %s, failure %+v, suite failures %d, system-err %q; want a pass with the warning in system-err", cs[1].Status, cs[1].Failure, got.TestSuites[0].Failures, cs[1].SystemErr)
			}
			if cs[0].SystemErr != "" {
				t.Errorf("clean spec system-err %q, want none", cs[0].SystemErr)
			}
			if c := cs[2]; c.Status != "inconclusive" || c.Error == nil || c.Error.Type != "inconclusive" || c.Failure != nil || !strings.Contains(c.SystemErr, "HOMA-GRANT-006 frame 12") {
				t.Errorf("without strict: unjudged spec with findings %s, error %+v, failure %+v, system-err %q; want an inconclusive error with the warning in system-err", c.Status, c.Error, c.Failure, c.SystemErr)
			}
			if n := got.TestSuites[0].Errors; n != 1 {
				t.Errorf("without strict: suite errors %d, want 1", n)
			}
			continue
		}
		if c := cs[2]; c.Status != "failed" || c.Failure == nil || c.Failure.Type != "should" || c.Error != nil || !strings.Contains(c.Failure.Description, "HOMA-GRANT-006 frame 12") {
			t.Errorf("strict: unjudged spec with findings %s, failure %+v, error %+v; want a failure of type should", c.Status, c.Failure, c.Error)
		}
		if f := cs[1].Failure; cs[1].Status != "failed" || f == nil || f.Type != "should" || !strings.Contains(f.Message, "2 SHOULD findings") || !strings.Contains(f.Description, "HOMA-ACK-008 frame 12") {
			t.Errorf("strict: warned spec %s, failure %+v; want a failure of type should listing both findings", cs[1].Status, f)
		}
		if n, e := got.TestSuites[0].Failures, got.TestSuites[0].Errors; n != 2 || e != 0 {
			t.Errorf("strict: suite failures %d, errors %d; want 2, 0", n, e)
		}
		if tl := Count([]*Result{res}, strict); tl.Failing != 2 {
			t.Errorf("strict: tally failing %d, want 2 (the JUnit must agree with it)", tl.Failing)
		}
	}
}

// TestApplyResultRerunFailedShould: a SHOULD spec that passed its pass
// (its case "passed") but that a rerun failed counts as a warning without
// --strict and as a failure with it (SpecResult.Outcome), and its JUnit
// case reads the same; a MUST spec a rerun failed is a failure either way.
func TestApplyResultRerunFailedShould(t *testing.T) {
	const why = "reproduced on rerun 1 without a stall to explain it: late"
	res := &Result{Specs: []SpecResult{
		{Name: "acks late", Level: "SHOULD", State: "failed", Rerun: "failed", Failure: why},
		{Name: "grants", Level: "MUST", State: "failed", Rerun: "failed", Failure: why},
	}}
	for _, strict := range []bool{false, true} {
		got := applyPassed(t, res, "ack, MUST", strict)
		sc, mc := got.TestSuites[0].TestCases[0], got.TestSuites[0].TestCases[1]
		if strict {
			if sc.Status != "failed" || sc.Failure == nil || sc.Failure.Message != why {
				t.Errorf("strict: SHOULD spec a rerun failed: %s, failure %+v; want failed with the rerun's message", sc.Status, sc.Failure)
			}
		} else if sc.Status != "passed" || sc.Failure != nil || sc.SystemErr != "WARNING (SHOULD): "+why+"\n" {
			t.Errorf("SHOULD spec a rerun failed: %s, failure %+v, system-err %q; want passed with the warning", sc.Status, sc.Failure, sc.SystemErr)
		}
		if mc.Status != "failed" || mc.Failure == nil {
			t.Errorf("strict=%v: MUST spec a rerun failed: %s, failure %+v; want failed", strict, mc.Status, mc.Failure)
		}
		if n, want := got.TestSuites[0].Failures, Count([]*Result{res}, strict).Failing; n != want {
			t.Errorf("strict=%v: suite failures %d, tally failing %d; want them equal", strict, n, want)
		}
	}
}

// applyPassed writes the JUnit report of a pass in which every spec of
// res passed (one case each, with labels as Ginkgo appends them), brings
// it in line with res (ApplyResult, strict as --strict) and returns what
// it then holds.
func applyPassed(t *testing.T, res *Result, labels string, strict bool) JUnitSuites {
	t.Helper()
	path := filepath.Join(t.TempDir(), "junit.xml")
	suite := JUnitSuite{Name: "Homa conformance", Tests: len(res.Specs)}
	for _, s := range res.Specs {
		suite.TestCases = append(suite.TestCases, JUnitCase{Name: "[It] " + s.Name + " [" + labels + "]", Status: "passed"})
	}
	if err := writeJUnitFile(path, JUnitSuites{TestSuites: []JUnitSuite{suite}}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyResult(path, res, strict); err != nil {
		t.Fatal(err)
	}
	got, err := readJUnitFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestApplyResultRunCapture: the pass's whole capture (RUN-capture), which
// has no Ginkgo case, gets one as Ginkgo shapes a spec's ("[It] NAME
// [area, level, rules]", each rule a "rule" property); a failed one is a
// <failure> counted in the suite, whose SuiteSucceeded goes false, and its
// SHOULD findings are counted whole ("… and N more" stands for N).
func TestApplyResultRunCapture(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "p1.xml")
	ok := JUnitCase{Name: "[It] A [ack, MUST, HOMA-ACK-002]", Status: "passed"}
	suite := JUnitSuite{Name: "s", TestCases: []JUnitCase{ok}, Tests: 1,
		Properties: reporters.JUnitProperties{Properties: []reporters.JUnitProperty{{Name: "SuiteSucceeded", Value: "true"}}}}
	if err := writeJUnitFile(src, JUnitSuites{TestSuites: []JUnitSuite{suite}}); err != nil {
		t.Fatal(err)
	}
	rc := SpecResult{Name: runCaptureName, Area: "run", Level: "MUST", State: "failed", Rules: []string{"HOMA-ACK-004"},
		Failure:     "MUST violations charged to the IUT that no spec's exchange held: HOMA-ACK-004 frame 635: x",
		OtherShould: []string{"HOMA-GRANT-013 frame 9: y", moreShould + "41 more"}}
	if n := rc.ShouldCount(); n != 42 {
		t.Errorf("ShouldCount %d, want 42 (one line and 41 more)", n)
	}
	res := &Result{Specs: []SpecResult{{Name: "A", Level: "MUST", State: "passed"}, rc}}
	if err := ApplyResult(src, res, false); err != nil {
		t.Fatal(err)
	}
	got := mergeRead(t, []string{src})
	s := got.TestSuites[0]
	if len(s.TestCases) != 2 || s.Tests != 2 || s.Failures != 1 {
		t.Fatalf("suite: %d cases, tests %d, failures %d; want 2, 2, 1", len(s.TestCases), s.Tests, s.Failures)
	}
	c := s.TestCases[1]
	if c.Name != "[It] "+runCaptureName+" [run, MUST, HOMA-ACK-004]" || c.Failure == nil || c.Status != "failed" ||
		c.Properties == nil || len(c.Properties.Properties) != 1 || c.Properties.Properties[0] != (reporters.JUnitProperty{Name: entryRule, Value: "HOMA-ACK-004"}) {
		t.Errorf("RUN-capture case %+v; want a failed case named and labelled as a spec's, its rule a property", c)
	}
	if v := s.Properties.WithName("SuiteSucceeded"); v != "false" {
		t.Errorf("SuiteSucceeded %q, want false", v)
	}
}

// TestRunCaptureLost: a pass whose capture was lost while its environment
// closed (a suite cleanup failure, as a spool with a torn record gave)
// reports RUN-capture in state error with the reason, and its JUnit case
// is an error saying so; not judged, not left out.
func TestRunCaptureLost(t *testing.T) {
	why := "capture.pcapng lost: spool x: record of 2238199654 bytes; its 16 spools are kept for diagnosis in /r (lost-capture-*.spool)"
	specs := []SpecResult{{Name: "A", Level: "MUST", State: "passed"}}
	env := &Env{RunCaptureLost: why}
	rc, ok := passCaptureResult(env, specs, true)
	if !ok || rc.State != "error" || rc.ShortName() != RunCaptureShort || rc.Failure != "not judged: the pass's capture was lost: "+why {
		t.Fatalf("RUN-capture %v %+v; want an error saying the capture was lost and why", ok, rc)
	}
	if _, ok := passCaptureResult(env, []SpecResult{{Name: "A", State: "skipped"}}, true); ok {
		t.Error("a pass that judged no spec got a RUN-capture result")
	}
	if _, ok := passCaptureResult(&Env{RunCapture: "c.pcapng"}, specs, true); ok {
		t.Error("a capture of a pass whose suite cleanup failed, not lost, was judged")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p1.xml")
	suite := JUnitSuite{Name: "s", TestCases: []JUnitCase{{Name: "[It] A [ack, MUST, HOMA-ACK-002]", Status: "passed"}}, Tests: 1}
	if err := writeJUnitFile(src, JUnitSuites{TestSuites: []JUnitSuite{suite}}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyResult(src, &Result{Specs: append(specs, rc)}, false); err != nil {
		t.Fatal(err)
	}
	s := mergeRead(t, []string{src}).TestSuites[0]
	if len(s.TestCases) != 2 || s.TestCases[1].Error == nil || !strings.Contains(s.TestCases[1].Error.Message, "record of 2238199654 bytes") {
		t.Errorf("JUnit cases %+v; want RUN-capture an error with the reason", s.TestCases)
	}
}
