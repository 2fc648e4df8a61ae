package cli

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/homatest/homatest/netem"
)

func TestNetemUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"netem", "set", "--dev", "x", "--rate", "fast"}, `rate "fast"`},
		{[]string{"netem", "set", "--dev", "x", "--loss", "0.1", "--loss-ge", "0.1,0.2"}, "pick one loss model"},
		{[]string{"netem", "set", "--dev", "x", "--loss-ge", "0.1"}, "want P,R"},
		{[]string{"netem", "set", "--dev", "x", "--priorities", "9"}, "priorities = 9"},
		{[]string{"netem", "show", "--dev", "x", "-o", "yaml"}, "want text or json"},
		{[]string{"netem", "reset", "--dev", "x", "--backend", "switch"}, "only tc works"},
		{[]string{"netem", "reset"}, "--dev is required"},
	} {
		_, err, code := run(t, tc.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 2 and %q", tc.args, code, err, tc.want)
		}
	}
}

func TestNetemMissingFeature(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: reads the kernel config")
	}
	if _, err := os.Stat("/proc/config.gz"); err != nil && os.Geteuid() != 0 {
		t.Skip("needs /proc/config.gz or root (probes qdiscs in a scratch namespace)")
	}
	out, err, code := run(t, "netem", "set", "--dev", "x", "--delay", "1ms", "--check")
	k, kerr := netem.ProbeKernel()
	if kerr != nil {
		t.Fatal(kerr)
	}
	if k.Netem {
		if code != 0 || !strings.Contains(out, "every requested feature") {
			t.Errorf("kernel with netem: code %d, out %q, err %v", code, out, err)
		}
		return
	}
	if code != ExitUsage || err == nil || err.Error() != "delay: needs sch_netem, which this kernel lacks (CONFIG_NET_SCH_NETEM); use --backend switch" {
		t.Errorf("code %d, err %v", code, err)
	}
}
