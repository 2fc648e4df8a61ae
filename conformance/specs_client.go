package conformance

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("client requests", func() {
	It("REQUEST-unscheduled: a long request's first transmission stops exactly at U, with incoming = U, each byte once, at the cutoffs' level",
		labels("wire", "MUST", "HOMA-UNSCHED-001", "HOMA-UNSCHED-002", "HOMA-WIRE-002", "HOMA-WIRE-003",
			"HOMA-WIRE-007", "HOMA-RESEND-010", "HOMA-PRIO-002", "HOMA-GRANT-005", "HOMA-GRANT-008"), body(func() {
			need("grants")
			p := peer(1)
			pr := params()
			// Well past U, and an eighth of a segment past it: the first
			// transmission stops at U however little follows it
			// (homa_message_out_fill puts a packet boundary at U).
			for _, reqLen := range []int{pastU(30000), pastU(max(1, maxSegData()/8))} {
				unschedThenGranted(p, pr, reqLen)
			}
			checkExchange(p)
		}))

	It("REQUEST-id-after-abort: a client whose application gave a call up takes new ids for its next RPCs, to another server and to the same one, never the given-up RPC's (ids come from one per-host counter)",
		labels("wire", "MUST", "HOMA-ID-004", "HOMA-WIRE-011"), needs(agent.CapTimeouts), body(func() {
			p0, p1 := peer(0), peer(1)
			pr := params()
			// The tester never answers; the application gives the call up
			// well before timeout_ticks (the agent's timeout_ms, whole
			// ms), as a Homa application aborts an RPC (HomaModule
			// homa_rpc_end from the socket's abort or close). Its id is
			// spent: homa_rpc_alloc_client takes every id from
			// next_outgoing_id, which only grows.
			limit := max(pr.Ticks(2), 2*time.Millisecond)
			if limit >= pr.Ticks(pr.TimeoutTicks) {
				Skip(fmt.Sprintf("unsupported: timeout_ticks %d of %v leaves no time for the application to give a call up first", pr.TimeoutTicks, pr.Tick))
			}
			gone := iutCallTimeout(p0, 100, 100, limit)
			wantTimedOut(gone.wait(), "its application gives the call up (timeout_ms)")
			last := wire.ClientID(gone.id)
			for _, p := range []*tester.Peer{p1, p0} {
				r := iutCall(p, 100, 100)
				r.receiveRequest(p)
				id := wire.ClientID(r.id)
				Expect(id).To(BeNumerically(">", last), "the IUT's next RPC to %v has id %d, after RPC %d (given up by its application): ids only grow", p.Addr(), id, last)
				Expect(r.respond(p, 100, pr.CutoffVersion).Response).To(Equal(100))
				last = id
			}
			checkExchange(p0, p1)
		}))

	It("REQUEST-max-length: a request of exactly max_message_length bytes is sent whole and answered (the limit is inclusive)",
		labels("wire", "MUST", "HOMA-UNSCHED-001", "HOMA-GRANT-005"), body(func() {
			p := peer(1)
			pr := params()
			// homa_sendmsg refuses only a message longer than
			// HOMA_MAX_MESSAGE_LENGTH (homa_message_out_fill), and a
			// receiver only one longer than that (homa_message_in_init).
			r := iutCall(p, int(pr.MaxMessageLength), 100)
			r.serveFully(p, 100)
			checkExchange(p)
		}))

	It("RESPONSE-max-length: a client receiving a response of exactly max_message_length bytes grants it to its end and the call returns it whole (the limit is inclusive)",
		labels("wire", "MUST", "HOMA-GRANT-010", "HOMA-GRANT-002"), body(func() {
			pr := params()
			n := int(pr.MaxMessageLength)
			if n > int(pr.UnschedBytes) {
				need("grants")
			}
			p := peer(1)
			// A client takes a response as a server takes a request:
			// homa_data_pkt creates the message (homa_message_in_init),
			// which refuses only a length above HOMA_MAX_MESSAGE_LENGTH.
			// The tester sends it as a HomaModule server does, its
			// scheduled bytes as the client's GRANTs let them out
			// (respondGranted).
			r := iutCall(p, 100, n)
			r.serveFully(p, n)
			checkExchange(p)
		}))
})

// unschedThenGranted has the IUT call tester p with a reqLen-byte request
// past unsched_bytes and checks its first transmission: only the
// unscheduled bytes [0, U) before a GRANT; then it grants the rest at
// scheduled level 2 and checks that level on the last DATA, and responds.
func unschedThenGranted(p *tester.Peer, pr spec.Params, reqLen int) {
	GinkgoHelper()
	r := iutCall(p, reqLen, 100)
	u := unsched(reqLen)
	// Only the unscheduled bytes come before a GRANT.
	Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id,
		Checks: []tester.Check{func(x *tester.Packet) error {
			if d := x.Pkt.Data(); int(d.Offset())+d.DataLen() > u {
				return nil
			}
			return errEarly
		}}}, min(window(2*pr.Tick), time.Duration(pr.TimeoutTicks)*pr.Tick/3))).To(Succeed(), "DATA beyond U=%d of a %d-byte request before any GRANT", u, reqLen)
	// Grant the rest at scheduled level 2 and take the whole request.
	Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.GrantFields{Common: r.control(), Offset: uint32(reqLen), Priority: 2},
		"GRANT of the whole request at priority 2 with one message")).To(Succeed())
	r.msgLen = reqLen
	var last *tester.Packet
	for {
		d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, wait(10*params().Tick))
		ok(err, "request DATA after the GRANT")
		if int(d.Pkt.Data().Offset())+d.Pkt.Data().DataLen() >= reqLen {
			last = d
			break
		}
	}
	Expect(last.Priority).To(Equal(uint8(2)), "scheduled DATA uses the GRANT's priority")
	res := r.respond(p, 100, pr.CutoffVersion)
	r.callOK(res, "the IUT's call failed")
}
