package spec

import (
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// TimeJump is the most a frame's timestamp may lie before the previous
// frame's for the checker to judge the two as one stretch of time. No
// capture tool holds a packet back that long (pcap.MaxReorder is what
// they do); a larger step back is captures joined end to end (mergecap
// -a, cat) or a clock stepped back, and what follows it cannot be timed
// against what came before, so it starts a new section (Report.Sections).
const TimeJump = 100 * time.Millisecond

// SnapAdvice is the one advice for a capture whose snap length cut Homa
// headers: whole frames, since a GSO frame holds a Homa header per
// segment past any fixed snap length.
const SnapAdvice = "re-capture whole frames (tcpdump -s 0, dumpcap -s 0)"

// firstClientID is the first id a Homa module allocates (HomaModule
// homa_utils.c homa_init sets next_outgoing_id to 2; homa_rpc.c
// homa_rpc_alloc_client takes ids from it, +2 each).
const firstClientID = 2

// hostEpoch is what the checker knows of one host's current incarnation
// (its Homa module since it was last loaded), for the restart test
// (Checker.sectionBreak): when it last sent a packet, the lowest client
// id it used, and the highest cutoff_version its DATA carried to each
// peer.
type hostEpoch struct {
	addr   netip.Addr
	last   time.Time
	minID  uint64
	cutVer map[netip.Addr]uint16
	// cutDst and cutDstVer repeat cutVer's latest entry looked up
	// (cutDstOK: set), so that a run of DATA to one peer costs no map
	// access.
	cutDst    netip.Addr
	cutDstVer uint16
	cutDstOK  bool
}

// epochCacheSize is the number of Checker.epochCache slots (a power of
// two).
const epochCacheSize = 64

// epochOf returns a's hostEpoch (nil if none yet), through
// Checker.epochCache.
func (c *Checker) epochOf(a netip.Addr) *hostEpoch {
	b := a.As16()
	slot := &c.epochCache[b[15]&(epochCacheSize-1)]
	if h := *slot; h != nil && h.addr == a {
		return h
	}
	h := c.epochs[a]
	if h != nil {
		*slot = h
	}
	return h
}

// noteEpoch files e, once the trace has applied it, in its sender's
// hostEpoch.
func (c *Checker) noteEpoch(e *Event) {
	if e.Err != nil || e.ICMP != nil || e.Type() == wire.TypeFreeze {
		return
	}
	h := c.epochOf(e.Src)
	if h == nil {
		h = &hostEpoch{addr: e.Src, cutVer: map[netip.Addr]uint16{}}
		c.epochs[e.Src] = h
	}
	h.last = e.Time
	if !e.FromClient() || e.Type() == wire.TypeCutoffs {
		return
	}
	if id := wire.ClientID(e.Packet.SenderID()); id != 0 && (h.minID == 0 || id < h.minID) {
		h.minID = id
	}
	if e.Type() == wire.TypeData {
		if !h.cutDstOK || h.cutDst != e.Dst {
			h.cutDst, h.cutDstVer, h.cutDstOK = e.Dst, h.cutVer[e.Dst], true
		}
		if v := e.Packet.Data().CutoffVersion(); v > h.cutDstVer {
			h.cutVer[e.Dst], h.cutDstVer = v, v
		}
	}
}

// sectionBreak reports whether e starts a new section, why, and the
// host whose restart it shows (invalid for a timestamp jump):
//
//   - e's timestamp lies more than TimeJump before the previous event's;
//   - e is a new request's first DATA (offset 0, not a retransmission)
//     from a host whose Homa module was evidently loaded afresh: the id
//     is no larger than every id the host used before (its counter went
//     back, which only a new module does: homa_init), the host sent
//     nothing for longer than the protocol's own timeout (timeout_ticks,
//     and at least the time an answer may take: AnswerBound), after which
//     its peers give up whatever they held with it (homa_timer), and the
//     packet shows a fresh module's state: the
//     id is the first a module allocates (2), or the DATA carries
//     cutoff_version 0 to a peer whose CUTOFFS the host's earlier DATA
//     had carried (a new module knows no peer's cutoffs). A host whose
//     ids go back while it is active, or without such evidence, is
//     judged as one incarnation (HOMA-ID-004).
//
// A restart another view of the capture found (SetRestarts) starts one
// at the first event at or after it; restarts this view reaches at one
// event (no packet of its own between them) start one section, the
// first's, or the second would start another at the view's next event
// and forget what began between (an RPC's first packet).
//
// A restarted module has no RPC, peer or cutoffs state of its old
// incarnation, and its peers may hold theirs for a while: the checker
// judges the rest of the capture afresh rather than track one host's
// epochs in every rule.
func (c *Checker) sectionBreak(e *Event) (string, netip.Addr) {
	jump := ""
	if c.events > 0 {
		jump, _ = c.times.step(c.last, e.Time)
	}
	if c.nextRestart < len(c.restarts) && c.restarts[c.nextRestart].reached(e) {
		r := c.restarts[c.nextRestart]
		for c.nextRestart < len(c.restarts) && c.restarts[c.nextRestart].reached(e) {
			c.nextRestart++
		}
		if c.events > 0 {
			return r.Why, r.Restarted
		}
	}
	if c.events == 0 {
		return "", netip.Addr{}
	}
	if jump != "" {
		return jump, netip.Addr{}
	}
	if e.Err != nil || e.ICMP != nil || e.Type() != wire.TypeData || !e.FromClient() || e.Retransmit() || e.Offset != 0 {
		return "", netip.Addr{}
	}
	h := c.epochOf(e.Src)
	id := wire.ClientID(e.Packet.SenderID())
	if h == nil || h.minID == 0 || id > h.minID {
		return "", netip.Addr{}
	}
	silent, bound := e.Time.Sub(h.last), max(c.p.AnswerBound(), c.p.Ticks(c.p.TimeoutTicks))
	v := e.Packet.Data().CutoffVersion()
	if silent <= bound {
		if id == firstClientID && v == 0 && h.cutVer[e.Dst] != 0 {
			c.noteReload(e, silent, bound, h.cutVer[e.Dst])
		}
		return "", netip.Addr{}
	}
	var fresh string
	switch {
	case id == firstClientID:
		fresh = fmt.Sprintf("RPC ids start again at %d", id)
	case v == 0 && h.cutVer[e.Dst] != 0:
		fresh = fmt.Sprintf("RPC id %d, no higher than the lowest it had used (%d), and cutoff_version 0 to %v, whose version %d it carried before", id, h.minID, e.Dst, h.cutVer[e.Dst])
	default:
		return "", netip.Addr{}
	}
	return fmt.Sprintf("%v restarted its Homa module (%s after %v silent): its earlier RPCs, peers and cutoffs are gone", e.Src, fresh, silent.Round(time.Millisecond)), e.Src
}

// timeline follows a capture's timestamps for the sections their jumps
// begin: resume is the latest time before the last jump back while the
// timestamps have not come back to it (zero otherwise).
type timeline struct {
	resume time.Time
}

// step takes the time t of the event after one at last and returns why
// a section begins at it ("" if none) and, for a jump back, how far:
//
//   - t lies more than TimeJump before last: captures joined end to end,
//     a record moved back in the file, or a clock stepped back; what
//     follows cannot be timed against what came before;
//   - after such a jump, t comes back past the latest time before it: the
//     records since the jump lay within the time already judged (moved
//     back in the file: an edit, a script), and what follows is judged
//     apart from them, as a capture is from one before it.
func (tl *timeline) step(last, t time.Time) (string, time.Duration) {
	if back := subTime(last, t); back > TimeJump {
		if tl.resume.IsZero() || last.After(tl.resume) {
			tl.resume = last
		}
		return fmt.Sprintf("timestamps jump %v back (captures joined end to end, e.g. mergecap -a or cat, a record moved back in the file, or a clock stepped back): what follows cannot be timed against what came before", back.Round(time.Microsecond)), back
	}
	// At the latest time itself a record still lies within what was
	// judged (its instant already was): the section begins after it.
	if !tl.resume.IsZero() && t.After(tl.resume) {
		tl.resume = time.Time{}
		return "timestamps come back to where they were before the last jump back: the records since it lay within the time already judged (moved back in the file), so what follows is judged apart from them", 0
	}
	return "", 0
}

// reached reports whether e is at or past s, a section another view of
// the capture began (Checker.SetRestarts): a timestamp jump at the first
// event at or after its file frame (From), a restart at the first at or
// after its time (At) in the stretch of time it lies in (From: the frame
// of the last jump before it, 0 if none).
func (s SectionStart) reached(e *Event) bool {
	return e.Frame >= s.From && (!s.Restarted.IsValid() || !e.Time.Before(s.At))
}

// TimeJumps returns the sections the timestamps of views begin (a jump
// back of more than TimeJump, and the return to the time before it:
// timeline.step), the views of one capture's ports (events numbered as
// the file's frames, each view in file order) merged in file order, as
// the checker of the whole capture finds them (Checker.sectionBreak): one
// SectionStart per section, From and Frame its first frame, At its time,
// Back how far back the timestamps jumped (0 for a return). Judge.Restarts given them makes every view begin a
// section there, where a view judged alone saw a jump only when the
// record moved was its own (a record moved 200 places in one port's
// interface) or, in a capture joined end to end, at its own first frame
// after the join.
func TimeJumps(views ...[]Event) []SectionStart {
	type at struct {
		frame int
		t     time.Time
	}
	var all []at
	for _, v := range views {
		for i := range v {
			all = append(all, at{v[i].Frame, v[i].Time})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].frame < all[j].frame })
	var out []SectionStart
	var tl timeline
	for i := 1; i < len(all); i++ {
		if why, back := tl.step(all[i-1].t, all[i].t); why != "" && all[i].frame != all[i-1].frame {
			out = append(out, SectionStart{Frame: all[i].frame, Why: why, At: all[i].t, From: all[i].frame, Back: back})
		}
	}
	return out
}

// maxReloads bounds Report.Reloads.
const maxReloads = 8

// noteReload files in Report.Reloads that e, a new request's first DATA
// with id 2 and cutoff_version 0 to a peer whose version ver its sender
// carried before, shows its sender's Homa module loaded afresh after
// only silent without a packet from it (bound: what sectionBreak needs
// to judge afresh). One module never does either: its id counter only
// grows (homa_rpc_alloc_client), and a peer's cutoff_version, once a
// CUTOFFS set it, stays while the peer entry lives; a new module starts
// both over (homa_init, a new peer table). The capture is still judged
// as one incarnation, since the peers may still hold the old one's RPCs.
func (c *Checker) noteReload(e *Event, silent, bound time.Duration, ver uint16) {
	r := &c.report
	if len(r.Reloads) >= maxReloads {
		return
	}
	for _, x := range r.Reloads {
		if x.Restarted == e.Src && e.Time.Sub(x.At) <= bound {
			return // the same reload's next request
		}
	}
	why := fmt.Sprintf("%v looks reloaded (its Homa module loaded afresh: RPC ids start again at %d, and cutoff_version 0 to %v, whose version %d it carried before) after only %v silent, within the %v its peers may wait before giving up its RPCs (timeout_ticks, the answer bound), so it is judged as one incarnation: violations around it (ids reused, HOMA-ID-004; cutoffs, RPCs cut short) may be the reload's doing, which breaks its peers' RPCs all the same",
		e.Src, firstClientID, e.Dst, ver, silent.Round(time.Millisecond), bound.Round(time.Millisecond))
	r.Reloads = append(r.Reloads, SectionStart{Frame: e.Frame, Why: why, Restarted: e.Src, At: e.Time})
}

// newSection ends the current section before e (endSection) and judges
// the rest of the capture afresh from e: a new trace and network model,
// no open obligation or After key, nothing of the hosts' epochs; the
// counts and findings so far stay. The new section may begin in the
// middle of RPCs, as a capture may, so a capture from the start
// (SetCaptureFromStart) is one no more.
func (c *Checker) newSection(e *Event, why string, restarted netip.Addr) {
	c.endSection("section", restarted, e.Frame)
	var back time.Duration
	if !restarted.IsValid() {
		back = c.last.Sub(e.Time)
		c.excuseOutOfOrder(e)
		// Another view's starts are timed: across a jump their times no
		// longer say which section they fell in.
		c.started, c.startedOff = nil, true
	} else {
		c.startedFrom = e.Time
	}
	c.created += c.trace.Created()
	c.answered += c.trace.Answered()
	payloads := c.trace.payloads
	c.noteMissed()
	c.shown.counted = 0
	carried := make(map[RPCKey]bool, len(c.trace.rpcs)+len(c.trace.carried))
	for k := range c.trace.carried {
		carried[k] = true
	}
	for k := range c.trace.rpcs {
		carried[k] = true
	}
	c.trace = NewTrace(c.p)
	c.trace.carried = carried
	c.trace.onEvict = c.forgetAfter
	c.trace.started, c.trace.startedFrom = c.started, c.startedFrom
	c.newMemoGen() // the memos name the old trace's RPCs
	c.trace.payloads = payloads
	c.net = newNetwork(c.net.cp, c.p)
	c.ctx.T, c.ctx.Net = c.trace, c.net
	if c.inf != nil {
		c.inf.t = c.trace
		c.inf.NewSection()
	}
	for _, st := range c.state {
		st.open = map[any]*pending{}
		st.deadlines, st.byRPC, st.late = nil, nil, nil
		st.seenA, st.seenAt, st.freeA = map[rpcMsgKey]int32{}, nil, nil
		st.aged = newAgedHeap(st)
	}
	c.open = ruleSet{}
	c.seen = 0
	c.fromStart, c.ctx.fromStart = false, false
	c.epochs = map[netip.Addr]*hostEpoch{}
	if c.report.Merged == nil && !c.oneInstance {
		c.report.Merged = c.merge.copied()
	}
	c.epochCache = [epochCacheSize]*hostEpoch{}
	c.merge = mergeTracker{}
	c.report.Sections = append(c.report.Sections, SectionStart{Frame: e.Frame, Why: why, Restarted: restarted, At: e.Time, Back: max(back, 0)})
}

// excuseOutOfOrder makes inconclusive (CauseTimeOrder) the violations
// found before e, whose timestamp lies before the previous event's (a
// section a jump back begins), at a time at or after e's, when e's time
// lies within what the capture judged before it: a record moved back in
// the file (by hand, editcap, a script) was missing where its time puts
// it, and what was found there may rest on its absence (a GRANT beyond
// the window over a DATA not yet seen). A capture joined end to end
// whose second part lies wholly before the first (mergecap -a of a later
// capture and an earlier one) judged nothing at those times: its
// violations stand. Findings about a packet's own fields stand.
func (c *Checker) excuseOutOfOrder(e *Event) {
	if !e.Time.Before(c.last) || e.Time.Before(c.earliest) {
		return
	}
	kept := c.report.Violations[:0]
	for _, f := range c.report.Violations {
		if f.alone || f.Frame >= e.Frame || f.Time.Before(e.Time) {
			kept = append(kept, f)
			continue
		}
		i := c.ruleIndex(f.Rule)
		st := c.state[i]
		st.res.Violated--
		st.res.Inconclusive++
		st.kept--
		if !f.notUnderTest && st.dropViolated > 0 {
			st.dropViolated--
		}
		k := [2]string{f.Rule, string(CauseTimeOrder)}
		if d := c.downs[k]; d != nil {
			d.Count++
			d.Frame = min(d.Frame, f.Frame)
		} else {
			c.downs[k] = &DowngradeCount{Rule: f.Rule, Cause: CauseTimeOrder, Count: 1, Frame: f.Frame}
		}
		if st.keptInc < MaxFindings {
			st.keptInc++
			c.found++
			f.Cause = CauseTimeOrder
			f.Why = fmt.Sprintf("%s (%s: frame %d lies %v back, at a time before this frame's: the file held it back, and this may rest on its absence)", f.Why, CauseTimeOrder, e.Frame, c.last.Sub(e.Time).Round(time.Microsecond))
			f.seq = c.found
			c.report.Inconclusive = append(c.report.Inconclusive, f)
		}
	}
	clear(c.report.Violations[len(kept):])
	c.report.Violations = kept
}
