package scenario

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRunMissingFolder: a folder that does not exist is said so. On
// the old code it was "not a scenario run folder (no scenario.yaml)".
func TestLoadRunMissingFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nonexistent")
	_, _, err := LoadRun(dir)
	if err == nil || !strings.HasPrefix(err.Error(), "no such folder: "+dir) {
		t.Errorf("LoadRun(%s): %v; want no such folder", dir, err)
	}
}
