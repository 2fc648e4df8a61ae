package afpacket

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Open opens an AF_PACKET raw socket, non-blocking and close-on-exec, in
// the calling thread's network namespace. Its protocol is 0, so it
// receives nothing until Bind: no frame of another interface slips in
// between socket and bind, and none reaches the socket's queue before a
// ring (NewSlotRing, NewBlockRing) and filters are set up. Sending needs
// no bind. The error says when CAP_NET_RAW is missing.
func Open() (fd int, err error) {
	fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("AF_PACKET socket: %w (needs CAP_NET_RAW)", err)
	}
	return fd, nil
}

// Bind binds socket fd to the interface with index ifindex for frames of
// every protocol (ETH_P_ALL); the socket receives from then on.
func Bind(fd, ifindex int) error {
	return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: Htons(unix.ETH_P_ALL), Ifindex: ifindex})
}

// Htons returns v in network byte order, as sockaddr_ll's protocol field
// (an EtherType) is given to the kernel.
func Htons(v uint16) uint16 { return v<<8 | v>>8 }
