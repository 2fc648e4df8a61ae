package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/netem"
)

// linkFlags are the LinkConfig flags of "netem set".
type linkFlags struct {
	cfg             netem.LinkConfig
	rate, loss, ge  string
	dryRun          bool
	reorder         float64
	reorderGap      int
	jitterDist      string
	priorityMapping string
	plan            string
}

func (l *linkFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.rate, "rate", "", "link `RATE` in bit/s, e.g. 100mbit, 1gbit, 10Mbit/s (empty = unlimited; 0 is refused)")
	fs.IntVar(&l.cfg.BufferBytes, "buffer", 0, "egress buffer in `BYTES` of each priority queue: a bfifo of BYTES, or BYTES/1514 packets in netem leaves (delay, jitter, loss, duplication, reordering, corruption); "+bufferZero)
	fs.IntVar(&l.cfg.Priorities, "priorities", 0, "number of strict-priority queues 1..8 (0 = 8)")
	fs.StringVar(&l.priorityMapping, "priority-map", "", "how 8 priorities fold into fewer queues: clamp (HomaModule num_priorities) or scale")
	fs.DurationVar(&l.cfg.Delay, "delay", 0, "one-way delay, e.g. 1ms")
	fs.DurationVar(&l.cfg.Jitter, "jitter", 0, "delay jitter, e.g. 100us")
	fs.StringVar(&l.jitterDist, "jitter-dist", "", "jitter distribution: uniform or normal")
	fs.StringVar(&l.loss, "loss", "", "random loss `PROB` 0..1, e.g. 0.01")
	fs.StringVar(&l.ge, "loss-ge", "", "Gilbert-Elliott loss `P,R[,BAD[,GOOD]]`: move to bad with P, back with R, lose BAD (default 1) in bad and GOOD (default 0) in good")
	fs.Float64Var(&l.cfg.Duplicate, "duplicate", 0, "duplication probability 0..1")
	fs.Float64Var(&l.reorder, "reorder", 0, "reordering probability 0..1 (with --reorder-gap)")
	fs.IntVar(&l.reorderGap, "reorder-gap", 0, "frames that overtake a reordered one (with --reorder: alone it reorders nothing)")
	fs.Float64Var(&l.cfg.Corrupt, "corrupt", 0, "corruption probability 0..1")
	fs.IntVar(&l.cfg.MTU, "mtu", 0, "largest IP packet in bytes (0 = no limit)")
	fs.StringVar(&l.plan, "plan", "", "fault plan YAML `FILE` (rules: match/action, as in a scenario's plan section) applied as nftables rules on the egress")
	fs.BoolVar(&l.dryRun, "check", false, "only report what this kernel cannot provide; change nothing")
}

// bufferZero says what --buffer 0 does in the tc backend (netem.TCObjects):
// no bfifo, so each queue keeps the kernel's packet limit. The flag's
// help and its error both quote it.
const bufferZero = "0 = no byte limit: a pfifo of the interface's txqueuelen packets (1000 on veth), or netem's 692 packets (1 MiB) in netem leaves"

// config turns the flags into a validated LinkConfig.
func (l *linkFlags) config() (netem.LinkConfig, error) {
	c := l.cfg
	if c.BufferBytes < 0 {
		// netem's own error says what 0 means in the switch backend.
		return c, fmt.Errorf("--buffer %d: want BYTES above 0, or %s", c.BufferBytes, bufferZero)
	}
	c.JitterDist, c.PriorityMap = l.jitterDist, l.priorityMapping
	c.Reorder = netem.ReorderConfig{Probability: l.reorder, Gap: l.reorderGap}
	switch {
	case l.reorderGap != 0 && l.reorder == 0:
		// Neither backend uses a gap without reordering (tc's own
		// "netem ... gap N" refuses it), so it would be dropped silently.
		return c, fmt.Errorf("--reorder-gap %d without --reorder: the gap applies only to reordered frames; add --reorder PROB (e.g. --reorder 0.25 --reorder-gap %d) or leave out --reorder-gap", l.reorderGap, l.reorderGap)
	case l.reorder != 0 && l.reorderGap == 0:
		return c, fmt.Errorf("--reorder %v without --reorder-gap: say how many later frames overtake a reordered one, e.g. --reorder %v --reorder-gap 5", l.reorder, l.reorder)
	}
	if l.rate != "" {
		r, err := netem.ParseRate(l.rate)
		if err != nil {
			return c, fmt.Errorf("--rate: %s", strings.TrimPrefix(err.Error(), "netem: "))
		}
		if r == 0 {
			// Rate 0 is the config's "unlimited": it silently removed a
			// rate set before.
			return c, fmt.Errorf("--rate %q is no rate: give a positive one such as 100mbit, or leave --rate out for an unlimited link", l.rate)
		}
		c.Rate = r
	}
	if l.loss != "" && l.ge != "" {
		return c, errors.New("--loss and --loss-ge: pick one loss model")
	}
	if l.loss != "" {
		p, err := strconv.ParseFloat(l.loss, 64)
		if err != nil {
			return c, fmt.Errorf("--loss %q: want a probability such as 0.01", l.loss)
		}
		c.Loss = netem.LossConfig{Model: "random", Probability: p}
	}
	if l.ge != "" {
		parts := strings.Split(l.ge, ",")
		v := []float64{0, 0, 1, 0}
		if len(parts) < 2 || len(parts) > 4 {
			return c, fmt.Errorf("--loss-ge %q: want P,R[,BAD[,GOOD]], e.g. 0.01,0.3", l.ge)
		}
		for i, s := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return c, fmt.Errorf("--loss-ge %q: %q is not a number", l.ge, s)
			}
			v[i] = f
		}
		c.Loss = netem.LossConfig{Model: "gilbert-elliott", P: v[0], R: v[1], LossBad: v[2], LossGood: v[3]}
	}
	return c, c.Validate()
}

func newNetemSetCmd() *cobra.Command {
	var t netemTarget
	var l linkFlags
	cmd := &cobra.Command{
		Use:   "set --dev IFACE [--netns NAME] [link flags]",
		Short: "Emulate a link on an interface's egress (replaces what was there)",
		Long: `set emulates a link on an interface's egress with kernel qdiscs (and
nftables for random loss without sch_netem and for --plan), replacing what
was there; --check only says whether this kernel provides it. Needs root.

Exit codes: 0 set (with --check: every feature is there); 2 a bad flag or
plan, no such namespace or interface, no root, features this kernel lacks
(one line each; nothing changed), or a change the kernel refused (the
error line says which; qdiscs or a plan it set part way are taken off
again), or a confirmation line that could not be written (standard output
full or closed: the change is made all the same, and the error says so).
An interrupt (Ctrl-C, SIGINT or SIGTERM) does not stop it half-way: it
finishes and exits as above.`,
		Example: `  # 100 Mbit/s with 8 strict-priority queues on the switch port of host h1
  homatest netem set --netns sw --dev sw-h1 --rate 100mbit --priorities 8

  # 4 queues as HomaModule with num_priorities=4 uses them, 1% random loss
  homatest netem set --netns sw --dev sw-h1 --rate 1gbit --priorities 4 --loss 0.01

  # Drop the 2nd GRANT of the RPC whose client id is 100 (plan.yaml:
  #   rules: [{match: {type: GRANT, id: 100, nth: 2}, action: drop}])
  homatest netem set --netns sw --dev sw-h1 --rate 100mbit --plan plan.yaml

  # What would this kernel lack for 1 ms delay and 1% loss? (changes nothing)
  homatest netem set --netns sw --dev sw-h1 --delay 1ms --loss 0.01 --check`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := l.config()
			if err != nil {
				return usageErr(err)
			}
			ns, err := t.open()
			if err != nil {
				return err
			}
			defer ns.Close()
			missing, err := netem.Detect(cfg)
			if err != nil {
				return usageErr(err)
			}
			var plan *netem.Plan
			if l.plan != "" {
				if err := checkInputFile("--plan", l.plan, "give a fault plan YAML file, as homatest netem set --help describes"); err != nil {
					return usageErr(err)
				}
				data, err := os.ReadFile(l.plan)
				if err != nil {
					return usageErr(fmt.Errorf("--plan: %v", err))
				}
				if plan, err = netem.ParsePlan(data); err != nil {
					return usageErr(fmt.Errorf("--plan %s: %v", l.plan, err))
				}
				m, err := netem.DetectPlan(plan, t.dev)
				if err != nil {
					return usageErr(err)
				}
				missing = append(missing, m...)
			}
			if len(missing) > 0 {
				return usageErr(tcOnlyFix(missing))
			}
			w := &errWriter{w: cmd.OutOrStdout()}
			if l.dryRun {
				fmt.Fprintln(w, "this kernel provides every requested feature")
				return confirmErr(w, "")
			}
			if err := netem.SetTC(ns, t.dev, cfg, plan); err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(w, "%s: rate %v, %d priority queues; set: %s\n", t.dev, cfg.Rate, cfg.Queues(), strings.Join(cfg.Features(), ", "))
			if plan != nil {
				fmt.Fprintf(w, "%s: fault plan of %s (nftables chain plan_%s)\n", t.dev, plural.Of(len(plan.Rules), "rule", "rules"), t.dev)
			}
			return confirmErr(w, t.dev+" is set: homatest netem show shows it")
		},
	}
	t.flags(cmd.Flags())
	l.register(cmd.Flags())
	return cmd
}
