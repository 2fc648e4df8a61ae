package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a harness process (see
// runHelperHarness) instead of running tests.
const helperEnv = "HOMATEST_HARNESS_HELPER"

// helperSignalsEnv makes the helper harness install HandleSignals.
const helperSignalsEnv = "HOMATEST_HARNESS_HELPER_SIGNALS"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		if err := runHelperHarness(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helper harness:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	// What a test binary killed before it cleaned up (its go test
	// -timeout, or a child's own limit) left is removed here.
	RemoveDeadRuns(os.Stderr, StaleRunAge)
	os.Exit(m.Run())
}

// helperReport is what the helper harness prints once its run is up.
type helperReport struct {
	Run        RunID `json:"run"`
	Children   []int `json:"children"`
	Grandchild int   `json:"grandchild"`
	Hosts      []string
}

// runHelperHarness builds a 2-host topology with artifacts in dir, starts
// "sleep" in each host plus one process that leaves a grandchild (not
// covered by Pdeathsig), prints a helperReport line and blocks until
// killed.
func runHelperHarness(dir string) error {
	if os.Getenv(helperSignalsEnv) != "" {
		HandleSignals()
	}
	a, err := NewArtifacts(dir)
	if err != nil {
		return err
	}
	topo, err := Build(context.Background(), Config{Hosts: 2, Artifacts: a})
	if err != nil {
		return err
	}
	rep := helperReport{Run: topo.ID}
	for _, h := range topo.Hosts {
		rep.Hosts = append(rep.Hosts, h.NS)
		p, err := h.Start(ProcSpec{Path: "sleep", Args: []string{"1000"}})
		if err != nil {
			topo.Close()
			return err
		}
		rep.Children = append(rep.Children, p.Pid())
	}
	// sh prints the pid of a backgrounded sleep (a grandchild of the
	// harness) and then waits.
	p, err := topo.Hosts[1].Start(ProcSpec{Path: "sh", Args: []string{"-c", "sleep 1000 & echo $!; wait"}})
	if err != nil {
		topo.Close()
		return err
	}
	rep.Children = append(rep.Children, p.Pid())
	if _, err := fmt.Fscan(p.Stdout(), &rep.Grandchild); err != nil {
		topo.Close()
		return fmt.Errorf("read grandchild pid: %w", err)
	}
	// $! is known as soon as sh forks, before the child execs sleep: wait
	// until it has, so that Leftovers names it "sleep" whatever the load.
	if !eventually(30*time.Second, func() bool { return procName(rep.Grandchild) == "sleep" }) {
		topo.Close()
		return fmt.Errorf("grandchild %d is %q, not sleep, after 30 s", rep.Grandchild, procName(rep.Grandchild))
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	select {}
}
