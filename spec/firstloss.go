package spec

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// Selective loss of first transmissions (HOMA-SEND-003, BR-35).
//
// HomaModule sends a message's bytes once in skbs of several segments (GSO
// frames the NIC or the stack segments) and retransmits them, when the
// receiver asks, one segment per skb. A device that cannot segment Homa's
// GSO frames drops them all: every RPC then completes from retransmissions
// after a resend timeout. Loss as such is legal, so no single message shows
// the fault; what does is a statistic of the path (sender host → receiver
// host): losses tied to how the bytes were sent. Under any loss process
// that does not look at whether a packet is a first transmission, first
// transmissions and retransmissions on one path are lost at the same rate.
//
// What the capture counts, per path, in segments of messages longer than
// one segment, on the stretch of network before the capture point (a tap
// at the receiver or between the hosts):
//
//   - first transmissions seen (retransmit=0);
//   - first transmissions lost: each retransmitted segment that brings
//     bytes the capture never saw (HomaModule retransmits only bytes it
//     had sent, homa_resend_data);
//   - retransmissions lost: the segments a RESEND asks for again that an
//     earlier RESEND of the message had asked for and that are still
//     unseen, unless the sender answered BUSY in between (a lost RESEND
//     counts too: over-counting these only makes the test harder to pass);
//   - retransmissions seen: those that bring unseen bytes, the ones whose
//     loss the count above would show.
//
// A capture at the sender (its own link, where GSO frames above the MTU
// leave unsegmented, or a run's sent.pcapng) sees every transmission and,
// from the receiver, what it asked for; there (observeSentData,
// observeSentResend, settle):
//
//   - first transmissions sent;
//   - first transmissions lost: segments sent with retransmit=0 that a
//     RESEND asks for more than slack after the whole message was first
//     sent (so not bytes still on their way);
//   - retransmissions lost: retransmitted segments of those bytes that a
//     RESEND asks for again;
//   - retransmissions that arrived: the rest, once the receiver shows it
//     has the whole message (the client's ack of a response; the server's
//     response to a request).
//
// The statistic is firstTxLossLLR; the rule fires when it exceeds
// firstLossThreshold, at least firstLossEpisodes losses are separated by
// packets of the path that arrived (so that one outage cannot explain
// them), and nearly all the path's first transmissions were lost
// (firstLossMajority: bursty loss favours first transmissions too).

// firstLossAlpha is the false-alarm probability HOMA-SEND-003 allows per
// path under independent loss at any rate (see firstLossThreshold).
const firstLossAlpha = 1e-9

// firstLossEpisodes is the number of loss episodes, each separated from
// the one before by a packet of the path that arrived after the earlier
// loss and before the later one could have happened, that HOMA-SEND-003
// needs besides the statistic: an outage (a burst that eats every packet
// for a while) makes one episode, however many first transmissions it
// eats.
const firstLossEpisodes = 3

// firstLossMajority is the fraction of a path's first transmissions that
// must be lost before HOMA-SEND-003 tests at all. Loss that comes in
// bursts (a switch buffer overflowing, a bursty link) also falls on first
// transmissions, which a sender sends back to back, more than on
// retransmissions, which it sends one segment at a time later: the
// statistic alone flags that (seen in the simulator at 16-27% first-
// transmission loss with Gilbert-Elliott loss and with a 20 KB buffer), and
// its bound holds only for independent loss. A device that drops every
// frame a message is first sent in (BR-35) loses nearly all of them.
const firstLossMajority = 0.9

// firstTxLossLLR is the one-sided log-likelihood ratio (natural log) of
// "first transmissions and retransmissions are lost at different rates"
// against "at one rate": firstLost of firstSent first transmissions and
// retxLost of retxSent retransmissions were lost. It is 0 unless the
// first transmissions' loss fraction exceeds the retransmissions'.
//
// With â = firstLost/firstSent, b̂ = retxLost/retxSent and the pooled
// p̄ = (firstLost+retxLost)/(firstSent+retxSent), the value is
// firstSent·KL(â‖p̄) + retxSent·KL(b̂‖p̄), KL the Bernoulli relative entropy;
// it is the minimum over p of firstSent·KL(â‖p) + retxSent·KL(b̂‖p). By the
// Chernoff bound, for every common loss rate p,
// P(at least firstLost of firstSent lost) · P(at most retxLost of
// retxSent lost) ≤ exp(-LLR): exp(-LLR) bounds the false-alarm
// probability under independent loss at the worst-case rate. Example: k
// first transmissions all lost and their k retransmissions all seen give
// 2k·ln 2.
func firstTxLossLLR(firstLost, firstSent, retxLost, retxSent int) float64 {
	if firstSent <= 0 || retxSent <= 0 || firstLost*retxSent <= retxLost*firstSent {
		return 0
	}
	a, f, b, r := float64(firstLost), float64(firstSent), float64(retxLost), float64(retxSent)
	p := (a + b) / (f + r)
	return f*bernoulliKL(a/f, p) + r*bernoulliKL(b/r, p)
}

// bernoulliKL is the relative entropy KL(x‖p) of Bernoulli(x) from
// Bernoulli(p) in nats (0·ln 0 = 0), for p in (0, 1).
func bernoulliKL(x, p float64) float64 {
	var k float64
	if x > 0 {
		k += x * math.Log(x/p)
	}
	if x < 1 {
		k += (1 - x) * math.Log((1-x)/(1-p))
	}
	return k
}

// firstLossThreshold is the LLR the n-th test on a path (n ≥ 1) must
// reach: ln(1/α) + ln(n(n+1)), so that test n alone has false-alarm
// probability at most α/(n(n+1)) and all the tests a capture makes on the
// path, one per lost first transmission once the episodes are there, at
// most α together (Σ 1/(n(n+1)) = 1). The per-test bound is the
// fixed-sample one (firstTxLossLLR); how many retransmissions there are
// depends on the losses, which the bound does not model.
func firstLossThreshold(n int) float64 {
	return math.Log(1/firstLossAlpha) + math.Log(float64(n)*float64(n+1))
}

// pathLoss is one path's tally (see the comment at the top of the file).
type pathLoss struct {
	// firstSeen counts the first transmissions seen (at the sender: sent,
	// including those lost); retxSeen the retransmissions that arrived
	// (before the capture point: firstLost).
	firstSeen, firstLost int
	retxSeen, retxLost   int
	// atSender: the capture point is the path's sender (observeSenderSide);
	// sent holds its messages with lost first transmissions whose fate is
	// not yet known; due is set when the evidence crossed the threshold at
	// a packet from the receiver, to be reported at the sender's next one.
	atSender bool
	sent     map[*Message]*sentMsg
	due      bool
	// episodes counts the loss episodes; lastEpisode is the time of the
	// retransmission that showed the latest episode's loss (a packet of
	// the path that arrived after it); episodeFrames their frames.
	episodes      int
	lastEpisode   time.Time
	episodeFrames []int
	// tests counts the tests made (firstLossThreshold); fired is the
	// frame and segment at which the statistic crossed the threshold, why
	// the numbers then (zero frame: not crossed).
	tests       int
	fired       int
	firedSeg    int
	why         string
	firedFrames []int
}

// FirstLoss is what a capture shows of the selective loss of one path's
// first transmissions (HOMA-SEND-003): the counts in segments and, once
// the evidence crossed the threshold, the frame where it did.
type FirstLoss struct {
	FirstSeen, FirstLost, RetxSeen, RetxLost int
	// Episodes counts the losses separated by packets of the path that
	// arrived in between; LLR is firstTxLossLLR of the counts.
	Episodes int
	LLR      float64
	// Frame and Segment are where the evidence first crossed the
	// threshold (0: not crossed); Why says it with the numbers; Frames
	// are the frames that opened each loss episode.
	Frame, Segment int
	Why            string
	Frames         []int
}

// FirstLoss returns the tally of the path from → to.
func (n *Network) FirstLoss(from, to netip.Addr) FirstLoss {
	pl := n.firstLoss[hostPair{from, to}]
	if pl == nil {
		return FirstLoss{}
	}
	f, r := pl.trials()
	return FirstLoss{FirstSeen: pl.firstSeen, FirstLost: pl.firstLost, RetxSeen: pl.retxSeen, RetxLost: pl.retxLost,
		Episodes: pl.episodes, LLR: firstTxLossLLR(pl.firstLost, f, pl.retxLost, r),
		Frame: pl.fired, Segment: pl.firedSeg, Why: pl.why, Frames: pl.firedFrames}
}

// trials returns the first transmissions and the retransmissions whose
// fate the tally knows.
func (pl *pathLoss) trials() (first, retx int) {
	if pl.atSender {
		return pl.firstSeen, pl.retxSeen + pl.retxLost
	}
	return pl.firstSeen + pl.firstLost, pl.retxSeen + pl.retxLost
}

// test runs the n-th test of the path at e, recording the crossing; where
// is "before the capture point" or "after it".
func (n *Network) test(pl *pathLoss, e *Event, from, to netip.Addr, where string) {
	if pl.fired != 0 || pl.episodes < firstLossEpisodes {
		return
	}
	first, retx := pl.trials()
	if float64(pl.firstLost) < firstLossMajority*float64(first) {
		return
	}
	pl.tests++
	llr := firstTxLossLLR(pl.firstLost, first, pl.retxLost, retx)
	thr := firstLossThreshold(pl.tests)
	if llr < thr {
		return
	}
	pl.fired, pl.firedSeg = e.Frame, e.Segment
	n.firedNow = pl
	pl.firedFrames = append([]int(nil), pl.episodeFrames...)
	pl.why = fmt.Sprintf("%v → %v lost %d of %d first-transmission segments of multi-segment messages %s but %d of %d retransmissions, "+
		"in %d loss episodes separated by packets that arrived (frames %s): log-likelihood ratio %.1f ≥ %.1f, false-alarm probability under loss independent of how a packet was sent below %.0e",
		from, to, pl.firstLost, first, where, pl.retxLost, retx, pl.episodes, joinFrames(pl.episodeFrames), llr, thr, math.Exp(-llr))
}

// episode counts a message whose lost first transmissions the capture
// showed at frame, recovered by a packet of the path that arrived at
// recovered: a new episode when the message started (start, zero if
// unknown) after the packet that showed the previous episode's loss.
func (pl *pathLoss) episode(start, recovered time.Time, frame int) {
	if pl.episodes == 0 || !start.IsZero() && start.After(pl.lastEpisode) {
		pl.episodes++
		pl.lastEpisode = recovered
		pl.episodeFrames = append(pl.episodeFrames, frame)
	}
}

// startOf is the earliest time message m of RPC r can have been sent, as
// far as the capture shows: a response's after its request was complete
// (zero: unknown). A request's is unknown (a capture that lost its first
// transmissions may show nothing of it before), so requests open only a
// path's first loss episode.
func startOf(r *RPC, m *Message) time.Time {
	if m == &r.Response && r.Request.Complete {
		return r.Request.CompleteTime
	}
	return time.Time{}
}

func (n *Network) pathLoss(k hostPair) *pathLoss {
	pl := n.firstLoss[k]
	if pl == nil {
		pl = &pathLoss{}
		n.firstLoss[k] = pl
	}
	return pl
}

// multiSegment reports whether a message of length bytes sent by e's
// sender takes more than one segment (the messages HOMA-SEND-003 counts:
// only those are sent in GSO frames).
func (n *Network) multiSegment(e *Event, length uint32) bool { return length > segData(n.mtu, e) }

// observeFirstLoss updates the tally of e's path with DATA e of message m
// of RPC r (state before e).
func (n *Network) observeFirstLoss(r *RPC, m *Message, e *Event) {
	if e.Length == 0 || !n.multiSegment(e, e.Packet.Data().MessageLength()) {
		return
	}
	if n.atSender(e.Src) {
		n.observeSentData(r, m, e)
		return
	}
	pl := m.lossPath
	if pl == nil {
		pl = n.pathLoss(hostPair{e.Src, e.Dst})
		m.lossPath = pl
	}
	if !e.Retransmit() {
		pl.firstSeen++
		return
	}
	end := min(e.End(), e.Packet.Data().MessageLength())
	if e.Offset >= end || m.captured(e.Offset, end) {
		return
	}
	// A retransmission brings bytes the capture never saw: their first
	// transmission was lost before the capture point.
	pl.firstLost++
	pl.retxSeen++
	if !m.lossCounted {
		m.lossCounted = true
		// The message's lost bytes were sent after its start; this
		// retransmission arrived after them.
		pl.episode(startOf(r, m), e.Time, e.Frame)
	}
	n.test(pl, e, e.Src, e.Dst, "before the capture point")
}

// observeRetxLoss counts, at RESEND e asking for bytes of message m of RPC
// r (state before e), the retransmissions its repeat shows lost.
func (n *Network) observeRetxLoss(r *RPC, m *Message, e *Event, rs wire.Resend, slack time.Duration) {
	from := e.Dst // the message's sender
	if n.atSender(from) {
		n.observeSentResend(r, m, e, rs, slack)
		return
	}
	if m.Resends == 0 {
		return
	}
	if m.Length != 0 && !n.multiSegment(e, m.Length) {
		return
	}
	// A BUSY from the sender since the previous RESEND answered it: no
	// retransmission was sent.
	heard, typ := r.HeardFromServer, r.HeardTypeFromServer
	if from == r.Key.Client && m == &r.Request {
		heard, typ = r.HeardFromClient, r.HeardTypeFromClient
	}
	if typ == wire.TypeBusy && heard.After(m.res().LastResend.Time) {
		return
	}
	pl := n.pathLoss(hostPair{from, e.Src})
	if m.Length == 0 {
		pl.retxLost++ // nothing of the message seen yet: at least one segment
		return
	}
	start, end := rs.Offset(), m.Length
	if !rs.IsResendAll() {
		end = uint32(min(uint64(end), uint64(start)+uint64(rs.Length())))
	}
	if start >= end || !m.ResendAll && !m.Asked.Overlaps(start, end) {
		return
	}
	if missing := (end - start) - m.Seen.Overlap(start, end); missing > 0 {
		seg := segData(n.mtu, e)
		pl.retxLost += int((missing + seg - 1) / seg)
	}
}

// joinFrames renders frame numbers as "12,40,77".
func joinFrames(fs []int) string {
	s := ""
	for i, f := range fs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(f)
	}
	return s
}

// sentMsg is what a capture at the sender knows of one message with lost
// first transmissions: the bytes counted lost, the retransmitted ones
// whose fate is not yet known (pend, segments pendSegs).
type sentMsg struct {
	r          *RPC
	lost, pend byteranges.Set
	pendSegs   int
	frame      int
}

// observeSentData counts DATA e of message m of RPC r at a capture at its
// sender.
func (n *Network) observeSentData(r *RPC, m *Message, e *Event) {
	pl := m.lossPath
	if pl == nil {
		pl = n.pathLoss(hostPair{e.Src, e.Dst})
		pl.atSender = true
		m.lossPath = pl
	}
	if !e.Retransmit() {
		pl.firstSeen++
		return
	}
	sm := pl.sent[m]
	if sm == nil {
		return
	}
	end := min(e.End(), e.Packet.Data().MessageLength())
	if sm.lost.Overlaps(e.Offset, end) && !sm.pend.Covers(e.Offset, end) {
		sm.pend.Add(e.Offset, end)
		sm.pendSegs++
	}
}

// observeSentResend counts RESEND e from the receiver of message m of RPC
// r at a capture at the message's sender: first transmissions and
// retransmissions it asks for again were lost.
func (n *Network) observeSentResend(r *RPC, m *Message, e *Event, rs wire.Resend, slack time.Duration) {
	from, to := e.Dst, e.Src
	pl := n.pathLoss(hostPair{from, to})
	pl.atSender = true
	if m.Length == 0 || !n.multiSegment(e, m.Length) {
		return
	}
	start, end := rs.Offset(), m.Length
	if !rs.IsResendAll() {
		end = uint32(min(uint64(end), uint64(start)+uint64(rs.Length())))
	}
	if start >= end {
		return
	}
	seg := segData(n.mtu, e)
	sm := pl.sent[m]
	if sm != nil {
		if lostAgain := sm.pend.Overlap(start, end); lostAgain > 0 {
			pl.retxLost += int((lostAgain + seg - 1) / seg)
			sm.pend = removeRange(sm.pend, start, end)
			sm.pendSegs = int((sm.pend.Total() + seg - 1) / seg)
		}
	}
	// First transmissions asked for that were not counted lost yet, once
	// the whole message had left more than slack before (not bytes that
	// may still be on their way; a retransmission asked for again while on
	// its way counts as lost, which only makes the test harder to pass).
	if m.AllSentTime.IsZero() || e.Time.Sub(m.AllSentTime) <= slack {
		return
	}
	var fresh uint32
	for _, x := range m.FirstSent {
		s, t := max(x.Start, start), min(x.End, end)
		if s < t {
			fresh += (t - s)
			if sm != nil {
				fresh -= sm.lost.Overlap(s, t)
			}
		}
	}
	if fresh == 0 {
		return
	}
	if sm == nil {
		if pl.sent == nil {
			pl.sent = map[*Message]*sentMsg{}
		}
		sm = &sentMsg{r: r, frame: e.Frame}
		pl.sent[m] = sm
		n.settling[hostPair{from, to}] = pl
	}
	pl.firstLost += int((fresh + seg - 1) / seg)
	for _, x := range m.FirstSent {
		if s, t := max(x.Start, start), min(x.End, end); s < t {
			sm.lost.Add(s, t)
		}
	}
}

// settle decides, at event e between the two hosts of path from → to
// (a capture at from), the fate of the pending retransmissions of
// messages the receiver now shows it has whole, counts their episodes,
// tests, and reports a crossing due at the sender's next packet.
func (n *Network) settle(pl *pathLoss, e *Event, from, to netip.Addr) {
	// Messages that settle at one event count their episodes in the order
	// their losses showed (frame): pl.sent is a map, and whether a message
	// opens an episode depends on the ones counted before it.
	var whole []settled
	for m, sm := range pl.sent {
		r := sm.r
		switch {
		case r.gone || r.Unknown:
			delete(pl.sent, m)
		case m == &r.Response && r.Acked, m == &r.Request && r.Response.Length > 0:
			// The receiver has the whole message: the retransmissions
			// not asked for again arrived.
			pl.retxSeen += sm.pendSegs
			if sm.pendSegs > 0 {
				at := r.AckTime
				if m == &r.Request {
					at = r.Response.FirstData
				}
				whole = append(whole, settled{startOf(r, m), at, sm.frame})
			}
			delete(pl.sent, m)
			pl.due = true
		}
	}
	if len(whole) > 1 {
		slices.SortFunc(whole, func(a, b settled) int {
			if c := cmp.Compare(a.frame, b.frame); c != 0 {
				return c
			}
			if c := a.start.Compare(b.start); c != 0 {
				return c
			}
			return a.recovered.Compare(b.recovered)
		})
	}
	for _, w := range whole {
		pl.episode(w.start, w.recovered, w.frame)
	}
	if pl.due && e.Src == from && e.Dst == to {
		pl.due = false
		n.test(pl, e, from, to, "after the capture point")
	}
	if len(pl.sent) == 0 && !pl.due {
		delete(n.settling, hostPair{from, to})
	}
}

// settled is a message whose lost first transmissions the receiver now
// shows it has whole: pathLoss.episode's arguments.
type settled struct {
	start, recovered time.Time
	frame            int
}

// observeSettling settles, at event e, the paths between e's hosts that
// wait for the fate of retransmissions (a capture at their sender).
func (n *Network) observeSettling(e *Event) {
	if len(n.settling) == 0 {
		return
	}
	if pl := n.settling[hostPair{e.Src, e.Dst}]; pl != nil {
		n.settle(pl, e, e.Src, e.Dst)
	}
	if pl := n.settling[hostPair{e.Dst, e.Src}]; pl != nil {
		n.settle(pl, e, e.Dst, e.Src)
	}
}

// removeRange returns set without [s, e).
func removeRange(set byteranges.Set, s, e uint32) byteranges.Set {
	var out byteranges.Set
	for _, x := range set {
		if x.Start < s {
			out.Add(x.Start, min(x.End, s))
		}
		if x.End > e {
			out.Add(max(x.Start, e), x.End)
		}
	}
	return out
}
