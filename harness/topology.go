package harness

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/homatest/homatest/internal/nsexec"
	"github.com/homatest/homatest/internal/timescale"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Limits and defaults of a topology.
const (
	// MaxHosts is the largest number of hosts Build accepts.
	MaxHosts = 64
	// DefaultMTU is the veth MTU in bytes when Config.MTU is 0.
	DefaultMTU = 1500
)

// Address plan. Host i (1-based) gets 198.18.0.i/15 and fd00::i/64, only
// inside its namespace, with no default route: nothing leaves the run.
// 198.18.0.0/15 is set aside for benchmarking (RFC 2544); fd00::/8 is
// unique-local (RFC 4193).
var (
	// Net4 is the IPv4 prefix the hosts share (on-link).
	Net4 = netip.MustParsePrefix("198.18.0.0/15")
	// Net6 is the IPv6 prefix the hosts share (on-link), inside fd00::/8.
	Net6 = netip.MustParsePrefix("fd00::/64")
)

// Config describes a topology: N hosts, each a network namespace with one
// veth to a switch namespace where a Fabric forwards between the ports.
type Config struct {
	// Hosts is the number of hosts, 1..MaxHosts.
	Hosts int
	// MTU of every veth end in bytes, 68..65535; 0 means DefaultMTU.
	MTU int
	// Fabric forwards between the switch ports; nil means the kernel
	// bridge (NewBridgeFabric named RunID.BridgeIf()).
	Fabric Fabric
	// RunID forces a run id (6 lowercase hex digits); empty picks a free
	// random one.
	RunID RunID
	// Artifacts is the run folder for logs and captures; nil means
	// NewArtifacts(DefaultArtifactsDir(id)).
	Artifacts *Artifacts
	// ARP, when true, leaves neighbour resolution to ARP and IPv6
	// neighbour discovery. By default every host gets a permanent
	// neighbour entry (IPv4 and IPv6) for every other host, so no packet
	// waits in the kernel for resolution: a first DATA held while ARP
	// crosses a busy switch leaves together with the RESEND its silence
	// provoked, which on the wire looks like a RESEND sent too early.
	ARP bool
	// Offloads, when true, leaves the host veths' tx checksum offload,
	// TSO and GSO on (the kernel's default), so a kernel stack on a host
	// sends GSO super-frames over its veth, as HomaModule does (a
	// 6-segment DATA frame per skb): the kernel bridge segments them on
	// the way out of a switch port (the ports keep tx checksum off), the
	// user-space switch on arrival (netem.SegmentFrame, Homa only). By
	// default the host veths have it off too, so every frame on the wire
	// is a real one and TCP's checksums are complete (the user-space
	// switch re-sends frames byte for byte).
	Offloads bool
}

// Topology is a built set of host namespaces around a switch namespace.
// Close it (idempotent) to remove every namespace, interface and process
// it created; the process-wide registry (see HandleSignals, CloseAll) also
// closes it on SIGINT/SIGTERM.
type Topology struct {
	// ID is the run id carried by every name below.
	ID RunID
	// Hosts are h1..hN in order (Hosts[0] is h1).
	Hosts []*Host
	// SwitchNS is the name of the switch namespace ("ht3f9a1c-sw").
	SwitchNS string
	// Switch is a handle to the switch namespace (valid until Close).
	Switch netns.NsHandle
	// Ports are the switch-port interface names inside SwitchNS, in host
	// order (Ports[i] leads to Hosts[i]).
	Ports []string
	// MTU of every veth end in bytes.
	MTU int
	// Offloads is Config.Offloads.
	Offloads bool
	// Artifacts is the run folder.
	Artifacts *Artifacts

	fabric    Fabric
	td        teardown
	building  sync.Mutex // held while Build runs
	closeOnce sync.Once
	closeErr  error
	mu        sync.Mutex
	captures  []*Capture
}

// Build creates the topology described by cfg. On error everything created
// so far is removed and the error says which step failed. ctx bounds the
// build (it is checked between steps), not the topology's lifetime.
func Build(ctx context.Context, cfg Config) (t *Topology, err error) {
	if cfg.Hosts < 1 || cfg.Hosts > MaxHosts {
		return nil, fmt.Errorf("harness: %d hosts: want 1..%d", cfg.Hosts, MaxHosts)
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < 68 || cfg.MTU > 65535 {
		return nil, fmt.Errorf("harness: MTU %d bytes: want 68..65535", cfg.MTU)
	}
	if runtime.GOOS != "linux" {
		return nil, ErrNotSupported
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	lock, err := reserveRunID(cfg.RunID)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	id := lock.id
	t = &Topology{ID: id, SwitchNS: id.SwitchNS(), Switch: netns.None(), MTU: cfg.MTU, Offloads: cfg.Offloads, Artifacts: cfg.Artifacts}
	t.td.push("release run lock", func() error { lock.release(); return nil })
	// A Close from another goroutine (the signal handler's CloseAll) waits
	// until Build returns, so no step is created after the teardown ran.
	t.building.Lock()
	register(t)
	t.td.push("unregister", func() error { unregister(t); return nil })
	defer func() {
		t.building.Unlock()
		if err != nil {
			t.Close()
			t = nil
		}
	}()
	if t.Artifacts == nil {
		if t.Artifacts, err = NewArtifacts(DefaultArtifactsDir(id)); err != nil {
			return t, fmt.Errorf("harness: %w", err)
		}
	}

	// Switch namespace: no IPv6 on the ports or the bridge (no link-local
	// addresses, router solicitations or MLD in the captures).
	t.td.push("delete namespace "+t.SwitchNS, func() error { return deleteNetns(t.SwitchNS) })
	if t.Switch, err = nsexec.NewNamed(t.SwitchNS); err != nil {
		return t, fmt.Errorf("harness: %w", err)
	}
	t.td.push("close switch namespace handle", func() error { return closeNs(&t.Switch) })
	if err = nsexec.Do(t.Switch, func() error {
		return errors.Join(sysctl("net.ipv6.conf.all.disable_ipv6", "1"), sysctl("net.ipv6.conf.default.disable_ipv6", "1"))
	}); err != nil {
		return t, fmt.Errorf("harness: switch namespace: %w", err)
	}
	sw, err := netlink.NewHandleAt(t.Switch, netlinkRoute)
	if err != nil {
		return t, fmt.Errorf("harness: netlink handle in %s: %w", t.SwitchNS, err)
	}
	t.td.push("close switch netlink handle", func() error { sw.Close(); return nil })

	for i := 1; i <= cfg.Hosts; i++ {
		if err = ctx.Err(); err != nil {
			return t, fmt.Errorf("harness: build: %w", err)
		}
		h, err := t.addHost(i, sw)
		if err != nil {
			return t, fmt.Errorf("harness: host h%d: %w", i, err)
		}
		t.Hosts = append(t.Hosts, h)
		t.Ports = append(t.Ports, h.Port)
	}
	if !cfg.ARP {
		if err = t.staticNeighbours(); err != nil {
			return t, fmt.Errorf("harness: %w", err)
		}
	}
	if err = nsexec.Do(t.Switch, func() error { return txCsumOff(t.Ports...) }); err != nil {
		return t, fmt.Errorf("harness: switch ports: %w", err)
	}

	t.fabric = cfg.Fabric
	if t.fabric == nil {
		t.fabric = NewBridgeFabric(id.BridgeIf())
	}
	t.td.push("close fabric", func() error { return t.fabric.Close() })
	if err = t.fabric.Start(ctx, t.Switch, append([]string(nil), t.Ports...)); err != nil {
		return t, fmt.Errorf("harness: start fabric: %w", err)
	}
	if err = t.waitUp(ctx); err != nil {
		return t, fmt.Errorf("harness: %w", err)
	}
	if !cfg.ARP {
		// Teach a learning fabric where every host is (no ARP will).
		for _, h := range t.Hosts {
			if err = h.Do(func() error { return announce(h.Ifname, h.MAC, h.Addr4) }); err != nil {
				return t, fmt.Errorf("harness: %s: %w", h.Name, err)
			}
		}
	}
	// Processes and captures are torn down first (pushed last).
	t.td.push("stop captures", t.closeCaptures)
	t.td.push("kill processes", t.killAll)
	if err = t.Artifacts.WriteJSON("topology.json", t.Describe()); err != nil {
		return t, fmt.Errorf("harness: %w", err)
	}
	return t, nil
}

// waitUp waits until both ends of every host's veth are operationally up
// and every host accepts packets sent to its IPv6 address. The kernel
// activates a device's queueing discipline and reports its carrier
// asynchronously (linkwatch): frames sent before that are dropped
// silently (a loaded machine takes up to a second), and IPv6 neighbour
// discovery sent then is lost. It also installs an IPv6 address's local
// route (and joins its solicited-node group) asynchronously, when
// duplicate address detection completes (addrconf_dad_work, on a work
// queue under the RTNL lock: NODAD only makes that immediate once the work
// runs), while IPv4's is installed when the address is added: with other
// namespaces being created or deleted on the machine the work waits, and
// a packet for the address arriving first is dropped (Ip6InAddrErrors),
// as the first IPv6 packet of a test once was. Bounded by 5 s (times
// HOMATEST_TIME_SCALE) and ctx.
func (t *Topology) waitUp(ctx context.Context) error {
	deadline := time.Now().Add(timescale.D(5 * time.Second))
	for _, h := range t.Hosts {
		if err := waitOperUp(ctx, h.Netns, h.Ifname, deadline); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		if err := waitOperUp(ctx, t.Switch, h.Port, deadline); err != nil {
			return fmt.Errorf("switch port of %s: %w", h.Name, err)
		}
		if err := waitLocal6(ctx, h.Netns, h.Addr6, deadline); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	return nil
}

// waitOperUp polls interface name in ns until it is operationally up, the
// deadline passes or ctx ends.
func waitOperUp(ctx context.Context, ns netns.NsHandle, name string, deadline time.Time) error {
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer nh.Close()
	var state netlink.LinkOperState
	return pollUntil(ctx, deadline, func() (bool, error) {
		l, err := nh.LinkByName(name)
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		state = l.Attrs().OperState
		return state == netlink.OperUp, nil
	}, func() error {
		return fmt.Errorf("%s still %v after 5 s (times HOMATEST_TIME_SCALE): is its peer up?", name, state)
	})
}

// waitLocal6 polls ns until its IPv6 address addr has its local route
// (see waitUp), the deadline passes or ctx ends.
func waitLocal6(ctx context.Context, ns netns.NsHandle, addr netip.Addr, deadline time.Time) error {
	nh, err := netlink.NewHandleAt(ns, netlinkRoute)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer nh.Close()
	return pollUntil(ctx, deadline, func() (bool, error) {
		ok, err := isLocal6(nh, addr)
		if err != nil {
			return false, fmt.Errorf("local route of %v: %w", addr, err)
		}
		return ok, nil
	}, func() error {
		return fmt.Errorf("%v has no local route after 5 s (times HOMATEST_TIME_SCALE): the kernel's IPv6 address configuration has not run", addr)
	})
}

// pollUntil calls done every 5 ms until it returns true or an error; at
// the deadline it returns late's error, when ctx ends ctx's.
func pollUntil(ctx context.Context, deadline time.Time, done func() (bool, error), late func() error) error {
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return late()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond): // polling kernel state, bounded by deadline
		}
	}
}

// Description is the JSON form of a topology, written to the run folder
// as topology.json by Build.
type Description struct {
	Run      RunID             `json:"run"`
	SwitchNS string            `json:"switch_netns"`
	MTU      int               `json:"mtu"`
	Fabric   string            `json:"fabric"`
	Hosts    []HostDescription `json:"hosts"`
}

// HostDescription is one host of a Description.
type HostDescription struct {
	Name   string     `json:"name"`
	NS     string     `json:"netns"`
	Ifname string     `json:"ifname"`
	Port   string     `json:"switch_port"`
	MAC    string     `json:"mac"`
	Addr4  netip.Addr `json:"addr4"`
	Addr6  netip.Addr `json:"addr6"`
}

// Describe returns the topology's names and addresses.
func (t *Topology) Describe() Description {
	d := Description{Run: t.ID, SwitchNS: t.SwitchNS, MTU: t.MTU, Fabric: fmt.Sprintf("%T", t.fabric)}
	for _, h := range t.Hosts {
		d.Hosts = append(d.Hosts, HostDescription{Name: h.Name, NS: h.NS, Ifname: h.Ifname, Port: h.Port,
			MAC: h.MAC.String(), Addr4: h.Addr4, Addr6: h.Addr6})
	}
	return d
}

// Addr4 returns host i's (1-based) IPv4 address in a topology:
// 198.18.0.0/15 (set aside for benchmarking), 198.18.(i>>8).(i&255).
func Addr4(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}) }

// Addr6 returns host i's (1-based) IPv6 address in a topology: fd00::i.
func Addr6(i int) netip.Addr {
	return netip.AddrFrom16([16]byte{0: 0xfd, 14: byte(i >> 8), 15: byte(i)})
}

// addHost creates host i: namespace, lo up, veth to the switch, addresses.
func (t *Topology) addHost(i int, sw *netlink.Handle) (*Host, error) {
	id := t.ID
	h := &Host{Index: i, Name: fmt.Sprintf("h%d", i), NS: id.HostNS(i), Ifname: id.HostIf(i), Port: id.PortIf(i),
		Netns: netns.None(), topo: t, procs: map[*Process]struct{}{},
		Addr4: Addr4(i), Addr6: Addr6(i)}
	t.td.push("delete namespace "+h.NS, func() error { return deleteNetns(h.NS) })
	ns, err := nsexec.NewNamed(h.NS)
	if err != nil {
		return nil, err
	}
	h.Netns = ns
	t.td.push("close namespace handle "+h.NS, func() error { return closeNs(&h.Netns) })
	t.td.push("stop process starter of "+h.Name, h.stopForker)
	// Accept no DAD in the host, so the addresses (link-local included)
	// are usable at once; no router solicitations (nothing to find).
	if err := nsexec.Do(ns, func() error {
		return errors.Join(sysctl("net.ipv6.conf.all.accept_dad", "0"), sysctl("net.ipv6.conf.default.accept_dad", "0"),
			sysctl("net.ipv6.conf.default.router_solicitations", "0"))
	}); err != nil {
		return nil, err
	}
	nh, err := netlink.NewHandleAt(ns, netlinkRoute)
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", h.NS, err)
	}
	defer nh.Close()
	lo, err := nh.LinkByName("lo")
	if err == nil {
		err = nh.LinkSetUp(lo)
	}
	if err != nil {
		return nil, fmt.Errorf("bring up lo: %w", err)
	}
	// Deterministic MAC: locally administered 02:<run id>:00:<i>.
	var mac net.HardwareAddr
	if b, err := hex.DecodeString(string(id)); err == nil && len(b) == 3 {
		mac = net.HardwareAddr{0x02, b[0], b[1], b[2], byte(i >> 8), byte(i)}
	}
	t.td.push("delete veth "+h.Ifname, func() error { return delLink(h.Netns, h.Ifname) })
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: h.Ifname, MTU: t.MTU, HardwareAddr: mac},
		PeerName: h.Port, PeerNamespace: netlink.NsFd(int(t.Switch)), PeerMTU: uint32(t.MTU)}
	if err := nh.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s/%s: %w", h.Ifname, h.Port, err)
	}
	link, err := nh.LinkByName(h.Ifname)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", h.Ifname, err)
	}
	h.MAC = link.Attrs().HardwareAddr
	for _, a := range []*netlink.Addr{
		{IPNet: &net.IPNet{IP: h.Addr4.AsSlice(), Mask: net.CIDRMask(Net4.Bits(), 32)}},
		{IPNet: &net.IPNet{IP: h.Addr6.AsSlice(), Mask: net.CIDRMask(Net6.Bits(), 128)}, Flags: ifaFNoDAD},
	} {
		if err := nh.AddrAdd(link, a); err != nil {
			return nil, fmt.Errorf("add address %s to %s: %w", a.IPNet, h.Ifname, err)
		}
	}
	if !t.Offloads {
		if err := nsexec.Do(ns, func() error { return txCsumOff(h.Ifname) }); err != nil {
			return nil, err
		}
	}
	if err := nh.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("bring up %s: %w", h.Ifname, err)
	}
	port, err := sw.LinkByName(h.Port)
	if err == nil {
		err = sw.LinkSetUp(port)
	}
	if err != nil {
		return nil, fmt.Errorf("bring up switch port %s: %w", h.Port, err)
	}
	return h, nil
}

// Host returns host name ("h1".."hN"), or nil.
func (t *Topology) Host(name string) *Host {
	for _, h := range t.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Close kills and reaps every process started in the hosts, stops
// captures, closes the fabric, deletes every veth and namespace and
// releases the run id. It is idempotent and safe to call concurrently
// (later calls return the first call's error).
func (t *Topology) Close() error {
	t.closeOnce.Do(func() {
		t.building.Lock() // wait for a Build in progress
		t.building.Unlock()
		if err := t.td.run(); err != nil {
			t.closeErr = fmt.Errorf("harness: close run %s: %w", t.ID, err)
		}
	})
	return t.closeErr
}

// ErrNotSupported is returned by Build and Cleanup outside Linux.
var ErrNotSupported = errors.New("harness: needs Linux (network namespaces, veth, AF_PACKET)")

// ErrNotRoot is returned by Build and Cleanup when the process is not root
// (namespaces, veths and AF_PACKET sockets need CAP_SYS_ADMIN and
// CAP_NET_ADMIN).
var ErrNotRoot = errors.New("harness: needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN): run with sudo")

// deleteNetns removes the named namespace's bind mount and file; a missing
// namespace is not an error. The namespace itself goes when the last
// process and handle in it are gone.
func deleteNetns(name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func closeNs(h *netns.NsHandle) error {
	if !h.IsOpen() {
		return nil
	}
	err := h.Close()
	*h = netns.None()
	return err
}

// delLink deletes interface name in ns (a veth: both ends go); a missing
// namespace or interface is not an error.
func delLink(ns netns.NsHandle, name string) error {
	if !ns.IsOpen() {
		return nil
	}
	h, err := netlink.NewHandleAt(ns, netlinkRoute)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return nil
	}
	return h.LinkDel(l)
}
