package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestBenchInterrupt: SIGINT or SIGTERM to homatest bench once its RPCs
// began (in the simulator, no root) ends it with exit 130 and one line
// saying so, as run and scenario end; its folder keeps what was written
// (homa's records) marked by a file "interrupted", with no report and no
// temporary file. SIGTERM used to end it by the signal (exit 143, nothing
// said) and SIGINT left the folder unmarked.
func TestBenchInterrupt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			// 120 s of virtual time: homa's loaded run takes seconds of
			// CPU, tcp's many more; the signal comes as tcp starts.
			out, code := interruptAt(t, sig, "tcp: unloaded latency", "bench", "--env", "sim", "--hosts", "16",
				"--duration", "120s", "--artifacts", dir)
			last := out[strings.LastIndex(out, "\n")+1:]
			want := "homatest: interrupted: the bench stopped before it finished; its partial folder " + dir + " is marked interrupted"
			if code != 130 || last != want {
				t.Fatalf("bench interrupted by %v: exit %d, stderr:\n%s\nwant 130 and last line %q", sig, code, out, want)
			}
			checkInterruptedFolder(t, dir, "homa-records.json")
		})
	}
}

// TestBenchInterruptNS: SIGTERM to homatest bench in network namespaces
// during the loaded run ends it with exit 130 saying the namespaces were
// removed, and they are, with every agent process (none holds a file of
// the run folder open); the folder is marked interrupted.
func TestBenchInterruptNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
	dir := filepath.Join(t.TempDir(), "run")
	before := htNamespaces(t)
	out, code := interruptAt(t, syscall.SIGTERM, "at load", "bench", "--env", "ns", "--hosts", "2", "--workload", "1000",
		"--rate", "100mbit", "--transport", "homa", "--unloaded", "3", "--duration", "10m", "--artifacts", dir)
	t.Logf("stderr:\n%s", out)
	last := out[strings.LastIndex(out, "\n")+1:]
	want := "homatest: interrupted: the bench stopped before it finished and its namespaces were removed; its partial folder " + dir + " is marked interrupted"
	if code != 130 || last != want {
		t.Fatalf("bench interrupted: exit %d, stderr:\n%s\nwant 130 and last line %q", code, out, want)
	}
	if left := newLeftovers(t, before); len(left) > 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	if procs := holdersOf(t, dir); len(procs) > 0 {
		t.Errorf("processes still holding files of the run folder open (agents left running): %v", procs)
	}
	checkInterruptedFolder(t, dir, "")
}

// checkInterruptedFolder fails t unless dir is marked interrupted, holds
// no report (report.json, report.html) and no temporary file, and holds
// keep when not "".
func checkInterruptedFolder(t *testing.T, dir, keep string) {
	t.Helper()
	note, err := os.ReadFile(filepath.Join(dir, "interrupted"))
	if err != nil || !strings.Contains(string(note), "files are partial") {
		t.Errorf("interrupted folder's marker: %q, %v", note, err)
	}
	names := entries(t, dir)
	for _, n := range strings.Split(names, ",") {
		if strings.HasPrefix(n, "report.") || strings.Contains(n, ".tmp") {
			t.Errorf("interrupted folder holds %s", n)
		}
	}
	if keep != "" {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("interrupted folder lost %s, written before the interrupt: %v (holds %s)", keep, err, names)
		}
	}
}

// holdersOf returns the pids of the processes with a file under dir open.
func holdersOf(t *testing.T, dir string) []string {
	t.Helper()
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var pids []string
	seen := map[string]bool{}
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && strings.HasPrefix(target, dir+"/") {
			pid := strings.Split(fd, "/")[2]
			if !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// TestBenchCollectiveInterrupt: SIGTERM to homatest bench collective
// during its first all-reduce ends it with exit 130 and one line naming
// the point cut short, not by the signal (exit 143, nothing said, as
// before), and no --plot file (TestCollectiveInterrupted: the points
// that finished before are reported).
func TestBenchCollectiveInterrupt(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "coll.png")
	out, code := interruptAt(t, syscall.SIGTERM, "all-reduce of", "bench", "collective", "--size", "1GB", "--loads", "0,0.5", "--plot", plot)
	last := out[strings.LastIndex(out, "\n")+1:]
	if want := "homatest: interrupted while homa ran at background load 0.00: the collective bench stopped before any point finished; nothing was measured"; code != 130 || last != want {
		t.Fatalf("bench collective interrupted: exit %d, stderr:\n%s\nwant 130 and last line %q", code, out, want)
	}
	if _, err := os.Stat(plot); !os.IsNotExist(err) {
		t.Errorf("plot of an interrupted collective bench: %v; want none", err)
	}
}

// cancelWhen is a context cancelled the first time its Err is asked
// once cond holds: the simulated bench asks it at the end of every
// traffic run (and every 65536 events), so the interruption comes at a
// point of the bench cond names, whatever the machine's load.
type cancelWhen struct {
	context.Context
	cancel func()
	cond   func() bool
}

func (c *cancelWhen) Err() error {
	if c.cond() {
		c.cancel()
	}
	return c.Context.Err()
}

// TestBenchInterruptedReport: homatest bench interrupted once homa's
// loaded run was written (tcp's unloaded run cut short) with -o json
// writes one JSON object of what finished (the setup, homa's buckets,
// verdict incomplete, why and where, tcp running) and exits 130; with
// -o text it prints homa's tables after a line saying it was
// interrupted. Interrupted at homa's first traffic run, the JSON holds
// the setup and no transport. It wrote nothing to standard output.
func TestBenchInterruptedReport(t *testing.T) {
	for _, tc := range []struct {
		name, output, after, running string
		finished                     []string
	}{
		{"json-after-homa", "json", "homa-records.json", "tcp", []string{"homa"}},
		{"json-at-once", "json", "", "homa", nil},
		{"text-after-homa", "text", "homa-records.json", "tcp", []string{"homa"}},
		// Before any transport finished: the setup (it printed nothing).
		{"text-at-once", "text", "", "homa", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := &cancelWhen{Context: parent, cancel: cancel, cond: func() bool {
				if tc.after == "" {
					return true
				}
				_, err := os.Stat(filepath.Join(dir, tc.after))
				return err == nil
			}}
			cmd := New()
			var out, errw bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errw)
			cmd.SetArgs([]string{"bench", "--env", "sim", "--duration", "2s", "--artifacts", dir, "-o", tc.output})
			err := cmd.ExecuteContext(ctx)
			if code := ExitCode(err); code != 130 {
				t.Fatalf("exit %d, %v, want 130\n%s", code, err, errw.String())
			}
			why := "interrupted: the bench stopped before it finished; its partial folder " + dir + " is marked interrupted"
			if err.Error() != why {
				t.Errorf("error %q, want %q", err, why)
			}
			checkInterruptedFolder(t, dir, tc.after)
			if tc.output == "text" && tc.finished == nil {
				head := "INCOMPLETE: interrupted while homa ran, before any transport finished: nothing was measured to the end; the setup:\n\nworkload w4 at load 0.50"
				if !strings.HasPrefix(out.String(), head) || !strings.HasSuffix(out.String(), "\nrun folder: "+dir+"\n") || strings.Contains(out.String(), "homa n") {
					t.Errorf("text output:\n%s\nwant %q, no table, and the run folder", out.String(), head)
				}
				return
			}
			if tc.output == "text" {
				head := "INCOMPLETE: interrupted while tcp ran; the report of what finished before:\n\nworkload w4 at load 0.50"
				if !strings.HasPrefix(out.String(), head) || !strings.Contains(out.String(), "homa n") || strings.Contains(out.String(), "tcp n") {
					t.Errorf("text output:\n%s\nwant %q and homa's bucket column only", out.String(), head)
				}
				return
			}
			var rep benchInterrupted
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("-o json: %v:\n%s", err, out.String())
			}
			if rep.Verdict != "incomplete" || rep.Interrupted != why || rep.Running != tc.running || rep.Artifacts != dir ||
				rep.Workload != "w4" || rep.Hosts != 4 || rep.Env != "sim" || len(rep.Buckets) != 10 {
				t.Errorf("report %+v; want verdict incomplete, why %q, running %s, artifacts %s and the setup (w4, 4 hosts, sim, 10 buckets)", rep, why, tc.running, dir)
			}
			var got []string
			for _, s := range rep.Transports {
				got = append(got, s.Transport)
				if s.Count == 0 || len(s.Buckets) != 10 {
					t.Errorf("%s: %d RPCs, %d buckets; want its measured buckets", s.Transport, s.Count, len(s.Buckets))
				}
			}
			if !slices.Equal(got, tc.finished) {
				t.Errorf("transports %v, want %v", got, tc.finished)
			}
		})
	}
}
