package conformance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/homatest/homatest/internal/stall"
	"net/netip"
	"time"

	"github.com/homatest/homatest/agent"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

// testerPort is the port a tester serves on when the IUT is the client.
const testerPort = 5000

// iutRPC is an RPC the IUT started as a client towards a tester.
type iutRPC struct {
	done   <-chan CallResult
	first  *tester.Packet // the first request DATA that arrived
	id     uint64         // the IUT's client RPC id
	cport  uint16         // the IUT's client port
	msgLen int
	// respLen is the response length the call asks for, p the tester
	// it calls; ended is set once wait has taken the call's result.
	respLen int
	p       *tester.Peer
	ended   bool
}

// iutCall makes the IUT call peer p at testerPort with a request of reqLen
// bytes asking for respLen, and waits for the request's first DATA.
func iutCall(p *tester.Peer, reqLen, respLen int) *iutRPC {
	GinkgoHelper()
	return iutCallTimeout(p, reqLen, respLen, 0)
}

// iutCallTimeout is iutCall for a call the IUT's application gives up
// after timeout (0: never; Target.Call).
func iutCallTimeout(p *tester.Peer, reqLen, respLen int, timeout time.Duration) *iutRPC {
	GinkgoHelper()
	done, err := env.IUT.Call(ctx(), netip.AddrPortFrom(p.Addr(), testerPort), reqLen, respLen, timeout)
	ok(err, "asking the IUT to call %s:%d", p.Addr(), testerPort)
	d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(),
		Checks: []tester.Check{msgLenIs(reqLen), toPort(testerPort)}}, wait(10*time.Millisecond))
	ok(err, "the IUT's request DATA")
	r := &iutRPC{done: done, first: d, id: d.Pkt.SenderID(), cport: d.Pkt.Common().Sport(), msgLen: reqLen, respLen: respLen, p: p}
	cur.calls = append(cur.calls, r)
	return r
}

// finish ends r if the spec left it running (unsupported or failed
// after the call began, or never waited for): the tester sends the
// whole response as unscheduled DATA (incoming = its length, so no GRANT
// is needed) and waits, on the environment's clock, up to timeout_ticks
// for the call to end. Otherwise the IUT's client keeps RESENDing into
// the specs after it, whose captures do not hold the RPC's start
// (HOMA-ID-004 judged one such RESEND a reused id). Best effort, after
// the spec's verdict: it asserts nothing.
func (r *iutRPC) finish() {
	var res CallResult
	done := func() bool { return r.poll(&res) }
	if r.ended || done() {
		return
	}
	pr := params()
	lvl := unschedLevel(pr, r.respLen)
	if r.responseData(r.p, r.respLen, 0, r.respLen, r.respLen, pr.CutoffVersion, false, func(f wire.Fields) error {
		return r.p.SendDeliberate(iut(), lvl, f, "the whole response unscheduled, ending a call the spec left running (cleanup after the spec)")
	}) != nil {
		return
	}
	env.Clock.Wait(context.Background(), env.Clock.Now().Add(pr.Ticks(pr.TimeoutTicks+2)), done)
}

// callIDOf returns the agent's call id, request payload bytes 4-11, from
// the request DATA tester p has got (a request's first packet may carry
// fewer bytes: unsched_bytes below 12), or 0 when they have not all come.
func (r *iutRPC) callIDOf(p *tester.Peer) uint64 {
	var b [8]byte
	have := 0
	for _, x := range p.Log() {
		if x.Sent || x.Err != nil || x.Src != iut() || x.Pkt.Type() != wire.TypeData || x.Pkt.SenderID() != r.id {
			continue
		}
		d := x.Pkt.Data()
		pl, off := d.Payload(), int(d.Offset())
		for i := max(4, off); i < min(12, off+len(pl)); i++ {
			if have&(1<<(i-4)) == 0 {
				b[i-4], have = pl[i-off], have|1<<(i-4)
			}
		}
	}
	if have != 0xff {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}

func msgLenIs(n int) tester.Check {
	return tester.Is("message_length", uint64(n))
}

func toPort(port uint16) tester.Check {
	return tester.Is("dport", uint64(port))
}

// control returns the common header of a packet the tester (as server of
// r) sends to the IUT's client.
func (r *iutRPC) control() wire.CommonFields {
	return wire.CommonFields{Sport: testerPort, Dport: r.cport, SenderID: r.id + 1}
}

// receiveRequest receives the request as a HomaModule receiver granting
// one message would (receiveGranted). It waits until every byte of the
// request has arrived and returns the arrival of the last.
func (r *iutRPC) receiveRequest(p *tester.Peer) time.Time {
	GinkgoHelper()
	var got byteranges.Set
	d := r.first.Pkt.Data()
	got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
	return r.receiveRest(p, &got, unsched(r.msgLen), r.first.At)
}

// receiveRest is receiveRequest after the tester got the request bytes
// in got and granted up to granted: it grants and receives the rest and
// returns the arrival of the last DATA (last when none was missing).
func (r *iutRPC) receiveRest(p *tester.Peer, got *byteranges.Set, granted int, last time.Time) time.Time {
	GinkgoHelper()
	return receiveGranted(p, r.control(), r.id, r.msgLen, got, granted, last, "request")
}

// receiveGranted receives the rest of a message of msgLen bytes the IUT
// sends to tester p in RPC id (what: "request" or "response"), of which
// p got the bytes in got and granted up to granted, as a HomaModule
// receiver granting one message would: each DATA that lets it grant more
// draws a GRANT (common header ctl) up to the grant window beyond the
// bytes received (Params.GrantWindow), at priority 0, the level of the
// only message being granted (facts GRANT-09; homa_grant_priority). It
// returns the arrival of the last DATA (last when none was missing).
func receiveGranted(p *tester.Peer, ctl wire.CommonFields, id uint64, msgLen int, got *byteranges.Set, granted int, last time.Time, what string) time.Time {
	GinkgoHelper()
	pr := params()
	for !got.Covers(0, uint32(msgLen)) {
		if off := testerGrant(msgLen, int(got.Total())); off > granted {
			granted = off
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.GrantFields{Common: ctl, Offset: uint32(off)})).To(Succeed())
		}
		pk, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: id}, wait(20*time.Millisecond))
		ok(err, "%s bytes: have %d of %d", what, got.Total(), msgLen)
		d := pk.Pkt.Data()
		got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
		last = pk.At
	}
	return last
}

// testerGrant is the offset of the GRANT a tester receiver sends for a
// msgLen-byte message of which it has received bytes: one grant window
// past them (Params.GrantWindow), as a HomaModule receiver of one message
// grants (homa_grant_try_send), up to the length.
func testerGrant(msgLen, received int) int {
	pr := params()
	return min(msgLen, received+int(pr.GrantWindow()))
}

// receiveUnsched waits until the request's unscheduled bytes [0, U) have
// arrived and returns the bytes got, r.first's among them, and the end of
// the highest (what the IUT had transmitted: U, or up to one packet more).
func (r *iutRPC) receiveUnsched(p *tester.Peer) (*byteranges.Set, int) {
	GinkgoHelper()
	got := &byteranges.Set{}
	d := r.first.Pkt.Data()
	got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
	end := int(d.Offset()) + d.DataLen()
	u := uint32(unsched(r.msgLen))
	for !got.Covers(0, u) {
		pk, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, wait(10*time.Millisecond))
		ok(err, "the request's unscheduled bytes: have %d of %d", got.Total(), u)
		d := pk.Pkt.Data()
		got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
		end = max(end, int(d.Offset())+d.DataLen())
	}
	return got, end
}

// receiveTo grants r's request up to granted (one GRANT, at priority 0)
// and waits until its bytes up to there have arrived, adding them to got.
// It returns the end of the highest byte the IUT transmitted, as far as
// has arrived: sent, or more (a GSO batch may run past a GRANT).
func (r *iutRPC) receiveTo(p *tester.Peer, got *byteranges.Set, sent, granted int) int {
	GinkgoHelper()
	Expect(p.Send(iut(), ctrlLevel(params()), &wire.GrantFields{Common: r.control(), Offset: uint32(granted)})).To(Succeed())
	for !got.Covers(0, uint32(granted)) {
		d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, wait(20*time.Millisecond))
		ok(err, "the request's bytes up to the GRANT's %d: have %d", granted, got.Total())
		got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
		sent = max(sent, int(d.Pkt.Data().Offset())+d.Pkt.Data().DataLen())
	}
	return sent
}

// restarted has the tester answer the IUT client's next RESEND for r
// with RPC_UNKNOWN (forget) and waits for the restart: every byte of the
// request it had transmitted, [0, sent), again (resentFromZero, each DATA
// within two ticks of the one before), the first DATA at offset 0
// (homa_rpc_unknown_pkt → homa_resend_data from 0), each also passed to
// each (nil: none). It returns the bytes that came again and the arrival
// of the last.
func (r *iutRPC) restarted(p *tester.Peer, sent int, what string, each func(d wire.Data, sent int)) (*byteranges.Set, time.Time) {
	GinkgoHelper()
	forget(p, r.control())
	unknownAt := lastSent(p, wire.TypeRPCUnknown, r.control().SenderID, p.Now())
	first := true
	again, _, last := r.resentFromZero(p, unknownAt, sent, what, wait(2*params().Tick), func(d wire.Data, sent int) {
		GinkgoHelper()
		if first {
			Expect(d.Offset()).To(BeZero(), "the restart's first DATA starts at offset 0")
			first = false
		}
		if each != nil {
			each(d, sent)
		}
	})
	return again, last
}

// resentFromZero waits until every byte of r's request the IUT had
// transmitted before at, [0, sent), has come again after at, each DATA
// within bound of the one before (what says why they come, for the
// message), and returns the bytes that came after at, sent and the
// arrival of the last. DATA sent before at and read only now (a GSO batch
// may run an skb past a GRANT) raises sent; each later DATA below sent
// must be retransmit=1 (homa_resend_data: bytes a sender sends again are
// retransmissions) and is passed to each with the sent of then (nil:
// none), as is any later DATA past it.
func (r *iutRPC) resentFromZero(p *tester.Peer, at time.Time, sent int, what string, bound time.Duration, each func(d wire.Data, sent int)) (*byteranges.Set, int, time.Time) {
	GinkgoHelper()
	again := &byteranges.Set{}
	var last time.Time
	for !again.Covers(0, uint32(sent)) {
		d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, bound)
		ok(err, "%s: the %d bytes transmitted before again, have %d", what, sent, again.Total())
		dd := d.Pkt.Data()
		if d.At.Before(at) {
			sent = max(sent, int(dd.Offset())+dd.DataLen())
			continue
		}
		if int(dd.Offset()) < sent {
			Expect(dd.Retransmit()).To(Equal(uint8(1)), "%s: DATA at offset %d, below the %d bytes transmitted before, with retransmit=0: bytes sent again are retransmissions", what, dd.Offset(), sent)
		}
		if each != nil {
			each(dd, sent)
		}
		again.Add(dd.Offset(), dd.Offset()+uint32(dd.DataLen()))
		last = d.At
	}
	return again, sent, last
}

// respond sends the response (respLen bytes, payload header with the call
// id) from the tester to the IUT client as unscheduled DATA and waits for
// the call to finish. A response longer than the IUT's unsched_bytes
// goes as respondGranted sends it (the IUT's GRANTs let the rest out).
func (r *iutRPC) respond(p *tester.Peer, respLen int, cutoffVersion uint16) CallResult {
	GinkgoHelper()
	if respLen > int(params().UnschedBytes) {
		_, res := r.respondGranted(p, respLen)
		return res
	}
	r.sendResponse(p, respLen, 0, respLen, respLen, unschedLevel(params(), respLen), cutoffVersion, false)
	return r.wait()
}

// sendResponse sends bytes [from, to) of r's response (respLen bytes,
// payload header with the call id) from the tester to the IUT client, in
// segments of maxSegData aligned to the message's (as a sender splits a
// message, and retransmits whole segments: homa_resend_data), each with
// the given incoming, priority, cutoff_version and retransmit flag.
func (r *iutRPC) sendResponse(p *tester.Peer, respLen, from, to, incoming int, prio uint8, cutoffVersion uint16, retransmit bool) {
	GinkgoHelper()
	Expect(r.responseData(p, respLen, from, to, incoming, cutoffVersion, retransmit, func(f wire.Fields) error {
		return p.Send(iut(), prio, f)
	})).To(Succeed())
}

// resendResponse retransmits bytes [from, to) of r's response (respLen
// bytes) as a server answers a RESEND for them: retransmit=1 at the asked
// priority prio, incoming the range's end (homa_resend_data;
// HOMA-RESEND-020).
func (r *iutRPC) resendResponse(p *tester.Peer, respLen, from, to int, prio uint8) {
	GinkgoHelper()
	r.sendResponse(p, respLen, from, to, to, prio, params().CutoffVersion, true)
}

// responseData builds the DATA of bytes [from, to) of r's response as
// sendResponse describes and hands each to send, stopping at its first
// error.
func (r *iutRPC) responseData(p *tester.Peer, respLen, from, to, incoming int, cutoffVersion uint16, retransmit bool, send func(wire.Fields) error) error {
	full := responsePayload(r.callIDOf(p), respLen)
	seg := maxSegData()
	to = min(to, respLen)
	for off := from; off < to; {
		n := min((off/seg+1)*seg, to) - off
		if err := send(wire.NewData(r.control(), uint32(respLen), uint32(incoming),
			cutoffVersion, uint32(off), full[off:off+n], retransmit)); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// wait waits for the IUT's call to complete (on the environment's clock:
// in the simulator the wait steps it).
func (r *iutRPC) wait() CallResult {
	GinkgoHelper()
	var res CallResult
	from := env.Clock.Now()
	done := func(by time.Time) (bool, error) {
		return env.Clock.Wait(ctx(), by, func() bool { return r.poll(&res) })
	}
	got, err := done(deadline(window(time.Duration(params().TimeoutTicks+10) * params().Tick)))
	ok(err, "waiting for the IUT's call")
	if !got {
		// Unless this machine kept the IUT from running for a quarter
		// of the wait and the call completed late, within the wait
		// plus what the stalls lost (lateWithinStalls): then the spec
		// is timing-inconclusive. A call that never completes fails.
		msg := "the IUT's call did not complete"
		if now := env.Clock.Now(); lateWithinStalls(from, now, done) && stalledLongest(msg, from, now, now.Sub(from)/4) {
			panic(stalledOut{})
		}
		Fail(msg)
	}
	r.took(res)
	return res
}

// took records that the spec has the call's result res: the call ended,
// and when it ended by a timeout (for rpcGaveUpDuringStall).
func (r *iutRPC) took(res CallResult) {
	r.ended = true
	if (agent.Completion{Error: res.Err}).Code() == agent.CodeTimeout {
		if cur.timedOut == nil {
			cur.timedOut = map[uint64]time.Time{}
		}
		cur.timedOut[r.id&^1] = r.first.At.Add(res.Latency)
	}
}

// callOK fails the spec with "what: error" when r's call (its result
// res) failed, unless it timed out after the tester, held up by this
// machine, had left r itself silent for timeout_ticks
// (rpcGaveUpDuringStall, r's own silences only: the IUT may end such an
// RPC): then the spec is timing-inconclusive. Another RPC's silence, one
// the spec kept on purpose, excused it before.
func (r *iutRPC) callOK(res CallResult, what string) {
	GinkgoHelper()
	if res.Err == "" {
		return
	}
	msg := what + ": " + res.Err
	if rpcGaveUpDuringStall(msg, []uint64{r.id &^ 1}, false) {
		panic(stalledOut{})
	}
	Fail(msg)
}

// poll takes the call's result into res if it has come.
func (r *iutRPC) poll(res *CallResult) bool {
	select {
	case *res = <-r.done:
		return true
	default:
		return false
	}
}

// respondGranted sends the response (respLen bytes, payload header with
// the call id) from the tester to the IUT client as a HomaModule server
// sends a message longer than unsched_bytes: the unscheduled bytes, then
// what the client's GRANTs allow at the latest GRANT's priority
// (homa_grant_pkt), all with incoming U (HOMA-WIRE-007), retransmitting
// (retransmit=1, at the asked priority, incoming the asked range's end
// within the bytes sent: HOMA-RESEND-020) what its RESENDs ask for
// (homa_resend_pkt), until the whole response is out. It returns the
// GRANTs in arrival order and the call's result.
func (r *iutRPC) respondGranted(p *tester.Peer, respLen int) ([]*tester.Packet, CallResult) {
	GinkgoHelper()
	pr := params()
	u := unsched(respLen)
	seg := maxSegData()
	send := func(from, to, incoming int, prio uint8, retransmit bool) {
		r.sendResponse(p, respLen, from, to, incoming, prio, pr.CutoffVersion, retransmit)
	}
	send(0, u, u, unschedLevel(pr, respLen), false)
	sent := u
	var grants []*tester.Packet
	// Only a GRANT that lets the response on renews the bound: an IUT
	// repeating a stuck GRANT (or RESENDing what it was just sent) fails
	// here, not at the spec's node timeout.
	bound := wait(pr.ResponseTimeout + pr.Tick)
	end, moved := deadline(bound), 0 // moved: len(grants) at the last progress
	for sent < respLen {
		g, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: r.id}, end.Sub(env.Clock.Now()))
		ok(err, "a GRANT for response bytes beyond %d of %d (%d GRANTs in %v, none past it)", sent, respLen, len(grants)-moved, bound)
		grants = append(grants, g)
		if to := grantedEnd(int(g.Pkt.Grant().Offset()), respLen); to > sent {
			send(sent, to, u, g.Pkt.Grant().Priority(), false)
			sent = to
			end, moved = deadline(bound), len(grants)
		}
		for {
			rs, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id}, 0)
			if rs == nil {
				break
			}
			off, end := int(rs.Pkt.Resend().Offset()), sent
			if n := int(rs.Pkt.Resend().Length()); n >= 0 && !rs.Pkt.Resend().IsResendAll() {
				end = min(off+n, sent)
			}
			if off < end {
				// Whole segments, as homa_resend_data resends the packets
				// the range overlaps.
				send(off-off%seg, min(((end-1)/seg+1)*seg, sent), end, rs.Pkt.Resend().Priority(), true)
			}
		}
	}
	return grants, r.wait()
}

// gapResponse picks the response of a spec whose IUT client loses one
// segment of it, segment lose of lostSegment, before the call (an
// unsupported spec then leaves no RPC): want bytes, all unscheduled,
// without that segment, or, where want holds no segment after the first,
// three segments past unsched_bytes without the first whole scheduled
// segment (lostScheduled), but for a lost first segment, which needs a
// later unscheduled one: then all of U. It returns the response's length
// and the lost range.
func gapResponse(want, lose int) (respLen, from, to int) {
	GinkgoHelper()
	seg := maxSegData()
	switch {
	case want <= seg && lose == 0:
		want = unsched(1 << 30)
	case want <= seg:
		from, to = lostScheduled()
		return pastU(3 * seg), from, to
	}
	_, from, to = lostSegment(want, lose)
	return want, from, to
}

// sendResponseBut sends r's response of respLen bytes (gapResponse) but
// the lost range [from, to): the unscheduled bytes at once, the rest as
// the client's GRANTs allow, as respondGranted sends them (incoming U
// past unsched_bytes).
func (r *iutRPC) sendResponseBut(p *tester.Peer, respLen, from, to int) {
	GinkgoHelper()
	pr := params()
	u := unsched(respLen) // also every packet's incoming (HOMA-WIRE-007)
	sendBut(0, u, from, to, func(a, b int) {
		r.sendResponse(p, respLen, a, b, u, unschedLevel(pr, respLen), pr.CutoffVersion, false)
	})
	sendGrantedBut(p, r.id, u, respLen, from, to, func(a, b int, prio uint8) {
		r.sendResponse(p, respLen, a, b, u, prio, pr.CutoffVersion, false)
	})
}

// responsePayload is a response body of n bytes for call id (payload
// header: own length uint32 LE, call id uint64 LE, then the pattern).
func responsePayload(id uint64, n int) []byte {
	b := make([]byte, n)
	agent.FillPayload(b, id, uint32(n))
	return b
}

// serveFully has the tester complete r: receive it all, respond, and check
// the call succeeded.
func (r *iutRPC) serveFully(p *tester.Peer, respLen int) {
	GinkgoHelper()
	r.receiveRequest(p)
	res := r.respond(p, respLen, params().CutoffVersion)
	r.callOK(res, "the IUT's call failed")
	Expect(res.Response).To(Equal(respLen))
}

// completeRequest has a tester client finish request m after its
// unscheduled bytes: it sends what the GRANTs allow until the message is
// complete, answers the IUT's NEED_ACK once the response has come, and
// returns the GRANTs it got and the response's first DATA.
func (m msgSpec) completeRequest(p *tester.Peer, sentTo int) ([]*tester.Packet, *tester.Packet) {
	GinkgoHelper()
	grants := m.sendGranted(p, sentTo)
	resp, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id},
		wait(20*time.Millisecond))
	ok(err, "the response to request %d", m.id)
	m.ack(p)
	return grants, resp
}

// sendGranted sends the rest of request m, of which the tester sent the
// first sentTo bytes, as the IUT's GRANTs allow, until the whole message
// is sent, and returns the GRANTs in arrival order.
func (m msgSpec) sendGranted(p *tester.Peer, sentTo int) []*tester.Packet {
	GinkgoHelper()
	grants, _ := m.sendGrantedTo(p, sentTo, m.msgLen)
	return grants
}

// sendGrantedTo is sendGranted stopping once at least the first limit
// bytes are sent (more when a GRANT's horizon passes limit: a sender
// sends all it is granted). It returns the GRANTs in arrival order and
// the bytes sent.
func (m msgSpec) sendGrantedTo(p *tester.Peer, sentTo, limit int) ([]*tester.Packet, int) {
	GinkgoHelper()
	var grants []*tester.Packet
	// Only a GRANT that lets the message on renews the bound, so an IUT
	// repeating a stuck GRANT fails here, not at the spec's node timeout.
	bound := wait(2 * params().Tick)
	end, moved := deadline(bound), 0 // moved: len(grants) at the last progress
	for sentTo < min(limit, m.msgLen) {
		g, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id},
			end.Sub(env.Clock.Now()))
		ok(err, "a GRANT for bytes beyond %d of %d (%d GRANTs in %v, none past it)", sentTo, m.msgLen, len(grants)-moved, bound)
		gs := append([]*tester.Packet{g}, m.takeGrants(p)...)
		grants = append(grants, gs...)
		if to := m.applyGrants(p, sentTo, gs); to > sentTo {
			sentTo = to
			end, moved = deadline(bound), len(grants)
		}
	}
	return grants, sentTo
}

// takeGrants consumes the GRANTs for m that have arrived and returns them
// in arrival order.
func (m msgSpec) takeGrants(p *tester.Peer) []*tester.Packet {
	var gs []*tester.Packet
	for {
		g, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}, 0)
		if g == nil {
			return gs
		}
		gs = append(gs, g)
	}
}

// applyGrants processes GRANTs gs (in arrival order) for m, of which the
// tester has sent the first sent bytes, as a HomaModule sender does: the
// horizon is the largest offset, the priority of scheduled DATA the
// latest GRANT's, even an older one that came late (homa_grant_pkt;
// HOMA-GRANT-008). It sends the bytes up to the horizon and returns it.
func (m msgSpec) applyGrants(p *tester.Peer, sent int, gs []*tester.Packet) int {
	GinkgoHelper()
	if len(gs) == 0 {
		return sent
	}
	horizon := sent
	for _, g := range gs {
		horizon = max(horizon, min(int(g.Pkt.Grant().Offset()), m.msgLen))
	}
	if horizon > sent {
		horizon = grantedEnd(horizon, m.msgLen)
		m.sendData(p, sent, horizon, gs[len(gs)-1].Pkt.Grant().Priority())
	}
	return horizon
}

// grantedEnd is where a sender granted up to offset granted of a
// msgLen-byte message stops: the end of the packet holding byte
// granted-1. HomaModule builds a message's packets before any GRANT and
// homa_xmit_data sends each whole once its offset is below granted
// (HOMA-GRANT-005 allows the overshoot). A tester that stopped at the
// GRANT's offset cut packets short, and a receiver granting
// received+window per packet answered each with a GRANT as short: against
// HomaModule in the lab, RESPONSE-max-length's DATA shrank to 16 bytes
// and the spec ran for over 20 minutes.
func grantedEnd(granted, msgLen int) int {
	seg := maxSegData()
	return min((granted+seg-1)/seg*seg, msgLen)
}

// ack answers the IUT's NEED_ACK for m, whose whole response the tester
// has, with an ACK, as a HomaModule client does (homa_need_ack_pkt; facts
// ACK-02): a client sends no ACK unasked (HOMA-ACK-007), so it waits for
// the NEED_ACK (request_ack_ticks after the response) unless one is
// still unanswered. The ACK makes the IUT free the RPC (a server never
// times out an RPC waiting for its ACK). An IUT that does not declare
// need-ack gets the ACK at once, as a deliberate packet.
func (m msgSpec) ack(p *tester.Peer) {
	GinkgoHelper()
	pr := params()
	a := m.ackFields()
	m.receiveResponse(p)
	if !env.IUT.Info().Has("need-ack") {
		Expect(p.SendDeliberate(iut(), ctrlLevel(pr), a, "ACK with no NEED_ACK (the IUT does not send NEED_ACK)")).To(Succeed())
		return
	}
	if asked, answered := needAcks(p, m.id); asked <= answered {
		_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id},
			wait(pr.Ticks(pr.RequestAckTicks+2)))
		ok(err, "the IUT's NEED_ACK for RPC %d, which the tester answers with the ACK that frees it", m.id)
	}
	Expect(p.Send(iut(), ctrlLevel(pr), a)).To(Succeed())
}

// receiveResponse has the tester, as m's client, receive the rest of
// the IUT's response once its first DATA has come: a response longer
// than the IUT's unsched_bytes sends its scheduled bytes only when
// granted, and the server sends NEED_ACK only after its last byte
// (homa_timer_check_rpc: a server RPC waits for the ACK once its
// response is transmitted). So the tester grants it as a HomaModule
// receiver of one message does (receiveGranted). The response's bytes
// are taken from the tester's log (a spec may already have taken some of
// its DATA with Expect), and the horizon from them and the GRANTs the
// spec sent; a whole response draws no GRANT.
func (m msgSpec) receiveResponse(p *tester.Peer) {
	GinkgoHelper()
	var got byteranges.Set
	length, granted := -1, 0
	var last time.Time
	for _, x := range p.Log() {
		if x.Sent && x.Err == nil && x.Pkt.Type() == wire.TypeGrant && x.Pkt.SenderID() == m.id {
			granted = max(granted, int(x.Pkt.Grant().Offset()))
		}
		if x.Sent || x.Err != nil || x.Src != iut() || x.Pkt.Type() != wire.TypeData || x.Pkt.SenderID() != m.id^1 {
			continue
		}
		d := x.Pkt.Data()
		got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
		length, granted, last = int(d.MessageLength()), max(granted, int(d.Incoming())), x.At
	}
	if length < 0 || got.Covers(0, uint32(length)) {
		return
	}
	receiveGranted(p, m.control(), m.id, length, &got, granted, last, "response")
}

// finish ends m at the IUT's server if the spec left it there. Answered
// but unacknowledged (the tester that sent the request got response DATA
// and sent no ACK): that tester sends the ACK, which frees the RPC;
// otherwise the server keeps sending NEED_ACK for it, once a tick, into
// the specs after (RESEND-busy-held's witness did, 1000-1460 times, when
// the spec went unsupported after starting it). Sent but not answered (a
// request still being granted, or held by the server): the tester sends
// RPC_UNKNOWN, as a client that forgot the RPC answers, and the server
// ends it in any state (HomaModule homa_rpc_unknown_pkt). Before, such a
// request stayed among the messages the IUT granted until its own
// timeout, so the next spec's exchange showed GRANTs ranked among more
// messages than it sent (GRANT-fifo-oldest failed on HOMA-GRANT-015 after
// GRANT-srpt-remaining had failed under a fault). An ACK would say the
// client had its response, so the server its whole request (the check of
// the run's capture then took the request's lost segment for the
// capture's drop). Nothing is sent for an RPC the tester already gave up
// or the IUT answered with RPC_UNKNOWN. Best effort, after the spec's
// verdict: it asserts nothing.
func (m msgSpec) finish() {
	for _, p := range cur.peers {
		sent, answered, acked, unknown := false, false, false, false
		for _, x := range p.Log() {
			if x.Err != nil {
				continue
			}
			switch id, t := x.Pkt.SenderID(), x.Pkt.Type(); {
			case x.Sent && id == m.id && t == wire.TypeData:
				sent = true
			case x.Sent && id == m.id && t == wire.TypeAck:
				acked = true
			case x.Sent && id == m.id && t == wire.TypeRPCUnknown,
				!x.Sent && id == m.id^1 && x.Src == iut() && t == wire.TypeRPCUnknown:
				unknown = true
			case !x.Sent && id == m.id^1 && x.Src == iut() && t == wire.TypeData:
				answered = true
			}
		}
		switch {
		case !sent || acked || unknown:
		case answered:
			p.SendDeliberate(iut(), ctrlLevel(params()), m.ackFields(), "ACK that ends an RPC the spec left at the IUT's server (cleanup after the spec)")
		default:
			p.SendDeliberate(iut(), ctrlLevel(params()), &wire.RPCUnknownFields{Common: m.control()}, "RPC_UNKNOWN that ends a request the spec left at the IUT's server unanswered (cleanup after the spec)")
		}
	}
}

// answerNeedAck answers a NEED_ACK from the IUT for m's RPC that p
// holds, if any, with the ACK, without waiting for one, and reports
// whether it did.
func (m msgSpec) answerNeedAck(p *tester.Peer) bool {
	GinkgoHelper()
	if r, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id}, 0); r == nil {
		return false
	}
	Expect(p.Send(iut(), ctrlLevel(params()), m.ackFields())).To(Succeed())
	return true
}

// ackFields is the ACK of m's RPC, from its client.
func (m msgSpec) ackFields() *wire.AckFields {
	return &wire.AckFields{Common: m.control()}
}

// needAcks counts the NEED_ACKs peer p got from the IUT for client RPC id
// and the ACKs it sent for it.
func needAcks(p *tester.Peer, id uint64) (asked, answered int) {
	for _, x := range p.Log() {
		if x.Err != nil || x.Pkt.SenderID()&^1 != id {
			continue
		}
		switch {
		case !x.Sent && x.Src == iut() && x.Pkt.Type() == wire.TypeNeedAck:
			asked++
		case x.Sent && x.Pkt.Type() == wire.TypeAck:
			answered++
		}
	}
	return asked, answered
}

// driveRequests plays a correct sender for every message at once after
// their first sent[i] bytes: it sends what the GRANTs allow until every
// response has arrived, and answers each NEED_ACK with its ACK as it
// comes, as a HomaModule client does (homa_need_ack_pkt); one still
// unasked when the last response arrived is awaited then (msgSpec.ack).
// It returns the message indexes in the order their last GRANT (offset
// = message length) arrived, and fails the spec when the exchange stops
// moving (driveRequestsOr).
func driveRequests(peers []*tester.Peer, msgs []msgSpec, sent []int) []int {
	GinkgoHelper()
	order, stuck, d := driveRequestsOr(peers, msgs, sent)
	if stuck != "" {
		d.failStuck(stuck)
	}
	return order
}

// failStuck fails the spec with stuck, why d's exchange stopped moving,
// unless a measured stall explains it (then the spec is timing-
// inconclusive): the IUT ended one of d's RPCs after a tester, held up,
// had left it silent for timeout_ticks (rpcGaveUpDuringStall: the
// timeout is the protocol's), or this machine kept the IUT (or the
// tester) from running for a quarter of the bound in which nothing
// moved and the exchange, driven on, moved within the bound plus what
// the stalls lost (lateWithinStalls): late, not stuck. An exchange that
// never moves again fails however loaded the machine.
func (d *requestDriver) failStuck(stuck string) {
	GinkgoHelper()
	ids := make([]uint64, len(d.msgs))
	for i, m := range d.msgs {
		ids[i] = m.id &^ 1
	}
	now, bound := env.Clock.Now(), wait(stuckBound)
	if rpcGaveUpDuringStall(stuck, ids, true) || lateWithinStalls(now.Add(-bound), now, d.movedBy) && stalledLongest(stuck, now.Add(-bound), now, bound/4) {
		panic(stalledOut{})
	}
	Fail(stuck)
}

// stuckBound is how long driveRequestsOr waits for the exchange to move
// on (before wait's allowance) before it calls it stuck.
const stuckBound = 200 * time.Millisecond

// driveRequestsOr is driveRequests returning, instead of failing, why the
// exchange stopped moving ("" when every response came), and the driver,
// which can drive it on (requestDriver.movedBy) and judge it (failStuck).
func driveRequestsOr(peers []*tester.Peer, msgs []msgSpec, sent []int) ([]int, string, *requestDriver) {
	GinkgoHelper()
	d := &requestDriver{peers: peers, msgs: msgs, sent: sent, left: len(msgs),
		done: make([]bool, len(msgs)), acked: make([]bool, len(msgs)), fullyGranted: make([]bool, len(msgs))}
	// The IUT must keep the exchange moving, not finish it by a wall-clock
	// total: a loaded machine slows every step, and losses it causes cost
	// RESEND rounds. Each GRANT that lets a message on, or a response,
	// renews the bound; none within it (no GRANT, no RESEND answered
	// into progress) fails.
	bound := wait(stuckBound)
	end := deadline(bound)
	for d.left > 0 {
		seen := tester.Arrivals(peers...) // before looking: a packet arriving meanwhile ends the wait below
		// Judged after the GRANTs that came are taken, not before: a
		// tester held up past the bound (its own sends and waits) finds
		// the IUT's progress waiting for it.
		stuck := !env.Clock.Now().Before(end)
		if d.step() {
			end = deadline(bound)
		}
		if d.left == 0 {
			break
		}
		if stuck && !env.Clock.Now().Before(end) {
			return d.order, fmt.Sprintf("%d of %d messages still without a response, none moved on for %v: bytes sent %v, responded %v", d.left, len(msgs), bound, sent, d.done), d
		}
		ok(tester.WaitArrival(ctx(), end.Sub(env.Clock.Now()), seen, peers...), "driving the requests")
	}
	// The IUT asks for the ACKs request_ack_ticks after the responses:
	// those not asked yet are awaited once all have come, so that no
	// message waits on them.
	for i, m := range msgs {
		if !d.acked[i] {
			m.ack(peers[i%len(peers)])
		}
	}
	return d.order, "", d
}

// requestDriver is driveRequestsOr's state: the messages, message i sent
// by peers[i%len(peers)], of which the tester sent the first sent[i]
// bytes; which have their response (done; left have not), their
// NEED_ACK answered (acked), their last GRANT (fullyGranted, in order).
type requestDriver struct {
	peers []*tester.Peer
	msgs  []msgSpec
	sent  []int
	done  []bool
	// acked: the RPC's NEED_ACK was answered in the loop. Answering at
	// once rather than after the last response keeps the IUT's NEED_ACK
	// timer (HOMA-ACK-008, not this driver's subject) from repeating for
	// every early RPC through the whole exchange, which on a loaded
	// machine gave a stall-excused NEED_ACK finding in most runs.
	acked        []bool
	fullyGranted []bool
	order        []int
	left         int
}

// step takes what has arrived: it sends what the GRANTs allow, answers
// RESENDs (the IUT lost patience while this driver was descheduled) and
// the NEED_ACKs of answered messages, and notes responses. It reports
// whether the exchange moved on: a GRANT let a message on, or a response
// came.
func (d *requestDriver) step() bool {
	GinkgoHelper()
	moved := false
	for i, m := range d.msgs {
		if d.done[i] {
			continue
		}
		p := d.peers[i%len(d.peers)]
		if gs := m.takeGrants(p); len(gs) > 0 {
			if to := m.applyGrants(p, d.sent[i], gs); to > d.sent[i] {
				d.sent[i] = to
				moved = true
			}
			if d.sent[i] == m.msgLen && !d.fullyGranted[i] {
				d.fullyGranted[i] = true
				d.order = append(d.order, i)
			}
		}
		m.answerResends(p, d.sent[i])
		if len(p.Received(tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id})) > 0 {
			d.done[i] = true
			d.left--
			moved = true
		}
	}
	for i, m := range d.msgs {
		if d.done[i] && !d.acked[i] && env.IUT.Info().Has("need-ack") {
			d.acked[i] = m.answerNeedAck(d.peers[i%len(d.peers)])
		}
	}
	return moved
}

// movedBy drives the exchange on until by at most (step) and reports
// whether it moved: for a stuck exchange, whether it was late
// (lateWithinStalls). It returns ctx's error if ctx ends first.
func (d *requestDriver) movedBy(by time.Time) (bool, error) {
	GinkgoHelper()
	for {
		seen := tester.Arrivals(d.peers...)
		if d.step() {
			return true, nil
		}
		if d.left == 0 || !env.Clock.Now().Before(by) {
			return false, nil
		}
		if err := tester.WaitArrival(ctx(), by.Sub(env.Clock.Now()), seen, d.peers...); err != nil {
			return false, err
		}
	}
}

// answerResends retransmits what the IUT's RESENDs for m that have
// arrived ask for, of the first sent bytes, at the asked priority, as a
// sender must (homa_resend_pkt).
func (m msgSpec) answerResends(p *tester.Peer, sent int) {
	GinkgoHelper()
	// Bytes this call retransmitted: RESENDs that piled up while the
	// tester was held up ask for the same bytes, and answering each in
	// full fed a storm (an IUT behind on its socket asks again for what
	// waits there: 354k retransmissions in 320 s at tick_ns 200000 beside
	// two CPU hogs, helper-161). Once per call is what a receiver that
	// lost them needs; it asks again a resend_interval later.
	var done byteranges.Set
	for {
		r, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id}, 0)
		if r == nil {
			return
		}
		off, n := int(r.Pkt.Resend().Offset()), int(r.Pkt.Resend().Length())
		end := min(off+n, sent)
		if n < 0 || r.Pkt.Resend().IsResendAll() {
			end = sent
		}
		if off < end && !done.Covers(uint32(off), uint32(end)) {
			m.resendData(p, off, end, r.Pkt.Resend().Priority())
			done.Add(uint32(off), uint32(end))
		}
	}
}

// answerBusy answers each RESEND for m that has arrived with BUSY, as a
// client that has not transmitted the bytes asked for does
// (homa_resend_pkt: the offset at or past tx_end).
func (m msgSpec) answerBusy(p *tester.Peer) {
	GinkgoHelper()
	for {
		r, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id}, 0)
		if r == nil {
			return
		}
		Expect(p.Send(iut(), ctrlLevel(params()), &wire.BusyFields{Common: m.control()})).To(Succeed())
	}
}

// awaitKeepingBusy waits at p for a packet matching match, answering
// every RESEND for the messages of busy (the tester's requests it holds
// back) with BUSY meanwhile, so that none of them times out at the IUT
// and frees a grant slot while the spec waits. The window is w, extended
// as ok extends an expectation a measured stall held up
// (lateWithinStalls: by the most one process lost in that time, at most
// stallCreditMost windows). It returns once the packet came (timing-
// inconclusive if the tester may have let one of busy's RPCs time out:
// endedDuringStall), or when stalls lost more than that, which records
// msg as timing-inconclusive; a packet still missing after its window
// and every stall's credit fails the spec with msg.
func awaitKeepingBusy(p *tester.Peer, busy []msgSpec, match tester.Match, w time.Duration, msg string) {
	GinkgoHelper()
	start := env.Clock.Now()
	end := start.Add(w)
	for {
		seen := tester.Arrivals(p)
		for _, m := range busy {
			m.answerBusy(p)
		}
		if got := p.Received(match); len(got) > 0 {
			endedDuringStall(p, busy, got[0].At, msg)
			return
		}
		if now := env.Clock.Now(); !now.Before(end) {
			lost := time.Duration(0)
			if env.Stalls != nil {
				env.Stalls.Settle(ctx(), time.Now())
				lost = stall.MostLostByOne(stall.Within(env.Stalls.Spans(), start.Add(-w), now))
			}
			if lost > stallCreditMost*w {
				if stalledLongest(msg, start.Add(-w), now, w/4) {
					return
				}
			} else if next := start.Add(w + lost); next.After(end) {
				end = next
				continue
			}
			Fail(fmt.Sprintf("%s: none within %v (and %v the measured stalls lost)", msg, w, lost))
		}
		ok(tester.WaitArrival(ctx(), end.Sub(env.Clock.Now()), seen, p), "waiting for %s", msg)
	}
}

// endedDuringStall records msg as timing-inconclusive when the tester,
// held up by a measured stall (for at least half the silence), sent one
// of busy's messages no DATA or BUSY for timeout_ticks (less two ticks)
// before at: the IUT may have ended that RPC by its timer
// (homa_timer_check_rpc) and freed the slot that let what came at at
// come. Under load ~70 a receiver ranking by length granted the message
// it had left out, 3 s after a stall of the harness.
func endedDuringStall(p *tester.Peer, busy []msgSpec, at time.Time, msg string) {
	GinkgoHelper()
	if env.Stalls == nil {
		return
	}
	pr := params()
	quiet := pr.Ticks(max(1, pr.TimeoutTicks-2))
	for _, m := range busy {
		from := lastSent(p, wire.TypeData, m.id, at)
		if b := lastSent(p, wire.TypeBusy, m.id, at); b.After(from) {
			from = b
		}
		if gap := at.Sub(from); !from.IsZero() && gap >= quiet &&
			stalledAtLeast(fmt.Sprintf("%s; the tester had sent RPC %d no DATA or BUSY for %v before (timeout_ticks %d of %v): the IUT may have ended it and freed its slot", msg, m.id, gap.Round(time.Millisecond), pr.TimeoutTicks, pr.Tick), from, at, gap/2) {
			return
		}
	}
}

// lastSent returns when the tester last sent a packet of type typ with
// sender_id id before time before, as its log stamped it (before the
// send); zero when it sent none.
func lastSent(p *tester.Peer, typ wire.PacketType, id uint64, before time.Time) time.Time {
	var t time.Time
	for _, x := range p.Log() {
		if x.Sent && x.Err == nil && x.Pkt.Type() == typ && x.Pkt.SenderID() == id && x.At.Before(before) {
			t = x.At
		}
	}
	return t
}

// silentRounds expects from the IUT the RESEND rounds for RPC id (each a
// RESEND passing checks) that a silent peer draws before the RPC times
// out: one when silent_ticks reaches resend_ticks and one every
// resend_interval ticks after it, up to timeout_ticks, when the timer
// aborts the RPC (homa_timer_check_rpc; facts RTX-02, RTX-10). Rounds are
// counted, not timed: a late timer delays them all and drops none, and
// each gets wait's generous bound. Two ticks of tolerance on the timeout
// (RTX-10's ±2): an RPC may end at silent tick timeout_ticks-2, and the
// pass that ends it sends nothing, so the rounds due at silent ticks up to
// timeout_ticks-3, none when resend_ticks is above that (helper-168: a
// server aborting two ticks early failed for its round at
// timeout_ticks-2). The peer's silence began at t0 (for the failure
// message).
func silentRounds(p *tester.Peer, id uint64, t0 time.Time, checks ...tester.Check) {
	GinkgoHelper()
	pr := params()
	rounds := 0
	if pr.TimeoutTicks-3 >= pr.ResendTicks {
		rounds = (pr.TimeoutTicks-3-pr.ResendTicks)/max(1, pr.ResendInterval) + 1
	}
	last := "none had come"
	for i := 1; i <= rounds; i++ {
		// The first round comes resend_ticks after the silence began,
		// the others resend_interval apart; two ticks more each.
		gap := pr.ResendInterval
		if i == 1 {
			gap = pr.ResendTicks
		}
		r, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: id, Checks: checks},
			wait(pr.Ticks(gap+2)))
		ok(err, "RESEND round %d of the %d due by silent tick timeout_ticks-3 (timeout_ticks %d less RTX-10's two ticks and the aborting pass; resend_ticks %d, resend_interval %d) while the peer is silent; %s",
			i, rounds, pr.TimeoutTicks, pr.ResendTicks, pr.ResendInterval, last)
		last = fmt.Sprintf("the last came %v after the peer's silence began", r.At.Sub(t0).Round(time.Microsecond))
		if env.Virtual {
			onSchedule(i, r.At.Sub(t0), t0, r.At)
		}
	}
}

// onSchedule fails the spec when RESEND round i of a silence came at
// other than its silent tick: resend_ticks, then resend_interval more for
// each round (homa_timer_check_rpc; facts RTX-02), the first pass of the
// IUT's timer within a tick of the silence's start, so round i within
// (due-1, due] ticks of it; a tick more for the pass that lands on the
// boundary. Judged in virtual time only, where ticks are exact (in real
// time the checker's HOMA-RESEND-014 judges lateness with its tolerances,
// which hide a schedule shifted by a tick or two once resend_ticks is
// above 2). A stall excuses a round only as far as it could have moved
// it: one late by l needs stalls between from and to that lost l between
// them (the IUT frozen past its tick, a tester recording the round late);
// a stall never brings a timer pass sooner, so one early by e needs a
// stall of the testers reaching from that lost e (the tester stamped the
// silence's start late). Any overlapping stall excused either before,
// early-resend's rounds under a tick into the silence among them.
func onSchedule(i int, after time.Duration, from, to time.Time) {
	GinkgoHelper()
	pr := params()
	due := pr.ResendTicks + (i-1)*max(1, pr.ResendInterval)
	lo, hi := pr.Ticks(due-1), pr.Ticks(due+1)
	if after >= lo && after <= hi {
		return
	}
	msg := fmt.Sprintf("RESEND round %d came %v after the peer's silence began; resend_ticks %d and resend_interval %d put it at silent tick %d (tick %v)",
		i, after, pr.ResendTicks, pr.ResendInterval, due, pr.Tick)
	var keep func(stall.Span) bool
	wFrom, wTo, lost, testers := offSchedule(after, lo, hi, from, to)
	if testers {
		keep = ofTesters
	}
	if stalledAtLeastOf(msg, wFrom, wTo, lost, keep) {
		panic(stalledOut{})
	}
	Fail(msg)
}

// offSchedule says which stalls could have moved a RESEND round that
// came after after the silence's start (from; the round at to) out of
// its ticks [lo, hi]: those overlapping [wFrom, wTo] whose losses sum to
// lost at least, the testers' alone if testers (onSchedule).
func offSchedule(after, lo, hi time.Duration, from, to time.Time) (wFrom, wTo time.Time, lost time.Duration, testers bool) {
	if early := lo - after; early > 0 {
		return from.Add(-early), from, early, true
	}
	return from, to, after - hi, false
}

// roundsAtMost fails the spec if the IUT sent RPC id more RESENDs (those
// checks select: one a round) than its timer makes in one silence: the
// pass whose count reaches timeout_ticks aborts the RPC and sends
// nothing (homa_timer_check_rpc tests the timeout before the resend;
// facts RTX-10), so rounds come at silent ticks resend_ticks,
// resend_ticks+resend_interval, ... below timeout_ticks. Counted, not
// timed: a starved timer makes fewer passes, never more.
func roundsAtMost(p *tester.Peer, id uint64, checks ...tester.Check) {
	GinkgoHelper()
	pr := params()
	most := 0
	if pr.TimeoutTicks-1 >= pr.ResendTicks {
		most = (pr.TimeoutTicks-1-pr.ResendTicks)/max(1, pr.ResendInterval) + 1
	}
	got := p.ReceivedAll(tester.Match{Type: wire.TypeResend, From: iut(), RPC: id, Checks: checks})
	Expect(len(got)).To(BeNumerically("<=", most),
		"RESEND rounds in one silence: at most %d (at silent ticks %d, %d, ... below timeout_ticks %d; the pass that reaches timeout_ticks aborts and sends nothing); the last %s",
		most, pr.ResendTicks, pr.ResendTicks+pr.ResendInterval, pr.TimeoutTicks, lastOf(got))
}

// lastOf names the last of packets, or says there were none.
func lastOf(packets []*tester.Packet) string {
	if len(packets) == 0 {
		return "(none)"
	}
	return packets[len(packets)-1].String()
}

// giveUp has p drop request m as a client that forgot it answers (an
// RPC_UNKNOWN, deliberate: unprompted), so that the IUT's server ends the
// RPC (homa_rpc_unknown_pkt) and the spec's exchange ends there; why says
// why, in the capture's mark.
func (m msgSpec) giveUp(p *tester.Peer, why string) {
	GinkgoHelper()
	Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.RPCUnknownFields{Common: m.control()},
		"RPC_UNKNOWN for a request the tester gives up ("+why+")")).To(Succeed())
}

// errEarly marks a packet a Check excludes because it came too early.
var errEarly = errors.New("too early")

// barrier makes sure the IUT has processed every packet p sent before it at
// priority prio or above (prio: the lowest level of those packets): it
// sends a RESEND for an RPC that never existed at prio (so it queues
// behind them) and waits for the RPC_UNKNOWN answer, which it returns. Control packets the IUT sent at level 7 while
// processing those packets arrived before it.
func barrier(p *tester.Peer, prio uint8) *tester.Packet {
	GinkgoHelper()
	id := env.NewRPCID()
	Expect(p.SendDeliberate(iut(), prio, &wire.ResendFields{Common: wire.CommonFields{Sport: 39999, Dport: ServerPort, SenderID: id},
		Offset: 0, Length: 1, Priority: ctrlLevel(params())}, "RESEND for an RPC that never existed (a barrier)")).To(Succeed())
	u, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: id}, wait(2*params().Tick))
	ok(err, "the IUT's RPC_UNKNOWN for a barrier RESEND (HOMA-RESEND-006)")
	return u
}

// forget has the tester drop an RPC it shares with the IUT, as a host that
// lost the RPC's state would show it: it answers the IUT's RESEND for the
// RPC (one that came already, else the next: the IUT sends one after
// resend_ticks of silence while it waits on the tester, facts RTX-01,
// RTX-02; the wait allows a round missed) with RPC_UNKNOWN, which answers
// only a RESEND (HomaModule homa_resend_pkt; HOMA-RESEND-018). c is the
// header of the tester's packets for the RPC.
func forget(p *tester.Peer, c wire.CommonFields) {
	GinkgoHelper()
	pr := params()
	_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: c.SenderID},
		wait(pr.Ticks(pr.ResendTicks+pr.ResendInterval+1)))
	ok(err, "a RESEND from the IUT for RPC %d, which the tester answers with RPC_UNKNOWN", c.SenderID&^1)
	Expect(p.Send(iut(), ctrlLevel(pr), &wire.RPCUnknownFields{Common: c})).To(Succeed())
}
