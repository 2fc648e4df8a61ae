// Package conformance is homatest's conformance suite: Ginkgo v2 specs that
// decide, rule by rule, whether an implementation under test (IUT) follows
// the Homa protocol as package spec states it.
//
// Two kinds of specs:
//   - active: a tester peer (package conformance/tester) in its own host
//     crafts packets with spec/wire and plays the IUT's peer, then expects
//     responses field by field within a timing window (packetdrill-style);
//   - passive: workloads between IUT hosts behind netem's switch (loss,
//     bursts, reordering, duplication, delay and fault plans that pick
//     packets by their Homa meaning); the exchange is checked with the spec
//     checker and every RPC must complete with the right payload.
//
// Every spec is labelled with the rule IDs it checks (HOMA-GRANT-002 …), its
// area (wire, grant, priority, resend, ack, cutoffs, robustness, workload)
// and its level (MUST or SHOULD); names are stable. The suite drives the IUT
// only through the Target interface (the agent protocol's operations), so
// any implementation with an agent can be tested. Run executes the suite once
// in-process with a given environment; this is the only package that imports
// Ginkgo and Gomega.
package conformance
