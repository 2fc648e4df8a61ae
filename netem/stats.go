package netem

import "time"

// DropReason says why the switch dropped a frame.
type DropReason uint8

// Drop reasons.
const (
	// DropBuffer: the egress buffer (LinkConfig.BufferBytes) was full (tail drop).
	DropBuffer DropReason = iota
	// DropLoss: the loss model (LinkConfig.Loss) chose the frame.
	DropLoss
	// DropPlan: a fault-plan rule with action drop fired.
	DropPlan
	// DropCorrupt: the frame was corrupted with CorruptMode "drop".
	DropCorrupt
	// DropMTU: the IP packet was larger than LinkConfig.MTU.
	DropMTU
)

// String returns "buffer", "loss", "plan", "corrupt" or "mtu".
func (r DropReason) String() string {
	switch r {
	case DropBuffer:
		return "buffer"
	case DropLoss:
		return "loss"
	case DropPlan:
		return "plan"
	case DropCorrupt:
		return "corrupt"
	case DropMTU:
		return "mtu"
	}
	return "unknown"
}

// DropCounts counts dropped frames by reason.
type DropCounts struct {
	Buffer  uint64 `json:"buffer"`
	Loss    uint64 `json:"loss"`
	Plan    uint64 `json:"plan"`
	Corrupt uint64 `json:"corrupt"`
	MTU     uint64 `json:"mtu"`
}

func (d *DropCounts) add(r DropReason) {
	switch r {
	case DropBuffer:
		d.Buffer++
	case DropLoss:
		d.Loss++
	case DropPlan:
		d.Plan++
	case DropCorrupt:
		d.Corrupt++
	case DropMTU:
		d.MTU++
	}
}

// Total is the sum over all reasons.
func (d DropCounts) Total() uint64 { return d.Buffer + d.Loss + d.Plan + d.Corrupt + d.MTU }

func (d *DropCounts) sum(o DropCounts) {
	d.Buffer += o.Buffer
	d.Loss += o.Loss
	d.Plan += o.Plan
	d.Corrupt += o.Corrupt
	d.MTU += o.MTU
}

// PortStats are the counters of one switch port. Rx counts frames that
// entered by the port; everything else is about the port's egress side.
type PortStats struct {
	Name     string `json:"name"`
	RxFrames uint64 `json:"rx_frames"`
	RxBytes  uint64 `json:"rx_bytes"`
	// TxFrames and TxBytes: frames handed to the port's interface.
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	// TxErrors: frames the interface refused (send error).
	TxErrors uint64 `json:"tx_errors"`
	// RxKernelDrops: frames the kernel dropped before the switch read
	// them, because the port's socket buffer was full (AF_PACKET
	// PACKET_STATISTICS tp_drops): the switch did not keep up.
	RxKernelDrops uint64 `json:"rx_kernel_drops"`
	// RxErrors: frames the kernel queued but could not copy out (recvmmsg
	// failed for them, e.g. EFAULT on skbs HomaModule's GRO built); each
	// is skipped and forwarding goes on. FirstRxError is the first error.
	RxErrors     uint64 `json:"rx_errors,omitempty"`
	FirstRxError string `json:"first_rx_error,omitempty"`
	// RxSegmented: GSO super-frames (larger than the port's MTU) split into
	// MTU-sized frames on arrival, as a NIC segments them; RxOversize:
	// such frames the switch cannot segment (not Homa DATA), dropped.
	RxSegmented uint64     `json:"rx_segmented,omitempty"`
	RxOversize  uint64     `json:"rx_oversize,omitempty"`
	Drops       DropCounts `json:"drops"`
	// Duplicated, Corrupted, Reordered (held back by the reorder model),
	// Held (held back by a plan rule) and Delayed (extra plan delay) count
	// frames the port altered.
	Duplicated uint64 `json:"duplicated"`
	Corrupted  uint64 `json:"corrupted"`
	Reordered  uint64 `json:"reordered"`
	Held       uint64 `json:"held"`
	Delayed    uint64 `json:"delayed"`
	// MaxQueueBytes is the largest egress backlog seen, in bytes.
	MaxQueueBytes int `json:"max_queue_bytes"`
}

// Stats are the counters of a switch.
type Stats struct {
	// Frames is the number of frames that entered the switch (all ports).
	Frames uint64 `json:"frames"`
	// Flooded counts frames sent to all other ports (broadcast, multicast
	// or unknown destination MAC).
	Flooded uint64 `json:"flooded"`
	// Filtered counts frames whose destination MAC was learned on the
	// port they came in by (not forwarded, like a bridge).
	Filtered uint64 `json:"filtered"`
	// Drops sums the ports' drop counters.
	Drops DropCounts  `json:"drops"`
	Ports []PortStats `json:"ports"`
	// Hits lists every fault-plan firing in order.
	Hits []Hit `json:"hits,omitempty"`
	// ReadLagP50 and ReadLagP99 (socket backend only) are how long frames
	// waited in the kernel's socket buffers before the forwarding thread
	// read them (read time - kernel receive stamp; power-of-two buckets, so
	// up to 2x high). Delay and serialisation count from the receive stamp,
	// but a frame still waiting to be read cannot be prioritised: a p50
	// above a few hundred µs means the forwarding thread is short of CPU
	// and the emulation is not faithful.
	ReadLagP50 time.Duration `json:"read_lag_p50_ns"`
	ReadLagP99 time.Duration `json:"read_lag_p99_ns"`
	// SendLagP50 and SendLagP99 (socket backend only) are how late frames
	// left compared with the departure the serialiser gave them (send time
	// - scheduled departure; same buckets). The schedule itself is exact
	// arithmetic on the link rate; a p50 above one frame time means the
	// forwarding thread could not send as fast as the link rate (short of
	// CPU, or more frames per second than it can forward), so the
	// receivers see the switch's throughput, not the configured rate.
	SendLagP50 time.Duration `json:"send_lag_p50_ns"`
	SendLagP99 time.Duration `json:"send_lag_p99_ns"`
}
