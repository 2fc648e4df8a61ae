//go:build linux

package harness

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Linux values the portable files use.
const (
	netlinkRoute = unix.NETLINK_ROUTE
	ifaFNoDAD    = unix.IFA_F_NODAD
)

// childAttr returns the SysProcAttr of a child process: SIGKILL when the
// forking thread dies (Pdeathsig), own process group.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// bridgeNoSTP sets IFLA_BR_STP_STATE 0 and IFLA_BR_FORWARD_DELAY 0 on the
// bridge with index idx in ns (vishvananda/netlink's Bridge has no fields
// for them; this is the RTM_NEWLINK message "ip link set BR type bridge
// stp_state 0 forward_delay 0" sends).
func bridgeNoSTP(ns netns.NsHandle, idx int) error {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer s.Close()
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_ACK)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(idx)
	req.AddData(msg)
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("bridge"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_BR_STP_STATE, nl.Uint32Attr(0))
	data.AddRtAttr(nl.IFLA_BR_FORWARD_DELAY, nl.Uint32Attr(0))
	req.AddData(info)
	_, err = req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// isLocal6 reports whether the IPv6 address addr has its local route
// (table local, type local) in nh's namespace: whether the kernel
// accepts packets sent to it.
func isLocal6(nh *netlink.Handle, addr netip.Addr) (bool, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_LOCAL, Type: unix.RTN_LOCAL,
		Dst: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(128, 128)}}
	rs, err := nh.RouteListFiltered(netlink.FAMILY_V6, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_TYPE|netlink.RT_FILTER_DST)
	return len(rs) > 0, err
}

// staticNeighbours gives every host a permanent neighbour entry for every
// other host's IPv4 and IPv6 address (see Config.ARP).
func (t *Topology) staticNeighbours() error {
	for _, h := range t.Hosts {
		nh, err := netlink.NewHandleAt(h.Netns, netlinkRoute)
		if err != nil {
			return fmt.Errorf("%s: netlink: %w", h.Name, err)
		}
		link, err := nh.LinkByName(h.Ifname)
		if err != nil {
			nh.Close()
			return fmt.Errorf("%s: %w", h.Ifname, err)
		}
		for _, o := range t.Hosts {
			if o == h {
				continue
			}
			for _, a := range []netip.Addr{o.Addr4, o.Addr6} {
				fam := netlink.FAMILY_V4
				if a.Is6() {
					fam = netlink.FAMILY_V6
				}
				n := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: fam, State: netlink.NUD_PERMANENT,
					IP: a.AsSlice(), HardwareAddr: o.MAC}
				if err := nh.NeighSet(n); err != nil {
					nh.Close()
					return fmt.Errorf("%s: neighbour %v: %w", h.Name, a, err)
				}
			}
		}
		nh.Close()
	}
	return nil
}
