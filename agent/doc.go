// Package agent is the protocol between the homatest harness and an
// implementation of Homa under test (IUT), and homatest's built-in agents.
//
// An agent is a process that runs one Homa endpoint on one emulated host. The
// harness starts it (from a Manifest) inside the host's network namespace and
// talks to it over its standard input and output in JSON lines: hello
// (version, capabilities, parameters in effect), listen (become a server),
// call (one RPC with given request and response sizes), completion events,
// stats and shutdown. The protocol is documented for agent writers in
// docs/agent-protocol.md; the Go types are in protocol.go.
//
// The harness side is Client. The built-in agents are ServeRef (the
// reference implementation, package homa, over raw IP sockets or an injected
// transport) and ServeLinux (the Linux kernel's Homa sockets through raw
// system calls); `homatest agent --impl ref|linux` runs them on standard
// input and output. Payloads follow one format (FillPayload, CheckPayload) so
// both ends check integrity.
//
// Timeouts scale with the environment variable HOMATEST_TIME_SCALE (a float,
// default 1), as every timeout in homatest does.
package agent
