package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/check"
	"github.com/homatest/homatest/spec"
)

// RunCaptureShort is the short name of the pass's last result: its whole
// capture judged as one (judgeRunCapture), after a pass of the whole
// suite. It is no Ginkgo spec: --focus cannot select it, and a rerun of
// it is a rerun of the pass.
const RunCaptureShort = "RUN-capture"

// runCaptureName is the full name of the RunCaptureShort result.
const runCaptureName = "run " + RunCaptureShort + ": the pass's whole capture, judged as homatest check judges it, charges the IUT nothing the specs did not (what it sent after a spec ended: an ack of an RPC it gave up, a reused id)"

// passFindings are the findings charged to the IUT that the pass's specs
// judged (checkRules, saveCapture), by findingKey: the whole capture's
// judgement reports only the others, which no spec's exchange held.
var passFindings = map[string]bool{}

// notePassFindings records fs among passFindings.
func notePassFindings(fs []spec.Finding) {
	for _, f := range fs {
		passFindings[findingKey(f)] = true
	}
}

// findingKey keys a finding by rule and RPC (by rule and the RPC an ack
// names, for a finding that rests on one), so that a spec's finding and
// the same finding in the whole capture, at other frame numbers, match.
func findingKey(f spec.Finding) string {
	k := f.Rule
	if f.RPC != nil {
		k += " " + f.RPC.Label()
	}
	if f.Also != nil {
		k += " also " + f.Also.Label()
	}
	return k
}

// judgeRunCapture judges the pass's capture at path, every packet of its
// active specs' hosts (Env.RunCapture), as homatest check does (the
// testers' frames marked, the run's parameters and measured stalls beside
// it), and returns it as the result RunCaptureShort. Each spec judges its
// own exchange only, so an IUT breaking a rule with what it sends after a
// spec ended (acking an RPC it timed out, reusing the id of an RPC it
// gave up, a RESEND for an RPC the tester has forgotten) passed every
// spec. The result fails on a MUST finding charged to the IUT that no
// spec reported (passFindings); another SHOULD finding is a warning
// (OtherShould). In real time only findings that judge no time count:
// the specs judge the timers, rerunning those a stall left unjudged, and
// between specs no measured noise widens the windows. The result is in
// state error, with the reason, when the capture cannot be checked.
func judgeRunCapture(path string, iut TargetInfo, profile string, virtual bool) (res SpecResult) {
	start := time.Now()
	res = SpecResult{Name: runCaptureName, Area: "run", Level: "MUST", State: "passed", Rules: []string{}}
	defer func() { res.Duration = time.Since(start) }()
	fr := check.File(check.Options{Profile: profile, CapturePoint: "auto", Level: spec.Should}, path)
	if fr.Error != "" {
		res.State, res.Failure = "error", fmt.Sprintf("checking the pass's capture %s: %s", path, fr.Error)
		res.Capture = path
		return res
	}
	if fr.Report == nil {
		return res
	}
	var must, should []string
	for _, f := range spec.Charged(fr.Report.Violations, iut.Addr, iut.Addr6) {
		if fr.TesterCharged(&f) || passFindings[findingKey(f)] || !virtual && f.Timing() {
			continue
		}
		line := fmt.Sprintf("%s frame %d: %s", f.Rule, f.Frame, f.Why)
		if !slices.Contains(res.Rules, f.Rule) {
			res.Rules = append(res.Rules, f.Rule)
		}
		if f.Level == spec.Must {
			must = append(must, line)
		} else {
			should = append(should, line)
		}
	}
	res.OtherShould = capShould(should)
	if len(must) == 0 && len(should) > 0 {
		// Its findings are SHOULD ones: a warning, whose rules line
		// reads "(SHOULD)".
		res.Level = "SHOULD"
	}
	if len(must) > 0 {
		res.State, res.Capture = "failed", path
		res.Failure = fmt.Sprintf("MUST violations charged to the IUT that no spec's exchange held, in the pass's whole capture (homatest check %s): %s", path, strings.Join(must, "; "))
	}
	return res
}

// runCaptureLost is the result RunCaptureShort when the pass's capture
// could not be completed (Env.RunCaptureLost gives why): in state error,
// not judged.
func runCaptureLost(why string) SpecResult {
	return SpecResult{Name: runCaptureName, Area: "run", Level: "MUST", State: "error", Rules: []string{},
		Failure: "not judged: the pass's capture was lost: " + why}
}
