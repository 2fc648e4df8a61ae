// Package homa is homatest's reference implementation of Homa in user
// space: a host with sockets bound to ports, a client/server RPC API
// (Socket.Call; Socket.Receive and Request.Reply), and the protocol as
// HomaModule main implements it — unscheduled bytes with the boundary at
// unsched_bytes, receiver-driven GRANTs with overcommitment and SRPT
// ranking, scheduled and unscheduled priorities (CUTOFFS and
// cutoff_version), sender SRPT with an optional pacer, RESEND / BUSY /
// RPC_UNKNOWN with client restart, timeouts, NEED_ACK / ACK with
// piggy-backed acks, and at-most-once execution.
//
// The protocol is a deterministic state machine without I/O (Machine):
// every input is a call carrying the current time (a packet, a timer
// expiry, an application call) and every output is taken from it (packets
// to send, application events, the next deadline). Two drivers run it:
// Host in real time over a Transport (an in-memory network for tests
// under testing/synctest, package homa/memnet, or raw IP sockets, package
// homa/rawip), with a mutex, one timer and the transport's handler (over
// raw IP no handler: the goroutines waiting in Call and Receive read the
// socket themselves, one at a time, PullTransport); and
// package sim, which runs many machines on one virtual clock. The wire
// format comes from spec/wire; package homa never imports spec, so that
// the checker and the implementation are written independently.
//
// Fault knobs (Faults) make a host misbehave in ways real Homa
// implementations did (see FaultNames), so that the conformance suite can
// be shown to catch them.
package homa
