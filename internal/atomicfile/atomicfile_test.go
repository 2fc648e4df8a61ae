package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "one"); return err }); err != nil {
		t.Fatal(err)
	}
	// A failing writer leaves the old file and no temporary file.
	err := Write(path, func(w io.Writer) error { io.WriteString(w, "two"); return errors.New("disk full") })
	if err == nil || err.Error() != "cannot write "+path+": disk full" {
		t.Errorf("failing writer: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("file after a failed write: %q", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	err = Write("/proc/nope/x", func(io.Writer) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write /proc/nope/x: ") || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("unwritable folder: %v", err)
	}
}
