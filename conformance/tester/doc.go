// Package tester plays a Homa peer against an implementation under test (IUT),
// packetdrill-style: it crafts packets with spec/wire, sends them from its own
// host, records every packet it receives with its arrival time, and matches
// expected responses field by field within a timing window.
//
// A Peer runs over any homa.Transport and keeps time with a Clock: raw IP
// sockets (homa/rawip) in a tester network namespace on the wall clock
// (NewWallClock), or a raw endpoint of a simulation (package sim,
// SimTransport) on its virtual clock (SimClock), whose waits step the
// simulation from the waiting goroutine, so an expectation's window is
// exact. Everything the peer sent and received is kept as a trace, so a
// test can also hand the whole exchange to the spec checker (Verify).
//
// The package has no Ginkgo dependency: errors are returned with the
// expectation, the observation and the closest candidates spelled out, and
// the conformance suite turns them into failures.
package tester
