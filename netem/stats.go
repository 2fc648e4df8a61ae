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
	// The reasons below are the socket backend's: loss the kernel caused
	// on the switch's own sockets and interfaces, which the user did not
	// ask for. The receive-side ones are charged to the port the frame
	// came in by, DropSend to the port it was to leave by.

	// DropIngress: the kernel dropped the frame on the switch port before
	// any socket saw it (the interface's rx_dropped: the CPU's receive
	// backlog, net.core.netdev_max_backlog, was full, or the frame was
	// larger than the port's MTU).
	DropIngress
	// DropRing: the port's receive ring was full (AF_PACKET
	// PACKET_STATISTICS tp_drops): the forwarding thread fell behind.
	DropRing
	// DropUnreadable: a frame larger than a ring slot (a GSO super-frame,
	// queued on the socket as a clone of the skb) that could not be read:
	// recvmsg failed for it (EFAULT: the sender took back the pages the
	// clone shares, as HomaModule does with a reaped RPC's DATA skbs,
	// homa_skb_free_many_tx), or the socket buffer that takes such frames
	// was full.
	DropUnreadable
	// DropOversize: a GSO super-frame larger than the port's MTU that the
	// switch cannot segment (not Homa DATA).
	DropOversize
	// DropSend: the egress interface refused the frame (sendmmsg failed
	// for it, e.g. ENOBUFS when the receiving host's backlog was full).
	DropSend
)

// dropReasons lists every reason in DropCounts order.
var dropReasons = [...]DropReason{DropBuffer, DropLoss, DropPlan, DropCorrupt, DropMTU, DropIngress, DropRing, DropUnreadable, DropOversize, DropSend}

// String returns "buffer", "loss", "plan", "corrupt", "mtu", "ingress",
// "ring", "unreadable", "oversize" or "send".
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
	case DropIngress:
		return "ingress"
	case DropRing:
		return "ring"
	case DropUnreadable:
		return "unreadable"
	case DropOversize:
		return "oversize"
	case DropSend:
		return "send"
	}
	return "unknown"
}

// DropCounts counts dropped frames by reason (see DropReason). The first
// five are the emulation's (what the user configured); the rest are the
// socket backend's own losses, zero in the simulator.
type DropCounts struct {
	Buffer     uint64 `json:"buffer"`
	Loss       uint64 `json:"loss"`
	Plan       uint64 `json:"plan"`
	Corrupt    uint64 `json:"corrupt"`
	MTU        uint64 `json:"mtu"`
	Ingress    uint64 `json:"ingress,omitempty"`
	Ring       uint64 `json:"ring,omitempty"`
	Unreadable uint64 `json:"unreadable,omitempty"`
	Oversize   uint64 `json:"oversize,omitempty"`
	Send       uint64 `json:"send,omitempty"`
}

// counter returns the field that counts reason r (nil for an unknown r).
func (d *DropCounts) counter(r DropReason) *uint64 {
	switch r {
	case DropBuffer:
		return &d.Buffer
	case DropLoss:
		return &d.Loss
	case DropPlan:
		return &d.Plan
	case DropCorrupt:
		return &d.Corrupt
	case DropMTU:
		return &d.MTU
	case DropIngress:
		return &d.Ingress
	case DropRing:
		return &d.Ring
	case DropUnreadable:
		return &d.Unreadable
	case DropOversize:
		return &d.Oversize
	case DropSend:
		return &d.Send
	}
	return nil
}

func (d *DropCounts) add(r DropReason) {
	if c := d.counter(r); c != nil {
		*c++
	}
}

// Get returns the count of reason r.
func (d DropCounts) Get(r DropReason) uint64 {
	if c := d.counter(r); c != nil {
		return *c
	}
	return 0
}

// ByReason returns every reason's count keyed by DropReason.String,
// zeros included.
func (d DropCounts) ByReason() map[string]uint64 {
	m := make(map[string]uint64, len(dropReasons))
	for _, r := range dropReasons {
		m[r.String()] = d.Get(r)
	}
	return m
}

// Unrequested is the sum of the socket backend's own losses (DropIngress
// to DropSend): frames lost although no impairment or plan asked for it.
func (d DropCounts) Unrequested() uint64 {
	return d.Ingress + d.Ring + d.Unreadable + d.Oversize + d.Send
}

// Total is the sum over all reasons.
func (d DropCounts) Total() uint64 {
	return d.Buffer + d.Loss + d.Plan + d.Corrupt + d.MTU + d.Unrequested()
}

func (d *DropCounts) sum(o DropCounts) {
	for _, r := range dropReasons {
		*d.counter(r) += o.Get(r)
	}
}

// PortStats are the counters of one switch port. Rx counts frames that
// entered by the port; everything else is about the port's egress side.
type PortStats struct {
	Name     string `json:"name"`
	RxFrames uint64 `json:"rx_frames"`
	RxBytes  uint64 `json:"rx_bytes"`
	// TxFrames and TxBytes: frames the port's interface accepted (those
	// it refused are Drops.Send).
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	// FirstRxError is the first error that made a frame unreadable
	// (Drops.Unreadable): each such frame is skipped and forwarding goes
	// on.
	FirstRxError string `json:"first_rx_error,omitempty"`
	// RxSegmented: GSO super-frames (larger than the port's MTU) split into
	// MTU-sized frames on arrival, as a NIC segments them (those it cannot
	// segment are Drops.Oversize).
	RxSegmented uint64 `json:"rx_segmented,omitempty"`
	// Drops counts the frames lost at this port by reason: the egress
	// side's (buffer, loss, plan, corrupt, mtu, send) and, for frames
	// that came in by this port, the kernel's and the reader's (ingress,
	// ring, unreadable, oversize).
	Drops DropCounts `json:"drops"`
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
	// Drops sums the ports' drop counters: every frame that entered the
	// switch (or reached one of its ports) and was not delivered is
	// counted here under its reason.
	Drops DropCounts  `json:"drops"`
	Ports []PortStats `json:"ports"`
	// Hits lists every fault-plan firing in order.
	Hits []Hit `json:"hits,omitempty"`
	// ReadLagP50 and ReadLagP99 (socket backend only) are how long frames
	// waited in the kernel's socket buffers before the forwarding thread
	// read them (read time - kernel receive stamp, where the read time is
	// the clock read once per batch of up to 256 frames of a port, or the
	// stamp when later; power-of-two buckets, so up to 2x high). Delay and serialisation count from the receive stamp,
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
	// ForwardingCPU (socket backend only) is the CPU time the forwarding
	// thread has run since the switch started (the kernel's per-thread
	// schedstat): with the frames sent, the switch's cost per frame; close
	// to the wall time since a burst began, the thread is the bottleneck.
	ForwardingCPU time.Duration `json:"forwarding_cpu_ns"`
}
