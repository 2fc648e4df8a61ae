package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
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
			_, err := env.Clock.Wait(ctx(), deadline(pr.Ticks(pr.RequestAckTicks)), func() bool { return false })
			ok(err, "waiting request_ack_ticks before NEED_ACK")
			a := needAck(p, r, pr)
			// The checker judges the wait with HOMA-ACK-002's bound, as
			// homatest check does the spec's capture.
			checkExchange(p)
			Expect(a).NotTo(BeNil(), "no ACK for RPC %d within %v of the repeated NEED_ACK (HOMA-ACK-002)", r.id, pr.NeedAckAnswerBound())
			Expect(a.Pkt.SenderID()).To(Equal(r.id), "the ACK's sender_id names the client's RPC id")
		}))

	It("NEED_ACK-timing: a server asks for an ACK request_ack_ticks after its response went out, and stops once acknowledged",
		labels("ack", "MUST", "HOMA-ACK-001", "HOMA-ACK-003", "HOMA-ACK-005", "HOMA-PRIO-001"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			m := newRequest(2000, 500)
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
			// Give an ACK in flight time to land, then no more NEED_ACK.
			Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id,
				Checks: []tester.Check{func(x *tester.Packet) error {
					if x.At.Sub(n.At) < env.Slack {
						return errEarly
					}
					return nil
				}}}, window(time.Duration(pr.RequestAckTicks+3)*pr.Tick))).To(Succeed(), "NEED_ACK after the ACK")
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
