package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the homatest version and build information",
		Example: `  homatest version`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, rev := "(devel)", "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				v = bi.Main.Version
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "homatest %s (revision %s)\n", v, rev)
			return nil
		},
	}
}
