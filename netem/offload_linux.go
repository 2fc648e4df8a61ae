package netem

import (
	"fmt"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ethtoolValue is struct ethtool_value (linux/ethtool.h).
type ethtoolValue struct {
	cmd, data uint32
}

// ifreqData is struct ifreq with ifr_data set (40 bytes on 64-bit Linux).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(unsafe.Pointer(nil))]byte
}

// Legacy ethtool commands for tx checksum offload (linux/ethtool.h).
const (
	ethtoolGTXCSUM = 0x16
	ethtoolSTXCSUM = 0x17
)

// SetTxChecksumOffload turns tx checksum offload of interface dev in ns
// on or off (ethtool -K DEV tx on|off). A host veth whose TCP or UDP
// crosses the user-space switch needs it off: with it on, the kernel leaves
// the checksum partial and expects the veth peer to accept it, but the
// switch re-sends the frame as bytes and the receiver drops it (measured:
// iperf3 never connects).
func SetTxChecksumOffload(ns netns.NsHandle, dev string, on bool) error {
	v := ethtoolValue{cmd: ethtoolSTXCSUM}
	if on {
		v.data = 1
	}
	return ethtool(ns, dev, &v)
}

// TxChecksumOffload reports whether tx checksum offload is on for dev in ns.
func TxChecksumOffload(ns netns.NsHandle, dev string) (bool, error) {
	v := ethtoolValue{cmd: ethtoolGTXCSUM}
	err := ethtool(ns, dev, &v)
	return v.data != 0, err
}

// ethtool runs one SIOCETHTOOL request on a socket created inside ns.
func ethtool(ns netns.NsHandle, dev string, v *ethtoolValue) error {
	if len(dev) >= unix.IFNAMSIZ {
		return fmt.Errorf("netem: interface name %q longer than %d bytes", dev, unix.IFNAMSIZ-1)
	}
	var fd int
	if err := inNamespace(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	}); err != nil {
		return fmt.Errorf("netem: ethtool socket: %w", err)
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(v)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return fmt.Errorf("netem: ethtool %s: %w", dev, errno)
	}
	return nil
}
