package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// TestWriteFollowsSymlink: a symlink stays a symlink and its target gets
// the content (also a dangling link, whose target is created), with no
// temporary file left in either folder.
func TestWriteFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(sub, "target.txt")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("sub/target.txt", link); err != nil {
		t.Fatal(err)
	}
	// A link to the link: both hops are followed.
	link2 := filepath.Join(dir, "link2.txt")
	if err := os.Symlink(link, link2); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.txt")
	if err := os.Symlink("sub/new.txt", dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ link, target, text string }{
		{link, target, "new"},
		{link2, target, "newer"},
		{dangling, filepath.Join(sub, "new.txt"), "created"},
	} {
		if err := Write(c.link, func(w io.Writer) error { _, err := io.WriteString(w, c.text); return err }); err != nil {
			t.Fatalf("%s: %v", c.link, err)
		}
		if st, err := os.Lstat(c.link); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink: %v %v", c.link, st.Mode(), err)
		}
		if b, _ := os.ReadFile(c.target); string(b) != c.text {
			t.Errorf("%s's target %s holds %q, want %q", c.link, c.target, b, c.text)
		}
	}
	for _, d := range []string{dir, sub} {
		if left, _ := filepath.Glob(filepath.Join(d, ".*")); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if err := Write(loop, func(io.Writer) error { return nil }); err == nil || !strings.HasPrefix(err.Error(), "cannot write "+loop+": ") {
		t.Errorf("symlink loop: %v", err)
	}
}

// TestWriteThroughNonRegular: a FIFO and a device are written through,
// never replaced by a regular file; /dev/full's ENOSPC is the error.
func TestWriteThroughNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opens the read end, so Write's open does not block
		got <- string(b)
	}()
	if err := Write(fifo, func(w io.Writer) error { _, err := io.WriteString(w, "through"); return err }); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Errorf("FIFO reader got %q", s)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("FIFO replaced: %v %v", st.Mode(), err)
	}
	// A symlink to a device is followed to the device.
	null := filepath.Join(dir, "null")
	if err := os.Symlink("/dev/null", null); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/null", null} {
		if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if st, err := os.Lstat(null); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link to /dev/null replaced: %v %v", st.Mode(), err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("no /dev/full: %v", err)
	}
	err := Write("/dev/full", func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
	if err == nil || err.Error() != "cannot write /dev/full: no space left on device" {
		t.Errorf("/dev/full: %v", err)
	}
	for _, p := range []string{"/dev/null", "/dev/full"} {
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("%s is no longer a character device: %v %v", p, st.Mode(), err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
