package cli

import (
	"strings"
	"testing"
)

// TestLabBadUsage: flag mistakes are one-line errors with exit code 2,
// before anything is fetched or booted.
func TestLabBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab"}, "lab wants a COMMAND to run in the guest: homatest lab [flags] -- COMMAND [ARG...], e.g. homatest lab -- homatest netem set --help (more examples: homatest lab --help)"},
		{[]string{"lab", "--cpus", "4"}, "lab wants a COMMAND"},
		{[]string{"lab", "true"}, "put COMMAND after --"},
		{[]string{"lab", "--sysctl", "net.homa.resend_ticks", "--", "true"}, "want NAME=VALUE"},
		{[]string{"lab", "--insmod", "/no/such/homa.ko", "--", "true"}, "--insmod /no/such/homa.ko"},
		{[]string{"lab", "--kernel", "/no/such/bzImage", "--kernel-package", "linux-image-x", "--", "true"}, "give one"},
		{[]string{"lab", "--kernel", "/no/such/bzImage", "--", "true"}, "kernel image"},
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
}
