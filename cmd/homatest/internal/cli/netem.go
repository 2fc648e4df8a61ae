package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/homatest/homatest/internal/jsonout"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/netem"
)

// netemTarget is the interface a netem subcommand works on.
type netemTarget struct {
	netns, dev, backend string
}

func (o *netemTarget) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.netns, "netns", "", "network namespace `NAME` (as in ip netns; empty = the current one)")
	fs.StringVar(&o.dev, "dev", "", "interface `IFACE` whose egress is emulated (required)")
	fs.StringVar(&o.backend, "backend", "tc", "backend: tc (kernel qdiscs); the switch backend runs inside the harness")
}

// open checks the flags and returns the namespace handle (closed by the caller).
func (o *netemTarget) open() (netns.NsHandle, error) {
	if o.dev == "" {
		return -1, usageErr(errors.New("--dev is required (the interface whose egress to emulate)"))
	}
	if o.backend != "tc" {
		return -1, usageErr(fmt.Errorf("--backend %q: by hand only tc works; the switch backend is started by the harness for a topology (homatest run)", o.backend))
	}
	var ns netns.NsHandle
	var err error
	if o.netns == "" {
		ns, err = netns.Get()
	} else {
		ns, err = netns.GetFromName(o.netns)
	}
	if err != nil {
		return -1, usageErr(fmt.Errorf("namespace %q: %v (list them with ip netns)", o.netns, err))
	}
	h, err := netlink.NewHandleAt(ns)
	if err == nil {
		_, err = h.LinkByName(o.dev)
		h.Close()
	}
	if err != nil && !isRoot() {
		// Netlink in a namespace (the current one too: NewHandleAt
		// enters it) needs CAP_SYS_ADMIN: the interface may well be
		// there.
		ns.Close()
		return -1, usageErr(fmt.Errorf("netem needs root to reach the qdiscs of %s (%v): run it with sudo", o.dev, err))
	}
	if err != nil {
		ns.Close()
		where, list := "the current namespace", "ip link"
		if o.netns != "" {
			where, list = "namespace "+o.netns, "ip -n "+o.netns+" link"
		}
		return -1, usageErr(fmt.Errorf("no interface %s in %s (%v): list them with %s", o.dev, where, err, list))
	}
	return ns, nil
}

// tcOnlyFix replaces the fix netem's lines name (a --backend flag that
// netem set does not have) with where the user-space switch runs.
func tcOnlyFix(missing []string) error {
	for i, l := range missing {
		missing[i] = strings.TrimSuffix(l, "; use --backend switch")
	}
	return fmt.Errorf("%s (netem set drives kernel qdiscs only; the user-space switch, which emulates every feature, runs in homatest scenario run with link.backend switch and in homatest run)", strings.Join(missing, "; "))
}

// newNetemCmd builds "homatest netem show|set|reset".
func newNetemCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "netem",
		Short: "Emulate a datacenter link on an interface (rate, priority queues, delay, loss)",
		Long: `netem sets, shows and resets link emulation on one interface by hand.

The tc backend expresses a link config as kernel qdiscs through netlink: an
HTB root at the link rate, one HTB class per priority queue (strict
priority by HTB prio) with u32 filters on the IP precedence (IPv4 TOS>>5,
IPv6 traffic class>>5, as HomaModule writes priorities), and netem leaves
for delay, jitter, loss, duplication, reordering and corruption when the
kernel has sch_netem (random loss by nftables where it has not). --plan
adds a fault plan as nftables rules on the interface's egress: matches on
Homa header fields (type, direction, id, ports, offset, retransmit), the
nth match, and drop or priority rewrite. Before changing anything, set
checks the kernel and the plan and fails with one line per feature it
cannot provide (exit code 2). Every subcommand needs root (netlink in the
interface's namespace); each --help gives its exit codes.

The user-space switch backend (every feature, fault plans, pcapng record)
runs inside the harness for a whole topology; see homatest run.`,
		Example: `  # what this kernel lacks for 1 ms delay and 1% loss on lo (changes nothing)
  sudo homatest netem set --dev lo --delay 1ms --loss 0.01 --check
  # 100 Mbit/s with 8 strict-priority queues on the switch port of host h1
  sudo homatest netem set --netns sw --dev sw-h1 --rate 100mbit --priorities 8
  sudo homatest netem show --netns sw --dev sw-h1
  sudo homatest netem reset --netns sw --dev sw-h1`,
	}
	cmd.AddCommand(newNetemShowCmd(), newNetemSetCmd(), newNetemResetCmd())
	return cmd
}

func newNetemShowCmd() *cobra.Command {
	var t netemTarget
	var output string
	cmd := &cobra.Command{
		Use:   "show --dev IFACE [--netns NAME] [-o text|json]",
		Short: "Show the qdiscs, classes and filters of an interface",
		Long: `show prints the qdiscs, classes and filters of an interface's egress (each
netem qdisc as tc -s qdisc show prints it), the frames nftables random loss
dropped and each fault plan rule's hits. Needs root.

Exit codes: 0 shown; 2 a bad flag, no such namespace or interface, no root,
a kernel that refused the query, or output that could not be written. It is
done at once: an interrupt (Ctrl-C, SIGINT or SIGTERM) lets it finish.`,
		Example: `  homatest netem show --netns sw --dev sw-h1
  homatest netem show --netns sw --dev sw-h1 -o json | jq .classes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := t.open()
			if err != nil {
				return err
			}
			defer ns.Close()
			st, err := netem.ShowTC(ns, t.dev)
			if err != nil {
				return usageErr(err)
			}
			w := &errWriter{w: cmd.OutOrStdout()}
			if output == "json" {
				jsonout.WriteUnescaped(w, st)
			} else {
				for _, l := range append(append(append([]string{}, st.Qdiscs...), st.Classes...), st.Filters...) {
					fmt.Fprintln(w, l)
				}
				if st.NFTLossDrops > 0 {
					fmt.Fprintf(w, "nftables loss: %s dropped\n", plural.Of64(uint64(st.NFTLossDrops), "frame", "frames"))
				}
				for _, h := range st.PlanHits {
					fmt.Fprintf(w, "plan %s: fired on %s\n", h.Rule, plural.Of64(uint64(h.Packets), "frame", "frames"))
				}
			}
			if w.err != nil {
				return usageErr(fmt.Errorf("write output: %w", w.err))
			}
			return nil
		},
	}
	t.flags(cmd.Flags())
	outputVar(cmd.Flags(), &output, "the qdiscs, classes and filters", "text", "json")
	return cmd
}

// confirmErr is the error (exit 2) of a netem command whose output w
// could not take, as netem show's: "write output: CAUSE", then done,
// what the command did all the same; nil when w took it.
func confirmErr(w *errWriter, done string) error {
	if w.err == nil {
		return nil
	}
	if done != "" {
		return usageErr(fmt.Errorf("write output: %w (%s)", w.err, done))
	}
	return usageErr(fmt.Errorf("write output: %w", w.err))
}

func newNetemResetCmd() *cobra.Command {
	var t netemTarget
	cmd := &cobra.Command{
		Use:   "reset --dev IFACE [--netns NAME]",
		Short: "Remove the link emulation from an interface (back to its default qdisc)",
		Long: `reset removes the qdiscs, nftables random loss and fault plan that netem set
put on an interface's egress: the interface is back to its default qdisc.
Needs root.

Exit codes: 0 reset (an interface with nothing set too); 2 a bad flag, no
such namespace or interface, no root, a kernel that refused the change,
or a confirmation line that could not be written (the reset is done).
It is done at once: an interrupt (Ctrl-C, SIGINT or SIGTERM) lets it
finish.`,
		Example: `  homatest netem reset --netns sw --dev sw-h1`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, err := t.open()
			if err != nil {
				return err
			}
			defer ns.Close()
			if err := netem.ResetTC(ns, t.dev); err != nil {
				return usageErr(err)
			}
			w := &errWriter{w: cmd.OutOrStdout()}
			fmt.Fprintf(w, "%s: reset\n", t.dev)
			return confirmErr(w, t.dev+" is reset")
		},
	}
	t.flags(cmd.Flags())
	return cmd
}
