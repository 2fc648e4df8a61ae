// Package rawip is a homa.Transport over raw IP sockets (IP protocol 146)
// on Linux: the reference implementation then talks to other hosts (or to
// the Linux kernel module) over real interfaces, typically inside network
// namespaces built by the harness.
//
// Open must run inside the network namespace whose interfaces the socket
// should use: a raw socket belongs to the namespace it was created in.
// Root (CAP_NET_RAW) is required. Priorities go into the IP precedence
// bits (priority << 5): the IPv4 TOS or the IPv6 traffic class, per
// packet in an IP_TOS or IPV6_TCLASS control message. A
// homa.Host reads the socket in the goroutines that wait for packets
// (Transport.Pull, homa.PullTransport); other users get a reader
// goroutine when they install a handler.
package rawip
