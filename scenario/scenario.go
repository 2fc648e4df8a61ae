package scenario

import (
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/netem"
)

// Scenario is one experiment, as read from a scenario file. Parse fills in
// the defaults named below, so a parsed Scenario written out again
// (Marshal) is the resolved scenario that replays the run.
type Scenario struct {
	// Name names the run in reports (default: the file's base name, or
	// "scenario").
	Name string `yaml:"name"`
	// Seed seeds every random choice: the workload's sizes and arrival
	// times and the switch's loss and fault choices. 0 (or absent) picks
	// a random seed, written into the resolved scenario.
	Seed uint64 `yaml:"seed"`
	// Topology is the set of hosts.
	Topology Topology `yaml:"topology"`
	// Link is every switch port's egress link.
	Link Link `yaml:"link"`
	// IUT is the implementation under test, run on every host.
	IUT IUT `yaml:"iut"`
	// Workload is the RPC traffic.
	Workload Workload `yaml:"workload"`
	// Plan is a fault plan; nil for none. The switch backend runs all of
	// it; the tc backend runs it as nftables rules on every switch port's
	// egress (netem.ApplyTCPlan): match fields, drop and priority, with
	// a rule's Nth/Count counted per port (the switch counts
	// switch-wide) and no RPC ordinals (use match.id), in_port, out_port,
	// delay, hold or duplicate (Validate refuses them).
	Plan *netem.Plan `yaml:"plan,omitempty"`
	// Check says how the capture is judged.
	Check Check `yaml:"check"`
	// Env is where the scenario runs: EnvNS (default: network namespaces
	// in real time, root needed) or EnvSim (the discrete-event simulator,
	// package sim: the reference implementation on virtual time, no root,
	// the same seed giving the same packets).
	Env string `yaml:"env"`
	// Sim is the simulated hosts' model (env sim only; the run fills in
	// the defaults).
	Sim *SimHosts `yaml:"sim,omitempty"`

	// root is the parsed document, for the YAML lines in errors.
	root *yaml.Node
	// dir is the folder of the scenario file (relative manifest paths).
	dir string
}

// Topology is the emulated datacenter: Hosts hosts h1..hN, each a network
// namespace with one veth to the switch (package harness).
type Topology struct {
	// Hosts is the number of hosts, 2..harness.MaxHosts (default 2).
	Hosts int `yaml:"hosts"`
	// IPv6 makes the hosts talk over IPv6 (fd00::i) instead of IPv4
	// (198.18.0.i).
	IPv6 bool `yaml:"ipv6"`
	// MTU is every veth's MTU in bytes, 576..65535 (default 1500).
	MTU int `yaml:"mtu"`
}

// SimHosts is the model of a simulated host (sim.Cost): every packet it
// sends or takes in occupies one of Cores cores for PacketCost.
type SimHosts struct {
	// PacketCost is the processing time of one packet (default
	// sim.DefaultCost's 2.5 µs; 0s: free).
	PacketCost *time.Duration `yaml:"packet_cost,omitempty"`
	// Cores is the number of packets processed at once (default
	// sim.DefaultCost's 4).
	Cores int `yaml:"cores,omitempty"`
}

// Environments of Scenario.Env.
const (
	// EnvNS runs the IUT's agents in network namespaces behind an
	// emulated switch, in real time (package harness).
	EnvNS = "ns"
	// EnvSim runs the reference implementation's hosts in the
	// discrete-event simulator (package sim) behind netem's switch core,
	// on virtual time: every run of a seed gives byte-identical captures
	// and results.
	EnvSim = "sim"
)

// Backends of Link.Backend.
const (
	// BackendSwitch is netem's user-space switch: every LinkConfig
	// feature, fault plans, seeded random choices.
	BackendSwitch = "switch"
	// BackendTC is the kernel bridge with tc qdiscs on every switch port
	// (netem.ApplyTC): what the running kernel provides (netem.Detect),
	// and the fault plan as nftables rules (netem.ApplyTCPlan, see
	// Scenario.Plan); the drops are found in the capture (see Drop).
	BackendTC = "tc"
)

// Link is the egress link of every switch port: a netem.LinkConfig (rate,
// priorities, buffer, delay, loss, ...; YAML fields inline, e.g. "rate:
// 1gbit") and the backend that emulates it.
type Link struct {
	// Backend is BackendSwitch (default) or BackendTC.
	Backend          string `yaml:"backend"`
	netem.LinkConfig `yaml:",inline"`
}

// Built-in implementations of IUT.Impl.
const (
	ImplRef   = "ref"
	ImplLinux = "linux"
)

// IUT is the implementation under test.
type IUT struct {
	// Impl is ImplRef (default: the reference implementation, package
	// homa), ImplLinux (the kernel's Homa module) or the path of an agent
	// manifest (agent.LoadManifest; relative to the scenario file).
	Impl string `yaml:"impl"`
	// Params are parameter overrides sent in every agent's hello, on top
	// of the manifest's (agent.Params: HomaModule sysctl names plus
	// tick_ns, mtu, link_bps), e.g. {tick_ns: 10000000}.
	Params agent.Params `yaml:"params,omitempty"`
	// Faults are fault knobs asked for in hello (the reference
	// implementation's: homatest faults).
	Faults []string `yaml:"faults,omitempty"`
}

// Port is a Homa port number (HomaModule's sport and dport, 16 bits);
// 0 in a file means the default.
type Port uint16

// YAMLKind says what a port looks like in a scenario's type errors
// (yamlerr.Kinded).
func (Port) YAMLKind() string { return "a port number 1..65535" }

// Patterns of Workload.Pattern (harness/traffic).
const (
	// PatternManyToOne: the last host serves, the others call it.
	PatternManyToOne = "many-to-one"
	// PatternAllToAll: every host serves and calls every other host.
	PatternAllToAll = "all-to-all"
)

// Workload is the RPC traffic: either generated (Dist with Load or
// Concurrency, for a Duration or a Count of RPCs) or an explicit list
// (RPCs).
type Workload struct {
	// Dist is the request size distribution: w1..w5 (the Homa paper's
	// workloads, harness/workload) or a fixed size in bytes ("1000").
	// Required unless RPCs is given.
	Dist string `yaml:"dist,omitempty"`
	// Response is the response size: w1..w5 or a fixed size in bytes
	// (default "100").
	Response string `yaml:"response,omitempty"`
	// Pattern is PatternManyToOne (default) or PatternAllToAll.
	Pattern string `yaml:"pattern,omitempty"`
	// Port is the servers' Homa port (default 4000).
	Port Port `yaml:"port,omitempty"`
	// Load is the offered load as a fraction (0, workload.MaxLoad] of each
	// server's link rate (Link.Rate, which must then be set): open loop,
	// Poisson arrivals; above 1 the servers' links are overloaded.
	// Exclusive with Concurrency.
	Load float64 `yaml:"load,omitempty"`
	// Concurrency is the calls each client keeps outstanding (closed
	// loop). Default 1 when neither Load nor Concurrency is set.
	Concurrency int `yaml:"concurrency,omitempty"`
	// Duration stops issuing RPCs after this long; Count after this many
	// RPCs. One of them is required for a generated workload; with both,
	// whichever is reached first stops it.
	Duration time.Duration `yaml:"duration,omitempty"`
	Count    int           `yaml:"count,omitempty"`
	// RPCs is an explicit list instead of a generated workload.
	RPCs []RPC `yaml:"rpcs,omitempty"`
	// Timeout bounds each RPC (default 10s).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// RPC is one RPC of an explicit list: at At after the start, host Client
// calls host Server (host numbers 1..Hosts) with a Request-byte request
// and a Response-byte response (1..1,000,000 each).
type RPC struct {
	At       time.Duration `yaml:"at"`
	Client   int           `yaml:"client"`
	Server   int           `yaml:"server"`
	Request  int           `yaml:"request"`
	Response int           `yaml:"response"`
}

// Check levels of Check.Level.
const (
	LevelMust   = "must"
	LevelShould = "should"
)

// Check says which rules judge the capture (package spec) and how.
type Check struct {
	// Rules are comma-separated rule-ID globs (default "HOMA-*").
	Rules string `yaml:"rules,omitempty"`
	// Level is LevelMust (default: MUST rules only) or LevelShould (MUST
	// and SHOULD rules).
	Level string `yaml:"level,omitempty"`
	// Profile is the spec profile whose defaults the check starts from
	// (default "linux"); the agents' hello parameters override them. An
	// IUT whose hello names a wire format (agent.Hello.Wire) is judged
	// under that format's profile instead (judgeProfile).
	Profile string `yaml:"profile,omitempty"`
	// Params override spec parameters by name (homatest spec params),
	// after the hello's, e.g. {slack: 30ms}.
	Params map[string]string `yaml:"params,omitempty"`
}

// Defaults of a scenario.
const (
	DefaultHosts    = 2
	DefaultResponse = "100"
	DefaultPort     = 4000
	DefaultTimeout  = 10 * time.Second
	DefaultRules    = "HOMA-*"
	DefaultProfile  = "linux"
)
