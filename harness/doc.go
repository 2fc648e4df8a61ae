// Package harness builds the emulated datacenter a Homa test runs in: N
// host network namespaces, each with one veth to a switch namespace where a
// Fabric forwards frames between the ports (the kernel bridge built in;
// netem's user-space switch plugs in through the same interface). It starts
// implementation processes inside the hosts, captures every switch port
// into one pcapng per run, keeps a run's artifacts, and removes everything
// it made, also after being killed.
//
// # Names
//
// Every run has a RunID of 6 lowercase hex digits; every name it creates
// starts with "ht" + the id: namespaces ht3f9a1c-sw (switch) and
// ht3f9a1c-h1..hN (hosts, so "ip netns exec ht3f9a1c-h1 ..." works), the
// host's veth end ht3f9a1c-h1 (inside the host), the switch ports
// ht3f9a1c-p1..pN and the bridge ht3f9a1c-br (inside the switch), and the
// lock file /run/homatest/ht3f9a1c.lock. Host interfaces carry the run id
// rather than a fixed "eth0" so that every interface of a run, wherever it
// ends up, is recognisable by Cleanup. A run holds an flock on its lock
// file while it lives, so Cleanup never touches a live run, and two runs
// at once never share an id.
//
// # Addresses
//
// Host i has 198.18.0.i/15 and fd00::i/64 (no DAD, usable at once), MAC
// 02:<run id>:00:i, lo up, no route out. The veth MTU is Config.MTU
// (default 1500) and tx checksum offload is off on every veth end, so a
// user-space forwarder that re-sends frames as they are passes TCP.
// Every host has permanent neighbour entries for the other hosts (no ARP
// or neighbour discovery on the wire unless Config.ARP is set).
//
// # Threads and namespaces
//
// Interfaces and addresses are configured with netlink handles opened in
// the target namespace (netlink.NewHandleAt); no goroutine switches its
// thread for that. The few things that need the thread in the namespace
// (sysctls, ethtool ioctls, AF_PACKET sockets, Host.Do) run on a fresh
// goroutine locked to its thread, which is switched back afterwards and
// discarded if that fails. Processes are forked from one long-lived thread
// per host that stays in the host's namespace, because Pdeathsig fires when
// the forking thread exits.
//
// # Teardown
//
// Each undo step is registered before the thing it undoes is created.
// Topology.Close is idempotent: it kills and reaps processes, stops
// captures, closes the fabric, deletes veths and namespaces and drops the
// lock. HandleSignals closes every live topology on SIGINT/SIGTERM.
// Cleanup removes what a killed run left: namespaces matching
// ht[0-9a-f]{6}-* whose run holds no lock, the processes inside them, and
// stray interfaces with the prefix in the root namespace.
//
// Everything here needs root; Build and Cleanup return ErrNotRoot otherwise.
package harness
