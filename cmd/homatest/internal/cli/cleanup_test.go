package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/homatest/homatest/harness"
	"github.com/spf13/cobra"
)

func TestCleanupNotRoot(t *testing.T) {
	defer func(f func() bool) { isRoot = f }(isRoot)
	isRoot = func() bool { return false }
	out, err, code := run(t, "cleanup")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "needs root") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("exit %d, err %v, want 2 and a one-line 'needs root' message; output %q", code, err, out)
	}
}

func TestCleanupBadFlags(t *testing.T) {
	for _, args := range [][]string{{"cleanup", "--run", "XYZ", "--dry-run"}, {"cleanup", "-o", "xml", "--dry-run"}} {
		if _, err, code := run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d (%v), want 2", args, code, err)
		}
	}
}

// TestCleanupEmptyRun: an explicitly empty --run (a script's unset
// variable) is a usage error, not every run; it used to clean up after
// every run, as leaving out --run does. A bad run id is named before
// root is asked for.
func TestCleanupEmptyRun(t *testing.T) {
	defer func(f func() bool) { isRoot = f }(isRoot)
	for _, root := range []bool{true, false} {
		isRoot = func() bool { return root }
		args := [][]string{{"cleanup", "--run=", "--dry-run"}, {"cleanup", "--dry-run", "--run", ""}}
		if !root {
			// Not as root: without the check it would remove things.
			args = append(args, []string{"cleanup", "--run", ""})
		}
		for _, args := range args {
			out, err, code := run(t, args...)
			want := `--run "": want a run id of 6 lowercase hex digits, e.g. 3f9a1c; to clean up after every killed run, leave out --run`
			if code != ExitUsage || err == nil || err.Error() != want || out != "" {
				t.Errorf("root %v, %q: exit %d, err %v, output %q; want 2 and %q", root, args, code, err, out, want)
			}
		}
		isRoot = func() bool { return false }
		if _, err, code := run(t, "cleanup", "--run", "XYZ"); code != ExitUsage || err == nil || !strings.Contains(err.Error(), `--run "XYZ": want a run id`) {
			t.Errorf("not root, --run XYZ: exit %d, err %v; want 2 and the run id's error", code, err)
		}
	}
}

// TestCleanupDryRunJSON: a dry run of a run id nobody uses finds nothing
// and prints the JSON report shape.
func TestCleanupDryRunJSON(t *testing.T) {
	out, err, code := run(t, "cleanup", "--dry-run", "--run", "000000", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var rep cleanupReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.DryRun || len(rep.Leftovers) != 0 || len(rep.Removed) != 0 {
		t.Errorf("report %+v, want a dry run with nothing found", rep)
	}
}

// TestCleanupDryRunCount: the dry run's count agrees with its noun.
func TestCleanupDryRunCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 things to remove", 1: "1 thing to remove", 2: "2 things to remove"} {
		var b strings.Builder
		rep := cleanupReport{DryRun: true}
		for i := 0; i < n; i++ {
			rep.Leftovers = append(rep.Leftovers, harness.Leftover{Kind: "netns", Name: "ht3f9a1c-h1"})
		}
		writeCleanupText(&errWriter{w: &b}, rep)
		if !strings.Contains(b.String(), want+" (dry run)\n") {
			t.Errorf("%d leftovers: %q, want %q", n, b.String(), want)
		}
	}
}

// TestUnknownCommand: an unknown command names the group, a near
// command and the fix, on one line, with exit 2, in every command group
// of the tree (a mistyped subcommand must not pass a CI script), also
// when it is followed by flags only the meant subcommand knows, and as a
// help topic; a group alone prints its help.
func TestUnknownCommand(t *testing.T) {
	for args, want := range map[string]string{
		"frob":                           `unknown command "frob" for "homatest": homatest --help lists the commands`,
		"decod":                          `unknown command "decod" for "homatest" (did you mean decode?): homatest --help lists the commands`,
		"scenario valdiate x.yaml":       `unknown command "valdiate" for "homatest scenario" (did you mean validate?): homatest scenario --help lists the commands`,
		"scenario runn --env sim x.yaml": `unknown command "runn" for "homatest scenario" (did you mean run?): homatest scenario --help lists the commands`,
		"netem sett eth0":                `unknown command "sett" for "homatest netem" (did you mean set?): homatest netem --help lists the commands`,
		"spec nosuch":                    `unknown command "nosuch" for "homatest spec": homatest spec --help lists the commands`,
		// help of a topic that is no command: the same error (cobra's help
		// printed the whole usage and exited 0).
		"help chek":        `unknown command "chek" for "homatest" (did you mean check?): homatest --help lists the commands`,
		"help spec nosuch": `unknown command "nosuch" for "homatest spec": homatest spec --help lists the commands`,
	} {
		_, err, code := run(t, strings.Fields(args)...)
		if code != ExitUsage || err == nil || err.Error() != want {
			t.Errorf("homatest %s: exit %d, %v; want 2 and %q", args, code, err, want)
		}
	}
	var groups []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// bench has subcommands but runs a benchmark of its own.
		if c.HasSubCommands() && c.Name() != "bench" {
			groups = append(groups, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(New())
	for _, args := range [][]string{{"help"}, {"help", "spec", "list"}} {
		if out, err, code := run(t, args...); code != ExitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("homatest %s: exit %d, %v, output %q; want the help", strings.Join(args, " "), code, err, out)
		}
	}
	if len(groups) < 6 { // homatest scenario netem spec wireshark completion
		t.Fatalf("found %d command groups, want at least 6", len(groups))
	}
	for _, g := range groups {
		path := strings.Fields(g.CommandPath())[1:]
		out, err, code := run(t, path...)
		if code != ExitOK || !strings.Contains(out, "Available Commands:") && !strings.Contains(out, "Conformance (test an implementation):") {
			t.Errorf("%s alone: exit %d, %v, output %q; want its help", g.CommandPath(), code, err, out)
		}
		for _, tail := range [][]string{{"zzqx"}, {"zzqx", "--zzflag", "v"}} {
			_, err, code = run(t, append(append([]string{}, path...), tail...)...)
			want := `unknown command "zzqx" for "` + g.CommandPath() + `"`
			if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s %s: exit %d, %v; want 2 and %q", g.CommandPath(), strings.Join(tail, " "), code, err, want)
			}
		}
	}
}
