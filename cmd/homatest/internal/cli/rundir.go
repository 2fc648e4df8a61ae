package cli

import (
	"errors"
	"fmt"
	"io/fs"
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
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe // "mkdir X: not a directory", without the callers' prefixes
	}
	return fmt.Errorf("--artifacts: %w (pass --artifacts DIR somewhere writable)", err)
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
