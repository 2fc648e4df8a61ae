package spec

import (
	"fmt"
	"net/netip"
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
	if c.nextRestart < len(c.restarts) && !e.Time.Before(c.restarts[c.nextRestart].At) {
		r := c.restarts[c.nextRestart]
		for c.nextRestart < len(c.restarts) && !e.Time.Before(c.restarts[c.nextRestart].At) {
			c.nextRestart++
		}
		if c.events > 0 {
			return r.Why, r.Restarted
		}
	}
	if c.events == 0 {
		return "", netip.Addr{}
	}
	if back := c.last.Sub(e.Time); back > TimeJump {
		return fmt.Sprintf("timestamps jump %v back (captures joined end to end, e.g. mergecap -a or cat, or a clock stepped back): what follows cannot be timed against what came before", back.Round(time.Microsecond)), netip.Addr{}
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
	c.created += c.trace.Created()
	c.answered += c.trace.Answered()
	payloads := c.trace.payloads
	c.noteMissed()
	c.shown.counted = 0
	c.trace = NewTrace(c.p)
	c.trace.onEvict = c.forgetAfter
	c.trace.started = c.started
	c.newMemoGen() // the memos name the old trace's RPCs
	c.trace.payloads = payloads
	c.net = newNetwork(c.net.cp, c.p)
	c.ctx.T, c.ctx.Net = c.trace, c.net
	if c.inf != nil {
		c.inf.t = c.trace
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
	c.report.Sections = append(c.report.Sections, SectionStart{Frame: e.Frame, Why: why, Restarted: restarted, At: e.Time})
}
