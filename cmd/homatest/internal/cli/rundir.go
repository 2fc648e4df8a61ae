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
// (HOST.NAME.stderr.log: run's in its pass folders, bench's in the run
// folder itself) under dir.
func agentOutput(dir string) bool {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.stderr.log"))
	top, _ := filepath.Glob(filepath.Join(dir, "*.stderr.log"))
	for _, l := range append(logs, top...) {
		if st, err := os.Stat(l); err == nil && st.Size() > 0 {
			return true
		}
	}
	return false
}
