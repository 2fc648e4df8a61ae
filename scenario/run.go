package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/traffic"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/internal/stall"
	"github.com/homatest/homatest/internal/timescale"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/pcap"
	"github.com/homatest/homatest/report/annotate"
	"github.com/homatest/homatest/sim"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// Options configure Run.
type Options struct {
	// ArtifactsDir is the run folder; "" means
	// homatest-runs/<name>-<time>-<pid>.
	ArtifactsDir string
	// Exe is the homatest executable that runs the built-in agents
	// ("homatest agent --impl ref"); "" means this program.
	Exe string
	// Version is homatest's version for versions.json; "" reads the build
	// information.
	Version string
	// Progress, when set, is called as RPCs complete (traffic.Config).
	Progress func(done, total int)
	// Log, when set, gets one line per phase ("building 4 hosts", ...).
	Log func(line string)
	// Strict fails the run on SHOULD violations too (the CLI's
	// --strict): its summary, summary.json and report say FAIL.
	Strict bool
}

// Result is what a scenario run did; Summary is its short form (also
// written as summary.json).
type Result struct {
	// Dir is the run folder.
	Dir string
	// Scenario is the resolved scenario that ran.
	Scenario *Scenario
	// Hellos are the agents' hellos, in host order.
	Hellos []agent.Hello
	// Traffic is the workload's outcome (one record per RPC).
	Traffic *traffic.Result
	// Switch are the user-space switch's counters (zero for backend tc).
	Switch netem.Stats
	// Drops are the frames the switch dropped or altered, by Homa meaning
	// (backend tc: the frames sent and never delivered, see Drop).
	Drops []Drop
	// PlanHits are, per plan rule (index order), the frames it fired on
	// on the tc backend: its nftables counters summed over the switch
	// ports (nil for the switch backend, whose hits are Switch.Hits).
	PlanHits []uint64
	// DeliveredBytes are, per host in host order, the bytes of the Homa
	// frames the tc backend delivered to it (the as-delivered capture;
	// nil for the switch backend, whose counters are Switch.Ports).
	DeliveredBytes []uint64
	// Hosts is the check of every host's view; timing findings that a
	// measured stall explains were moved from their Violations to
	// Inconclusive.
	Hosts []spec.HostReport
	// Stalls are the spans in which this process or an agent's was kept
	// from running (stall.Monitor), also written as stalls.json.
	Stalls []stall.Span
	// Inconclusive are the timing findings charged to a host that a
	// measured stall explains: reported, not charged.
	Inconclusive []Inconclusive
	// Summary condenses the above.
	Summary Summary
	// strict is Options.Strict: the summary's verdict counts SHOULD
	// violations.
	strict bool
}

// Run runs scenario s: it builds the topology (harness.Build, the switch
// backend with s.Link, s.Seed and s.Plan as netem.SwitchFabric, or the
// kernel bridge with tc on every port, netem.ApplyTC, and the plan as
// nftables rules on every port's egress, netem.ApplyTCPlan), captures
// every switch port, starts the IUT's agent on every host and says hello,
// drives the workload (traffic.Run), shuts the agents down, stops the
// capture, checks each host's view (spec.Judge.Hosts over the as-sent
// and as-delivered captures) and writes the run folder (see the package
// doc). Everything it created is removed before it returns, also on
// error.
//
// Errors (one line each, naming the fix): not root (harness.ErrNotRoot), a
// link or plan the tc backend cannot emulate on this kernel (checked
// before anything is built), a bad manifest, an implementation that cannot
// run here (*agent.CannotRunError), a topology or agent that fails, ctx's
// end. Failed RPCs and rule violations are not errors: they are in the
// Result (Summary.Verdict "fail").
func Run(ctx context.Context, s *Scenario, o Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Env == EnvSim {
		return runSim(ctx, s, o)
	}
	if os.Geteuid() != 0 {
		return nil, harness.ErrNotRoot
	}
	if s.Link.Backend == BackendTC {
		k, err := netem.ProbeKernel()
		if err != nil {
			return nil, fmt.Errorf("link.backend tc: probing the kernel: %w", err)
		}
		if missing := k.Missing(s.Link.LinkConfig); len(missing) > 0 {
			for i, l := range missing {
				missing[i] = strings.TrimSuffix(l, "; use --backend switch") // a flag of no command here
			}
			return nil, fmt.Errorf("link.backend tc: this kernel cannot emulate the link: %s; use link.backend switch, which emulates every link feature", strings.Join(missing, "; "))
		}
		if s.Plan != nil {
			if err := s.validateTCPlan(k); err != nil {
				return nil, err
			}
		}
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("cannot find this program to run the built-in agent: %w", err)
		}
	}
	m, err := s.Manifest(exe)
	if err != nil {
		return nil, fmt.Errorf("iut.impl: %w", err)
	}
	r, err := newRun(s, o)
	if err != nil {
		return nil, err
	}
	r.m = m
	if err := r.execute(ctx); err != nil {
		return nil, r.fail(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, r.fail(ctx, err) // ended as the last step finished
	}
	return r.commit()
}

// ErrRunFolder is Run's error when it cannot make its run folder
// (Options.ArtifactsDir or the default under homatest-runs); the error
// wraps the file system's.
var ErrRunFolder = errors.New("cannot make the run folder")

// ErrInterrupted is Run's error when its context ended (Ctrl-C, SIGINT or
// SIGTERM) before the run finished: its namespaces (env ns) are removed,
// and its folder, which holds what was written so far, is marked with
// InterruptedFile (LoadRun refuses to replay it), as homatest run keeps
// an interrupted pass's folder.
var ErrInterrupted = errors.New("interrupted: the run stopped before it finished")

// InterruptedError is Run's error for an interrupted run (it wraps
// ErrInterrupted): Dir is its partial folder, Traffic the workload's
// records as far as it got (an RPC cut short by the interruption has
// not ended, or ended "aborted: ..."; nil when the workload had not
// begun).
type InterruptedError struct {
	Dir     string
	Traffic *traffic.Result
	// Phase is the step the run was at, as its progress line said it
	// ("running the workload on ref (...)"); "" before the first.
	Phase string
	msg   string
}

func (e *InterruptedError) Error() string { return e.msg }

// Unwrap returns ErrInterrupted.
func (e *InterruptedError) Unwrap() error { return ErrInterrupted }

// InterruptedFile marks the folder of an interrupted run; it says when
// and why (harness.MarkInterrupted).
const InterruptedFile = harness.InterruptedFile

// fail returns the error of a run that failed with err after its folder
// was made: ErrInterrupted (the folder marked) when ctx ended; else err,
// the folder removed with whatever this run wrote in it unless an agent
// wrote to its log, whose folder the error then names.
func (r *run) fail(ctx context.Context, err error) error {
	dir := r.arts.Dir
	if ctx.Err() != nil {
		e := &InterruptedError{Dir: dir, Traffic: r.res.Traffic, Phase: r.phase}
		if werr := r.arts.MarkInterrupted("this run", context.Cause(ctx), "homatest replay refuses it; run the scenario again"); werr != nil {
			e.msg = fmt.Sprintf("%v (and marking %s failed: %v)", ErrInterrupted, dir, werr)
		} else {
			e.msg = fmt.Sprintf("%v; its partial folder %s is marked %s", ErrInterrupted, dir, InterruptedFile)
		}
		return e
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.stderr.log"))
	for _, l := range logs {
		if st, serr := os.Stat(l); serr == nil && st.Size() > 0 {
			return fmt.Errorf("%w; logs in %s", err, dir)
		}
	}
	r.undo.Remove()
	if msg := agent.LogRemoved(err.Error()); msg != err.Error() {
		return errors.New(msg) // the empty logs it named are gone
	}
	return err
}

// stagingName is the folder a run into the non-empty folder dir writes
// until it succeeds: a hidden sibling (the same file system, so its files
// move by rename), named by the process.
func stagingName(dir string) string {
	return filepath.Join(filepath.Dir(dir), fmt.Sprintf(".%s.homatest-%d", filepath.Base(dir), os.Getpid()))
}

// commit ends a successful run: when it wrote into a staging folder, each
// of its files replaces the one of the same name in the existing folder
// (other files there are kept) and the staging folder goes.
func (r *run) commit() (*Result, error) {
	if r.final == "" {
		return r.res, nil
	}
	ents, err := os.ReadDir(r.arts.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunFolder, err)
	}
	for _, e := range ents {
		to := filepath.Join(r.final, e.Name())
		if err := os.RemoveAll(to); err != nil {
			return nil, fmt.Errorf("%w: %w (the run's files are in %s)", ErrRunFolder, err, r.arts.Dir)
		}
		if err := os.Rename(filepath.Join(r.arts.Dir, e.Name()), to); err != nil {
			return nil, fmt.Errorf("%w: %w (the run's files are in %s)", ErrRunFolder, err, r.arts.Dir)
		}
	}
	if err := os.Remove(r.arts.Dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunFolder, err)
	}
	return r.res, nil
}

// newRun makes the run folder (o.ArtifactsDir or a new one under
// homatest-runs) and writes what is known before anything runs. A folder
// that exists and holds something (an earlier run, a user's files) is
// left alone until the run succeeds: the run writes into a new hidden
// sibling (stagingName) whose files commit moves into it.
func newRun(s *Scenario, o Options) (*run, error) {
	dir := o.ArtifactsDir
	if dir == "" {
		dir = filepath.Join(harness.DefaultRunsDir, fmt.Sprintf("%s-%s-%d", s.Name, time.Now().Format("20060102-150405"), os.Getpid()))
	}
	work, final := dir, ""
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		work, final = stagingName(dir), dir
		if err := os.RemoveAll(work); err != nil { // a killed run's, same pid
			return nil, fmt.Errorf("%w: %w", ErrRunFolder, err)
		}
	}
	undo := harness.RecordDir(work)
	arts, err := harness.NewArtifacts(work)
	if err != nil {
		undo.Remove() // the parents MkdirAll made before it failed
		return nil, fmt.Errorf("%w: %w", ErrRunFolder, err)
	}
	r := &run{s: s, o: o, arts: arts, undo: undo, final: final, res: &Result{Dir: dir, Scenario: s, strict: o.Strict}}
	if err := r.writeStart(); err != nil {
		undo.Remove()
		return nil, err
	}
	return r, nil
}

// run is one execution of Run.
type run struct {
	s    *Scenario
	o    Options
	m    *agent.Manifest
	arts *harness.Artifacts
	undo *harness.DirUndo // what the run folder held before
	// final is the existing folder a successful run's files move into
	// (commit); "" when the run writes there directly (arts.Dir).
	final  string
	res    *Result
	notes  noteFilter
	fab    *netem.SwitchFabric
	stalls *stall.Monitor
	// phase is the last step logf said (InterruptedError.Phase).
	phase string
}

// Inconclusive is a timing finding charged to Host (h1, h2, ...) that
// Stall, a measured stall of this process or an agent's, explains.
type Inconclusive struct {
	Host    string       `json:"host"`
	Finding spec.Finding `json:"finding"`
	Stall   stall.Span   `json:"stall"`
}

// logf says the step the run begins (Options.Log) and keeps it as the
// phase an interruption names.
func (r *run) logf(format string, a ...any) {
	r.phase = fmt.Sprintf(format, a...)
	if r.o.Log != nil {
		r.o.Log(r.phase)
	}
}

// versions is versions.json.
type versions struct {
	Homatest string            `json:"homatest"`
	Go       string            `json:"go"`
	Kernel   string            `json:"kernel"`
	Agents   map[string]string `json:"agents,omitempty"`
}

// writeStart writes what is known before anything runs: the resolved
// scenario and the seed.
func (r *run) writeStart() error {
	y, err := r.s.Marshal()
	if err != nil {
		return err
	}
	if err := r.arts.WriteFile("scenario.yaml", y); err != nil {
		return err
	}
	return r.arts.WriteFile("seed", fmt.Appendf(nil, "%d\n", r.s.Seed))
}

func homatestVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				v += " (revision " + st.Value + ")"
			}
		}
		return v
	}
	return "(devel)"
}

func (r *run) execute(ctx context.Context) error {
	s := r.s
	var fabric harness.Fabric
	if s.Link.Backend == BackendSwitch {
		r.fab = &netem.SwitchFabric{Link: s.Link.LinkConfig, Seed: s.Seed, Plan: s.Plan, Record: &r.notes}
		fabric = r.fab
	}
	r.logf("building %d hosts behind the %s backend (%s)", s.Topology.Hosts, s.Link.Backend, s.Link.Rate)
	bctx, cancel := context.WithTimeout(ctx, timescale.D(30*time.Second))
	topo, err := harness.Build(bctx, harness.Config{Hosts: s.Topology.Hosts, MTU: s.Topology.MTU, Fabric: fabric, Artifacts: r.arts})
	cancel()
	if err != nil {
		return err
	}
	defer topo.Close()
	// Stalls of the harness (switch, capture, traffic) and of every
	// agent explain timing findings made while they stood still.
	r.stalls = stall.Start(stall.Config{})
	defer r.stalls.Stop()
	r.stalls.Watch(os.Getpid(), stall.Harness)
	r.stalls.WatchSoftirq()
	if s.Link.Backend == BackendTC {
		for _, p := range topo.Ports {
			if err := netem.ApplyTC(topo.Switch, p, s.Link.LinkConfig); err != nil {
				return fmt.Errorf("link.backend tc on %s: %w", p, err)
			}
			if s.Plan == nil {
				continue
			}
			if err := netem.ApplyTCPlan(topo.Switch, p, s.Plan); err != nil {
				return fmt.Errorf("plan on link.backend tc, port %s: %w", p, err)
			}
		}
	}
	capture, err := topo.StartCapture(ctx)
	if err != nil {
		return err
	}
	ags, eps, err := r.startAgents(ctx, topo)
	defer func() {
		for _, a := range ags {
			a.Close() // after an error; a no-op after the shutdown below
		}
	}()
	if err != nil {
		return err
	}
	cfg, err := r.trafficConfig()
	if err != nil {
		return err
	}
	cfg.Hosts, cfg.Timeout = eps, timescale.D(cfg.Timeout)
	r.logf("running the workload on %s (%s)", s.IUT.Impl, describeWorkload(s.Workload))
	tr, err := traffic.Run(ctx, cfg)
	r.res.Traffic = tr // an interrupted run's too: its records as far as it got
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	for _, a := range ags {
		select {
		case <-a.Proc.Done():
			// The agent died during the workload: which, how, its log
			// (a failure of the run; its shutdown error would only
			// repeat that it is gone).
			tr.Errors = append(tr.Errors, "during the workload, "+a.ExitStatus())
			a.Close()
			continue
		default:
		}
		if err := a.Close(); err != nil {
			tr.Errors = append(tr.Errors, fmt.Sprintf("%s: shutdown: %v", a.Host.Name, err))
		}
	}
	r.stalls.Stop()
	r.res.Stalls = r.stalls.Spans()
	if r.fab != nil {
		if err := r.fab.Close(); err != nil {
			return fmt.Errorf("switch: %w", err)
		}
		r.res.Switch = r.fab.Stats()
	}
	if s.Link.Backend == BackendTC && s.Plan != nil {
		if r.res.PlanHits, err = tcPlanHits(topo, len(s.Plan.Rules)); err != nil {
			return err
		}
	}
	for _, n := range r.notes.Notes() {
		capture.Annotate(harness.Annotation{Time: n.Time, Host: n.Port + 1, Dir: harness.DirOut, Frame: n.Data, Comment: "switch: " + n.Comment})
	}
	r.logf("checking the capture")
	cst, err := capture.Stop()
	if err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		dir  harness.Direction
	}{{"sent.pcapng", harness.DirIn}, {"delivered.pcapng", harness.DirOut}} {
		if err := capture.WriteFile(v.name, v.dir); err != nil {
			return err
		}
	}
	var hosts []host
	for i, e := range eps {
		hosts = append(hosts, host{name: e.Name, addr: e.Addr, port: topo.Ports[i]})
	}
	return r.finish(ctx, hosts, cst)
}

// host is one host of a finished run, as the check and the artifacts name
// it.
type host struct {
	name string
	addr netip.Addr
	port string // its switch port's interface (backend tc's drops)
}

// startAgents starts the IUT's agent on every host (agent.Start: the
// manifest's environment, params under iut.params, and timeouts) and
// returns them with their traffic endpoints.
func (r *run) startAgents(ctx context.Context, topo *harness.Topology) ([]*agent.Agent, []traffic.Endpoint, error) {
	s := r.s
	var ags []*agent.Agent
	var eps []traffic.Endpoint
	for _, h := range topo.Hosts {
		addr := h.Addr4
		if s.Topology.IPv6 {
			addr = h.Addr6
		}
		a, err := agent.Start(ctx, h, agent.StartConfig{Manifest: r.m, Params: agent.Params(s.IUT.Params), Faults: s.IUT.Faults, Addrs: []netip.Addr{addr}})
		if err != nil {
			return ags, nil, err
		}
		r.stalls.Watch(a.Proc.Pid(), "agent on "+h.Name)
		ags = append(ags, a)
		r.res.Hellos = append(r.res.Hellos, a.Hello)
		eps = append(eps, traffic.Endpoint{Name: h.Name, Addr: addr, Client: a.Client})
	}
	return ags, eps, r.arts.WriteJSON("hellos.json", r.res.Hellos)
}

// trafficConfig turns the scenario's workload into a traffic.Config
// (without hosts; the timeout as the file gives it).
func (r *run) trafficConfig() (traffic.Config, error) {
	w := r.s.Workload
	cfg := traffic.Config{Pattern: traffic.Pattern(w.Pattern), Port: uint16(w.Port), Load: w.Load,
		LinkBps: float64(r.s.Link.Rate), Concurrency: w.Concurrency, Duration: w.Duration, Count: w.Count,
		Seed: r.s.Seed, Timeout: w.Timeout, Progress: r.o.Progress}
	for _, x := range w.RPCs {
		cfg.RPCs = append(cfg.RPCs, traffic.RPC{At: x.At, Client: x.Client - 1, Server: x.Server - 1, Request: x.Request, Response: x.Response})
	}
	if len(w.RPCs) > 0 {
		return cfg, nil
	}
	var err error
	if cfg.Requests, err = workload.Parse(w.Dist); err != nil {
		return cfg, err
	}
	resp, err := workload.Parse(w.Response)
	if err != nil {
		return cfg, err
	}
	if n, convErr := fmt.Sscanf(w.Response, "%d", &cfg.ResponseBytes); convErr != nil || n != 1 {
		cfg.ResponseBytes, cfg.Responses = 0, resp
	}
	return cfg, nil
}

func describeWorkload(w Workload) string {
	if len(w.RPCs) > 0 {
		return fmt.Sprintf("%d explicit RPCs", len(w.RPCs))
	}
	s := fmt.Sprintf("%s requests, %s responses, %s", w.Dist, w.Response, w.Pattern)
	if w.Load > 0 {
		s += fmt.Sprintf(", load %g", w.Load)
	} else {
		s += fmt.Sprintf(", %d outstanding per client", w.Concurrency)
	}
	if w.Duration > 0 {
		s += fmt.Sprintf(", for %v", w.Duration)
	}
	if w.Count > 0 {
		s += ", " + plural.Of(w.Count, "RPC", "RPCs")
	}
	return s
}

// rpcRecord is one RPC in rpcs.json, with snake_case keys like every
// other JSON file of the run folder. RPCs are numbered from 1 in issue
// order, as a fault plan's rpc counts them and the summary's FAILED
// lines name them; hosts are named h1, h2, ... as in drops.json.
type rpcRecord struct {
	RPC      int    `json:"rpc"`
	Client   string `json:"client"`
	Server   string `json:"server"`
	Request  int    `json:"request_bytes"`
	Response int    `json:"response_bytes"`
	// At, Lateness, Latency and Ended are traffic.Record's, in ns.
	At       time.Duration `json:"at_ns"`
	Lateness time.Duration `json:"lateness_ns"`
	Latency  time.Duration `json:"latency_ns"`
	Ended    time.Duration `json:"ended_ns"`
	// Error is "" for a completed RPC, else "<code>: <text>".
	Error string `json:"error,omitempty"`
}

// rpcRecords converts the workload's records for rpcs.json.
func rpcRecords(recs []traffic.Record) []rpcRecord {
	out := make([]rpcRecord, len(recs))
	for i, r := range recs {
		out[i] = rpcRecord{RPC: rpcNumber(r), Client: hostName(r.Client), Server: hostName(r.Server), Request: r.Request, Response: r.Response,
			At: r.At, Lateness: r.Lateness, Latency: r.Latency, Ended: r.Ended, Error: r.Err}
	}
	return out
}

// rpcNumber is the user-facing number of r: from 1, as a plan's rpc.
func rpcNumber(r traffic.Record) int { return r.Seq + 1 }

// hostName names host index i (0-based) as the run does: h1, h2, ...
func hostName(i int) string { return fmt.Sprintf("h%d", i+1) }

// judgeProfile returns the spec profile the run's captures are judged
// under: the one of the wire format the IUT's hello names (HomaModule
// linux_6.1.38's agent says "2024": IP protocol 253 and that format's
// headers, which read as the current format give every DATA
// cutoff_version 0 and misplaced ack fields), else the scenario's
// check.profile.
func judgeProfile(profile string, h agent.Hello) (string, error) {
	if h.Wire == "" {
		return profile, nil
	}
	return h.Profile()
}

// finish checks the capture and writes the remaining artifacts.
func (r *run) finish(ctx context.Context, hs []host, cst harness.CaptureStats) error {
	s, res := r.s, r.res
	if len(res.Traffic.Records) == 0 {
		// Nothing to judge: a pass would say nothing about the IUT.
		return fmt.Errorf("the workload produced no RPC (%s): give a longer workload.duration, or a workload.count", describeWorkload(s.Workload))
	}
	profile, err := judgeProfile(s.Check.Profile, res.Hellos[0])
	if err != nil {
		return fmt.Errorf("agent h1: %w", err)
	}
	p, err := agent.Params(res.Hellos[0].Params).Spec(profile)
	if err != nil {
		return fmt.Errorf("agent h1: %w", err)
	}
	// The views are taken where packets enter and leave the hosts, not
	// where their timers run; several user-space hosts share this
	// machine's CPUs, so "too late" bounds get three ticks and "too
	// early" bounds two (as the conformance suite's passive specs); a
	// packet delivered to a host reaches its protocol code up to a tenth
	// of a tick (at least 1 ms) later, so a timer action in that time is
	// excused (spec.Params.Reaction). check.params overrides all three.
	// In the simulator the views are the protocol's own inputs and
	// outputs on exact virtual time: no slack beyond the captures' stamp
	// spacing (sim.ViewTolerance).
	if s.Env == EnvSim {
		p.Slack, p.Jitter, p.Reaction = sim.ViewTolerance, sim.ViewTolerance, 0
	} else {
		p.Slack = max(p.Slack, 3*p.Tick)
		p.Jitter = max(p.Jitter, 2*p.Tick)
		p.Reaction = max(p.Reaction, p.Tick/10, time.Millisecond)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Check.Params)) { // the first error named does not vary
		if err := p.Assign(name, s.Check.Params[name]); err != nil {
			return fmt.Errorf("check.params.%s: %w", name, err)
		}
	}
	if err := p.Validate(); err != nil { // the set as a whole: num_priorities and max_sched_prio agree
		return fmt.Errorf("check.params: %w", err)
	}
	judge, err := spec.NewJudge(profile, p, s.Check.Rules, s.Check.level())
	if err != nil {
		return fmt.Errorf("check.rules: %w", err)
	}
	judge.FromStart = true // the run's captures begin before its first RPC
	// One IUT per host for the whole run: ids begun again are the IUT's
	// own, never two captures merged.
	judge.OneInstance = true
	// Frames the capture itself lost (its files declare them too) may
	// explain findings that rest on a packet not seen.
	judge.CaptureDrops = cst.KernelDrops + cst.ReadErrors
	var hosts []netip.Addr
	var ports []string
	for _, h := range hs {
		hosts = append(hosts, h.addr)
		ports = append(ports, h.port)
	}
	if res.Hosts, err = judgeHosts(ctx, judge, r.arts.Path("sent.pcapng"), r.arts.Path("delivered.pcapng"), p.Wire, hosts); err != nil {
		return err
	}
	// homatest check reads NAME.params next to a capture: the run's
	// parameters, so that it judges each file as the run did. capture.pcapng
	// is judged as the run judged it, each host on its own link; sent and
	// delivered time one direction of every exchange at the other end of
	// the switch, whose queueing (up to a millisecond here) jitter must
	// cover.
	if err := p.WriteFile(r.arts.Path("capture.pcapng.params"), "The parameters scenario run judged this capture with (the agents' hellos, slack, jitter and reaction, check.params)."); err != nil {
		return err
	}
	// A one-direction view stamps each packet at one end of the switch
	// only: the time a packet spent in flight to the other end (up to a
	// millisecond of queueing here) is invisible, so both the jitter and
	// the "too late" slack must cover it (a GRANT sent while the last DATA
	// was still in flight reads as sent after it in sent.pcapng).
	q := p
	q.Jitter = max(q.Jitter, time.Millisecond)
	q.Slack = max(q.Slack, time.Millisecond)
	for _, f := range []string{"sent.pcapng", "delivered.pcapng"} {
		if err := q.WriteFile(r.arts.Path(f+".params"), "The parameters scenario run judged its capture with (the agents' hellos, slack, jitter and reaction, check.params), slack and jitter at least 1ms for the time in flight a one-direction view cannot see."); err != nil {
			return err
		}
	}
	for i := range res.Hosts {
		hr := &res.Hosts[i]
		kept := hr.Violations[:0]
		for _, v := range hr.Violations {
			if sp := stall.ExplainingAt(v, hr.Event, res.Stalls); len(sp) > 0 {
				f := v // its reason's frames named by their capture, as summarize's
				f.Why = hr.LocateText(v.Why, "sent.pcapng", "delivered.pcapng")
				res.Inconclusive = append(res.Inconclusive, Inconclusive{Host: hostName(i), Finding: f, Stall: sp[0]})
				continue
			}
			kept = append(kept, v)
		}
		hr.Violations = kept
	}
	if s.Link.Backend == BackendTC {
		ords, err := ordinalsOf(ctx, r.arts.Path("sent.pcapng"), p.Wire)
		if err != nil {
			return err
		}
		if res.Drops, err = r.lostDrops(hosts, ports, p.Wire, ords); err != nil {
			return err
		}
	} else {
		ords, err := ordinalsOf(ctx, r.arts.Path("sent.pcapng"), p.Wire)
		if err != nil {
			return err
		}
		err = r.arts.Write("switch-notes.pcapng", func(w io.Writer) error {
			var derr error
			res.Drops, derr = drops(r.notes.Notes(), len(hs), ords, w)
			return derr
		})
		if err != nil {
			return fmt.Errorf("switch notes: %w", err)
		}
	}
	// The check observes ctx at every step: an interrupted run ends
	// interrupted (its folder marked), never with a verdict.
	if err := ctx.Err(); err != nil {
		return err
	}
	res.Summary = summarize(res, cst)
	if err := annotateViews(r.arts, res.Hosts); err != nil {
		return fmt.Errorf("annotating the captures: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	vs := versions{Homatest: r.o.Version, Go: runtime.Version(), Kernel: kernelRelease(), Agents: map[string]string{}}
	if vs.Homatest == "" {
		vs.Homatest = homatestVersion()
	}
	for i, h := range res.Hellos {
		vs.Agents[hs[i].name] = h.Impl + " " + h.Version
	}
	for _, a := range []struct {
		name string
		v    any
	}{
		{"versions.json", vs}, {"rpcs.json", rpcRecords(res.Traffic.Records)}, {"switch.json", res.Switch},
		{"drops.json", res.Drops}, {"check.json", checkJSON{Params: p, Hosts: hostsJSON(res.Hosts), Inconclusive: res.Inconclusive}},
		{"stalls.json", append([]stall.Span{}, res.Stalls...)}, {"summary.json", res.Summary},
	} {
		if err := r.arts.WriteJSON(a.name, a.v); err != nil {
			return err
		}
	}
	return nil
}

// annotateViews writes the violations charged to each host into
// sent.pcapng and delivered.pcapng as packet comments on their frames
// (report/annotate), so that Wireshark shows each where it happened;
// captures without violations are left as they are.
func annotateViews(arts *harness.Artifacts, hosts []spec.HostReport) error {
	var sent, delivered []spec.Finding
	for _, hr := range hosts {
		s, d := annotate.HostView(hr, "sent.pcapng", "delivered.pcapng")
		sent, delivered = append(sent, s...), append(delivered, d...)
	}
	for _, c := range []struct {
		name     string
		findings []spec.Finding
	}{{"sent.pcapng", sent}, {"delivered.pcapng", delivered}} {
		if len(c.findings) == 0 {
			continue
		}
		f, err := os.Open(arts.Path(c.name))
		if err != nil {
			return err
		}
		_, err = annotate.Write(f, arts.Path(c.name), c.findings, "homatest scenario run: violations charged to the hosts, on their frames")
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkJSON is check.json: the parameters the capture was judged with and
// each host's report.
type checkJSON struct {
	Params       spec.Params       `json:"params"`
	Hosts        []spec.HostReport `json:"hosts"`
	Inconclusive []Inconclusive    `json:"timing_inconclusive,omitempty"`
}

// hostsJSON returns copies of hs whose violation lists are [] rather than
// null when a host has none (check -o json says [] too).
func hostsJSON(hs []spec.HostReport) []spec.HostReport {
	out := make([]spec.HostReport, len(hs))
	for i, h := range hs {
		if h.Violations == nil {
			h.Violations = []spec.Finding{}
		}
		if h.Report != nil && h.Report.Violations == nil {
			r := *h.Report
			r.Violations = []spec.Finding{}
			h.Report = &r
		}
		out[i] = h
	}
	return out
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return strings.TrimSpace(string(b))
}

// openEventStream opens a run's capture for judgeHosts (a variable for
// the tests that measure the check's memory as it reads).
var openEventStream = func(path string, ro pcap.ReaderOptions) (spec.EventStream, error) {
	return pcap.OpenEventStream(path, ro)
}

// judgeHosts judges each of hosts on its own link (spec.Judge.Hosts)
// from the run's as-sent and as-delivered captures, streamed
// (spec.Judge.HostsStream) so that the check's memory follows the RPCs
// alive, not the run's length; captures out of time order (which the
// views' sort must reorder) are read whole instead.
func judgeHosts(ctx context.Context, judge spec.Judge, sentPath, deliveredPath string, version wire.Version, hosts []netip.Addr) ([]spec.HostReport, error) {
	ro := pcap.ReaderOptions{Version: version, IPv6UnknownShift: judge.Params.IPv6PrioShift}
	open := func(path string) func() (spec.EventStream, error) {
		return func() (spec.EventStream, error) { return openEventStream(path, ro) }
	}
	hrs, err := judge.HostsStream(ctx, open(sentPath), open(deliveredPath), hosts)
	if !errors.Is(err, spec.ErrUnordered) {
		return hrs, err
	}
	sent, err := pcap.ReadEventsContext(ctx, sentPath, ro)
	if err != nil {
		return nil, err
	}
	delivered, err := pcap.ReadEventsContext(ctx, deliveredPath, ro)
	if err != nil {
		return nil, err
	}
	return judge.HostsContext(ctx, sent, delivered, hosts)
}
