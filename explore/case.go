package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Case is one exchange the explorer plays against the IUT: its RPCs, the
// cutoff changes of the tester hosts, and the decisions of the legal-peer
// model that differ from its default (Choices). A case runs the same way
// every time in the simulator: every decision not in Choices takes its
// default.
type Case struct {
	// RPCs are the exchange's RPCs in start order (RPC n of a script is
	// RPCs[n-1]).
	RPCs []RPC `json:"rpcs"`
	// Cutoffs are CUTOFFS changes of the tester hosts: at At, host Host
	// takes new unscheduled cutoffs (and the next cutoff_version), which
	// the IUT learns when its next DATA carries the old version.
	Cutoffs []CutoffChange `json:"cutoffs,omitempty"`
	// Tail is how long the exchange is watched after every RPC has ended
	// (late packets: GRANTs after a message completed, NEED_ACK after an
	// ACK); 0 means the default, DefaultTail ticks.
	Tail time.Duration `json:"tail_ns,omitempty"`
	// Window is how long after the last RPC's start the model may take
	// non-default decisions; after it the peer and the network behave by
	// default, so every RPC must end (0: DefaultWindow ticks).
	Window time.Duration `json:"window_ns,omitempty"`
	// Choices are the non-default decisions, sorted by key.
	Choices []Choice `json:"choices,omitempty"`
}

// DefaultTail is how many IUT timer ticks a case watches after its last
// RPC ended: past resend_ticks, resend_interval and request_ack_ticks
// (HomaModule's 5, 5 and 2) plus two.
const DefaultTail = 14

// DefaultWindow is how many IUT timer ticks after the last RPC's start a
// case perturbs: four RESEND rounds at HomaModule's resend_ticks.
const DefaultWindow = 20

// RPC is one RPC of a case.
type RPC struct {
	// IUTClient says the IUT is the client (a call through the agent to a
	// tester host, which plays the server); otherwise a tester host is
	// the client and the IUT serves it.
	IUTClient bool `json:"iut_client,omitempty"`
	// Host is the tester host (0-based index of the environment's
	// tester hosts).
	Host int `json:"host"`
	// Request and Response are the message lengths in bytes (1..1000000).
	Request  int `json:"request"`
	Response int `json:"response"`
	// Start is when the client starts the RPC, from the case's start.
	Start time.Duration `json:"start_ns"`
}

// CutoffChange is a tester host changing its unscheduled cutoffs (a
// sysctl write in HomaModule, which bumps cutoff_version).
type CutoffChange struct {
	Host    int                     `json:"host"`
	At      time.Duration           `json:"at_ns"`
	Cutoffs [wire.NumCutoffs]uint32 `json:"cutoffs"`
}

// Kind says what a Choice decides.
type Kind uint8

// Choice kinds. Each names a decision point of the legal-peer model and
// the network it plays; the options of each are listed with optionNames.
const (
	// KindOut: the fate of a packet a tester host sends (deliver, drop,
	// duplicate, delay).
	KindOut Kind = iota + 1
	// KindIn: the fate of a packet the IUT sent to a tester host.
	KindIn
	// KindGrant: how far a tester host grants when a DATA arrives.
	KindGrant
	// KindGrantPrio: the priority of that GRANT.
	KindGrantPrio
	// KindResend: whether a tester host's timer skips a RESEND round.
	KindResend
	// KindService: how long a tester server computes before responding.
	KindService
	// KindAbort: a tester client aborts (or a tester server forgets) the
	// RPC after its k-th packet from the IUT.
	KindAbort
	// KindNeedAck: extra ticks a tester server waits before NEED_ACK.
	KindNeedAck
	// KindTick: the phase of a tester host's timer.
	KindTick
	// KindAck: how a tester client acknowledges a completed RPC.
	KindAck
	// KindBurst: how long a loss lasts once the network drops one of an
	// RPC's packets in one direction (Type 0: to the IUT, 1: from it), or
	// (A > 0: the round's silent ticks) from the IUT as a tester RESEND
	// round goes out: losses come in bursts (a congested queue, a
	// flapping link), which make silences as long as the protocol's
	// timers. With B = 1 (to the IUT only) it is a stall instead: once
	// the network holds one of an RPC's packets long (FateLong,
	// FateMidRound), the RPC's packets its tester host sends for that
	// long after wait in the same queue and arrive no earlier (FIFO), so
	// a sender whose every GRANT is held stalls past its RESEND timer.
	KindBurst
	numKinds
)

var kindNames = [numKinds]string{"", "out", "in", "grant", "grant-prio", "resend", "service", "abort", "need-ack", "tick", "ack", "burst"}

// String returns the kind's script name.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind%d", k)
}

// Key identifies a decision point within a case: its kind, the RPC (1-based
// case index; 0 for a host-level decision, with Host set), and
// kind-specific coordinates: for packet fates the packet type and its
// offset (DATA) or ordinal among the RPC's packets of that type, and B
// the transmission (0 = first); for grants the bytes received.
type Key struct {
	Kind Kind   `json:"kind"`
	RPC  int    `json:"rpc,omitempty"`
	Host int    `json:"host,omitempty"`
	Type uint8  `json:"type,omitempty"`
	A    uint32 `json:"a,omitempty"`
	B    uint32 `json:"b,omitempty"`
}

// Choice is one non-default decision.
type Choice struct {
	Key   Key `json:"key"`
	Value int `json:"value"`
}

// Options of the packet fates (KindOut, KindIn).
const (
	FateDeliver        = iota // default: delivered now
	FateDrop                  // lost
	FateDup                   // delivered now and again 20 µs later
	FateDelay                 // delivered 30 µs later (reordered with what follows)
	FateTickBefore            // delivered 1 µs before the IUT's next timer tick
	FateTickAfter             // delivered 1 µs after the IUT's next timer tick
	FateDeadlineBefore        // delivered 1 µs before the IUT's RESEND deadline for the RPC
	FateDeadlineAfter         // delivered 1 µs after it
	FateLong                  // delivered resend_ticks+1 ticks later
	FateMidRound              // delivered 3/4 of resend_interval after the IUT's RESEND deadline for the RPC (its RESEND is out, its next not yet)
	numFates
)

var fateNames = [numFates]string{"deliver", "drop", "dup", "delay", "tick-before", "tick-after", "deadline-before", "deadline-after", "long", "mid-round"}

// Options of KindGrant.
const (
	GrantFull   = iota // default: to received + window (or the message end)
	GrantNone          // no GRANT now (only while granted bytes are still on their way)
	GrantOne           // one byte more than granted so far
	GrantPacket        // one packet more than granted so far
	GrantLength        // to the message end, if the window allows
	numGrants
)

var grantNames = [numGrants]string{"full", "none", "one-byte", "one-packet", "to-end"}

// Options of KindService (how long a tester server computes).
const (
	ServiceNone         = iota // default: responds at once
	ServiceTick                // one tick
	ServiceBeforeResend        // 10 µs short of resend_ticks ticks
	ServiceAfterResend         // 10 µs past resend_ticks ticks
	ServiceLong                // 2·resend_ticks+1 ticks
	numServices
)

var serviceNames = [numServices]string{"none", "tick", "before-resend", "after-resend", "long"}

// Options of KindTick: a tester host timer's passes come at the IUT's
// (after them at the same instant), 1 µs after, half a tick after, or
// 1 µs before them (so a RESEND of the tester can beat the IUT's own).
var tickPhases = [...]time.Duration{0, time.Microsecond, -1, -2} // -1: half a tick, -2: 1 µs before

// Options of KindAck (how a tester client acknowledges).
const (
	AckPending  = iota // default: queued for the next DATA or ACK to that host
	AckNoAnswer        // the first NEED_ACK for the RPC goes unanswered
	numAcks
)

var ackNames = [numAcks]string{"pending", "ignore-first-need-ack"}

// Options of KindBurst: a burst lasts for this many IUT timer ticks, as
// multiples of resend_ticks plus a tick: shorter than one RESEND round,
// one round, two, four (past response_timeout at HomaModule's defaults),
// six (a peer silent for a whole response_timeout after its peer's first
// RESEND).
var burstTicks = [...][2]int{{0, 0}, {0, 2}, {1, 1}, {2, 1}, {4, 2}, {6, 2}} // {resend_ticks multiple, extra ticks}

var burstNames = [...]string{"0", "2", "resend_ticks+1", "2*resend_ticks+1", "4*resend_ticks+2", "6*resend_ticks+2"}

// options returns how many options kind k has (the value range of its
// Choices is 1..options-1; 0 is the default).
func (k Kind) options() int {
	switch k {
	case KindOut, KindIn:
		return numFates
	case KindGrant:
		return numGrants
	case KindGrantPrio:
		return 2 // 0: SRPT rank priority; 1: level 0
	case KindResend:
		return 2 // 1: skip this round
	case KindService:
		return numServices
	case KindAbort:
		return 9 // after the k-th packet from the IUT, k = 1..8
	case KindNeedAck:
		return 4 // 1..3 more ticks
	case KindTick:
		return len(tickPhases)
	case KindAck:
		return numAcks
	case KindBurst:
		return len(burstTicks)
	}
	return 1
}

// optionName names value v of kind k in scripts.
func (k Kind) optionName(v int) string {
	switch {
	case (k == KindOut || k == KindIn) && v < numFates:
		return fateNames[v]
	case k == KindGrant && v < numGrants:
		return grantNames[v]
	case k == KindService && v < numServices:
		return serviceNames[v]
	case k == KindAck && v < numAcks:
		return ackNames[v]
	case k == KindBurst && v > 0 && v < len(burstTicks):
		return fmt.Sprintf("%s ticks", burstNames[v])
	case k == KindGrantPrio && v == 1:
		return "level-0"
	case k == KindResend && v == 1:
		return "skip"
	}
	return fmt.Sprint(v)
}

// String renders a choice on one line, as scripts print it.
func (c Choice) String() string {
	k := c.Key
	var b strings.Builder
	b.WriteString(k.Kind.String())
	if k.RPC > 0 {
		fmt.Fprintf(&b, " rpc %d", k.RPC)
	} else {
		fmt.Fprintf(&b, " host %d", k.Host)
	}
	switch {
	case k.Kind == KindBurst && k.Type == 0 && k.B == 1:
		b.WriteString(" to the IUT, held")
	case k.Kind == KindBurst && k.Type == 0:
		b.WriteString(" to the IUT")
	case k.Kind == KindBurst:
		b.WriteString(" from the IUT")
	case k.Type != 0:
		fmt.Fprintf(&b, " %s", wire.PacketType(k.Type))
	}
	if k.A != 0 || k.B != 0 && k.Kind != KindBurst {
		fmt.Fprintf(&b, " %d/%d", k.A, k.B)
	}
	fmt.Fprintf(&b, ": %s", k.Kind.optionName(c.Value))
	return b.String()
}

func keyLess(a, b Key) int {
	switch {
	case a.RPC != b.RPC:
		return a.RPC - b.RPC
	case a.Host != b.Host:
		return a.Host - b.Host
	case a.Kind != b.Kind:
		return int(a.Kind) - int(b.Kind)
	case a.Type != b.Type:
		return int(a.Type) - int(b.Type)
	case a.A != b.A:
		if a.A < b.A {
			return -1
		}
		return 1
	case a.B != b.B:
		if a.B < b.B {
			return -1
		}
		return 1
	}
	return 0
}

// clone returns a deep copy of c.
func (c *Case) clone() *Case {
	d := *c
	d.RPCs = slices.Clone(c.RPCs)
	d.Cutoffs = slices.Clone(c.Cutoffs)
	d.Choices = slices.Clone(c.Choices)
	return &d
}

// sortChoices orders the choices by key.
func (c *Case) sortChoices() {
	slices.SortFunc(c.Choices, func(a, b Choice) int { return keyLess(a.Key, b.Key) })
}

// bytes is the case's total message bytes (a shrinking measure).
func (c *Case) bytes() int {
	n := 0
	for _, r := range c.RPCs {
		n += r.Request + r.Response
	}
	return n
}

// tail returns the case's tail for timer tick tick.
func (c *Case) tail(tick time.Duration) time.Duration {
	if c.Tail > 0 {
		return c.Tail
	}
	return DefaultTail * tick
}
