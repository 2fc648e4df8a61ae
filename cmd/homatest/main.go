// Command homatest is the Homa conformance testbed's command-line tool: decode
// and check captures, run the conformance suite, set up emulated links.
// See "homatest --help".
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/homatest/homatest/cmd/homatest/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.New().ExecuteContext(ctx)
	stop()
	if err != nil && err.Error() != "" { // "": the code says it all (lab)
		fmt.Fprintf(os.Stderr, "homatest: %v\n", err)
	}
	os.Exit(cli.ExitCode(err))
}
