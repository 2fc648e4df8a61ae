package spec

import (
	"fmt"
	"github.com/homatest/homatest/internal/plural"
	"hash/maphash"
	"math"
	mbits "math/bits"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// Finding is one violation (or inconclusive evaluation) of a rule.
type Finding struct {
	Rule  string `json:"rule"`
	Level Level  `json:"level"`
	// Frame is the frame where the rule failed; Frames other frames that
	// show it (the trigger of a missed obligation, an earlier GRANT ...).
	Frame  int   `json:"frame"`
	Frames []int `json:"frames,omitempty"`
	// Time of the frame.
	Time time.Time `json:"time"`
	// RPC is the RPC involved, if any.
	RPC *RPCKey `json:"rpc,omitempty"`
	// Also is another RPC whose packets the finding rests on, if any (the
	// RPC an ack names, judged in another RPC's packet).
	Also *RPCKey `json:"also_rpc,omitempty"`
	// Why is a one-line reason with the numbers involved.
	Why string `json:"why"`
	// Slack is the timing tolerance the rule allowed (a deadline, jitter or
	// in-flight allowance), if any.
	Slack time.Duration `json:"tolerance_ns,omitempty"`
	// Late, for a deadline finding, is how far past its bound (tolerance
	// included) the event came, or at least came (a missed deadline): a
	// measured stall excuses the finding only if it could account for
	// this much (stall.ExplainingAt). 0 when the rule does not say.
	Late time.Duration `json:"late_ns,omitempty"`
	// Since, when set, is when the time the finding judges began, before
	// its frames (a silence's start): a stall from then on may explain it
	// (Result.WithSince).
	Since time.Time `json:"window_from,omitzero"`
	// Early, for a finding whose event came too soon after its reference
	// (a RESEND before resend_ticks of silence), is by how much; EarlyAt
	// is the reference packet's time and EarlyRef what it is: a measured
	// stall excuses the finding only as stall.Accounting says for that
	// kind (Result.WithEarly). 0 when the rule does not say.
	Early    time.Duration `json:"early_ns,omitempty"`
	EarlyAt  time.Time     `json:"early_from,omitzero"`
	EarlyRef EarlyRef      `json:"early_ref,omitempty"`
	// Cause, for an inconclusive finding, is the network effect that
	// downgraded it from a violation (see Network).
	Cause Cause `json:"cause,omitempty"`
	// Hint, when set, names a --param under which the finding would not be
	// a violation (see Inferrer).
	Hint string `json:"hint,omitempty"`
	// Src and Dst are the addresses of the frame's packet; ChargedTo is
	// the host the finding is the doing of (see Rule.ChargesReceiver).
	Src       netip.Addr `json:"src,omitzero"`
	Dst       netip.Addr `json:"dst,omitzero"`
	ChargedTo netip.Addr `json:"charged_to,omitzero"`
	// Note is the capture's comment on the frame, if any (e.g. a tester's
	// mark on a packet it broke on purpose).
	Note string `json:"note,omitempty"`
	// alone: no missing packet can explain the finding (Rule.Alone,
	// Result.Alone); a capture drop excuses it not.
	alone bool
	// notUnderTest: the caller charges the finding to no implementation
	// under test (Checker.SetNotUnderTest); a capture drop neither counts
	// it nor excuses it.
	notUnderTest bool
	// seq numbers findings in the order the Checker found them (a level
	// violation held for the TOS race keeps its number), which orders
	// the findings of one frame (sortFindings).
	seq uint64
}

// MayRestOnMissing reports whether a packet the capture did not see may
// explain the finding (not Rule.Alone, the WIRE area or Result.Alone):
// one a capture drop can excuse.
func (f *Finding) MayRestOnMissing() bool { return !f.alone }

// Timing reports whether f judges time (a deadline, an interval, a
// silence): it carries the tolerance it allowed (Slack), which a measured
// stall, or a loaded machine's noise, may not have covered.
func (f *Finding) Timing() bool { return f.Slack > 0 }

// SeeFrames names the finding's other frames as reports print them:
// "frame 86" for one, "frames 86,90" for several, "" for none.
func (f *Finding) SeeFrames() string {
	switch len(f.Frames) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("frame %d", f.Frames[0])
	}
	s := make([]string, len(f.Frames))
	for i, x := range f.Frames {
		s[i] = strconv.Itoa(x)
	}
	return "frames " + strings.Join(s, ",")
}

// RuleResult counts the evaluations of one rule over a trace.
type RuleResult struct {
	Rule         *Rule         `json:"-"`
	ID           string        `json:"id"`
	Level        Level         `json:"level"`
	Checked      int           `json:"checked"`
	Passed       int           `json:"passed"`
	Violated     int           `json:"violated"`
	Inconclusive int           `json:"inconclusive"`
	MaxSlack     time.Duration `json:"tolerance_ns,omitempty"`
}

// Report is the result of checking a trace.
type Report struct {
	Profile string `json:"profile"`
	Params  Params `json:"-"`
	Events  int    `json:"events"`
	RPCs    int    `json:"rpcs"`
	// Answered counts the RPCs heard from both sides: both their client
	// and their server sent a packet naming them in the capture (DATA,
	// GRANT, BUSY, RESEND, NEED_ACK, RPC_UNKNOWN; not CUTOFFS or ACK:
	// Trace.Answered). With none, no exchange was judged.
	Answered int          `json:"rpcs_answered"`
	Rules    []RuleResult `json:"rules"`
	// Violations in trace order (at most MaxFindings per rule are kept;
	// RuleResult.Violated has the full count).
	Violations []Finding `json:"violations"`
	// Inconclusive evaluations (at most MaxFindings per rule kept).
	Inconclusive []Finding `json:"inconclusive,omitempty"`
	// CapturePoint is where the capture is taken to have been made.
	CapturePoint string `json:"capture_point"`
	// Downgrades counts the findings that would have been violations but
	// for a network effect the capture shows between the capture point and
	// a host, by rule and cause, with the first such finding's frame.
	Downgrades []DowngradeCount `json:"downgrades,omitempty"`
	// CaptureDrops is the number of packets the capture says it dropped
	// itself (Checker.SetCaptureDrops); 0 when it says none.
	CaptureDrops uint64 `json:"capture_drops,omitempty"`
	// CaptureDropLimit is the most RPCs (host pairs, for findings without
	// one) CaptureDrops missing packets can touch: CaptureDrops ×
	// (max_acks_per_pkt + 1).
	CaptureDropLimit int `json:"capture_drop_limit,omitempty"`
	// CaptureDropExcused counts the findings CaptureDrops made
	// inconclusive (CauseCaptureDrop; also in Downgrades).
	CaptureDropExcused int `json:"capture_drop_excused,omitempty"`
	// CaptureDropTooMany is set when the findings CaptureDrops might
	// explain are at more than CaptureDropLimit RPCs: they cannot all be
	// the capture's doing, so they stay violations.
	CaptureDropTooMany bool `json:"capture_drop_too_many,omitempty"`
	// CaptureDropsShown, when set, is the evidence that the capture
	// itself missed packets the hosts got (Trace.MissedData), which set
	// CaptureDrops when no larger count was given.
	CaptureDropsShown string `json:"capture_drops_shown,omitempty"`
	// OneDirection is set when the capture holds packets in one
	// direction only between every two hosts it shows (no host pair is
	// seen both ways): every violation a missing packet may explain
	// (not those of a packet's own fields, Rule.Alone and Result.Alone)
	// is then inconclusive (CauseOneDirection), OneDirectionExcused of
	// them (also in Downgrades).
	OneDirection        bool `json:"one_direction,omitempty"`
	OneDirectionExcused int  `json:"one_direction_excused,omitempty"`
	// OneEnd is set when the capture was judged as one end of every
	// host's link, guessed from its shape (Checker.SetOneEndExcuse): every
	// violation a packet's timing at the other end may explain is then
	// inconclusive (CauseOneEnd), OneEndExcused of them.
	OneEnd        bool `json:"one_end,omitempty"`
	OneEndExcused int  `json:"one_end_excused,omitempty"`
	// Sections lists where the checker started judging afresh (a
	// timestamp jump back of more than TimeJump, a host's restart): the
	// capture is judged as independent sections, nothing across their
	// starts (Checker.newSection). Empty for a capture judged as one.
	Sections []SectionStart `json:"sections,omitempty"`
	// Reloads lists hosts that show both signs of a fresh Homa module (a
	// new request's first DATA with id 2 again, and cutoff_version 0 to a
	// peer whose version they carried before) after a silence too short
	// for their peers to have given up their RPCs (Checker.sectionBreak):
	// judged as one incarnation all the same (a reload mid-RPC breaks its
	// peers' RPCs), but the likely cause of what is charged around them.
	// At most maxReloads, the first.
	Reloads []SectionStart `json:"reloads,omitempty"`
	// TimeGaps lists the forward timestamp jumps over which an RPC went
	// on as if no time had passed (Checker.noteGap): the capture lost
	// time, or every host stalled.
	TimeGaps []TimeGap `json:"time_gaps,omitempty"`
	// Merged, when set, is the diagnosis that the capture interleaves two
	// module instances of a host (two captures merged with overlapping
	// times): every violation but those of a packet judged alone is then
	// inconclusive (CauseMerged), as a rule may pair packets of two
	// instances.
	Merged *Merged `json:"merged,omitempty"`
}

// SectionStart is the first frame of a section of a capture judged apart
// from what came before it (Report.Sections), and why.
type SectionStart struct {
	Frame int    `json:"frame"`
	Why   string `json:"why"`
	// Restarted is the host whose restart began the section (invalid for
	// a timestamp jump).
	Restarted netip.Addr `json:"restarted,omitzero"`
	// At is the time of the event that began it (for Judge.Restarts).
	At time.Time `json:"-"`
	// From, for Judge.Restarts, is the file frame at or after which the
	// section begins: a timestamp jump's own frame, for a restart the
	// frame of the last jump before it (0 if none), since times order
	// events only between jumps (SectionStart.reached).
	From int `json:"-"`
	// Back is how far back the timestamps jumped (a section a jump
	// began; 0 for a restart).
	Back time.Duration `json:"-"`
}

// DowngradeCount counts one rule's findings downgraded for one cause.
type DowngradeCount struct {
	Rule  string `json:"rule"`
	Cause Cause  `json:"cause"`
	Count int    `json:"count"`
	// Frame is the first such finding's frame.
	Frame int `json:"frame"`
}

// Downgraded returns the number of downgraded findings.
func (r *Report) Downgraded() int {
	n := 0
	for _, d := range r.Downgrades {
		n += d.Count
	}
	return n
}

// ViolatedAt reports whether any rule of level lvl was violated.
func (r *Report) ViolatedAt(lvl Level) bool {
	for _, rr := range r.Rules {
		if rr.Violated > 0 && rr.Level == lvl {
			return true
		}
	}
	return false
}

// MaxFindings is the number of findings kept per rule and kind.
const MaxFindings = 100

// Violated reports whether any rule was violated.
func (r *Report) Violated() bool {
	for _, rr := range r.Rules {
		if rr.Violated > 0 {
			return true
		}
	}
	return false
}

// frameRef names the frame a finding is about.
type frameRef struct {
	frame    int
	time     time.Time
	src, dst netip.Addr
	note     string
}

func refOf(e *Event) frameRef {
	return frameRef{frame: e.Frame, time: e.Time, src: e.Src, dst: e.Dst, note: e.Note}
}

type pending struct {
	o   Obligation
	ref frameRef
	at  time.Duration // Checker.elapsed at the trigger
	// rpc is the trigger's RPC key (rpcOK: it has one), kept by value so
	// that opening an obligation allocates no key of its own (rpcKey).
	rpc   RPCKey
	rpcOK bool
	// overdue is set for an OnlyLate obligation past its deadline.
	overdue bool
	// closed is set when it leaves ruleState.open, where it is filed
	// under o.Key (the deadline queue skips it then); visited is the
	// event count (Checker.events) at which judgeOpen last asked it.
	// (No key of its own beside o.Key, and the flags together: a
	// pending fits Go's 512-byte size class, not 576; one is allocated
	// per obligation opened, about 3 per RPC.)
	closed  bool
	visited int
	// seq numbers obligations in the order they opened: obligations that
	// close at one event are recorded in that order, not the map's
	// (which would make the findings kept, MaxFindings, vary by run).
	seq uint64
}

// rpcKey returns o's trigger's RPC key, nil if it had none.
func (o *pending) rpcKey() *RPCKey {
	if !o.rpcOK {
		return nil
	}
	return &o.rpc
}

// closing is an open obligation that closes at the current event: it is
// missed (m set) or recorded with res (noEvent: as of no event, as a
// Witness confirmation is, so that the event's duplication is not
// applied to it).
type closing struct {
	key     any
	o       *pending
	m       *missed
	res     Result
	noEvent bool
}

// missed is a Within obligation past its deadline, decided at Finish
// (when the whole capture's evidence of loss is known).
type missed struct {
	rule int
	ref  frameRef
	rpc  *RPCKey
	res  Result
	from netip.Addr
	to   netip.Addr
	// control: the trigger was a control packet (Obligation.control).
	control bool
	// arrived: the capture shows the trigger reached To (Arrival).
	arrived bool
}

type ruleState struct {
	res  RuleResult
	open map[any]*pending // Within
	// scoped: the Within rule's obligations are Scoped (all or none are),
	// and indexed so that judgeOpen visits only those e may act on:
	// deadlines holds them in the order they opened, which is their
	// deadlines' order (one bound per rule), byRPC by RPC, and late the
	// OnlyLate ones past their deadline (asked at every event). A rule
	// whose obligations are not Scoped asks every one at every event.
	scoped bool
	// unscoped lists an unscoped rule's open obligations in opening
	// order, for judgeOpen to visit without a map iteration (a rule
	// such as HOMA-GRANT-010 holds one or two open at most events).
	unscoped  []*pending
	deadlines []*pending
	byRPC     map[RPCKey][]*pending
	late      map[*pending]struct{}
	// held: the Witness rule's obligations carry Obligation.held (all or
	// none do); byRPC files them by RPC and bySock by socket, each
	// socket's in deadline order, for judgeOpen to ask only those an
	// event may match (judgeHeld).
	held   bool
	bySock map[HostPort][]*pending
	// touched holds the RPCs the previous event asked the held
	// obligations of (its own, those its acks name): the trace applies
	// that event after the rules judge it, so an ack, NEED_ACK or
	// RPC_UNKNOWN it applied may end an obligation (HOMA-ACK-013's
	// ended: r.Acked, r.Unknown, r.NeedAcks) only from the next event
	// on, which judgeHeld must ask too.
	touched []RPCKey
	// seenA maps an After rule's A keys to their slot in seenAt, which
	// holds Checker.elapsed at the latest A: a key seen again costs one
	// map lookup, or none when the current RPC caches its slot
	// (afterSlot). freeA lists the slots of keys forgotten (pruneAfter).
	seenA   map[rpcMsgKey]int32
	seenAt  []aSlot
	freeA   []int32
	kept    int
	keptInc int
	// firstViolation is the frame of the rule's earliest violation that a
	// capture drop may explain (0: none), the frame a CauseCaptureDrop
	// DowngradeCount names; dropViolated counts those violations.
	firstViolation int
	dropViolated   int
	// aged orders seenA's slots by the elapsed time they were filed with
	// (one entry per key: pruneAfter refiles a key seen again; a key
	// forgotten with its RPC leaves it, aSlot.heapAt).
	aged minHeap[agedKey]
}

// Property forms, for Checker's dispatch without a type switch.
const (
	formEach = iota
	formAtMost
	formWithin
	formAfter
)

// compiled is a rule's property unpacked for Feed.
type compiled struct {
	form   uint8
	each   Each
	atMost AtMost
	within Within
	after  After
}

// Dispatch classes of events: one per packet type (index type-MinType),
// then malformed frames, ICMP events, and packets of a type outside the
// known range.
const (
	classTypes     = int(wire.MaxType-wire.MinType) + 1
	classMalformed = classTypes
	classICMP      = classTypes + 1
	classOther     = classTypes + 2
	numClasses     = classTypes + 3
)

// classOf returns e's dispatch class.
func classOf(e *Event) int {
	switch {
	case e.ICMP != nil:
		return classICMP
	case e.Err != nil:
		return classMalformed
	}
	if t := e.Packet.Type(); t >= wire.MinType && t <= wire.MaxType {
		return int(t - wire.MinType)
	}
	return classOther
}

// mayApply reports whether rule form c may act on an event of class cls:
// a superset of what Feed's per-form conditions accept, so that Feed
// visits only the rules that can act on an event.
func (c *compiled) mayApply(cls int, verify bool) bool {
	typed := func(ts []wire.PacketType) bool {
		return cls == classOther || cls < classTypes && typeIn(wire.MinType+wire.PacketType(cls), ts)
	}
	switch c.form {
	case formEach:
		switch cls {
		case classICMP:
			return c.each.ICMP
		case classMalformed:
			return c.each.Malformed
		}
		return typed(c.each.Types)
	case formAtMost:
		return cls != classICMP && cls != classMalformed && typed(c.atMost.Types)
	case formWithin:
		return cls != classMalformed
	default:
		switch {
		case cls == classMalformed || cls == classICMP && !c.after.ICMP:
			return false
		case cls == classICMP:
			return true
		}
		return verify || typed(c.after.ATypes) || typed(c.after.BTypes)
	}
}

// Checker streams events through rules. Use NewChecker, Feed each event in
// capture order, then Finish.
type Checker struct {
	// oneEnd, oneEndSpare: see SetOneEndExcuse.
	oneEnd      bool
	oneEndSpare func(*Finding) bool
	// fromStart: see SetCaptureFromStart.
	fromStart bool
	// oneInstance: see SetOneInstance.
	oneInstance bool
	p           *Params
	profile     string
	rules       []*Rule
	state       []*ruleState
	props       []compiled
	// byClass[k] lists, in rule order, the rules that may act on an event
	// of dispatch class k (classOf).
	byClass [numClasses][]int
	// typeSet[k], for a packet type's class k, holds the rules that act
	// on every well-formed packet of that type: Each and AtMost rules of
	// the type, Within rules it may trigger, After rules whose A or B
	// may take it. open holds the Within rules with open obligations,
	// which see every event. Feed visits typeSet[k] | open in rule
	// order, so findings at one frame keep the rules' order.
	typeSet [classTypes]ruleSet
	open    ruleSet
	// partialBy[k], for a packet type's class k, lists in rule order the
	// rules a partial event of that type (Event.Partial) may reach: the
	// Malformed ones, given the event as it is, and those that take
	// partial packets of the type (compiled.takesPartial), given it as a
	// packet of its type (feedPartial).
	partialBy [classTypes][]int
	// gateMask[m] holds the Each rules that need (Each.Needs) a gate of
	// the set m: those feedType skips on a packet that misses m. seen
	// are the state gates the trace has reached (Trace.seen). verify
	// makes feedType call the rules it skips and panic if one acts
	// (verifyPrefilter).
	gateMask [1 << numGates]ruleSet
	seen     Gate
	verify   bool
	// usual holds the Each rules that declare a Usual result on DATA
	// (hasUsual: some do).
	usual    usualTable
	hasUsual bool
	// passRuns counts the DATA packets by the set of rules their facts
	// passed (Usual results Passed), passLast being the run the latest
	// such packet counted in: foldPasses adds them to the rules' counts
	// before anything reads those, so that a packet counts its passes
	// once, not in each rule's state.
	passRuns []passRun
	passLast int
	// usualVerified counts the Usual results verifyUsual confirmed.
	usualVerified int
	// memo holds, per message (memoSlot), what the rule stage did at its
	// latest ordinary DATA packet, memoSets the distinct outcomes those
	// name, memoGen the generation a memo must carry to hold (predict.go);
	// recorded counts the findings recorded; predictVerified the predicted
	// packets verifyPredicted confirmed, predicted those feedPredicted
	// counted. afterSet holds the After rules, which a predicted packet
	// still runs.
	memo            []dataMemo
	memoSets        []memoSets
	memoGen         uint32
	recorded        uint64
	predictVerified int
	predicted       int
	// predictedNow is set while the event at hand is DATA a memo
	// predicted (its trace update may take the lean path:
	// applyPredicted); applyVerified counts the lean updates the general
	// one confirmed.
	predictedNow  bool
	applyVerified int
	afterSet      ruleSet
	// afterOrd[i] numbers After rule i among the After rules (nAfter of
	// them): its entries in an RPC's afterSlot cache.
	afterOrd []int
	nAfter   int
	// seq counts the obligations opened (pending.seq); closing is
	// judgeOpen's scratch list.
	seq     uint64
	closing []closing
	// reference makes Feed visit every rule with the rules' own
	// conditions, without the dispatch tables: the straightforward path
	// the tables are checked against (TestDispatchMatchesReference).
	reference bool
	// rpc is the current event's RPC key (rpcOK: it has one); rpcPtr a
	// copy on the heap, made only when a finding or obligation keeps it.
	rpc    RPCKey
	rpcOK  bool
	rpcPtr *RPCKey
	// inf, if set, infers parameters from the events as Feed sees them
	// (see SetInferrer).
	inf   *Inferrer
	trace *Trace
	ctx   Ctx
	// last is the time of the previous event; elapsed is the capture time
	// elapsed so far, counting only forward steps, so that deadlines keep
	// running at the capture's pace when timestamps step back.
	last    time.Time
	elapsed time.Duration
	events  int
	// earliest is the earliest time of an event so far (a record moved
	// back into it is judged in excuseOutOfOrder); times follows the
	// timestamps' jumps (sectionBreak).
	earliest time.Time
	times    timeline
	// lastFrame is the previous event's frame; gap is the latest forward
	// silence of the whole capture longer than the protocol's timeout
	// not yet shown to cut through a live RPC (noteGap).
	lastFrame int
	gap       *TimeGap
	// started: see SetStarted; nil once a timestamp jump began a
	// section (the times no longer order the views), and startedFrom the
	// start of the section after a restart (starts before it are not the
	// section's).
	started     map[RPCKey]time.Time
	startedFrom time.Time
	// startedShared says started is SetStarted's (read, never changed);
	// startedOff that a jump ended its use (NoteStarted notes nothing).
	startedShared, startedOff bool
	// visits counts the open obligations judgeOpen asked (a test bounds
	// the per-packet work by it: TestAck013ManyOpenObligations).
	visits int
	report Report
	// created counts the RPCs of the sections before the current one
	// (their traces are gone); epochs holds what newSection's restart
	// test needs of each host in the current section.
	created  int
	answered int
	epochs   map[netip.Addr]*hostEpoch
	// epochCache holds recent epochs entries, slot by the address's last
	// byte, so that most packets find their sender's without hashing an
	// address (epochOf).
	epochCache [epochCacheSize]*hostEpoch
	// restarts are the restarts another view of the capture found
	// (SetRestarts), nextRestart the first not yet reached.
	restarts    []SectionStart
	nextRestart int
	// merge looks for two module instances of a host interleaved in
	// the current section (Report.Merged).
	merge  mergeTracker
	net    *Network
	missed []missed
	downs  map[[2]string]*DowngradeCount
	// drops and dropLimit: see SetCaptureDrops. dropAt holds hashes of the
	// subjects (RPCs, host pairs) of the violations a capture drop may
	// explain (captureDropMayExplain), until there are more than
	// maxDropSubjects of them or than dropLimit once it is known
	// (dropOver); dropSeed seeds the hashes.
	drops     uint64
	dropLimit int
	dropAt    map[uint64]struct{}
	dropOver  bool
	// dropsSaid: see SetCaptureDropsDeclared.
	dropsSaid bool
	// notUnderTest: see SetNotUnderTest.
	notUnderTest func(*Finding) bool
	// shown is what the sections' traces showed the capture missed
	// (noteMissed): n packets, ev the first evidence, counted the
	// current trace's part already added.
	shown struct {
		n, counted uint64
		ev         Evidence
	}
	dropSeed maphash.Seed
	// dirs holds, for each pair of hosts, the directions the capture
	// showed a packet in (bit 1: from the lower address, bit 2: from the
	// higher), until one pair shows both (twoWay, dirs dropped): see
	// Report.OneDirection.
	dirs   map[pairKey]uint8
	twoWay bool
	// oneWay: see SetOneDirectionExcuse.
	oneWay bool
	// race holds the levels recent IPv4 packets wanted and the level
	// violations waiting for the packets after them (tosRace); levels
	// holds the Each rules that judge a level (Each.JudgesLevel).
	race   tosRace
	levels ruleSet
	// found numbers the findings (Finding.seq).
	found uint64
}

// NewChecker returns a checker of rules against parameters p (profile is
// the profile name, for the report). Rules not applying to profile are
// dropped.
func NewChecker(profile string, p Params, rules []*Rule) *Checker {
	return newChecker(profile, p, rules, verifyPrefilters)
}

// newChecker is NewChecker; verify makes the dispatch tables also visit
// the rules whose pre-filters spare an event, so that verifyPrefilter
// can check them.
func newChecker(profile string, p Params, rules []*Rule, verify bool) *Checker {
	c := &Checker{p: &p, profile: profile, downs: map[[2]string]*DowngradeCount{}, verify: verify, dropSeed: maphash.MakeSeed(), epochs: map[netip.Addr]*hostEpoch{}}
	c.trace = NewTrace(c.p)
	c.trace.onEvict = c.forgetAfter
	c.memoGen = 1
	c.net = newNetwork(Switch, c.p)
	c.ctx = Ctx{T: c.trace, P: c.p, Net: c.net, verify: verify}
	for _, r := range rules {
		if !r.AppliesTo(profile) {
			continue
		}
		cp, ok := compile(r.Property)
		if !ok {
			continue
		}
		if cp.form == formEach && cp.each.Payload {
			c.trace.payloads = true
		}
		i := len(c.rules)
		c.afterOrd = append(c.afterOrd, c.nAfter)
		if cp.form == formAfter {
			c.afterSet.add(len(c.rules))
			c.nAfter++
		}
		c.rules = append(c.rules, r)
		c.props = append(c.props, cp)
		c.state = append(c.state, &ruleState{res: RuleResult{Rule: r, ID: r.ID, Level: r.Level},
			open: map[any]*pending{}, seenA: map[rpcMsgKey]int32{}})
		c.state[i].aged = newAgedHeap(c.state[i])
		for k := range c.byClass {
			if cp.mayApply(k, verify) {
				c.byClass[k] = append(c.byClass[k], i)
			}
		}
		for k := range c.typeSet {
			t := wire.MinType + wire.PacketType(k)
			if cp.actsOnType(t, verify) {
				c.typeSet[k].add(i)
			}
			if cp.form == formEach && cp.each.Malformed || cp.partialTypes(t) {
				c.partialBy[k] = append(c.partialBy[k], i)
			}
		}
		if cp.form == formEach && cp.each.JudgesLevel {
			c.levels.add(i)
			c.race.rules = append(c.race.rules, i)
		}
		needs, u := cp.shortcuts()
		if u.When != 0 {
			if u.Then != NotApplicable && (u.Then != Passed || cp.form != formEach) {
				panic(fmt.Sprintf("rule %s: Usual.Then is %v, want n/a (or pass, for an Each rule)", r.ID, u.Then))
			}
			c.usual.add(i, u)
			c.hasUsual = true
		}
		if needs != 0 {
			for m := range c.gateMask {
				if Gate(m)&needs != 0 {
					c.gateMask[m].add(i)
				}
			}
		}
	}
	if len(c.rules) > maxRuleSet {
		c.reference = true // more rules than a ruleSet holds
	}
	return c
}

// shortcuts returns what a rule declares to be spared calls: the gates
// of an Each or After rule (Each.Needs, After.Needs) and the Usual
// declaration of an Each or Within rule (none for the other forms).
func (c *compiled) shortcuts() (Gate, Usual) {
	switch c.form {
	case formEach:
		return c.each.Needs, c.each.Usual
	case formWithin:
		return 0, c.within.Usual
	case formAfter:
		return c.after.Needs, Usual{}
	}
	return 0, Usual{}
}

// compile unpacks property p for Feed; false for a property form the
// Checker does not know.
func compile(p Property) (compiled, bool) {
	switch p := p.(type) {
	case Each:
		return compiled{form: formEach, each: p}, true
	case AtMost:
		return compiled{form: formAtMost, atMost: p}, true
	case Within:
		return compiled{form: formWithin, within: p}, true
	case After:
		return compiled{form: formAfter, after: p}, true
	}
	return compiled{}, false
}

// actsOnType reports whether rule form c acts on a well-formed packet of
// type t when no obligation of its own is open (see Checker.typeSet):
// exactly for Each and AtMost, a superset for Within and After (whose
// code checks TriggerTypes, ATypes and BTypes again; verify adds every
// Within and After rule, as mayApply does).
func (c *compiled) actsOnType(t wire.PacketType, verify bool) bool {
	switch c.form {
	case formEach:
		return typeIn(t, c.each.Types)
	case formAtMost:
		return typeIn(t, c.atMost.Types)
	case formWithin:
		return verify || typeIn(t, c.within.TriggerTypes)
	default:
		return verify || typeIn(t, c.after.ATypes) || typeIn(t, c.after.BTypes)
	}
}

// partialTypes reports whether rule form c takes partial packets
// (Each.Partial, AtMost.Partial) of type t.
func (c *compiled) partialTypes(t wire.PacketType) bool {
	switch c.form {
	case formEach:
		return c.each.Partial && typeIn(t, c.each.Types)
	case formAtMost:
		return c.atMost.Partial && typeIn(t, c.atMost.Types)
	}
	return false
}

// takesPartial reports whether rule form c judges p, the readable part
// of a header the snap length cut: c takes partial packets of p's type
// and p captured every field c needs (PartialNeeds) that its type has.
func (c *compiled) takesPartial(p wire.Packet) bool {
	if !c.partialTypes(p.Type()) {
		return false
	}
	needs := c.each.PartialNeeds
	if c.form == formAtMost {
		needs = c.atMost.PartialNeeds
	}
	for _, f := range needs {
		if _, ok := wire.LayoutField(p.Type(), p.Version(), f); ok && !p.Has(f) {
			return false
		}
	}
	return true
}

// feedPartial runs the rules a partial event e (Event.Partial) reaches,
// in rule order: the Malformed rules on e as it is, the rules that take
// its readable part (compiled.takesPartial) on a copy that is a packet of
// its type, named by the RPC its common header gives. The trace and the
// network model never see it: to them it stays a packet not seen.
func (c *Checker) feedPartial(e *Event) {
	pe := *e
	pe.Err = nil
	k := int(pe.Packet.Type() - wire.MinType)
	if k < 0 || k >= classTypes {
		return
	}
	for _, i := range c.partialBy[k] {
		cp := &c.props[i]
		if cp.form == formEach && cp.each.Malformed {
			c.rpcOK, c.rpcPtr = false, nil
			c.trace.begin(e)
			c.evalRule(i, e)
			continue
		}
		if !cp.takesPartial(pe.Packet) {
			continue
		}
		c.rpcOK, c.rpcPtr = hasRPC(&pe), nil
		c.rpc = c.trace.begin(&pe)
		c.evalRule(i, &pe)
	}
	c.rpcOK, c.rpcPtr = false, nil
	c.trace.begin(e)
}

// maxRuleSet is the number of rules a ruleSet holds.
const maxRuleSet = 256

// ruleSet is a set of rule indexes (below maxRuleSet), a bit each.
type ruleSet [maxRuleSet / 64]uint64

func (s *ruleSet) add(i int)    { s[i/64] |= 1 << (i % 64) }
func (s *ruleSet) remove(i int) { s[i/64] &^= 1 << (i % 64) }

// SetInferrer makes Feed pass every event to in as well (Inferrer.Feed),
// before the event is applied to the trace; in then reads the checker's
// trace instead of keeping its own (both would hold the same state).
// Call it before the first Feed.
func (c *Checker) SetInferrer(in *Inferrer) {
	in.t, in.shared = c.trace, true
	c.inf = in
}

// FeedObserved is Feed for an event the inferrer must not learn from (a
// tester's packet): the rules judge it and the trace applies it, but the
// inferrer only sees it as context (Inferrer.Observe).
func (c *Checker) FeedObserved(e *Event) { c.feed(e, false) }

// curRPC returns the current event's RPC key on the heap (nil if it has
// none), allocating it at most once per event.
func (c *Checker) curRPC() *RPCKey {
	if !c.rpcOK {
		return nil
	}
	if c.rpcPtr == nil {
		k := c.rpc
		c.rpcPtr = &k
	}
	return c.rpcPtr
}

// SetCapturePoint sets where the capture was taken (default Switch); call
// it before the first Feed.
func (c *Checker) SetCapturePoint(cp CapturePoint) {
	c.net = newNetwork(cp, c.p)
	c.ctx.Net = c.net
}

// Trace returns the checker's trace (for per-RPC summaries).
func (c *Checker) Trace() *Trace { return c.trace }

// passRun is a set of rules that DATA packets' facts passed, and how
// many packets passed them (Checker.passRuns).
type passRun struct {
	set ruleSet
	n   int
}

// maxPassRuns bounds Checker.passRuns: past it the runs are folded.
const maxPassRuns = 64

// countPasses counts a pass (with no slack) of each rule in set, as
// ruleState.pass(0) would, in passRuns.
func (c *Checker) countPasses(set *ruleSet) {
	if c.passLast < len(c.passRuns) && c.passRuns[c.passLast].set == *set {
		c.passRuns[c.passLast].n++
		return
	}
	for i := range c.passRuns {
		if c.passRuns[i].set == *set {
			c.passRuns[i].n++
			c.passLast = i
			return
		}
	}
	if len(c.passRuns) >= maxPassRuns {
		c.foldPasses()
	}
	c.passLast = len(c.passRuns)
	c.passRuns = append(c.passRuns, passRun{set: *set, n: 1})
}

// foldPasses adds the passes counted in passRuns to the rules' results.
// A pass with no slack leaves MaxSlack as it is (never below 0).
func (c *Checker) foldPasses() {
	for _, r := range c.passRuns {
		for w, bits := range r.set {
			for ; bits != 0; bits &= bits - 1 {
				st := c.state[w*64+mbits.TrailingZeros64(bits)]
				st.res.Checked += r.n
				st.res.Passed += r.n
			}
		}
	}
	c.passRuns, c.passLast = c.passRuns[:0], 0
}

// hasRPC reports whether e belongs to an RPC (findings about it name one).
func hasRPC(e *Event) bool {
	return !(e.Err != nil || e.ICMP != nil || e.Type() == wire.TypeFreeze || e.Type() == wire.TypeCutoffs)
}

// recordHere records res of rule i at the current event e (which names
// its own frame and RPC); passes cost no allocation. (feedType's per-rule
// loop does the same by hand, so that a rule's Result, returned in
// registers, is not spilled and copied on the per-packet path; only a
// finding goes to recordFinding, by pointer.)
func (c *Checker) recordHere(i int, e *Event, res Result) {
	if res.Status == Passed && res.Cause() == "" {
		c.state[i].pass(res.Slack)
		if c.props[i].form == formEach && c.props[i].each.JudgesLevel {
			c.race.passed(i, e)
		}
	} else if res.Status != NotApplicable {
		c.recordFinding(i, e, &res)
	}
}

// pass counts a passing evaluation that used slack d.
func (st *ruleState) pass(d time.Duration) {
	st.res.Checked++
	st.res.Passed++
	if d > st.res.MaxSlack {
		st.res.MaxSlack = d
	}
}

// recordFinding records res (not a plain pass) of rule i at the current
// event e.
func (c *Checker) recordFinding(i int, e *Event, res *Result) {
	c.record(i, e, refOf(e), c.curRPC(), *res)
}

// SetCaptureFromStart says the capture began before any RPC in it (a
// capture homatest makes of its own runs, the explorer's cases): the
// capture's start then excuses no finding (CauseCaptureStart), and an RPC
// whose first packet is not its request's start is judged as it is.
func (c *Checker) SetCaptureFromStart() { c.fromStart, c.ctx.fromStart = true, true }

// SetOneInstance says every host address in the capture is one module
// instance from the capture's start to its end, or to a restart the
// capture shows (a capture homatest makes of its own runs, which start
// one IUT per host): the capture cannot interleave two instances of a
// host, so a host that begins its ids again while it goes on above them
// does it itself (HOMA-ID-004, HOMA-WIRE-011, HOMA-WIRE-003), and the
// checker makes no Merged diagnosis, which would make every violation
// inconclusive. A restart (a reloaded module) still starts a section.
func (c *Checker) SetOneInstance() { c.oneInstance = true }

// SetStarted gives the RPCs whose request's first transmission of
// offset 0 the whole capture shows, each at the time it did, when this
// checker judges one view of it (a port's, Judge.Started): an RPC of the
// view whose first packet there is not that one is still seen from its
// start if it came no earlier, since the RPC did not exist before (its
// offset 0 was lost on its way to the view's port). Call it before the
// first Feed; started is read, never changed.
func (c *Checker) SetStarted(started map[RPCKey]time.Time) {
	c.started, c.trace.started = started, started
	c.startedShared = started != nil
}

// NoteStarted tells a checker fed one host's view of a capture as it is
// read (Judge.HostsStream) that another view showed RPC k's request
// start, its first transmission of offset 0, at t: as SetStarted's map,
// learned in step with the view's events instead of before them, so
// that a streamed view needs no pass of its own over the capture. A
// checker given SetStarted's map ignores it. Only the starts that may
// still matter are kept: those of a section's first timeout_ticks
// (Trace.seenFromStart judges later packets as seen from their start).
func (c *Checker) NoteStarted(k RPCKey, t time.Time) {
	if c.startedShared || c.startedOff {
		return
	}
	if c.events > 0 && c.last.Sub(c.trace.Start) > c.p.LateTicks(c.p.TimeoutTicks) {
		// Past the section's first timeout: nothing is looked up until
		// the next section, which keeps only what comes after it.
		if c.started != nil {
			c.started, c.trace.started = nil, nil
		}
		return
	}
	if c.started == nil {
		c.started = map[RPCKey]time.Time{}
		c.trace.started = c.started
	}
	if at, ok := c.started[k]; !ok || t.Before(at) {
		c.started[k] = t
	}
}

// startedBefore reports whether a violation of rule r at RPC rpc may
// depend on what the RPC's hosts did before the capture began: the RPC
// is in the trace but was not seen from its first request bytes
// (RPC.SeenFromStart). Violations no unseen packet can explain
// (mayMiss false: Rule.Alone, the WIRE area, Result.Alone) are never
// excused.
func (c *Checker) startedBefore(mayMiss bool, rpc *RPCKey, e *Event) (Evidence, bool) {
	if rpc == nil || c.fromStart || !mayMiss {
		return Evidence{}, false
	}
	first, fromStart := 0, false
	if x := c.trace.rpcs[*rpc]; x != nil {
		first, fromStart = x.FirstFrame, x.SeenFromStart
	} else if e != nil && e.Err == nil && e.ICMP == nil && hasRPC(e) && e.Type() != wire.TypeAck && e.Type() != wire.TypeCutoffs && KeyOf(e) == *rpc {
		// e is the RPC's first packet: the trace creates the RPC after
		// the rules have judged e (ACK and CUTOFFS create none).
		first, fromStart = e.Frame, c.trace.seenFromStart(e)
	} else {
		return Evidence{}, false
	}
	if fromStart {
		return Evidence{}, false
	}
	return Evidence{Frame: first, Why: "the RPC's first packet in the capture is not its request's first bytes"}, true
}

// SetCaptureDrops says the capture dropped n packets itself (its buffer
// overflowed: a pcapng's isb_ifdrop, tcpdump's "N packets dropped by
// kernel"): packets the hosts sent and got that the capture does not
// show. Call it before Finish; before the first Feed when n is known
// then (it bounds the checker's bookkeeping).
//
// A missing packet can explain a violation that rests on a packet not
// being seen (a GRANT the sender got makes its DATA look ungranted, a
// RESEND its retransmission unrequested, an ACK an RPC unacknowledged),
// never one about a packet's own fields or that no unseen packet could
// reconcile (Rule.Alone, the WIRE area, Result.Alone: as for
// CauseCaptureStart). Each missing packet belongs to one RPC, except
// that an ACK names up to max_acks_per_pkt more (HomaModule homa_wire.h
// HOMA_MAX_ACKS_PER_PKT; a DATA header one) and a CUTOFFS packet a host
// pair: n missing packets touch at most n × (max_acks_per_pkt + 1) RPCs
// or host pairs (Report.CaptureDropLimit). So at Finish, if the
// violations a drop may explain are at no more distinct RPCs (host
// pairs, for findings without an RPC) than that, every one of them is
// inconclusive (CauseCaptureDrop): the capture cannot tell which it
// missed. If they are at more, they cannot all be the capture's doing,
// and all stay violations (Report.CaptureDropTooMany): the checker cannot
// tell which are. n = 0 changes nothing.
func (c *Checker) SetCaptureDrops(n uint64) {
	c.drops = n
	c.dropLimit = 0
	if n > 0 {
		per := uint64(max(c.p.MaxAcksPerPkt, 0)) + 1
		c.dropLimit = math.MaxInt
		if n <= uint64(math.MaxInt)/per {
			c.dropLimit = int(n * per)
		}
	}
	if c.dropAt != nil && c.dropLimit > 0 && len(c.dropAt) > c.dropLimit {
		c.dropOver, c.dropAt = true, nil
	}
}

// SetCaptureDropsDeclared says whether the capture declares the packets
// it dropped itself (a pcapng's interface statistics blocks, isb_ifdrop,
// as homatest's namespace and simulator captures write them, 0 included):
// SetCaptureDrops's count is then the whole truth, and bytes a host shows
// it holds that the capture never saw (Trace.MissedData) are not charged
// to the capture, which says it missed nothing more: they never passed
// it, and the findings resting on them stand. A simulated server that
// counted duplicate bytes as new answered a request it did not hold
// whole, and check took the missing bytes for 2 packets the capture
// dropped (INCOMPLETE) although the simulator's capture drops none.
func (c *Checker) SetCaptureDropsDeclared(said bool) { c.dropsSaid = said }

// SetNotUnderTest says which violations are charged to no
// implementation under test (a tester's packets, and what a tester broke
// on purpose): notUnder reports it of a finding as it is recorded. Such
// violations neither count toward the RPCs SetCaptureDrops's drops must
// explain nor are excused by them: the drop budget is the
// implementations', and a tester's own findings (twenty deliberate ACKs
// with no NEED_ACK, say) would otherwise keep every finding of the
// implementation that rests on a packet the capture lost a violation.
// Call it before the first Feed; nil: every violation counts.
func (c *Checker) SetNotUnderTest(notUnder func(*Finding) bool) { c.notUnderTest = notUnder }

// maxDropSubjects bounds the subjects the checker remembers for
// SetCaptureDrops while the drops are not known yet: violations at more
// RPCs than this are never excused by a capture drop (a capture that
// dropped the 43690 packets that could touch them is not worth judging).
const maxDropSubjects = 1 << 18

// captureDropMayExplain reports whether a violation of rule r with result
// res may rest on a packet not being seen: not for rules that judge each
// packet alone nor for a result marked Alone (see Rule.Alone).
func captureDropMayExplain(r *Rule, res Result) bool {
	return !r.Alone && !strings.EqualFold(r.area(), "wire") && !res.alone()
}

// noteDropSubject files the subject of a violation a capture drop may
// explain: its RPC, or for a finding without one the unordered pair of
// hosts of its frame.
func (c *Checker) noteDropSubject(rpc *RPCKey, at frameRef) {
	if c.dropOver {
		return
	}
	var h maphash.Hash
	h.SetSeed(c.dropSeed)
	if rpc != nil {
		h.WriteByte(1)
		h.Write(rpc.Client.AsSlice())
		h.Write(rpc.Server.AsSlice())
		maphash.WriteComparable(&h, rpc.ClientID)
	} else {
		p := unordered(at.src, at.dst)
		h.WriteByte(2)
		h.Write(p.a.AsSlice())
		h.WriteByte(0)
		h.Write(p.b.AsSlice())
	}
	if c.dropAt == nil {
		c.dropAt = map[uint64]struct{}{}
	}
	c.dropAt[h.Sum64()] = struct{}{}
	limit := maxDropSubjects
	if c.dropLimit > 0 {
		limit = min(limit, c.dropLimit)
	}
	if len(c.dropAt) > limit {
		c.dropOver, c.dropAt = true, nil
	}
}

// excuseDrops applies SetCaptureDrops at Finish: every violation of a
// rule a drop may explain becomes inconclusive when they are at no more
// subjects than the drops can touch.
func (c *Checker) excuseDrops() {
	if c.drops == 0 {
		return
	}
	c.report.CaptureDrops, c.report.CaptureDropLimit = c.drops, c.dropLimit
	if c.dropOver || len(c.dropAt) > c.dropLimit {
		c.report.CaptureDropTooMany = true
		return
	}
	c.report.CaptureDropExcused += c.moveViolations(CauseCaptureDrop, false, func(why string) string {
		if c.report.CaptureDropsShown != "" {
			return fmt.Sprintf("%s (%s: the capture shows it missed %s, %s, which may include one this rests on)", why, CauseCaptureDrop, plural.Of64(c.drops, "packet", "packets"), c.report.CaptureDropsShown)
		}
		return fmt.Sprintf("%s (%s: the capture dropped %d, which may include one this rests on)", why, CauseCaptureDrop, c.drops)
	})
}

// excuseMerged applies Report.Merged at Finish: every violation becomes
// inconclusive. The trace keys RPCs, messages, peers and cutoffs by
// address and id, so the state nearly every rule consults mixes the two
// instances (even a rule no missing packet can fool: a first
// transmission repeating bytes, a message_length that changes); which
// violations would stand in either capture alone only a check of each
// can tell.
func (c *Checker) excuseMerged() {
	m := c.report.Merged
	if m == nil {
		return
	}
	c.moveViolations(CauseMerged, true, func(why string) string {
		return fmt.Sprintf("%s (%s: frame %d shows two instances of %v interleaved)", why, CauseMerged, m.Frame, m.Host)
	})
}

// noteDirection files the direction of e between its hosts (Checker.dirs).
func (c *Checker) noteDirection(e *Event) {
	k := unordered(e.Src, e.Dst)
	bit := uint8(1)
	switch {
	case e.Src == e.Dst:
		bit = 3 // one host's loopback: both ends are seen
	case e.Src != k.a:
		bit = 2
	}
	if c.dirs == nil {
		c.dirs = map[pairKey]uint8{}
	}
	c.dirs[k] |= bit
	if c.dirs[k] == 3 {
		c.twoWay, c.dirs = true, nil
	}
}

// SetOneDirectionExcuse makes Finish judge whether the capture holds
// packets in one direction only between every two hosts (tcpdump -Q out,
// a filter on one source address) and, if so, set Report.OneDirection
// and make every violation a missing packet may explain inconclusive
// (CauseOneDirection). Call it before Feed.
func (c *Checker) SetOneDirectionExcuse() { c.oneWay = true }

// SetOneEndExcuse says the capture is one end of every host's link (all
// as sent or all as delivered) by its shape, not by its maker's word:
// Finish then makes every violation of a rule that relates packets
// inconclusive (CauseOneEnd, Report.OneEnd), since a host's packets and
// the packets to it are stamped at different ends, which a run judges
// as a pair (Judge.Hosts) and a check of one file cannot. Findings of
// rules about a packet's own fields (Rule.Alone, the WIRE area) stand.
// spare, when set, names the findings another excuse of the caller's
// explains (check's measured stalls): they stay violations for the caller
// to file under that excuse, as it would with the capture point given.
// Call it before Finish.
func (c *Checker) SetOneEndExcuse(spare func(*Finding) bool) {
	c.oneEnd, c.oneEndSpare = true, spare
}

// SetRestarts gives the checker the sections another view of the same
// capture began, in the order it reaches them: host restarts
// (SectionStart.At and Restarted set, From the frame of the last jump
// before them) and the whole capture's timestamp jumps (Restarted
// invalid, From their frame: TimeJumps). check's host views each see
// their own host's link, and a restart of a host seen only on its own
// and its peers' links began a section there (sectionBreak) while the
// other views judged across it; a record moved back in the file jumps
// in its own port's view only. The checker starts a new section at its
// first event that reaches each one (SectionStart.reached), unless it
// is its first event, as the whole capture's view does there. Call it
// before the first Feed.
func (c *Checker) SetRestarts(r []SectionStart) { c.restarts = r }

// excuseOneEnd applies SetOneEndExcuse at Finish.
func (c *Checker) excuseOneEnd() {
	if !c.oneEnd || c.events == 0 {
		return
	}
	c.report.OneEnd = true
	// Every rule that relates packets (not Alone, not of the WIRE area)
	// may pair packets stamped at different ends.
	relates := func(r *Rule) bool { return !r.Alone && !r.AnyEnd && !strings.EqualFold(r.area(), "wire") }
	c.report.OneEndExcused += c.moveViolationsOf(CauseOneEnd, true, relates, c.oneEndSpare, func(why string) string {
		return fmt.Sprintf("%s (%s: each packet is stamped at one end of its path only, its sender's or its receiver's, so what the other end saw when may explain it)", why, CauseOneEnd)
	})
}

// excuseOneDirection applies Report.OneDirection at Finish: when no pair
// of hosts was seen both ways, every violation a missing packet may
// explain becomes inconclusive. Such a capture (tcpdump -Q out) records
// none of the packets the other side sent, so a finding that rests on
// one (a GRANT never seen, a DATA never acknowledged) says nothing of
// the hosts; only findings about a packet's own fields stand. The
// capture drop bound then has nothing left to excuse.
func (c *Checker) excuseOneDirection() {
	if !c.oneWay || c.twoWay || c.events == 0 {
		return
	}
	c.report.OneDirection = true
	c.report.OneDirectionExcused += c.moveViolations(CauseOneDirection, false, func(why string) string {
		return fmt.Sprintf("%s (%s: the capture holds no packet in the other direction between these hosts, so the packet this rests on may be one it did not record)", why, CauseOneDirection)
	})
	c.dropAt, c.dropOver = nil, false
}

// moveViolations makes inconclusive, for cause, every violation (all)
// or every violation a capture drop may explain (Checker.record counts
// them per rule in dropViolated), rewording the kept findings with why,
// and returns how many it moved. The counts are moved once: the next
// call finds none.
func (c *Checker) moveViolations(cause Cause, all bool, why func(string) string) int {
	return c.moveViolationsOf(cause, all, nil, nil, why)
}

// moveViolationsOf is moveViolations of the rules pick accepts (nil:
// every rule), leaving, when all, the violations spare accepts (nil:
// none) where they are.
func (c *Checker) moveViolationsOf(cause Cause, all bool, pick func(*Rule) bool, spare func(*Finding) bool, why func(string) string) int {
	moved := map[string]bool{}
	first := map[string]int{}
	spared := map[int]bool{}
	kept := map[string]int{}
	for i := range c.report.Violations {
		f := &c.report.Violations[i]
		if all && spare != nil && spare(f) {
			spared[i] = true
			kept[f.Rule]++
			continue
		}
		if _, ok := first[f.Rule]; !ok || f.Frame < first[f.Rule] {
			first[f.Rule] = f.Frame
		}
	}
	total := 0
	for i, st := range c.state {
		r := c.rules[i]
		if pick != nil && !pick(r) {
			continue
		}
		n, frame := st.dropViolated, st.firstViolation
		if all {
			n = st.res.Violated - kept[r.ID]
			if f, ok := first[r.ID]; ok && (frame == 0 || f < frame) {
				frame = f
			}
		}
		if n == 0 {
			continue
		}
		moved[r.ID] = true
		st.res.Violated -= n
		st.res.Inconclusive += n
		st.dropViolated = 0
		total += n
		k := [2]string{r.ID, string(cause)}
		c.downs[k] = &DowngradeCount{Rule: r.ID, Cause: cause, Count: n, Frame: frame}
	}
	if len(moved) == 0 {
		return 0
	}
	stay := c.report.Violations[:0]
	for i := range c.report.Violations {
		f := c.report.Violations[i]
		if !moved[f.Rule] || (f.alone || f.notUnderTest) && !all || spared[i] {
			stay = append(stay, f)
			continue
		}
		i := c.ruleIndex(f.Rule)
		if st := c.state[i]; st.keptInc < MaxFindings {
			st.keptInc++
			c.found++
			f.Cause = cause
			f.Why = why(f.Why)
			f.seq = c.found
			c.report.Inconclusive = append(c.report.Inconclusive, f)
		}
	}
	clear(c.report.Violations[len(stay):])
	c.report.Violations = stay
	return total
}

// noteMissed adds the DATA packets the current section's trace shows
// the capture missed (Trace.MissedData) to the capture's count, once.
func (c *Checker) noteMissed() {
	n, ev := c.trace.MissedData()
	if n > c.shown.counted {
		if c.shown.n == 0 {
			c.shown.ev = ev
		}
		c.shown.n += n - c.shown.counted
		c.shown.counted = n
	}
}

// ruleIndex returns the index of the rule with ID id (-1: none).
func (c *Checker) ruleIndex(id string) int {
	for i, r := range c.rules {
		if r.ID == id {
			return i
		}
	}
	return -1
}

// record records res of rule i at the frame at (the current event e's,
// or an earlier one's, e then nil or another event) about RPC rpc: a
// violation the network's duplicate or the capture's start explains is
// inconclusive, and a level violation at an IPv4 packet waits for the
// packets of its socket after it (tosRace); file records the rest.
func (c *Checker) record(i int, e *Event, at frameRef, rpc *RPCKey, res Result) {
	if res.Status == NotApplicable {
		return
	}
	c.recorded++
	mayMiss := captureDropMayExplain(c.rules[i], res)
	c.found++
	seq := c.found
	level := c.props[i].form == formEach && c.props[i].each.JudgesLevel && e != nil && e.Frame == at.frame
	if level {
		switch res.Status {
		case Passed:
			c.race.passed(i, e)
		case Violated:
			c.race.judged = true
			c.race.want |= res.wanted()
			if t := res.wantedAfter(); t.After(c.race.after) {
				c.race.after = t
			}
		}
	}
	if res.Status == Violated {
		if ev, ok := c.net.Duplicate(); ok && e != nil && e.Frame == at.frame {
			res = Downgrade(CauseDuplicate, ev, "%s", res.Why())
		} else if ev, ok := c.startedBefore(mayMiss && !res.ranBefore(), rpc, e); ok {
			res = Downgrade(CauseCaptureStart, ev, "%s", res.Why()).WithSlack(res.Slack)
		} else if level {
			var held bool
			if res, held = c.raceExcuse(i, e, at, rpc, res, mayMiss, seq); held {
				return
			}
		}
	}
	c.file(i, at, rpc, res, mayMiss, seq)
}

// file counts res (not NotApplicable) of rule i at the frame at about RPC
// rpc and keeps it as a finding unless it is a pass; mayMiss says a
// packet the capture lacks may explain a violation of it
// (captureDropMayExplain, asked of the rule's own result); seq is the
// finding's number (Finding.seq).
func (c *Checker) file(i int, at frameRef, rpc *RPCKey, res Result, mayMiss bool, seq uint64) {
	st := c.state[i]
	if res.Status == Passed && res.Cause() == "" {
		// A plain pass is only counted: no Finding is built (it would
		// escape to the heap at every obligation met).
		st.res.Checked++
		st.res.MaxSlack = max(st.res.MaxSlack, res.Slack)
		st.res.Passed++
		return
	}
	r := c.rules[i]
	frame, t := at.frame, at.time
	st.res.Checked++
	if res.Slack > st.res.MaxSlack {
		st.res.MaxSlack = res.Slack
	}
	f := Finding{Rule: r.ID, Level: r.Level, Frame: frame, Frames: res.Frames(), Time: t, RPC: rpc, Why: res.Why(), Slack: res.Slack, Late: res.Late(), Cause: res.Cause(),
		Src: at.src, Dst: at.dst, ChargedTo: at.src, Note: at.note, alone: !mayMiss, seq: seq}
	f.Early, f.EarlyAt, f.EarlyRef = res.Early()
	f.Since = res.Since()
	if res.detail != nil {
		f.Also = res.detail.about
	}
	if r.ChargesReceiver() {
		f.ChargedTo = at.dst
	}
	if res.Status == Violated && mayMiss { // (not downgraded above)
		if c.notUnderTest != nil && c.notUnderTest(&f) {
			f.notUnderTest = true
		} else {
			if st.firstViolation == 0 || frame < st.firstViolation {
				st.firstViolation = frame
			}
			st.dropViolated++
			c.noteDropSubject(rpc, at)
		}
	}
	if res.Cause() != "" {
		k := [2]string{r.ID, string(res.Cause())}
		d := c.downs[k]
		if d == nil {
			d = &DowngradeCount{Rule: r.ID, Cause: res.Cause(), Frame: frame}
			c.downs[k] = d
		}
		d.Count++
		d.Frame = min(d.Frame, frame)
	}
	switch res.Status {
	case Passed:
		st.res.Passed++
	case Violated:
		st.res.Violated++
		if st.kept < MaxFindings {
			st.kept++
			c.report.Violations = append(c.report.Violations, f)
		}
	case Inconclusive:
		st.res.Inconclusive++
		if st.keptInc < MaxFindings {
			st.keptInc++
			c.report.Inconclusive = append(c.report.Inconclusive, f)
		}
	}
}

// Feed evaluates every rule on e (against the state before e), then
// applies e to the trace. It visits only the rules that may act on e's
// packet type (plus every open obligation) and allocates nothing for a
// packet that only passes.
func (c *Checker) Feed(e *Event) { c.feed(e, true) }

func (c *Checker) feed(e *Event, learn bool) {
	if e.Partial() && e.Packet.Complete() {
		// The snap length took only bytes no receiver reads (an ACK's
		// unused acks slots): the packet is judged as the whole one.
		pe := *e
		pe.Err = nil
		e = &pe
	}
	// since is e's time less the previous event's (0 at the first).
	var since time.Duration
	if c.events > 0 {
		if since = subTime(e.Time, c.last); since > 0 {
			c.elapsed += since
		}
	}
	if why, host := c.sectionBreak(e); why != "" {
		c.newSection(e, why, host)
	}
	c.openGap(e, since)
	if len(c.race.held) > 0 {
		c.raceExpire()
	}
	if c.events == 0 || e.Time.Before(c.earliest) {
		c.earliest = e.Time
	}
	c.last, c.lastFrame = e.Time, e.Frame
	c.events++
	if c.oneWay && !c.twoWay {
		c.noteDirection(e)
	}
	if c.events%4096 == 0 {
		c.pruneAfter()
	}
	c.rpcOK, c.rpcPtr, c.predictedNow = hasRPC(e), nil, false
	if c.rpcOK {
		c.rpc = c.trace.begin(e)
	} else {
		c.trace.begin(e)
	}
	if c.gap != nil {
		c.noteGap(e)
	}
	c.memoBefore(e)
	c.net.observe(c.trace, e)
	switch cls := classOf(e); {
	case c.reference && e.Partial():
		// The rules' own conditions: Malformed ones take e as it is, those
		// that take its readable part a packet of its type.
		pe := *e
		pe.Err = nil
		for i := range c.props {
			if cp := &c.props[i]; !(cp.form == formEach && cp.each.Malformed) && cp.takesPartial(pe.Packet) {
				c.rpcOK, c.rpcPtr = hasRPC(&pe), nil
				c.rpc = c.trace.begin(&pe)
				c.evalRule(i, &pe)
			} else {
				c.rpcOK, c.rpcPtr = false, nil
				c.trace.begin(e)
				c.evalRule(i, e)
			}
		}
		c.rpcOK, c.rpcPtr = false, nil
		c.trace.begin(e)
	case c.reference:
		for i := range c.props {
			c.evalRule(i, e)
		}
	case e.Partial():
		c.feedPartial(e)
	case cls < classTypes:
		c.feedType(cls, e)
	default:
		for _, i := range c.byClass[cls] {
			c.evalRule(i, e)
		}
	}
	if c.race.want != 0 || c.race.judged || len(c.race.held) > 0 {
		c.raceNote(e)
	}
	if e.Partial() {
		c.trace.notePartial(e)
	}
	if c.inf != nil {
		if learn {
			c.inf.feed(e)
		}
	}
	if c.predictedNow {
		c.applyPredicted(e)
	} else {
		c.trace.Apply(e)
	}
	c.noteEpoch(e)
	if c.report.Merged == nil && !c.oneInstance {
		c.report.Merged = c.merge.feed(e)
	}
	if c.seen != stateGates {
		c.seen = c.trace.seen()
	}
}

// stateGates are the gates of states the trace reaches (Trace.seen).
const stateGates = NeedsICMPSeen | NeedsRPCUnknownSeen | NeedsCutoffsSeen

// missing returns the gates (Each.Needs) that e, a well-formed packet,
// misses.
func (c *Checker) missing(e *Event) Gate {
	m := stateGates &^ c.seen
	if e.Type() == wire.TypeData {
		d := e.Packet.Data()
		if d.Retransmit() == 0 {
			m |= NeedsRetransmit
		}
		if d.AckClientID() == 0 {
			m |= NeedsPiggyAck
		}
	}
	if !e.IPv6() {
		m |= NeedsIPv6
	}
	if !e.IP.Known {
		m |= NeedsIPHeader
	}
	return m
}

// feedType runs on e, a well-formed packet of dispatch class cls, the
// rules that act on its type and those with open obligations, in rule
// order. It is evalRule without the checks typeSet has made.
func (c *Checker) feedType(cls int, e *Event) {
	set := c.typeSet[cls]
	skip := &c.gateMask[c.missing(e)]
	if c.verify {
		c.verifyGates(&set, skip, e)
	}
	for w := range set {
		set[w] &^= skip[w]
	}
	// memo ≥ 0: e is DATA that may record what its rule stage does (or
	// that memo pm predicts it: predict); visited and passed collect that.
	memo, visited, clean := -1, set, true
	var pm *dataMemo
	var passed, called ruleSet
	var facts DataFact
	if c.hasUsual && e.Type() == wire.TypeData {
		if memo, pm = c.predict(e, &set); pm != nil {
			c.predictedNow = true
			if !c.verify {
				c.feedPredicted(pm, &set, e)
				return
			}
		}
		// The rules whose Usual result the packet's facts decide are
		// counted here, without a call: no finding comes of them, so the
		// order of the others' findings is unchanged.
		facts = c.dataFacts(e)
		d := c.usual.decided(facts)
		if c.verify {
			c.verifyUsual(&set, &d, e)
		}
		var pass ruleSet
		lv := uint64(0)
		for w := range set {
			d[w] &= set[w]
			set[w] &^= d[w]
			pass[w] = d[w] & c.usual.pass[w]
			c.race.right[w] |= pass[w] & c.levels[w]
			lv |= pass[w] & c.levels[w]
		}
		c.countPasses(&pass)
		if lv != 0 {
			// A level rule's Usual pass: the packet wanted its level.
			c.race.want |= e.PriorityBits()
		}
		passed = pass
	}
	for w := range set {
		set[w] |= c.open[w]
	}
	for w, bits := range set {
		for bits != 0 {
			i := w*64 + mbits.TrailingZeros64(bits)
			bits &= bits - 1
			st := c.state[i]
			switch cp := &c.props[i]; cp.form {
			case formEach:
				// recordHere by hand: the Result stays in registers on a pass.
				// A Timed rule is called at predicted packets too: its
				// result is none of the memo's.
				if res := cp.each.Check(&c.ctx, e); res.Status == Passed && res.Cause() == "" {
					if res.Slack > st.res.MaxSlack && !cp.each.Timed {
						clean = false
					}
					st.pass(res.Slack)
					if cp.each.JudgesLevel {
						c.race.passed(i, e)
					}
					if !cp.each.Timed {
						passed.add(i)
					}
				} else if res.Status != NotApplicable {
					c.recordFinding(i, e, &res)
					clean = clean && cp.each.Timed
				}
				if cp.each.Timed {
					called.add(i)
				}
			case formAtMost:
				n, rec := st.res.Passed, c.recorded
				c.atMost(i, st, &cp.atMost, e)
				if st.res.Passed != n {
					passed.add(i)
				}
				clean = clean && c.recorded == rec
			case formWithin:
				c.judge(i, st, &cp.within, e, false)
				rec, seq := c.recorded, c.seq
				c.withinTrigger(i, st, &cp.within, e, false)
				clean = clean && c.recorded == rec && c.seq == seq
			case formAfter:
				c.after(i, st, &cp.after, e)
			}
		}
	}
	if memo >= 0 {
		if pm != nil {
			c.verifyPredicted(pm, &visited, &passed, &called, clean, e)
		}
		c.remember(memo, e, &visited, &passed, &called, clean, facts)
	}
}

// evalRule runs rule i on e with the rule's own conditions on e's kind
// (ICMP, malformed) and type.
func (c *Checker) evalRule(i int, e *Event) {
	icmp := e.ICMP != nil
	st := c.state[i]
	switch cp := &c.props[i]; cp.form {
	case formEach:
		p := &cp.each
		if icmp && !p.ICMP || e.Err != nil && !p.Malformed || e.Err == nil && !icmp && !typeIn(e.Type(), p.Types) {
			return
		}
		res := p.Check(&c.ctx, e)
		if p.Needs != 0 && e.Err == nil && !icmp && p.Needs&c.missing(e) != 0 {
			verifyPrefilter(c.rules[i], "Needs", e, func() bool { return res.Status != NotApplicable })
		}
		c.recordHere(i, e, res)
	case formAtMost:
		if e.Err != nil || icmp || !typeIn(e.Type(), cp.atMost.Types) {
			return
		}
		c.atMost(i, st, &cp.atMost, e)
	case formWithin:
		if e.Err != nil {
			return
		}
		c.within(i, st, &cp.within, e, icmp)
	case formAfter:
		if e.Err != nil || icmp && !cp.after.ICMP {
			return
		}
		c.after(i, st, &cp.after, e)
	}
}

// atMost runs AtMost rule i on e, an event of one of its Types.
func (c *Checker) atMost(i int, st *ruleState, p *AtMost, e *Event) {
	v, lim, ok := p.Measure(&c.ctx, e)
	if !ok {
		return
	}
	if v > lim {
		c.recordHere(i, e, Violation("%s is %d, above the limit %d", p.What(e), v, lim))
	} else {
		st.pass(0)
	}
}

// after runs After rule i on e (well-formed, or ICMP when the rule
// takes ICMP): B is judged against the A keys seen, then A may file e's.
func (c *Checker) after(i int, st *ruleState, p *After, e *Event) {
	if len(p.BTypes) > 0 && !typeIn(e.Type(), p.BTypes) {
		verifyPrefilter(c.rules[i], "BTypes", e, func() bool { _, ok := p.B(&c.ctx, e); return ok })
	} else if kb, ok := p.B(&c.ctx, e); ok {
		_, j, seen := c.findA(i, st, &kb)
		var a aSlot
		if seen {
			a = st.seenAt[j]
		}
		switch {
		case !seen:
			c.recordHere(i, e, Violation("%s", p.Missing))
		case p.Bound != nil && c.elapsed-a.at > p.Bound(c.p):
			// A timing finding: its tolerance and the A packet's frame let
			// a stall measured between the two explain it (stall.Explaining).
			c.recordHere(i, e, Violation("%s: the last one was %v earlier, over %v",
				p.Missing, (c.elapsed-a.at).Round(time.Microsecond), p.Bound(c.p)).WithSlack(p.Bound(c.p)).WithLate(c.elapsed-a.at-p.Bound(c.p)).With(a.frame))
		default:
			st.pass(0)
		}
	}
	if len(p.ATypes) > 0 && !typeIn(e.Type(), p.ATypes) {
		verifyPrefilter(c.rules[i], "ATypes", e, func() bool { _, ok := p.A(&c.ctx, e); return ok })
		return
	}
	if ka, ok := p.A(&c.ctx, e); ok {
		if ref, j, had := c.findA(i, st, &ka); had {
			st.seenAt[j].at, st.seenAt[j].frame = c.elapsed, e.Frame
		} else {
			j = st.slotA(c.elapsed)
			st.seenAt[j].frame, st.seenAt[j].key = e.Frame, ka
			st.seenA[ka] = j
			st.aged.Push(agedKey{slot: j, at: c.elapsed})
			if ref != nil {
				*ref = afterSlot{slot: j, gen: st.seenAt[j].gen}
			}
		}
	}
}

// aSlot is an After key's slot: the key, Checker.elapsed and the frame
// of its latest A, its position in ruleState.aged (-1: none), and a
// generation that changes when the slot is freed, so that an RPC's cached
// afterSlot can tell it is stale.
type aSlot struct {
	key    rpcMsgKey
	at     time.Duration
	frame  int
	gen    uint32
	heapAt int32
}

// afterSlot is an RPC's cache of the seenAt slot of one of its After
// keys (gen 0: none).
type afterSlot struct {
	slot int32
	gen  uint32
}

// findA returns After rule i's slot for key k (ok: k was seen), and the
// current RPC's cache entry for k (nil when k is not about the current
// event's RPC), filled on a map hit.
func (c *Checker) findA(i int, st *ruleState, k *rpcMsgKey) (*afterSlot, int32, bool) {
	var ref *afterSlot
	if r := c.trace.curRPC; r != nil && c.rpcOK && k.Sender <= 1 && k.RPC == r.Key {
		if r.after == nil {
			r.after = make([]afterSlot, 2*c.nAfter)
		}
		ref = &r.after[2*c.afterOrd[i]+int(k.Sender)]
		if ref.gen != 0 && st.seenAt[ref.slot].gen == ref.gen {
			return ref, ref.slot, true
		}
	}
	j, ok := st.seenA[*k]
	if ok && ref != nil {
		*ref = afterSlot{slot: j, gen: st.seenAt[j].gen}
	}
	return ref, j, ok
}

// slotA returns a free slot of seenAt holding at.
func (st *ruleState) slotA(at time.Duration) int32 {
	if n := len(st.freeA); n > 0 {
		j := st.freeA[n-1]
		st.freeA = st.freeA[:n-1]
		st.seenAt[j].at = at
		return j
	}
	st.seenAt = append(st.seenAt, aSlot{at: at, gen: 1})
	return int32(len(st.seenAt) - 1)
}

// within runs Within rule i on e: open obligations past their deadline
// are missed, matching ones pass, excused ones close; then e may open
// one.
func (c *Checker) within(i int, st *ruleState, p *Within, e *Event, icmp bool) {
	c.judge(i, st, p, e, icmp)
	c.withinTrigger(i, st, p, e, icmp)
}

// judge judges Within rule i's open obligations at e (judgeOpen), if it
// has any.
func (c *Checker) judge(i int, st *ruleState, p *Within, e *Event, icmp bool) {
	if len(st.open) > 0 {
		c.judgeOpen(i, st, p, e, icmp)
		if len(st.open) == 0 {
			c.open.remove(i)
		}
	}
}

// withinTrigger is within after the open obligations were judged: e may
// open one.
func (c *Checker) withinTrigger(i int, st *ruleState, p *Within, e *Event, icmp bool) {
	if icmp || e.Err != nil {
		return
	}
	if len(p.TriggerTypes) > 0 && !typeIn(e.Type(), p.TriggerTypes) {
		verifyPrefilter(c.rules[i], "TriggerTypes", e, func() bool { _, ok := p.Trigger(&c.ctx, e); return ok })
		return
	}
	c.trigger(i, st, p, e)
}

// verifyGates calls the rules of set that skip (Each.Needs, After.Needs,
// missed by e) spares, and panics if one would have acted
// (verifyPrefilter).
func (c *Checker) verifyGates(set, skip *ruleSet, e *Event) {
	for w := range set {
		for bits := set[w] & skip[w]; bits != 0; bits &= bits - 1 {
			i := w*64 + mbits.TrailingZeros64(bits)
			if cp := &c.props[i]; cp.form == formAfter {
				p := &cp.after
				verifyPrefilter(c.rules[i], "Needs", e, func() bool {
					_, b := p.B(&c.ctx, e)
					_, a := p.A(&c.ctx, e)
					return (len(p.BTypes) == 0 || typeIn(e.Type(), p.BTypes)) && b || (len(p.ATypes) == 0 || typeIn(e.Type(), p.ATypes)) && a
				})
				continue
			}
			p := &c.props[i].each
			verifyPrefilter(c.rules[i], "Needs", e, func() bool { return p.Check(&c.ctx, e).Status != NotApplicable })
		}
	}
}

// verifyUsual calls the rules of set that decided (the Usual results the
// facts of e, a DATA packet, decide) would spare, and panics if one gives
// another result than its Usual declares.
func (c *Checker) verifyUsual(set, decided *ruleSet, e *Event) {
	for w := range set {
		for bits := set[w] & decided[w]; bits != 0; bits &= bits - 1 {
			i := w*64 + mbits.TrailingZeros64(bits)
			if cp := &c.props[i]; cp.form == formWithin {
				c.ctx.open = c.state[i].open
				_, ok := cp.within.Trigger(&c.ctx, e)
				c.ctx.open = nil
				if ok {
					panic(fmt.Sprintf("rule %s: Usual says Trigger opens nothing at facts %#x, but it does at %v frame %d", c.rules[i].ID, cp.within.Usual.When, e.Type(), e.Frame))
				}
			} else if res := cp.each.Check(&c.ctx, e); res.Status != cp.each.Usual.Then || res.Slack != 0 || res.detail != nil {
				panic(fmt.Sprintf("rule %s: Usual declares %v at facts %#x, but Check gives %v (slack %v, %q) at %v frame %d", c.rules[i].ID, cp.each.Usual.Then, cp.each.Usual.When, res.Status, res.Slack, res.Why(), e.Type(), e.Frame))
			}
			c.usualVerified++
		}
	}
}

// verifyPrefilters makes the Checker also ask the functions a pre-filter
// (Within.TriggerTypes, After.ATypes and BTypes) spares them, and panic if
// one would have acted: a pre-filter must be a superset of what its
// function accepts, or it would hide findings; and likewise Each.Check for
// the packets its Needs spares. The spec package's tests set it
// (TestMain), so every rule test checks the rules' pre-filters.
var verifyPrefilters bool

// verifyPrefilter panics, under verifyPrefilters, if asked (the function
// that rule r's pre-filter named filter spared at e) reports it would
// have acted.
func verifyPrefilter(r *Rule, filter string, e *Event, asked func() bool) {
	if verifyPrefilters && asked() {
		panic(fmt.Sprintf("rule %s: %s excludes %v (frame %d), which its function acts on", r.ID, filter, e.Type(), e.Frame))
	}
}

// judgeOpen judges rule i's open obligations at e: those past their
// deadline are missed, matching ones pass, excused ones close.
func (c *Checker) judgeOpen(i int, st *ruleState, p *Within, e *Event, icmp bool) {
	bound := p.Bound(c.p)
	cl := c.closing[:0]
	visit := func(o *pending) {
		if o.closed || o.visited == c.events {
			return
		}
		o.visited = c.events
		c.visits++
		k := o.o.Key
		if p.Witness {
			if !icmp && o.o.match(&c.ctx, e) {
				// Confirm weighs the network's evidence itself: the
				// loss that excuses a missed answer does not excuse this.
				cl = append(cl, closing{key: k, o: o, res: o.o.confirm(&c.ctx, e), noEvent: true})
			}
			return
		}
		age := c.elapsed - o.at
		match := func() bool {
			if icmp {
				return o.o.MatchICMP != nil && o.o.MatchICMP(&c.ctx, e)
			}
			return o.o.match(&c.ctx, e)
		}
		miss := func(why Result) closing {
			return closing{key: k, o: o, m: &missed{rule: i, ref: o.ref, rpc: o.rpcKey(), res: why.WithSlack(bound).WithLate(age - bound), from: o.o.From, to: o.o.To, control: o.o.control, arrived: arrived(o.o)}}
		}
		switch {
		case age > bound && o.o.OnlyLate:
			if match() {
				cl = append(cl, miss(Violation("%s came only %v later (frame %d), over the %v allowed", o.o.expect(), age.Round(time.Microsecond), e.Frame, bound).With(e.Frame)))
			} else {
				o.overdue = true
			}
		case age > bound:
			// Past the deadline: even a matching packet comes too late.
			why := Violation("no %s within %v (next packet %v later, frame %d)", o.o.expect(), bound, age.Round(time.Microsecond), e.Frame)
			if match() {
				why = Violation("%s came only %v later (frame %d), over the %v allowed", o.o.expect(), age.Round(time.Microsecond), e.Frame, bound).With(e.Frame)
			} else if r, ok := mootAt(&c.ctx, o.o); ok {
				cl = append(cl, closing{key: k, o: o, res: r, noEvent: true})
				return
			}
			cl = append(cl, miss(why))
		case match():
			cl = append(cl, closing{key: k, o: o, res: Pass().WithSlack(bound)})
		case !icmp:
			if why, ok := o.o.excuse(&c.ctx, e); ok {
				cl = append(cl, closing{key: k, o: o, res: Unsure("%s (frame %d)", why, e.Frame).With(e.Frame)})
			}
		}
	}
	if st.held {
		if !icmp { // a Witness obligation matches no ICMP event
			c.judgeHeld(st, e, visit)
		}
	} else if !st.scoped {
		for _, o := range st.unscoped {
			visit(o)
		}
	} else if icmp {
		// Every one: an ICMP event names no RPC of its own.
		for _, o := range st.open {
			visit(o)
		}
	} else {
		// Those past their deadline, in deadline order; the OnlyLate
		// ones among them stay open, asked at every event.
		for len(st.deadlines) > 0 {
			o := st.deadlines[0]
			if !o.closed && c.elapsed-o.at <= bound {
				break
			}
			st.deadlines[0] = nil
			st.deadlines = st.deadlines[1:]
			if o.closed {
				continue
			}
			visit(o)
			if o.o.OnlyLate {
				st.late[o] = struct{}{}
			}
		}
		for o := range st.late {
			visit(o)
		}
		c.touches(e, func(k RPCKey) {
			for _, o := range st.byRPC[k] {
				visit(o)
			}
		})
	}
	if len(cl) > 1 {
		sort.Slice(cl, func(a, b int) bool { return cl[a].o.seq < cl[b].o.seq })
	}
	for _, x := range cl {
		switch {
		case x.m != nil:
			c.missed = append(c.missed, *x.m)
		case x.noEvent:
			c.record(i, nil, x.o.ref, x.o.rpcKey(), x.res)
		default:
			c.record(i, e, x.o.ref, x.o.rpcKey(), x.res)
		}
		st.close(x.o)
	}
	clear(cl)
	c.closing = cl[:0]
}

// judgeHeld visits the open obligations of a Witness rule whose
// obligations carry Obligation.held that e may match: those of the RPCs e
// touches (its own, and those its ACK entries or piggy-backed ack name)
// or the previous event touched (ruleState.touched), and those of e's
// socket heldWindow admits. Under verifyPrefilters it asks every other
// one too, and panics if one would have matched.
func (c *Checker) judgeHeld(st *ruleState, e *Event, visit func(*pending)) {
	each := func(k RPCKey) {
		for _, o := range st.byRPC[k] {
			visit(o)
		}
	}
	// What the previous event applied to its RPCs.
	for _, k := range st.touched {
		each(k)
	}
	st.touched = st.touched[:0]
	if e.Err == nil && hasRPC(e) {
		// Its own RPC, and those an ack names, keyed as the trace and
		// acksRPC key them (a piggy-backed ack of id 0 included: acksRPC
		// takes it for RPC 0's).
		st.touched = append(st.touched, KeyOf(e))
		switch e.Type() {
		case wire.TypeAck:
			a := e.Packet.Ack()
			for j := range a.ValidAcks() {
				st.touched = append(st.touched, RPCKey{Client: e.Src, Server: e.Dst, ClientID: a.Entry(j).ClientID})
			}
		case wire.TypeData:
			st.touched = append(st.touched, RPCKey{Client: e.Src, Server: e.Dst, ClientID: e.Packet.Data().AckClientID()})
		}
		for _, k := range st.touched {
			each(k)
		}
		if l := st.bySock[HostPort{e.Src, e.Packet.Common().Sport()}]; len(l) > 0 {
			if lo, hi, ok := heldWindow(&c.ctx, e); ok {
				j := sort.Search(len(l), func(j int) bool { return !l[j].o.held.deadline.Before(hi) })
				for _, o := range l[sort.Search(j, func(j int) bool { return l[j].o.held.at.After(lo) }):j] {
					visit(o)
				}
			}
		}
	}
	if verifyPrefilters {
		for _, o := range st.open {
			if !o.closed && o.visited != c.events && o.o.match(&c.ctx, e) {
				panic(fmt.Sprintf("an obligation held for RPC %v matches frame %d, which judgeHeld does not ask it about", o.o.RPC, e.Frame))
			}
		}
	}
}

// touches calls fn with each RPC e may act on for a Scoped obligation
// (Obligation.RPC): its own, and for an ACK the RPCs its acks name.
func (c *Checker) touches(e *Event, fn func(RPCKey)) {
	if e.Err != nil || !hasRPC(e) {
		return
	}
	fn(KeyOf(e))
	if e.Type() == wire.TypeAck {
		a := e.Packet.Ack()
		for j := range a.ValidAcks() {
			fn(RPCKey(wire.KeyOf(e.Src, e.Dst, a.Entry(j).ClientID)))
		}
	}
}

// add files a new open obligation o of rule r (see ruleState.scoped). A
// rule whose obligations are Scoped only sometimes is a programming
// error: it panics.
func (st *ruleState) add(r *Rule, o *pending, witness bool) {
	held := witness && o.o.held.sock.Addr.IsValid()
	if len(st.open) == 0 && len(st.deadlines) == 0 {
		st.scoped = o.o.Scoped && !witness
		st.held = held
		// judgeHeld did not run at the trigger's event (nothing was
		// open): the trace applies it to the obligation's RPC.
		st.touched = append(st.touched[:0], o.o.RPC)
	} else if st.scoped != (o.o.Scoped && !witness) || st.held != held {
		panic(fmt.Sprintf("rule %s: Obligation.Scoped and held must be the same for all of a rule's obligations (Scoped unset for a Witness, held set only there)", r.ID))
	}
	st.open[o.o.Key] = o
	if st.held {
		if st.byRPC == nil {
			st.byRPC = map[RPCKey][]*pending{}
			st.bySock = map[HostPort][]*pending{}
		}
		st.byRPC[o.o.RPC] = append(st.byRPC[o.o.RPC], o)
		l := st.bySock[o.o.held.sock]
		d := o.o.held.deadline
		j := sort.Search(len(l), func(j int) bool { return l[j].o.held.deadline.After(d) })
		if j > 0 && o.o.held.at.Before(l[j-1].o.held.at) || j < len(l) && o.o.held.at.After(l[j].o.held.at) {
			panic(fmt.Sprintf("rule %s: Obligation.held's deadline-at must be the same for all of a rule's obligations", r.ID))
		}
		l = append(l, nil)
		copy(l[j+1:], l[j:])
		l[j] = o
		st.bySock[o.o.held.sock] = l
		return
	}
	if !st.scoped {
		st.unscoped = append(st.unscoped, o)
		return
	}
	st.deadlines = append(st.deadlines, o)
	if st.byRPC == nil {
		st.byRPC = map[RPCKey][]*pending{}
		st.late = map[*pending]struct{}{}
	}
	st.byRPC[o.o.RPC] = append(st.byRPC[o.o.RPC], o)
}

// close removes open obligation o (its queue entry goes when reached).
func (st *ruleState) close(o *pending) {
	o.closed = true
	delete(st.open, o.o.Key)
	if st.held {
		st.unfile(o)
		l := st.bySock[o.o.held.sock]
		d := o.o.held.deadline
		for j := sort.Search(len(l), func(j int) bool { return !l[j].o.held.deadline.Before(d) }); j < len(l); j++ {
			if l[j] == o {
				copy(l[j:], l[j+1:])
				l[len(l)-1] = nil
				l = l[:len(l)-1]
				break
			}
		}
		if len(l) == 0 {
			delete(st.bySock, o.o.held.sock)
		} else {
			st.bySock[o.o.held.sock] = l
		}
		return
	}
	if !st.scoped {
		for j, x := range st.unscoped {
			if x == o {
				n := len(st.unscoped) - 1
				copy(st.unscoped[j:], st.unscoped[j+1:])
				st.unscoped[n] = nil
				st.unscoped = st.unscoped[:n]
				break
			}
		}
	} else {
		delete(st.late, o)
		st.unfile(o)
	}
}

// unfile removes o from byRPC.
func (st *ruleState) unfile(o *pending) {
	l := st.byRPC[o.o.RPC]
	for j, x := range l {
		if x == o {
			l = append(l[:j], l[j+1:]...)
			break
		}
	}
	if len(l) == 0 {
		delete(st.byRPC, o.o.RPC)
	} else {
		st.byRPC[o.o.RPC] = l
	}
}

// trigger asks Within rule i's Trigger about e and opens the obligation it
// gives, if any.
func (c *Checker) trigger(i int, st *ruleState, p *Within, e *Event) {
	c.ctx.open = st.open
	o, ok := p.Trigger(&c.ctx, e)
	c.ctx.open = nil
	if ok && o.Now.Status != NotApplicable {
		c.recordHere(i, e, o.Now)
		return
	}
	if ok {
		if !o.From.IsValid() {
			o.From = e.Src
			if p.SenderOwes {
				o.From = e.Dst // the peer: loss between it and To excuses
			}
		}
		if !o.To.IsValid() {
			o.To = e.Dst
			if p.SenderOwes {
				o.To = e.Src
			}
		}
		o.control = e.Type() != wire.TypeData
		// A trigger whose key already has an open obligation is
		// folded into it: the open one keeps its earlier deadline
		// (a repeated trigger, such as NEED_ACK sent every tick,
		// must not postpone it) and the packet that discharges it
		// answers both. A trigger whose Excuse already applies
		// is inconclusive at once.
		if _, dup := st.open[o.Key]; !dup {
			if why, excused := o.excuse(&c.ctx, e); excused {
				c.recordHere(i, e, Unsure("%s", why))
			} else {
				c.seq++
				st.add(c.rules[i], &pending{o: o, ref: refOf(e), at: c.elapsed, rpc: c.rpc, rpcOK: c.rpcOK, seq: c.seq, visited: -1}, p.Witness)
				c.open.add(i)
			}
		}
	}
}

// mootAt asks obligation o's Moot, if any, at its missed deadline: a
// reason makes the miss inconclusive.
func mootAt(c *Ctx, o Obligation) (Result, bool) {
	if o.Moot == nil {
		return Result{}, false
	}
	if why, ok := o.Moot(c); ok {
		return Unsure("%s", why), true
	}
	return Result{}, false
}

// pruneAfter forgets After triggers older than IdleEvictAfter of capture
// time, as the trace forgets idle RPCs, so that memory follows the live
// RPCs and not the length of the capture (forgetAfter forgets those of an
// RPC the trace forgets sooner).
// Each key is filed once in its rule's heap by the time it was filed
// with; a key seen again since is refiled at its latest time when it
// comes up, so the work is O(log keys) per key per IdleEvictAfter.
func (c *Checker) pruneAfter() {
	for _, st := range c.state {
		for st.aged.Len() > 0 && c.elapsed-st.aged.Min().at > IdleEvictAfter {
			a := st.aged.Pop()
			if at := st.seenAt[a.slot].at; c.elapsed-at > IdleEvictAfter {
				st.freeSlotA(a.slot)
			} else {
				st.aged.Push(agedKey{slot: a.slot, at: at})
			}
		}
	}
}

// forgetAfter forgets the After keys of r, an RPC the trace forgot
// (Trace.evict: finished and idle for EvictAfter, or idle for
// IdleEvictAfter): a later packet of it is judged as one of an RPC that
// started before the capture, and the keys would only hold memory for
// IdleEvictAfter more (a switch mirror's minute of finished RPCs).
func (c *Checker) forgetAfter(r *RPC) {
	c.forgetMemoOf(r)
	if c.nAfter == 0 {
		return
	}
	for i, cp := range c.props {
		if cp.form != formAfter {
			continue
		}
		st := c.state[i]
		for _, s := range [...]wire.Role{wire.RoleClient, wire.RoleServer} {
			if j, ok := st.seenA[rpcMsgKey{RPC: r.Key, Sender: s}]; ok {
				if h := st.seenAt[j].heapAt; h >= 0 {
					st.aged.Remove(int(h))
				}
				st.freeSlotA(j)
			}
		}
	}
}

// freeSlotA forgets the key in slot j (out of aged already) and frees
// the slot.
func (st *ruleState) freeSlotA(j int32) {
	delete(st.seenA, st.seenAt[j].key)
	st.seenAt[j].gen++ // stales RPCs' cached afterSlots
	if st.seenAt[j].gen == 0 {
		st.seenAt[j].gen = 1
	}
	st.freeA = append(st.freeA, j)
}

// agedKey is an After key's slot in seenAt and the elapsed time it was
// filed with.
type agedKey struct {
	slot int32
	at   time.Duration
}

// newAgedHeap returns an empty heap of st's After keys by time, which
// keeps each key's aSlot.heapAt.
func newAgedHeap(st *ruleState) minHeap[agedKey] {
	return minHeap[agedKey]{less: func(a, b agedKey) bool { return a.at < b.at },
		at: func(a agedKey, i int) { st.seenAt[a.slot].heapAt = int32(i) }}
}

// Finish closes open obligations (inconclusive: the capture ended before
// their deadline, or violated if the deadline had passed) and returns the
// report.
// endSection closes the open obligations as the end of the capture or
// of a section (end names which) leaves them: inconclusive where their
// deadline had not passed, missed where it had (judged now, with the
// loss the section showed). An obligation restarted owed (a host whose
// restart starts the next section at frame at) is inconclusive
// (CauseClose): the restart ended the RPC.
func (c *Checker) endSection(end string, restarted netip.Addr, at int) {
	c.raceEnd()
	// gone excuses what restarted, the host whose restart ends the
	// section, owed: its module's state went with the restart.
	gone := func(to netip.Addr, what string) (Result, bool) {
		if !restarted.IsValid() || to != restarted {
			return Result{}, false
		}
		return Downgrade(CauseClose, Evidence{Frame: at, Why: fmt.Sprintf("%v restarted (its RPC ids start again at frame %d), which ends every RPC it held", restarted, at)}, "%s", what), true
	}
	for i, r := range c.rules {
		st := c.state[i]
		if p, ok := r.Property.(Within); ok {
			bound := p.Bound(c.p)
			open := make([]*pending, 0, len(st.open))
			for _, o := range st.open {
				open = append(open, o)
			}
			sort.Slice(open, func(a, b int) bool { return open[a].seq < open[b].seq })
			for _, o := range open {
				age := c.elapsed - o.at
				if p.Witness {
					c.record(i, nil, o.ref, o.rpcKey(), o.o.unseen())
				} else if g, ok := gone(o.o.To, fmt.Sprintf("no %s by the end of the section (%v later)", o.o.expect(), age.Round(time.Microsecond))); ok {
					c.record(i, nil, o.ref, o.rpcKey(), g)
				} else if age > bound && o.o.OnlyLate {
					c.record(i, nil, o.ref, o.rpcKey(), Unsure("no %s by the end of the %s (%v later): the host that owed it may be gone", o.o.expect(), end, age.Round(time.Microsecond)))
				} else if r, ok := mootAt(&c.ctx, o.o); ok && age > bound {
					c.record(i, nil, o.ref, o.rpcKey(), r)
				} else if age > bound {
					c.missed = append(c.missed, missed{rule: i, ref: o.ref, rpc: o.rpcKey(), from: o.o.From, to: o.o.To, control: o.o.control, arrived: arrived(o.o),
						res: Violation("no %s within %v (%s ended %v later)", o.o.expect(), bound, end, age.Round(time.Microsecond)).WithSlack(bound).WithLate(age - bound)})
				} else {
					c.record(i, nil, o.ref, o.rpcKey(), Unsure("%s ended %v after this packet, before the %v allowed for %s",
						end, age.Round(time.Microsecond), bound, o.o.expect()))
				}
			}
			st.open = map[any]*pending{}
			st.deadlines, st.byRPC, st.late, st.unscoped, st.bySock = nil, nil, nil, nil, nil
			c.open.remove(i)
		}
	}
	// Missed obligations are judged now, with all the capture's evidence:
	// one the network between the capture point and the answerer may have
	// eaten (the capture shows loss toward it after the capture point, or
	// from it before) is inconclusive. An answer may be a control packet
	// (GRANT, BUSY, CUTOFFS ...) whose loss leaves no trace of its own, and
	// so may a control trigger: for those, loss on the path between the
	// two hosts in either direction is the evidence.
	for _, m := range c.missed {
		res := m.res
		if g, ok := gone(m.to, res.Why()); ok {
			c.record(m.rule, nil, m.ref, m.rpc, g.WithSlack(res.Slack))
			continue
		}
		lostAfter := func(from, to netip.Addr) (Evidence, bool) { return Evidence{}, false }
		if m.control && !m.arrived {
			lostAfter = c.net.LostAfterBetween
		}
		// An obligation its trigger's sender owes (the rest of its RESEND
		// round) is excused only by loss of that sender's packets before
		// the capture point: what its peer lost after it can only make the
		// sender owe more (Within.SenderOwes).
		// (LostBetween begins with LostBefore.)
		if c.props[m.rule].within.SenderOwes {
			if ev, ok := c.net.LostBetween(m.to, m.from); ok {
				res = Downgrade(CauseLossBefore, ev, "%s; the answer may have been lost before the capture point", res.Why()).WithSlack(res.Slack)
			}
		} else if ev, ok := c.net.LostAfter(m.from, m.to); ok && !m.arrived {
			res = Downgrade(CauseLossAfter, ev, "%s; the packet may not have reached %v", res.Why(), m.to).WithSlack(res.Slack)
		} else if ev, ok := c.net.LostBefore(m.to, m.from); ok {
			res = Downgrade(CauseLossBefore, ev, "%s; the answer may have been lost before the capture point", res.Why()).WithSlack(res.Slack)
		} else if ev, ok := lostAfter(m.from, m.to); ok {
			res = Downgrade(CauseLossAfter, ev, "%s; the packet may not have reached %v", res.Why(), m.to).WithSlack(res.Slack)
		} else if ev, ok := c.net.LostBetween(m.to, m.from); ok {
			res = Downgrade(CauseLossBefore, ev, "%s; the answer may have been lost before the capture point", res.Why()).WithSlack(res.Slack)
		}
		c.record(m.rule, nil, m.ref, m.rpc, res)
	}
	c.missed = nil
}

// arrived reports whether o's Await knows its trigger reached the host
// that owes the answer (Arrival).
func arrived(o Obligation) bool {
	a, ok := o.Await.(Arrival)
	return ok && a.Arrived()
}

// Finish ends the capture: it closes the last section (an obligation
// still open is violated when its bound passed before the capture ended,
// and inconclusive when the capture ended first),
// applies the excuses only the whole capture can give (two instances of a
// host merged, one direction or one end captured, packets the capture
// dropped) and returns the report: each rule's counts, the findings in
// frame order, the downgrades by rule and cause. Call it once, after the
// last Feed.
func (c *Checker) Finish() *Report {
	c.endSection("capture", netip.Addr{}, 0)
	c.noteMissed()
	if c.shown.n > c.drops && !c.dropsSaid {
		c.SetCaptureDrops(c.shown.n)
		c.report.CaptureDropsShown = c.shown.ev.String()
	}
	if c.report.Merged == nil && !c.oneInstance {
		c.report.Merged = c.merge.copied()
	}
	c.excuseMerged()
	c.excuseOneDirection()
	c.excuseOneEnd()
	c.excuseDrops()
	c.foldPasses()
	for _, st := range c.state {
		c.report.Rules = append(c.report.Rules, st.res)
	}
	for _, d := range c.downs {
		c.report.Downgrades = append(c.report.Downgrades, *d)
	}
	sort.Slice(c.report.Downgrades, func(i, j int) bool {
		a, b := c.report.Downgrades[i], c.report.Downgrades[j]
		return a.Rule < b.Rule || a.Rule == b.Rule && a.Cause < b.Cause
	})
	c.report.CapturePoint = c.net.cp.String()
	c.report.Profile = c.profile
	c.report.Params = *c.p
	c.report.Events = c.events
	c.report.RPCs = c.created + c.trace.Created()
	c.report.Answered = c.answered + c.trace.Answered()
	sortFindings(c.report.Violations)
	sortFindings(c.report.Inconclusive)
	return &c.report
}

// sortFindings orders findings by frame, so they read in capture order,
// and the findings of one frame in the order they were found
// (Finding.seq; a finding moved at Finish counts as found then).
func sortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool {
		return f[i].Frame < f[j].Frame || f[i].Frame == f[j].Frame && f[i].seq < f[j].seq
	})
}

// String renders a finding as one line.
func (f Finding) String() string {
	rpc := ""
	if f.RPC != nil {
		rpc = " " + f.RPC.Label()
	}
	return fmt.Sprintf("%s %s frame %d%s: %s", f.Rule, f.Level, f.Frame, rpc, f.Why)
}
