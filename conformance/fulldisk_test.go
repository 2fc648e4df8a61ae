//go:build linux

package conformance

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// fullDir returns a directory on a 64 KiB tmpfs (unmounted at cleanup)
// that a filler file has filled: every write there fails with ENOSPC, as
// on a full disk. It needs root to mount, and skips without it.
func fullDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{1}, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	return dir
}

// leftovers lists dir's files other than the filler.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.Name() != "filler" {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestWriteJUnitFullDisk: a pass's JUnit report on a full disk fails with
// ENOSPC and the path, and leaves no file (Ginkgo's writer dropped the
// error: the report was an empty file, read back as "EOF").
func TestWriteJUnitFullDisk(t *testing.T) {
	dir := fullDir(t)
	path := filepath.Join(dir, "junit.xml")
	err := writeJUnit(types.Report{SuiteDescription: "homa"}, path)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), path) {
		t.Errorf("writeJUnit on a full disk: %v, want ENOSPC naming %s", err, path)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left %v behind", l)
	}
}

// TestSimBenchFullDisk: the simulator bench's captures on a full disk fail
// Finish with ENOSPC and are removed (33 empty sent-*/delivered-* files
// were left, each reading as a capture without packets).
func TestSimBenchFullDisk(t *testing.T) {
	dir := fullDir(t)
	b, err := simBench(2, LinkImpairment{}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	sent, delivered, err := b.Finish()
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || sent != "" || delivered != "" {
		t.Errorf("Finish on a full disk: %q %q %v, want no paths and ENOSPC", sent, delivered, err)
	}
	b.Close()
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("left %v behind", l)
	}
}
