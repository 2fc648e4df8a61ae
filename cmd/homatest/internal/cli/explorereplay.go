package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/homatest/homatest/conformance"
	"github.com/homatest/homatest/explore"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
)

// replayParams sets o.par to the script's parameter overrides (its param
// lines), each overridden by a --param of the same name, and returns them
// with where each came from.
func (o *exploreOpts) replayParams(sc *explore.Script) ([]explore.ReplayParam, error) {
	var used []explore.ReplayParam
	given := map[string]bool{}
	for _, a := range o.params {
		name, _, _ := strings.Cut(a, "=")
		given[name] = true
	}
	var args []string
	for _, a := range sc.ParamArgs {
		if name, _, _ := strings.Cut(a, "="); !given[name] {
			used = append(used, explore.ReplayParam{Arg: a, From: "script"})
			args = append(args, a)
		}
	}
	for _, a := range o.params {
		used = append(used, explore.ReplayParam{Arg: a, From: "--param"})
		args = append(args, a)
	}
	par, err := parseParams(args)
	if err != nil {
		return nil, err
	}
	if err := checkRefParams(o.impl, par, "param"); err != nil {
		return nil, err
	}
	o.par = par
	return used, nil
}

// paramsUsed renders a replay's parameter overrides for its summary.
func paramsUsed(used []explore.ReplayParam) string {
	if len(used) == 0 {
		return "the IUT's defaults (the script has no param line, no --param given)"
	}
	var parts []string
	for _, p := range used {
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Arg, p.From))
	}
	return strings.Join(parts, ", ")
}

// faultsUsed renders a replay's fault knobs for its summary: each with
// where it came from, or why there is none.
func (o *exploreOpts) faultsUsed(sc *explore.Script, used []explore.ReplayParam) string {
	if len(used) > 0 {
		var parts []string
		for _, k := range used {
			parts = append(parts, fmt.Sprintf("%s (%s)", k.Arg, k.From))
		}
		return strings.Join(parts, ", ")
	}
	switch {
	case o.impl != "ref" && !o.faultSet:
		return "none (the script's are not asked of --impl " + o.impl + "; --fault KNOB asks its agent for one)"
	case o.faultSet && len(sc.Faults) > 0:
		return fmt.Sprintf("none (--fault \"\" instead of the script's %s)", strings.Join(sc.Faults, ", "))
	case o.faultSet:
		return "none (--fault \"\")"
	}
	return "none (the script's iut line names none)"
}

// runReplay replays --replay's script.
func (o *exploreOpts) runReplay(ctx context.Context, out io.Writer) error {
	if err := checkInputFile("--replay", o.replay, "give a failure-N-RULE.homa script of an explore run folder"); err != nil {
		return usageErr(err)
	}
	f, err := os.Open(o.replay)
	if err != nil {
		return usageErr(fmt.Errorf("--replay: %w", err))
	}
	sc, err := explore.ParseScript(f)
	f.Close()
	if err != nil {
		return usageErr(fmt.Errorf("--replay %s: %w", o.replay, err))
	}
	used, err := o.replayParams(sc)
	if err != nil {
		return usageErr(fmt.Errorf("--replay %s: %w", o.replay, err))
	}
	faults, from := sc.Faults, "script"
	if o.faultSet {
		faults, from = nil, "--fault"
		if o.fault != "" {
			faults = []string{o.fault}
		}
	}
	if o.impl != "ref" && !o.faultSet {
		// The script's knobs are asked of the reference implementation;
		// another IUT's agent gets one only when --fault asks for it (an
		// agent with capability faults, as homatest run --fault does).
		faults = nil
	}
	for _, k := range faults {
		if !knownFault(k) {
			return usageErr(fmt.Errorf("--replay %s: the iut line names fault %q, which this homatest does not have (homatest faults lists them)", o.replay, k))
		}
	}
	env, err := o.envFor(faults)
	if err != nil {
		return usageErr(err)
	}
	// The run folder once the script and flags are good (a usage error
	// leaves nothing behind); removed again if the replay wrote nothing
	// into it.
	undo, err := harness.MakeDir(o.artifacts)
	if err != nil {
		return usageErr(artifactsErr(err))
	}
	defer func() {
		if !undo.Changed() {
			undo.Remove()
		}
	}()
	res, err := explore.Replay(ctx, env, sc, o.sel, o.lvl)
	if errors.Is(err, context.Canceled) {
		return &ExitError{Code: 130, Err: errors.New("interrupted")}
	}
	if err != nil {
		undo.Remove() // a failed setup: what it wrote (topology, agents' logs) goes too
		return usageErr(envErr("replay "+o.replay, err))
	}
	res.Params = used
	res.Faults = []explore.ReplayParam{}
	for _, k := range faults {
		res.Faults = append(res.Faults, explore.ReplayParam{Arg: k, From: from})
	}
	capPath := filepath.Join(o.artifacts, strings.TrimSuffix(filepath.Base(o.replay), filepath.Ext(o.replay))+"-replay.pcapng")
	if len(res.Capture) > 0 {
		if err := writeBytes(capPath, res.Capture); err != nil {
			return usageErr(artifactsErr(err))
		}
		// The replay's parameters and stalls beside the capture, so that
		// homatest check judges it as the replay did.
		if err := conformance.WriteCheckSidecars(capPath, res.Judged, res.Stalls, exploreSidecarWhy); err != nil {
			return usageErr(artifactsErr(err))
		}
	}
	w := &errWriter{w: out}
	if o.output == "json" {
		jsonout.Write(w, res)
	} else {
		switch {
		case res.Reproduced:
			fmt.Fprintf(w, "reproduced: %s\n", res.Failure)
		case res.Failure != nil:
			fmt.Fprintf(w, "failed otherwise: %s (the script shows %s)\n", res.Failure, sc.Rule)
		default:
			fmt.Fprintf(w, "not reproduced: no failure (the script shows %s)\n", sc.Rule)
		}
		fmt.Fprintf(w, "  %s, %s; capture %s\n", plural.Of(res.Sent, "tester packet", "tester packets"), plural.Of(res.Events, "event", "events"), capPath)
		fmt.Fprintf(w, "  parameters: %s\n", paramsUsed(used))
		fmt.Fprintf(w, "  fault knobs: %s\n", o.faultsUsed(sc, res.Faults))
		if res.ParamsDiffer != "" {
			fmt.Fprintf(w, "  warning: %s\n", res.ParamsDiffer)
		}
		for _, d := range res.Divergences {
			fmt.Fprintf(w, "  diverged: %s\n", d)
		}
	}
	if w.err != nil {
		return usageErr(fmt.Errorf("write output: %w", w.err))
	}
	if res.Failure != nil {
		return &ExitError{Code: ExitViolations, Err: fmt.Errorf("replay of %s: %s", o.replay, res.Failure.Rule)}
	}
	return nil
}
