package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/homatest/homatest/bench"
	"github.com/homatest/homatest/bench/benchrun"
)

// TestCollectiveSizeMemory: a --size whose collective would not fit in
// the memory available is refused before anything runs, with the size
// that would fit; bench collective used to accept up to 1 TiB and
// exhaust a 24 GB machine at 1000GB.
func TestCollectiveSizeMemory(t *testing.T) {
	if runtime.GOOS == "linux" {
		if b, ok := availableMemory(); !ok || b <= 0 {
			t.Errorf("available memory %d, %v: want the machine's, above 0", b, ok)
		}
	}
	defer func(f func() (int64, bool)) { availableMemory = f }(availableMemory)
	availableMemory = func() (int64, bool) { return 24e9, true }
	for _, c := range []struct {
		args []string
		want string
	}{
		// --background none with loads above 0 is refused after the
		// size: without the size check the run never starts.
		{[]string{"--size", "1000GB", "--background", "none", "--loads", "0.5"},
			"--size 1000GB: this ring all-reduce over 8 hosts needs about 5.0 TB of memory (5× the 1.0 TB its largest step sends at once) and this machine has 24.0 GB available: give --size 4800MB or less"},
		{[]string{"--size", "1GB", "--algorithm", "halving-doubling", "--hosts", "64", "--background", "none", "--loads", "0.5"},
			"--size 1GB: this halving-doubling all-reduce over 64 hosts needs about 160.0 GB of memory (5× the 32.0 GB its largest step sends at once) and this machine has 24.0 GB available: give --size 150MB or less"},
	} {
		out, err, code := run(t, append([]string{"bench", "collective"}, c.args...)...)
		if code != ExitUsage || err == nil || err.Error() != c.want {
			t.Errorf("bench collective %v: exit %d, err %v\nwant 2 and %q\n%s", c.args, code, err, c.want, out)
		}
	}
	// The size named fits; one MB more would not.
	for _, c := range []struct {
		o    collectiveOpts
		fits bool
	}{
		{collectiveOpts{algorithm: "ring", hosts: 8, size: "4800MB", bytes: 4800e6}, true},
		{collectiveOpts{algorithm: "ring", hosts: 8, size: "4801MB", bytes: 4801e6}, false},
		{collectiveOpts{algorithm: "halving-doubling", hosts: 64, size: "150MB", bytes: 150e6}, true},
		{collectiveOpts{algorithm: "halving-doubling", hosts: 64, size: "151MB", bytes: 151e6}, false},
	} {
		if err := c.o.checkMemory(); (err == nil) != c.fits {
			t.Errorf("%s over %d hosts, %s: %v, want fits %v", c.o.algorithm, c.o.hosts, c.o.size, err, c.fits)
		}
	}
	// Unknown memory: not checked.
	availableMemory = func() (int64, bool) { return 0, false }
	o := collectiveOpts{algorithm: "ring", hosts: 8, size: "1000GB", bytes: 1000e9}
	if err := o.checkMemory(); err != nil {
		t.Errorf("memory unknown: %v, want no check", err)
	}
}

func TestCollectiveFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "lots"}, "--size"},
		{[]string{"--size", "3", "--hosts", "4"}, "at least one byte per host"},
		{[]string{"--hosts", "1"}, "--hosts 1"},
		{[]string{"--hosts", "145"}, "--hosts 145"},
		{[]string{"--algorithm", "tree"}, "--algorithm"},
		{[]string{"--algorithm", "halving-doubling", "--hosts", "6"}, "power of two"},
		{[]string{"--rate", "0"}, "above 0"},
		{[]string{"--mtu", "100"}, "--mtu"},
		{[]string{"--loads", "0,1"}, "[0, 1)"},
		{[]string{"--background", "none", "--loads", "0,0.5"}, "--background none"},
		{[]string{"--background", "w9"}, "--background"},
		{[]string{"--transport", "udp"}, "--transport"},
		{[]string{"--plot", "x.gif"}, ".png or .svg"},
		// Checked before the run, not after its minutes of simulation.
		{[]string{"--plot", "/proc/coll.png"}, "--plot /proc/coll.png: cannot write: "},
		{[]string{"-o", "xml"}, "-o"},
	} {
		out, err, code := run(t, append([]string{"bench", "collective"}, c.args...)...)
		if code != ExitUsage || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("bench collective %v: exit %d, err %v (want 2 and a one-line error with %q)\n%s", c.args, code, err, c.want, out)
		}
	}
	for s, want := range map[string]int64{"64MB": 64e6, "64MiB": 64 << 20, "1.5KB": 1500, "1000": 1000, "2 GB": 2e9} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-5MB", "MB", "2TB", "1e30"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("parseBytes(%q): no error", s)
		}
	}
}

// TestCollectiveSim runs a small collective (no root): a 2 MB ring
// all-reduce over 4 hosts at 10 Gbit/s, alone and beside W3 background
// RPCs at 0.3 of every link, on both transports. Every point completes,
// no faster than the ideal; the background runs beside the collective
// and its slowdowns are at least 1; the plot is written.
func TestCollectiveSim(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "c.svg")
	out, err, code := run(t, "bench", "collective", "--hosts", "4", "--size", "2MB", "--rate", "10gbit", "--background", "w3",
		"--loads", "0,0.3", "--iterations", "1", "--unloaded", "2", "-o", "json", "--plot", plot)
	if code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, out)
	}
	var rep bench.CollectiveReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	// Each host sends 2(N-1)/N of 2 MB = 3 MB at 10 Gbit/s: 2.4 ms.
	if rep.Ideal.Microseconds() != 2400 || len(rep.Points) != 4 {
		t.Fatalf("ideal %v, %d points; want 2.4ms and 4", rep.Ideal, len(rep.Points))
	}
	for _, p := range rep.Points {
		if p.Err != "" || len(p.Times) != 1 || p.VsIdeal < 1 || p.VsUnloaded == 0 {
			t.Errorf("%s at %.1f: %+v", p.Transport, p.Load, p)
		}
		if b := p.Background; (p.Load > 0) != (b != nil) || b != nil && (b.Count < 100 || b.Errors > 0 || b.Buckets[0].P50 < 1) {
			t.Errorf("%s at %.1f: background %+v", p.Transport, p.Load, b)
		}
	}
	if b, err := os.ReadFile(plot); err != nil || !strings.Contains(string(b), "completion time") {
		t.Errorf("plot: %v", err)
	}
}

// TestCgroupFileBytes: the page cache a cgroup's memory.current includes
// is read from memory.stat's "file" line (not "file_mapped" and the like),
// so that a container whose cache fills its limit is not taken as full.
func TestCgroupFileBytes(t *testing.T) {
	stat := []byte("anon 1048576\nfile 734003200\nkernel 1000\nfile_mapped 4096\nfile_dirty 0\n")
	if got := cgroupFileBytes(stat); got != 734003200 {
		t.Errorf("file bytes %d, want 734003200", got)
	}
	if got := cgroupFileBytes(nil); got != 0 {
		t.Errorf("no memory.stat: %d, want 0", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader on other
// goroutines (the progress notes and a test's cancel condition).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCollectiveInterrupted: bench collective interrupted once homa's
// unloaded point finished (its progress note written; homa at load 0.3
// cut short) exits 130 and prints the finished point after a line naming
// the point cut short; with -o json it writes the report with verdict
// incomplete, why, and the point running (writeInterrupted on the same
// error: -o json is quiet on standard error, where the note marks the
// point finished). The old code printed nothing and said "it wrote
// nothing", discarding the finished points.
func TestCollectiveInterrupted(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	var errw lockedBuffer
	ctx := &cancelWhen{Context: parent, cancel: cancel, cond: func() bool {
		return strings.Contains(errw.String(), "homa at load 0.00: simulated")
	}}
	cmd := New()
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	cmd.SetArgs([]string{"bench", "collective", "--hosts", "4", "--size", "1MB", "--rate", "10gbit", "--background", "w3",
		"--loads", "0,0.3", "--iterations", "1", "--unloaded", "2"})
	err := cmd.ExecuteContext(ctx)
	if code := ExitCode(err); code != 130 {
		t.Fatalf("exit %d, %v, want 130\n%s", code, err, errw.String())
	}
	why := "interrupted while homa ran at background load 0.30: the collective bench stopped before it finished; 1 of 4 points finished and are reported (no plot)"
	if err.Error() != why {
		t.Errorf("error %q, want %q", err, why)
	}
	head := "INCOMPLETE: interrupted while homa ran at background load 0.30; the report of what finished before:\n\nring all-reduce of 1MB over 4 hosts"
	if !strings.HasPrefix(out.String(), head) || !strings.Contains(out.String(), "homa     0.00") || strings.Contains(out.String(), "0.30  ") {
		t.Errorf("text output:\n%s\nwant %q and homa's unloaded point only", out.String(), head)
	}

	o := &collectiveOpts{output: "json", trans: []string{"homa", "tcp"}, loadsF: []float64{0, 0.3}}
	rep := &bench.CollectiveReport{Algorithm: "ring", Bytes: 1e6, Hosts: 4, Points: []bench.CollectivePoint{{Transport: "homa", Times: []time.Duration{time.Millisecond}}}}
	out.Reset()
	err = o.writeInterrupted(&out, &benchrun.CollectiveInterruptedError{Report: rep, Running: "homa", Load: 0.3, Err: context.Canceled})
	if ExitCode(err) != 130 || err.Error() != why {
		t.Errorf("-o json: %v, want exit 130, %q", err, why)
	}
	var j collectiveInterrupted
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatalf("-o json: %v:\n%s", err, out.String())
	}
	if j.Verdict != "incomplete" || j.Interrupted != why || j.Running != "homa" || j.RunningLoad != 0.3 || j.CollectiveReport == nil ||
		len(j.Points) != 1 || j.Points[0].Transport != "homa" || len(j.Points[0].Times) != 1 || j.Hosts != 4 {
		t.Errorf("report %s; want verdict incomplete, why, homa at 0.3 running, homa's unloaded point", out.String())
	}
}
