//go:build linux

package harness

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Legacy ethtool commands (linux/ethtool.h): get and set the tx checksum
// offload feature (NETIF_F_CSUM_MASK). Turning it off also turns off TSO
// and GSO on the device, since they depend on it.
const (
	ethtoolGTXCSUM = 0x16
	ethtoolSTXCSUM = 0x17
)

// ethtoolValue is struct ethtool_value (linux/ethtool.h).
type ethtoolValue struct {
	cmd  uint32
	data uint32
}

// ifreqData is struct ifreq with ifr_data (a pointer) in its union.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolTxCsum reads (set == nil) or sets the tx checksum offload of
// interface ifname in the calling thread's network namespace, through the
// SIOCETHTOOL ioctl, and returns the state after the call.
func ethtoolTxCsum(ifname string, set *bool) (bool, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	call := func(v *ethtoolValue) error {
		var ifr ifreqData
		copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
		ifr.data = unsafe.Pointer(v)
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		if e != 0 {
			return e
		}
		return nil
	}
	if set != nil {
		v := ethtoolValue{cmd: ethtoolSTXCSUM}
		if *set {
			v.data = 1
		}
		if err := call(&v); err != nil {
			return false, fmt.Errorf("ethtool -K %s tx: %w", ifname, err)
		}
	}
	v := ethtoolValue{cmd: ethtoolGTXCSUM}
	if err := call(&v); err != nil {
		return false, fmt.Errorf("ethtool -k %s: %w", ifname, err)
	}
	return v.data != 0, nil
}

// txCsumOff turns tx checksum offload off on each interface (in the
// calling thread's namespace) and checks that it is off. Needed so a
// user-space forwarder that re-sends frames byte for byte (netem's switch)
// passes TCP: with offload on, the sender leaves the checksum partial.
func txCsumOff(ifnames ...string) error {
	off := false
	for _, n := range ifnames {
		on, err := ethtoolTxCsum(n, &off)
		if err != nil {
			return err
		}
		if on {
			return fmt.Errorf("tx checksum offload of %s is still on after ethtool -K tx off", n)
		}
	}
	return nil
}
