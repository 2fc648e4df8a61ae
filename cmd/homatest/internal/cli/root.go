// Package cli builds the homatest command tree (cobra). Each command has a
// newXxxCmd constructor, writes to cmd.OutOrStdout, and returns errors
// instead of exiting; Main turns them into exit codes with ExitCode.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/homatest/homatest/internal/timescale"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes shared by every command (see DESIGN.md "Reports").
const (
	// ExitOK: success, no violations.
	ExitOK = 0
	// ExitViolations: rule violations or failed specs.
	ExitViolations = 1
	// ExitUsage: bad usage, bad input file or environment error.
	ExitUsage = 2
)

// ExitError carries an exit code with an error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageErr wraps err for exit code 2.
func usageErr(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// ExitCode maps an error returned by a command to the process exit code:
// 0 for nil, the code of an *ExitError, and 2 for anything else (cobra's
// own flag and argument errors included).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitUsage
}

// Main runs homatest with args (the program's arguments, os.Args[1:]) and
// returns its exit code: SIGINT and SIGTERM cancel the command's context
// (homatest run then stops its pass: conformance.InterruptGrace), and an error is
// printed on standard error as one line. The program's main and the tests'
// re-executed binary both run it.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := New()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && err.Error() != "" { // "": the code says it all (lab)
		fmt.Fprintf(os.Stderr, "homatest: %v\n", err)
	}
	return ExitCode(err)
}

// New returns the root homatest command.
func New() *cobra.Command {
	root := &cobra.Command{
		Use:   "homatest",
		Short: "Conformance testbed for the Homa transport protocol",
		Long: `homatest is a conformance testbed for Homa, the receiver-driven datacenter
transport (HomaModule, IP protocol 146).

It runs the conformance suite against an implementation (run: the built-in
reference implementation, the Linux kernel module, or your own through an
agent manifest), either in network namespaces behind an emulated switch
(--env ns) or in the discrete-event simulator (--env sim), and explores
the peer behaviours the spec allows against it, shrinking any failure to
a replayable script (explore). It decodes
captures of Homa traffic (decode: pcap/pcapng, every packet type, the
current, 2025, 2024 and upstream wire formats, IPv4/IPv6, TCP-hijacked
frames),
checks them against the spec's rules (check; the rules: spec list) and
summarises their RPCs (rpcs). It runs workloads and fault plans (scenario,
bench) and speaks the agent protocol for a built-in implementation (agent).

Environment: HOMATEST_TIME_SCALE=F (a positive number up to 1000, default 1)
multiplies every timeout and timing tolerance, for a slow or loaded
machine; any other value is an error (homatest version only warns).

Exit codes: 0 success, 1 violations, 2 usage, input or environment error,
130 interrupted (Ctrl-C, SIGINT or SIGTERM; agent stops with 0, and lab
exits with its COMMAND's code or 125: see their help).`,
		Example: `  # the conformance suite against the reference implementation, in the simulator (no root)
  homatest run --env sim
  # judge a capture of Homa traffic against the spec's rules
  homatest check capture.pcapng
  # the rules, and each command's flags and examples
  homatest spec list
  homatest run --help`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Every command (none sets its own persistent hook) refuses a
		// HOMATEST_TIME_SCALE it could not use instead of running with 1.
		// version, which times nothing and is what a bug report asks
		// for, prints it and warns instead.
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			err := timescale.Check()
			if err != nil && c.Name() == "version" && c.Parent() != nil && !c.Parent().HasParent() {
				fmt.Fprintf(c.ErrOrStderr(), "homatest: warning: %v; every other command refuses it\n", err)
				return nil
			}
			if err != nil {
				return usageErr(err)
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if isGroup(c) && c.Flags().NArg() > 0 {
			// "scenario runn --env sim x.yaml": pflag stopped at --env,
			// which only the mistyped subcommand knows; the mistake
			// is the subcommand.
			return unknownSubcommand(c, c.Flags().Args())
		}
		var fe *formatError
		if errors.As(err, &fe) {
			err = fe
		} else {
			err = flagValueError(err)
		}
		return usageErr(fmt.Errorf("%v (see %s --help)", err, c.CommandPath()))
	})
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds() {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	root.SetHelpCommandGroupID(groupMaintenance)
	strictHelp(root)
	root.SetCompletionCommandGroupID(groupMaintenance)
	// Added now rather than by Execute, so that groupCommands sees it.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = completionExample
		}
	}
	groupCommands(root)
	return root
}

// completionExample is the Example of cobra's completion command, which
// has none of its own.
const completionExample = `  # bash, this shell only; for every new one, write it to /etc/bash_completion.d/homatest
  source <(homatest completion bash)
  # zsh, fish
  homatest completion zsh > "${fpath[1]}/_homatest"
  homatest completion fish > ~/.config/fish/completions/homatest.fish`

// strictHelp makes "homatest help TOPIC" answer a TOPIC that is no
// command with a usage error (exit 2) naming it, as "homatest TOPIC"
// does; cobra's help command printed the whole usage and exited 0, so
// that a typo passed in a script.
func strictHelp(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	for _, h := range root.Commands() {
		if h.Name() != "help" || h.Run == nil {
			continue
		}
		show := h.Run
		h.Run = nil
		h.RunE = func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			switch {
			case err != nil || cmd == nil:
				return unknownSubcommand(c.Root(), args)
			case len(rest) > 0:
				return unknownSubcommand(cmd, rest)
			}
			show(c, args)
			return nil
		}
	}
}

// groupAnnotation marks a command group in its Annotations.
const groupAnnotation = "homatest-group"

// groupCommands makes every command group under c (a command with
// subcommands and no action of its own: homatest, scenario, netem, spec,
// wireshark, completion) print its help when called alone and answer an
// unknown subcommand with a usage error (exit 2). Cobra's default
// prints the group's help and exits 0 for a non-root group, so that a
// mistyped subcommand in a CI script would pass silently.
func groupCommands(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[groupAnnotation] = "true"
		c.Args = cobra.ArbitraryArgs
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2 // cobra's default, set by Execute on the root only
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownSubcommand(cmd, args)
		}
	}
	for _, s := range c.Commands() {
		groupCommands(s)
	}
}

// isGroup says whether groupCommands made c a command group.
func isGroup(c *cobra.Command) bool { return c.Annotations[groupAnnotation] != "" }

// unknownSubcommand is the usage error for args[0], not a subcommand of
// the group c: cobra's wording and suggestion, on one line, and the fix.
func unknownSubcommand(c *cobra.Command, args []string) error {
	hint := ""
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return usageErr(fmt.Errorf("unknown command %q for %q%s: %s --help lists the commands", args[0], c.CommandPath(), hint, c.CommandPath()))
}

// flagKinds says, for each pflag value type the commands use, what a
// value of it looks like.
var flagKinds = map[string]string{
	"int":      "a whole number such as 8",
	"int64":    "a whole number such as 8",
	"uint":     "a whole number ≥ 0 such as 7",
	"uint16":   "a whole number from 0 to 65535",
	"uint64":   "a whole number ≥ 0 such as 7",
	"float64":  "a number such as 0.5",
	"duration": "a duration such as 500ms, 90s or 5m",
	"bool":     "true or false",
}

// wantAnnotation, set on a flag (wantValue), says what its values look
// like where its type's flagKinds entry would mislead (an int flag that
// takes 4 or 5).
const wantAnnotation = "homatest-want"

// wantValue sets what a value of fs's flag name looks like, for the
// error of a value its type cannot parse (flagValueError).
func wantValue(fs *pflag.FlagSet, name, want string) {
	fs.SetAnnotation(name, wantAnnotation, []string{want})
}

// flagValueError turns pflag's error for a value a flag's type cannot
// parse (`invalid argument "abc" for "--seed" flag: strconv.ParseUint:
// parsing "abc": invalid syntax`) into the flag, the value and what the
// flag takes; any other error is returned as it is.
func flagValueError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	f := ive.GetFlag()
	if want := f.Annotations[wantAnnotation]; len(want) == 1 {
		return fmt.Errorf("--%s %q: want %s", f.Name, ive.GetValue(), want[0])
	}
	if want, ok := flagKinds[f.Value.Type()]; ok {
		return fmt.Errorf("--%s %q: want %s", f.Name, ive.GetValue(), want)
	}
	// A value type of ours: its own error says what it wants.
	return fmt.Errorf("--%s %q: %v", f.Name, ive.GetValue(), errors.Unwrap(ive))
}

// Command groups, as homatest --help shows them.
const (
	groupConformance = "conformance"
	groupOffline     = "offline"
	groupExperiments = "experiments"
	groupMaintenance = "maintenance"
)

// commandGroups lists every command under its group, in help order.
var commandGroups = []struct {
	id, title string
	cmds      func() []*cobra.Command
}{
	{groupConformance, "Conformance (test an implementation):", func() []*cobra.Command {
		return []*cobra.Command{newRunCmd(), newExploreCmd(), newSpecCmd(), newFaultsCmd(), newAgentCmd(), newLabCmd()}
	}},
	{groupOffline, "Offline analysis (read captures):", func() []*cobra.Command {
		return []*cobra.Command{newDecodeCmd(), newCheckCmd(), newRPCsCmd(), newPlotCmd(), newWiresharkCmd()}
	}},
	{groupExperiments, "Experiments (workloads, fault plans, emulated links):", func() []*cobra.Command {
		return []*cobra.Command{newScenarioCmd(), newReplayCmd(), newBenchCmd(), newNetemCmd()}
	}},
	{groupMaintenance, "Maintenance:", func() []*cobra.Command {
		return []*cobra.Command{newCleanupCmd(), newVersionCmd()}
	}},
}
