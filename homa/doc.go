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
// Packets go through a Transport: an in-memory network for deterministic
// tests under testing/synctest (package homa/memnet), or raw IP sockets.
// The wire format comes from spec/wire; package homa never imports spec,
// so that the checker and the implementation are written independently.
//
// Fault knobs (Faults) make a host misbehave in ways real Homa
// implementations did (see FaultNames), so that the conformance suite can
// be shown to catch them.
//
// Concurrency: a Host serialises all protocol state under one mutex; a
// timer goroutine runs every Params.Tick, and a sender goroutine drains the
// output queue in SRPT order at the configured link rate.
package homa
