package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/jsonout"
)

func newFaultsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "List the reference implementation's fault knobs",
		Long: `Faults lists the knobs that make the built-in reference implementation
(package homa) misbehave the way real Homa implementations did (see the
BR-nn entries of the fault log, or the protocol facts they break) and the
rules whose findings catch each: the fault catalogue (homa.FaultNames).
homatest run --mutation-matrix runs the suite once per knob and fails unless
a failing spec names one of those rules, which is how the conformance suite
shows that it catches real bugs.

Exit codes: 0 printed, 2 an argument, a bad flag, or output that could not
be written. It prints at once: an interrupt (Ctrl-C, SIGINT or SIGTERM) lets
it finish.`,
		Example: `  homatest faults
  homatest faults -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := &errWriter{w: cmd.OutOrStdout()}
			switch output {
			case "json":
				jsonout.Write(w, homa.FaultNames())
			default: // text (outputVar refused anything else)
				for _, f := range homa.FaultNames() {
					fmt.Fprintf(w, "%-22s %s\n%-22s reproduces %s; caught by %s\n", f.Name, f.Doc, "", strings.Join(f.Reproduces, ", "), strings.Join(f.CaughtBy, ", "))
				}
			}
			if w.err != nil {
				return usageErr(fmt.Errorf("write output: %w", w.err))
			}
			return nil
		},
	}
	outputVar(cmd.Flags(), &output, "the fault knobs", "text", "json")
	return cmd
}
