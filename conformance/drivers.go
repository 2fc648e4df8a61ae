package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	callID uint64 // the agent's call id (request payload bytes 4-11)
}

// iutCall makes the IUT call peer p at testerPort with a request of reqLen
// bytes asking for respLen, and waits for the request's first DATA.
func iutCall(p *tester.Peer, reqLen, respLen int) *iutRPC {
	GinkgoHelper()
	done, err := env.IUT.Call(ctx(), netip.AddrPortFrom(p.Addr(), testerPort), reqLen, respLen)
	ok(err, "asking the IUT to call %s:%d", p.Addr(), testerPort)
	d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(),
		Checks: []tester.Check{msgLenIs(reqLen), toPort(testerPort)}}, wait(10*time.Millisecond))
	ok(err, "the IUT's request DATA")
	r := &iutRPC{done: done, first: d, id: d.Pkt.SenderID(), cport: d.Pkt.Common().Sport(), msgLen: reqLen}
	if pl := d.Pkt.Data().Payload(); d.Pkt.Data().Offset() == 0 && len(pl) >= 12 {
		r.callID = binary.LittleEndian.Uint64(pl[4:])
	}
	return r
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

// receiveRequest grants the whole request (if it needs grants) and waits
// until every byte of it has arrived, returning the arrival of the last.
func (r *iutRPC) receiveRequest(p *tester.Peer) time.Time {
	GinkgoHelper()
	var got byteranges.Set
	last := r.first.At
	d := r.first.Pkt.Data()
	got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
	if r.msgLen > unsched(r.msgLen) {
		Expect(p.Send(iut(), 7, &wire.GrantFields{Common: r.control(), Offset: uint32(r.msgLen),
			Priority: uint8(params().MaxSchedPrio)})).To(Succeed())
	}
	for !got.Covers(0, uint32(r.msgLen)) {
		pk, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, wait(20*time.Millisecond))
		ok(err, "request bytes: have %d of %d", got.Total(), r.msgLen)
		d := pk.Pkt.Data()
		got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
		last = pk.At
	}
	return last
}

// respond sends the response (respLen bytes, payload header with the call
// id) from the tester to the IUT client and waits for the call to finish.
func (r *iutRPC) respond(p *tester.Peer, respLen int, cutoffVersion uint16) CallResult {
	GinkgoHelper()
	seg := maxSegData()
	full := responsePayload(r.callID, respLen)
	for off := 0; off < respLen; off += seg {
		n := min(seg, respLen-off)
		Expect(p.Send(iut(), 7, &wire.DataFields{Common: r.control(), MessageLength: uint32(respLen),
			Incoming: uint32(respLen), CutoffVersion: cutoffVersion, SegOffset: uint32(off),
			Payload: full[off : off+n]})).To(Succeed())
	}
	return r.wait()
}

// wait waits for the IUT's call to complete (on the environment's clock:
// in the simulator the wait steps it).
func (r *iutRPC) wait() CallResult {
	GinkgoHelper()
	var res CallResult
	done := func() bool {
		select {
		case res = <-r.done:
			return true
		default:
			return false
		}
	}
	got, err := env.Clock.Wait(ctx(), deadline(window(time.Duration(params().TimeoutTicks+10)*params().Tick)), done)
	ok(err, "waiting for the IUT's call")
	if !got {
		Fail("the IUT's call did not complete")
	}
	return res
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
	Expect(res.Err).To(BeEmpty(), "the IUT's call failed")
	Expect(res.Response).To(Equal(respLen))
}

// completeRequest has a tester client finish request m after its
// unscheduled bytes: it sends what each GRANT allows until the message is
// complete and returns the GRANTs it got and the response's first DATA.
func (m msgSpec) completeRequest(p *tester.Peer, sentTo int) ([]*tester.Packet, *tester.Packet) {
	GinkgoHelper()
	var grants []*tester.Packet
	for sentTo < m.msgLen {
		g, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id},
			wait(2*params().Tick))
		ok(err, "a GRANT for bytes beyond %d of %d", sentTo, m.msgLen)
		grants = append(grants, g)
		if off := int(g.Pkt.Grant().Offset()); off > sentTo {
			m.sendData(p, sentTo, min(off, m.msgLen), 6, false)
			sentTo = min(off, m.msgLen)
		}
	}
	resp, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id},
		wait(20*time.Millisecond))
	ok(err, "the response to request %d", m.id)
	m.ack(p)
	return grants, resp
}

// ack acknowledges the (complete) response of m so the IUT frees the RPC.
func (m msgSpec) ack(p *tester.Peer) {
	GinkgoHelper()
	Expect(p.Send(iut(), 7, &wire.AckFields{Common: wire.CommonFields{Sport: m.sport, Dport: ServerPort,
		SenderID: m.id}})).To(Succeed())
}

// driveRequests plays a correct sender for every message at once after
// their first sent[i] bytes: it sends what each GRANT allows, until every
// response has arrived (and is acknowledged). It returns the message
// indexes in the order their last GRANT (offset = message length) arrived.
func driveRequests(peers []*tester.Peer, msgs []msgSpec, sent []int) []int {
	GinkgoHelper()
	done := make([]bool, len(msgs))
	fullyGranted := make([]bool, len(msgs))
	var order []int
	// The IUT must keep the exchange moving, not finish it by a wall-clock
	// total: a loaded machine slows every step, and losses it causes cost
	// RESEND rounds. Each GRANT that lets a message on, or a response,
	// renews the bound; none within it (no GRANT, no RESEND answered
	// into progress) fails.
	bound := wait(200 * time.Millisecond)
	end := deadline(bound)
	for left := len(msgs); left > 0; {
		seen := tester.Arrivals(peers...) // before looking: a packet arriving meanwhile ends the wait below
		if !env.Clock.Now().Before(end) {
			Fail(fmt.Sprintf("%d of %d messages still without a response, none moved on for %v: bytes sent %v, responded %v", left, len(msgs), bound, sent, done))
		}
		before := left
		for i, m := range msgs {
			if done[i] {
				continue
			}
			p := peers[i%len(peers)]
			for _, g := range p.Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}) {
				g, _ = p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}, 0)
				if g == nil {
					break
				}
				if off := min(int(g.Pkt.Grant().Offset()), m.msgLen); off > sent[i] {
					m.sendData(p, sent[i], off, 6, false)
					sent[i] = off
					end = deadline(bound)
				}
				if sent[i] == m.msgLen && !fullyGranted[i] {
					fullyGranted[i] = true
					order = append(order, i)
				}
			}
			// Answer RESENDs (the IUT lost patience while this driver was
			// descheduled): retransmit what it asks for, as a sender must.
			for {
				r, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id}, 0)
				if r == nil {
					break
				}
				off, n := int(r.Pkt.Resend().Offset()), int(r.Pkt.Resend().Length())
				end := min(off+n, sent[i])
				if n < 0 || r.Pkt.Resend().IsResendAll() {
					end = sent[i]
				}
				if off < end {
					m.sendData(p, off, end, r.Pkt.Resend().Priority(), true)
				}
			}
			if len(p.Received(tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id})) > 0 {
				done[i] = true
				left--
				m.ack(p)
			}
		}
		if left < before {
			end = deadline(bound)
		}
		if left == 0 {
			break
		}
		ok(tester.WaitArrival(ctx(), end.Sub(env.Clock.Now()), seen, peers...), "driving the requests")
	}
	return order
}

// lastSent returns when the tester last sent DATA of client RPC id before
// time before.
func lastSent(p *tester.Peer, id uint64, before time.Time) time.Time {
	var t time.Time
	for _, x := range p.Log() {
		if x.Sent && x.Err == nil && x.Pkt.Type() == wire.TypeData && x.Pkt.SenderID() == id && x.At.Before(before) {
			t = x.At
		}
	}
	return t
}

// errEarly marks a packet a Check excludes because it came too early.
var errEarly = errors.New("too early")

// barrier makes sure the IUT has processed every packet p sent before it at
// priority prio: it sends a RESEND for an RPC that never existed at the same
// priority (so it queues behind them) and waits for the RPC_UNKNOWN answer,
// which it returns. Control packets the IUT sent at level 7 while
// processing those packets arrived before it.
func barrier(p *tester.Peer, prio uint8) *tester.Packet {
	GinkgoHelper()
	id := env.NewRPCID()
	Expect(p.SendDeliberate(iut(), prio, &wire.ResendFields{Common: wire.CommonFields{Sport: 39999, Dport: ServerPort, SenderID: id},
		Offset: 0, Length: 1, Priority: 7}, "RESEND for an RPC that never existed (a barrier)")).To(Succeed())
	u, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: id}, wait(2*params().Tick))
	ok(err, "the IUT's RPC_UNKNOWN for a barrier RESEND (HOMA-RESEND-006)")
	return u
}
