package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputFileNodes: an output file flag follows a symlink (the link
// stays, its target gets the content), writes through a device instead
// of replacing it (/dev/null accepted, /dev/full's ENOSPC a one-line
// error naming the flag), refuses "-", and an unwritable path is refused
// naming the flag before any work starts.
func TestOutputFileNodes(t *testing.T) {
	t.Setenv("HOMATEST_CLI_CHILD", "1") // homatest run re-executes this binary (TestMain)
	faults, _ := filepath.Glob(filepath.Join(faultsDir, "*.pcapng"))
	if len(faults) == 0 {
		t.Fatal("no fault captures")
	}
	capture := faults[0]
	dir := t.TempDir()
	target := filepath.Join(dir, "target.pcapng")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pcapng")
	if err := os.Symlink("target.pcapng", link); err != nil {
		t.Fatal(err)
	}
	if _, err, code := run(t, "check", "-o", "json", "--annotate", link, capture); code == ExitUsage {
		t.Fatalf("--annotate onto a symlink: %v", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("--annotate replaced the symlink: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(target); err != nil || st.Size() == 0 {
		t.Errorf("--annotate left the symlink's target empty: %v", err)
	}
	if _, err, code := run(t, "check", "-o", "json", "--annotate", "/dev/null", capture); code == ExitUsage {
		t.Errorf("--annotate /dev/null: %v", err)
	}
	_, err, code := run(t, "check", "-o", "json", "--annotate", "/dev/full", capture)
	if code != ExitUsage || err == nil || err.Error() != "--annotate /dev/full: cannot write: no space left on device" {
		t.Errorf("--annotate /dev/full: exit %d, %v", code, err)
	}
	for _, p := range []string{"/dev/null", "/dev/full"} {
		if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a character device: %v %v", p, st.Mode(), err)
		}
	}
	if _, err, code := run(t, "check", "--annotate", "-", capture); code != ExitUsage || !strings.Contains(err.Error(), "--annotate -: this flag writes a file") {
		t.Errorf("--annotate -: exit %d, %v", code, err)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("--annotate - created a file named -")
	}
	// Refused up front, naming the flag: the session never starts (its
	// run folder is never made).
	arts := filepath.Join(dir, "artifacts")
	for _, args := range [][]string{
		{"run", "--env", "sim", "--artifacts", arts, "--junit", "/proc/x.xml"},
		{"explore", "--env", "sim", "--budget", "60s", "--artifacts", arts, "--junit", "/proc/zz.xml"},
		{"check", "--annotate", "/proc/x.pcapng", capture},
		{"plot", capture, "--rpc", "slowest", "-o", "/proc/x.png"},
	} {
		flag, path := args[len(args)-2], args[len(args)-1]
		if args[0] == "check" {
			flag, path = args[1], args[2]
		}
		_, err, code := run(t, args...)
		want := flag + " " + path + ": cannot write: "
		if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: exit %d, %v; want exit %d and %q...", args, code, err, ExitUsage, want)
		}
		if _, err := os.Stat(arts); err == nil {
			t.Fatalf("%v made its run folder before refusing the output path", args)
		}
	}
}
