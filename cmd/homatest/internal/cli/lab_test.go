package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/lab"
)

// TestLabBadUsage: flag mistakes are one-line errors with exit code 2,
// before anything is fetched or booted: the kernel cache stays empty.
func TestLabBadUsage(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HOMATEST_LAB_CACHE", cache)
	noFolder := filepath.Join(t.TempDir(), "no")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab"}, "lab wants a COMMAND to run in the guest: homatest lab [flags] -- COMMAND [ARG...], e.g. homatest lab -- homatest netem set --help (more examples: homatest lab --help)"},
		{[]string{"lab", "--cpus", "4"}, "lab wants a COMMAND"},
		{[]string{"lab", "true"}, "put COMMAND after --"},
		{[]string{"lab", "--sysctl", "net.homa.resend_ticks", "--", "true"}, "want NAME=VALUE"},
		{[]string{"lab", "--insmod", "/no/such/homa.ko", "--", "true"}, "--insmod /no/such/homa.ko: no such file or directory (give a module file built for the guest's kernel"},
		{[]string{"lab", "--kernel", "/no/such/bzImage", "--kernel-package", "linux-image-x", "--", "true"}, "give one"},
		{[]string{"lab", "--kernel", "/no/such/bzImage", "--", "true"}, "--kernel /no/such/bzImage: no such file or directory (give a bzImage file, or drop --kernel to boot Debian's linux-image-"},
		{[]string{"lab", "--modules", "/no/such", "--", "true"}, "--modules /no/such: not a folder (give the kernel's lib/modules/VERSION folder)"},
		// Checked before the default kernel is fetched (about 100 MB):
		// a bad --console, and a homatest the guest cannot run (or no
		// QEMU or static busybox, where this machine lacks them); the
		// console file is not created.
		{[]string{"lab", "--console", filepath.Join(noFolder, "c.log"), "--", "true"}, "--console " + filepath.Join(noFolder, "c.log") + ": folder " + noFolder + ": no such file or directory"},
		{[]string{"lab", "--homatest", "/no/such/homatest", "--console", filepath.Join(cache, "c.log"), "--", "true"}, "lab: "},
		// Negative or zero sizes and a negative timeout: refused before
		// anything is fetched (they used to reach QEMU, or be ignored).
		{[]string{"lab", "--cpus", "-1", "--", "true"}, "--cpus -1: want 1 or more guest CPUs"},
		{[]string{"lab", "--cpus", "0", "--", "true"}, "--cpus 0: want 1 or more guest CPUs"},
		{[]string{"lab", "--memory", "-5", "--", "true"}, "--memory -5: want the guest's memory in MiB, 1 or more"},
		// One wording for a timeout below 0 and one pflag cannot parse.
		{[]string{"lab", "--timeout", "-1s", "--", "true"}, `--timeout "-1s": want a duration such as 10m, or 0 for no limit (see homatest lab --help)`},
		{[]string{"lab", "--timeout", "abc", "--", "true"}, `--timeout "abc": want a duration such as 10m, or 0 for no limit (see homatest lab --help)`},
	} {
		_, err, code := run(t, tc.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: exit %d, %v; want exit 2 and one line with %q", tc.args, code, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("bad usage left %v in the kernel cache (fetched, or an empty console log)", ents)
	}
}

// TestConsoleFile: --console's file appears at the guest's first line,
// not before: a lab refused earlier leaves a user's file of that name as
// it was (it used to be emptied, then removed) and makes none; once
// written, it holds what came, and an error creating it is Close's, once
// the run is over.
func TestConsoleFile(t *testing.T) {
	dir := t.TempDir()
	mine := writeFile(t, dir, "mine.log", "my notes\n")
	refused := &consoleFile{path: mine}
	if err := refused.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "my notes\n" {
		t.Errorf("a lab refused before its guest started left %q in the user's file; want it as it was", b)
	}
	path := filepath.Join(dir, "c.log")
	c := &consoleFile{path: path}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file exists before the first line: %v", err)
	}
	for _, l := range []string{"[    0.000000] Linux version 6.12\n", "homatest-lab: exit 0\n"} {
		if n, err := c.Write([]byte(l)); n != len(l) || err != nil {
			t.Fatalf("write %q: %d, %v", l, n, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "[    0.000000] Linux version 6.12\nhomatest-lab: exit 0\n" {
		t.Errorf("the console file holds %q", b)
	}
	if _, err := c.Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("a write after Close: %v; want %v (the file is not made again)", err, os.ErrClosed)
	}
	bad := &consoleFile{path: filepath.Join(dir, "no", "c.log")}
	if _, err := bad.Write([]byte("x\n")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file in a missing folder: %v; want no such file or directory", err)
	}
	if err := bad.Close(); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), dir) {
		t.Errorf("Close: %v; want the create error, without the path (the flag's error names it)", err)
	}
}

// TestLabErrExitCodes: lab exits as its help says: 2 for a guest killed
// at --timeout (its own context's cause) or any other failure of the
// guest, 130 when a signal ended the command's context.
func TestLabErrExitCodes(t *testing.T) {
	live := context.Background()
	if got := ExitCode(labErr(live, fmt.Errorf("%w: 10s from QEMU's start", lab.ErrGuestTimeout))); got != ExitUsage {
		t.Errorf("timeout kill: exit %d, want %d", got, ExitUsage)
	}
	if got := ExitCode(labErr(live, errors.New("lab: the guest stopped before the command finished (kernel panic?)"))); got != ExitUsage {
		t.Errorf("guest stopped: exit %d, want %d", got, ExitUsage)
	}
	ended, cancel := context.WithCancel(live)
	cancel()
	if got := ExitCode(labErr(ended, fmt.Errorf("lab: %w after 3s", ended.Err()))); got != 130 {
		t.Errorf("interrupted: exit %d, want 130", got)
	}
}
