package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

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

// progress returns the progress callback: one line a second on a
// terminal (rewritten in place), one every ten seconds otherwise; nil
// with --quiet.
func (o *exploreOpts) progress(w io.Writer) func(explore.Progress) {
	if o.quiet {
		return nil
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	last := time.Time{}
	return func(p explore.Progress) {
		switch {
		case tty:
			fmt.Fprintf(w, "\r\033[Kexplore: %s", p)
		case time.Since(last) >= 10*time.Second:
			last = time.Now()
			fmt.Fprintf(w, "explore: %s\n", p)
		}
	}
}

// failurePaths are the files written for one failure.
type failurePaths struct{ script, capture string }

// writeFailures writes each failure's script and capture into the run
// folder.
func (o *exploreOpts) writeFailures(res *explore.Result) ([]failurePaths, error) {
	var out []failurePaths
	for i, f := range res.Failures {
		base := filepath.Join(o.artifacts, fmt.Sprintf("failure-%d-%s", i+1, f.Rule))
		p := failurePaths{script: base + ".homa", capture: base + ".pcapng"}
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
			// The session's parameters beside the capture, so that
			// homatest check judges it as the session did.
			prm := res.Params
			if err := prm.WriteFile(p.capture+".params", "The parameters homatest explore judged the IUT with (its hello's)."); err != nil {
				return nil, artifactsErr(err)
			}
		} else {
			p.capture = ""
		}
		out = append(out, p)
	}
	return out, nil
}

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
