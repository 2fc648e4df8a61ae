package conformance

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("acknowledgements", func() {
	It("NEED_ACK-answered: a client that has its whole response answers NEED_ACK with an ACK for that RPC",
		labels("ack", "SHOULD", "HOMA-ACK-002", "HOMA-ACK-004"), body(func() {
			need("need-ack")
			p := peer(0)
			r := iutCall(p, 1000, 100)
			r.serveFully(p, 100)
			// A server asks request_ack_ticks after its response went out
			// (HOMA-ACK-005).
			pr := params()
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			a := needAck(p, r, pr)
			// The checker judges the wait with HOMA-ACK-002's bound, as
			// homatest check does the spec's capture.
			checkExchange(p)
			Expect(a).NotTo(BeNil(), "no ACK for RPC %d within %v of the repeated NEED_ACK (HOMA-ACK-002)", r.id, pr.NeedAckAnswerBound())
			Expect(a.Pkt.SenderID()).To(Equal(r.id), "the ACK's sender_id names the client's RPC id")
		}))

	It("NEED_ACK-answered-again: a client answers a NEED_ACK that its server repeats after the client's ACK (as when the ACK was lost) with another ACK, though it no longer has the RPC",
		labels("ack", "MUST", "HOMA-ACK-004", "HOMA-ACK-009"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			r := iutCall(p, 1000, 100)
			r.serveFully(p, 100)
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			if needAck(p, r, pr) == nil {
				Fail(fmt.Sprintf("no ACK for RPC %d within %v of the first NEED_ACK's repeat", r.id, pr.NeedAckAnswerBound()))
			}
			// The server did not get that ACK and asks again. The client
			// answers every NEED_ACK for an RPC it does not hold unfinished
			// with an ACK (homa_need_ack_pkt), whether or not it has other
			// acks pending: its ACK is the only thing that frees the
			// server's RPC, which never times out.
			again := needAck(p, r, pr)
			checkExchange(p)
			if again == nil {
				Fail(fmt.Sprintf("no ACK for RPC %d, already acknowledged once, within %v of a NEED_ACK repeated after it: its server would hold the RPC for good", r.id, pr.NeedAckAnswerBound()))
			}
		}))

	It("NEED_ACK-timing: a server asks for an ACK request_ack_ticks after its response went out, and stops once acknowledged",
		labels("ack", "MUST", "HOMA-ACK-001", "HOMA-ACK-003", "HOMA-ACK-005", "HOMA-PRIO-001"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// Both within unsched_bytes (up to 2000 and 500 bytes): the
			// server sends its whole response unasked, and request_ack_ticks
			// count from it.
			m := newRequest(unsched(2000), unsched(500))
			m.sendUnsched(p, 0, m.msgLen)
			resp, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
			ok(err, "the response")
			n, err := p.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id, Checks: []tester.Check{
				tester.Is("sport", uint64(ServerPort)), tester.Is("dport", uint64(m.sport)),
			}}, wait(time.Duration(pr.RequestAckTicks+2)*pr.Tick))
			ok(err, "NEED_ACK from the server that sent its whole response")
			// Both packets' delivery delays enter this gap, so it gets the
			// environment's slack (unlike a silence measured from packets
			// the tester sent).
			Expect(n.At.Sub(resp.At)).To(BeNumerically(">=", time.Duration(pr.RequestAckTicks-1)*pr.Tick-env.Slack),
				"NEED_ACK came %v after the response arrived; request_ack_ticks %d, slack %v", n.At.Sub(resp.At), pr.RequestAckTicks, env.Slack)
			m.ack(p)
			// Give the ACK time to land (the slack, from when it was out:
			// a timer pass may send a NEED_ACK that crosses it, and the
			// tester may answer well after the first NEED_ACK), then no
			// more NEED_ACK; unless a measured stall of a tick or more
			// kept the IUT from reading the ACK (the checker judges the
			// NEED_ACK then, HOMA-ACK-003 with its stall excuses).
			acked := p.Now()
			err = p.ExpectNone(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id,
				Checks: []tester.Check{func(x *tester.Packet) error {
					if x.At.Sub(acked) < env.Slack {
						return errEarly
					}
					return nil
				}}}, window(time.Duration(pr.RequestAckTicks+3)*pr.Tick))
			if err != nil && !stalledAtLeast("a NEED_ACK after the ACK", acked, env.Clock.Now(), pr.Tick) {
				ok(err, "NEED_ACK after the ACK")
			}
			checkExchange(p)
		}))
	It("NEED_ACK-held-response: a server whose long response waits for GRANTs sends no NEED_ACK while bytes of it are untransmitted, and asks once the rest is granted and sent",
		labels("ack", "MUST", "HOMA-ACK-001", "HOMA-ACK-005"), body(func() {
			need("need-ack", "grants")
			p := peer(0)
			pr := params()
			// A response past unsched_bytes: the server sends its
			// unscheduled bytes, then waits for the client's GRANTs. A
			// server asks for the ACK only once tx_end reaches the
			// response's length (homa_timer_check_rpc), and a server RPC
			// past its request never times out, so holding the GRANTs
			// costs nothing.
			// The request carries the response's length in its first
			// bytes (agent.PayloadHeaderLen): past a smaller
			// unsched_bytes it needs GRANTs.
			m := newRequest(max(unsched(2000), agent.PayloadHeaderLen), pastU(3*maxSegData()))
			m.sendUnsched(p, 0, unsched(m.msgLen))
			m.sendGranted(p, unsched(m.msgLen))
			u := unsched(m.respLen)
			var got byteranges.Set
			for !got.Covers(0, uint32(u)) {
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
				ok(err, "the response's unscheduled bytes: have %d of %d", got.Total(), u)
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
			}
			hold := pr.Ticks(pr.RequestAckTicks + 3)
			ok(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id}, hold),
				"NEED_ACK while the response was held at its grant horizon (%d of %d bytes transmitted): a server asks only once the whole response is", u, m.respLen)
			// Granted now: the rest comes, then the NEED_ACK the tester
			// answers (msgSpec.ack).
			m.ack(p)
			checkExchange(p)
		}))

	It("NEED_ACK-repeat: a server whose response stays unacknowledged keeps asking with NEED_ACK, at most once a tick, past timeout_ticks, and still holds the RPC: a RESEND for the response is answered with its bytes",
		labels("ack", "MUST", "HOMA-ACK-006", "HOMA-ACK-003", "HOMA-RESEND-019"), body(func() {
			waitsTimeout()
			need("need-ack")
			p := peer(0)
			pr := params()
			m := newRequest(unsched(2000), unsched(500)) // both unscheduled, as in NEED_ACK-timing
			sent := p.Now()
			m.sendUnsched(p, 0, m.msgLen)
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
			ok(err, "the response")
			needAck := tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id}
			first, err := p.Expect(ctx(), needAck, wait(pr.Ticks(pr.RequestAckTicks+2)))
			ok(err, "NEED_ACK from the server that sent its whole response")
			// The ACK may be lost, so the server asks again every tick
			// until one comes, and never times the RPC out: it holds the
			// response for a client that may still RESEND for it
			// (homa_timer_check_rpc zeroes a server's silent_ticks once
			// it has the request). Unanswered for half as long again as
			// timeout_ticks.
			hold := pr.Ticks(holdTicks())
			judged := iutParams()
			n, last := 1, first
			for p.Now().Before(first.At.Add(hold)) {
				// Every tick (facts ACK-01), stretched by timer_drift: in
				// virtual time (no drift) exactly a tick, so a server
				// asking every second tick fails here (helper-162); in
				// real time wait's generous bound leaves the rate to the
				// checker (HOMA-ACK-008, with its stall excuses).
				last, err = p.Expect(ctx(), needAck, wait(time.Duration(float64(pr.Tick)*(1+judged.TimerDrift))))
				ok(err, "NEED_ACK %d: the server stopped asking %v after its first NEED_ACK with the RPC unacknowledged (request_ack_ticks %d, timeout_ticks %d)",
					n+1, p.Now().Sub(first.At), pr.RequestAckTicks, pr.TimeoutTicks)
				n++
			}
			// And at most one a tick (HOMA-ACK-006), counted rather than
			// timed: the timer passes that sent them all lie between the
			// request's sending and the last one's arrival, whatever held
			// either host up, and no network in this spec duplicates.
			// Two more for the partial ticks at both ends.
			span := last.At.Sub(sent)
			Expect(n).To(BeNumerically("<=", int(span/pr.Tick)+2),
				"%d NEED_ACKs for one RPC within %v of the request (tick %v): more than one a tick", n, span, pr.Tick)
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(),
				Offset: 0, Length: uint32(m.respLen), Priority: ctrlLevel(pr)}, "RESEND for a response the tester holds whole (does the server still hold the RPC?)")).To(Succeed())
			_, err = p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id, Checks: []tester.Check{
				tester.DataOffset(0), tester.Is("retransmit", 1),
			}}, wait(2*pr.Tick))
			ok(err, "the response retransmitted for a RESEND after %d NEED_ACKs in %v (the server must still hold the unacknowledged RPC)", n, p.Now().Sub(first.At))
			m.ack(p)
			// The checker fails a NEED_ACK after the ACK (HOMA-ACK-003,
			// with its stall excuses: a stalled IUT may not have read the
			// ACK yet) in the exchange, which runs a few ticks on.
			pause(deadline(window(pr.Ticks(pr.RequestAckTicks+3))), "waiting a few ticks after the ACK")
			checkExchange(p)
		}))
})

// needAck asks the IUT, the client of r, for an ACK as a server does: a
// NEED_ACK now and one a tick until the ACK comes (facts ACK-01), and
// returns the ACK; nil when none came within pr.NeedAckAnswerBound of
// the first repeated NEED_ACK, where HOMA-ACK-002's obligation starts (a
// single NEED_ACK may have gone to a closed socket). It asks until a tick
// past that bound, so that the exchange the checker judges (here,
// and homatest check the spec's capture) holds the silence: the suite and
// the offline check give the same verdict with the same bound.
func needAck(p *tester.Peer, r *iutRPC, pr spec.Params) *tester.Packet {
	GinkgoHelper()
	m := tester.Match{Type: wire.TypeAck, From: iut(), RPC: r.id, Checks: []tester.Check{
		tester.Is("sport", uint64(r.cport)), tester.Is("dport", uint64(testerPort)),
	}}
	var repeated time.Time // the first repeated NEED_ACK
	for sent := 1; ; sent++ {
		Expect(p.Send(iut(), ctrlLevel(pr), &wire.NeedAckFields{Common: r.control()})).To(Succeed())
		now := p.Now()
		switch {
		case sent == 2:
			repeated = now
		case sent > 2 && now.Sub(repeated) > pr.NeedAckAnswerBound()+pr.Tick:
			// A tick past the bound: past it in the capture too,
			// however its timestamps differ from this clock's.
			return nil
		}
		a, err := p.Expect(ctx(), m, pr.Tick)
		if err == nil {
			return a
		}
		ok(ctx().Err(), "waiting for an ACK for RPC %d", r.id)
	}
}
