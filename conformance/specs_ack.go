package conformance

import (
	"fmt"
	"maps"
	"slices"
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
			// server's RPC, which never times out. The server's timer
			// asks at most once a tick (HOMA-ACK-006).
			pause(deadline(pr.Tick), "waiting a tick before the server's next NEED_ACK")
			again := needAckWhy(p, r, pr, "NEED_ACK after the client's ACK, as a server that lost that ACK sends")
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
			m := heldResponse(p)
			u := unsched(m.respLen)
			// Half a tick more, so that the GRANT, and the last bytes
			// after it, do not come just after a timer pass: a server
			// whose request_ack_ticks count ran while it waited for the
			// GRANT asks at the next pass, well under a tick after them
			// (HOMA-ACK-005), which a GRANT in a pass's wake would hide.
			hold := pr.Ticks(pr.RequestAckTicks+3) + pr.Tick/2
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

	It("ACK-held-response-ends: a server whose response waits for GRANTs ends the RPC when its client acks it early, in an ACK's header or in one of its entries: no more response DATA though GRANTs follow, and a RESEND for it draws RPC_UNKNOWN",
		labels("ack", "MUST", "HOMA-ACK-003"), body(func() {
			need("need-ack", "grants")
			p := peer(0)
			pr := params()
			// Two responses held at the server's grant horizon, their
			// unscheduled bytes out. A server frees an RPC on its ack
			// whatever the RPC's state (homa_ack_pkt and homa_rpc_acked
			// call homa_rpc_end), so an ack that comes early (a client
			// that gave the RPC up, or acked a timed-out one as
			// linux_6.13.9 did) ends it there too, its response cut off.
			ms := []msgSpec{heldResponse(p), heldResponse(p)}
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.AckFields{Common: ms[0].control(),
				Acks: []wire.AckEntry{{ClientID: ms[1].id, ClientPort: ms[1].sport, ServerPort: ServerPort}}},
				"ACK of two RPCs whose responses have not all arrived")).To(Succeed())
			acked := p.Now()
			// GRANTs for the rest, as a client that did not mean it would
			// send: the server no longer has the RPCs, so they move no
			// byte (homa_grant_pkt finds no RPC).
			pause(deadline(window(pr.Tick)), "the ACK's way to the server")
			for _, m := range ms {
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.GrantFields{Common: m.control(), Offset: uint32(m.respLen), Priority: 0},
					"GRANT for the rest of a response its client acked")).To(Succeed())
			}
			wantEnded(p, ms, acked, "the client's early ack")
			checkExchange(p)
		}))

	It("ACK-entries-end: a server ends every RPC an ACK acknowledges, the one its header names and each one of its acks[] entries: no NEED_ACK for any once the ACK has landed, and a RESEND for any draws RPC_UNKNOWN",
		labels("ack", "MUST", "HOMA-ACK-003", "HOMA-RESEND-006"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// Four RPCs at once, requests and responses within
			// unsched_bytes: the server sends each response unasked.
			ms := make([]msgSpec, 4)
			ids := make([]uint64, len(ms))
			for i := range ms {
				ms[i] = newRequest(unsched(500), unsched(100))
				ids[i] = ms[i].id
				ms[i].sendUnsched(p, 0, ms[i].msgLen)
			}
			for _, m := range ms {
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
				ok(err, "the response to request %d", m.id)
			}
			// The tester answers the server's first NEED_ACK as a
			// HomaModule client with the other three acks pending does
			// (homa_need_ack_pkt): one ACK whose header names the RPC
			// asked about and whose entries name the other three.
			n, err := p.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), Checks: []tester.Check{rpcIn(ids)}},
				wait(pr.Ticks(pr.RequestAckTicks+2)))
			ok(err, "NEED_ACK from the server for one of RPCs %v, whose responses it sent whole", ids)
			var head msgSpec
			var entries []wire.AckEntry
			for _, m := range ms {
				if m.id == n.Pkt.SenderID()&^1 {
					head = m
					continue
				}
				entries = append(entries, wire.AckEntry{ClientID: m.id, ClientPort: m.sport, ServerPort: ServerPort})
			}
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.AckFields{Common: head.control(), Acks: entries})).To(Succeed())
			// The server ends the RPC the header names and each entry's
			// (homa_ack_pkt: homa_rpc_end, then homa_rpc_ack for every
			// entry).
			wantEnded(p, ms, p.Now(), fmt.Sprintf("the ACK that acknowledged them (header %d, entries %v)", head.id, entries))
			checkExchange(p)
		}))

	It("ACK-entries-header-ended: a server ends the RPCs an ACK's acks[] entries name even when the RPC its header names has already ended: no NEED_ACK for them once the ACK has landed, and a RESEND for any draws RPC_UNKNOWN",
		labels("ack", "MUST", "HOMA-ACK-003", "HOMA-RESEND-006"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// One RPC whose response the server sends unasked, within
			// unsched_bytes (as in ACK-entries-end).
			head := answered(p)
			// The server asks for its ACK a tick apart; the tester lets
			// two NEED_ACKs come before it answers the first, so the
			// second is one the server sent before the ACK reached it.
			needAck, _ := head.firstNeedAck(p)
			_, err := p.Expect(ctx(), needAck, wait(2*pr.Tick))
			ok(err, "a second NEED_ACK for RPC %d", head.id)
			head.ack(p)
			barrier(p, ctrlLevel(pr)) // the server has ended RPC head
			// Two more RPCs complete meanwhile: their acks are pending at
			// the client.
			ms := make([]msgSpec, 2)
			entries := make([]wire.AckEntry, len(ms))
			for i := range ms {
				ms[i] = newRequest(unsched(500), unsched(100))
				ms[i].sendUnsched(p, 0, ms[i].msgLen)
				entries[i] = wire.AckEntry{ClientID: ms[i].id, ClientPort: ms[i].sport, ServerPort: ServerPort}
			}
			for _, m := range ms {
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
				ok(err, "the response to request %d", m.id)
			}
			// The client answers the second NEED_ACK as a HomaModule
			// client no longer holding the RPC does (homa_need_ack_pkt):
			// an ACK whose header names RPC head, carrying the acks
			// pending. The server processes the entries whether or not
			// it still holds the header's RPC (homa_ack_pkt calls
			// homa_rpc_ack with rpc NULL too).
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.AckFields{Common: head.control(), Acks: entries})).To(Succeed())
			wantEnded(p, ms, p.Now(), fmt.Sprintf("the ACK whose entries acknowledged them (header %d, an RPC the server had ended)", head.id))
			checkExchange(p)
		}))

	It("ACK-piggybacked-ends: a server ends an RPC whose ack rides on a later request's DATA: no NEED_ACK for it once that DATA has landed, and a RESEND for it draws RPC_UNKNOWN",
		labels("ack", "MUST", "HOMA-ACK-003", "HOMA-RESEND-006"), body(func() {
			need("need-ack")
			p := peer(0)
			done := answered(p)
			// The client's next request carries that RPC's ack in its
			// first DATA, as a HomaModule client's new packets take one
			// pending ack each (homa_tx_data_pkt_alloc), instead of an
			// ACK: the server handles it as an ACK entry (homa_data_pkt →
			// homa_rpc_ack).
			next := newRequest(unsched(500), unsched(100))
			f := wire.NewData(next.control(), uint32(next.msgLen), uint32(next.msgLen), next.cutoffVersion, 0, next.payload, false)
			f.Ack = wire.AckEntry{ClientID: done.id, ClientPort: done.sport, ServerPort: ServerPort}
			Expect(p.Send(iut(), next.unschedPrio(), f)).To(Succeed())
			wantEnded(p, []msgSpec{done}, p.Now(), fmt.Sprintf("request %d's DATA that carried its ack", next.id))
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: next.id}, wait(20*time.Millisecond))
			ok(err, "the response to request %d", next.id)
			next.ack(p)
			checkExchange(p)
		}))

	It("NEED_ACK-incomplete: a client that has no byte of its response, or lacks its last segment, does not answer NEED_ACK with an ACK (on main it RESENDs what it lacks); once its call has the whole response, it does",
		labels("ack", "MUST", "HOMA-ACK-004", "HOMA-ACK-009", "HOMA-ACK-012"), body(func() {
			need("need-ack")
			if !onMain() {
				// linux_6.1.38 and linux_6.10.6 ignore the NEED_ACK: the
				// missing bytes come only after the timer's RESEND.
				needResends()
			}
			p := peer(0)
			pr := params()
			r, respLen, from, to := lastSegmentCall(p)
			// Before any response byte, too (as after a server restart
			// that lost the RPC and asks anew): the client's RPC is not
			// RPC_INCOMING, so no ACK (homa_need_ack_pkt); on main it
			// asks for the whole response, RESEND {0, -1}
			// (homa_request_retrans with msgin.length < 0), which the
			// tester, its application still serving, answers with BUSY.
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.NeedAckFields{Common: r.control()},
				"NEED_ACK before any response byte went out")).To(Succeed())
			if onMain() {
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id, Checks: []tester.Check{
					tester.Is("offset", 0), func(x *tester.Packet) error {
						if !x.Pkt.Resend().IsResendAll() {
							return fmt.Errorf("length: want -1 (nothing of the response received), got %d", int32(x.Pkt.Resend().Length()))
						}
						return nil
					}}}, wait(pr.NeedAckAnswerBound()))
				ok(err, "a RESEND {0, -1} answering NEED_ACK for RPC %d, of whose response nothing came", r.id)
				Expect(p.Send(iut(), ctrlLevel(pr), &wire.BusyFields{Common: r.control()})).To(Succeed())
			}
			// Meanwhile the client's timer asks for the response every
			// resend_interval; its server, still serving, answers each
			// with BUSY (homa_resend_pkt), so a window the measured slack
			// stretches past timeout_ticks (3 s in the lab, HomaModule
			// under emulation) does not time the call out.
			acks := tester.Match{Type: wire.TypeAck, From: iut(), RPC: r.id}
			r.busyFor(p, window(pr.Tick))
			Expect(p.Received(acks)).To(BeEmpty(), "an ACK for RPC %d, of whose response nothing came", r.id)
			r.sendResponseBut(p, respLen, from, to)
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.NeedAckFields{Common: r.control()},
				"NEED_ACK before the response's last segment went out (as a server whose last packet was lost on the way)")).To(Succeed())
			// The client still holds the RPC with bytes remaining: no ACK,
			// which would let the server free the response it lacks
			// (homa_need_ack_pkt); on main a RESEND for them at once
			// (homa_request_retrans), on older HomaModule at the timer's
			// next round (resend_ticks). Either is the RESEND answered.
			rs, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id, Checks: []tester.Check{asksFor(from)}},
				wait(pr.NeedAckAnswerBound()))
			ok(err, "a RESEND for response bytes [%d, %d), which the client lacks", from, to)
			// A client ACKs at once if at all. The server holds back the
			// bytes asked for until then, so the window stays within half
			// of timeout_ticks, before which the client's call would end.
			ok(p.ExpectNone(ctx(), acks, min(window(pr.Tick), pr.Ticks(pr.TimeoutTicks)/2)),
				"an ACK for RPC %d, whose response lacks bytes [%d, %d)", r.id, from, to)
			r.resendResponse(p, respLen, from, to, rs.Pkt.Resend().Priority())
			res := r.wait()
			r.callOK(res, "the IUT's call failed once the missing bytes came")
			Expect(res.Response).To(Equal(respLen))
			// The whole response is out now: a server asks request_ack_ticks
			// later, and gets its ACK.
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			a := needAck(p, r, pr)
			checkExchange(p)
			if a == nil {
				Fail(fmt.Sprintf("no ACK for RPC %d, whose response the call returned whole, within %v of the repeated NEED_ACK", r.id, pr.NeedAckAnswerBound()))
			}
		}))

	It("ACK-overflow: a client with acks of five RPCs pending to a server sends them unasked when a sixth RPC with it completes, in one ACK of five entries whose header names the sixth; each RPC is acknowledged once",
		// Not labelled HOMA-ACK-007, which the check of every exchange
		// judges all the same (a MUST rule outside a spec's own fails it):
		// the suite keeps that rule out of every active spec's labels to
		// show that it does (cli TestRunOtherRuleFindingsFail).
		labels("ack", "MUST", "HOMA-ACK-004"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// Six calls at once, served together: no request goes out
			// between the responses, so no pending ack rides on request
			// DATA (homa_tx_data_pkt_alloc takes one per packet), and the
			// tester sends no NEED_ACK.
			rs := iutCalls(p, wire.MaxAcksPerPkt+1)
			respondAll(p, rs)
			// Up to HOMA_MAX_ACKS_PER_PKT acks wait per peer; the sixth
			// sends them in an ACK whose header acknowledges that RPC
			// (homa_peer_add_ack, from homa_recvmsg as the application
			// receives the response, before its call returns).
			a, err := p.Expect(ctx(), tester.Match{Type: wire.TypeAck, From: iut(), Checks: []tester.Check{
				tester.Is("dport", uint64(testerPort)), tester.Is("num_acks", uint64(wire.MaxAcksPerPkt)),
			}}, wait(pr.Tick))
			acked := map[uint64]bool{}
			if err == nil {
				// Any RPC it left unacknowledged is asked for; an ACK
				// answers.
				ackOnce(a, acked)
				askUnacked(p, rs, acked)
			}
			// A few ticks more in the exchange: an ACK sent unasked
			// without five acks (too early, or one more) is HOMA-ACK-007's
			// finding, which fails the spec in its check.
			pause(deadline(window(pr.Ticks(2))), "waiting for ACKs no NEED_ACK asked for")
			checkExchange(p)
			ok(err, "the ACK carrying %d acks a client sends once acks of %d RPCs with one server are pending", wire.MaxAcksPerPkt, wire.MaxAcksPerPkt+1)
			// The header names the sixth of these RPCs, and the entries
			// the five acks pending before it (homa_peer_add_ack): these
			// RPCs', or an earlier spec's RPC with this server whose ack
			// was still pending (a spec that ended while this machine
			// held the IUT up, its response taken only now), in place of
			// one of these, which askUnacked then asks for.
			mine := map[uint64]bool{}
			for _, r := range rs {
				mine[r.id] = true
			}
			var others []uint64
			for _, id := range ackedIDs(a) {
				if !mine[id] && !earlierKeys[spec.RPCKey{Client: iut(), Server: p.Addr(), ClientID: id}] {
					others = append(others, id)
				}
			}
			Expect(others).To(BeEmpty(), "RPCs the overflow ACK acknowledges (header and entries: %s) that are neither among the %d RPCs %v nor an earlier RPC with this server", a, len(rs), slices.Sorted(maps.Keys(mine)))
			Expect(mine[a.Pkt.SenderID()]).To(BeTrue(), "the overflow ACK's header (%s) names the RPC whose completion made the sixth pending ack: one of %v", a, slices.Sorted(maps.Keys(mine)))
			// That sixth ack goes out at once in the header, never
			// pending: no entry names it.
			Expect(ackedIDs(a)[1:]).NotTo(ContainElement(a.Pkt.SenderID()), "the overflow ACK's header (%s) names the RPC whose ack overflowed, which was never pending: not one of its entries", a)
		}))

	It("ACK-retransmission-copied: a client's retransmitted request DATA carries the ack its first transmission carried, not another pending one",
		labels("ack", "MUST", "HOMA-ACK-004"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// Four RPCs finished at once leave four acks pending to the
			// tester (fewer than the overflow's six, and no NEED_ACK).
			rs := iutCalls(p, 4)
			respondAll(p, rs)
			// A one-packet request takes one of them along
			// (homa_tx_data_pkt_alloc); three stay pending.
			r := iutCall(p, 100, 100)
			r.receiveRequest(p)
			acked := map[uint64]bool{}
			if id := r.first.Pkt.Data().AckClientID(); id != 0 {
				handedOut(acked, id, fmt.Sprintf("request DATA %s", r.first))
			}
			// Its retransmission copies the packet's header, ack
			// included (homa_resend_data): the same ack (or none, if the
			// first copy had none), never one of those still pending
			// (the checker judges that: HOMA-ACK-004).
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: 0, Length: uint32(r.msgLen), Priority: ctrlLevel(pr)},
				"RESEND at once (no silence) for the whole request, to see its retransmission's ack")).To(Succeed())
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.DataOffset(0), tester.Is("retransmit", 1),
			}}, wait(2*pr.Tick))
			ok(err, "the request retransmitted for a RESEND")
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			// The acks still pending, handed out on the tester's NEED_ACKs.
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			askUnacked(p, append(rs, r), acked)
			checkExchange(p)
		}))

	It("NEED_ACK-acks-once: a client answering NEED_ACK hands out each pending ack once: an ack its ACK carried rides on no later ACK or request DATA",
		labels("ack", "MUST", "HOMA-ACK-004", "HOMA-ACK-009"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			// Three RPCs completed at once (fewer than the overflow's six):
			// three acks pending to the tester.
			rs := iutCalls(p, 3)
			respondAll(p, rs)
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			// The ACK answering a NEED_ACK carries the pending acks and
			// takes them off the list (homa_need_ack_pkt's
			// homa_peer_get_acks): asked about the RPCs one at a time, it
			// carries each once.
			acked := map[uint64]bool{}
			askUnacked(p, rs, acked)
			// A further RPC: its request DATA may carry a pending ack
			// (homa_tx_data_pkt_alloc), and the ACK answering its
			// NEED_ACK carries the rest; none handed out before.
			r := iutCall(p, 100, 100)
			if id := r.first.Pkt.Data().AckClientID(); id != 0 {
				handedOut(acked, id, fmt.Sprintf("request DATA %s", r.first))
			}
			r.serveFully(p, 100)
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			askUnacked(p, []*iutRPC{r}, acked)
			checkExchange(p)
		}))

	It("ACK-response-incomplete: a client acknowledges an RPC only once it has the whole response: the request of its next call to the same server, sent while that response lacks its last segment, carries no ack for it",
		labels("ack", "MUST", "HOMA-ACK-004"), body(func() {
			need("need-ack")
			needResends()
			p := peer(0)
			pr := params()
			r, respLen, from, to := lastSegmentCall(p)
			r.sendResponseBut(p, respLen, from, to)
			// The client's RESEND for the last segment shows that the rest
			// of the response has arrived: the RPC is incomplete, and its
			// ack is not pending, since a client queues it as the
			// application receives the whole response (homa_recvmsg calls
			// homa_peer_add_ack).
			rs, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id, Checks: []tester.Check{asksFor(from)}},
				wait(pr.Ticks(pr.ResendTicks+2)))
			ok(err, "a RESEND for response bytes [%d, %d), which the client lacks", from, to)
			// A second call to the same server meanwhile: its request DATA
			// takes one pending ack (homa_tx_data_pkt_alloc), an earlier
			// RPC's or none, never this one's, which would let the server
			// free the response the client still lacks (the checker judges
			// that: HOMA-ACK-004).
			next := iutCall(p, 100, 100)
			acked := map[uint64]bool{}
			carried := next.first.Pkt.Data().AckClientID()
			if carried != 0 {
				handedOut(acked, carried, fmt.Sprintf("request DATA %s", next.first))
			}
			r.resendResponse(p, respLen, from, to, rs.Pkt.Resend().Priority())
			res := r.wait()
			r.callOK(res, "the IUT's call failed once the missing bytes came")
			Expect(res.Response).To(Equal(respLen))
			next.serveFully(p, 100)
			// The acks still pending, handed out on the tester's NEED_ACKs.
			pause(deadline(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			askUnacked(p, []*iutRPC{r, next}, acked)
			checkExchange(p)
			Expect(carried).NotTo(Equal(r.id), "request DATA %s of RPC %d acknowledges RPC %d, whose response lacked bytes [%d, %d)", next.first, next.id, r.id, from, to)
		}))

	It("NEED_ACK-after-resend: a server whose client asks again for its fully sent response retransmits it and keeps asking with NEED_ACK every tick: a retransmission does not restart its request_ack_ticks count",
		labels("ack", "MUST", "HOMA-ACK-008", "HOMA-ACK-006", "HOMA-RESEND-016"), body(func() {
			need("need-ack")
			p := peer(0)
			pr := params()
			m := answered(p)
			needAck, first := m.firstNeedAck(p)
			// The client asks for the response again, twice a tick, for
			// 2·request_ack_ticks+4 ticks (as a client whose copies keep
			// getting lost asks on each NEED_ACK and at its timer rounds),
			// and does not ack. The server retransmits each time
			// (homa_resend_pkt), and its timer goes on asking for the ACK
			// on every pass: homa_timer_check_rpc sets done_timer_ticks
			// once, when it first sees the response transmitted, and
			// nothing resets it (facts ACK-01: NEED_ACK every tick until
			// the RPC is freed). A server that restarted its count at each
			// retransmission would ask no more while the RESENDs come
			// faster than request_ack_ticks. (At request_ack_ticks 1 a
			// count restarted at 0 by a retransmission and raised by the
			// next pass, as the ref counts, reaches 1 on that pass and
			// asks all the same: no exchange shows that restart, rt5 v08,
			// there.) Every tick: exact in virtual
			// time; in real time the spec allows request_ack_ticks+2 ticks,
			// stretched by timer_drift, plus slack (a gap that only a
			// restarted count explains, unless a measured stall does), and
			// leaves the rate to the checker (HOMA-ACK-008, with its stall
			// excuses).
			every := pr.Tick
			if !env.Virtual {
				every = pr.Ticks(pr.RequestAckTicks + 2)
			}
			bound := window(time.Duration(float64(every) * (1 + iutParams().TimerDrift)))
			hold := max(pr.Ticks(2*pr.RequestAckTicks+4), bound+pr.Ticks(2))
			start, last, n := p.Now(), first.At, 1
			for k := 1; p.Now().Before(start.Add(hold)); k++ {
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(), Offset: 0, Length: uint32(m.respLen), Priority: ctrlLevel(pr)},
					"RESEND for a response the server sent whole, half a tick after the last (the client lost every copy)")).To(Succeed())
				for x := (*tester.Packet)(nil); ; n++ {
					if x, _ = p.Expect(ctx(), needAck, start.Add(time.Duration(k)*pr.Tick/2).Sub(p.Now())); x == nil {
						break
					}
					last = x.At
				}
				ok(ctx().Err(), "taking the server's NEED_ACKs while RESENDing")
				if gap := p.Now().Sub(last); gap > bound {
					msg := fmt.Sprintf("no NEED_ACK for %v after the server's last (NEED_ACK %d, %v after its first), while it retransmitted its response for a RESEND every half tick: it asks every tick until acknowledged, retransmitting or not (homa_timer_check_rpc sets done_timer_ticks once; request_ack_ticks %d)",
						gap, n, last.Sub(first.At), pr.RequestAckTicks)
					// Excused only by stalls that lost all of it but a
					// tick (a server's timer held up that long).
					if !stalledAtLeast(msg, last, p.Now(), gap-time.Duration(float64(pr.Tick)*(1+iutParams().TimerDrift))) {
						Fail(msg)
					}
					panic(stalledOut{})
				}
			}
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id, Checks: []tester.Check{tester.Is("retransmit", 1)}}, wait(2*pr.Tick))
			ok(err, "the response retransmitted for the RESENDs")
			AddReportEntry("note", fmt.Sprintf("%d NEED_ACKs in %v, while the tester RESENT the response every half tick", n, p.Now().Sub(first.At)))
			m.ack(p)
			// The checker fails a NEED_ACK after the ACK (HOMA-ACK-003)
			// and judges the retransmissions (HOMA-RESEND-016).
			pause(deadline(window(pr.Ticks(pr.RequestAckTicks+3))), "waiting a few ticks after the ACK")
			checkExchange(p)
		}))
})

// answered has tester p send the IUT a request of up to 500 bytes asking
// for up to 100, both within unsched_bytes, and waits for the response's
// DATA: the server sends its whole response unasked and then waits for
// the ACK. It returns the request.
func answered(p *tester.Peer) msgSpec {
	GinkgoHelper()
	m := newRequest(unsched(500), unsched(100))
	m.sendUnsched(p, 0, m.msgLen)
	_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
	ok(err, "the response to request %d", m.id)
	return m
}

// firstNeedAck returns the match for the IUT's NEED_ACKs for m's RPC,
// whose server sent its whole response, and the first of them (it comes
// request_ack_ticks after the response: HOMA-ACK-005).
func (m msgSpec) firstNeedAck(p *tester.Peer) (tester.Match, *tester.Packet) {
	GinkgoHelper()
	pr := params()
	needAck := tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: m.id}
	first, err := p.Expect(ctx(), needAck, wait(pr.Ticks(pr.RequestAckTicks+2)))
	ok(err, "NEED_ACK from the server for RPC %d, whose response it sent whole", m.id)
	return needAck, first
}

// heldResponse has tester p send the IUT a request (up to 2000 bytes, as
// its GRANTs allow) asking for a response three segments past
// unsched_bytes, and receive the response's unscheduled bytes: the
// server then holds the rest at its grant horizon, waiting for the
// client's GRANTs. It returns the request.
func heldResponse(p *tester.Peer) msgSpec {
	GinkgoHelper()
	// The request carries the response's length in its first bytes
	// (agent.PayloadHeaderLen): past a smaller unsched_bytes it needs
	// GRANTs.
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
	return m
}

// wantEnded checks that the IUT's server ended the RPCs of ms when a
// packet ending them (an ack of them, or their client's RPC_UNKNOWN)
// reached it at acked (how names the packet): no NEED_ACK for any once it
// has landed (NEED_ACKs sent before it, within the slack, cross it; a
// measured stall of a tick or more between it and a NEED_ACK may have
// kept the server from reading it: the checker judges that,
// HOMA-ACK-003), and a RESEND for a response draws RPC_UNKNOWN, as for an
// RPC it never had (homa_resend_pkt), not the response's bytes again.
func wantEnded(p *tester.Peer, ms []msgSpec, acked time.Time, how string) {
	GinkgoHelper()
	pr := params()
	ids := make([]uint64, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	late := tester.Match{Type: wire.TypeNeedAck, From: iut(), Checks: []tester.Check{rpcIn(ids), after(acked, env.Slack)}}
	if err := p.ExpectNone(ctx(), late, window(pr.Ticks(pr.RequestAckTicks+3))); err != nil {
		if got := p.Received(late); len(got) == 0 || !stalledAtLeast("a NEED_ACK after the ack", acked, got[0].At, pr.Tick) {
			ok(err, "NEED_ACK for RPCs %v after %s", ids, how)
		}
	}
	for _, m := range ms {
		Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(), Offset: 0, Length: uint32(m.respLen), Priority: ctrlLevel(pr)},
			fmt.Sprintf("RESEND for RPC %d's response after %s (has the server ended the RPC?)", m.id, how))).To(Succeed())
		_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: m.id, Checks: []tester.Check{
			tester.Is("sport", uint64(ServerPort)), tester.Is("dport", uint64(m.sport)),
		}}, wait(2*pr.Tick))
		ok(err, "RPC_UNKNOWN for a RESEND of RPC %d after %s", m.id, how)
	}
	ok(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeData, From: iut(), Checks: []tester.Check{rpcIn(ids)}}, window(2*pr.Tick)),
		"response DATA of RPCs %v after %s and the RESENDs", ids, how)
}

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
	return needAckWhy(p, r, pr, "")
}

// needAckWhy is needAck whose NEED_ACKs break the protocol on purpose
// when why is set (tester.Peer.SendDeliberate): asked again after the
// client's ACK, as a server that lost that ACK asks, they are HOMA-ACK-003
// findings charged to the tester, which judged with the simulator's own
// slack (1 µs, not the linux profile's 2 ms) a tick after the ACK shows.
func needAckWhy(p *tester.Peer, r *iutRPC, pr spec.Params, why string) *tester.Packet {
	GinkgoHelper()
	m := tester.Match{Type: wire.TypeAck, From: iut(), RPC: r.id, Checks: []tester.Check{
		tester.Is("sport", uint64(r.cport)), tester.Is("dport", uint64(testerPort)),
	}}
	var a *tester.Packet
	var repeated time.Time // the first repeated NEED_ACK
	sent := 0
	// ask sends a NEED_ACK a tick until the ACK comes (into a) or one
	// went out past (then it stops).
	ask := func(past func(now time.Time) bool) (bool, error) {
		for {
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.NeedAckFields{Common: r.control()}, why)).To(Succeed())
			now := p.Now()
			if sent++; sent == 2 {
				repeated = now
			}
			if past(now) {
				return false, nil
			}
			if a, _ = p.Expect(ctx(), m, pr.Tick); a != nil {
				return true, nil
			}
			if err := ctx().Err(); err != nil {
				return false, err
			}
		}
	}
	// A tick past the bound: past it in the capture too, however its
	// timestamps differ from this clock's.
	_, err := ask(func(now time.Time) bool { return sent > 2 && now.Sub(repeated) > pr.NeedAckAnswerBound()+pr.Tick })
	ok(err, "waiting for an ACK for RPC %d", r.id)
	if a != nil {
		return a
	}
	// Unless this machine kept the IUT (or the tester) from running for
	// a quarter of that time and the ACK came late, asked for on within
	// the stalls' loss (lateWithinStalls): then the spec is
	// timing-inconclusive. No ACK even then: none comes.
	now := p.Now()
	late := func(by time.Time) (bool, error) { return ask(func(now time.Time) bool { return !now.Before(by) }) }
	if lateWithinStalls(repeated, now, late) && stalledLongest(fmt.Sprintf("no ACK for RPC %d within %v of the repeated NEED_ACK", r.id, pr.NeedAckAnswerBound()), repeated, now, now.Sub(repeated)/4) {
		panic(stalledOut{})
	}
	return nil
}

// iutCalls starts n calls of the IUT to tester p, each a 100-byte
// request asking for a 100-byte response, all in flight at once (each
// begun once the request of the one before has arrived: iutCall).
func iutCalls(p *tester.Peer, n int) []*iutRPC {
	GinkgoHelper()
	rs := make([]*iutRPC, n)
	for i := range rs {
		rs[i] = iutCall(p, 100, 100)
	}
	return rs
}

// respondAll has tester p receive the requests of calls rs (iutCalls)
// and answer them, and checks that each call returned its response: the
// RPCs complete together, with no request of the IUT between them. Each
// 100-byte response goes whole before the tester waits for any call; past
// unsched_bytes, one after the other as the client's GRANTs let it out
// (iutRPC.respond).
func respondAll(p *tester.Peer, rs []*iutRPC) {
	GinkgoHelper()
	pr := params()
	for _, r := range rs {
		r.receiveRequest(p)
	}
	granted := rs[0].respLen > int(pr.UnschedBytes)
	for _, r := range rs {
		if !granted {
			r.sendResponse(p, r.respLen, 0, r.respLen, r.respLen, unschedLevel(pr, r.respLen), pr.CutoffVersion, false)
		}
	}
	for _, r := range rs {
		var res CallResult
		if granted {
			res = r.respond(p, r.respLen, pr.CutoffVersion)
		} else {
			res = r.wait()
		}
		if res.Err != "" {
			Fail(fmt.Sprintf("the IUT's call of RPC %d failed: %s", r.id, res.Err))
		}
		Expect(res.Response).To(Equal(r.respLen), "response length of RPC %d", r.id)
	}
}

// ackedIDs returns the client RPC ids ACK a acknowledges: its header's,
// then its valid entries'.
func ackedIDs(a *tester.Packet) []uint64 {
	ack := a.Pkt.Ack()
	ids := []uint64{a.Pkt.SenderID()}
	for i := range ack.ValidAcks() {
		ids = append(ids, ack.Entry(i).ClientID)
	}
	return ids
}

// ackOnce fails the spec when ACK a's entries name an RPC twice or one
// whose ack the IUT handed out before (HOMA-ACK-004: a client hands each
// pending ack out once, homa_peer_get_acks), and records what a
// acknowledges in acked: true for an ack handed out (an entry, or a
// piggy-backed ack: handedOut), false for one only its header names. A
// header may name an RPC acknowledged before (a NEED_ACK for an RPC the
// client no longer has draws an ACK naming it), and one of its own
// entries (the asked RPC's ack was pending).
func ackOnce(a *tester.Packet, acked map[uint64]bool) {
	GinkgoHelper()
	ids := ackedIDs(a)
	seen := map[uint64]bool{}
	for _, id := range ids[1:] {
		if seen[id] {
			Fail(fmt.Sprintf("ACK %s names RPC %d in two entries (acks: %v)", a, id, ids))
		}
		seen[id] = true
		handedOut(acked, id, fmt.Sprintf("ACK %s", a))
	}
	if _, done := acked[ids[0]]; !done {
		acked[ids[0]] = false
	}
}

// handedOut records in acked (ackOnce) the ack of RPC id that carrier
// (an ACK, a request DATA) hands out, failing the spec when one was
// handed out before.
func handedOut(acked map[uint64]bool, id uint64, carrier string) {
	GinkgoHelper()
	if acked[id] {
		Fail(fmt.Sprintf("%s acknowledges RPC %d, whose ack an ACK entry or request DATA carried before", carrier, id))
	}
	acked[id] = true
}

// askUnacked asks the IUT, client of rs, for an ACK of each RPC of rs
// not in acked (ackOnce), in turn (needAck), failing the spec when one
// draws no ACK, and checks each ACK with ackOnce.
func askUnacked(p *tester.Peer, rs []*iutRPC, acked map[uint64]bool) {
	GinkgoHelper()
	pr := params()
	for _, r := range rs {
		if _, done := acked[r.id]; done {
			continue
		}
		a := needAck(p, r, pr)
		if a == nil {
			Fail(fmt.Sprintf("no ACK for RPC %d within %v of the repeated NEED_ACK", r.id, pr.NeedAckAnswerBound()))
		}
		ackOnce(a, acked)
	}
}

// lastSegmentCall starts a call of the IUT to tester p with a 100-byte
// request asking for lastSegmentResponse's response, receives the
// request, and returns the call, the response's length and the range of
// its last segment.
func lastSegmentCall(p *tester.Peer) (r *iutRPC, respLen, from, to int) {
	GinkgoHelper()
	respLen, from, to = lastSegmentResponse()
	r = iutCall(p, 100, respLen)
	r.receiveRequest(p)
	return r, respLen, from, to
}

// lastSegmentResponse picks the response of a spec whose IUT client
// lacks only its last segment: up to three segments within
// unsched_bytes, or, where unsched_bytes holds no second segment, two
// segments past unsched_bytes (the last granted: an IUT without GRANTs is
// unsupported then). It returns the response's length and the last
// segment's range.
func lastSegmentResponse() (respLen, from, to int) {
	GinkgoHelper()
	seg := maxSegData()
	respLen = min(unsched(1<<30), 3*seg)
	if respLen <= seg {
		need("grants")
		respLen = pastU(2 * seg)
	}
	from, to = (respLen-1)/seg*seg, respLen
	pr := params()
	if w := int(pr.GrantWindow()); respLen > unsched(respLen) && w < to-from {
		// The client grants up to the window past the bytes it has.
		Skip(fmt.Sprintf("unsupported: a grant window of %d bytes does not reach the end of a %d-byte response past its missing last segment [%d, %d) (%s)", w, respLen, from, to, widerWindow(to-from)))
	}
	return respLen, from, to
}

// rpcIn selects a packet of one of the client RPCs ids.
func rpcIn(ids []uint64) tester.Check {
	return func(x *tester.Packet) error {
		for _, id := range ids {
			if x.Pkt.SenderID()&^1 == id {
				return nil
			}
		}
		return fmt.Errorf("sender_id: want one of RPCs %v, got %d", ids, x.Pkt.SenderID())
	}
}

// after excludes a packet that came less than d after t (errEarly): one
// that may have crossed a packet the tester sent at t.
func after(t time.Time, d time.Duration) tester.Check {
	return func(x *tester.Packet) error {
		if x.At.Sub(t) < d {
			return errEarly
		}
		return nil
	}
}

// asksFor selects a RESEND whose range holds byte off.
func asksFor(off int) tester.Check {
	return func(x *tester.Packet) error {
		rs := x.Pkt.Resend()
		if int(rs.Offset()) <= off && (rs.IsResendAll() || int32(rs.Length()) < 0 || int(rs.Offset())+int(rs.Length()) > off) {
			return nil
		}
		return fmt.Errorf("range: want one holding byte %d, got [%d, +%d)", off, rs.Offset(), int32(rs.Length()))
	}
}
