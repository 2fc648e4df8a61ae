// Package tester plays a Homa peer against an implementation under test (IUT),
// packetdrill-style: it crafts packets with spec/wire, sends them from its own
// host, records every packet it receives with its arrival time, and matches
// expected responses field by field within a timing window.
//
// A Peer runs over any homa.Transport: raw IP sockets (homa/rawip) in a
// tester network namespace for the conformance suite, or the in-memory
// network (homa/memnet) for this package's own tests. Everything the peer sent
// and received is kept as a trace, so a test can also hand the whole exchange
// to the spec checker (Verify).
//
// The package has no Ginkgo dependency: errors are returned with the
// expectation, the observation and the closest candidates spelled out, and
// the conformance suite turns them into failures.
package tester
