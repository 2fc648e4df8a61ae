package scenario

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
)

// TestMain lets this test binary be the IUT's agent: Run starts the
// built-in manifest's command, [exe, agent, --impl, ref], with exe this
// binary (os.Executable), so "agent" as the first argument serves the
// reference implementation's agent (or with "linux" last, the linux
// agent's) on standard input and output.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		serve := func() error {
			return agent.ServeRef(context.Background(), os.Stdin, os.Stdout, agent.RefOptions{Version: "scenario-test"})
		}
		if os.Args[len(os.Args)-1] == "linux" {
			serve = func() error {
				return agent.ServeLinux(context.Background(), os.Stdin, os.Stdout, agent.LinuxOptions{Version: "scenario-test"})
			}
		}
		if err := serve(); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// What a test binary killed before it cleaned up (its go test
	// -timeout, or a child's own limit) left is removed here.
	harness.RemoveDeadRuns(os.Stderr, harness.StaleRunAge)
	os.Exit(m.Run())
}
