package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
)

// cleanupReport is the JSON form of a cleanup.
type cleanupReport struct {
	DryRun bool `json:"dry_run"`
	// Leftovers found (all of them are removed unless DryRun).
	Leftovers []harness.Leftover `json:"leftovers"`
	// Removed describes what was removed, in order.
	Removed []string `json:"removed"`
	// Live lists runs skipped because their harness still runs.
	Live  []harness.RunID `json:"live_runs_skipped"`
	Error string          `json:"error,omitempty"`
}

func newCleanupCmd() *cobra.Command {
	var (
		output string
		dryRun bool
		run    string
	)
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove namespaces, interfaces and processes left by killed runs",
		Long: `Cleanup removes what a killed homatest run left behind: network namespaces
in /run/netns named ht<run id>-* (a run id is 6 lowercase hex digits), the
processes still running inside them, interfaces with such names in the root
namespace, and stale run locks in /run/homatest. Nothing else is touched.
Runs whose harness is still alive (it holds its lock) are skipped.

Needs root, except with --dry-run.

Exit codes: 0 everything found removed (or listed, with --dry-run; or
nothing found); 2 a bad --run, no root without --dry-run, output that could
not be written, or something that could not be removed: the output lists
what was, the error line what was not (run it again, or remove that by
hand). An interrupt (Ctrl-C, SIGINT or SIGTERM) does not stop it half-way:
it finishes and exits as above.`,
		Example: `  # see what would be removed
  sudo homatest cleanup --dry-run
  # remove everything killed runs left
  sudo homatest cleanup
  # only run 3f9a1c, as JSON
  sudo homatest cleanup --run 3f9a1c -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prefix := ""
			if run != "" {
				prefix = "ht" + strings.TrimPrefix(run, "ht")
			}
			rep := cleanupReport{DryRun: dryRun, Removed: []string{}}
			var err error
			if rep.Leftovers, err = harness.Leftovers(prefix); err != nil {
				return usageErr(err)
			}
			rep.Live = harness.LiveRuns(prefix)
			if !dryRun {
				rep.Removed, err = harness.Cleanup(prefix)
				if errors.Is(err, harness.ErrNotRoot) {
					return usageErr(errors.New("cleanup needs root: run it with sudo"))
				}
				if err != nil {
					rep.Error = err.Error()
				}
			}
			if rep.Leftovers == nil {
				rep.Leftovers = []harness.Leftover{}
			}
			if rep.Removed == nil {
				rep.Removed = []string{}
			}
			if rep.Live == nil {
				rep.Live = []harness.RunID{}
			}
			w := &errWriter{w: cmd.OutOrStdout()}
			if output == "json" {
				jsonout.Write(w, rep)
			} else {
				writeCleanupText(w, rep)
			}
			if w.err != nil {
				return usageErr(fmt.Errorf("write output: %w", w.err))
			}
			if err != nil {
				// One line: the details are in the output above.
				return usageErr(fmt.Errorf("cleanup removed %d things, could not remove others: %s",
					len(rep.Removed), strings.ReplaceAll(err.Error(), "\n", "; ")))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	f.StringVar(&run, "run", "", "only this run id (6 hex digits, e.g. 3f9a1c; without --run: every killed run)")
	outputVar(f, &output, "what is (or would be) removed", "text", "json")
	cmd.PreRunE = func(c *cobra.Command, _ []string) error {
		// The run id first: a mistyped one is the mistake to fix, root or not.
		switch {
		case c.Flags().Changed("run") && run == "":
			// An empty value (--run "$ID" with ID unset) must not
			// widen the cleanup to every run: only leaving out --run does.
			return usageErr(errors.New(`--run "": want a run id of 6 lowercase hex digits, e.g. 3f9a1c; to clean up after every killed run, leave out --run`))
		case run != "" && !harness.RunID(strings.TrimPrefix(run, "ht")).Valid():
			return usageErr(fmt.Errorf("--run %q: want a run id of 6 lowercase hex digits, e.g. 3f9a1c", run))
		}
		if !dryRun && !isRoot() {
			return usageErr(errors.New("cleanup needs root (namespaces and interfaces): run it with sudo, or use --dry-run"))
		}
		return nil
	}
	return cmd
}

func writeCleanupText(w *errWriter, rep cleanupReport) {
	for _, id := range rep.Live {
		fmt.Fprintf(w, "skipped run %s: its harness is still running\n", id)
	}
	if rep.DryRun {
		n := 0
		for _, l := range rep.Leftovers {
			verb := "cannot remove"
			if l.Kind != "shadowed" {
				verb = "would remove"
				n++
			}
			fmt.Fprintf(w, "%s %s\n", verb, l)
		}
		things := "things"
		if n == 1 {
			things = "thing"
		}
		fmt.Fprintf(w, "%d %s to remove (dry run)\n", n, things)
		return
	}
	for _, r := range rep.Removed {
		fmt.Fprintf(w, "removed %s\n", r)
	}
	for _, l := range rep.Leftovers {
		if l.Kind == "shadowed" {
			fmt.Fprintf(w, "cannot remove %s\n", l)
		}
	}
	fmt.Fprintf(w, "removed %s\n", plural.Of(len(rep.Removed), "thing", "things"))
}

// isRoot reports whether the process runs as root; a variable so tests can
// pretend otherwise.
var isRoot = func() bool { return os.Geteuid() == 0 }
