// Package sim is homatest's discrete-event simulator: N hosts under one
// switch on one virtual clock, in one goroutine, seeded, so that the same
// seed gives the same packets at the same times (byte-identical captures
// and results) however loaded the machine running it is.
//
// A Sim holds:
//   - hosts running the reference implementation's protocol state machine
//     (homa.Machine) with a modelled per-packet processing cost (Cost) and
//     an uplink to the switch at a link rate;
//   - stack hosts running a protocol stack the simulator does not know
//     (Stack, AddStackHost: IP packets in, SendIP out, the same cost and
//     uplink; package sim/simtcp runs gVisor's netstack TCP on them);
//   - raw endpoints whose packets the caller handles (a tester peer that
//     sends and receives arbitrary Homa packets);
//   - netem's switch core (netem.Core: priority queues, rate, buffer,
//     delay, jitter, loss, reordering, duplication, fault plans) between
//     them;
//   - a capture writer (pcapng through package pcap: every packet as its
//     host's protocol code sent it and as it took it in, the views a
//     harness run writes as sent.pcapng and delivered.pcapng);
//   - a traffic driver (Traffic: harness/traffic's RPC sequences, W1..W5
//     sizes and Poisson arrivals, issued to simulated hosts through
//     RPCHost: Homa, or another transport such as sim/simtcp's TCP);
//   - collective operations (Collective: ring and halving-doubling
//     all-reduce in lockstep steps over RPCHosts).
//
// The caller drives the clock from its own goroutine: RunUntil, Step and
// RunWhile process events in time order (ties in the order they were
// scheduled); At and After schedule callbacks at virtual times. Nothing
// runs between those calls, so a caller may inspect and change the
// simulation freely in between.
package sim
