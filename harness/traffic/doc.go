// Package traffic drives an RPC workload through agents (package agent):
// open loop with Poisson arrivals at an offered load, closed loop with a
// fixed number of calls outstanding per client, or an explicit list of
// RPCs. It issues every RPC as an agent call op, collects the done events
// and returns one Record per RPC, so the same run can drive the reference
// implementation, the kernel's Homa, a user's agent or the tcp agent.
//
// Latencies are the agents' own (latency_ns of each done event: from the
// request's send to the whole response); the time an agent takes to accept
// a call is not in them, and is reported separately as Record.Lateness.
package traffic
