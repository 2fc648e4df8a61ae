//go:build !linux

package harness

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Stand-ins so the package builds outside Linux; Build and Cleanup return
// ErrNotSupported before any of these is reached.
const (
	netlinkRoute = 0
	ifaFNoDAD    = 0
)

func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func bridgeNoSTP(netns.NsHandle, int) error { return ErrNotSupported }

func isLocal6(*netlink.Handle, netip.Addr) (bool, error) { return false, ErrNotSupported }

func ethtoolTxCsum(string, *bool) (bool, error) { return false, ErrNotSupported }

// SetGRO needs Linux's ethtool ioctl.
func (h *Host) SetGRO(bool) error { return ErrNotSupported }

// GRO needs Linux's ethtool ioctl.
func (h *Host) GRO() (bool, error) { return false, ErrNotSupported }

func txCsumOff(...string) error { return ErrNotSupported }

func announce(string, net.HardwareAddr, netip.Addr) error { return ErrNotSupported }

func (t *Topology) staticNeighbours() error { return ErrNotSupported }

// TesterMark is the socket mark of a tester's packets (see Silence).
const TesterMark = 0x486f6d61

// Silence needs Linux's nftables.
func (h *Host) Silence(uint32) error { return ErrNotSupported }

// SilenceDrops needs Linux's nftables.
func (h *Host) SilenceDrops() (uint64, uint64, error) { return 0, 0, ErrNotSupported }
