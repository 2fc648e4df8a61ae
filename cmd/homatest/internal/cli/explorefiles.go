package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/explore"
	"github.com/homatest/homatest/internal/atomicfile"
)

// writeBytes writes b to path whole or not at all.
func writeBytes(path string, b []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// shrinkRuns maps --shrink-runs to explore.Config.ShrinkRuns (0: none).
func shrinkRuns(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// newExploreProgress returns explore's progress line on w (the session
// reports about once a second; a CI log gets a line at the start); nil
// with --quiet.
func (o *exploreOpts) newExploreProgress(w io.Writer) *progressLine {
	if o.quiet {
		return nil
	}
	return newProgressLine(w, "explore", 0, false)
}

// failurePaths are the files written for one failure.
type failurePaths struct{ script, capture string }

// writeFailures writes each failure's script and capture into the run
// folder.
func (o *exploreOpts) writeFailures(res *explore.Result) ([]failurePaths, error) {
	var out []failurePaths
	for i, f := range res.Failures {
		script := o.scriptPath(i+1, f.Rule)
		p := failurePaths{script: script, capture: strings.TrimSuffix(script, ".homa") + ".pcapng"}
		if f.Script == "" {
			// Interrupted before its shrinking ended: nothing to replay.
			out = append(out, failurePaths{})
			continue
		}
		if err := writeBytes(p.script, []byte(f.Script)); err != nil {
			return nil, artifactsErr(err)
		}
		if len(f.Capture) > 0 {
			if err := writeBytes(p.capture, f.Capture); err != nil {
				return nil, artifactsErr(err)
			}
			// The session's parameters and stalls beside the capture, so
			// that homatest check judges it as the session did.
			if err := conformance.WriteCheckSidecars(p.capture, res.Params, res.Stalls, exploreSidecarWhy); err != nil {
				return nil, artifactsErr(err)
			}
		} else {
			p.capture = ""
		}
		out = append(out, p)
	}
	return out, nil
}

// exploreSidecarWhy is the comment of the .params sidecar beside an
// explore capture.
const exploreSidecarWhy = "The parameters homatest explore judged the IUT with (its hello's, with the environment's slack and jitter)."

// writeJUnit writes one test case per rule judged: failed (with the
// shrunk failure), passed when exercised, skipped when not.
func (o *exploreOpts) writeJUnit(res *explore.Result) error {
	s := conformance.JUnitSuite{Name: fmt.Sprintf("homatest explore %s %s (seed %d)", res.Impl, res.Env, res.Seed)}
	byRule := map[string]*explore.Found{}
	for _, f := range res.Failures {
		byRule[f.Rule] = f
	}
	add := func(c conformance.JUnitCase) {
		s.TestCases = append(s.TestCases, c)
		s.Tests++
	}
	for _, r := range res.Coverage.Rules {
		c := conformance.JUnitCase{Name: r.ID, Status: "passed", Classname: "homa." + strings.ToLower(strings.Split(r.ID, "-")[1])}
		switch f := byRule[r.ID]; {
		case f != nil:
			c.Status = "failed"
			c.Failure = &conformance.JUnitFailure{Message: fmt.Sprintf("%s %s: %s", f.Rule, f.Level, f.Why), Type: f.Level.String(), Description: f.Script}
			s.Failures++
		case !r.Exercised && r.NeedsCapture:
			c.Status = "skipped"
			c.Skipped = &conformance.JUnitSkipped{Message: "judges what only a capture holds (the IP header): the explorer's packets cannot exercise it"}
			s.Skipped++
		case !r.Exercised:
			c.Status = "skipped"
			c.Skipped = &conformance.JUnitSkipped{Message: "not exercised at a packet the IUT sent"}
			s.Skipped++
		}
		add(c)
	}
	for _, f := range res.Failures {
		if strings.HasPrefix(f.Rule, "APP-") {
			add(conformance.JUnitCase{Name: f.Rule, Status: "failed", Classname: "homa.application",
				Failure: &conformance.JUnitFailure{Message: f.Why, Type: f.Level.String(), Description: f.Script}})
			s.Failures++
		}
	}
	var b strings.Builder
	if err := conformance.WriteJUnit(&b, conformance.JUnitSuites{TestSuites: []conformance.JUnitSuite{s}}); err != nil {
		return err
	}
	return flagWriteErr("--junit", o.junit, writeBytes(o.junit, []byte(b.String())))
}
