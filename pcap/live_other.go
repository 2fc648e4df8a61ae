//go:build !linux

package pcap

import (
	"errors"
	"time"
)

// LiveOptions configure a live capture socket (Linux only).
type LiveOptions struct {
	SnapLen     int
	BufferBytes int
	Direction   Direction
}

// Live is a live capture (Linux only).
type Live struct{}

// ErrLiveNotSupported is returned by OpenLive outside Linux.
var ErrLiveNotSupported = errors.New("pcap: live capture needs Linux (AF_PACKET)")

// OpenLive returns ErrLiveNotSupported outside Linux.
func OpenLive(string, LiveOptions) (*Live, error) { return nil, ErrLiveNotSupported }

// ReadFrame returns ErrLiveNotSupported.
func (*Live) ReadFrame() ([]byte, time.Time, int, error) {
	return nil, time.Time{}, 0, ErrLiveNotSupported
}

// SetReadDeadline returns ErrLiveNotSupported.
func (*Live) SetReadDeadline(time.Time) error { return ErrLiveNotSupported }

// Stats returns ErrLiveNotSupported.
func (*Live) Stats() (uint64, uint64, error) { return 0, 0, ErrLiveNotSupported }

// Close does nothing.
func (*Live) Close() error { return nil }
