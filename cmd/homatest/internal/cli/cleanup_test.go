package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/homatest/homatest/harness"
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

// TestUnknownCommand: an unknown command names the fix (and a near
// command), on one line.
func TestUnknownCommand(t *testing.T) {
	for args, want := range map[string]string{
		"frob":  `unknown command "frob": homatest --help lists the commands`,
		"decod": `unknown command "decod" (did you mean decode?): homatest --help lists the commands`,
	} {
		_, err, code := run(t, args)
		if code != ExitUsage || err == nil || err.Error() != want {
			t.Errorf("homatest %s: exit %d, %v; want 2 and %q", args, code, err, want)
		}
	}
	if out, err, code := run(t); code != ExitOK || !strings.Contains(out, "Conformance (test an implementation):") {
		t.Errorf("homatest alone: exit %d, %v, output %q; want the help", code, err, out)
	}
}
