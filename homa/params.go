package homa

import (
	"fmt"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Params are a host's protocol parameters, named after HomaModule's
// sysctls (net.homa.<name>). DefaultParams gives HomaModule main's values.
type Params struct {
	// UnschedBytes is unsched_bytes: bytes sent before any GRANT.
	UnschedBytes int
	// MaxIncoming is max_incoming: bound in bytes on granted but not yet
	// received bytes over all incoming messages.
	MaxIncoming int
	// MaxOvercommit is max_overcommit: messages granted at once.
	MaxOvercommit int
	// MaxRPCsPerPeer is max_rpcs_per_peer: messages from one sending host
	// granted at once. This implementation grants by SRPT alone, with no
	// per-host limit, as HomaModule main does since 3daedc3 (2026-05): 0
	// is the only value it takes. It is a parameter so that its hello
	// tells the checker so (the linux profile's default, 1, is what
	// earlier HomaModule did).
	MaxRPCsPerPeer int
	// Window is the grant window in bytes; 0 = dynamic,
	// MaxIncoming/(active+1) (HomaModule homa_grant.c).
	Window int
	// NumPriorities is num_priorities (1..8).
	NumPriorities int
	// MaxSchedPrio is max_sched_prio: the highest scheduled level.
	MaxSchedPrio int
	// UnschedCutoffs is unsched_cutoffs: entry i is the largest message
	// length in bytes that uses unscheduled level i (entry 0: infinite).
	UnschedCutoffs [8]uint32
	// CutoffVersion is cutoff_version of this host's cutoffs.
	CutoffVersion uint16
	// FIFOGrantIncrement is fifo_grant_increment: bytes a FIFO grant adds to
	// the oldest incoming message; 0 disables FIFO grants.
	FIFOGrantIncrement int
	// GrantFIFOFraction is grant_fifo_fraction in thousandths: the share of
	// the link that FIFO grants authorise (HomaModule homa_grant.c).
	GrantFIFOFraction int
	// LinkMbps is link_mbps, used to space FIFO grants when LinkRate is 0.
	LinkMbps int
	// Tick is the timer period (1 ms in HomaModule).
	Tick time.Duration
	// ResendTicks is resend_ticks: silent ticks before the first RESEND.
	ResendTicks int
	// ResendInterval is resend_interval: ticks between RESEND rounds.
	ResendInterval int
	// TimeoutTicks is timeout_ticks: silent ticks before an RPC aborts.
	TimeoutTicks int
	// RequestAckTicks is request_ack_ticks: ticks after a response was
	// sent before the server asks for an ACK.
	RequestAckTicks int
	// MTU of the host's link in bytes (1500): max_seg_data is
	// MTU - IP header - 56.
	MTU int
	// LinkRate is the host's uplink in bit/s for the pacer; 0 sends as fast
	// as the transport accepts.
	LinkRate int64
	// PollUsecs is poll_usecs: how long in µs a goroutine waiting in
	// Call or Receive busy-polls a PullTransport (yielding between polls)
	// before it sleeps until packets come (HomaModule homa_interest.c
	// homa_interest_wait; 50 µs there). 0 never polls. It changes no
	// packet, only CPU time against wake-up latency; Machine ignores it.
	// DefaultParams leaves it 0, unlike HomaModule: on a shared machine
	// (the suite's usual home) polling cost a lone caller's median latency
	// 0.89x and saved CPU only with many callers (docs/performance.md, echo5).
	PollUsecs int
	// DeferMinBytes is defer_min_bytes (1000): a message with at most this
	// many bytes left to send leaves past the pacer, however backlogged
	// the link (homa_xmit_data checks the NIC queue only for messages with
	// more left); its packets still count toward the link's backlog.
	DeferMinBytes int
}

// DefaultParams returns HomaModule main's defaults (homa_utils.c,
// homa_grant.c) with the 1500-byte MTU and no pacing.
func DefaultParams() Params {
	return Params{
		UnschedBytes: 40000, MaxIncoming: 400000, MaxOvercommit: 8, Window: 0,
		NumPriorities: 8, MaxSchedPrio: 3,
		UnschedCutoffs: [8]uint32{0, 0, 0, 0, 1000000, 15000, 2800, 200}, CutoffVersion: 1,
		FIFOGrantIncrement: 50000, GrantFIFOFraction: 50, LinkMbps: 25000,
		Tick: time.Millisecond, ResendTicks: 5, ResendInterval: 5, TimeoutTicks: 100, RequestAckTicks: 2,
		MTU: 1500, DeferMinBytes: 1000,
	}
}

// Validate checks the parameters for values HomaModule would reject.
func (p *Params) Validate() error {
	switch {
	case p.NumPriorities < 1 || p.NumPriorities > 8:
		return fmt.Errorf("homa: num_priorities %d not in 1..8", p.NumPriorities)
	case p.MaxSchedPrio < 0:
		return fmt.Errorf("homa: max_sched_prio %d: want 0 or more", p.MaxSchedPrio)
	case p.MaxSchedPrio >= p.NumPriorities:
		return fmt.Errorf("homa: max_sched_prio %d must be below num_priorities %d: %s", p.MaxSchedPrio, p.NumPriorities, wire.MaxSchedPrioFix(p.MaxSchedPrio, p.NumPriorities))
	case p.UnschedBytes < 1:
		return fmt.Errorf("homa: unsched_bytes %d: want 1 or more", p.UnschedBytes)
	case p.MaxIncoming < 1:
		return fmt.Errorf("homa: max_incoming %d: want 1 or more", p.MaxIncoming)
	case p.Window == 0 && p.MaxIncoming < 2:
		// homa_grant_update_sysctl_deps: windows[n] = max_incoming/(n+1).
		return fmt.Errorf("homa: max_incoming %d with window 0 (dynamic: max_incoming/(messages+1)) grants no byte past unsched_bytes, so no longer message could complete: set max_incoming to 2 or more, or window to 1 or more", p.MaxIncoming)
	case p.CutoffVersion == 0:
		// homa_peer_alloc gives a peer version 0 until its CUTOFFS come; a
		// host's own version starts at 1 (homa_init) and DATA carrying 0
		// draws CUTOFFS from every receiver.
		return fmt.Errorf("homa: cutoff_version 0 is what a host holds for a peer whose cutoffs it never got (its own starts at 1): set cutoff_version to 1..65535")
	case p.MaxOvercommit < 1:
		return fmt.Errorf("homa: max_overcommit %d: want 1 or more", p.MaxOvercommit)
	case p.Tick < time.Microsecond || p.Tick > time.Second:
		// A tick shorter than a full packet takes on a 10 Gbit/s link
		// only spins the timer; one longer than a second holds a
		// conformance spec (up to 1500 ticks) for hours. HomaModule
		// ticks every 1 ms.
		return fmt.Errorf("homa: tick %v is outside 1µs..1s (tick_ns %d; HomaModule's timer ticks every 1ms)", p.Tick, p.Tick.Nanoseconds())
	case p.ResendTicks < 1 || p.ResendInterval < 1 || p.RequestAckTicks < 1:
		return fmt.Errorf("homa: resend_ticks %d, resend_interval %d and request_ack_ticks %d must each be at least 1", p.ResendTicks, p.ResendInterval, p.RequestAckTicks)
	case p.TimeoutTicks < p.ResendTicks:
		fix := fmt.Sprintf("set timeout_ticks to %d or more", p.ResendTicks)
		if p.TimeoutTicks >= 1 { // resend_ticks cannot go below 1
			fix += fmt.Sprintf(", or resend_ticks to %d or less", p.TimeoutTicks)
		}
		return fmt.Errorf("homa: timeout_ticks %d is below resend_ticks %d (an RPC would time out before its first RESEND): %s",
			p.TimeoutTicks, p.ResendTicks, fix)
	case p.MaxRPCsPerPeer != 0:
		return fmt.Errorf("homa: max_rpcs_per_peer %d: only 0 (no per-host grant limit, HomaModule main since 3daedc3) is implemented", p.MaxRPCsPerPeer)
	case p.MTU < 576 || p.MTU > 65535:
		return fmt.Errorf("homa: MTU %d not in 576..65535", p.MTU)
	case p.PollUsecs < 0:
		return fmt.Errorf("homa: poll_usecs %d is negative", p.PollUsecs)
	}
	return nil
}

// PriosChanged makes UnschedCutoffs and MaxSchedPrio consistent with
// NumPriorities as HomaModule does whenever num_priorities or
// unsched_cutoffs is written (homa_utils.c homa_prios_changed): entries
// at or above num_priorities become 0, entry 0 INT_MAX (level 0 takes
// what no other level does), and max_sched_prio is one below the highest
// level whose cutoff holds a message of HOMA_MAX_MESSAGE_LENGTH (0 if
// none does).
func (p *Params) PriosChanged() {
	p.UnschedCutoffs[0] = 1<<31 - 1
	for i := len(p.UnschedCutoffs) - 1; ; i-- {
		if i >= p.NumPriorities {
			p.UnschedCutoffs[i] = 0
			continue
		}
		if i == 0 {
			p.MaxSchedPrio = 0
			return
		}
		if p.UnschedCutoffs[i] >= wire.MaxMessageLength {
			p.MaxSchedPrio = i - 1
			return
		}
	}
}

// maxSegData returns the data bytes per DATA packet (max_seg_data).
func (p *Params) maxSegData(ipv6 bool) int {
	if ipv6 {
		return p.MTU - 40 - 56
	}
	return p.MTU - 20 - 56
}

// highPriority returns the next-to-highest priority level, which FIFO
// grants use: num_priorities-2, or 0 with at most two levels (HomaModule
// homa_impl.h homa_high_priority).
func (p *Params) highPriority() uint8 {
	if p.NumPriorities <= 2 {
		return 0
	}
	return uint8(p.NumPriorities - 2)
}

// fifoInterval returns the time between FIFO grants: increment·8 bits at
// grant_fifo_fraction of the link (320 µs with the defaults at 25 Gbit/s;
// homa_grant_update_sysctl_deps), or 0 when FIFO grants are off.
func (p *Params) fifoInterval() time.Duration {
	if p.FIFOGrantIncrement <= 0 || p.GrantFIFOFraction <= 0 {
		return 0
	}
	bps := p.LinkRate
	if bps <= 0 {
		bps = int64(p.LinkMbps) * 1e6
	}
	if bps <= 0 {
		return 0
	}
	share := bps * int64(p.GrantFIFOFraction) / 1000
	return time.Duration(int64(p.FIFOGrantIncrement) * 8 * int64(time.Second) / share)
}

// ParamsForLink returns DefaultParams adapted to a link of bps bit/s, as
// HomaModule's lab configuration (cloudlab/bin/config) does: 10 Gbit/s →
// unsched_bytes 30000, max_incoming 400000; 25 Gbit/s → 60000, 480000;
// 100 Gbit/s → 60000, 1600000 (the nearest row is used above 10 Gbit/s).
// Below 10 Gbit/s both scale with the rate from the 10 Gbit/s row (they
// are about one and a dozen round trips of bytes), never below one and
// eight full packets, and so does fifo_grant_increment (50000 B at 10
// Gbit/s and above; one full packet at least): a FIFO grant larger than
// max_incoming would hold the whole incoming budget by itself. LinkRate is
// set to bps, so the pacer and the FIFO grant interval follow the link.
func ParamsForLink(bps int64) Params {
	p := DefaultParams()
	p.LinkRate = bps
	seg := p.maxSegData(false)
	switch {
	case bps >= 60e9:
		p.UnschedBytes, p.MaxIncoming = 60000, 1600000
	case bps >= 17e9:
		p.UnschedBytes, p.MaxIncoming = 60000, 480000
	case bps >= 10e9:
		p.UnschedBytes, p.MaxIncoming = 30000, 400000
	default:
		p.UnschedBytes = max(seg, int(int64(30000)*bps/10e9))
		p.MaxIncoming = max(8*seg, int(int64(400000)*bps/10e9))
		p.FIFOGrantIncrement = max(seg, int(int64(p.FIFOGrantIncrement)*bps/10e9))
	}
	return p
}
