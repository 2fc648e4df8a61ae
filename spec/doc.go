// Package spec is homatest's formal statement of the Homa protocol: named
// parameter profiles with HomaModule's defaults, a registry of rules (each
// with an ID such as HOMA-GRANT-003, a level, a one-sentence statement of what
// an observer of the wire sees, its source in HomaModule or the SIGCOMM 2018
// paper, and an executable property), the trace model that groups packets
// into RPCs and messages, and the checker that streams a trace through the
// rules and reports violations.
//
// Properties are written in a few declarative forms evaluated by one engine
// (see property.go): a per-packet predicate over the packet and the state an
// observer can infer before it ("Each"), an obligation that a trigger packet
// must be answered by a matching packet within a time bound ("Within"), and
// a bound on a count or amount at every packet ("AtMost"). The rule files
// (rules_<area>.go) therefore read as a specification.
//
// The package is pure Go with no OS calls; pcap turns captures into Events.
package spec
