package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"lab", "--timeout", "-1s", "--", "true"}, "--timeout -1s: want a duration such as 10m, or 0 for no limit"},
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
