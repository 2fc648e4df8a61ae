package conformance

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// SpecInfo describes one spec of the suite without running it (List).
type SpecInfo struct {
	// Name is the spec's full, stable name; Short its short name, as
	// --focus takes it (SpecResult.ShortName).
	Name  string `json:"name"`
	Short string `json:"short_name"`
	// Area, Level and Rules are its labels (SpecResult's).
	Area  string   `json:"area"`
	Level string   `json:"level"`
	Rules []string `json:"rules"`
	// Kind is "active" (a tester peer plays the IUT's peer), "passive"
	// (a workload between IUT hosts on a bench: area workload) or
	// "capture" (RunCaptureShort: the pass's whole capture).
	Kind string `json:"kind"`
	// Runs says whether a pass with the listing's options runs it, as
	// run --list's RUNS column prints it: "yes"; "no", Why saying why
	// (known without starting the IUT: a passive spec where the
	// environment builds no bench); for an active spec whose IUT's hello
	// is not known in advance (any but the built-in ref with its own
	// parameters), "if CAP" (the hello must declare capability CAP, Needs,
	// and its parameters allow the spec) or "if params allow" (the
	// parameters and profile of its hello decide; a spec they rule out
	// says why when skipped).
	Runs string `json:"runs"`
	// Needs are the capabilities the IUT's hello must declare for the
	// spec to run (its "needs-" labels); nil for none.
	Needs []string `json:"needs,omitempty"`
	// Support is the older, coarser form of Runs, kept for scripts that
	// read it: "yes", "no", or "hello" for every active spec.
	Support string `json:"support"`
	Why     string `json:"why,omitempty"`
}

// Runs values of an active spec whose IUT's hello decides (SpecInfo.Runs).
const (
	RunsIfParams = "if params allow"
	runsIf       = "if "
)

// Spec kinds (SpecInfo.Kind).
const (
	KindActive  = "active"
	KindPassive = "passive"
	KindCapture = "capture"
)

// List returns the specs a pass with o would run, in run order, without
// running any (Ginkgo's dry run, PreviewSpecs: no environment is built
// and no IUT started): those o's LabelFilter, Rules and Focus select,
// then RunCaptureShort when they select the whole suite, as Run reports
// them. Runs and Support are judged from o's Impl, Params, Env and
// NSWorkloads. Errors: a bad Rules pattern.
func List(o PassOptions) ([]SpecInfo, error) {
	sc, rc, err := suiteConfig(Options{LabelFilter: o.LabelFilter, Rules: o.Rules, Focus: o.Focus})
	if err != nil {
		return nil, err
	}
	rep := PreviewSpecs(suiteDescription, sc, rc)
	// A bench for the passive specs: the simulator always builds one;
	// namespaces with --ns-workloads, or simulated reference hosts for
	// the ref (RunPassFile's Workloads and RefBench).
	bench := o.Env == "sim" || o.NSWorkloads || o.Impl == "ref"
	// The built-in ref's hello is known: every capability (IPv6 in both
	// environments), and parameters under which every active spec runs,
	// unless --param changes them.
	known := o.Impl == "ref" && len(o.Params) == 0
	var out []SpecInfo
	for _, sr := range rep.SpecReports {
		// Dry run: a selected spec "passes", one left out is skipped.
		if sr.LeafNodeType != types.NodeTypeIt || sr.State != types.SpecStatePassed {
			continue
		}
		s := specResult(sr)
		info := SpecInfo{Name: s.Name, Short: s.ShortName(), Area: s.Area, Level: s.Level, Rules: s.Rules, Kind: KindActive, Support: "hello",
			Needs: specNeeds(sr.Labels())}
		if info.Rules == nil {
			info.Rules = []string{}
		}
		switch {
		case s.Area == "workload":
			info.Kind, info.Support = KindPassive, "yes"
			if !bench {
				info.Support, info.Why = "no", errNoBench.Error()
			}
			info.Runs = info.Support
		case known:
			info.Runs = "yes"
		case len(info.Needs) > 0:
			info.Runs = runsIf + strings.Join(info.Needs, ", ")
		default:
			info.Runs = RunsIfParams
		}
		out = append(out, info)
	}
	if o.LabelFilter == "" && o.Rules == "" && len(o.Focus) == 0 && len(out) > 0 {
		out = append(out, SpecInfo{Name: runCaptureName, Short: RunCaptureShort, Area: "run", Level: "MUST",
			Rules: []string{}, Kind: KindCapture, Support: "yes", Runs: "yes"})
	}
	return out, nil
}
