package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// labRequired is set by .ci/run once it has installed QEMU, busybox-static
// and apt's package lists: a lab test that cannot run then fails instead of
// skipping.
func labRequired() bool { return os.Getenv("HOMATEST_LAB_REQUIRED") == "1" }

// skipLoudly skips (or, where the lab is required, fails) and says so on
// stderr too, which go test shows even without -v.
func skipLoudly(t *testing.T, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(os.Stderr, "\n*** %s SKIPPED: %s ***\n\n", t.Name(), msg)
	if labRequired() {
		t.Fatalf("HOMATEST_LAB_REQUIRED=1 but: %s", msg)
	}
	t.Skip(msg)
}

// goBuild runs the go command with CGO_ENABLED=0 in the module root.
func goBuild(t *testing.T, args ...string) {
	t.Helper()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(gobin, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// guestScript is the one command the lab runs: several checks, each
// writing its output and exit code into the shared folder, so one boot
// (12-60 s under software emulation) serves them all.
const guestScript = `
NS=labcli
./netem.test -test.run 'TestApplyTC|TestTCPlan|TestNetemShow|TestMissingFeatures|TestProbe' -test.skip TestApplyTCRateRoot -test.v > netem.out 2>&1; echo $? > netem.rc
./netem.test -test.run TestApplyTCRateRoot -test.v > rate.out 2>&1; echo $? > rate.rc
/usr/sbin/ip netns add $NS
/usr/sbin/ip -n $NS link add v0 type veth peer name v1
/usr/sbin/ip -n $NS link set v0 up
/usr/sbin/ip -n $NS link set v1 up
homatest netem set --netns $NS --dev v0 --delay 5ms --jitter 1ms --loss 0.05 --duplicate 0.01 --reorder 0.25 --reorder-gap 5 --corrupt 0.001 > set1.out 2>&1; echo $? > set1.rc
homatest netem show --netns $NS --dev v0 > show1.out 2>&1
/usr/sbin/tc -n $NS -s qdisc show dev v0 > tc1.out 2>&1
homatest netem set --netns $NS --dev v0 --rate 10mbit --delay 1500us --loss-ge 0.01,0.3 > set2.out 2>&1; echo $? > set2.rc
homatest netem show --netns $NS --dev v0 > show2.out 2>&1
/usr/sbin/tc -n $NS -s qdisc show dev v0 > tc2.out 2>&1
homatest netem reset --netns $NS --dev v0 > reset.out 2>&1; echo $? > reset.rc
homatest netem show --netns $NS --dev v0 > show3.out 2>&1
/usr/sbin/ip netns del $NS
homatest scenario run tc-delay-loss.yaml --artifacts runs -o json > scenario.json 2> scenario.err; echo $? > scenario.rc
homatest run --impl linux --artifacts runs-linux > linux.out 2> linux.err; echo $? > linux.rc
homatest cleanup > cleanup.out 2>&1
`

// TestLabKernel boots Debian's stock kernel (DefaultPackage) in QEMU once
// and checks there what this machine's kernel cannot show: the tc backend's
// tests with sch_netem and sch_prio (rate, delay and loss measured),
// homatest netem set/show/reset against Debian's tc, a tc-backend scenario
// with delay and loss, and homatest run --impl linux on a kernel without
// Homa (exit 2 with the line "implementation linux cannot run here: ..."). It skips, loudly,
// where QEMU, busybox-static or the kernel package cannot be had (CI
// installs them and sets HOMATEST_LAB_REQUIRED=1).
func TestLabKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the lab boots a VM (minutes under software emulation)")
	}
	if os.Geteuid() != 0 {
		skipLoudly(t, "needs root (apt-get download into the cache, namespaces in the guest are its own)")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		skipLoudly(t, "%v", ErrNoQEMU)
	}
	if ok, err := IsStatic("/bin/busybox"); err != nil || !ok {
		skipLoudly(t, "no static /bin/busybox (Debian: apt-get install busybox-static)")
	}
	ctx := t.Context()
	k, err := Fetch(ctx, "", "")
	if err != nil {
		skipLoudly(t, "kernel package %s: %v", DefaultPackage, err)
	}
	dir := t.TempDir()
	start := time.Now()
	goBuild(t, "build", "-o", filepath.Join(dir, "homatest"), "./cmd/homatest")
	goBuild(t, "test", "-c", "-o", filepath.Join(dir, "netem.test"), "./netem")
	scen, err := os.ReadFile("../scenario/testdata/tc-delay-loss.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tc-delay-loss.yaml": scen, "guest.sh": []byte(guestScript)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built homatest and netem.test in %v", time.Since(start).Round(time.Second))
	vmCtx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	var console bytes.Buffer
	var res Result
	for attempt := 1; ; attempt++ {
		console.Reset()
		res, err = Run(vmCtx, Config{Kernel: k, Dir: dir, Homatest: filepath.Join(dir, "homatest"), Command: []string{"sh", "./guest.sh"},
			Env: []string{"HOMATEST_TIME_SCALE=10"}, Console: &console, Stdout: os.Stderr, Stderr: os.Stderr})
		// The stock kernel itself panicking under software emulation (seen
		// once at load average ~17: a fault in __kmalloc in an interrupt,
		// multi-threaded TCG on a starved host) says nothing about netem,
		// which runs in user space and tc: the guest runs once more, and a
		// second panic fails the test.
		if err != nil && attempt == 1 && !res.KVM && strings.Contains(err.Error(), "Kernel panic") {
			t.Logf("attempt 1: the guest kernel panicked under software emulation; running it once more: %v", err)
			continue
		}
		break
	}
	if err != nil {
		t.Fatalf("lab: %v\nconsole:\n%s", err, console.String())
	}
	t.Logf("%s: booted in %v, guest ran %v in all (%s)", k.Image, res.Boot.Round(100*time.Millisecond), res.Total.Round(time.Second),
		map[bool]string{true: "KVM", false: "software emulation"}[res.KVM])
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("guest left no %s: %v", name, err)
		}
		return string(b)
	}
	rc := func(name string) int {
		n, err := strconv.Atoi(strings.TrimSpace(read(name)))
		if err != nil {
			return -1
		}
		return n
	}
	t.Run("netem-tc-tests", func(t *testing.T) {
		out := read("netem.out")
		for _, l := range regexp.MustCompile(`(?m)^\s+\S+\.go:\d+: .*(measured|loss 0.3|netem delay|tc HTB|as tc shows).*$`).FindAllString(out, -1) {
			t.Log(strings.TrimSpace(l))
		}
		for _, want := range []string{"--- PASS: TestApplyTCLossRoot", "--- PASS: TestApplyTCDelayRoot", "--- PASS: TestApplyTCStrictPriorityRoot",
			"--- PASS: TestNetemShowMatchesTCRoot", "--- PASS: TestTCPlanDropsExactlyNamedRoot"} {
			if !strings.Contains(out, want) {
				t.Errorf("netem.test in the lab: no %q", want)
			}
		}
		if rc("netem.rc") != 0 || strings.Contains(out, "--- SKIP: TestApplyTCLossRoot") {
			t.Errorf("netem.test in the lab: exit %d\n%s", rc("netem.rc"), out)
		}
	})
	// HTB's rate measured from the receiver's kernel stamps: under
	// software emulation on a loaded host the guest's vCPUs stall and the
	// gaps they leave count against the rate (10 Mbit/s measured -41% to
	// -65% with a host load average of 11; within 1.3% on an idle host,
	// platform notes §9). Reported, not judged: the verdict would be the
	// host's load.
	t.Run("netem-tc-rate-reported", func(t *testing.T) {
		for _, l := range regexp.MustCompile(`(?m)^\s+tc_linux_test.go:\d+: .*$`).FindAllString(read("rate.out"), -1) {
			t.Log(strings.TrimSpace(l))
		}
		t.Logf("TestApplyTCRateRoot in the lab: exit %d (not judged)", rc("rate.rc"))
	})
	t.Run("netem-show-equals-tc", func(t *testing.T) {
		for i, n := range []string{"1", "2"} {
			if rc("set"+n+".rc") != 0 {
				t.Fatalf("netem set %s: %s", n, read("set"+n+".out"))
			}
			show, tc := netemLines(read("show"+n+".out"), ""), netemLines(read("tc"+n+".out"), "qdisc ")
			if len(show) == 0 || len(show) != len(tc) {
				t.Fatalf("set %d: homatest netem show has %d netem lines, tc %d:\n%s\n%s", i+1, len(show), len(tc), read("show"+n+".out"), read("tc"+n+".out"))
			}
			for h, l := range show {
				if tc[h] != l {
					t.Errorf("netem %s:\n homatest %s\n tc       %s", h, l, tc[h])
				}
			}
			t.Logf("set %d: %d netem qdiscs equal, e.g. %s", i+1, len(show), show[firstKey(show)])
		}
		if rc("reset.rc") != 0 || strings.Contains(read("show3.out"), "netem") {
			t.Errorf("netem reset: %s; show after reset:\n%s", read("reset.out"), read("show3.out"))
		}
	})
	t.Run("scenario-tc-delay-loss", func(t *testing.T) {
		var sum struct {
			Verdict string `json:"verdict"`
			OK      int    `json:"ok"`
			Failed  int    `json:"failed"`
			P50     int64  `json:"latency_p50_ns"`
			Drops   any    `json:"drops"`
		}
		js := read("scenario.json")
		if err := json.Unmarshal([]byte(js), &sum); err != nil || rc("scenario.rc") != 0 {
			t.Fatalf("scenario run: exit %d, %v\n%s\n%s", rc("scenario.rc"), err, js, read("scenario.err"))
		}
		if sum.OK != 20 || sum.Failed != 0 || sum.Verdict != "pass" {
			t.Errorf("scenario: verdict %s, %d RPCs ok, %d failed, want pass, 20 and 0", sum.Verdict, sum.OK, sum.Failed)
		}
		if sum.P50 < int64(4*time.Millisecond) {
			t.Errorf("scenario: latency p50 %v, below the 4 ms the 2 ms delay on both switch ports adds", time.Duration(sum.P50))
		}
		t.Logf("tc backend, 2 ms delay per port and 2%% loss: %d of 20 RPCs ok, p50 %v, drops %v", sum.OK, time.Duration(sum.P50), sum.Drops)
	})
	t.Run("run-impl-linux-unsupported", func(t *testing.T) {
		stderr := read("linux.err")
		if rc("linux.rc") != 2 || !strings.Contains(stderr, "cannot run here: Linux kernel has no Homa") {
			t.Errorf("homatest run --impl linux on a stock kernel: exit %d, want 2 with the line saying it cannot run here; stderr:\n%s", rc("linux.rc"), stderr)
		}
	})
}

// netemLines returns the netem lines of tc or homatest netem show output by
// handle, with "refcnt N" removed and spaces normalised.
func netemLines(out, prefix string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), prefix)
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "netem" {
			continue
		}
		var keep []string
		for i := 0; i < len(f); i++ {
			if f[i] == "refcnt" {
				i++
				continue
			}
			keep = append(keep, f[i])
		}
		m[f[1]] = strings.Join(keep, " ")
	}
	return m
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// TestGuestTimeout: Config.Timeout counts the guest's run from QEMU's
// start (a stand-in QEMU that never boots is killed once it has run
// that long, with ErrGuestTimeout and the time in the error), not from
// before the initramfs build, as homatest lab --timeout's context did;
// a caller's context that ends first is no guest timeout.
func TestGuestTimeout(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "qemu")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	listen := func() [len(guestStreams)]*net.UnixListener {
		var lns [len(guestStreams)]*net.UnixListener
		sub := t.TempDir()
		for i, n := range guestStreams {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(sub, n+".sock"), Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			lns[i] = l
		}
		return lns
	}
	cfg := Config{QEMU: fake, Kernel: Kernel{Image: "/none/vmlinuz"}, Dir: dir, CPUs: 1, MemoryMiB: 64, Timeout: 300 * time.Millisecond}
	res, err := cfg.boot(context.Background(), vmAttempt{"tcg", "max"}, "/none/initramfs.cpio", t.TempDir(), listen())
	if !errors.Is(err, ErrGuestTimeout) || res.Total < cfg.Timeout ||
		!strings.Contains(err.Error(), "the guest was killed at its timeout: 300ms from QEMU's start (boot included: the command had not started)") {
		t.Errorf("after %v: %v; want ErrGuestTimeout after at least %v", res.Total, err, cfg.Timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cfg.Timeout = time.Hour
	if _, err := cfg.boot(ctx, vmAttempt{"tcg", "max"}, "/none/initramfs.cpio", t.TempDir(), listen()); errors.Is(err, ErrGuestTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the caller's context ended first: %v; want its deadline, not ErrGuestTimeout", err)
	}
}
