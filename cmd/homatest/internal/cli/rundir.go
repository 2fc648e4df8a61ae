package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/homatest/homatest/harness"
)

// defaultRunDir is the run folder of a command run without --artifacts:
// homatest-runs/<time>-<pid>, e.g. homatest-runs/20260101-120000-4242.
func defaultRunDir() string {
	return filepath.Join(harness.DefaultRunsDir, fmt.Sprintf("%s-%d", time.Now().Format("20060102-150405"), os.Getpid()))
}

// artifactsErr is the error of a run folder that cannot be created.
func artifactsErr(err error) error {
	return fmt.Errorf("--artifacts: %w (pass --artifacts DIR somewhere writable)", err)
}

// removeRunDir removes a defaulted run folder in which nothing ran, and
// homatest-runs if that is then empty.
func removeRunDir(dir string) {
	os.RemoveAll(dir)
	os.Remove(filepath.Dir(dir))
}

// agentOutput reports whether any agent wrote to its stderr log
// (*.agent.stderr.log) under dir.
func agentOutput(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.agent.stderr.log"))
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}

// makeRunDir creates run folder dir and its missing parents; undo removes
// what it created while dir is still empty (a command that ended before
// writing anything leaves nothing behind), and nothing that held files.
func makeRunDir(dir string) (undo func(), err error) {
	var made []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, artifactsErr(err)
	}
	return func() {
		for _, d := range made { // innermost first; os.Remove keeps non-empty folders
			if os.Remove(d) != nil {
				return
			}
		}
	}, nil
}
