package spec

import (
	"fmt"
	"math"
	"net/netip"
	"time"

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
// at the receiver or between the hosts; a capture at the sender sees no
// loss before it and counts nothing):
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
// The statistic is firstTxLossLLR; the rule fires when it exceeds
// firstLossThreshold and at least firstLossEpisodes losses are separated
// by packets of the path that arrived (so that one outage cannot explain
// them).

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
// most α together (Σ 1/(n(n+1)) = 1).
func firstLossThreshold(n int) float64 {
	return math.Log(1/firstLossAlpha) + math.Log(float64(n)*float64(n+1))
}

// pathLoss is one path's tally (see the comment at the top of the file).
type pathLoss struct {
	firstSeen, firstLost int
	retxLost             int
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
	return FirstLoss{FirstSeen: pl.firstSeen, FirstLost: pl.firstLost, RetxSeen: pl.firstLost, RetxLost: pl.retxLost,
		Episodes: pl.episodes, LLR: firstTxLossLLR(pl.firstLost, pl.firstSeen+pl.firstLost, pl.retxLost, pl.firstLost+pl.retxLost),
		Frame: pl.fired, Segment: pl.firedSeg, Why: pl.why, Frames: pl.firedFrames}
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
func multiSegment(e *Event, length uint32) bool { return length > segData(e) }

// observeFirstLoss updates the tally of e's path with DATA e of message m
// of RPC r (state before e).
func (n *Network) observeFirstLoss(r *RPC, m *Message, e *Event) {
	if n.atSender(e.Src) || e.Length == 0 || !multiSegment(e, e.Packet.Data().MessageLength()) {
		return
	}
	k := hostPair{e.Src, e.Dst}
	if !e.Retransmit() {
		n.pathLoss(k).firstSeen++
		return
	}
	end := min(e.End(), e.Packet.Data().MessageLength())
	if e.Offset >= end || m.captured(e.Offset, end) {
		return
	}
	// A retransmission brings bytes the capture never saw: their first
	// transmission was lost before the capture point.
	pl := n.pathLoss(k)
	pl.firstLost++
	if !m.lossCounted {
		m.lossCounted = true
		// The message's lost bytes were sent after its earliest start:
		// a response after its request was complete. A new episode needs
		// that start after the packet that showed the previous episode's
		// loss (that packet arrived between the two losses).
		var start time.Time
		if m == &r.Response && r.Request.Complete {
			start = r.Request.CompleteTime
		}
		if pl.episodes == 0 || !start.IsZero() && start.After(pl.lastEpisode) {
			pl.episodes++
			pl.lastEpisode = e.Time
			pl.episodeFrames = append(pl.episodeFrames, e.Frame)
		}
	}
	if pl.fired != 0 || pl.episodes < firstLossEpisodes {
		return
	}
	pl.tests++
	firstSent, retxSent := pl.firstSeen+pl.firstLost, pl.firstLost+pl.retxLost
	llr := firstTxLossLLR(pl.firstLost, firstSent, pl.retxLost, retxSent)
	if thr := firstLossThreshold(pl.tests); llr >= thr {
		pl.fired, pl.firedSeg = e.Frame, e.Segment
		pl.firedFrames = append([]int(nil), pl.episodeFrames...)
		pl.why = fmt.Sprintf("%v → %v lost %d of %d first-transmission segments of multi-segment messages before the capture point but %d of %d retransmissions, "+
			"in %d loss episodes separated by packets that arrived (frames %s): log-likelihood ratio %.1f ≥ %.1f, false-alarm probability under loss independent of how a packet was sent below %.0e",
			e.Src, e.Dst, pl.firstLost, firstSent, pl.retxLost, retxSent, pl.episodes, joinFrames(pl.episodeFrames), llr, thr, math.Exp(-llr))
	}
}

// observeRetxLoss counts, at RESEND e asking for bytes of message m of RPC
// r (state before e), the retransmissions its repeat shows lost.
func (n *Network) observeRetxLoss(r *RPC, m *Message, e *Event, rs wire.Resend) {
	from := e.Dst // the message's sender
	if n.atSender(from) || m.Resends == 0 {
		return
	}
	if m.Length != 0 && !multiSegment(e, m.Length) {
		return
	}
	// A BUSY from the sender since the previous RESEND answered it: no
	// retransmission was sent.
	heard, typ := r.HeardFromServer, r.HeardTypeFromServer
	if from == r.Key.Client && m == &r.Request {
		heard, typ = r.HeardFromClient, r.HeardTypeFromClient
	}
	if typ == wire.TypeBusy && heard.After(m.LastResend.Time) {
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
		seg := segData(e)
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
