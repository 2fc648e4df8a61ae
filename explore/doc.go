// Package explore is homatest's spec-driven explorer: the tester plays
// every behaviour a correct Homa peer (and the network between) may show
// against the implementation under test (IUT), the spec checker judges the
// IUT online, and a failing exchange is shrunk to a small replayable
// script.
//
// The pieces:
//   - a Case: the RPCs of one exchange (which side the IUT plays, sizes,
//     start times, cutoff changes) and the non-default decisions the
//     legal-peer model took (Choices, keyed by what they decide, so a
//     case replays exactly and shrinks one decision at a time);
//   - the legal-peer model (peer.go): for every point of an exchange, the
//     packets a correct Homa peer may send next and when, derived from the
//     IUT's declared parameters and the protocol as docs/homa-facts.md
//     states it (HomaModule): DATA of the unscheduled and granted bytes,
//     GRANTs within the window and the overcommit limit, RESENDs after
//     resend_ticks of silence and every resend_interval, BUSY, RPC_UNKNOWN
//     after an abort or a lost server state, CUTOFFS with new versions,
//     NEED_ACK and ACK, and a network that drops, duplicates, delays and
//     reorders; every alternative is a Choice;
//   - the oracle (oracle.go): every packet the IUT sends and every packet
//     it is given go to a spec.Checker of the IUT's own view as they
//     happen (findings charged to the IUT stop the case), with the
//     application's results through the agent protocol (each RPC completes
//     with the right payload, executes once, or fails only where the
//     peer's behaviour allowed it);
//   - the search (search.go): seeded random choices weighted toward
//     boundaries (message sizes at unsched_bytes, cutoffs and segment
//     edges, packets delivered just before or after the IUT's timer
//     deadlines, the last packet of a message), steered by coverage (rules
//     evaluated on the IUT's packets, pairs of a packet given and the
//     IUT's answer, IUT states reached) through a corpus of cases that
//     found something new;
//   - shrinking (shrink.go) and the replay script (script.go): a failing
//     case loses RPCs, decisions and bytes while the same rule still
//     fails, and is written as a script of timed sends and expected
//     answers that Replay runs again.
//
// It runs in the simulator against the reference implementation
// (deterministic: a seed gives the same cases, a case the same packets)
// and in network namespaces against any agent (conformance.Env is the
// environment in both). In namespaces one IUT serves the session and the
// view is the tester's, so each case is wound down before the next
// (run.drain), and a finding is not charged when the IUT's timer may have
// raced a packet on its way (spec.Raced), a measured stall explains it
// (oracle.stalled), or the IUT's packet counters show the network lost
// packets the view took as delivered (run.checkDelivery); such findings
// are counted as inconclusive.
package explore
