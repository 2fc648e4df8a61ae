package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/scenario"
)

// replayReport is the JSON output of homatest replay.
type replayReport struct {
	Original string           `json:"original"`
	Summary  scenario.Summary `json:"summary"`
	// PlanDrops are the fault-plan entries of the original run; Same
	// tells whether the replay's are the same by Homa meaning, else
	// Differences lists them.
	PlanDrops   int      `json:"plan_drops"`
	Same        bool     `json:"same"`
	Differences []string `json:"differences,omitempty"`
	// Files, for a simulated run (env sim), are the files compared byte
	// for byte (scenario.SimFiles) and FileDifferences those that differ.
	Files           int      `json:"files,omitempty"`
	FileDifferences []string `json:"file_differences,omitempty"`
}

func newReplayCmd() *cobra.Command {
	o := &scenarioOpts{}
	cmd := &cobra.Command{
		Use:   "replay DIR",
		Short: "Rerun a scenario run folder with the same seed and compare the fault-plan drops",
		Long: `replay reruns the resolved scenario in run folder DIR (its scenario.yaml,
seed included) into a new folder, then compares the packets the fault plan
acted on in both runs by their Homa meaning (plan rule, action, packet type,
RPC ordinal, or on backend tc the client's address and RPC id, message,
offset, retransmit flag), not by time. It prints the
replay's summary, then "fault-plan drops: same" or one line per difference.
A run made in the simulator (env sim; no root needed) is reproduced exactly:
replay also compares its files byte for byte (captures, records, drops, the
check and the summary; not versions.json) and prints "files: byte-identical"
or the files that differ.

Exit codes: 0 same drops (and files) and a clean run; 1 the drops or files
differ, or failed RPCs or violations; 2 a folder without a finished run,
a replay INCOMPLETE as scenario run says (nothing failed, but a plan rule
never fired, the offered load was not carried, or the capture lost frames
a finding may rest on), or an environment error; 130 interrupted (the new folder is kept, marked by its
file "interrupted").`,
		Example: `  homatest scenario run scenario/testdata/two-hosts-drops.yaml --artifacts runs/a
  homatest replay runs/a                      # new folder runs/a-replay-<time>
  homatest replay runs/a --artifacts runs/b -o json | jq .same`,
		Args: oneArg("one run folder of scenario run", "runs/a"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			dir := filepath.Clean(args[0])
			s, orig, err := scenario.LoadRun(dir)
			if err != nil {
				if os.Geteuid() != 0 {
					// A run made with sudo is root's, and its files
					// may not be readable.
					return usageErr(fmt.Errorf("%w (%v)", harness.ErrNotRoot, err))
				}
				return usageErr(err)
			}
			if o.artifacts == "" {
				beside := dir
				if b := filepath.Base(dir); b == "." || b == ".." {
					// "." + "-replay-…" would land inside the folder.
					if abs, err := filepath.Abs(dir); err == nil {
						beside = abs
					}
				}
				o.artifacts = beside + "-replay-" + time.Now().Format("20060102-150405")
			} else if sameFile(o.artifacts, dir) {
				return usageErr(fmt.Errorf("--artifacts %s is the run folder being replayed: the replay would overwrite it and compare it with itself; give a new folder, or leave --artifacts out (%s-replay-<time>)", o.artifacts, dir))
			}
			if err := o.checkFolder(); err != nil {
				return err
			}
			res, err := o.run(cmd, s)
			if err != nil {
				return err
			}
			rep := replayReport{Original: dir, Summary: res.Summary, Differences: scenario.CompareDrops(orig, res.Drops)}
			for _, d := range orig {
				if len(d.Rules) > 0 {
					rep.PlanDrops++
				}
			}
			if s.Env == scenario.EnvSim {
				rep.Files = len(scenario.SimFiles)
				rep.FileDifferences = scenario.CompareFiles(dir, res.Dir)
			}
			rep.Same = len(rep.Differences) == 0 && len(rep.FileDifferences) == 0
			w := cmd.OutOrStdout()
			if err := o.print(w, res.Summary, rep); err != nil {
				return usageErr(err)
			}
			if o.output == "text" {
				if len(rep.Differences) == 0 {
					fmt.Fprintf(w, "fault-plan drops: same (%s acted on, as in %s)\n", plural.Of(rep.PlanDrops, "packet", "packets"), dir)
				} else {
					fmt.Fprintf(w, "fault-plan drops: %s from %s:\n  %s\n", plural.Of(len(rep.Differences), "difference", "differences"), dir, strings.Join(rep.Differences, "\n  "))
				}
				switch {
				case rep.Files == 0:
				case len(rep.FileDifferences) == 0:
					fmt.Fprintf(w, "files: byte-identical (%s, as in %s)\n", plural.Of(rep.Files, "file", "files"), dir)
				default:
					fmt.Fprintf(w, "files: %d of %d differ from %s:\n  %s\n", len(rep.FileDifferences), rep.Files, dir, strings.Join(rep.FileDifferences, "\n  "))
				}
			}
			if !rep.Same {
				return &ExitError{Code: ExitViolations, Err: fmt.Errorf("the replay differs from %s (%s, %s)", dir, plural.Of(len(rep.Differences), "fault-plan drop", "fault-plan drops"), plural.Of(len(rep.FileDifferences), "file", "files"))}
			}
			return verdictErr(res.Summary, o.strict)
		},
	}
	o.flags(cmd, false, false)
	return cmd
}
