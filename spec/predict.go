package spec

import (
	"fmt"
	mbits "math/bits"

	"github.com/homatest/homatest/spec/wire"
)

// DATA prediction, in the spirit of TCP's header prediction: most DATA in
// a capture continues, in order, the previous DATA of its message, and
// the rules judge it as they judged that one. Feed remembers, per
// message, what the rule stage did at its latest ordinary DATA packet
// (a dataMemo: the rules it visited, those that passed, none with a
// finding or an obligation); a DATA packet that continues it (predict:
// the byte after the last one seen, the same header but for the offset,
// the same IP header and priority, no packet of the RPC, no CUTOFFS,
// RESEND, ACK or other control packet, no trace event out of the ordinary
// in between, and not reaching the message's unscheduled limit, grant
// horizon or end, where rules act) counts the same passes without calling
// those rules. After rules still run (their A keys are state), and so
// does judging the open obligations every event must see. The spec tests
// run the rules anyway on every predicted packet and panic on any other
// outcome (verifyPredicted), as verifyUsual does for Usual results.

// memoHdr is how many bytes of a DATA packet's Homa header a memo holds:
// the DATA header (wire.DataHeaderLen).
const memoHdr = wire.DataHeaderLen

// dataMemo is what the rule stage did at the latest ordinary DATA packet
// of one message: the packet's RPC (identity), where the next in-order
// packet starts, what of the packet a rule may read besides its byte
// range, and (sets, an index in Checker.memoSets) the rules visited and
// those that passed. gen 0 or other than Checker.memoGen: none.
type dataMemo struct {
	r       *RPC
	gen     uint32
	unusual uint32 // Trace.unusual when recorded
	next    uint32 // the memo packet's end: the next packet's offset
	maxLen  int32  // the memo packet's length: a longer one is not predicted
	sets    uint16
	seen    Gate
	sched   bool // the memo packet was at or above U
	noPay   bool // the memo packet had no captured payload
	prio    uint8
	tos     uint8
	shift   uint8
	either  bool
	ip      IPHeader
	hdr     [memoHdr]byte // the Homa header, sequence and checksum zeroed
}

// memoSets are the rules a DATA packet's rule stage visited (typeSet
// less the gated ones), those of them that passed, and the Timed Each
// rules it called (run again at every predicted packet); the others
// were not applicable, opened nothing, or are After rules (run at every
// packet).
type memoSets struct{ set, pass, call ruleSet }

// maxMemoSets bounds Checker.memoSets (distinct rule-stage outcomes).
const maxMemoSets = 1024

// memoSlot returns the memo slot of the message of e's RPC (key k) that
// e's sender sends: two per rpcCache slot.
func memoSlot(k *RPCKey, fromClient bool) int {
	s := rpcSlot(k) * 2
	if !fromClient {
		s++
	}
	return s
}

// memoHeader copies e's Homa header into h with the fields that change
// from one in-order packet to the next zeroed: common.sequence and
// seg.offset, which hold the offset (the latter as 0xFFFFFFFF on older
// modules: h keeps which of the two it is), and common.checksum, which
// no rule reads. False when the packet is shorter than a DATA header or
// its seg.offset is neither.
func memoHeader(h *[memoHdr]byte, e *Event) bool {
	b := e.Packet.Bytes()
	if len(b) < memoHdr {
		return false
	}
	copy(h[:], b)
	h[4], h[5], h[6], h[7] = 0, 0, 0, 0
	h[16], h[17] = 0, 0
	switch so := e.Packet.Data().SegOffset(); so {
	case wire.SegOffsetInSequence:
	case e.Offset:
		s := h[wire.GSOPrefixLen : wire.GSOPrefixLen+wire.SegHeaderLen]
		s[0], s[1], s[2], s[3] = 1, 0, 0, 0
	default:
		return false
	}
	return true
}

// memoEligible reports whether e, a well-formed DATA packet of a known
// RPC, may record or use a memo: a first transmission in a frame of its
// own, without a piggy-backed ack (which changes another RPC), a note or
// a snap length's cut of its header.
func memoEligible(e *Event) bool {
	d := e.Packet.Data()
	return e.Segment == 0 && !e.Hijacked && e.Note == "" && d.Retransmit() == 0 && d.AckClientID() == 0
}

// predict returns the memo slot of e, a well-formed DATA packet (-1: e
// may not use or record one), and the memo that predicts e's rule stage
// for the rules set (nil: none does).
func (c *Checker) predict(e *Event, set *ruleSet) (int, *dataMemo) {
	r := c.trace.curRPC
	if r == nil || c.trace.cur != e || !memoEligible(e) {
		return -1, nil
	}
	if c.memo == nil {
		c.memo = make([]dataMemo, 2*rpcCacheSize)
		c.memoSets = make([]memoSets, 0, 16)
	}
	slot := memoSlot(&c.trace.curKey, e.FromClient())
	pm := &c.memo[slot]
	if pm.gen != c.memoGen || pm.r != r || pm.next != e.Offset || pm.unusual != c.trace.unusual || pm.seen != c.seen ||
		int32(e.Length) > pm.maxLen || e.Length <= 0 || (len(e.Payload) == 0) != pm.noPay ||
		e.Priority != pm.prio || e.TOS != pm.tos || e.PrioShift != pm.shift || e.PrioEither != pm.either || e.IP != pm.ip {
		return slot, nil
	}
	if pl := c.net.firedNow; pl != nil && pl.fired == e.Frame && pl.firedSeg == e.Segment {
		return slot, nil // the network model's verdict at this packet (FactNoLossVerdict)
	}
	m := r.Msg(e.Packet.Role())
	if m.SentEnd != e.Offset || len(m.Seen) == 0 || m.Seen[len(m.Seen)-1].End != e.Offset {
		return slot, nil // not the byte after every one seen
	}
	// The packet stays inside the zone the memo packet was in: below U,
	// or at or above U and below the grant horizon; and below the end.
	u, end := c.p.Unsched(m.Length), e.End()
	if end >= m.Length || (e.Offset >= u) != pm.sched || !pm.sched && end >= u || pm.sched && end >= m.Horizon(c.p) {
		return slot, nil
	}
	var h [memoHdr]byte
	if !memoHeader(&h, e) || h != pm.hdr {
		return slot, nil
	}
	if c.memoSets[pm.sets].set != *set {
		return slot, nil
	}
	return slot, pm
}

// remember records (slot ≥ 0) what e's rule stage did: it visited set,
// pass passed, and nothing else happened but not-applicable results,
// triggers that opened nothing and After rules; clean says no rule
// recorded a finding, opened an obligation or raised its largest slack.
// facts are e's DataFacts: a memo is kept only for ordinary DATA.
func (c *Checker) remember(slot int, e *Event, set, pass, call *ruleSet, clean bool, facts DataFact) {
	pm := &c.memo[slot]
	const ordinary = FactFresh | FactKnown | FactLive | FactWellFormed | FactSameLength | FactInOrder | FactNoResentAhead | FactNoLossVerdict
	if !clean || facts&ordinary != ordinary || e.Length <= 0 {
		pm.gen = 0
		return
	}
	if !memoHeader(&pm.hdr, e) {
		pm.gen = 0
		return
	}
	j := -1
	for i := range c.memoSets {
		if c.memoSets[i] == (memoSets{*set, *pass, *call}) {
			j = i
			break
		}
	}
	if j < 0 {
		if len(c.memoSets) >= maxMemoSets {
			pm.gen = 0
			return
		}
		j = len(c.memoSets)
		c.memoSets = append(c.memoSets, memoSets{*set, *pass, *call})
	}
	r := c.trace.curRPC
	m := r.Msg(e.Packet.Role())
	pm.r, pm.gen, pm.unusual, pm.seen, pm.sets = r, c.memoGen, c.trace.unusual, c.seen, uint16(j)
	pm.next, pm.maxLen, pm.noPay = e.End(), int32(e.Length), len(e.Payload) == 0
	pm.sched = e.Offset >= c.p.Unsched(m.Length)
	pm.prio, pm.tos, pm.shift, pm.either, pm.ip = e.Priority, e.TOS, e.PrioShift, e.PrioEither, e.IP
}

// feedPredicted is feedType's rule stage for e, a DATA packet memo pm
// predicts (the rules of set): pm's passes are counted, After rules and
// the Timed Each rules the memo packet called run, and open obligations
// are judged; no other rule is called.
func (c *Checker) feedPredicted(pm *dataMemo, set *ruleSet, e *Event) {
	ms := &c.memoSets[pm.sets]
	c.predicted++
	c.countPasses(&ms.pass)
	// The level rules among the passes tell the IPv4 TOS race's
	// bookkeeping what they tell it on the general path (tosRace.passed).
	lv := uint64(0)
	for w := range ms.pass {
		p := ms.pass[w] & c.levels[w]
		c.race.right[w] |= p
		lv |= p
	}
	if lv != 0 {
		c.race.want |= e.PriorityBits()
	}
	pm.next = e.End()
	run := c.open
	for w := range run {
		run[w] |= set[w]&c.afterSet[w] | ms.call[w]
	}
	for w := range run {
		for bits := run[w]; bits != 0; bits &= bits - 1 {
			i := w*64 + mbits.TrailingZeros64(bits)
			if cp := &c.props[i]; cp.form == formEach {
				c.recordHere(i, e, cp.each.Check(&c.ctx, e))
			} else if cp.form == formAfter {
				c.after(i, c.state[i], &cp.after, e)
			} else if cp.form == formWithin {
				c.judge(i, c.state[i], &cp.within, e, false)
			}
		}
	}
}

// verifyPredicted panics if the rule stage the general path ran on e
// (it visited set, pass passed; clean: see remember) is not what memo pm
// predicted.
func (c *Checker) verifyPredicted(pm *dataMemo, set, pass, call *ruleSet, clean bool, e *Event) {
	ms := &c.memoSets[pm.sets]
	if *ms != (memoSets{*set, *pass, *call}) || !clean {
		panic(errPredicted(c, ms, set, pass, call, clean, e))
	}
	c.predictVerified++
}

// forgetMemo drops the memos of RPC slot s (both messages).
func (c *Checker) forgetMemo(s int) {
	if c.memo != nil {
		c.memo[s*2].gen, c.memo[s*2+1].gen = 0, 0
	}
}

// memoBefore keeps the memos true before e's rules run: a packet other
// than well-formed DATA or GRANT ends every memo (control packets and
// ICMP change RPCs, peers and sockets beyond their own RPC; they are
// rare); a GRANT ends its RPC's; DATA ends its RPC's other message's
// and, when it carries a piggy-backed ack, the acknowledged RPC's.
func (c *Checker) memoBefore(e *Event) {
	if c.memo == nil {
		return
	}
	if e.Err != nil || e.ICMP != nil || e.Partial() {
		c.newMemoGen()
		return
	}
	switch e.Type() {
	case wire.TypeData:
		k := &c.trace.curKey
		c.memo[memoSlot(k, !e.FromClient())].gen = 0
		if id := e.Packet.Data().AckClientID(); id != 0 {
			c.forgetMemo(rpcSlot(&RPCKey{ClientID: id}))
		}
	case wire.TypeGrant:
		c.forgetMemo(rpcSlot(&c.trace.curKey))
	default:
		c.newMemoGen()
	}
}

// newMemoGen ends every memo.
func (c *Checker) newMemoGen() {
	if c.memoGen++; c.memoGen == 0 {
		c.memoGen = 1
	}
}

// errPredicted says how the rule stage at e differed from memo sets ms.
func errPredicted(c *Checker, ms *memoSets, set, pass, call *ruleSet, clean bool, e *Event) string {
	names := func(s ruleSet) []string {
		var out []string
		for w, bits := range s {
			for ; bits != 0; bits &= bits - 1 {
				out = append(out, c.rules[w*64+mbits.TrailingZeros64(bits)].ID)
			}
		}
		return out
	}
	var more, less, moreSet, lessSet, moreCall, lessCall ruleSet
	for w := range pass {
		more[w], less[w] = pass[w]&^ms.pass[w], ms.pass[w]&^pass[w]
		moreSet[w], lessSet[w] = set[w]&^ms.set[w], ms.set[w]&^set[w]
		moreCall[w], lessCall[w] = call[w]&^ms.call[w], ms.call[w]&^call[w]
	}
	return fmt.Sprintf("predicted DATA at frame %d (offset %d): the rules' own calls differ from the memo of the message's previous DATA: clean %v (a finding, an obligation or a larger slack), passed also %v, not %v; visited also %v, not %v; Timed rules called also %v, not %v",
		e.Frame, e.Offset, clean, names(more), names(less), names(moreSet), names(lessSet), names(moreCall), names(lessCall))
}

// forgetMemoOf drops the memos that name r, an RPC the trace forgot, so
// that they do not keep it in memory.
func (c *Checker) forgetMemoOf(r *RPC) {
	if c.memo == nil {
		return
	}
	s := rpcSlot(&r.Key) * 2
	for _, j := range [2]int{s, s + 1} {
		if c.memo[j].r == r {
			c.memo[j] = dataMemo{}
		}
	}
}
