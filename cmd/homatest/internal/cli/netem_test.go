package cli

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/netem"
)

func TestNetemUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"netem", "set", "--dev", "x", "--rate", "fast"}, `--rate: rate "fast": want a number of bit/s`},
		// 0 is the config's "unlimited": it silently removed a rate set before.
		{[]string{"netem", "set", "--dev", "x", "--rate", "0"}, `--rate "0" is no rate: give a positive one such as 100mbit, or leave --rate out for an unlimited link`},
		{[]string{"netem", "set", "--dev", "x", "--rate", "0mbit", "--check"}, `--rate "0mbit" is no rate`},
		{[]string{"netem", "set", "--dev", "lo", "--check", "--plan", "/no/such/plan.yaml"}, "--plan /no/such/plan.yaml: no such file or directory (give a fault plan YAML file"},
		{[]string{"netem", "set", "--dev", "x", "--loss", "0.1", "--loss-ge", "0.1,0.2"}, "pick one loss model"},
		{[]string{"netem", "set", "--dev", "x", "--loss-ge", "0.1"}, "want P,R"},
		{[]string{"netem", "set", "--dev", "x", "--priorities", "9"}, "priorities = 9"},
		// A gap without reordering reorders nothing: it was accepted
		// silently. Each of the pair names the other.
		{[]string{"netem", "set", "--dev", "x", "--reorder-gap", "3", "--check"}, "--reorder-gap 3 without --reorder: the gap applies only to reordered frames; add --reorder PROB (e.g. --reorder 0.25 --reorder-gap 3) or leave out --reorder-gap"},
		{[]string{"netem", "set", "--dev", "x", "--reorder", "0.1"}, "--reorder 0.1 without --reorder-gap: say how many later frames overtake a reordered one, e.g. --reorder 0.1 --reorder-gap 5"},
		{[]string{"netem", "show", "--dev", "x", "-o", "yaml"}, "want text or json"},
		{[]string{"netem", "reset", "--dev", "x", "--backend", "switch"}, "only tc works"},
		{[]string{"netem", "reset"}, "--dev is required"},
		{[]string{"netem", "set", "--dev", "a", "--check"}, "no interface a in the current namespace"},
		{[]string{"netem", "reset", "--dev", "a"}, "no interface a in the current namespace"},
	} {
		_, err, code := run(t, tc.args...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 2 and %q", tc.args, code, err, tc.want)
		}
	}
}

// TestNetemBufferZero: --buffer's help and its error agree on what 0
// does in the tc backend (the kernel's packet limit: no bfifo), and a
// negative size is a usage error naming the flag (it quoted netem's
// buffer_bytes, whose 0 means 1 MiB in the switch backend).
func TestNetemBufferZero(t *testing.T) {
	_, err, code := run(t, "netem", "set", "--dev", "x", "--buffer", "-1")
	want := "--buffer -1: want BYTES above 0, or 0 = no byte limit: a pfifo of the interface's txqueuelen packets (1000 on veth), or netem's 692 packets (1 MiB) in netem leaves"
	if code != ExitUsage || err == nil || err.Error() != want {
		t.Errorf("--buffer -1: code %d, err %v; want 2 and %q", code, err, want)
	}
	set, _, ferr := New().Find([]string{"netem", "set"})
	if ferr != nil {
		t.Fatal(ferr)
	}
	if u := set.Flags().Lookup("buffer").Usage; !strings.HasSuffix(u, "; 0 = no byte limit: a pfifo of the interface's txqueuelen packets (1000 on veth), or netem's 692 packets (1 MiB) in netem leaves") {
		t.Errorf("--buffer help %q does not say what 0 does as its error does", u)
	}
	// 692 packets: what the tc backend gives a netem leaf for 0.
	if n := netem.DefaultBufferBytes / 1514; n != 692 {
		t.Errorf("netem's default buffer is %d packets of 1514 bytes, the help says 692", n)
	}
}

func TestNetemMissingFeature(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: reads the kernel config")
	}
	if _, err := os.Stat("/proc/config.gz"); err != nil && os.Geteuid() != 0 {
		t.Skip("needs /proc/config.gz or root (probes qdiscs in a scratch namespace)")
	}
	out, err, code := run(t, "netem", "set", "--dev", "lo", "--delay", "1ms", "--check")
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
	if code != ExitUsage || err == nil || err.Error() != "delay: needs sch_netem, which this kernel lacks (CONFIG_NET_SCH_NETEM) "+
		"(netem set drives kernel qdiscs only; the user-space switch, which emulates every feature, runs in homatest scenario run with link.backend switch and in homatest run)" {
		t.Errorf("code %d, err %v", code, err)
	}
}

func TestNetemPlanCheck(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux: the tc backend's plans are nftables rules")
	}
	if _, err := os.Stat("/proc/config.gz"); err != nil && os.Geteuid() != 0 {
		t.Skip("needs /proc/config.gz or root (probes the kernel in a scratch namespace)")
	}
	k, err := netem.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("rules:\n  - match: {type: GRANT, rpc: 1, nth: 2}\n    action: {delay: 1ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err, code := run(t, "netem", "set", "--dev", "lo", "--plan", bad, "--check")
	lines := []string{
		"plan rule 0: match.rpc: nftables cannot number RPCs in the order first seen (use match.id with the client's RPC id)",
		"plan rule 0: action.delay: nftables cannot delay single packets (netem set drives kernel qdiscs only",
	}
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), strings.Join(lines, "; ")) || strings.Contains(err.Error(), "--backend") {
		t.Errorf("unsupported plan: code %d, err %v", code, err)
	}
	good := dir + "/good.yaml"
	if err := os.WriteFile(good, []byte("rules:\n  - match: {type: GRANT, id: 100, nth: 2}\n    action: drop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err, code := run(t, "netem", "set", "--dev", "lo", "--plan", good, "--check")
	if k.NFTLoss && (code != 0 || !strings.Contains(out, "every requested feature")) {
		t.Errorf("supported plan: code %d, out %q, err %v", code, out, err)
	}
	if _, err, code := run(t, "netem", "set", "--dev", "lo", "--plan", dir+"/missing.yaml", "--check"); code != ExitUsage || !strings.Contains(err.Error(), "--plan") {
		t.Errorf("missing file: code %d, err %v", code, err)
	}
}

// TestNetemConfirmationUnwritten: netem set, set --check and reset exit 2
// when their confirmation line cannot be written (standard output on
// /dev/full), as netem show does, saying what was done all the same;
// they exited 0 in silence.
func TestNetemConfirmationUnwritten(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a network namespace and sets qdiscs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8)")
	}
	live, release, err := harness.ReserveRun() // a live run's: no cleanup takes it
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ns := live.HostNS(1)
	for _, args := range [][]string{{"netns", "add", ns}, {"-n", ns, "link", "add", "nc0", "type", "veth", "peer", "name", "nc1"}, {"-n", ns, "link", "set", "nc0", "up"}} {
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, b)
		}
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err, code := run(t, "netem", "set", "--netns", ns, "--dev", "nc0", "--rate", "100mbit"); code != 0 {
		t.Skipf("this kernel cannot set the link: exit %d, %v\n%s", code, err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"netem", "set", "--netns", ns, "--dev", "nc0", "--rate", "100mbit", "--check"}, "write output: no space left on device"},
		{[]string{"netem", "set", "--netns", ns, "--dev", "nc0", "--rate", "100mbit"}, "write output: no space left on device (nc0 is set: homatest netem show shows it)"},
		{[]string{"netem", "reset", "--netns", ns, "--dev", "nc0"}, "write output: no space left on device (nc0 is reset)"},
	} {
		cmd := New()
		cmd.SetOut(failWriter{})
		cmd.SetErr(io.Discard)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if code := ExitCode(err); code != ExitUsage || err == nil || err.Error() != c.want {
			t.Errorf("%v on a full stdout: exit %d, %v; want 2 and %q", c.args, code, err, c.want)
		}
	}
}
