//go:build linux

package harness

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Legacy ethtool commands (linux/ethtool.h): get and set the tx checksum
// offload feature (NETIF_F_CSUM_MASK; turning it off also turns off TSO
// and GSO on the device, since they depend on it) and generic receive
// offload (NETIF_F_GRO).
const (
	ethtoolGTXCSUM = 0x16
	ethtoolSTXCSUM = 0x17
	ethtoolGGRO    = 0x2b
	ethtoolSGRO    = 0x2c
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

// ethtoolFeature reads (set == nil) or sets one on/off feature of
// interface ifname in the calling thread's network namespace, through the
// SIOCETHTOOL ioctl with the feature's legacy get and set commands (what
// names it in errors: "tx", "gro"), and returns the state after the call.
func ethtoolFeature(ifname, what string, get, setCmd uint32, set *bool) (bool, error) {
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
		v := ethtoolValue{cmd: setCmd}
		if *set {
			v.data = 1
		}
		if err := call(&v); err != nil {
			return false, fmt.Errorf("ethtool -K %s %s: %w", ifname, what, err)
		}
	}
	v := ethtoolValue{cmd: get}
	if err := call(&v); err != nil {
		return false, fmt.Errorf("ethtool -k %s: %w", ifname, err)
	}
	return v.data != 0, nil
}

// ethtoolTxCsum reads (set == nil) or sets the tx checksum offload of
// interface ifname in the calling thread's network namespace and returns
// the state after the call.
func ethtoolTxCsum(ifname string, set *bool) (bool, error) {
	return ethtoolFeature(ifname, "tx", ethtoolGTXCSUM, ethtoolSTXCSUM, set)
}

// ethtoolGRO reads (set == nil) or sets generic receive offload on
// interface ifname in the calling thread's network namespace and returns
// the state after the call.
func ethtoolGRO(ifname string, set *bool) (bool, error) {
	return ethtoolFeature(ifname, "gro", ethtoolGGRO, ethtoolSGRO, set)
}

// SetGRO turns generic receive offload on or off on the host's veth and
// checks that it took. A kernel Homa stack needs it on: HomaModule's
// receive path takes a DATA packet's offset from its segment header, where
// every first transmission on the wire carries the sentinel -1 with the
// offset in common.sequence, and only its GRO handler (homa_offload.c
// homa_gro_receive) puts the offset there; veth leaves GRO off, so without
// it the module discards every such packet (homa_add_packet: offset -1)
// and a lab run of the suite against it did not get past its first RPC.
// A real NIC has GRO on by default.
func (h *Host) SetGRO(on bool) error {
	return h.Do(func() error {
		got, err := ethtoolGRO(h.Ifname, &on)
		if err == nil && got != on {
			err = fmt.Errorf("ethtool -K %s gro %v: gro is still %v", h.Ifname, on, got)
		}
		return err
	})
}

// GRO reports whether generic receive offload is on on the host's veth.
func (h *Host) GRO() (on bool, err error) {
	err = h.Do(func() error {
		on, err = ethtoolGRO(h.Ifname, nil)
		return err
	})
	return on, err
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
