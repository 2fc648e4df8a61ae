package spec

import (
	mbits "math/bits"

	"github.com/homatest/homatest/spec/wire"
)

// DataFact is a set of facts about a DATA packet and the state of its RPC
// before it, which the Checker computes once per DATA packet
// (Checker.dataFacts) for the Each rules that declare a Usual result. Most
// DATA is ordinary (a first transmission, in order, of a live RPC, with
// well-formed framing), and most Each rules only confirm that; one pass
// over the shared facts spares those rules their call, their RPC lookup
// and their reads of the same state, which the rules' dispatch spent most
// of the checker's time on.
type DataFact uint64

const (
	// FactFresh: retransmit is 0.
	FactFresh DataFact = 1 << iota
	// FactFromClient: the client side sent the packet.
	FactFromClient
	// FactKnown: the trace knows the packet's RPC (Trace.Lookup).
	FactKnown
	// FactLive: the RPC is known, neither acknowledged nor ended by
	// RPC_UNKNOWN.
	FactLive
	// FactWellFormed: message_length in 1..max_message_length, at least
	// one byte, all inside the message (no HOMA-WIRE-002 finding).
	FactWellFormed
	// FactSameLength: the RPC is known and the message's length is unknown
	// or equals the packet's message_length.
	FactSameLength
	// FactMarks: flags 0x06 and urgent 0xB97D.
	FactMarks
	// FactIncomingU: incoming equals U = min(message_length,
	// unsched_bytes).
	FactIncomingU
	// FactSegFits: the packet carries at most max_seg_data bytes.
	FactSegFits
	// FactIDNonzero: the client id (sender_id without its role bit) is
	// not 0.
	FactIDNonzero
	// FactPortsUsual: neither port is 0, and a packet from the client
	// goes to a port below 32768.
	FactPortsUsual
	// FactNoStraddle: the packet does not straddle U.
	FactNoStraddle
	// FactScheduledOffset: the packet's offset is at or above U.
	FactScheduledOffset
	// FactGranted: the RPC is known and its message has seen a GRANT or
	// RESEND, or a kept horizon above U (HOMA-UNSCHED-001's exemption).
	FactGranted
	// FactUngrantedPart: the RPC is known and the packet's offset is
	// below its message's U, or the message has seen no GRANT.
	FactUngrantedPart
	// FactInOrder: the RPC is known and the packet starts at or above
	// its message's SentEnd (the highest end of a first transmission).
	FactInOrder
	// FactNoResentAhead: the RPC is known and its message has no bytes
	// retransmitted ahead of its first transmissions.
	FactNoResentAhead
	// FactNoResponseResend: the RPC is known and the client sent no
	// RESEND for its response.
	FactNoResponseResend
	// FactNoResponseData: the RPC is known and no response DATA was seen.
	FactNoResponseData
	// FactNoLossVerdict: the Network's path statistics did not fire at
	// this packet (HOMA-SEND-003).
	FactNoLossVerdict
	// FactUnusedZero: the header bytes HOMA-WIRE-009 wants 0 are 0.
	FactUnusedZero
	// FactOneSegFraming: a first transmission in its own frame (segment
	// 0) framed as one segment: doff 0xE0 and seg.offset 0xFFFFFFFF, on
	// a wire format other than upstream.
	FactOneSegFraming
	// FactUnderHorizon: the RPC is known and the packet ends at or below
	// its message's grant horizon (Message.Horizon).
	FactUnderHorizon
	// FactSocketsUsual: the RPC is live, the packet travels between its
	// two sockets, and a packet from the client is of the RPC that last
	// used its client id (HOMA-WIRE-011's ordinary case).
	FactSocketsUsual
	// FactNoFirstGrantDue: the RPC is known, the packet does not
	// complete a message being granted, and its message has had a GRANT,
	// is complete, or needs none (HOMA-GRANT-010 opens nothing).
	FactNoFirstGrantDue
	// FactNoGrantStall: the RPC is known and ended by RPC_UNKNOWN, or its
	// message has had no GRANT, is complete, short, wholly asked for
	// again, or the packet starts at or past its horizon (HOMA-GRANT-019
	// opens nothing).
	FactNoGrantStall
	// FactTOSClean: the priority was read from the TOS byte and the bits
	// below it are 0.
	FactTOSClean
	// FactNotFirstByte: the packet is a retransmission or does not start
	// at offset 0 (HOMA-GRANT-021 judges a message at its first DATA).
	FactNotFirstByte
	// FactCutoffCurrent: the trace holds no CUTOFFS and the packet's
	// cutoff_version is the profile's (HOMA-CUTOFF-002 opens nothing).
	FactCutoffCurrent
	numFacts = iota
)

// DataFact holds every fact in one word: adding a 65th fails to compile.
var _ [64 - numFacts]struct{}

// Usual declares the result an Each rule's Check gives on a DATA packet
// when all the facts When names hold: Then is NotApplicable or Passed (a
// plain pass, without slack or cause). The Checker then counts that result
// without calling Check. A Within rule's Usual (Then NotApplicable) says
// its Trigger opens nothing at such a packet: the Checker does not ask it
// (while the rule has no open obligation, which every event must see). The declaration is a shortcut only: Check stays
// the one definition of the rule's verdict, and the spec package's tests
// call Check wherever a Usual spares it and panic on any other result
// (verifyPrefilters), on every capture the tests check.
type Usual struct {
	When DataFact
	Then Status
}

// dataFacts returns the facts (DataFact) that hold for e, a well-formed DATA
// packet, before the trace applies it.
func (c *Checker) dataFacts(e *Event) DataFact {
	p := c.p
	d := e.Packet.Data()
	cm := d.Common()
	ml := d.MessageLength()
	u := p.Unsched(ml)
	var f DataFact
	fresh := d.Retransmit() == 0
	if fresh {
		f |= FactFresh
	}
	if !fresh || e.Offset != 0 {
		f |= FactNotFirstByte
	}
	fromClient := e.FromClient()
	if fromClient {
		f |= FactFromClient
	}
	if !malformedData(p, e) {
		f |= FactWellFormed
	}
	if cm.HasMarks() {
		f |= FactMarks
	}
	if d.Incoming() == u {
		f |= FactIncomingU
	}
	if e.Length <= int(maxSegData(p.MTU, e.IPv6())) {
		f |= FactSegFits
	}
	if wire.ClientID(e.Packet.SenderID()) != 0 {
		f |= FactIDNonzero
	}
	if sp, dp := cm.Sport(), cm.Dport(); sp != 0 && dp != 0 && (!fromClient || dp < 32768) {
		f |= FactPortsUsual
	}
	if !(e.Offset < u && e.End() > u) {
		f |= FactNoStraddle
	}
	if e.Offset >= u {
		f |= FactScheduledOffset
	}
	if pl := c.net.firedNow; pl == nil || pl.fired != e.Frame || pl.firedSeg != e.Segment {
		f |= FactNoLossVerdict
	}
	if cm.AckBytes() == [3]byte{} && cm.Window() == 0 && (p.Wire != wire.VersionUpstream || cm.Flags() == 0 && cm.Urgent() == 0) {
		if b := e.Packet.Bytes(); e.Segment != 0 || len(b) < 52 || b[49] == 0 && b[50] == 0 && b[51] == 0 {
			f |= FactUnusedZero
		}
	}
	if fresh && e.Segment == 0 && p.Wire != wire.VersionUpstream && cm.Doff() == wire.DoffData && d.SegOffset() == wire.SegOffsetInSequence {
		f |= FactOneSegFraming
	}
	if e.PrioShift != 0 && e.TOS&(1<<e.PrioShift-1) == 0 {
		f |= FactTOSClean
	}
	if len(c.trace.cutoffs) == 0 && d.CutoffVersion() == p.CutoffVersion {
		f |= FactCutoffCurrent
	}
	r := c.trace.Lookup(e)
	if r == nil {
		return f
	}
	f |= FactKnown
	if !r.Acked && !r.Unknown {
		f |= FactLive
		if sameSockets(r, e) && (!fromClient || c.trace.cur == e && r.idLatest) {
			f |= FactSocketsUsual
		}
	}
	m := r.Msg(e.Packet.Role())
	if m.Length == 0 || ml == m.Length {
		f |= FactSameLength
	}
	if m.Grants > 0 || m.Resends > 0 || m.KeptHorizon > p.Unsched(m.Length) {
		f |= FactGranted
	}
	if e.Offset < p.Unsched(m.Length) || m.Grants == 0 {
		f |= FactUngrantedPart
	}
	h := m.Horizon(p)
	if e.End() <= h {
		f |= FactUnderHorizon
	}
	length := ml
	if m.Length > 0 {
		length = m.Length
	}
	if (!m.inGranting || m.Complete || m.Length == 0 || uint64(m.Received())+uint64(e.Length) < uint64(m.Length)) &&
		(m.Grants > 0 || m.Complete || length <= p.UnschedBytes) {
		f |= FactNoFirstGrantDue
	}
	if r.Unknown || m.Grants == 0 || m.Complete || m.Length <= p.UnschedBytes || m.ResendAll || e.Offset >= h {
		f |= FactNoGrantStall
	}
	if e.Offset >= m.SentEnd {
		f |= FactInOrder
	}

	if len(m.ResentAhead) == 0 {
		f |= FactNoResentAhead
	}
	if rst := r.Response.resend; rst == nil || rst.LastResend.Time.IsZero() {
		f |= FactNoResponseResend
	}
	if r.Response.FirstData.IsZero() {
		f |= FactNoResponseData
	}
	return f
}

// usualTable holds the Each rules with a Usual declaration as rule sets,
// so that the rules a DATA packet's facts decide are found with a few
// word operations (usualDecided).
type usualTable struct {
	// any holds every rule with a Usual; pass those whose Then is Passed;
	// needs[k] those whose When names fact 1<<k.
	any, pass ruleSet
	needs     [numFacts]ruleSet
}

// add records rule i's Usual u.
func (t *usualTable) add(i int, u Usual) {
	t.any.add(i)
	if u.Then == Passed {
		t.pass.add(i)
	}
	for k := range numFacts {
		if u.When&(1<<k) != 0 {
			t.needs[k].add(i)
		}
	}
}

// decided returns the rules whose Usual facts all hold in f.
func (t *usualTable) decided(f DataFact) ruleSet {
	d := t.any
	for miss := ^f & (1<<numFacts - 1); miss != 0; miss &= miss - 1 {
		n := &t.needs[mbits.TrailingZeros64(uint64(miss))]
		for w := range d {
			d[w] &^= n[w]
		}
	}
	return d
}
