package cli

import (
	"encoding/json"
	"strings"
	"testing"
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
