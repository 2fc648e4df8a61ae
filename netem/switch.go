package netem

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// SwitchConfig configures StartSwitch.
type SwitchConfig struct {
	// Ports are the switch ports: Name is an existing interface inside the
	// switch namespace (e.g. the switch end of a host's veth), Link the
	// impairments of frames sent out of it. At least two.
	Ports []Port `yaml:"ports" json:"ports"`
	// Seed seeds every random choice (PCG, one stream per port and purpose).
	Seed uint64 `yaml:"seed" json:"seed"`
	// Plan is the fault plan (nil for none).
	Plan *Plan `yaml:"plan,omitempty" json:"plan,omitempty"`
	// Record, if set, receives a pcapng capture of every frame the switch
	// forwarded (on the egress port's interface, at its departure time) and
	// dropped, with a comment on each dropped or altered frame naming the
	// reason or plan rule. RecordPath does the same into a new file.
	Record     io.Writer `yaml:"-" json:"-"`
	RecordPath string    `yaml:"record,omitempty" json:"record,omitempty"`
	// SocketBuffer is each AF_PACKET socket's receive and send buffer in
	// bytes (0 means DefaultSocketBuffer); with the receive ring, the
	// receive buffer only holds frames larger than a ring slot.
	SocketBuffer int `yaml:"socket_buffer,omitempty" json:"socket_buffer,omitempty"`
	// RxRing is the size in bytes of each port's receive ring (0 means
	// DefaultRxRing): the frames that can wait for the forwarding thread
	// before the kernel drops them (counted as DropRing).
	RxRing int `yaml:"rx_ring,omitempty" json:"rx_ring,omitempty"`
	// Spin is how close to a departure time the forwarding thread stops
	// sleeping in ppoll and polls without blocking, and how long after the
	// last frame it received it goes on polling the receive rings before
	// it sleeps (0 means DefaultSpin; negative disables spinning). Kernel
	// timers wake 40-60 µs late on a busy VM, so spinning is what makes
	// 1 Gbit/s pacing exact; and a thread woken for every frame of a
	// stream spends more time switching than forwarding.
	Spin time.Duration `yaml:"spin,omitempty" json:"spin_ns,omitempty"`
}

// DefaultSpin is the default SwitchConfig.Spin.
const DefaultSpin = 100 * time.Microsecond

// ErrNotSupported is returned by the backends on systems without the
// needed kernel interfaces (anything but Linux).
var ErrNotSupported = errors.New("netem: not supported on this system (needs Linux)")

// validate checks the config without touching the system.
func (c *SwitchConfig) validate() error {
	if len(c.Ports) < 2 {
		return fmt.Errorf("netem: switch needs at least 2 ports, have %d", len(c.Ports))
	}
	for i := range c.Ports {
		if err := c.Ports[i].Link.Validate(); err != nil {
			return fmt.Errorf("port %s: %w", c.Ports[i].Name, err)
		}
	}
	if c.Record != nil && c.RecordPath != "" {
		return errors.New("netem: set Record or RecordPath, not both")
	}
	if c.SocketBuffer < 0 {
		return fmt.Errorf("netem: socket_buffer = %d: want >= 0", c.SocketBuffer)
	}
	if c.RxRing < 0 {
		return fmt.Errorf("netem: rx_ring = %d: want >= 0", c.RxRing)
	}
	if c.Plan != nil {
		return c.Plan.Validate()
	}
	return nil
}
