package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/spec"
)

// readParamsFile reads the NAME=VALUE lines (# comments and blank lines
// skipped) of the file next to a capture that says which parameters its
// run judged it with (homatest run writes capture.pcapng.params). It
// returns nil when there is none; one that cannot be read (a directory of
// that name, no permission) is an error, as a garbled one is, never
// silently the profile's defaults.
func readParamsFile(capture string) ([]string, string, error) {
	name := capture + ".params"
	b, err := readSidecar(name)
	if b == nil || err != nil {
		return nil, name, err
	}
	var kvs []string
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "=") {
			return nil, name, fmt.Errorf("%s line %d: %q is not NAME=VALUE", name, i+1, l)
		}
		kvs = append(kvs, l)
	}
	return kvs, name, nil
}

// readSidecar reads the file name next to a capture: nil and no error
// when there is none, an error naming it when it cannot be read (e.g. a
// directory).
func readSidecar(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read it (%v): remove or fix it", name, errors.Unwrap(err))
	}
	if b == nil {
		b = []byte{} // present but empty
	}
	return b, nil
}

// readStallsFile reads the stalls a run measured while the capture was
// taken: capture+".stalls.json" (homatest run) or stalls.json in the
// capture's folder (scenario run). It returns nil when there is none.
func readStallsFile(capture string) ([]stall.Span, string, error) {
	for _, name := range []string{capture + ".stalls.json", filepath.Join(filepath.Dir(capture), "stalls.json")} {
		b, err := readSidecar(name)
		if err != nil {
			return nil, name, err
		}
		if b == nil {
			continue
		}
		var spans []stall.Span
		if err := json.Unmarshal(b, &spans); err != nil {
			return nil, name, fmt.Errorf("%s: %w", name, err)
		}
		return spans, name, nil
	}
	return nil, "", nil
}

// excuseStalls moves to the inconclusive findings of rep every timing
// violation (one with a tolerance) a measured stall overlaps, within its
// tolerance of its frame's time (stall.Window), and could account for (stall.Accounting:
// a violation later than the stalls' summed loss stands), as the run's own
// check does (stall.Explaining); it returns them.
func excuseStalls(rep *spec.Report, spans []stall.Span) []spec.Finding {
	if len(spans) == 0 {
		return nil
	}
	var excused []spec.Finding
	kept := rep.Violations[:0]
	for _, f := range rep.Violations {
		if f.Timing() {
			if sp := stall.Window(f, f.Time, f.Time, spans); len(sp) > 0 {
				f.Why = fmt.Sprintf("%s (timing-inconclusive: %s)", f.Why, sp[0])
				rep.Inconclusive = append(rep.Inconclusive, f)
				for i := range rep.Rules {
					if rep.Rules[i].ID == f.Rule {
						rep.Rules[i].Violated--
						rep.Rules[i].Inconclusive++
					}
				}
				excused = append(excused, f)
				continue
			}
		}
		kept = append(kept, f)
	}
	rep.Violations = kept
	return excused
}

// stallExplains reports whether a stall of spans explains finding f, as
// excuseStalls decides it.
func stallExplains(f spec.Finding, spans []stall.Span) bool {
	return f.Timing() && len(stall.Window(f, f.Time, f.Time, spans)) > 0
}

// stallsHint returns FileResult.StallsHint for the violations rep still
// holds once spans excused theirs: empty when no timing violation is
// left. With no stalls file (stallsFile empty) it speaks only for a
// run's capture (its .params file beside it, paramsFile); with one, only
// of violations outside the time span its stalls cover (plus a second
// either side), which no stall of that run can have excused (a file of
// no stalls, [], excuses nothing anywhere: no hint).
func stallsHint(capture, paramsFile, stallsFile string, rep *spec.Report, spans []stall.Span) string {
	var timing, outside int
	var from, to time.Time
	for i, sp := range spans {
		if i == 0 || sp.From.Before(from) {
			from = sp.From
		}
		if i == 0 || sp.To.After(to) {
			to = sp.To
		}
	}
	for _, f := range rep.Violations {
		if !f.Timing() {
			continue
		}
		timing++
		if len(spans) > 0 && (f.Time.Before(from.Add(-time.Second)) || f.Time.After(to.Add(time.Second))) {
			outside++
		}
	}
	switch {
	case timing == 0:
		return ""
	case stallsFile == "" && paramsFile != "":
		return fmt.Sprintf("no %s.stalls.json beside the capture, though its run's .params is: %s not checked against the stalls the run measured (a homatest run writes both; a copy or rename carries neither): copy the run's .stalls.json to this name",
			capture, plural.Of(timing, "timing violation was", "timing violations were"))
	case outside > 0:
		return fmt.Sprintf("%s outside the span the stalls file covers (%s to %s): its stalls cannot excuse them; were the frames retimed (editcap -t) or is the file another run's?",
			plural.Of(outside, "timing violation lies", "timing violations lie"), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	}
	return ""
}
