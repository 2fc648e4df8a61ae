package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/sim"
)

// TestCheckDeterministic: homatest check gives the same report, text and
// -o json byte for byte, every time it checks one capture. Go randomises
// map iteration order, so a rule that names the first element of a map
// it finds, or orders output by one, reports differently from run to run
// (HOMA-GRANT-020 did before 0c4c350: 2 texts in 30 checks of one
// incast). Each capture is checked several times in one process: simulated
// incasts with long messages, with and without fault knobs (multi-host,
// many messages per receiver, so the trace's maps hold several elements),
// the kept real captures and the fault catalogue.
func TestCheckDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("checks each capture several times")
	}
	type capture struct {
		path string
		args []string
		runs int
	}
	var caps []capture
	dir := t.TempDir()
	for _, faults := range [][]homa.Fault{nil, {homa.FaultDuplicateData}, {homa.FaultEarlyResend}, {homa.FaultNoGrants}, {homa.FaultOvercommit}} {
		for _, path := range simIncast(t, dir, faults) {
			ports := strings.HasSuffix(path, "-ports.pcapng")
			if ports && faults != nil {
				continue // each host's view costs a check of its own: the clean run's suffice
			}
			// A one-direction view is judged as the view it is named
			// (auto would make its findings inconclusive: one end of every
			// link), so that its findings stay violations.
			var view []string
			for _, v := range []string{"sent", "delivered"} {
				if strings.HasSuffix(path, "-"+v+".pcapng") {
					view = []string{"--capture-point", v}
				}
			}
			caps = append(caps, capture{path: path, runs: 6, args: view})
			if faults == nil && !ports {
				// Judged by a stricter receiver than the hosts were (fewer
				// messages granted at once, no ranking tolerance, a smaller
				// budget): findings in many grant rules, each naming some
				// message of a receiver's set.
				caps = append(caps, capture{path: path, runs: 6, args: append([]string{"--param", "max_overcommit=2", "--param", "rank_tolerance=0", "--param", "max_incoming=100000"}, view...)})
			}
		}
	}
	kept, err := filepath.Glob("../../../../pcap/testdata/real/*/*.pcap")
	if err != nil || len(kept) == 0 {
		t.Fatalf("no kept real captures (%v)", err)
	}
	for _, f := range kept {
		args := scaledTimers
		if strings.HasSuffix(f, "linux-6.13-proto146/b-500k-grants.pcap") {
			args = append(args[:len(args):len(args)], "--param", "window=10000")
		}
		caps = append(caps, capture{path: f, args: args, runs: 4})
	}
	for _, fc := range faultCases() {
		caps = append(caps, capture{path: filepath.Join(faultsDir, fc.file()), args: fc.args, runs: 3})
	}
	start := time.Now()
	for _, c := range caps {
		for _, out := range []string{"json", "text"} {
			args := append([]string{"check", "--strict", "-o", out}, c.args...)
			args = append(args, c.path)
			first, _, code := run(t, args...)
			if code != ExitOK && code != ExitViolations {
				t.Fatalf("%s: exit %d: %s", c.path, code, first)
			}
			runs := c.runs
			if out == "text" {
				runs = 2 // the text prints the report the JSON holds
			}
			for i := 1; i < runs; i++ {
				got, _, _ := run(t, args...)
				if got != first {
					t.Errorf("%s -o %s: check %d differs from check 1 at %s", c.path, out, i+1, firstDiff(first, got))
					break
				}
			}
		}
	}
	t.Logf("%d captures checked in %v", len(caps), time.Since(start).Round(time.Millisecond))
}

// firstDiff names the first line where a and b differ, with both.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("the end: %d lines, then %d", len(al), len(bl))
}

// simIncast writes to dir the as-sent, as-delivered and per-port (each
// host's link, both directions: check judges each host's view) captures of a
// simulated 4-to-1 incast (the conformance suite's WORKLOAD-incast-mixed:
// W4 requests capped at 300 KB, 16 outstanding, 60 RPCs, seed 9: several
// long messages wait for grants at the server at once) with fault knobs
// faults on every host, each with the sidecar of the parameters the suite
// judges them with, and returns their paths.
func simIncast(t *testing.T, dir string, faults []homa.Fault) []string {
	t.Helper()
	ap := agent.Params{"link_bps": int64(10e9), "tick_ns": (10 * time.Millisecond).Nanoseconds()}
	p, err := agent.RefParams(ap)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := agent.ParamsOf(p).Spec("linux")
	if err != nil {
		t.Fatal(err)
	}
	sp.Slack, sp.Jitter, sp.Reaction = sim.ViewTolerance, sim.ViewTolerance, 0
	s, err := sim.New(sim.Config{Link: netem.LinkConfig{Priorities: netem.MaxPriorities}})
	if err != nil {
		t.Fatal(err)
	}
	var hosts []*sim.Host
	for i := 1; i <= 5; i++ {
		h, err := s.AddHost(sim.HostConfig{Name: fmt.Sprintf("h%d", i), Addr: harness.Addr4(i), Params: p, Faults: faults})
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	name := "clean"
	if len(faults) > 0 {
		name = string(faults[0])
	}
	var paths []string
	var bufs []*bufio.Writer
	for _, view := range []string{"sent", "delivered", "ports"} {
		path := filepath.Join(dir, "incast-"+name+"-"+view+".pcapng")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		paths, bufs = append(paths, path), append(bufs, bufio.NewWriter(f))
	}
	if err := s.Capture(sim.CaptureConfig{Sent: bufs[0], Delivered: bufs[1], Both: bufs[2]}); err != nil {
		t.Fatal(err)
	}
	dist := func(max int) workload.Dist {
		o := workload.DefaultOptions
		o.MaxLength = max
		d, err := workload.ParseOptions("w4", o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tr, err := s.StartTraffic(hosts, traffic.Config{Pattern: traffic.ManyToOne, Requests: dist(300000), Responses: dist(100000),
		Concurrency: 4, Count: 60, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	s.RunWhile(func() bool { return !tr.Done() })
	s.RunFor(500 * time.Millisecond)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, path := range paths {
		if err := bufs[i].Flush(); err != nil {
			t.Fatal(err)
		}
		if err := sp.WriteFile(path+".params", "TestCheckDeterministic's simulated incast"); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}
