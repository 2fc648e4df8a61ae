package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/homa"
)

// TestRerunInconclusive folds reruns of specs with timing-inconclusive
// findings into the pass: a quiet clean rerun keeps the spec passed (its
// findings still reported), a failing rerun fails it, a rerun that stalled
// again is rerun once more, and specs without such findings are not rerun.
func TestRerunInconclusive(t *testing.T) {
	res := &Result{Specs: []SpecResult{
		{Name: "A quiet", State: "passed", TimingInconclusive: []string{"HOMA-X: late (stall)"}},
		{Name: "B reproduces", State: "passed", TimingInconclusive: []string{"HOMA-Y: late (stall)"}},
		{Name: "C stalls again", State: "passed", TimingInconclusive: []string{"HOMA-Z: late (stall)"}},
		{Name: "D clean", State: "passed"},
		{Name: "E failed", State: "failed", TimingInconclusive: []string{"HOMA-W: late (stall)"}},
	}}
	var calls [][]string
	run := func(name string, focus []string) (*Result, error) {
		calls = append(calls, focus)
		var out Result
		for _, f := range focus {
			switch f {
			case "A quiet":
				out.Specs = append(out.Specs, SpecResult{Name: f, State: "passed"})
			case "B reproduces":
				out.Specs = append(out.Specs, SpecResult{Name: f, State: "failed", Failure: "HOMA-Y: late"})
			case "C stalls again":
				out.Specs = append(out.Specs, SpecResult{Name: f, State: "passed", TimingInconclusive: []string{"HOMA-Z: late again (stall)"}})
			default:
				t.Errorf("rerun of %q, which had no inconclusive finding or had failed", f)
			}
		}
		return &out, nil
	}
	if err := rerunInconclusive("pass-1", res, run); err != nil {
		t.Fatal(err)
	}
	if len(calls) != maxReruns || len(calls[0]) != 3 || len(calls[1]) != 1 || calls[1][0] != "C stalls again" {
		t.Fatalf("reruns %v, want [A B C] then [C] up to %d reruns", calls, maxReruns)
	}
	want := []struct {
		state, rerun     string
		reruns, findings int
	}{{"passed", "quiet", 1, 1}, {"failed", "failed", 1, 1}, {"inconclusive", "inconclusive", maxReruns, 1 + maxReruns}, {"passed", "", 0, 0}, {"failed", "", 0, 1}}
	for i, w := range want {
		s := res.Specs[i]
		if s.State != w.state || s.Rerun != w.rerun || s.Reruns != w.reruns || len(s.TimingInconclusive) != w.findings {
			t.Errorf("%s: state %s rerun %q reruns %d findings %d; want %s %q %d %d", s.Name, s.State, s.Rerun, s.Reruns, len(s.TimingInconclusive), w.state, w.rerun, w.reruns, w.findings)
		}
	}
	if !strings.Contains(res.Specs[1].Failure, "reproduced on rerun 1") {
		t.Errorf("B's failure %q does not say it reproduced on a rerun", res.Specs[1].Failure)
	}
	if f := res.Specs[2].Failure; !strings.Contains(f, fmt.Sprintf("timing-inconclusive: not judged (in its pass and %d reruns)", maxReruns)) || !strings.Contains(f, "late again") {
		t.Errorf("C's failure %q does not say it was never judged, with its last finding", f)
	}
}

// TestNeverJudgedIsIncomplete: a spec timing-inconclusive in its pass and
// every rerun is not a pass: the run is incomplete (exit 2) with or
// without --strict, the tally counts it and every timing-inconclusive
// finding, and its JUnit case is an error of type "inconclusive" (a spec
// a rerun failed, a failure).
func TestNeverJudgedIsIncomplete(t *testing.T) {
	res := &Result{Specs: []SpecResult{
		{Name: "A judged", State: "passed", Level: "MUST"},
		{Name: "C stalls again", State: "passed", Level: "MUST", TimingInconclusive: []string{"HOMA-Z: late (stall)"}},
		{Name: "B reproduces", State: "passed", Level: "MUST", TimingInconclusive: []string{"HOMA-Y: late (stall)"}},
	}}
	run := func(name string, focus []string) (*Result, error) {
		var out Result
		for _, f := range focus {
			if f == "B reproduces" && name == "pass-1-rerun-1" {
				out.Specs = append(out.Specs, SpecResult{Name: f, State: "failed", Failure: "HOMA-Y: late"})
				continue
			}
			out.Specs = append(out.Specs, SpecResult{Name: f, State: "passed", TimingInconclusive: []string{"HOMA-Z: late again (stall)"}})
		}
		return &out, nil
	}
	if err := rerunInconclusive("pass-1", res, run); err != nil {
		t.Fatal(err)
	}
	for _, strict := range []bool{false, true} {
		tl := Count([]*Result{res}, strict)
		if want := 2 + maxReruns; tl.Inconclusive != 1 || tl.TimingInconclusive != want || tl.Run != 2 {
			t.Errorf("strict %v: tally inconclusive %d, timing findings %d, run %d; want 1, %d (1 of B, 1 and one a rerun of C), 2", strict, tl.Inconclusive, tl.TimingInconclusive, tl.Run, want)
		}
		if v := tl.Verdict(); v != "fail" {
			t.Errorf("strict %v: verdict %s with a failed spec, want fail", strict, v)
		}
	}
	// Without the failed spec, the verdict is incomplete, not pass.
	only := &Result{Specs: res.Specs[:2]}
	for _, strict := range []bool{false, true} {
		if v := Count([]*Result{only}, strict).Verdict(); v != "incomplete" {
			t.Errorf("strict %v: verdict %s with a spec never judged, want incomplete", strict, v)
		}
	}
	// The pass's JUnit (written before the reruns) follows the reruns.
	got := applyPassed(t, res, "resend, MUST, HOMA-RESEND-001", false)
	cs := got.TestSuites[0].TestCases
	if cs[0].Status != "passed" || cs[0].Error != nil || cs[0].Failure != nil {
		t.Errorf("judged spec: status %s, error %v, failure %v; want passed", cs[0].Status, cs[0].Error, cs[0].Failure)
	}
	if cs[1].Status != "inconclusive" || cs[1].Error == nil || cs[1].Error.Type != "inconclusive" || !strings.Contains(cs[1].Error.Message, "not judged") {
		t.Errorf("never judged spec: status %s, error %+v; want an error of type inconclusive saying it was not judged", cs[1].Status, cs[1].Error)
	}
	if cs[2].Status != "failed" || cs[2].Failure == nil || !strings.Contains(cs[2].Failure.Message, "reproduced on rerun 1") {
		t.Errorf("spec a rerun failed: status %s, failure %+v; want failed", cs[2].Status, cs[2].Failure)
	}
	if e, f := got.TestSuites[0].Errors, got.TestSuites[0].Failures; e != 1 || f != 1 {
		t.Errorf("suite errors %d failures %d, want 1 and 1", e, f)
	}
}

// TestFaultCatalogue: every knob of the fault catalogue says what it
// reproduces and names at least one rule of the registry that catches it.
func TestFaultCatalogue(t *testing.T) {
	fs := homa.FaultNames()
	if len(fs) < 25 {
		t.Fatalf("%d knobs in the catalogue, want at least 25", len(fs))
	}
	for _, f := range fs {
		if f.Doc == "" || len(f.Reproduces) == 0 || len(f.CaughtBy) == 0 {
			t.Errorf("%s: doc %q, reproduces %q, caught by %v: want all three", f.Name, f.Doc, f.Reproduces, f.CaughtBy)
		}
		for _, r := range f.CaughtBy {
			if !knownRules[r] {
				t.Errorf("%s: caught by %s, which the registry lacks", f.Name, r)
			}
		}
	}
}

// TestLabelsValidated: a spec label naming no rule, area or level stops
// the suite as it is built.
func TestLabelsValidated(t *testing.T) {
	for _, c := range []struct{ area, level, rule, want string }{
		{"grant", "MUST", "HOMA-GRANT-999", "HOMA-GRANT-999 names no rule"},
		{"grants", "MUST", "HOMA-GRANT-002", "unknown area grants"},
		{"grant", "MAY", "HOMA-GRANT-002", "level MAY"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("labels(%q, %q, %q): panic %v, want one with %q", c.area, c.level, c.rule, r, c.want)
				}
			}()
			labels(c.area, c.level, c.rule)
		}()
	}
	if got := labels("grant", "MUST", "HOMA-GRANT-002"); len(got) != 2 {
		t.Errorf("labels of a good spec: %v", got)
	}
}

// TestSetAsideEarlierPasses: a run reusing a folder sets aside the pass
// folders an earlier run left there (and nothing of the user's), puts them
// back on Restore (a usage error) and removes them on Discard, and a pass
// starts in an empty folder even when one of its name exists.
func TestSetAsideEarlierPasses(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"pass-1/pass.json", "pass-1/capture.pcapng", "pass-3/pass.json", "fault-no-grants/pass.json", "notes/pass-2.txt", "report.html"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	s := &Supervisor{Dir: dir, Command: []string{"/bin/true"}}
	early, err := s.SetAsideEarlierPasses()
	if err != nil || strings.Join(early.Names, " ") != "fault-no-grants pass-1 pass-3" {
		t.Fatalf("set aside %v (%v), want fault-no-grants pass-1 pass-3", early, err)
	}
	kept := func(want ...string) {
		t.Helper()
		var got []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("run folder holds %v, want %v", got, want)
		}
	}
	kept(EarlierFolder, "notes", "report.html")
	// The new run made its pass-1, then ended in a usage error.
	os.MkdirAll(filepath.Join(dir, "pass-1"), 0o755)
	os.WriteFile(filepath.Join(dir, "pass-1", "pass.json"), []byte("new"), 0o644)
	if err := early.Restore(); err != nil {
		t.Fatal(err)
	}
	kept("fault-no-grants", "notes", "pass-1", "pass-3", "report.html")
	if b, _ := os.ReadFile(filepath.Join(dir, "pass-1", "capture.pcapng")); string(b) != "x" {
		t.Errorf("the earlier pass-1 was not restored")
	}
	if early, err = s.SetAsideEarlierPasses(); err != nil {
		t.Fatal(err)
	}
	if err := early.Discard(); err != nil {
		t.Fatal(err)
	}
	kept("notes", "report.html")
	stale := filepath.Join(dir, "pass-1", "capture.pcapng")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	os.WriteFile(stale, []byte("x"), 0o644)
	if _, _, err := s.Pass("pass-1", PassOptions{}); err == nil {
		t.Errorf("a pass whose child writes no result: no error")
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the earlier run's capture is still in the new pass's folder")
	}
	if _, err := os.Stat(filepath.Join(dir, "pass-1", "pass.json")); err != nil {
		t.Errorf("the pass's options file: %v", err)
	}
}

// TestRerunInterruptedKeepsFinished: a rerun interrupted part-way (its
// finished specs returned with ErrInterrupted, the one cut short in
// Running) still counts for the specs it finished, and names the one cut
// short as the rerun's; a spec whose rerun did not finish stays never
// judged. Before, the interrupt discarded the rerun: A, rerun quietly,
// stayed inconclusive and nothing said what was cut short.
func TestRerunInterruptedKeepsFinished(t *testing.T) {
	res := &Result{Specs: []SpecResult{
		{Name: "A quiet", State: "passed", TimingInconclusive: []string{"HOMA-X: late (stall)"}},
		{Name: "B cut short", State: "passed", TimingInconclusive: []string{"HOMA-Y: late (stall)"}},
		{Name: "C failed again", State: "passed", TimingInconclusive: []string{"HOMA-Z: late (stall)"}},
	}}
	run := func(name string, focus []string) (*Result, error) {
		return &Result{Specs: []SpecResult{{Name: "A quiet", State: "passed"}, {Name: "C failed again", State: "failed", Failure: "HOMA-Z: late"}},
			Running: []string{"B cut short"}}, ErrInterrupted
	}
	if err := rerunInconclusive("pass-1", res, run); err != ErrInterrupted {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	want := []struct{ state, rerun string }{{"passed", "quiet"}, {"inconclusive", ""}, {"failed", "failed"}}
	for i, w := range want {
		if s := res.Specs[i]; s.State != w.state || s.Rerun != w.rerun {
			t.Errorf("%s: state %s rerun %q, want %s %q", s.Name, s.State, s.Rerun, w.state, w.rerun)
		}
	}
	if len(res.Running) != 1 || res.Running[0] != "B cut short (rerun 1)" {
		t.Errorf("running %q, want [B cut short (rerun 1)]", res.Running)
	}
}
