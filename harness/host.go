package harness

import (
	"github.com/homatest/homatest/internal/nsexec"
	"net"
	"net/netip"
	"sync"

	"github.com/vishvananda/netns"
)

// Host is one emulated host: a named network namespace (usable with "ip
// netns exec NS") with lo up and one veth to the switch, carrying Addr4/16
// (on-link in Net4) and Addr6/64 (on-link in Net6, no DAD) and no route
// out.
type Host struct {
	// Index is the host number, 1..N.
	Index int
	// Name is "h<Index>", e.g. "h1".
	Name string
	// NS is the namespace name, e.g. "ht3f9a1c-h1".
	NS string
	// Netns is a handle to the namespace (valid until Topology.Close).
	Netns netns.NsHandle
	// Ifname is the host's veth end inside NS, e.g. "ht3f9a1c-h1".
	Ifname string
	// Port is the peer veth end in the switch namespace, e.g. "ht3f9a1c-p1".
	Port string
	// MAC is Ifname's hardware address, 02:<run id bytes>:00:<Index>.
	MAC net.HardwareAddr
	// Addr4 is 198.18.0.<Index> (prefix length 15).
	Addr4 netip.Addr
	// Addr6 is fd00::<Index> (prefix length 64).
	Addr6 netip.Addr

	topo    *Topology
	mu      sync.Mutex
	forker  *forker
	procs   map[*Process]struct{}
	started []*Process // every process started, for closing pipes
	closed  bool
}

// Do runs f on an OS thread locked and switched into the host's namespace,
// and returns f's error (or the error of entering the namespace). Sockets
// that f opens stay in the host's namespace after Do returns and can be
// used from any goroutine. The thread is switched back afterwards (and
// discarded if that fails). f must not start goroutines that expect to be
// in the namespace: they run on other threads.
func (h *Host) Do(f func() error) error { return nsexec.Do(h.Netns, f) }
