//go:build linux

package harness

import (
	"syscall"

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
