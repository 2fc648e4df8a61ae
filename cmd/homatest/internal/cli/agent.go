package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/homatest/homatest/agent"
)

func newAgentCmd() *cobra.Command {
	var impl, logLevel string
	cmd := &cobra.Command{
		Use:   "agent --impl ref|linux|tcp",
		Short: "Run a built-in agent: a Homa endpoint driven by the harness over stdin/stdout",
		Long: `Agent runs one Homa endpoint and speaks the agent protocol (docs/agent-protocol.md,
version ` + fmt.Sprint(agent.ProtocolVersion) + `) on standard input and output: JSON lines, requests with "op" from
the harness, events with "event" back. Standard output carries only protocol
lines; logs go to standard error. The harness starts it inside a host's
network namespace; run by hand it is a way to see the protocol.

  --impl ref    the reference implementation (package homa) over raw IP
                sockets (needs root or CAP_NET_RAW) on the addresses in hello
  --impl linux  the Linux kernel's Homa sockets (IP protocol 146; a module
                with HomaModule linux_6.1.38's API, protocol 253, is found
                and its hello says "wire":"2024"); on a kernel without
                Homa its hello says "unsupported"
  --impl tcp    not Homa: the same protocol with RPCs over TCP (one kept
                connection per client-server pair, length-prefixed frames),
                the baseline homatest bench compares Homa with

A session (> sent to the agent, < its answers):

  > {"op":"hello","seq":1,"protocol":1,"host":"h1","addrs":["198.18.0.1"],"params":{"resend_ticks":5}}
  < {"event":"hello","seq":1,"protocol":1,"impl":"ref","version":"(devel)","capabilities":["ipv4","grants",...],"params":{"unsched_bytes":40000,...}}
  > {"op":"listen","seq":2,"port":4000}
  < {"event":"listening","seq":2,"port":4000}
  > {"op":"call","seq":3,"id":17,"dst":"198.18.0.2","port":4000,"request":1000,"response":100}
  < {"event":"accepted","seq":3,"id":17}
  < {"event":"done","id":17,"latency_ns":81234,"request":1000,"response":100}
  > {"op":"stats","seq":4}
  < {"event":"stats","seq":4,"stats":{"calls":1,"completed":1,"failed":0,"served":0,...}}
  > {"op":"shutdown","seq":5}
  < {"event":"bye","seq":5}

Exit status: 0 after shutdown, when standard input ends, or on SIGINT or
SIGTERM (an orderly stop, as a harness ends its agents; not the 130 of the
other commands); 2 for bad flags or when standard output cannot be written.`,
		Example: `  printf '%s\n' '{"op":"hello","seq":1,"protocol":1,"addrs":["127.0.0.1"]}' '{"op":"shutdown","seq":2}' | homatest agent --impl linux
  sudo ip netns exec h1 homatest agent --impl ref --log-level debug`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel))
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})).With("agent", impl)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			version := "dev"
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				version = bi.Main.Version
			}
			var err error
			switch impl {
			case "ref":
				err = agent.ServeRef(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), agent.RefOptions{Version: version, Logger: log})
			case "linux":
				err = agent.ServeLinux(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), agent.LinuxOptions{Version: version, Logger: log})
			case "tcp":
				err = agent.ServeTCP(ctx, cmd.InOrStdin(), cmd.OutOrStdout(), agent.TCPOptions{Version: version, Logger: log})
			default:
				return usageErr(fmt.Errorf("--impl %q: want ref, linux or tcp", impl))
			}
			if err != nil {
				return usageErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&impl, "impl", "ref", "implementation: ref (package homa over raw IP), linux (kernel Homa sockets) or tcp (RPCs over TCP, the baseline)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "standard error log level: debug, info, warn or error")
	return cmd
}
