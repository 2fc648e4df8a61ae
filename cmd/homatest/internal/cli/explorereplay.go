package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/homatest/homatest/explore"
)

// runReplay replays --replay's script.
func (o *exploreOpts) runReplay(ctx context.Context, out io.Writer) error {
	f, err := os.Open(o.replay)
	if err != nil {
		return usageErr(fmt.Errorf("--replay: %w", err))
	}
	sc, err := explore.ParseScript(f)
	f.Close()
	if err != nil {
		return usageErr(fmt.Errorf("--replay %s: %w", o.replay, err))
	}
	faults := sc.Faults
	if o.fault != "" {
		faults = []string{o.fault}
	}
	if o.impl != "ref" {
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
	undo, err := makeRunDir(o.artifacts)
	if err != nil {
		return usageErr(err)
	}
	defer undo()
	res, err := explore.Replay(ctx, env, sc, o.sel, o.lvl)
	if errors.Is(err, context.Canceled) {
		return &ExitError{Code: 130, Err: errors.New("interrupted")}
	}
	if err != nil {
		return usageErr(fmt.Errorf("replay %s: %w", o.replay, err))
	}
	capPath := filepath.Join(o.artifacts, strings.TrimSuffix(filepath.Base(o.replay), filepath.Ext(o.replay))+"-replay.pcapng")
	if len(res.Capture) > 0 {
		if err := writeBytes(capPath, res.Capture); err != nil {
			return usageErr(artifactsErr(err))
		}
	}
	w := &errWriter{w: out}
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(res)
	} else {
		switch {
		case res.Reproduced:
			fmt.Fprintf(w, "reproduced: %s\n", res.Failure)
		case res.Failure != nil:
			fmt.Fprintf(w, "failed otherwise: %s (the script shows %s)\n", res.Failure, sc.Rule)
		default:
			fmt.Fprintf(w, "not reproduced: no failure (the script shows %s)\n", sc.Rule)
		}
		fmt.Fprintf(w, "  %d tester packets, %d events; capture %s\n", res.Sent, res.Events, capPath)
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
