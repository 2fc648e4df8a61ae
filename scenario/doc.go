// Package scenario runs one Homa experiment described by a YAML scenario
// file: a topology of N hosts behind an emulated switch (package harness,
// package netem), the implementation under test (IUT) on every host through
// the agent protocol (package agent), an RPC workload (package
// harness/traffic), an optional fault plan, and a check of the capture with
// the spec's rules, each host judged on its own link (spec.Judge.Hosts).
//
// A scenario file (see Scenario for every field and its default):
//
//	name: w4-half-load
//	seed: 7
//	topology: {hosts: 4, mtu: 1500}
//	link: {backend: switch, rate: 1gbit, priorities: 8}
//	iut: {impl: ref, params: {tick_ns: 10000000}}
//	workload: {dist: w4, pattern: many-to-one, load: 0.5, duration: 5s}
//	plan:
//	  rules:
//	    - {name: 2nd GRANT of RPC 3, match: {type: GRANT, rpc: 3, nth: 2}, action: drop}
//	check: {rules: "HOMA-*", level: must, profile: linux}
//
// Parse and Load read a file, fill in the defaults and validate it; errors
// are one line with the YAML line, the field path and the fix. Run executes
// a scenario and writes an artifact folder (harness.Artifacts: every file
// appears complete or not at all): the resolved scenario (scenario.yaml,
// which Load reads back to replay the run with the same seed), versions, the
// agents' hellos and logs, the capture (capture.pcapng, with the as-sent and
// as-delivered views sent.pcapng and delivered.pcapng), the switch's
// counters and the frames it dropped or altered (switch.json, drops.json,
// switch-notes.pcapng), one record per RPC (rpcs.json), the check
// (check.json) and a summary (summary.json). CompareDrops tells whether two
// runs' fault plans hit the same packets, by Homa meaning.
//
// With env: sim (Scenario.Env) the run happens in the simulator (package
// sim) instead of namespaces: the reference implementation's protocol
// state machine on every host, netem's switch core with the scenario's
// link, plan and seed, the same workload, check and run folder, on
// virtual time and without root. Its captures are taken at the hosts'
// protocol code and cut to SimSnapLen bytes per frame, the check applies
// no timing slack beyond sim.ViewTolerance, and a replay reproduces the
// files byte for byte (CompareFiles).
//
// On the tc backend (link.backend: tc) the plan runs as nftables rules on
// every switch port's egress, each rule's nth counted per port; the kernel
// writes no notes, so drops.json lists the frames of sent.pcapng with no
// copy in delivered.pcapng, attributed to the drop rules whose match
// fields select them (netem's Rule.MatchesPacket), and there is no
// switch-notes.pcapng.
package scenario
