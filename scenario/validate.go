package scenario

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/harness"
	"github.com/homatest/homatest/harness/workload"
	"github.com/homatest/homatest/homa"
	"github.com/homatest/homatest/internal/plural"
	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/spec"
)

// Validate checks a scenario whose defaults are filled in (Parse does
// both) and returns the first problem as a one-line error: the YAML line
// (when parsed), the field path, what is wrong and how to fix it. It reads
// the IUT's manifest when Impl is a path. With link.backend tc it checks
// that nftables can express the fault plan (netem.KernelFeatures.MissingPlan:
// no RPC ordinals, in_port, out_port, delay, hold or duplicate); the
// running kernel's features are checked by Run, before it changes
// anything.
func (s *Scenario) Validate() error {
	for _, check := range []func() error{s.validateEnv, s.validateTopology, s.validateLink, s.validateIUT, s.validateWorkload, s.validateCheck} {
		if err := check(); err != nil {
			return err
		}
	}
	if s.Plan != nil {
		if err := s.Plan.Validate(); err != nil {
			return fmt.Errorf("plan: %v", err)
		}
		if err := s.validatePlanRPCs(); err != nil {
			return err
		}
		if s.Link.Backend == BackendTC {
			return s.validateTCPlan(netem.KernelFeatures{NFTLoss: true})
		}
	}
	return nil
}

// validatePlanRPCs refuses a plan rule matching an RPC ordinal past an
// explicit rpcs list: the switch numbers the RPCs it sees from 1, and the
// list issues len(rpcs) of them, so RPC 9 of 3 never runs and the rule
// never fires (the run came out INCOMPLETE for a typo validate passed).
func (s *Scenario) validatePlanRPCs() error {
	n := len(s.Workload.RPCs)
	if n == 0 {
		return nil
	}
	for i, r := range s.Plan.Rules {
		if r.Match.RPC > n {
			name := ""
			if r.Name != "" {
				name = fmt.Sprintf(" (%q)", r.Name)
			}
			return s.errf(fmt.Sprintf("plan.rules[%d].match.rpc", i), "rule %d%s matches RPC %d, but workload.rpcs lists %s, so it would never fire: give an RPC ordinal 1..%d", i, name, r.Match.RPC, plural.Of(n, "RPC", "RPCs"), n)
		}
	}
	return nil
}

// tcPlanDev names the switch port in the tc backend's plan checks: every
// port gets the same rules (out_port is refused), so any name will do.
const tcPlanDev = "port"

// validateTCPlan checks that the tc backend can run the plan on a kernel
// with features k (netem.KernelFeatures.MissingPlan): one line naming
// every unsupported feature and its fix. Validate passes a kernel with
// every feature (what nftables can express); Run the running kernel's.
func (s *Scenario) validateTCPlan(k netem.KernelFeatures) error {
	var missing []string
	for i, r := range s.Plan.Rules {
		if r.Match.OutPort != "" {
			missing = append(missing, fmt.Sprintf("plan rule %d: match.out_port: on the tc backend every switch port runs its own copy of the plan; select the destination host with match.to", i))
		}
	}
	m, err := k.MissingPlan(s.Plan, tcPlanDev)
	if err != nil {
		return fmt.Errorf("plan: %v", err)
	}
	for _, l := range m {
		if !strings.Contains(l, "match.out_port") {
			missing = append(missing, strings.TrimSuffix(l, "; use --backend switch"))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return s.errf("plan", "link.backend tc cannot run this plan: %s (or use link.backend switch, which runs every plan feature)", strings.Join(missing, "; "))
}

func (s *Scenario) validateEnv() error {
	switch s.Env {
	case EnvNS:
	case EnvSim:
		if c := s.Sim; c != nil && (c.Cores < 0 || c.PacketCost != nil && *c.PacketCost < 0) {
			return s.errf("sim", "packet_cost and cores must not be negative (e.g. {packet_cost: 1us, cores: 8})")
		}
		if s.IUT.Impl != ImplRef {
			return s.errf("iut.impl", "%q: env sim runs the reference implementation only (its protocol state machine on virtual time): use impl ref, or env ns for other implementations", s.IUT.Impl)
		}
		if s.Link.Backend != BackendSwitch {
			return s.errf("link.backend", "%q: env sim runs netem's switch core: use link.backend switch", s.Link.Backend)
		}
	default:
		return s.errf("env", "%q: want ns (network namespaces, real time, root) or sim (the simulator, virtual time)", s.Env)
	}
	if s.Env != EnvSim && s.Sim != nil {
		return s.errf("sim", "the simulated hosts' model applies to env sim only: remove it or set env: sim")
	}
	return nil
}

func (s *Scenario) validateTopology() error {
	t := s.Topology
	switch {
	case t.Hosts < 2 || t.Hosts > harness.MaxHosts:
		return s.errf("topology.hosts", "%d: want 2..%d hosts", t.Hosts, harness.MaxHosts)
	case t.MTU < 576 || t.MTU > 65535:
		return s.errf("topology.mtu", "%d: want 576..65535 bytes (1500 is Ethernet's)", t.MTU)
	case t.IPv6 && t.MTU < 1280:
		return s.errf("topology.mtu", "%d: IPv6 needs at least 1280 bytes", t.MTU)
	}
	return nil
}

func (s *Scenario) validateLink() error {
	if s.Link.Backend != BackendSwitch && s.Link.Backend != BackendTC {
		return s.errf("link.backend", "%q: want switch (netem's user-space switch) or tc (kernel qdiscs)", s.Link.Backend)
	}
	if err := s.Link.LinkConfig.Validate(); err != nil {
		return s.errf("link", "%v", err)
	}
	return nil
}

// manifestPath returns the path of the IUT's manifest, "" for a built-in
// implementation.
func (s *Scenario) manifestPath() string {
	if s.IUT.Impl == ImplRef || s.IUT.Impl == ImplLinux {
		return ""
	}
	if filepath.IsAbs(s.IUT.Impl) || s.dir == "" {
		return s.IUT.Impl
	}
	return filepath.Join(s.dir, s.IUT.Impl)
}

// Manifest returns the IUT's agent manifest: the built-in one for ref and
// linux (run by the homatest executable exe), else the file IUT.Impl
// names (agent.LoadManifest).
func (s *Scenario) Manifest(exe string) (*agent.Manifest, error) {
	if p := s.manifestPath(); p != "" {
		return agent.LoadManifest(p)
	}
	return agent.BuiltinManifest(s.IUT.Impl, exe)
}

func (s *Scenario) validateIUT() error {
	if p := s.manifestPath(); p != "" {
		if _, err := os.Stat(p); err != nil {
			return s.errf("iut.impl", "%q is not ref, linux or a readable agent manifest (%v): give ref, linux or the manifest's path", s.IUT.Impl, err)
		}
		if _, err := agent.LoadManifest(p); err != nil {
			return s.errf("iut.impl", "%v", err)
		}
		// The resolved scenario names the manifest wherever it is rerun.
		if abs, err := filepath.Abs(p); err == nil {
			s.IUT.Impl = abs
		}
	}
	if s.IUT.Impl == ImplRef {
		known := map[string]bool{}
		var names []string
		for _, f := range homa.FaultNames() {
			known[f.Name] = true
			names = append(names, f.Name)
		}
		for i, f := range s.IUT.Faults {
			if !known[f] {
				return s.errf(fmt.Sprintf("iut.faults[%d]", i), "%q: no such fault knob of the reference implementation: use one of %s", f, strings.Join(names, ", "))
			}
		}
		// The ref's agent would refuse them at its hello, after the hosts
		// are built: say so now, on the line that sets them.
		if _, err := agent.RefParams(s.IUT.Params); err != nil {
			return s.errf("iut.params", "%v", strings.TrimPrefix(err.Error(), "params: "))
		}
	}
	// Any implementation's parameters are also the checker's (tick_ns and
	// HomaModule's sysctl names): a value the checker cannot read fails
	// here (an unknown check.profile is validateCheck's to report).
	if _, err := spec.LookupProfile(s.Check.Profile); err != nil {
		return nil
	}
	if _, err := s.IUT.Params.Spec(s.Check.Profile); err != nil {
		return s.errf("iut.params", "%v", strings.TrimPrefix(err.Error(), "hello parameter "))
	}
	return nil
}

func (s *Scenario) validateWorkload() error {
	w := &s.Workload
	if len(w.RPCs) == 0 && s.givenEmpty("workload.rpcs") {
		return s.errf("workload.rpcs", "an empty list: give at least one RPC ({at, client, server, request, response}), or leave rpcs out for a generated workload (dist with duration or count)")
	}
	if len(w.RPCs) > 0 {
		if w.Dist != "" || w.Load != 0 || w.Concurrency != 0 || w.Duration != 0 || w.Count != 0 {
			return s.errf("workload.rpcs", "an explicit RPC list excludes dist, load, concurrency, duration and count: keep one or the other")
		}
		for i, r := range w.RPCs {
			p := fmt.Sprintf("workload.rpcs[%d]", i)
			switch {
			case r.At < 0:
				return s.errf(p+".at", "%v is negative: give the time after the start, e.g. 10ms", r.At)
			case r.Client < 1 || r.Client > s.Topology.Hosts:
				return s.errf(p+".client", "%d: want a host number 1..%d", r.Client, s.Topology.Hosts)
			case r.Server < 1 || r.Server > s.Topology.Hosts || r.Server == r.Client:
				return s.errf(p+".server", "%d: want a host number 1..%d other than the client", r.Server, s.Topology.Hosts)
			case r.Request < 1 || r.Request > agent.MaxMessage:
				return s.errf(p+".request", "%d: want 1..%d bytes", r.Request, agent.MaxMessage)
			case r.Response < 1 || r.Response > agent.MaxMessage:
				return s.errf(p+".response", "%d: want 1..%d bytes", r.Response, agent.MaxMessage)
			case r.Request < agent.PayloadHeaderLen && r.Response != r.Request:
				// The agents' payload header holds the response length.
				return s.errf(p+".response", "%d: a %d-byte request (under %d bytes) has no room for the response length, so its response echoes it: give response: %d, or a request of at least %d bytes",
					r.Response, r.Request, agent.PayloadHeaderLen, r.Request, agent.PayloadHeaderLen)
			}
		}
		return s.validateTimeout()
	}
	if w.Dist == "" {
		return s.errf("workload", "no dist and no rpcs: give a request size distribution (dist: w1..w5 or a size in bytes) or an explicit rpcs list")
	}
	for _, f := range []struct{ field, dist string }{{"dist", w.Dist}, {"response", w.Response}} {
		// workload.Parse refuses a fixed size above the protocol's limit
		// (w1..w5 are cut at it), as bench --workload does.
		if _, err := workload.Parse(f.dist); err != nil {
			return s.errf("workload."+f.field, "%v", err)
		}
	}
	// fill makes an absent load and concurrency a concurrency of 1; said
	// as 0, either is a mistake, as a negative value is.
	zeroLoad, zeroConc := s.givenZero("workload.load"), s.givenZero("workload.concurrency")
	switch {
	case w.Pattern != PatternManyToOne && w.Pattern != PatternAllToAll:
		return s.errf("workload.pattern", "%q: want many-to-one or all-to-all", w.Pattern)
	case w.Load != 0 && w.Concurrency != 0:
		return s.errf("workload.load", "load (open loop) and concurrency (closed loop) exclude each other: keep one")
	case w.Load < 0 || w.Load > workload.MaxLoad || zeroLoad:
		return s.errf("workload.load", "%g: want a fraction of the link rate in (0, %d], e.g. 0.5 (above 1 overloads the servers' links)", w.Load, workload.MaxLoad)
	case w.Load > 0 && s.Link.Rate == 0:
		return s.errf("workload.load", "a load is a fraction of the link rate, but link.rate is unlimited: set link.rate (e.g. 1gbit) or use concurrency")
	case zeroConc:
		return s.errf("workload.concurrency", "0: want calls outstanding per client, 1..%d", MaxConcurrency)
	case w.Concurrency < 0 || w.Concurrency > MaxConcurrency:
		return s.errf("workload.concurrency", "%d: want calls outstanding per client, 1..%d", w.Concurrency, MaxConcurrency)
	case w.Duration < 0:
		return s.errf("workload.duration", "%v is negative: give a duration such as 5s", w.Duration)
	case w.Count < 0 || w.Count > MaxCount || s.givenZero("workload.count"):
		return s.errf("workload.count", "%d: want a number of RPCs, 1..%d (or leave count out and give a duration)", w.Count, MaxCount)
	case w.Duration == 0 && w.Count == 0:
		return s.errf("workload", "no duration and no count: say when to stop issuing RPCs, e.g. duration: 5s or count: 1000")
	}
	return s.validateTimeout()
}

// Bounds of a generated workload. Each outstanding call holds up to two
// messages of up to agent.MaxMessage bytes (1 MB) in its client's and its
// server's agent, so MaxConcurrency calls per client are up to 2 GB of
// buffers per client at the largest sizes; each RPC keeps a record (about
// 300 bytes in rpcs.json, more in memory), so MaxCount RPCs are a few
// hundred megabytes. Beyond either a run exhausts the machine rather
// than testing the IUT.
const (
	MaxConcurrency = 1000
	MaxCount       = 1000000
)

func (s *Scenario) validateTimeout() error {
	if s.Workload.Timeout < 0 {
		return s.errf("workload.timeout", "%v is negative: give a duration such as 10s", s.Workload.Timeout)
	}
	return nil
}

// level returns the check's minimum spec level.
func (c Check) level() spec.Level {
	if c.Level == LevelShould {
		return spec.Should
	}
	return spec.Must
}

func (s *Scenario) validateCheck() error {
	c := s.Check
	if c.Level != LevelMust && c.Level != LevelShould {
		return s.errf("check.level", "%q: want must (MUST rules) or should (MUST and SHOULD rules)", c.Level)
	}
	prof, err := spec.LookupProfile(c.Profile)
	if err != nil {
		return s.errf("check.profile", "%v", err)
	}
	if _, err := spec.SelectSome(spec.Rules(), c.Rules, c.level(), c.Profile); err != nil {
		return s.errf("check.rules", "%v", err)
	}
	p := prof.Params
	for _, name := range slices.Sorted(maps.Keys(c.Params)) { // the first error named does not vary
		if err := p.Assign(name, c.Params[name]); err != nil {
			return s.errf("check.params."+name, "%v (homatest spec params lists them)", err)
		}
	}
	if err := p.Validate(); err != nil { // the set as a whole: num_priorities and max_sched_prio agree
		return s.errf("check.params", "%v", err)
	}
	return nil
}
