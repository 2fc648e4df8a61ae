// Command homatest is the Homa conformance testbed's command-line tool: decode
// and check captures, run the conformance suite, set up emulated links.
// See "homatest --help".
package main

import (
	"os"

	"github.com/homatest/homatest/cmd/homatest/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
