package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/report/html/htmltest"
)

func TestBenchFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "w9"}, "--workload"},
		// Above Homa's largest message: workload.Parse's one check, as
		// for a scenario's dist (it used to be capped silently).
		{[]string{"--workload", "2000000"}, `--workload "2000000": fixed size 2000000: want 1..1000000 bytes`},
		{[]string{"--workload", "0"}, `--workload "0": fixed size 0: a message has at least 1 byte: give 1 or more, or w1..w5`},
		// The ref's refusal, before any host is built, named as run names it.
		{[]string{"--env", "sim", "--param", "foo=1"}, `--param: unknown parameter "foo" (known: `},
		{[]string{"--env", "sim", "--param", "unsched_bytes=0"}, "--param: homa: unsched_bytes 0: want 1 or more"},
		{[]string{"collective", "--background", "w9"}, `--background "w9": unknown workload "w9": use w1, w2, w3, w4, w5`},
		{[]string{"--rate", "fast"}, `--rate: rate "fast": want a number of bit/s with a unit`},
		{[]string{"--rate", "0"}, "give a rate above 0"},
		// tc's bytes/s (10gbps was 80 Gbit/s) and a forgotten unit (10
		// bit/s simulated an hour of virtual time).
		{[]string{"--rate", "10gbps"}, "write 10gbit for bits/s, or 80gbit for bytes/s"},
		{[]string{"--rate", "10"}, "write e.g. 10gbit or 10mbit"},
		{[]string{"--load", "1.5"}, "--load 1.5"},
		{[]string{"--load", "0"}, "--load 0"},
		{[]string{"--hosts", "1"}, "--hosts 1"},
		{[]string{"--transport", "homa,udp"}, "--transport"},
		{[]string{"--transport", "tcp,tcp"}, "tcp given twice"},
		{[]string{"--plot", "out.gif"}, ".png or .svg"},
		{[]string{"--plot", "/proc/out.png"}, "--plot /proc/out.png: cannot write: "},
		{[]string{"-o", "xml"}, "-o \"xml\""},
		{[]string{"--impl", "/nonexistent.yaml"}, "--impl"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--rtt", "0s"}, "--rtt"},
		{[]string{"--param", "unsched_bytes"}, "want NAME=VALUE"},
		{[]string{"--param", "unsched_bytes=lots"}, "not an integer"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--env", "vm"}, `--env "vm": want auto, ns`},
		{[]string{"--env", "sim", "--hosts", "145"}, "--hosts 145: want 2..144"},
		{[]string{"--env", "ns", "--hosts", "17"}, "--hosts 17: want 2..16"},
		{[]string{"--env", "sim", "--impl", "linux"}, "--env sim simulates the reference implementation only"},
		// A rate and duration in which the workload issues no message on
		// average (W4's mean 65,960 wire bytes at half of 1 kbit/s: one
		// every 18m20s): refused before anything is built (it ran 47 s
		// in namespaces, measuring unloaded latency, before failing).
		{[]string{"--rate", "1kbit", "--duration", "10ms"}, "--rate 1kbit and --duration 10ms: at --load 0.5 the workload w4 (65960 bytes a message on the wire, on average) issues one message every 18m20s, so none in 10ms: give --duration 18m20s or more, or --rate 106mbit or more"},
		{[]string{"--env", "sim", "--rate", "10gbit", "--workload", "w5", "--duration", "100us"}, "issues one message every 670µs, so none in 100µs: give --duration 670µs or more, or --rate 67gbit or more"},
	} {
		out, err, code := run(t, append([]string{"bench"}, c.args...)...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("bench %v: exit %d, err %v (want 2 and a one-line error with %q)\n%s", c.args, code, err, c.want, out)
		}
	}
	// A usage error creates nothing.
	dir := filepath.Join(t.TempDir(), "run")
	if _, _, code := run(t, "bench", "--env", "sim", "--hosts", "3", "--duration", "2s", "--workload", "2000000", "--transport", "homa", "--artifacts", dir); code != ExitUsage {
		t.Errorf("bench --workload 2000000: exit %d, want 2", code)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("bench --workload 2000000 left %s (%v)", dir, err)
	}
}

// TestBenchNS runs a tiny bench of both transports (about 6 s): 3 hosts,
// 1000-byte requests at load 0.2 of 100 Mbit/s for 1 s.
func TestBenchNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	t.Setenv("HOMATEST_CLI_CHILD", "1")
	dir := t.TempDir()
	plot := filepath.Join(dir, "slowdown.svg")
	out, err, code := run(t, "bench", "--workload", "1000", "--load", "0.2", "--rate", "100mbit", "--hosts", "3",
		"--duration", "1s", "--unloaded", "7", "-o", "json", "--plot", plot, "--artifacts", filepath.Join(dir, "run"))
	if code != ExitOK {
		t.Fatalf("bench: exit %d, %v\n%s", code, err, out)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if len(rep.Transports) != 2 || rep.Transports[0].Transport != "homa" || rep.Transports[1].Transport != "tcp" ||
		len(rep.Buckets) != 1 || rep.Impl != "ref" || rep.Hosts != 3 {
		t.Fatalf("report = %+v", rep)
	}
	// 0.2 × 100 Mbit/s of 1000-byte requests (1094 wire bytes) for 1 s:
	// about 2300 RPCs, the same ones for both transports.
	h, tc := rep.Transports[0], rep.Transports[1]
	if n := h.Count + h.Errors; n < 1500 || n > 3200 || n != tc.Count+tc.Errors {
		t.Errorf("RPCs: homa %d+%d, tcp %d+%d; want about 2300 each, equal", h.Count, h.Errors, tc.Count, tc.Errors)
	}
	if rep.Artifacts != filepath.Join(dir, "run") {
		t.Errorf("report's run folder %q, want %q", rep.Artifacts, filepath.Join(dir, "run"))
	}
	// Slowdowns near 1 or above (the 25th percentile of 7 unloaded RPCs
	// is the baseline: a CPU stall in 6 of them lowers them, but not
	// 10-fold).
	for _, s := range rep.Transports {
		b := s.Buckets[0]
		if s.Errors > s.Count/100 || b.P50 < 0.1 || b.P99 < b.P50 || len(s.Baseline.Points) != 1 || s.Baseline.Points[0].Count != 7 {
			t.Errorf("%s: %d errors (%s), bucket %+v, baseline %+v", s.Transport, s.Errors, s.FirstError, b, s.Baseline)
		}
	}
	svg, err := os.ReadFile(plot)
	if err != nil || !bytes.Contains(svg, []byte("tcp p99")) {
		t.Errorf("plot %s: %v", plot, err)
	}
	if page := filepath.Join(dir, "run", "report.html"); htmltest.Available() {
		dom := htmltest.DOM(t, page)
		if !strings.Contains(dom, "p99 tcp/homa") || !regexp.MustCompile(`data-rendered="[1-9]\d*x[1-9]\d*"`).MatchString(dom) {
			t.Errorf("%s: no slowdown table or plot in the browser", page)
		}
	}
	for _, f := range []string{"report.json", "report.html", "h1.ref.stderr.log", "h3.tcp.stderr.log", "homa-records.json", "tcp-unloaded.json", "tcp-agent-stats.json"} {
		if _, err := os.Stat(filepath.Join(dir, "run", f)); err != nil {
			t.Errorf("run folder: %v", err)
		}
	}
}

// TestBenchSim runs a small bench in the simulator (no root): 4 hosts,
// W3 at load 0.6 of 10 Gbit/s for 30 ms, Homa and TCP (netstack). Every
// RPC completes, the report says it was simulated with HomaModule's 10
// Gbit/s parameters, both transports got the same request sizes in the
// same order, slowdowns are at least 1 (the baseline is the unloaded
// latency of the same simulated hosts), and a second run writes the same
// report and records, byte for byte.
func TestBenchSim(t *testing.T) {
	dir := t.TempDir()
	report := func(name string) (bench.Report, []byte) {
		t.Helper()
		out, err, code := run(t, "bench", "--env", "sim", "--workload", "w3", "--load", "0.6", "--rate", "10gbit", "--hosts", "4",
			"--duration", "30ms", "--unloaded", "3", "-o", "json", "--artifacts", filepath.Join(dir, name))
		if code != ExitOK {
			t.Fatalf("bench: exit %d, %v\n%s", code, err, out)
		}
		var rep bench.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("bad JSON: %v\n%s", err, out)
		}
		var b []byte
		for _, f := range []string{"homa-records.json", "tcp-records.json", "report.json"} {
			d, _ := os.ReadFile(filepath.Join(dir, name, f))
			b = append(b, bytes.ReplaceAll(d, []byte(filepath.Join(dir, name)), nil)...)
		}
		return rep, b
	}
	rep, recs := report("a")
	if len(rep.Transports) != 2 || rep.Transports[0].Transport != "homa" || rep.Transports[1].Transport != "tcp" ||
		rep.Env != "sim" || rep.Params["link_bps"] != float64(10e9) {
		t.Fatalf("report = %+v", rep)
	}
	if len(rep.Saturated) != 0 || len(rep.Warnings) != 1 || !strings.HasPrefix(rep.Warnings[0], "tcp kept up, but the modelled CPU of host h4 (the server) was given ") {
		t.Errorf("saturated %q, warnings %q: W3 at 0.6 of 10 Gbit/s kept up, tcp on a busy server", rep.Saturated, rep.Warnings)
	}
	for _, s := range rep.Transports {
		// TCP's server acknowledges each data packet alone (no delayed
		// ACK in netstack): 6 packets per RPC keep its modelled cores
		// saturated, which a warning says, but it keeps up.
		if s.Saturated || s.Issued != s.Count || s.HostCPU == nil || s.HostCPU.Saturated() != (s.Transport == "tcp") {
			t.Errorf("%s: saturated %v, issued %d, done %d, cpu %+v", s.Transport, s.Saturated, s.Issued, s.Count, s.HostCPU)
		}
		if s.Errors != 0 || s.Count < 100 || s.Count != rep.Transports[0].Count {
			t.Errorf("%s: %d RPCs, %d errors (%s); want hundreds, as many as homa, none failed", s.Transport, s.Count, s.Errors, s.FirstError)
		}
		for i, b := range s.Buckets {
			if b.Count > 0 && (b.P50 < 1 || b.P99 < b.P50) {
				t.Errorf("%s bucket %d: %+v; want slowdowns of at least 1", s.Transport, i, b)
			}
			if b.Count != rep.Transports[0].Buckets[i].Count {
				t.Errorf("bucket %d: %s has %d RPCs, homa %d: the transports got different sizes", i, s.Transport, b.Count, rep.Transports[0].Buckets[i].Count)
			}
		}
	}
	_, recs2 := report("b")
	if len(recs) == 0 || !bytes.Equal(recs, recs2) {
		t.Errorf("two runs of one seed gave different records or reports (%d and %d bytes)", len(recs), len(recs2))
	}
}

// TestBenchSimSaturated: W1 at half of 10 Gbit/s offers the server more
// packets than its modelled cores carry (simulated time: the same on any
// machine): the bench prints its report with a WARNING naming the
// transport, the server and offered against delivered, marks the ratios,
// lists the transport under "saturated" in the JSON, and exits 1.
func TestBenchSimSaturated(t *testing.T) {
	dir := t.TempDir()
	args := []string{"bench", "--env", "sim", "--workload", "w1", "--load", "0.5", "--rate", "10gbit", "--hosts", "8",
		"--duration", "2ms", "--unloaded", "2", "--buckets", "4"}
	out, err, code := run(t, append(args, "--artifacts", filepath.Join(dir, "text"))...)
	if code != ExitViolations || err == nil || !strings.Contains(err.Error(), "homa and tcp did not keep up") {
		t.Fatalf("exit %d, %v; want 1 naming both transports\n%s", code, err, out)
	}
	for _, want := range []string{"\nWARNING: homa DID NOT KEEP UP: it carried ", "of the 4.82 Gbit/s offered",
		"likely cause: the modelled CPU of host h8 (the server)", "\nWARNING: tcp DID NOT KEEP UP", "      homa!  ", "x!\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	out, _, code = run(t, append(args, "-o", "json", "--artifacts", filepath.Join(dir, "json"))...)
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitViolations {
		t.Fatalf("exit %d, JSON %v\n%s", code, err, out)
	}
	if !slices.Equal(rep.Saturated, []string{"homa", "tcp"}) || !rep.Transports[0].Saturated || rep.Transports[0].HostCPU.Host != "h8" {
		t.Errorf("saturated %q, homa %+v", rep.Saturated, rep.Transports[0].HostCPU)
	}
	// --help no longer promises that any --rate works, and tells exit 1.
	help, _, _ := run(t, "bench", "--help")
	if strings.Contains(help, "any --rate works") || !strings.Contains(help, "1 done but a transport did not keep up") || !strings.Contains(help, "the modelled cores are finite") {
		t.Errorf("--help:\n%s", help)
	}
}

// TestBenchSimNothingCompleted: a bench whose loaded run completes no RPC
// (--duration 25ms, seed 3: W4 at half of 50 Mbit/s issues one RPC every
// 22 ms on average, and this seed's first comes later; 5 ms, which issues
// none on average, is now refused before anything runs) exits 2 with the reason and leaves nothing half-written:
// a new run folder is removed (it used to keep homa-records.json holding
// [] with no report and no marker), a folder that existed keeps only what
// it held.
func TestBenchSimNothingCompleted(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh")
	existing := filepath.Join(dir, "existing")
	if err := os.MkdirAll(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, existing, "mine.txt", "kept")
	for _, arts := range []string{fresh, existing} {
		out, err, code := run(t, "bench", "--env", "sim", "--duration", "25ms", "--seed", "3", "--unloaded", "2", "--artifacts", arts)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), "no homa RPC completed") || strings.Contains(err.Error(), arts) {
			t.Errorf("--artifacts %s: exit %d, %v; want 2 and the reason, naming no folder\n%s", arts, code, err, out)
		}
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the new run folder is still there (%v)", err)
	}
	if ents, _ := os.ReadDir(existing); len(ents) != 1 || ents[0].Name() != "mine.txt" {
		t.Errorf("the existing folder holds %v, want only mine.txt", ents)
	}
	// --help tells the default that applies: 10s, 500ms in the simulator.
	out, _, _ := run(t, "bench", "--help")
	if !strings.Contains(out, "(default 10s; with --env sim 500ms of simulated time)") || strings.Contains(out, "time) (default") {
		t.Errorf("--duration's help:\n%s", out)
	}
}

// TestNotKeptUpExit: a transport that fell short of the offered load makes
// the simulator's bench exit 1, but an emulated (--env ns) bench only when
// an RPC failed: there the shortfall alone may be the machine's other jobs.
func TestNotKeptUpExit(t *testing.T) {
	for _, c := range []struct {
		env    string
		errors int
		want   bool
	}{{"sim", 0, true}, {"sim", 3, true}, {"ns", 0, false}, {"", 0, false}, {"ns", 1, true}} {
		rep := &bench.Report{Env: c.env, Saturated: []string{"homa"}, Transports: []bench.Summary{{Transport: "homa"}, {Transport: "tcp"}}}
		rep.Transports[0].Errors = c.errors
		err := notKeptUp(rep)
		if (err != nil) != c.want {
			t.Errorf("env %q, %d failed RPCs: notKeptUp = %v, want an error: %v", c.env, c.errors, err, c.want)
		}
	}
	if err := notKeptUp(&bench.Report{Env: "sim"}); err != nil {
		t.Errorf("nothing saturated: %v", err)
	}
}

// TestBenchIssuesSuggestion: bench's refusal of a rate and duration that
// issue no message suggests a duration rounded up (not truncated), a rate
// within the 2^40 maximum or says none would do, and an absurd --load is
// refused with the valid range. Before, --load 1e-300 printed a negative
// duration and a 300-digit rate, w5 at 1kbit in 1ns suggested
// "6674420gbit", and a 49.6ns gap suggested the 49ns given.
func TestBenchIssuesSuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--load", "1e-300"}, "--load 1e-300: want a fraction in [0.001, 1], e.g. 0.8"},
		{[]string{"--rate", "2000gbit"}, `--rate "2000gbit": want at most 2^40 bit/s (1099gbit)`},
		{[]string{"--workload", "w1", "--rate", "100gbit", "--duration", "49ns"}, "issues one message every 50ns, so none in 49ns: give --duration 50ns or more, or --rate 102gbit or more"},
		{[]string{"--workload", "w5", "--rate", "1kbit", "--duration", "1ns"}, "give --duration 1h51m40s or more (no --rate up to 2^40 bit/s issues one in 1ns)"},
		{[]string{"--workload", "1000000", "--rate", "1bit", "--load", "0.001", "--duration", "1ns"}, "issues one message less than once in 146 years, so none in 1ns: give a higher --load or --rate, or smaller --workload messages (no --rate"},
	} {
		out, err, code := run(t, append([]string{"bench", "--env", "sim"}, c.args...)...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "every -") {
			t.Errorf("bench %v: exit %d, err %v (want 2 and a one-line error with %q)\n%s", c.args, code, err, c.want, out)
		}
	}
	// Near the maximum, the coarsest unit whose rounding stays within it.
	for _, c := range []struct {
		bps  float64
		want string
	}{{1.0995e12, "1099500mbit"}, {1.0995116e12, "1099511600kbit"}, {benchMaxRate, "1099511627776bit"}, {101.2e9, "102gbit"}, {500, "1kbit"}} {
		if got := rateUp(c.bps, benchMaxRate); got != c.want {
			t.Errorf("rateUp(%v): %s, want %s", c.bps, got, c.want)
		}
	}
}
