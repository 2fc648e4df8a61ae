package harness

import (
	"net"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestBuildWaitsForIPv6: Build returns only once every host's IPv6
// address has its local route, which the kernel installs after the
// address is added, asynchronously (see waitUp): a packet for the address
// arriving before it is dropped. waitLocal6 reports a missing route at
// its deadline and returns once the route is there.
func TestBuildWaitsForIPv6(t *testing.T) {
	requireRoot(t)
	topo := build(t, Config{Hosts: 2})
	for _, h := range topo.Hosts {
		nh, err := netlink.NewHandleAt(h.Netns, netlinkRoute)
		if err != nil {
			t.Fatal(err)
		}
		defer nh.Close()
		if ok, err := isLocal6(nh, h.Addr6); !ok || err != nil {
			t.Errorf("%s: %v local after Build: %v, %v; want true", h.Name, h.Addr6, ok, err)
		}
	}
	h := topo.Hosts[1]
	nh, err := netlink.NewHandleAt(h.Netns, netlinkRoute)
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	link, err := nh.LinkByName(h.Ifname)
	if err != nil {
		t.Fatal(err)
	}
	local := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL, LinkIndex: link.Attrs().Index,
		Dst: &net.IPNet{IP: h.Addr6.AsSlice(), Mask: net.CIDRMask(128, 128)}}
	if err := nh.RouteDel(local); err != nil {
		t.Fatalf("delete the local route of %v: %v", h.Addr6, err)
	}
	if err := waitLocal6(t.Context(), h.Netns, h.Addr6, time.Now().Add(20*time.Millisecond)); err == nil {
		t.Errorf("waitLocal6 without the local route of %v: nil, want an error", h.Addr6)
	}
	if err := nh.RouteAdd(local); err != nil {
		t.Fatalf("restore the local route of %v: %v", h.Addr6, err)
	}
	if err := waitLocal6(t.Context(), h.Netns, h.Addr6, time.Now()); err != nil {
		t.Errorf("waitLocal6 with the local route of %v: %v", h.Addr6, err)
	}
}
