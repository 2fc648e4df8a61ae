package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homatest/homatest/spec"
)

// TestParamAliases: every command takes the names homatest spec params
// lists and the agents' names alike. On the old code run and explore
// refused tick=5ms ("not an integer") and check refused link_bps
// ("unknown parameter", no hint).
func TestParamAliases(t *testing.T) {
	p, err := parseParams([]string{"tick=5ms", "link_mbps=1000"})
	if err != nil || p["tick_ns"] != int64(5000000) || p["link_bps"] != int64(1000000000) {
		t.Errorf("parseParams(tick=5ms, link_mbps=1000) = %v, %v; want tick_ns 5000000, link_bps 1000000000", p, err)
	}
	sp := spec.Profiles()[0].Params
	if err := sp.Set("link_bps", "1000000000"); err != nil || sp.LinkMbps != 1000 {
		t.Errorf("check's link_bps=1000000000: %v, link_mbps %d; want 1000", err, sp.LinkMbps)
	}
	// Rounded up as an IUT's hello is: explore ran at link_bps=1500000
	// and wrote link_mbps=2 into its .params, which check refused when given.
	if err := sp.Set("link_bps", "1500000"); err != nil || sp.LinkMbps != 2 {
		t.Errorf("check's link_bps=1500000: %v, link_mbps %d; want 2 (rounded up as a hello's)", err, sp.LinkMbps)
	}
	if err := sp.Set("tick_ns", "5000000"); err != nil || sp.Tick.Milliseconds() != 5 {
		t.Errorf("check's tick_ns=5000000: %v, tick %v; want 5ms", err, sp.Tick)
	}
	// A misspelt name with a duration: the old code said only that the
	// value was not an integer.
	if _, err := parseParams([]string{"tik=1ms"}); err == nil || !strings.Contains(err.Error(), "tik is no parameter of the built-in ref (did you mean tick?)") {
		t.Errorf("parseParams(tik=1ms): %v; want the name refused with a hint naming tick", err)
	}
	if err := sp.Set("unsched", "5"); err == nil || !strings.Contains(err.Error(), "did you mean unsched_bytes or unsched_cutoffs?") {
		t.Errorf("unknown parameter unsched: %v; want a hint naming unsched_bytes and unsched_cutoffs", err)
	}
}

// TestRunRefusesScenarioFolder: run --artifacts naming a scenario run's
// folder is refused (exit 2) and leaves it as it was. On the old code run
// replaced its report.html and added pass-1/, with exit 0.
func TestRunRefusesScenarioFolder(t *testing.T) {
	dir := t.TempDir()
	for f, body := range map[string]string{"scenario.yaml": "name: x\n", "report.html": "scenario report"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err, code := run(t, "run", "--env", "sim", "--artifacts", dir)
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "holds a homatest scenario run") {
		t.Errorf("exit %d, %v; want 2, holds a homatest scenario run", code, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.html")); string(b) != "scenario report" {
		t.Errorf("report.html is now %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "pass-1")); err == nil {
		t.Error("pass-1/ was made in the scenario's folder")
	}
}

// TestDefaultRunFolderUnwritable: explore and bench without --artifacts in
// a folder where homatest-runs/ cannot be made say so as run does, naming
// the default folder, not a flag the user never gave. On the old code:
// "--artifacts: mkdir homatest-runs: ...".
func TestDefaultRunFolderUnwritable(t *testing.T) {
	t.Chdir("/proc") // no folder can be made there, root or not
	for _, args := range [][]string{{"explore", "--budget", "1s"}, {"bench", "--env", "sim", "--duration", "100ms"}} {
		_, err, code := run(t, args...)
		if code != ExitUsage || err == nil || !strings.HasPrefix(err.Error(), "cannot create the default run folder under homatest-runs/") {
			t.Errorf("%v: exit %d, %v; want 2, cannot create the default run folder", args, code, err)
		}
	}
}

// TestAnnotatePcapName: --annotate writes pcapng (packet comments), so a
// .pcap name is refused with the name to use. On the old code it wrote
// pcapng under the .pcap name.
func TestAnnotatePcapName(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.pcap")
	_, err, code := run(t, "check", "--annotate", out, "testdata/faults/need-ack-right-after-response.pcapng")
	if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "name it "+strings.TrimSuffix(out, ".pcap")+".pcapng") {
		t.Errorf("exit %d, %v; want 2 naming the .pcapng to use", code, err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("out.pcap was written")
	}
}
