// Package rawip is a homa.Transport over raw IP sockets (IP protocol 146)
// on Linux: the reference implementation then talks to other hosts (or to
// the Linux kernel module) over real interfaces, typically inside network
// namespaces built by the harness.
//
// Open must run inside the network namespace whose interfaces the socket
// should use: a raw socket belongs to the namespace it was created in.
// Root (CAP_NET_RAW) is required. Priorities go into the IPv4 TOS
// precedence bits (priority << 5), written per packet through IP_HDRINCL.
// IPv6 is not supported yet.
package rawip
