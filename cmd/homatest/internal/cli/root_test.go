package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/homatest/homatest/internal/timescale"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpGroups: homatest --help lists every command under one of the
// four groups, and says where implementations run (namespaces or the
// simulator; nothing runs in-process any more).
func TestHelpGroups(t *testing.T) {
	out, err, code := run(t, "--help")
	if code != ExitOK {
		t.Fatalf("--help: exit %d, %v", code, err)
	}
	for _, g := range commandGroups {
		i := strings.Index(out, g.title)
		if i < 0 {
			t.Errorf("--help lacks the group %q:\n%s", g.title, out)
			continue
		}
		for _, c := range g.cmds() {
			if !strings.Contains(out[i:], "\n  "+c.Name()+" ") {
				t.Errorf("--help: %s not under %q", c.Name(), g.title)
			}
		}
	}
	for _, c := range New().Commands() {
		if c.GroupID == "" {
			t.Errorf("command %s is in no group", c.Name())
		}
	}
	if strings.Contains(out, "in-process") || !strings.Contains(out, "--env sim") {
		t.Errorf("--help still says in-process, or does not name --env sim:\n%s", out)
	}
}

// TestOneOutputFlag: every command's -o is the one outputFormat flag type
// (one parser, one error), except plot's, which names a picture file.
func TestOneOutputFlag(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("output"); f != nil && c.Name() != "plot" {
			n++
			if _, ok := f.Value.(*outputFormat); !ok || f.Shorthand != "o" {
				t.Errorf("%s: -o is a %T (-%s), want the shared outputFormat", c.CommandPath(), f.Value, f.Shorthand)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(New())
	if n < 12 {
		t.Errorf("%d commands with -o, want at least 12", n)
	}
	// The one error for a format a command does not offer.
	for _, args := range [][]string{{"faults", "-o", "xml"}, {"spec", "coverage", "-o", "xml"}, {"bench", "collective", "-o", "xml"}} {
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), `-o "xml": want text or json`) {
			t.Errorf("%v: exit %d, %v", args, code, err)
		}
	}
}

// TestTimeScaleChecked: a HOMATEST_TIME_SCALE that is not a positive
// number stops any command with one line naming the variable, the value
// and the form (exit 2) instead of being replaced by 1; a valid one runs.
func TestTimeScaleChecked(t *testing.T) {
	// 1e9 overflowed every timeout (run --env ns: "harness: build:
	// context deadline exceeded").
	for _, v := range []string{"fast", "1e9"} {
		t.Setenv(timescale.EnvVar, v)
		_, err, code := run(t, "faults")
		if code != ExitUsage || err == nil || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), `HOMATEST_TIME_SCALE="`+v+`": want a positive number up to 1000`) {
			t.Errorf("HOMATEST_TIME_SCALE=%s: exit %d, %v; want 2 and the variable, value and form", v, code, err)
		}
	}
	// version times nothing: it prints and warns (it exited 2).
	t.Setenv(timescale.EnvVar, "abc")
	if out, err, code := run(t, "version"); code != ExitOK || !strings.Contains(out, `warning: HOMATEST_TIME_SCALE="abc"`) {
		t.Errorf("HOMATEST_TIME_SCALE=abc homatest version: exit %d, %v, %q; want 0 and a warning", code, err, out)
	}
	t.Setenv(timescale.EnvVar, "2")
	if _, err, code := run(t, "faults"); code != ExitOK {
		t.Errorf("HOMATEST_TIME_SCALE=2: exit %d, %v", code, err)
	}
}

// TestFlagValueErrors: a value a numeric flag cannot parse is one line
// naming the flag, the value and the form wanted (exit 2), without Go's
// strconv or time text.
func TestFlagValueErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore", "--seed", "abc"}, `--seed "abc": want a whole number ≥ 0 such as 7 (see homatest explore --help)`},
		{[]string{"bench", "--seed=-1"}, `--seed "-1": want a whole number ≥ 0 such as 7`},
		{[]string{"explore", "--budget", "xyz"}, `--budget "xyz": want a duration such as 500ms, 90s or 5m`},
		{[]string{"bench", "--load", "half"}, `--load "half": want a number such as 0.5`},
		// An int flag whose values are few says them (it said "such as 8").
		{[]string{"decode", "--ipv6-prio-shift", "abc", "x.pcap"}, `--ipv6-prio-shift "abc": want 4 (HomaModule before 548056f) or 5 (since), or 0 to detect`},
	} {
		_, err, code := run(t, c.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) ||
			strings.ContainsAny(err.Error(), "\n") || strings.Contains(err.Error(), "strconv") || strings.Contains(err.Error(), "invalid argument") {
			t.Errorf("%v: exit %d, %v; want 2 and %q", c.args, code, err, c.want)
		}
	}
	// Every pflag type a command uses has its description.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "string", "stringSlice", "stringArray", "format", "count":
			default:
				if _, ok := flagKinds[f.Value.Type()]; !ok {
					t.Errorf("%s --%s: value type %s has no entry in flagKinds", c.CommandPath(), f.Name, f.Value.Type())
				}
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(New())
}

// TestEveryCommandHasExamples: every command's --help has an Examples
// section, command groups (netem, scenario, spec, wireshark, completion
// and homatest itself) included: they had none. Cobra's help command and
// its per-shell completion commands (whose help is their instructions)
// are left out.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		skip := c.Name() == "help" || c.HasParent() && c.Parent().Name() == "completion"
		if !skip {
			var out bytes.Buffer
			c.SetOut(&out)
			if err := c.Help(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "\nExamples:\n  ") {
				t.Errorf("%s --help has no Examples section", c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(New())
}

// TestEveryCommandSaysItsExitCodes: every command that runs says its exit
// codes in its --help (rpcs, spec's, faults, netem's, wireshark
// dissector and cleanup said none; homatest's general rule, 2 on bad
// input and 130 on an interrupt, is not what every command does: one
// that prints at once lets an interrupt finish it). Command groups
// (their help), cobra's help and completion commands are left out, and
// version, which has nothing to fail.
func TestEveryCommandSaysItsExitCodes(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		_, group := c.Annotations[groupAnnotation]
		skip := group || !c.Runnable() || c.Name() == "help" || c.Name() == "version" ||
			c.HasParent() && c.Parent().Name() == "completion"
		if !skip {
			var out bytes.Buffer
			c.SetOut(&out)
			if err := c.Help(); err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?i)exit (codes?|status)\b|exits? (with )?\d`).MatchString(out.String()) {
				t.Errorf("%s --help says no exit code", c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(New())
}

// TestPrintersWriteError: a command whose output cannot be written (stdout
// on a full disk) exits 2 with one "write output:" line, as its --help
// says; netem show's text went unchecked (exit 0) and wireshark
// dissector's error lacked the line's start.
func TestPrintersWriteError(t *testing.T) {
	cmds := [][]string{{"decode", filepath.Join(realDir, "linux-6.13-proto146/b-500k-grants.pcap")},
		{"decode", "--summary-only", filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")}, {"spec", "list"}, {"spec", "doc"}, {"spec", "params"}, {"spec", "coverage"}, {"faults"},
		{"wireshark", "dissector"}, {"rpcs", filepath.Join(realDir, "linux-6.13-proto146/a-small-rpcs.pcap")}}
	if os.Geteuid() == 0 {
		cmds = append(cmds, []string{"netem", "show", "--dev", "lo"}, []string{"netem", "show", "--dev", "lo", "-o", "json"})
	}
	for _, args := range cmds {
		cmd := New()
		cmd.SetOut(failWriter{})
		cmd.SetArgs(args)
		err := cmd.Execute()
		if ExitCode(err) != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), "write output: no space left") {
			t.Errorf("%v: got %v (exit %d), want a write error and exit 2", args, err, ExitCode(err))
		}
	}
}
