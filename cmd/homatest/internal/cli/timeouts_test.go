package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
)

// TestManifestTimeoutsEveryCommand: run, bench and scenario run all start
// an implementation the same way (agent.Start), so a manifest's
// timeouts.start bounds the hello of each: an agent that never answers
// fails each command with the manifest's timeout (not the 10 s default),
// quoting the agent's standard error, exit 2, and nothing left behind.
func TestManifestTimeoutsEveryCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	const start = 300 * time.Millisecond
	mute := writeFile(t, dir, "mute.yaml", "name: mute\ncommand: [/bin/sh, -c, 'echo booting the mute agent >&2; exec sleep 600']\n"+
		"timeouts: {start: "+start.String()+"}\n")
	sc := writeFile(t, dir, "s.yaml", "iut: {impl: "+mute+"}\nworkload: {dist: '1000', count: 1}\n")
	want := "no reply to hello (seq 1) within " + agent.ManifestTimeouts{Start: start}.Effective().Start.String()
	before := htNamespaces(t)
	for _, args := range [][]string{
		{"run", "--impl", mute, "--env", "ns", "--focus", "GRANT-long-request", "--artifacts", filepath.Join(dir, "run")},
		{"bench", "--impl", mute, "--hosts", "2", "--duration", "1s", "--artifacts", filepath.Join(dir, "bench")},
		{"scenario", "run", sc, "--artifacts", filepath.Join(dir, "scenario"), "-q"},
	} {
		began := time.Now()
		out, err, code := run(t, args...)
		took := time.Since(began)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "booting the mute agent") {
			t.Errorf("%s with a mute agent: exit %d, %v\n%s\nwant exit %d, an error with %q and the agent's stderr", args[0], code, err, out, ExitUsage, want)
		}
		t.Logf("%s: failed after %v: %v", args[0], took.Round(time.Millisecond), err)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
}
