package spec

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/homatest/homatest/spec/wire"
)

// The trace's side of DATA prediction: a DATA packet the rules' memo
// predicted (predict.go) continues its message in order, as a first
// transmission in a frame of its own, below the message's end, with no
// packet of its RPC's other message, no control packet and nothing out of
// the ordinary in between. Trace.Apply's general path asks, for every
// packet, about acks, RPC_UNKNOWN, new incarnations, server timeouts,
// client ids, the receivers' grant and long-message sets and eviction;
// for such a packet each of those answers is known, and applyPredicted
// updates only what the packet changes: its message's byte ranges,
// samples and counters, the RPC's times and counts, the host pair's
// cutoff-version count, the payload log and the receiver's outstanding
// sum. With verification on (the spec tests) the Checker runs both paths
// from the same state and panics on any difference (Checker.applyPredicted).

// applyPredicted is Apply for e, a well-formed DATA packet whose rule
// stage a memo predicted; it returns false, having changed nothing, when
// e needs the general path: its RPC acknowledged, forgotten by its client
// or not yet filed for eviction, its time before the RPC's latest, e not
// in order after every byte of its message seen and sent or reaching its
// end, e a retransmission, a later segment, carrying an ack or of no
// length, a client id newly filed, a silence that may have let the
// server's timer abort the RPC (serverTimedOut), a response whose request
// the server was not yet known to hold whole (heldWhole), a host pair or
// grant-trigger entry not yet cached or a cutoff version or priority new
// to the pair, the message entering or leaving its receiver's granting
// or long-message set, a buffer wakeup's log to extend, or the 4096th
// packet (eviction).
func (t *Trace) applyPredicted(e *Event) bool {
	r := t.curRPC
	if t.cur != e || r == nil || e.Err != nil || e.ICMP != nil || e.Type() != wire.TypeData || e.Segment != 0 || e.Length <= 0 ||
		r.Acked || !r.ForgotTime.IsZero() || r.gone || r.idleAt < 0 || e.Time.Before(r.Last) || (t.applied+1)%4096 == 0 {
		return false
	}
	p := e.Packet
	d := p.Data()
	if d.Retransmit() != 0 || d.AckClientID() != 0 {
		return false
	}
	fromClient := e.FromClient()
	m := r.Msg(p.Role())
	if m.Length == 0 || m.Complete || e.Offset != m.SentEnd || e.End() >= m.Length || len(m.Seen) == 0 || m.Seen[len(m.Seen)-1].End != e.Offset {
		return false
	}
	if fromClient {
		tolerance := t.P.Ticks(t.P.TimeoutTicks-2) - t.P.Slack
		if !r.idLatest || r.serverQuietMax >= tolerance || subTime(e.Time, r.HeardFromClient) >= tolerance {
			return false
		}
	} else if !r.Request.Complete && !r.Request.whole {
		return false
	}
	v := d.CutoffVersion()
	pd := m.pair
	if pd == nil || pd.hp != (hostPair{e.Src, e.Dst}) || !pd.hot || pd.hotVer != v || e.Priority >= 64 || pd.hotPrios&(1<<e.Priority) == 0 {
		return false
	}
	trig := t.grantable(m.Length, m.MinIncoming)
	if trig && m.trig == nil || !m.WakeupTime.IsZero() && m.retx != nil {
		return false
	}
	ended := m == &r.Request && r.Unknown && r.UnknownFromClient
	if want := m.Grants > 0 && !m.whole && !ended; want != m.inGranting || m.Length > t.P.UnschedBytes && !m.inLong {
		return false
	}

	// Apply's general path, less what the conditions above decide.
	t.cur = nil
	t.Now = e.Time
	r.Last = e.Time
	if fromClient {
		r.ClientPort, r.ServerPort = p.Common().Sport(), p.Common().Dport()
	} else {
		r.ClientPort, r.ServerPort = p.Common().Dport(), p.Common().Sport()
	}
	r.Packets[wire.TypeData-wire.MinType]++
	if trig {
		m.trig.add()
	}
	if r.spoke(fromClient) {
		t.answered++
	}
	r.heard(e, wire.TypeData)
	if fromClient {
		r.ReqLast = e.Time
		r.serverQuietMax = 0
	} else {
		r.held(e.Time, t.P.Slack)
	}
	// applyData's.
	pd.hotN++
	pd.noteRPC(p.SenderID(), v, Seen{e.Time, e.Frame})
	if inc := d.Incoming(); inc > m.MaxIncoming {
		m.MaxIncoming = inc
	}
	if inc := d.Incoming(); inc > 0 && (m.MinIncoming == 0 || inc < m.MinIncoming) {
		m.MinIncoming = inc
	}
	m.LastData = e.Time
	m.Priorities |= 1 << (e.Priority & 7)
	end := e.End()
	if t.payloads && t.payDone != e && len(e.Payload) > 0 {
		t.comparePayload(e, m)
	}
	t.payDone = nil
	if m == &r.Response {
		r.Request.payload = nil
	}
	before := m.Seen.Total()
	if n := m.Seen.Add(e.Offset, end); n != 0 {
		m.noteReceived(e.Time, before+n, t.P.Slack)
	}
	m.frameMax = max(m.frameMax, uint32(e.Length))
	m.noteGrantUse(t.P, e)
	m.FirstSent.Add(e.Offset, end)
	m.noteCut(t.P, e)
	if m.SegSize == 0 && uint32(e.Length) <= maxSegData(t.P.MTU, e.IPv6()) && !endsAtCut(t.P, e) && !endsAtHorizon(m, end) {
		m.SegSize = uint32(e.Length)
	}
	m.SentEnd = end
	// trackIncoming and trackLong with no set to change; file has nothing
	// to do (the RPC's deadline moved on, if at all); tick no eviction.
	t.refreshOutstanding(m)
	t.noteCrowded(pd, e.Time)
	t.applied++
	return true
}

// predictedState is what applyPredicted may change, copied whole (the
// messages' slices and the objects they point to), with the trace's
// other counters and table sizes: the state Checker.applyPredicted
// compares.
type predictedState struct {
	r            RPC
	req, resp    predictedMsg
	answered     int
	applied      int
	created      int
	unusual      uint32
	missed       uint64
	sawUnknown   bool
	now          time.Time
	cur, payDone *Event
	sizes        [11]int
}

// predictedMsg is what a message points to that applyPredicted may
// change: each object (its identity) and a copy of its contents.
type predictedMsg struct {
	pay  *payloadLog
	payV payloadLog
	pd   *pairData
	pdV  pairData
	trig *triggerLog
	trV  triggerLog
	acc  *outstandingSum
	accV outstandingSum
}

// cloneMsgSlices gives m copies of its slices (nil stays nil).
func cloneMsgSlices(m *Message) {
	m.Seen, m.Earlier, m.FirstSent, m.ResentAhead, m.Asked = slices.Clone(m.Seen), slices.Clone(m.Earlier), slices.Clone(m.FirstSent), slices.Clone(m.ResentAhead), slices.Clone(m.Asked)
	m.RecentGrants, m.recvLog, m.GrantLog = slices.Clone(m.RecentGrants), slices.Clone(m.recvLog), slices.Clone(m.GrantLog)
}

// clonePayload returns a copy of l with copies of its slices.
func clonePayload(l payloadLog) payloadLog {
	l.spans, l.blocks, l.have = slices.Clone(l.spans), slices.Clone(l.blocks), slices.Clone(l.have)
	return l
}

// savePredicted copies what applyPredicted may change of r and the trace.
func (t *Trace) savePredicted(r *RPC) *predictedState {
	s := &predictedState{r: *r, answered: t.answered, applied: t.applied, created: t.created, unusual: t.unusual, missed: t.missed.n,
		sawUnknown: t.sawUnknown, now: t.Now, cur: t.cur, payDone: t.payDone,
		sizes: [...]int{len(t.rpcs), len(t.byClientID), len(t.newest), len(t.triggers), len(t.pairs), len(t.granting), len(t.longIn), len(t.outstanding), len(t.longDone), t.idle.Len(), len(t.done)}}
	for _, x := range [2]struct {
		m  *Message
		pm *predictedMsg
	}{{&s.r.Request, &s.req}, {&s.r.Response, &s.resp}} {
		m, pm := x.m, x.pm
		cloneMsgSlices(m)
		if pm.pay = m.payload; pm.pay != nil {
			pm.payV = clonePayload(*m.payload)
		}
		if pm.pd = m.pair; pm.pd != nil {
			pm.pdV = *m.pair
		}
		if pm.trig = m.trig; pm.trig != nil {
			pm.trV = *m.trig
		}
		if pm.acc = m.acc; pm.acc != nil {
			pm.accV = *m.acc
		}
	}
	return s
}

// restorePredicted puts back into r and the trace what s, saved from r,
// holds.
func (t *Trace) restorePredicted(r *RPC, s *predictedState) {
	*r = s.r
	for _, x := range [2]struct {
		m  *Message
		pm *predictedMsg
	}{{&r.Request, &s.req}, {&r.Response, &s.resp}} {
		m, pm := x.m, x.pm
		cloneMsgSlices(m)
		if pm.pay != nil {
			*pm.pay = clonePayload(pm.payV)
		}
		if pm.pd != nil {
			*pm.pd = pm.pdV
		}
		if pm.trig != nil {
			*pm.trig = pm.trV
		}
		if pm.acc != nil {
			*pm.acc = pm.accV
		}
	}
	t.answered, t.applied, t.created, t.unusual, t.missed.n, t.sawUnknown = s.answered, s.applied, s.created, s.unusual, s.missed, s.sawUnknown
	t.cur, t.payDone = s.cur, s.payDone
	t.Now = s.now
}

// comparable returns s as Checker.applyPredicted compares it: a payload
// log's spans are its contents (first is only their first array, which
// the log may or may not use: restorePredicted gives them another; and no
// spans are none, whether or not a reused log kept an array), and a
// message's payload pointer is an identity (a log made by either path is
// a new one).
func (s *predictedState) comparable() predictedState {
	c := *s
	for _, pm := range [2]*predictedMsg{&c.req, &c.resp} {
		pm.payV.first = [4]paySpan{}
		pm.pdV.recv = recvCache{} // a cache, filled by either path
		if len(pm.payV.spans) == 0 {
			pm.payV.spans = nil
		}
	}
	for _, m := range [2]*Message{&c.r.Request, &c.r.Response} {
		if m.payload != nil {
			m.payload = &payloadLog{}
		}
	}
	c.req.pay, c.resp.pay = nil, nil
	return c
}

// applyPredicted applies e, a DATA packet a memo predicted, through the
// trace's lean path (Trace.applyPredicted), or Apply when that declines.
// With verification on, both run from the same state (the lean path's
// changes undone before Apply runs) and a difference panics.
func (c *Checker) applyPredicted(e *Event) {
	t := c.trace
	if !c.verify {
		if !t.applyPredicted(e) {
			t.Apply(e)
		}
		return
	}
	r := t.curRPC
	if r == nil || t.cur != e {
		t.Apply(e)
		return
	}
	before := t.savePredicted(r)
	if !t.applyPredicted(e) {
		t.Apply(e)
		return
	}
	lean := t.savePredicted(r)
	t.restorePredicted(r, before)
	t.Apply(e)
	full := t.savePredicted(r)
	if a, b := lean.comparable(), full.comparable(); !reflect.DeepEqual(a, b) {
		panic(fmt.Sprintf("predicted DATA at frame %d (offset %d): the trace's lean path (applyPredicted) left another state than Apply:\nlean %+v\nfull %+v", e.Frame, e.Offset, a, b))
	}
	c.applyVerified++
}
