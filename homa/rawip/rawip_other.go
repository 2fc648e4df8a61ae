//go:build !linux

package rawip

import (
	"errors"
	"net/netip"
)

// ErrNotSupported: raw IP transport needs Linux.
var ErrNotSupported = errors.New("rawip: raw IP sockets need Linux")

// Transport is unavailable on this platform.
type Transport struct{}

// Open returns ErrNotSupported.
func Open(netip.Addr) (*Transport, error) { return nil, ErrNotSupported }

// OpenProto returns ErrNotSupported.
func OpenProto(netip.Addr, uint8) (*Transport, error) { return nil, ErrNotSupported }

// LocalAddr is unused.
func (*Transport) LocalAddr() netip.Addr { return netip.Addr{} }

// SetHandler is unused.
func (*Transport) SetHandler(func(netip.Addr, uint8, []byte)) {}

// Send returns ErrNotSupported.
func (*Transport) Send(netip.Addr, uint8, []byte) error { return ErrNotSupported }

// Close does nothing.
func (*Transport) Close() error { return nil }

// RecvDrops returns ErrNotSupported.
func (*Transport) RecvDrops() (uint64, error) { return 0, ErrNotSupported }

// SetMark returns ErrNotSupported.
func (*Transport) SetMark(uint32) error { return ErrNotSupported }

// RecvTimestamps is not supported off Linux.
func (*Transport) RecvTimestamps() error { return ErrNotSupported }
