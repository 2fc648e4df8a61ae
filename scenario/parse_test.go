package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homatest/homatest/netem"
)

// TestParseDefaults: a minimal file gets every documented default, and
// its resolved form parses back to the same scenario.
func TestParseDefaults(t *testing.T) {
	s, err := Parse([]byte("workload: {dist: w3, count: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	switch {
	case s.Name != "scenario", s.Seed == 0:
		t.Errorf("name %q seed %d, want scenario and a random seed", s.Name, s.Seed)
	case s.Topology != Topology{Hosts: 2, MTU: 1500}:
		t.Errorf("topology %+v", s.Topology)
	case s.Link.Backend != "switch" || s.Link.Priorities != 8 || s.Link.Rate != 0:
		t.Errorf("link %+v", s.Link)
	case s.IUT.Impl != "ref":
		t.Errorf("iut %+v", s.IUT)
	case w.Response != "100" || w.Pattern != "many-to-one" || w.Port != 4000 || w.Concurrency != 1 || w.Timeout != 10*time.Second || w.Load != 0:
		t.Errorf("workload %+v", w)
	case s.Check.Rules != "HOMA-*" || s.Check.Level != "must" || s.Check.Profile != "linux":
		t.Errorf("check %+v", s.Check)
	}
	out, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("resolved scenario does not parse: %v\n%s", err, out)
	}
	again, _ := back.Marshal()
	if string(again) != string(out) {
		t.Errorf("resolved scenario changes when read back:\n%s\n---\n%s", out, again)
	}
}

// TestLoadExamples: the example scenarios load, keep their values and
// name themselves after their file.
func TestLoadExamples(t *testing.T) {
	s, err := Load("testdata/w4-half-load.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "w4-half-load" || s.Seed != 4 || s.Topology.Hosts != 4 || s.Link.Rate != netem.Gbit ||
		s.Workload.Dist != "w4" || s.Workload.Load != 0.5 || s.Workload.Duration != 5*time.Second || s.Workload.Concurrency != 0 {
		t.Errorf("w4-half-load: %+v", s)
	}
	if v, ok := s.IUT.Params.Int("tick_ns"); !ok || v != 50_000_000 {
		t.Errorf("iut.params.tick_ns = %v", s.IUT.Params["tick_ns"])
	}
	if s.Plan == nil || len(s.Plan.Rules) != 2 || !s.Plan.Rules[0].Action.Drop || s.Plan.Rules[0].Match.RPC != 4 {
		t.Errorf("plan %+v", s.Plan)
	}
	d, err := Load("testdata/two-hosts-drops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Workload.RPCs) != 3 || d.Workload.RPCs[1] != (RPC{At: 100 * time.Millisecond, Client: 1, Server: 2, Request: 100000, Response: 100}) {
		t.Errorf("rpcs %+v", d.Workload.RPCs)
	}
	if d.Workload.Pattern != "" || d.Workload.Concurrency != 0 {
		t.Errorf("an explicit list got generated-workload defaults: %+v", d.Workload)
	}
}

// TestParseErrors: every bad field gives one line with the YAML line, the
// field path and what to do.
func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	badManifest := filepath.Join(dir, "bad-manifest.yaml")
	if err := os.WriteFile(badManifest, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "workload: {dist: w3, count: 10}\n"
	for _, c := range []struct{ yaml, want string }{
		{"", "the file is empty"},
		{"topology: {hosts: 1}\n" + base, "line 1: topology.hosts: 1: want 2..64 hosts"},
		{"topology:\n  hostz: 3\n" + base, `line 2: unknown field "hostz" (topology.hostz): check its spelling and indentation; known fields: hosts, ipv6, mtu`},
		{"topology:\n  hosts: three\n" + base, `line 2: topology.hosts: "three": want a whole number`},
		// yaml's type errors: the field (the one with that value, not the
		// first key on the line), the whole value, the kind wanted; no Go
		// type names.
		{"topology: {hosts: 3, ipv6: maybe}\n" + base, `line 1: topology.ipv6: "maybe": want true or false`},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w3\n  count: 3\n  load: extremelyhigh\n", `line 5: workload.load: "extremelyhigh": want a number`},
		// NaN and infinities, in any float field, also where a mapping
		// is wanted.
		{"link: {rate: 1gbit}\nworkload: {dist: w4, load: .nan, duration: 1s}\n", "line 2: workload.load: .nan is not a finite number: give a number such as 0.5"},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w4\n  load: -.Inf\n  duration: 1s\n", "line 4: workload.load: -.Inf is not a finite number"},
		{"link: {loss: .nan}\n" + base, "line 1: link.loss: .nan is not a finite number"},
		{"link: {loss: {model: random, probability: .inf}}\n" + base, "line 1: link.loss.probability: .inf is not a finite number"},
		{"link:\n  reorder: {probability: .nan, gap: 2}\n" + base, "line 2: link.reorder.probability: .nan is not a finite number"},
		// Message sizes as for an rpcs list: HomaModule's limit.
		{"workload: {dist: '2000000', count: 3}\n", "line 1: workload.dist: workload: fixed size 2000000: want 1..1000000 bytes (HomaModule's HOMA_MAX_MESSAGE_LENGTH) or w1..w5"},
		{"workload: {dist: 99999999999, count: 3}\n", "line 1: workload.dist: workload: fixed size 99999999999: want 1..1000000 bytes"},
		{"workload: {dist: w4, response: 1000001, count: 3}\n", "line 1: workload.response: workload: fixed size 1000001: want 1..1000000 bytes"},
		{"workload: {dist: w4, concurrency: 1001, count: 3}\n", "line 1: workload.concurrency: 1001: want calls outstanding per client, 1..1000"},
		{"workload: {dist: w4, count: 1000001}\n", "line 1: workload.count: 1000001: want a number of RPCs, 1..1000000"},
		{"workload: {dist: w4, count: -1}\n", "line 1: workload.count: -1: want a number of RPCs, 1..1000000"},
		// rpc and nth count from 1: 0 would drop the field silently and
		// match every RPC or frame.
		{"plan:\n  rules:\n    - {match: {type: DATA, rpc: 0}, action: drop}\n" + base, "line 3: plan.rules[0].match.rpc: 0: rpc and nth count from 1 (rpc 1 is the first RPC the switch sees, nth 1 the first matching frame); leave rpc out to match every one"},
		{"plan:\n  rules:\n    - match:\n        type: GRANT\n        nth: 0\n      action: drop\n" + base, "line 5: plan.rules[0].match.nth: 0: rpc and nth count from 1"},
		// Small ones: load 0 as -0.5; concurrency 0; a port; tick_ns
		// -5 as 0; an unknown top-level field named once.
		{"link: {rate: 1gbit}\nworkload:\n  dist: w3\n  count: 3\n  load: 0\n", "line 5: workload.load: 0: want a fraction of the link rate in (0, 4], e.g. 0.5 (above 1 overloads the servers' links)"},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w3\n  count: 3\n  load: -0.5\n", "line 5: workload.load: -0.5: want a fraction of the link rate in (0, 4], e.g. 0.5 (above 1 overloads the servers' links)"},
		{"workload: {dist: w3, count: 3, concurrency: 0}\n", "line 1: workload.concurrency: 0: want calls outstanding per client, 1..1000"},
		{"workload: {dist: w3, count: 3, port: 70000}\n", `line 1: workload.port: "70000": want a port number 1..65535`},
		{"iut:\n  params: {tick_ns: -5}\n" + base, "line 2: iut.params: tick_ns -5: want a positive number of ns"},
		{"iut:\n  params: {tick_ns: 0}\n" + base, "line 2: iut.params: tick_ns 0: want a positive number of ns"},
		{"iut:\n  impl: linux\n  params: {tick_ns: -5}\n" + base, "line 3: iut.params: tick_ns -5: want a positive number of ns"},
		{"topolgy: {hosts: 3}\n" + base, `line 1: unknown field "topolgy": check its spelling and indentation; known fields: `},
		{"topology: [1, 2]\n" + base, "line 1: topology: a list: want a mapping of hosts, ipv6, mtu"},
		{"workload:\n  dist: [w3]\n  count: 3\n", "line 2: workload.dist: a list: want a single value"},
		{"workload:\n  dist: w3\n  count: 3\n  timeout: soon\n", `line 4: workload.timeout: "soon": want a duration such as 500us, 10ms or 2s`},
		{"workload:\n  rpcs: 5\n", `line 2: workload.rpcs: "5": want a list`},
		{"link: {loss: 0.5}\n" + base, `line 1: link.loss: "0.5": want a mapping of model, probability,`},
		{"plan:\n  rules:\n    - {match: {type: DATA, nth: abc}, action: drop}\n" + base, `line 3: plan.rules[0].match.nth: "abc": want a whole number`},
		{"link: {loss: {modle: random}}\n" + base, `line 1: unknown field "modle" (link.loss.modle): check its spelling and indentation; known fields: model, probability, p, r, loss_bad, loss_good`},
		{"topology: {hosts: x}\nworkload: {dist: w3, count: y}\n", `line 1: topology.hosts: "x": want a whole number (and 1 more problem)`},
		{"link: {rate: fast}\n" + base, "line 1"},
		{"link: {backend: switch, rate: 1gbt, priorities: 8}\n" + base, `line 1: link.rate: netem: rate "1gbt": want a number`},
		{"link: {backend: ns3}\n" + base, `line 1: link.backend: "ns3": want switch (netem's user-space switch) or tc (kernel qdiscs)`},
		{"link: {priorities: 9}\n" + base, "line 1: link: "},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w9\n  count: 10\n", "line 3: workload.dist: "},
		{"workload:\n  dist: w3\n", "line 1: workload: no duration and no count: say when to stop issuing RPCs"},
		{"workload:\n  count: 3\n", "line 1: workload: no dist and no rpcs"},
		{"workload:\n  dist: w3\n  count: 0\n", "line 3: workload.count: 0: want a number of RPCs, 1..1000000 (or leave count out and give a duration)"},
		{"workload:\n  rpcs: []\n", "line 2: workload.rpcs: an empty list: give at least one RPC"},
		{"workload:\n  dist: w3\n  count: 3\n  load: 0.5\n", "line 4: workload.load: a load is a fraction of the link rate, but link.rate is unlimited"},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w3\n  count: 3\n  load: 4.5\n", "line 5: workload.load: 4.5: want a fraction of the link rate in (0, 4]"},
		{"link: {rate: 1gbit}\nworkload:\n  dist: w3\n  count: 3\n  load: 0.5\n  concurrency: 2\n", "workload.load: load (open loop) and concurrency (closed loop) exclude each other"},
		{"workload:\n  dist: w3\n  count: 3\n  pattern: ring\n", `line 4: workload.pattern: "ring": want many-to-one or all-to-all`},
		{"workload:\n  rpcs:\n    - {client: 1, server: 1, request: 10, response: 10}\n", "line 3: workload.rpcs[0].server: 1: want a host number 1..2 other than the client"},
		{"workload:\n  rpcs:\n    - {client: 1, server: 2, request: 10, response: 10}\n    - {client: 1, server: 2, request: 0, response: 10}\n", "line 4: workload.rpcs[1].request: 0: want 1..1000000 bytes"},
		{"workload:\n  rpcs:\n    - {client: 1, server: 2, request: 1, response: 1000000}\n", "line 3: workload.rpcs[0].response: 1000000: a 1-byte request (under 12 bytes) has no room for the response length, so its response echoes it: give response: 1, or a request of at least 12 bytes"},
		{"iut: {impl: nowhere.yaml}\n" + base, `line 1: iut.impl: "nowhere.yaml" is not ref, linux or a readable agent manifest`},
		{"iut: {impl: " + badManifest + "}\n" + base, "line 1: iut.impl: manifest " + badManifest + ": command: missing"},
		{"iut:\n  faults: [no-grants, nope]\n" + base, `line 2: iut.faults[1]: "nope": no such fault knob`},
		{"iut:\n  params: {tick_ns: fast}\n" + base, `line 2: iut.params: tick_ns fast: want a positive number of ns`},
		{"iut:\n  params: {resend_ticks: -3}\n" + base, `line 2: iut.params: resend_ticks -3: want a non-negative integer`},
		{"iut:\n  impl: linux\n  params: {tick_ns: 0}\n" + base, `line 3: iut.params: tick_ns 0: want a positive number of ns`},
		{"check: {level: may}\n" + base, `line 1: check.level: "may": want must`},
		{"check: {rules: HOMA-NOPE-*}\n" + base, "line 1: check.rules: rule pattern"},
		{"check:\n  params: {slack: soon}\n" + base, "line 2: check.params.slack: "},
		{"link: {backend: tc}\nplan:\n  rules:\n    - {name: g, match: {type: GRANT, rpc: 3, in_port: p1}, action: {delay: 1ms}}\n    - {match: {type: GRANT, out_port: p2}, action: drop}\n" + base,
			"line 2: plan: link.backend tc cannot run this plan: plan rule 1: match.out_port: on the tc backend every switch port runs its own copy of the plan; select the destination host with match.to; " +
				"plan rule 0 (g): match.in_port: the egress hook does not know the port a frame entered by; plan rule 0 (g): match.rpc: nftables cannot number RPCs in the order first seen (use match.id with the client's RPC id); " +
				"plan rule 0 (g): action.delay: nftables cannot delay single packets (or use link.backend switch, which runs every plan feature)"},
		{"plan:\n  rules:\n    - {match: {type: GRUNT}, action: drop}\n" + base, "plan: "},
		{"env: vm\n" + base, `line 1: env: "vm": want ns (network namespaces, real time, root) or sim (the simulator, virtual time)`},
		{"env: sim\niut: {impl: linux}\n" + base, `line 2: iut.impl: "linux": env sim runs the reference implementation only`},
		{"env: sim\nlink: {backend: tc}\n" + base, `line 2: link.backend: "tc": env sim runs netem's switch core: use link.backend switch`},
		{"env: sim\nsim: {cores: -1}\n" + base, `line 2: sim: packet_cost and cores must not be negative`},
		{"sim: {cores: 8}\n" + base, `line 1: sim: the simulated hosts' model applies to env sim only`},
	} {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "scenario.") || strings.Contains(err.Error(), "!!") {
			t.Errorf("%q:\n got %v\nwant one line containing %q", c.yaml, err, c.want)
		}
	}
}

// TestLoadNamesFile: Load's errors start with the file name; a missing
// file is one line.
func TestLoadNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte("topology: {hosts: many}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), "scenario "+p+": line 1: topology.hosts: ") {
		t.Errorf("got %v", err)
	}
	if _, err := Load(p + ".missing"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("got %v", err)
	}
}

// TestManifestRelativeToFile: a manifest path is read relative to the
// scenario file, and the resolved scenario names it absolutely.
func TestManifestRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte("name: mine\ncommand: [/bin/true]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte("iut: {impl: mine.yaml}\nworkload: {dist: '1000', count: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if s.IUT.Impl != filepath.Join(dir, "mine.yaml") {
		t.Errorf("impl %q, want the absolute path", s.IUT.Impl)
	}
	m, err := s.Manifest("/unused")
	if err != nil || m.Name != "mine" {
		t.Errorf("manifest %+v, %v", m, err)
	}
}

// TestPlanRPCPastList: a plan rule for an RPC ordinal past an explicit
// rpcs list is refused on one line naming the rule and how many RPCs the
// list has; one within it passes. Before, RPC 9 of 3 passed validate and
// the rule never fired.
func TestPlanRPCPastList(t *testing.T) {
	doc := func(rpc int) []byte {
		return fmt.Appendf(nil, `workload:
  rpcs:
    - {at: 0ms, client: 1, server: 2, request: 1000, response: 100}
    - {at: 1ms, client: 1, server: 2, request: 1000, response: 100}
    - {at: 2ms, client: 1, server: 2, request: 1000, response: 100}
plan:
  rules:
    - {name: first grant, match: {type: GRANT, rpc: 1}, action: drop}
    - {name: late, match: {type: DATA, rpc: %d}, action: drop}
`, rpc)
	}
	_, err := Parse(doc(9))
	want := `line 9: plan.rules[1].match.rpc: rule 1 ("late") matches RPC 9, but workload.rpcs lists 3 RPCs, so it would never fire: give an RPC ordinal 1..3`
	if err == nil || err.Error() != want || strings.Contains(err.Error(), "\n") {
		t.Errorf("RPC 9 of 3: %v, want %s", err, want)
	}
	if _, err := Parse(doc(3)); err != nil {
		t.Errorf("RPC 3 of 3: %v", err)
	}
}
