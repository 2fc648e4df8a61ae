//go:build !linux

package netem

import (
	"context"

	"github.com/vishvananda/netns"
)

// Switch is the running user-space switch; only Linux has one.
type Switch struct{}

// StartSwitch returns ErrNotSupported: the switch backend needs Linux
// AF_PACKET sockets and network namespaces.
func StartSwitch(ctx context.Context, ns netns.NsHandle, cfg SwitchConfig) (*Switch, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return nil, ErrNotSupported
}

// Stats returns zero counters.
func (s *Switch) Stats() Stats { return Stats{} }

// Close does nothing.
func (s *Switch) Close() error { return nil }
