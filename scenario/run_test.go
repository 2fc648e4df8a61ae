package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces")
	}
}

// runScenario runs s into dir with this test binary as the agent.
func runScenario(t *testing.T, s *Scenario, dir string) (*Result, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timescale.D(60*time.Second))
	defer cancel()
	return Run(ctx, s, Options{ArtifactsDir: dir, Exe: exe})
}

// runExample loads testdata/name, runs it into a fresh folder and returns
// the result, the folder and the summary as text (fatal on a run error).
func runExample(t *testing.T, name string) (*Result, string, string) {
	t.Helper()
	s, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a")
	res, err := runScenario(t, s, dir)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	res.Summary.WriteText(&text)
	return res, dir, text.String()
}

// namespaces lists the namespaces whose names keep accepts.
func namespaces(t *testing.T, keep func(name string) bool) []string {
	t.Helper()
	ents, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if keep(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// ourNamespaces lists the namespaces whose names carry run id.
func ourNamespaces(t *testing.T, id string) []string {
	return namespaces(t, func(name string) bool { return strings.HasPrefix(name, "ht"+id+"-") })
}

// processNamespaces returns the namespaces of runs whose lock this process
// wrote (harness.LockDir/ht<id>.lock holds its pid): those a failed run,
// whose folder and so its topology.json are gone, would have left.
func processNamespaces(t *testing.T) []string {
	return namespaces(t, func(name string) bool {
		id, ok := harness.RunOf(name)
		if !ok {
			return false
		}
		b, err := os.ReadFile(filepath.Join(harness.LockDir, id.Prefix()+".lock"))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid())
	})
}

// runID returns the run id in dir's topology.json.
func runID(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d harness.Description
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return string(d.Run)
}

// TestRunAndReplay runs the two-host example end to end (reference
// implementation agents in namespaces behind netem's switch, a plan that
// drops one request DATA packet of RPC 2 and the GRANT of RPC 3): every
// RPC completes, each host's view keeps every MUST rule, the artifacts are
// all there, nothing is left behind, and a replay from the run folder hits
// the same packets.
func TestRunAndReplay(t *testing.T) {
	needRoot(t)
	res, dirA, text := runExample(t, "two-hosts-drops.yaml")
	sum := res.Summary
	if sum.Verdict != VerdictPass || sum.OK != 3 || sum.Failed != 0 || sum.Violated != 0 {
		t.Fatalf("want 3 RPCs ok and a clean check:\n%s", text)
	}
	var checked int
	for _, r := range sum.Rules {
		checked += r.Checked
	}
	if checked < 1000 || len(res.Hosts) != 2 {
		t.Errorf("%d rule evaluations over %d host views; want both hosts judged on hundreds of packets", checked, len(res.Hosts))
	}
	var plan []Drop
	for _, d := range res.Drops {
		if len(d.Rules) > 0 {
			plan = append(plan, d)
		}
	}
	if len(plan) != 2 {
		t.Fatalf("plan drops %+v, want 2\n%s", plan, text)
	}
	// By rule, not by time: on a loaded machine RPC 2 can still be
	// sending when RPC 3 starts.
	sort.Slice(plan, func(i, j int) bool { return plan[i].Rules[0] < plan[j].Rules[0] })
	data, grant := plan[0], plan[1]
	if data.Rules[0] != 0 || data.Type != "DATA" || data.RPC != 2 || data.Message != "request" || data.Offset < 50000 || data.Offset >= 51424 || data.Retransmit || !data.Dropped || data.Host != "h2" {
		t.Errorf("first plan drop %+v, want rule 0's request DATA of RPC 2 in [50000, 51424) on its way to h2", data)
	}
	if grant.Rules[0] != 1 || grant.Type != "GRANT" || grant.RPC != 3 || grant.Message != "request" || grant.Host != "h1" {
		t.Errorf("second plan drop %+v, want rule 1's GRANT of RPC 3 on its way to h1", grant)
	}
	if sum.Drops["plan"] != 2 || len(sum.PlanHits) != 2 || sum.PlanHits[0].Hits != 1 || sum.PlanHits[1].Hits != 1 {
		t.Errorf("switch drops %v, plan hits %+v", sum.Drops, sum.PlanHits)
	}
	for _, f := range []string{"scenario.yaml", "seed", "versions.json", "hellos.json", "h1.agent.stderr.log", "h2.agent.stderr.log",
		"topology.json", "capture.pcapng", "sent.pcapng", "delivered.pcapng", "switch.json", "drops.json", "switch-notes.pcapng",
		"rpcs.json", "check.json", "summary.json"} {
		if st, err := os.Stat(filepath.Join(dirA, f)); err != nil || (st.Size() == 0 && !strings.HasSuffix(f, ".log")) {
			t.Errorf("artifact %s: %v", f, err)
		}
	}
	if left := ourNamespaces(t, runID(t, dirA)); len(left) != 0 {
		t.Errorf("namespaces left behind: %v", left)
	}

	s2, orig, err := LoadRun(dirA)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Seed != sum.Seed || len(orig) != len(res.Drops) {
		t.Fatalf("run folder: seed %d with %d drops, want %d and %d", s2.Seed, len(orig), sum.Seed, len(res.Drops))
	}
	res2, err := runScenario(t, s2, filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	if d := CompareDrops(orig, res2.Drops); d != nil {
		t.Errorf("the replay hit other packets: %v", d)
	}
	if res2.Summary.Verdict != VerdictPass {
		t.Errorf("replay verdict %s", res2.Summary.Verdict)
	}
}

// TestRunErrorsLeaveNothing: an implementation that cannot run here (the
// linux agent on a kernel without Homa) and a link the tc backend cannot
// emulate on this kernel are one-line errors naming the fix, and the run
// leaves no namespace behind.
func TestRunErrorsLeaveNothing(t *testing.T) {
	needRoot(t)
	base := "topology: {hosts: 2}\nworkload: {dist: '1000', count: 1}\n"
	if _, err := os.Stat("/proc/sys/net/homa"); err != nil {
		s, err := Parse([]byte(base + "iut: {impl: linux}\n"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "linux")
		_, err = runScenario(t, s, dir)
		var cr *agent.CannotRunError
		if !errors.As(err, &cr) || !strings.HasPrefix(err.Error(), "implementation linux cannot run here: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("linux on a kernel without Homa: %v", err)
		}
		if left := processNamespaces(t); len(left) != 0 {
			t.Errorf("namespaces left behind: %v", left)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("run folder left behind: %v", err)
		}
	}
	k, err := netem.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	if k.Netem {
		return // this kernel can delay frames with tc
	}
	s, err := Parse([]byte(base + "link: {backend: tc, rate: 100mbit, delay: 1ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tc")
	_, err = runScenario(t, s, dir)
	if err == nil || !strings.HasPrefix(err.Error(), "link.backend tc: this kernel cannot emulate the link: delay: needs sch_netem") ||
		!strings.Contains(err.Error(), "use link.backend switch") || strings.Contains(err.Error(), "--backend") || strings.Contains(err.Error(), "\n") {
		t.Errorf("tc delay without sch_netem: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "topology.json")); !os.IsNotExist(err) {
		t.Errorf("a topology was built before the kernel check: %v", err)
	}
}

// TestRunAndReplayTC runs the two-host example on the tc backend (the
// kernel bridge with HTB on every switch port, the plan as nftables rules
// on every port's egress): every RPC completes, each host's view keeps
// every MUST rule, the drops found in the capture (sent, never delivered)
// are exactly the two packets the plan names, by client id, each
// attributed to its rule, the nftables counters agree, nothing is left
// behind, and a replay drops the same packets.
func TestRunAndReplayTC(t *testing.T) {
	needRoot(t)
	k, err := netem.ProbeKernel()
	if err != nil {
		t.Fatal(err)
	}
	if !k.HTB || !k.NFTLoss {
		t.Skipf("this kernel lacks HTB or the nftables egress hook (%+v): the tc backend cannot run the plan", k)
	}
	res, dirA, text := runExample(t, "two-hosts-drops-tc.yaml")
	sum := res.Summary
	if sum.Verdict != VerdictPass || sum.OK != 3 || sum.Violated != 0 || len(sum.Warnings) != 0 {
		t.Fatalf("want 3 RPCs ok, a clean check and no warning:\n%s", text)
	}
	if len(res.Drops) != 2 {
		t.Fatalf("drops %+v, want the plan's 2\n%s", res.Drops, text)
	}
	plan := append([]Drop(nil), res.Drops...)
	sort.Slice(plan, func(i, j int) bool { return plan[i].Type < plan[j].Type })
	data, grant := plan[0], plan[1]
	if len(data.Rules) != 1 || data.Rules[0] != 0 || data.Reason != "plan" || data.Type != "DATA" || data.ID != 4 || data.RPC != 2 ||
		data.Message != "request" || data.Offset < 50000 || data.Offset >= 51424 || data.Retransmit || data.Host != "h2" || data.SentFrame == 0 {
		t.Errorf("DATA drop %+v, want rule 0's request DATA of id 4 (RPC 2) in [50000, 51424) on its way to h2", data)
	}
	if len(grant.Rules) != 1 || grant.Rules[0] != 1 || grant.Type != "GRANT" || grant.ID != 6 || grant.RPC != 3 || grant.Message != "request" || grant.Host != "h1" {
		t.Errorf("GRANT drop %+v, want rule 1's GRANT of id 6 (RPC 3) on its way to h1", grant)
	}
	if sum.Backend != BackendTC || sum.Drops["plan"] != 2 || sum.Drops[ReasonTC] != 0 || len(sum.PlanHits) != 2 || sum.PlanHits[0].Hits != 1 || sum.PlanHits[1].Hits != 1 {
		t.Errorf("drops %v, plan hits %+v", sum.Drops, sum.PlanHits)
	}
	if left := ourNamespaces(t, runID(t, dirA)); len(left) != 0 {
		t.Errorf("namespaces left behind: %v", left)
	}
	s2, orig, err := LoadRun(dirA)
	if err != nil {
		t.Fatal(err)
	}
	res2, err := runScenario(t, s2, filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	if d := CompareDrops(orig, res2.Drops); d != nil || len(orig) != 2 {
		t.Errorf("the replay hit other packets: %v (original %d drops)", d, len(orig))
	}
}

// TestRunTCPlanUnsupported: a plan the tc backend cannot run (an RPC
// ordinal) is a one-line error naming the rule, the field and both fixes,
// before anything is built.
func TestRunTCPlanUnsupported(t *testing.T) {
	needRoot(t)
	s, err := Parse([]byte("topology: {hosts: 2}\nworkload: {dist: '1000', count: 1}\nlink: {backend: tc, rate: 1gbit}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.Plan = &netem.Plan{Rules: []netem.Rule{{Name: "1st GRANT of RPC 1", Match: netem.Match{Type: "GRANT", RPC: 1, Nth: 1}, Action: netem.Action{Drop: true}}}}
	dir := filepath.Join(t.TempDir(), "tc")
	_, err = runScenario(t, s, dir)
	if err == nil || !strings.Contains(err.Error(), "plan: link.backend tc cannot run this plan: plan rule 0 (1st GRANT of RPC 1): match.rpc: ") ||
		!strings.Contains(err.Error(), "use match.id") || !strings.Contains(err.Error(), "or use link.backend switch") || strings.Contains(err.Error(), "\n") {
		t.Errorf("rpc on tc: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run folder exists: a run started before the plan check (%v)", err)
	}
}

// TestRunFailLeavesNothing: a run that fails after making its folder
// removes what it wrote: the whole folder when it made it, only its own
// files in a folder that existed; with an agent's log it keeps the folder
// and names it.
func TestRunFailLeavesNothing(t *testing.T) {
	s, err := Parse([]byte("workload: {dist: w1, count: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	dir := filepath.Join(t.TempDir(), "runs", "a")
	r, err := newRun(s, Options{ArtifactsDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.fail(context.Background(), boom); err != boom {
		t.Errorf("fail: %v; want boom", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("%s after a failed run: %v; want it gone", filepath.Dir(dir), err)
	}
	mine := t.TempDir()
	os.WriteFile(filepath.Join(mine, "notes"), nil, 0o644)
	if r, err = newRun(s, Options{ArtifactsDir: mine}); err != nil {
		t.Fatal(err)
	}
	r.fail(context.Background(), boom)
	if ents, _ := os.ReadDir(mine); len(ents) != 1 || ents[0].Name() != "notes" {
		t.Errorf("the user's folder after a failed run holds %v; want only notes", ents)
	}
	if r, err = newRun(s, Options{ArtifactsDir: dir}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "h1.agent.stderr.log"), []byte("panic\n"), 0o644)
	if err := r.fail(context.Background(), boom); !errors.Is(err, boom) || !strings.Contains(err.Error(), "logs in "+dir) {
		t.Errorf("fail with an agent log: %v; want boom naming %s", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "h1.agent.stderr.log")); err != nil {
		t.Errorf("agent log removed: %v", err)
	}
}
