package spec

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Status is the outcome of evaluating a property at one point of a trace.
type Status uint8

const (
	// NotApplicable: the packet is not one the property speaks about.
	NotApplicable Status = iota
	// Passed: the property held.
	Passed
	// Violated: the property failed.
	Violated
	// Inconclusive: the capture cannot tell (e.g. the state needed was not
	// observed, or the capture ended before a deadline).
	Inconclusive
)

// String returns "n/a", "pass", "violation" or "inconclusive".
func (s Status) String() string {
	return [...]string{"n/a", "pass", "violation", "inconclusive"}[s]
}

// Result is the outcome of one evaluation: a status, the timing slack
// used, if any, and for a finding a one-line reason with the numbers
// involved, the frames that show it (besides the current one) and the
// network effect that explains it (Why, Frames, Cause). Build it with Pass,
// Violation, Unsure, Downgrade or Skip, then With and WithSlack.
//
// Result is 24 bytes, three fields, so that the compiler keeps it in
// registers: every rule returns one per packet it judges, and a larger
// struct lives in memory, spilled and copied at every call (measured: a
// quarter of the checker's time on a 1M-packet capture). What only a
// finding has sits behind detail, allocated with the finding's text.
type Result struct {
	Status Status
	Slack  time.Duration
	detail *resultDetail
}

// resultDetail is the part of a Result only findings have.
type resultDetail struct {
	why    string
	frames []int
	cause  Cause
	// alone: see Result.Alone.
	alone bool
	// late: see Result.WithLate.
	late time.Duration
	// since: see Result.WithSince.
	since time.Time
	// early, earlyAt, earlyRef: see Result.WithEarly.
	early    time.Duration
	earlyAt  time.Time
	earlyRef EarlyRef
	// about: see Result.About.
	about *RPCKey
	// ranBefore: see Result.CaptureRanBefore.
	ranBefore bool
	// wants, wantsAfter: see Result.Wants.
	wants      uint16
	wantsAfter time.Time
}

// Why returns the one-line reason ("" for a plain pass).
func (r Result) Why() string {
	if r.detail == nil {
		return ""
	}
	return r.detail.why
}

// Frames returns the frames that show the result, besides the current one.
func (r Result) Frames() []int {
	if r.detail == nil {
		return nil
	}
	return r.detail.frames
}

// Cause, for an inconclusive result, is the network effect between the
// capture point and a host that explains what would otherwise be a
// violation (see Network); Report.Downgrades counts these.
func (r Result) Cause() Cause {
	if r.detail == nil {
		return ""
	}
	return r.detail.cause
}

// Pass returns a passing Result.
func Pass() Result { return Result{Status: Passed} }

// Violation returns a violated Result with a formatted reason.
func Violation(format string, a ...any) Result {
	return Result{Status: Violated, detail: &resultDetail{why: fmt.Sprintf(format, a...)}}
}

// Unsure returns an inconclusive Result with a formatted reason.
func Unsure(format string, a ...any) Result {
	return Result{Status: Inconclusive, detail: &resultDetail{why: fmt.Sprintf(format, a...)}}
}

// Downgrade returns an inconclusive Result explained by cause, shown by
// ev: what would be a violation is legal if the network did what the
// capture shows it does between the capture point and a host.
func Downgrade(cause Cause, ev Evidence, format string, a ...any) Result {
	return Result{Status: Inconclusive, detail: &resultDetail{cause: cause, why: fmt.Sprintf(format, a...) + fmt.Sprintf(" (%s: %s)", cause, ev), frames: []int{ev.Frame}}}
}

// Skip is the NotApplicable Result.
var Skip = Result{}

// edit returns r with a copy of its detail changed by f: a Result is a
// value, and others may share the detail it points to.
func (r Result) edit(f func(*resultDetail)) Result {
	d := resultDetail{}
	if r.detail != nil {
		d = *r.detail
	}
	f(&d)
	r.detail = &d
	return r
}

// With returns r with extra frames attached (r itself is unchanged).
func (r Result) With(frames ...int) Result {
	return r.edit(func(d *resultDetail) {
		d.frames = append(d.frames[:len(d.frames):len(d.frames)], frames...)
	})
}

// About returns r noting that it rests on what the capture showed of RPC
// k besides the finding's own RPC (the RPC an ack names): Finding.Also.
func (r Result) About(k RPCKey) Result {
	return r.edit(func(d *resultDetail) {
		d.about = &k
	})
}

// Alone returns r marked as resting on no packet the capture lacks: the
// violation stands whatever the capture missed (before it began, or
// dropped), as every violation of a Rule.Alone rule does. A rule whose
// violations can sometimes rest on an unseen packet marks the others so
// (e.g. HOMA-PRIO-002 at a level no cutoffs could give).
func (r Result) Alone() Result {
	return r.edit(func(d *resultDetail) {
		d.alone = true
	})
}

// alone reports whether r was marked with Alone.
func (r Result) alone() bool { return r.detail != nil && r.detail.alone }

// CaptureRanBefore returns r marked as resting on packets that show the
// capture ran before the RPC's packets it judges (a GRANT seen before the
// message's first DATA): a capture that began while the RPC was under
// way does not excuse it, though one that dropped packets still may.
func (r Result) CaptureRanBefore() Result {
	return r.edit(func(d *resultDetail) {
		d.ranBefore = true
	})
}

// ranBefore reports whether r was marked with CaptureRanBefore.
func (r Result) ranBefore() bool { return r.detail != nil && r.detail.ranBefore }

// Wants returns r, a violation of a rule that judges a packet's level
// (Each.JudgesLevel), naming the levels its sender may have wanted (bit
// p for level p): the Checker excuses another packet of the same socket
// that carried one of them as the IPv4 TOS race (CauseTOSRace). after,
// if set, is when the capture saw the packet that made the sender send
// this one (the RPC_UNKNOWN a restart answers, the RESEND a
// retransmission answers): a packet of the socket the capture saw before
// that had left the sender before this one was built, so the two did not
// race.
func (r Result) Wants(levels uint16, after time.Time) Result {
	return r.edit(func(d *resultDetail) {
		d.wants, d.wantsAfter = levels, after
	})
}

// wantedAfter returns the time Wants named (zero: none).
func (r Result) wantedAfter() time.Time {
	if r.detail == nil {
		return time.Time{}
	}
	return r.detail.wantsAfter
}

// wanted returns the levels Wants named (0: none).
func (r Result) wanted() uint16 {
	if r.detail == nil {
		return 0
	}
	return r.detail.wants
}

// WithSlack returns r noting the timing slack used.
func (r Result) WithSlack(d time.Duration) Result { r.Slack = d; return r }

// WithLate returns r noting that its event came d past its bound (for a
// missed deadline, at least d: the packet that showed the miss came d past
// it). A measured stall excuses such a finding only if it could account
// for d (stall.ExplainingAt); a plain r is unchanged.
func (r Result) WithLate(d time.Duration) Result {
	if r.detail == nil || d <= 0 {
		return r
	}
	return r.edit(func(x *resultDetail) {
		x.late = d
	})
}

// timingOf returns r, which stands for timing finding o (a Downgrade of
// it), with o's tolerance, lateness, earliness and silence start: a stall
// explains r only as it would o.
func (r Result) timingOf(o Result) Result {
	r = r.WithSlack(o.Slack).WithLate(o.Late()).WithSince(o.Since())
	early, at, ref := o.Early()
	return r.WithEarly(early, at, ref)
}

// LateAtMost returns r, a timing finding, noting that its event came at
// most d past its bound: the smaller of d and what r already says (a
// finding two readings explain, as a late processing of news and the
// trace's timeout inference, needs a stall to account for only one of
// them). A plain r, or d <= 0, leaves r unchanged.
func (r Result) LateAtMost(d time.Duration) Result {
	if l := r.Late(); l > 0 && l <= d {
		return r
	}
	return r.WithLate(d)
}

// WithSince returns r noting that the time it judges began at t (a
// silence's start) before its frames: a measured stall anywhere from t on
// may explain it (stall.ExplainingAt), as one that stopped a host's timer
// during a silence delays what the timer does at its end. A plain r is
// unchanged.
func (r Result) WithSince(t time.Time) Result {
	if r.detail == nil {
		return r
	}
	return r.edit(func(x *resultDetail) {
		x.since = t
	})
}

// Since is when the time r judges began (WithSince; zero: at its frames).
func (r Result) Since() time.Time {
	if r.detail == nil {
		return time.Time{}
	}
	return r.detail.since
}

// EarlyRef says what a too-soon event (Result.WithEarly) is measured from,
// which decides whether a measured stall can explain it: a stall delays
// a host or a packet, it never makes a timer pass come sooner (HomaModule
// homa_timer and the ref's Machine run one pass for the ticks a stall
// skipped).
type EarlyRef string

const (
	// EarlyFromPeer: a packet the host received. A stall between its
	// arrival and the event may have kept the host from processing it
	// before its timer decided, so the host's silence began earlier.
	EarlyFromPeer EarlyRef = "peer"
	// EarlyFromOwn: a packet the host sent. A stall before it reached the
	// capture point (the host's send path, a softirq waiting for a CPU)
	// may have delayed it by as much as the stall lost.
	EarlyFromOwn EarlyRef = "own"
	// EarlyFromStart: the RPC's first packet, received: the host created
	// the RPC only once it processed that packet, so no stall explains it.
	EarlyFromStart EarlyRef = "start"
)

// WithEarly returns r noting that its event came short too soon after its
// reference, the packet at ref of kind kind (EarlyRef): a measured stall
// excuses such a finding only as stall.Accounting says for that kind. A
// plain r is unchanged.
func (r Result) WithEarly(short time.Duration, ref time.Time, kind EarlyRef) Result {
	if r.detail == nil || short <= 0 {
		return r
	}
	return r.edit(func(x *resultDetail) {
		x.early, x.earlyAt, x.earlyRef = short, ref, kind
	})
}

// Early returns how much too soon r's event came (WithEarly; 0 when the
// rule does not say), its reference's time and kind.
func (r Result) Early() (time.Duration, time.Time, EarlyRef) {
	if r.detail == nil {
		return 0, time.Time{}, ""
	}
	return r.detail.early, r.detail.earlyAt, r.detail.earlyRef
}

// Late is how far past its bound r's event came (WithLate), 0 when the
// rule does not say.
func (r Result) Late() time.Duration {
	if r.detail == nil {
		return 0
	}
	return r.detail.late
}

// Ctx gives a property the trace state before the current packet.
type Ctx struct {
	// T is the trace (state before the current event is applied).
	T *Trace
	// P are the parameters.
	P *Params
	// Net is what the capture shows of the network between the capture
	// point and the hosts (see Network).
	Net *Network
	// open is the open obligations of the Within rule whose Trigger is
	// being asked (nil otherwise): see Open.
	open map[any]*pending
	// fromStart: the capture began before any RPC in it
	// (Checker.SetCaptureFromStart).
	fromStart bool
	// verify: the Checker verifies its shortcuts (the spec tests): a rule
	// that spares itself work by a bound calls the work too and panics
	// on a difference (boundedPass); bounded counts the answers a bound
	// gave, boundVerified those verification confirmed.
	verify                 bool
	bounded, boundVerified int
}

// startedBefore reports whether RPC r may have begun before the capture
// (RPC.SeenFromStart unset, and no SetCaptureFromStart): what its
// receivers got before the capture's start is unknown.
func (c *Ctx) startedBefore(r *RPC) bool { return !c.fromStart && r != nil && !r.SeenFromStart }

// Open reports whether the Within rule whose Trigger asks has an open
// obligation under key: a trigger with that key is folded into it and
// changes nothing, so the rule may skip building it. It is false outside
// a Trigger.
func (c *Ctx) Open(key any) bool {
	_, ok := c.open[key]
	return ok
}

// Property is the executable form of a rule: one of Each, Within, After or
// AtMost.
type Property interface{ form() string }

// Each is a per-packet predicate: Check runs for every event whose type is
// in Types (all well-formed packets if Types is empty; malformed ones too if
// Malformed is set).
type Each struct {
	Types     []wire.PacketType
	Malformed bool
	// Payload says that Check reads DATA payload bytes (Event.Payload):
	// the trace then keeps payload hashes (Message.payload), and only then.
	Payload bool
	// ICMP makes Check see ICMP events (Event.ICMP set) too.
	ICMP bool
	// Needs declares conditions without which Check returns NotApplicable
	// on a well-formed packet: the Checker does not call Check on one
	// that misses any of them (see Gate). Tests verify the declaration
	// (verifyPrefilters).
	Needs Gate
	// Partial says Check judges a packet from the readable part of a
	// header the snap length cut after the common header (Event.Partial):
	// it reads nothing of the packet but the IP header, the common header
	// and the fields PartialNeeds names (wire Layout names; a name the
	// packet's type lacks needs nothing). The Checker gives it such a
	// packet, as a packet of its type, when all of those were captured;
	// every other rule treats the packet as unseen. Tests hold a Partial
	// rule's result on every cut of real packets to its result on the
	// whole packet (TestPartialRulesMatchWhole).
	Partial      bool
	PartialNeeds []string
	// Usual, if its When is set, is the result Check gives on a
	// well-formed DATA packet that shows those facts: the Checker counts
	// it without calling Check (see Usual; tests verify it).
	Usual Usual
	// JudgesLevel says Check judges the priority level the packet carries
	// against the levels its sender may have wanted, which a violation
	// names (Result.Wants): on IPv4 HomaModule passes the level through
	// the socket's shared TOS, so the Checker holds such a violation at
	// an IPv4 packet until it has seen the packets of the same socket
	// around it, and makes it inconclusive when one of them wanted the
	// level carried (see tosRace, CauseTOSRace).
	JudgesLevel bool
	// Timed says that Check on DATA weighs the packet's time against
	// earlier packets' (a GRANT still in flight, a silence), so that two
	// in-order DATA packets of one message, alike in all else, may get
	// different results: the Checker's DATA prediction (predict.go) calls
	// it on every packet instead of counting the previous packet's result.
	Timed bool
	// ChargeReceiver says a violation is the doing of the host that
	// received the packet, whose arrival proves it (HOMA-SEND-004: request
	// bytes first sent after the response began show the server answered
	// early).
	ChargeReceiver bool
	Check          func(c *Ctx, e *Event) Result
}

// Gate is a set of cheap conditions an Each or After rule may need
// before it can act (Each.Needs, After.Needs): facts of the packet itself, or states the capture has
// reached so far, which ordinary traffic rarely shows. Rules of rare
// states (retransmissions, ICMP, RPC_UNKNOWN) are then not called on
// every packet.
type Gate uint8

const (
	// NeedsRetransmit: a DATA packet acts only if retransmit is set
	// (other types are not gated).
	NeedsRetransmit Gate = 1 << iota
	// NeedsPiggyAck: a DATA packet acts only if it carries a piggy-backed
	// ack (ack client_id nonzero; other types are not gated).
	NeedsPiggyAck
	// NeedsIPv6: the packet's source is an IPv6 address (not v4-mapped).
	NeedsIPv6
	// NeedsICMPSeen: the trace holds an ICMP port unreachable
	// (Trace.PortUnreachable finds something).
	NeedsICMPSeen
	// NeedsRPCUnknownSeen: some RPC of the trace received RPC_UNKNOWN
	// (RPC.Unknown can be set).
	NeedsRPCUnknownSeen
	// NeedsCutoffsSeen: the trace holds a CUTOFFS (Trace.CutoffsKnown
	// finds something).
	NeedsCutoffsSeen
	// NeedsIPHeader: the event carries the IP header a capture reader
	// parsed (Event.IP.Known); events built without one (the explorer's,
	// the tester's own trace) cannot be judged by such a rule.
	NeedsIPHeader
	numGates = iota
)

func (Each) form() string { return "each" }

// Obligation is what a Within trigger expects: a later event for which
// Match is true, within Bound of the trigger.
type Obligation struct {
	// Key groups obligations (e.g. one per RPC and message): a trigger
	// whose key already has an open obligation is folded into it, which
	// keeps its earlier deadline.
	Key any
	// Match reports whether e discharges the obligation.
	Match func(c *Ctx, e *Event) bool
	// Expect describes the awaited packet, for the violation text.
	Expect string
	// Excuse, if set, is asked at the trigger and at every later event
	// before the deadline that does not match: when it gives a reason, the
	// capture shows a state in which the awaited packet may rightly never
	// come, and the obligation closes as inconclusive with that reason.
	Excuse func(c *Ctx, e *Event) (string, bool)
	// RPC, with Scoped, says Match and Excuse can hold only at events of
	// that RPC: its own packets, or an ACK naming it among its acks (see
	// touches). Before the deadline the Checker then asks them only at
	// such events, so a packet costs the same however many obligations
	// other RPCs hold open (tens of thousands at an overloaded receiver).
	RPC    RPCKey
	Scoped bool
	// held, set on a Witness obligation with RPC, says its Match holds
	// only at an event of RPC (its own packets, an ACK or a DATA's
	// piggy-backed ack naming it: witnessTouches) or at a packet of
	// held.sock that witnessHeld takes as a witness for held.at and
	// held.deadline (heldWindow). The Checker then asks Match only at
	// those, so a packet costs the same however many such obligations
	// are open (one per response awaiting its NEED_ACK, HOMA-ACK-013,
	// thousands in a capture whose server sends none).
	held heldWitness
	// Moot, if set, is asked when the deadline passes with no match (at
	// the next event or at the end of the capture): a reason closes the
	// obligation as inconclusive, for an answer whose absence the capture
	// cannot tell from a host event it does not show (the RPC ended by
	// its application, the socket closed, the host gone).
	Moot func(c *Ctx) (string, bool)
	// MatchICMP, if set, is asked at every later ICMP event (Event.ICMP):
	// true discharges the obligation (e.g. port unreachable answering a
	// packet to a closed socket).
	MatchICMP func(c *Ctx, e *Event) bool
	// OnlyLate makes a missed deadline a violation only once the awaited
	// packet does come (late): an answer that never comes is inconclusive
	// (the answerer may be gone, e.g. a killed client).
	OnlyLate bool
	// From and To are the trigger's sender and the host that owes the
	// answer (set by the Checker from the trigger event): a missed
	// obligation is inconclusive when the capture shows loss of packets
	// toward To after the capture point, or from To before it.
	From, To netip.Addr
	// Confirm and Unseen serve a Within rule with Witness set: Confirm
	// gives the result recorded at the trigger when a later event matches
	// (a violation, or a downgrade when the capture shows why the match
	// may mislead), Unseen the one recorded when nothing matches by the
	// end of the capture (inconclusive, with the unseen host event as its
	// Cause): a function, so that an obligation that ends met (nearly
	// all) never formats its texts.
	Confirm func(c *Ctx, e *Event) Result
	Unseen  func() Result
	// control is set (by the Checker) when the trigger is not DATA: a
	// control packet's loss leaves no trace of its own, so loss on the
	// path between the two hosts in either direction is the evidence.
	control bool
	// Await, if set, takes the place of Match, Excuse and Expect (which
	// are then left unset), and a WitnessAwait of Confirm and Unseen too:
	// see Await.
	Await Await
	// Now, when its Status is set, is the trigger's result, recorded at
	// once: the Trigger opens nothing. A Witness rule that judges most of
	// its triggers at once holds only the rest until later packets decide
	// them (HOMA-RESEND-012: a RESEND past the GRANTs seen so far waits
	// for a GRANT its receiver sends within slack).
	Now Result
}

// heldWitness is Obligation.held: the server socket whose later packets
// may witness that it still holds an RPC it held at at, no earlier than
// slack after deadline (witnessHeld). deadline-at must be the same for
// all of a rule's obligations (one bound per rule, as Within.Bound), so
// that they sort alike by either.
type heldWitness struct {
	sock         HostPort
	at, deadline time.Time
}

// An Arrival is an Await that can tell, from packets after its trigger,
// that the trigger reached the host that owes the answer: loss after the
// capture point toward that host then excuses no missed answer.
type Arrival interface {
	Arrived() bool
}

// An Await judges and describes an obligation's awaited packet as one
// value. A rule that opens an obligation at many packets (one per
// message) keeps the few values it needs in one struct, a single
// allocation, where a closure per func and an Expect formatted at the
// trigger cost several, though Expect is read only when the obligation
// is missed or ends inconclusive.
type Await interface {
	// Match is Obligation.Match.
	Match(c *Ctx, e *Event) bool
	// Excuse is Obligation.Excuse.
	Excuse(c *Ctx, e *Event) (string, bool)
	// Expect returns Obligation.Expect, formatted when asked.
	Expect() string
}

// match reports whether e discharges o (Match or Await).
func (o *Obligation) match(c *Ctx, e *Event) bool {
	if o.Await != nil {
		return o.Await.Match(c, e)
	}
	return o.Match(c, e)
}

// excuse asks o's Excuse or Await about e: a reason closes o as
// inconclusive. o without either has none.
func (o *Obligation) excuse(c *Ctx, e *Event) (string, bool) {
	switch {
	case o.Await != nil:
		return o.Await.Excuse(c, e)
	case o.Excuse != nil:
		return o.Excuse(c, e)
	}
	return "", false
}

// A WitnessAwait is an Await that also gives a Witness rule's results
// (Obligation.Confirm and Unseen, which are then left unset): one value
// for an obligation opened at every response (HOMA-ACK-013), where a
// closure per func cost an allocation each.
type WitnessAwait interface {
	Await
	// Confirm is Obligation.Confirm.
	Confirm(c *Ctx, e *Event) Result
	// Unseen is Obligation.Unseen.
	Unseen() Result
}

// confirm gives o's result when a later event e matches (Witness rules).
func (o *Obligation) confirm(c *Ctx, e *Event) Result {
	if w, ok := o.Await.(WitnessAwait); ok {
		return w.Confirm(c, e)
	}
	return o.Confirm(c, e)
}

// unseen gives o's result when nothing matched by the end (Witness rules).
func (o *Obligation) unseen() Result {
	if w, ok := o.Await.(WitnessAwait); ok {
		return w.Unseen()
	}
	return o.Unseen()
}

// expect describes o's awaited packet, for a result's text.
func (o *Obligation) expect() string {
	if o.Await != nil {
		return o.Await.Expect()
	}
	return o.Expect
}

// Within is "after A, B within T": every event for which Trigger returns
// an obligation must be followed, within Bound(params) of its time, by an
// event that matches. Past the bound it is violated (a match that comes
// later is too late); if the capture ends first, or the obligation's
// Excuse applies, it is inconclusive. Time is
// the capture time elapsed, counting only forward steps of the timestamps.
//
// TriggerTypes, when set, lists the packet types Trigger can open an
// obligation at: the Checker asks Trigger only about events of those
// types (open obligations still see every event). It is a pre-filter for
// speed, so it must be a superset of what Trigger accepts; empty means
// every type.
//
// Witness turns the form around for a trigger that is wrong unless a host
// event the capture cannot show (a socket closed, a host restarted)
// explains it: a later event for which Match is true rules that event out
// and records Obligation.Confirm at the trigger, at any time (Bound is not
// used); with no match by the end of the capture the trigger records
// Obligation.Unseen. Its findings are the doing of the trigger's sender.
type Within struct {
	TriggerTypes []wire.PacketType
	Trigger      func(c *Ctx, e *Event) (Obligation, bool)
	Bound        func(p *Params) time.Duration
	Witness      bool
	// Usual, if its When is set, names facts of a DATA packet at which
	// Trigger opens nothing (Then NotApplicable; see Usual).
	Usual Usual
	// SenderOwes says the trigger's sender owes the awaited packet (the
	// rest of what it began, a RESEND round): a miss is charged to it,
	// Obligation.To defaults to it and From to the trigger's receiver.
	SenderOwes bool
}

func (Within) form() string { return "within" }

// After is "never B before A": an event for which B returns a key is
// allowed only if an event for which A returned the same key came before
// (and, when Bound is set, no longer than Bound(params) before, in capture
// time elapsed as for Within). Missing gives the reason when there was no
// such A. A triggers are forgotten with their RPC when the trace forgets
// it (Trace.evict: finished and idle for EvictAfter), and any older than
// IdleEvictAfter of capture time, like idle RPCs. Keys name one side of
// one RPC (a value, not an interface, so that a key costs no allocation
// per packet).
//
// ATypes and BTypes, when set, list the packet types A and B can return a
// key for: the Checker asks them only about events of those types (an
// ICMP event's type is 0, so a rule with ICMP set leaves them empty). Like
// Within.TriggerTypes they are pre-filters for speed and must be
// supersets of what A and B accept; empty means every event.
type After struct {
	// ICMP makes A and B see ICMP events (Event.ICMP set) too.
	ICMP bool
	// Needs, as Each.Needs, names the gates an event must pass for A or
	// B to act on it: the Checker does not call the rule at an event that
	// misses one (the spec package's tests call it anyway and panic if A
	// or B would have acted).
	Needs          Gate
	ATypes, BTypes []wire.PacketType
	A              func(c *Ctx, e *Event) (rpcMsgKey, bool)
	B              func(c *Ctx, e *Event) (rpcMsgKey, bool)
	Bound          func(p *Params) time.Duration
	Missing        string
}

func (After) form() string { return "after" }

// AtMost is "count of X at any time ≤ N": at every event of Types, Measure
// returns the current amount and its limit; What says what is counted
// (asked only when the limit is exceeded, so that a pass formats nothing).
type AtMost struct {
	Types   []wire.PacketType
	Measure func(c *Ctx, e *Event) (value, limit int64, ok bool)
	What    func(e *Event) string
	// Partial says Measure judges a packet from the readable part of a
	// header the snap length cut after the common header (Event.Partial):
	// it reads nothing of the packet but the IP header, the common header
	// and the fields PartialNeeds names (wire Layout names; a name the
	// packet's type lacks needs nothing). The Checker gives it such a
	// packet, as a packet of its type, when all of those were captured;
	// every other rule treats the packet as unseen. Tests hold a Partial
	// rule's result on every cut of real packets to its result on the
	// whole packet (TestPartialRulesMatchWhole).
	Partial      bool
	PartialNeeds []string
}

func (AtMost) form() string { return "at-most" }

// controlTypes lists every packet type but DATA: the Types of an Each
// rule about control packets, so that the Checker does not call it for
// DATA.
var controlTypes = func() (ts []wire.PacketType) {
	for t := wire.MinType; t <= wire.MaxType; t++ {
		if t.IsControl() {
			ts = append(ts, t)
		}
	}
	return ts
}()

func typeIn(t wire.PacketType, ts []wire.PacketType) bool {
	if len(ts) == 0 {
		return true
	}
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
