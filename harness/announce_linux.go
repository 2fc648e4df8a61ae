//go:build linux

package harness

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/homatest/homatest/internal/afpacket"
)

// announce sends one gratuitous ARP request (RFC 5227 ARP announcement:
// sender and target address both addr) from interface ifname, which must
// be in the calling thread's network namespace. With permanent neighbour
// entries no host sends ARP, so a learning bridge (the kernel bridge,
// netem's switch) would not learn where a host is until it sent something,
// and would flood every frame to it through all ports until then.
func announce(ifname string, mac net.HardwareAddr, addr netip.Addr) error {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	fd, err := afpacket.Open()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	frame := make([]byte, 0, 42)
	frame = append(frame, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) // broadcast
	frame = append(frame, mac...)
	frame = binary.BigEndian.AppendUint16(frame, unix.ETH_P_ARP)
	frame = binary.BigEndian.AppendUint16(frame, 1)      // hardware type: Ethernet
	frame = binary.BigEndian.AppendUint16(frame, 0x0800) // protocol type: IPv4
	frame = append(frame, 6, 4)                          // address lengths
	frame = binary.BigEndian.AppendUint16(frame, 1)      // request
	ip := addr.As4()
	frame = append(frame, mac...)
	frame = append(frame, ip[:]...)
	frame = append(frame, 0, 0, 0, 0, 0, 0)
	frame = append(frame, ip[:]...)
	sa := &unix.SockaddrLinklayer{Protocol: afpacket.Htons(unix.ETH_P_ARP), Ifindex: ifc.Index, Halen: 6}
	copy(sa.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if err := unix.Sendto(fd, frame, 0, sa); err != nil {
		return fmt.Errorf("gratuitous ARP on %s: %w", ifname, err)
	}
	return nil
}
