package conformance

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("retransmission", func() {
	It("RESEND-gap: a request with a missing segment draws a RESEND for exactly that range after resend_ticks of silence",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-PRIO-001"), body(func() {
			requestGap(laterSegment)
		}))

	It("RESEND-gap-first: a request whose first segment is missing while later ones arrived draws a RESEND for exactly that range from offset 0 after resend_ticks of silence, not {0, -1}",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-012", "HOMA-PRIO-001"), body(func() {
			requestGap(0)
		}))

	It("RESEND-response-gap: a client missing a segment of its response RESENDs for exactly that range after resend_ticks of silence and completes the call once it is retransmitted",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-PRIO-001"), body(func() {
			responseGap(laterSegment)
		}))

	It("RESEND-response-gap-first: a client missing the first segment of its response while later ones arrived RESENDs for exactly that range from offset 0 after resend_ticks of silence, not {0, -1}, and completes the call once it is retransmitted",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-012", "HOMA-PRIO-001"), body(func() {
			responseGap(0)
		}))

	It("RESEND-answered: a RESEND for request bytes the IUT sent is answered with retransmit=1 DATA at the asked priority",
		labels("resend", "MUST", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-004", "HOMA-RESEND-010", "HOMA-WIRE-006"), body(func() {
			p := peer(0)
			r := iutCall(p, 5000, 100)
			r.receiveRequest(p)
			// The first packet's bytes: a whole segment, or up to U when
			// unsched_bytes is below one.
			seg := r.first.Pkt.Data().DataLen()
			Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.ResendFields{Common: r.control(), Offset: 0, Length: uint32(seg), Priority: 3},
				"RESEND at once (no silence) asking for priority 3")).To(Succeed())
			d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.DataOffset(0), tester.Is("retransmit", 1), tester.IPPriority(3, 3),
			}}, wait(2*params().Tick))
			ok(err, "retransmitted DATA for [0, %d)", seg)
			Expect(d.Pkt.Data().DataLen()).To(BeNumerically(">=", seg), "the retransmission covers the asked range")
			if r.msgLen > seg {
				// One byte, the first of the next packet: the range's end
				// is offset+length, so that packet is retransmitted
				// (homa_resend_data resends each packet the range overlaps).
				Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.ResendFields{Common: r.control(), Offset: uint32(seg), Length: 1, Priority: 2},
					"RESEND for one byte, the first of the second packet, asking for priority 2")).To(Succeed())
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
					tester.DataOffset(uint32(seg)), tester.Is("retransmit", 1), tester.IPPriority(2, 2),
				}}, wait(2*params().Tick))
				ok(err, "retransmitted DATA for the byte at %d", seg)
			}
			res := r.respond(p, 100, params().CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RESEND-range: a RESEND for a range of scheduled request packets the IUT sent draws exactly the packets it overlaps, each retransmit=1 with its true offset in seg.offset, at the asked priority, the top level or a lower one, and (main) incoming the range's end",
		labels("resend", "MUST", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-004", "HOMA-RESEND-016", "HOMA-RESEND-020", "HOMA-RESEND-021", "HOMA-RESEND-029", "HOMA-WIRE-006"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			// The client hears only retransmissions from the last GRANT to
			// the response: two RESENDs, each answered at once and followed
			// by a tick's window.
			quietFits(3 * window(pr.Tick))
			r := iutCall(p, pastU(8*maxSegData()), 100)
			r.receiveRequest(p)
			// The request's scheduled packets, all transmitted (the tester
			// granted the whole request): homa_resend_data retransmits each
			// one a range overlaps, and only those, every one at the
			// RESEND's priority, retransmit=1 and its offset in seg.offset.
			// Scheduled ones, since a sender that builds them with the
			// in-sequence sentinel must still write the true offset there.
			u := uint32(unsched(r.msgLen))
			sched := p.ReceivedAll(tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.Is("retransmit", 0), tester.DataOffsetIn(u, ^uint32(0)),
			}})
			slices.SortFunc(sched, func(a, b *tester.Packet) int { return cmp.Compare(a.Pkt.Data().Offset(), b.Pkt.Data().Offset()) })
			if len(sched) < 8 {
				Skip(fmt.Sprintf("unsupported: the IUT sent its request's %d scheduled bytes in %d packets, where the spec asks for ranges of eight (of at most %d bytes each, the link's max_seg_data)", r.msgLen-int(u), len(sched), maxSegData()))
			}
			at := func(i int) int { return int(sched[i].Pkt.Data().Offset()) }
			// At the top level, a range from inside one packet to the first
			// byte of the third after it, well before the transmitted end:
			// the three packets it touches, not the one after.
			top := ctrlLevel(pr)
			r.resendRange(p, sched, at(1)+1, at(3)+1, top)
			// At a lower level, a range of three whole packets ending where
			// the next begins.
			r.resendRange(p, sched, at(4), at(7), uint8(max(0, int(top)-2)))
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RESEND-gaps: a server missing two segments of a request and its granted tail asks, after resend_ticks of silence, for each gap and for the tail in a RESEND of its own, and for no byte it received",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-RESEND-012", "HOMA-RESEND-025", "HOMA-RESEND-026"), body(func() {
			needResends()
			if !onMain() {
				Skip("unsupported: before HomaModule main's be5081e (profile " + env.Profile + ") a receiver asks for one range per RESEND round")
			}
			p := peer(0)
			pr := params()
			m, sent, granted, rs := gapsRequest(p)
			// homa_request_retrans: one RESEND for each gap below recv_end,
			// then one for [recv_end, granted); none may ask for a byte
			// that arrived. In any order, and a round may repeat every
			// resend_interval; the checker judges the round's timing and
			// wholeness within a tick (HOMA-RESEND-001, -008, -026).
			want := sent.Gaps(uint32(granted))
			asked := map[byteranges.Range]uint8{} // each range's asked priority
			end := deadline(wait(2 * pr.Tick))
			for {
				x := rs.Pkt.Resend()
				got := byteranges.Range{Start: x.Offset(), End: uint32(min(uint64(x.Offset())+uint64(x.Length()), 1<<32-1))}
				if !slices.Contains(want, got) {
					why := "not one of them"
					if n := sent.Overlap(got.Start, got.End); n > 0 {
						why = fmt.Sprintf("one that asks for %d bytes the IUT received", n)
					}
					Fail(fmt.Sprintf("RESEND for %s: the request lacks %s below the granted offset %d, each asked for in a RESEND of its own (homa_request_retrans); this is %s",
						rangeText(got), rangesText(want), granted, why))
				}
				asked[got] = x.Priority()
				if len(asked) == len(want) {
					break
				}
				var err error
				rs, err = p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id}, end.Sub(env.Clock.Now()))
				ok(err, "a RESEND for each range the request lacks, %s (asked for %d of them)", rangesText(want), len(asked))
			}
			// Filled as a sender answers each RESEND (retransmit=1 at the
			// asked priority), then the rest of the request as the GRANTs
			// allow, the response and its ACK.
			for _, g := range want {
				m.resendData(p, int(g.Start), int(g.End), asked[g])
			}
			driveRequests([]*tester.Peer{p}, []msgSpec{m}, []int{granted})
			checkExchange(p)
		}))

	It("RESEND-past-sent: a RESEND at the end of what the IUT transmitted draws BUSY and lets the asked bytes out as new DATA; one straddling that end draws the sent part retransmitted and the rest as new DATA, without BUSY",
		labels("resend", "MUST", "HOMA-RESEND-002", "HOMA-RESEND-027", "HOMA-RESEND-028"), body(func() {
			need("grants")
			if !onMain() {
				Skip("unsupported: before HomaModule main's be5081e (profile " + env.Profile + ") a RESEND does not raise granted and BUSY does not depend on what was transmitted")
			}
			p := peer(0)
			pr := params()
			seg := maxSegData()
			// The client hears only BUSY from here to the GRANTs at the
			// end: a tick's pause and two exchanges.
			quietFits(pr.Tick + 2*window(pr.Tick))
			r := iutCall(p, pastU(6*seg), 100)
			got, sent := r.receiveUnsched(p)
			newData := func(from int, what string) {
				GinkgoHelper()
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
					tester.DataOffset(uint32(from)), tester.Is("retransmit", 0),
				}}, wait(pr.ResponseTimeout+pr.Tick))
				ok(err, "new DATA at offset %d, %s", from, what)
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
				sent = max(sent, int(d.Pkt.Data().Offset())+d.Pkt.Data().DataLen())
			}
			// Straddling the end: the last transmitted byte is
			// retransmitted, the next goes out new (homa_resend_pkt raises
			// granted to the RESEND's end), and there is no BUSY (the
			// checker judges that: HOMA-RESEND-027). Its bytes are ones no
			// RESEND asked for before.
			end := sent
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: uint32(end - 1), Length: 2, Priority: ctrlLevel(pr)},
				"RESEND for the last transmitted byte and the first not transmitted")).To(Succeed())
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.DataOffsetIn(0, uint32(end-1)), tester.Is("retransmit", 1),
			}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "retransmitted DATA holding byte %d", end-1)
			newData(end, "the second byte the straddling RESEND asked for")
			// At the end: nothing to retransmit, so BUSY (offset >= tx_end
			// in homa_resend_pkt), and the bytes asked for count as
			// granted. A tick later, so that the RESENDs are not one round.
			// A sender whose skbs hold several segments (max_gso_size) may
			// have sent more of that skb than has arrived yet: then the
			// RESEND asks for bytes it sent, and their retransmission
			// answers it instead.
			pause(deadline(pr.Tick), "waiting a tick between the RESENDs")
			end = sent
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: uint32(end), Length: uint32(seg), Priority: ctrlLevel(pr)},
				"RESEND starting where the IUT's transmission stopped, as far as has arrived")).To(Succeed())
			x, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: r.id, Checks: []tester.Check{busyOrResent(uint32(end))}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "BUSY for a RESEND at offset %d, the end of what the IUT had transmitted", end)
			if x.Pkt.Type() == wire.TypeBusy {
				newData(end, "which the RESEND at the transmitted end asked for")
			} else {
				got.Add(x.Pkt.Data().Offset(), x.Pkt.Data().Offset()+uint32(x.Pkt.Data().DataLen()))
				sent = max(sent, int(x.Pkt.Data().Offset())+x.Pkt.Data().DataLen())
			}
			r.receiveRest(p, got, sent, env.Clock.Now())
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RESEND-unsent: a RESEND for granted request bytes the IUT has not yet transmitted draws BUSY, not a retransmission of bytes never sent, and those bytes then go out once, as first transmissions (retransmit=0)",
		labels("resend", "MUST", "HOMA-RESEND-011", "HOMA-RESEND-010", "HOMA-RESEND-015"), body(func() {
			need("grants")
			if !onMain() {
				Skip("unsupported: before HomaModule main's be5081e (profile " + env.Profile + ") a RESEND may retransmit granted bytes not yet sent (b5c39f0)")
			}
			p := peer(0)
			pr := params()
			seg := maxSegData()
			r := iutCall(p, pastU(40*seg), 100)
			got, sent := r.receiveUnsched(p)
			// A grant window's worth at once, and in the same instant a
			// RESEND for its last segment: the IUT's pacer lets only a
			// few packets of a GRANT go at once (HomaModule
			// max_nic_est_backlog_usecs; the simulator's 10 Gbit/s link
			// takes about 1.2 µs a packet), so the asked bytes lie past
			// tx_end and homa_resend_pkt answers BUSY (offset >= tx_end)
			// and retransmits nothing: a retransmission may carry only
			// bytes sent before. An IUT that had sent them by then (a
			// faster link, or a tester held up between the two) answers
			// with their retransmission instead, which is as right.
			granted := testerGrant(r.msgLen, int(got.Total()))
			if granted-sent < 8*seg {
				Skip(fmt.Sprintf("unsupported: a grant window of %d bytes lets too little out at once for a RESEND past what the pacer sends (%s)", pr.GrantWindow(), widerWindow(8*seg+1)))
			}
			from := granted - seg
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.GrantFields{Common: r.control(), Offset: uint32(granted)})).To(Succeed())
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: uint32(from), Length: uint32(granted - from), Priority: ctrlLevel(pr)},
				"RESEND at once (no silence) for the last segment just granted, not yet arrived")).To(Succeed())
			_, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: r.id, Checks: []tester.Check{busyOrResentIn(uint32(from), uint32(granted))}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "BUSY (or a retransmission, once sent) for a RESEND for bytes [%d, %d) just granted", from, granted)
			r.receiveRest(p, got, granted, env.Clock.Now())
			// As the IUT sent them: each byte once with retransmit=0
			// (homa_xmit_data moves next_xmit_offset forward only), and
			// retransmit=1 only for bytes sent before (homa_resend_data
			// walks only the packets already transmitted).
			var first byteranges.Set
			for _, d := range p.ReceivedAll(tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}) {
				dd := d.Pkt.Data()
				a, b := dd.Offset(), dd.Offset()+uint32(dd.DataLen())
				if dd.Retransmit() != 0 {
					Expect(first.Covers(a, b)).To(BeTrue(), "DATA [%d, %d) retransmitted (retransmit=1) before those bytes were first sent: a RESEND draws only bytes already transmitted (homa_resend_pkt; BUSY for the rest)", a, b)
					continue
				}
				Expect(first.Overlap(a, b)).To(BeZero(), "DATA [%d, %d) sent twice with retransmit=0", a, b)
				first.Add(a, b)
			}
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RESEND-wakeup: a buffer-wakeup RESEND {0, -1} draws what the IUT transmitted again (retransmit=1) and no byte past it: asking for everything grants nothing",
		labels("resend", "MUST", "HOMA-GRANT-005", "HOMA-RESEND-016"), body(func() {
			resendAll(0)
		}))

	It("RESEND-all-sent: a RESEND {0, -1} after the IUT transmitted granted bytes past unsched_bytes draws every byte it transmitted again (retransmit=1), the scheduled ones too, and no byte past them",
		labels("resend", "MUST", "HOMA-GRANT-005", "HOMA-RESEND-016", "HOMA-RESEND-021"), body(func() {
			resendAll(3 * maxSegData())
		}))

	It("RESEND-gap-duplicates: duplicate DATA keeps a receiver missing a segment from RESENDing (any DATA resets its silence), and it asks resend_ticks after the duplicates stop",
		labels("resend", "MUST", "HOMA-RESEND-001"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			m, from, to := gapRequest(p, laterSegment)
			// The first packet again every tick, past resend_ticks and a
			// round more: homa_dispatch_pkts zeroes silent_ticks for every
			// DATA, new bytes or not. The checker judges any RESEND against
			// the latest duplicate (HOMA-RESEND-001).
			dup := m
			dup.deliberate = "a copy of the first packet, as a network that duplicates packets delivers"
			for i := 0; i < pr.ResendTicks+pr.ResendInterval+2; i++ {
				pause(deadline(pr.Tick), "waiting a tick between duplicates")
				dup.sendUnsched(p, 0, min(maxSegData(), unsched(m.msgLen)))
			}
			r, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id, Checks: []tester.Check{
				tester.Is("offset", uint64(from)), tester.Is("length", uint64(to-from)),
			}}, wait(pr.Ticks(pr.ResendTicks+2)))
			ok(err, "a RESEND for the missing segment [%d, %d) once the duplicates stopped", from, to)
			m.fillGap(p, r, from, to)
			checkExchange(p)
		}))

	It("RESEND-response-gap-duplicates: duplicate response DATA keeps a client missing a segment from timing out (any DATA resets its silence) for longer than timeout_ticks; it asks for the segment resend_ticks after the duplicates stop and completes the call once it is retransmitted",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-009"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			hold := holdTicks()
			respLen, from, to := gapResponse(unsched(1<<30)/2, laterSegment)
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			r.sendResponseBut(p, respLen, from, to)
			// The response's first packet again every tick, for half as
			// long again as timeout_ticks: homa_dispatch_pkts zeroes the
			// client's silent_ticks for every DATA, new bytes or not, so
			// its timer, which counts them while granted bytes are
			// missing (homa_timer_check_rpc), reaches neither
			// resend_ticks nor timeout_ticks while they come. The checker
			// judges any RESEND against the latest duplicate
			// (HOMA-RESEND-001); the tester does not answer one.
			u := unsched(respLen)
			lvl := unschedLevel(pr, respLen)
			for i := 0; i < hold; i++ {
				pause(deadline(pr.Tick), "waiting a tick between duplicates")
				Expect(r.responseData(p, respLen, 0, min(maxSegData(), u), u, pr.CutoffVersion, false, func(f wire.Fields) error {
					return p.SendDeliberate(iut(), lvl, f, "a copy of the response's first packet, as a network that duplicates packets delivers")
				})).To(Succeed())
			}
			stop := p.Now()
			// Only a tester held up for most of timeout_ticks (its
			// duplicates came a tick apart) leaves the client silent that
			// long (failedAfter).
			var res CallResult
			if r.poll(&res) {
				r.failedAfter(res, fmt.Sprintf("%d duplicates of its response's first packet came a tick apart", hold))
				return
			}
			// A RESEND during the duplicates is the checker's business.
			rs := r.gapResend(p, from, to, " once the duplicates stopped", func(x *tester.Packet) error {
				if x.At.Before(stop) {
					return errEarly
				}
				return nil
			})
			r.resendResponse(p, respLen, from, to, rs.Pkt.Resend().Priority())
			res = r.wait()
			if r.failedAfter(res, "duplicates of its response's first packet, then the missing segment") {
				return
			}
			Expect(res.Response).To(Equal(respLen))
			checkExchange(p)
		}))

	It("RESEND-response-answered: a RESEND for response bytes the IUT sent as a server is answered with retransmit=1 DATA at the asked priority",
		labels("resend", "MUST", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-004", "HOMA-RESEND-010", "HOMA-WIRE-006"), body(func() {
			p := peer(0)
			// Unscheduled, so that no GRANT is needed.
			respLen := unsched(5000)
			m := newRequest(100, respLen)
			m.sendUnsched(p, 0, m.msgLen)
			var got byteranges.Set
			seg := 0 // the first packet's bytes
			for !got.Covers(0, uint32(respLen)) {
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
				ok(err, "the response: have %d of %d bytes", got.Total(), respLen)
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
				if d.Pkt.Data().Offset() == 0 {
					seg = d.Pkt.Data().DataLen()
				}
			}
			Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.ResendFields{Common: m.control(),
				Offset: 0, Length: uint32(seg), Priority: 3}, "RESEND at once (no silence) for response bytes, asking for priority 3")).To(Succeed())
			d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id, Checks: []tester.Check{
				tester.DataOffset(0), tester.Is("retransmit", 1), tester.IPPriority(3, 3),
			}}, wait(2*params().Tick))
			ok(err, "retransmitted response DATA for [0, %d)", seg)
			Expect(d.Pkt.Data().DataLen()).To(BeNumerically(">=", seg), "the retransmission covers the asked range")
			m.ack(p)
			checkExchange(p)
		}))

	It("RESEND-busy: a RESEND to a server still receiving the request is answered with BUSY",
		labels("resend", "SHOULD", "HOMA-RESEND-002", "HOMA-RESEND-005"), body(func() {
			p := peer(0)
			m := newRequest(partLen(2), 100)
			sent := m.sendPart(p, 2)
			// Same IP priority as the DATA: a strict-priority switch would
			// let a level-7 RESEND overtake the DATA still queued.
			Expect(p.SendDeliberate(iut(), m.unschedPrio(), &wire.ResendFields{Common: m.control(),
				Offset: 0, Length: 1000, Priority: ctrlLevel(params())}, "RESEND from a client still sending its request, at its DATA's level")).To(Succeed())
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeBusy, From: iut(), RPC: m.id,
				Checks: []tester.Check{tester.Is("sport", uint64(ServerPort)), tester.Is("dport", uint64(m.sport))}}, wait(2*params().Tick))
			ok(err, "BUSY from the server that has not got the whole request")
			m.finishPart(p, sent)
			checkExchange(p)
		}))

	It("RESEND-busy-held: a server that answered BUSY (at the top level, though the RESEND asked for level 0) still holds the RPC: a RESEND a few ticks later gets BUSY again, not RPC_UNKNOWN, while it goes on serving another client's RPC",
		labels("resend", "MUST", "HOMA-RESEND-019", "HOMA-RESEND-002", "HOMA-PRIO-001"), body(func() {
			needResends()
			if pr := params(); pr.RequestAckTicks > maxHoldTicks {
				Skip(fmt.Sprintf("unsupported: request_ack_ticks %d: waiting for the witness RPC's NEED_ACK is beyond the suite's bound of %d ticks", pr.RequestAckTicks, maxHoldTicks))
			}
			p, q := peer(0), peer(1)
			// Past twice the checker's slack (from the capture point to
			// the server and back), so that the capture can tell the order
			// of the two RPCs' packets at the server.
			gap := 2*max(params().Slack, env.Slack) + params().Tick
			m := newRequest(partLen(2), 100) // first: unsupported starts no witness
			// The witness: q's short RPC, answered and left unacknowledged,
			// so that the server keeps sending NEED_ACK for it.
			y := newRequest(100, 100)
			y.sendUnsched(q, 0, y.msgLen)
			_, err := q.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: y.id}, wait(20*time.Millisecond))
			ok(err, "the response to the other client's RPC")
			Expect(q.ExpectNone(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: y.id}, window(gap))).To(Succeed())
			m.sendPart(p, 2)
			// The first RESEND asks for level 0: the BUSY answering it
			// still goes at the top level (__homa_xmit_control sends every
			// control packet at num_priorities-1), not at the level asked.
			top := ctrlLevel(params())
			resend := func(what string, ask uint8) error {
				Expect(p.SendDeliberate(iut(), m.unschedPrio(), &wire.ResendFields{Common: m.control(),
					Offset: 0, Length: 1000, Priority: ask}, what)).To(Succeed())
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeBusy, From: iut(), RPC: m.id,
					Checks: []tester.Check{tester.IPPriority(top, top)}}, wait(2*params().Tick))
				return err
			}
			ok(resend("RESEND from a client still sending its request, asking for level 0", 0), "BUSY at the top level from the server that has not got the whole request")
			Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: m.id}, window(gap))).To(Succeed())
			again := resend("the same RESEND again", top)
			// The server still serves the other RPC; the checker then
			// judges an RPC_UNKNOWN for this one (HOMA-RESEND-019).
			Expect(q.ExpectNone(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: y.id}, window(gap))).To(Succeed())
			_, err = q.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: y.id}, wait(time.Duration(params().RequestAckTicks+2)*params().Tick))
			ok(err, "NEED_ACK for the other client's RPC")
			checkExchange(p, q)
			y.ack(q)
			if again != nil {
				// No BUSY: the checker took the RPC_UNKNOWN as legal (the
				// RPC timed out: this machine held the tester up for
				// timeout_ticks) or as inconclusive (a measured stall).
				// Neither: the IUT, kept from running, may not have
				// answered within the BUSY's window (missedDuringStall).
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: m.id}, wait(0))
				if err != nil && missedDuringStall(fmt.Sprintf("BUSY or RPC_UNKNOWN answering the second RESEND: %v", again), again) {
					panic(stalledOut{})
				}
				if err != nil {
					// Asked at the end of the exchange (its "within 1µs"
					// read as the whole wait).
					err = fmt.Errorf("no RPC_UNKNOWN from %v for RPC %d either, by the end of the exchange", iut(), m.id)
				}
				ok(err, "BUSY or RPC_UNKNOWN answering the second RESEND (%v)", again)
				return
			}
			// The client gives the request up: told RPC_UNKNOWN (the
			// answer to the server's next RESEND), the server discards it
			// (homa_rpc_unknown_pkt). Completing it instead could outlast
			// timeout_ticks of the client's silence on a machine whose
			// measured slack stretches the waits above.
			forget(p, m.control())
		}))

	It("RESEND-busy-alive: a client whose server answers each of its RESENDs with BUSY for longer than timeout_ticks keeps the RPC and completes the call when the response comes",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-009"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			hold := pr.Ticks(holdTicks()) // before the call: an unsupported spec leaves no RPC behind
			r := iutCall(p, 100, 100)
			r.receiveRequest(p)
			// A server whose application takes long to reply answers the
			// client's RESENDs with BUSY (homa_resend_pkt), and a BUSY
			// resets the client's silent_ticks as DATA and GRANT do
			// (homa_dispatch_pkts): the client never reaches timeout_ticks
			// however long the reply takes. Held for half as long again as
			// timeout_ticks, so that a client counting only its silence
			// since the request times out well inside it.
			busy := r.busyFor(p, hold)
			res := r.respond(p, 100, pr.CutoffVersion)
			if r.failedDespiteBusy(res, busy, hold) {
				return
			}
			Expect(res.Response).To(Equal(100))
			checkExchange(p)
		}))

	It("RESEND-busy-alive-response-begun: a client whose server, after the first packet of its response, answers each of its RESENDs with BUSY for longer than timeout_ticks keeps the RPC and completes the call when the rest comes",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-009"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			hold := pr.Ticks(holdTicks())
			respLen := multiPacketResponse()
			u := unsched(respLen)
			first := min(maxSegData(), u)
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			// One packet of the response, then BUSY for every RESEND: a
			// server whose response is held up (its pacer, or a NIC
			// queue) answers a RESEND for bytes it has not transmitted
			// with BUSY (homa_resend_pkt: offset at or past tx_end). The
			// client's RPC is now RPC_INCOMING, missing bytes it
			// granted, so its timer counts silent ticks and RESENDs
			// (homa_timer_check_rpc), and each BUSY zeroes them again as
			// in every other state (homa_dispatch_pkts): the call lives
			// however long the rest takes.
			r.sendResponse(p, respLen, 0, first, u, unschedLevel(pr, respLen), pr.CutoffVersion, false)
			busy := r.busyFor(p, hold)
			// The rest: the unscheduled bytes, then what the client's
			// GRANTs (those that came during the hold first) allow.
			send := func(a, b int, prio uint8) {
				r.sendResponse(p, respLen, a, b, u, prio, pr.CutoffVersion, false)
			}
			send(first, u, unschedLevel(pr, respLen))
			sendGrantedBut(p, r.id, u, respLen, 0, 0, send)
			res := r.wait()
			if r.failedDespiteBusy(res, busy, hold) {
				return
			}
			Expect(res.Response).To(Equal(respLen))
			checkExchange(p)
		}))

	It("RESEND-busy-alive-server: a server missing part of a request whose client answers each of its RESENDs with BUSY for longer than timeout_ticks keeps the RPC: it goes on asking, and serves the request once the rest comes",
		labels("resend", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-014", "HOMA-RESEND-019"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			hold := pr.Ticks(holdTicks()) // before the request: an unsupported spec leaves no RPC behind
			m := newRequest(partLen(1), 100)
			sent := m.sendPart(p, 1)
			// The server lacks bytes the request's incoming (or its own
			// GRANTs, past unsched_bytes) covers, so its timer counts
			// silent ticks and RESENDs for them
			// (homa_timer_check_rpc). A client that has not transmitted
			// those bytes yet (its NIC queue or pacer holds them) answers
			// with BUSY (homa_resend_pkt: the offset at or past tx_end),
			// and a BUSY zeroes the server RPC's silent_ticks as DATA does
			// (homa_dispatch_pkts, for either role): the server never
			// reaches timeout_ticks while the BUSYs come. Held for half as
			// long again as timeout_ticks, so that a server counting only
			// its silence since the last DATA times out well inside it.
			busy := busyWhile(p, m.id, m.control(), hold)
			// A server that still holds the RPC asks again resend_ticks
			// after the last BUSY; one that forgot it is silent.
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id}, wait(pr.Ticks(pr.ResendTicks+2)))
			if err != nil {
				ok(ctx().Err(), "waiting for the server's RESEND")
				msg := fmt.Sprintf("no RESEND from the server %v after the request's last DATA, though the client answered its %d RESENDs with BUSY for %v (timeout_ticks %d of %v): it forgot the RPC, or stopped asking for the request bytes it lacks (a BUSY resets silent_ticks: homa_dispatch_pkts)",
					p.Now().Sub(lastSent(p, wire.TypeData, m.id, p.Now())), busy, hold, pr.TimeoutTicks, pr.Tick)
				// Only a tester held up for most of timeout_ticks (its
				// BUSYs came every resend_ticks) left the server silent
				// that long (rpcGaveUpDuringStall: that silence, not
				// stalls anywhere in the hold); or the IUT, kept from
				// running, RESENDs late (missedDuringStall: the RESEND
				// still comes).
				if !rpcGaveUpDuringStall(msg, []uint64{m.id &^ 1}, true) && !missedDuringStall(msg, err) {
					Fail(msg)
				}
				m.giveUp(p, "the server went silent after a measured stall")
				return
			}
			// The rest of the request, answering that RESEND, then the
			// response and its ACK.
			m.finishPart(p, sent)
			checkExchange(p)
		}))

	It("RESEND-busy-alive-app: a server whose application takes half as long again as timeout_ticks to reply keeps the RPC: it answers the client's RESENDs with BUSY meanwhile and sends the response once the application replies",
		labels("resend", "MUST", "HOMA-RESEND-015", "HOMA-RESEND-019"), needs(agent.CapReplyDelay), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			hold := pr.Ticks(holdTicks()) // before the request: an unsupported spec leaves no RPC behind
			port, err := env.listenPort(ctx(), agent.ListenOptions{ReplyDelay: hold})
			ok(err, "a server port whose application replies after %v", hold)
			// A request the client sends whole unscheduled: at unsched_bytes
			// below 12 one too short for the payload header, answered with
			// as many bytes.
			n := unsched(100)
			m := newRequest(n, map[bool]int{true: 100, false: n}[n >= agent.PayloadHeaderLen])
			m.port = port
			m.sendUnsched(p, 0, m.msgLen)
			sentAt := p.Now()
			// The whole request came, so the server's timer counts no
			// silence for the RPC while its application works
			// (homa_timer_check_rpc returns for a server RPC past
			// RPC_INCOMING), however long that takes; a client that hears
			// nothing RESENDs {0, -1} every resend_ticks, and the server,
			// holding the RPC without a response, answers BUSY
			// (homa_resend_pkt), which keeps the client's RPC alive
			// (homa_dispatch_pkts). A server that forgot the RPC answers
			// RPC_UNKNOWN (HOMA-RESEND-019 judges that from the capture).
			busy := 0
			var answer *tester.Packet
			for answer == nil && p.Now().Before(sentAt.Add(hold-pr.Ticks(pr.ResendTicks))) {
				pause(deadline(pr.Ticks(pr.ResendTicks)), "the client's silence before its RESEND")
				Expect(p.Send(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(), Offset: 0, Length: wire.ResendAll, Priority: ctrlLevel(pr)})).To(Succeed())
				// Any packet of the RPC: BUSY, or RPC_UNKNOWN, or the
				// response come early (the checker judges which is legal).
				x, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id}, wait(pr.ResponseTimeout))
				ok(err, "the server's answer to RESEND %d {0, -1}, %v after the request, while its application works", busy+1, p.Now().Sub(sentAt))
				if x.Pkt.Type() != wire.TypeBusy {
					answer = x
					break
				}
				busy++
			}
			for answer == nil || answer.Pkt.Type() == wire.TypeBusy {
				answer, err = p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id}, wait(hold))
				ok(err, "the response, from a server whose application replies %v after the request (%v ago)", hold, p.Now().Sub(sentAt))
			}
			AddReportEntry("note", fmt.Sprintf("%d BUSYs answered the client's RESENDs while the application held the reply for %v; then %s", busy, hold, answer))
			if answer.Pkt.Type() == wire.TypeData {
				m.receiveResponse(p)
				m.ack(p)
			}
			checkExchange(p)
			if answer.Pkt.Type() != wire.TypeData {
				Fail(fmt.Sprintf("the server answered %s %v after the request, not the response: it forgot an RPC whose application was still working on it (homa_timer_check_rpc counts no silence for a server RPC whose request came whole)", answer, answer.At.Sub(sentAt)))
			}
		}))

	It("RESEND-timeout: a client whose server stays silent after the request asks with RESENDs and fails the call with a timeout, not before timeout_ticks ticks of silence",
		labels("resend", "MUST", "HOMA-RESEND-014", "HOMA-RESEND-009"), body(func() {
			waitsTimeout()
			p := peer(0)
			pr := params()
			r := iutCall(p, 100, 100)
			// The tester sends nothing for the RPC: no DATA, GRANT or BUSY
			// resets the client's silent_ticks (homa_dispatch_pkts), and its
			// request went out whole, so every timer pass counts one: its
			// RESEND rounds, then the pass that reaches timeout_ticks
			// aborts the RPC with ETIMEDOUT (homa_timer_check_rpc; facts
			// RTX-10). The first pass comes up to a tick after the RPC
			// began and passes do not come faster than a tick, so the
			// abort is at least timeout_ticks-1 ticks after the call; one
			// tick more of tolerance (RTX-10's ±2) for the IUT's tick
			// boundary.
			silentRounds(p, r.id, r.first.At)
			res := r.wait()
			wantTimedOut(res, "the server says nothing for timeout_ticks")
			early := time.Duration(pr.TimeoutTicks-2) * pr.Tick
			Expect(res.Latency).To(BeNumerically(">=", early),
				"the IUT gave the call up %v after it began; timeout_ticks %d of %v: not before %v", res.Latency, pr.TimeoutTicks, pr.Tick, early)
			if late := timeoutLate(pr); res.Latency > late {
				msg := fmt.Sprintf("the IUT gave the call up %v after it began; timeout_ticks %d of %v, stretched by timer_drift %g, allow %v", res.Latency, pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
				timedOutLate(msg, res.Latency, late, p.Now().Add(-res.Latency-env.Slack), p.Now())
			}
			afterTimeout(p, r.id)
			checkExchange(p)
		}))

	It("RESEND-timeout-response-begun: a client whose server goes silent after the first packet of its response asks for the rest with RESENDs and fails the call with a timeout, within timeout_ticks ticks of silence",
		labels("resend", "MUST", "HOMA-RESEND-014", "HOMA-RESEND-009"), body(func() {
			waitsTimeout()
			p := peer(0)
			pr := params()
			seg := maxSegData()
			respLen := multiPacketResponse()
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			// One packet of the response, then nothing: the client's RPC
			// is RPC_INCOMING with granted bytes missing, so its timer
			// counts silent ticks as for a request (homa_timer_check_rpc:
			// only a receiver holding every byte it granted waits
			// forever), RESENDs for them, and aborts the RPC at
			// timeout_ticks: a response that has begun does not keep a
			// call alive.
			// A tester held up before it sent that packet may have drawn a
			// RESEND {0, -1} from the silence before it (the request's):
			// the rounds counted are those of this silence, which came
			// after it.
			sent := p.Now()
			inSilence := after(sent, 0)
			r.sendResponse(p, respLen, 0, min(seg, respLen), unsched(respLen), unschedLevel(pr, respLen), pr.CutoffVersion, false)
			silentRounds(p, r.id, sent, inSilence)
			res := r.wait()
			wantTimedOut(res, "the server says nothing for timeout_ticks after the response began")
			// Not much after timeout_ticks of silence, unless a measured
			// stall explains it (measured here from the response's first
			// packet, on the tester's clock: wait's bound).
			if late, gone := timeoutLate(pr), p.Now().Sub(sent); gone > wait(late) {
				msg := fmt.Sprintf("the IUT gave the call up %v after the response's first packet; timeout_ticks %d of %v, stretched by timer_drift %g, allow %v", gone, pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
				timedOutLate(msg, gone, late, sent, p.Now())
			}
			afterTimeout(p, r.id, inSilence)
			checkExchange(p)
		}))

	It("RESEND-timeout-need-ack: a client whose server, after the first packet of its response, sends only NEED_ACKs (a tick apart) fails the call with a timeout within timeout_ticks ticks of silence: a NEED_ACK is no sign of life",
		labels("resend", "MUST", "HOMA-RESEND-014", "HOMA-RESEND-009", "HOMA-ACK-009", "HOMA-ACK-012"), body(func() {
			waitsTimeout()
			need("need-ack")
			pr := params()
			if pr.RequestAckTicks >= pr.TimeoutTicks-2 {
				Skip(fmt.Sprintf("unsupported: request_ack_ticks %d: a server's NEED_ACKs would begin only after the client's timeout_ticks %d (less RTX-10's two ticks)", pr.RequestAckTicks, pr.TimeoutTicks))
			}
			p := peer(0)
			respLen := multiPacketResponse()
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			// One packet of the response, and the rest lost on the way:
			// the server believes it sent the whole response, so its timer
			// asks for the ACK request_ack_ticks later and on every pass
			// after (homa_timer_check_rpc), a tick or more apart
			// (HOMA-ACK-006). The client, missing granted bytes, answers
			// each NEED_ACK with RESENDs, not an ACK (homa_need_ack_pkt;
			// the checker judges that), which the tester leaves
			// unanswered. Only DATA, GRANT and BUSY zero silent_ticks
			// (homa_dispatch_pkts), so the client's timer counts on
			// through the NEED_ACKs and aborts the RPC at timeout_ticks
			// (homa_timer_check_rpc), as in RESEND-timeout-response-begun.
			sent := p.Now()
			r.sendResponse(p, respLen, 0, min(maxSegData(), respLen), unsched(respLen), unschedLevel(pr, respLen), pr.CutoffVersion, false)
			pause(sent.Add(pr.Ticks(pr.RequestAckTicks)), "waiting request_ack_ticks before NEED_ACK")
			late := timeoutLate(pr)
			end := sent.Add(wait(late))
			var res CallResult
			asked := 0
			// endedBy sends a NEED_ACK every tick, polling the call, until
			// it ends (true) or by has passed (false).
			endedBy := func(by time.Time) (bool, error) {
				for {
					Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.NeedAckFields{Common: r.control()},
						"NEED_ACK for a response whose packets after the first were lost on the way (the server believes it sent it whole)")).To(Succeed())
					asked++
					done, err := env.Clock.Wait(ctx(), deadline(pr.Tick), func() bool { return r.poll(&res) })
					ok(err, "sending NEED_ACK every tick")
					if done {
						return true, nil
					}
					if !env.Clock.Now().Before(by) {
						return false, nil
					}
				}
			}
			held := func() string {
				return fmt.Sprintf("the IUT still holds the call %v after the response's first packet, its server having sent nothing for it since but %d NEED_ACKs: timeout_ticks %d of %v, stretched by timer_drift %g, allow %v (a NEED_ACK does not reset silent_ticks: homa_dispatch_pkts)",
					p.Now().Sub(sent), asked, pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
			}
			if done, _ := endedBy(end); !done {
				endedLate(sent, end, late, endedBy, held, func(gone time.Duration) string {
					return fmt.Sprintf("the IUT gave the call up %v after the response's first packet, its server having sent nothing for it since but %d NEED_ACKs; timeout_ticks %d of %v, stretched by timer_drift %g, allow %v", gone, asked, pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
				})
			}
			r.ended = true
			wantTimedOut(res, "the server sends only NEED_ACKs for timeout_ticks after the response began")
			// Two resend_interval more, in which the checker fails a timer
			// RESEND after timeout_ticks of silence (HOMA-RESEND-009).
			pause(deadline(window(pr.Ticks(2*pr.ResendInterval))), "waiting two resend_interval after the timeout")
			checkExchange(p)
		}))

	It("RESEND-timeout-one: a client whose RPC times out keeps its other RPCs with the same server: one the server keeps alive with BUSY outlives the other's timeout and completes when its response comes",
		labels("resend", "MUST", "HOMA-RESEND-009", "HOMA-RESEND-014", "HOMA-RESEND-001"), body(func() {
			waitsTimeout()
			needResends()
			p := peer(0)
			pr := params()
			// Two calls to one server: A, which the tester leaves silent
			// once it has the request, and B, whose RESENDs it answers
			// with BUSY (a server whose application is slow). Each RPC
			// counts its own silent_ticks (homa_dispatch_pkts zeroes the
			// count of the packet's RPC only) and homa_timer_check_rpc
			// aborts the RPC whose count reaches timeout_ticks, that one
			// alone (homa_rpc_abort; facts RTX-10): a timeout is no
			// verdict on the peer, whose other RPCs live on.
			a := iutCall(p, 100, 100)
			b := iutCall(p, 200, 100)
			a.receiveRequest(p)
			b.receiveRequest(p)
			start := p.Now()
			resA, busy := b.busyUntilEnded(p, a, timeoutLate(pr))
			wantTimedOut(resA, "the server says nothing for the call for timeout_ticks")
			// B's BUSYs came every resend_ticks, so it is alive: the rest
			// of the response completes it. A client that gave B up with A
			// (its peer declared dead) has failed the call.
			res := b.respond(p, 100, pr.CutoffVersion)
			if b.failedAfter(res, fmt.Sprintf("its server answered %d RESENDs for it with BUSY over %v, leaving only RPC %d silent, which timed out (%s): a timeout ends the silent RPC alone (homa_timer_check_rpc)", busy, p.Now().Sub(start), a.id, resA.Err)) {
				return
			}
			Expect(res.Response).To(Equal(100))
			checkExchange(p)
		}))

	It("RESEND-server-timeout: a server missing part of a request asks for it every resend_interval ticks while the client stays silent, until timeout_ticks ticks of silence, then forgets the RPC",
		labels("resend", "MUST", "HOMA-RESEND-014", "HOMA-RESEND-009", "HOMA-RESEND-008"), body(func() {
			waitsTimeout()
			p := peer(0)
			pr := params()
			m, from, to := gapRequest(p, laterSegment)
			sent := p.Now()
			// The request is incomplete, so its application cannot have it
			// and nothing but the timer ends the RPC.
			silentRounds(p, m.id, sent, tester.Is("offset", uint64(from)), tester.Is("length", uint64(to-from)))
			// Near the timeout the server still holds the RPC: a RESEND
			// for it timeout_ticks-3 ticks into the silence draws BUSY
			// (the request is incomplete: homa_resend_pkt), not
			// RPC_UNKNOWN (RTX-10 allows an abort up to two ticks early).
			// A RESEND resets no silent_ticks. Judged here in virtual
			// time, where a tick is exact; in real time the checker
			// judges the answer (HOMA-RESEND-019, with its stall excuses).
			if probe := sent.Add(pr.Ticks(pr.TimeoutTicks - 3)); pr.TimeoutTicks > 3 && env.Clock.Now().Before(probe) {
				pause(probe, "waiting until timeout_ticks-3 ticks of silence")
				at := p.Now()
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(),
					Offset: 0, Length: 100, Priority: ctrlLevel(pr)}, "RESEND probing a server timeout_ticks-3 ticks into the silence")).To(Succeed())
				a, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id, Checks: []tester.Check{oneOfTypes(wire.TypeBusy, wire.TypeRPCUnknown)}}, wait(pr.Tick))
				ok(err, "BUSY (or RPC_UNKNOWN) for a RESEND timeout_ticks-3 ticks into the silence")
				if env.Virtual && a.Pkt.Type() != wire.TypeBusy {
					// Unless the tester was held up past the tick it meant
					// to probe at (the simulator's hold-ups, recorded):
					// the probe a tick or more late, and the testers'
					// stalls since the probe was due lost that lateness
					// (offSchedule's reading; an IUT freeze sends no probe
					// late, and any stall overlapping it excused it
					// before).
					msg := fmt.Sprintf("RPC_UNKNOWN for a RESEND %v into the client's silence (timeout_ticks %d of %v): the server forgot the RPC before timeout_ticks-2 ticks", at.Sub(sent), pr.TimeoutTicks, pr.Tick)
					if at.Sub(probe) < pr.Tick || !stalledAtLeastOf(msg, probe, at, at.Sub(probe), ofTesters) {
						Fail(msg)
					}
				}
			}
			// Then the RPC is gone: the exchange runs a round past the
			// timeout (stretched by timer_drift), in which the checker
			// fails a RESEND after timeout_ticks of silence
			// (HOMA-RESEND-009; with its stall excuses, which a window
			// here would lack).
			past := time.Duration(float64(pr.Ticks(pr.TimeoutTicks))*(1+pr.TimerDrift)) + pr.Ticks(pr.ResendInterval+1)
			pause(sent.Add(window(past)), "waiting a round past timeout_ticks")
			roundsAtMost(p, m.id, tester.Is("offset", uint64(from)), tester.Is("length", uint64(to-from)))
			// And the server has forgotten it: a RESEND for it (asking for
			// response bytes, as its client may) draws RPC_UNKNOWN, where
			// a server still holding it answers BUSY (homa_resend_pkt). A
			// RESEND resets no silent_ticks, so a late timer still ends
			// the RPC: asked again each resend_interval, within wait's
			// generous bound.
			give, asked := deadline(wait(pr.Ticks(pr.TimeoutTicks))), env.Clock.Now()
			// unknownBy asks again each resend_interval until RPC_UNKNOWN
			// comes or by has passed.
			unknownBy := func(by time.Time) (bool, error) {
				for {
					Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(),
						Offset: 0, Length: 100, Priority: ctrlLevel(pr)}, "RESEND to a server that timed the RPC out")).To(Succeed())
					if u, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: m.id}, pr.Ticks(pr.ResendInterval)); u != nil {
						return true, nil
					}
					if err := ctx().Err(); err != nil || !env.Clock.Now().Before(by) {
						return false, err
					}
				}
			}
			forgot, err := unknownBy(give)
			ok(err, "asking for RPC_UNKNOWN")
			if now := env.Clock.Now(); !forgot {
				msg := fmt.Sprintf("the server still holds the RPC %v after the request's DATA (no RPC_UNKNOWN for a RESEND; timeout_ticks %d of %v)", now.Sub(sent), pr.TimeoutTicks, pr.Tick)
				// Unless the IUT was kept from running for the time
				// past timeout_ticks (its timer counts passes, and a
				// stall makes one pass of the ticks it spans), or for a
				// quarter of the time it was asked (it could not answer),
				// and it forgot the RPC late, asked on within the stalls'
				// loss since the request (lateWithinStalls): a server
				// that never forgets it fails.
				if lateWithinStalls(sent, now, unknownBy) &&
					(stalledAtLeast(msg, sent, now, now.Sub(sent)-pr.Ticks(pr.TimeoutTicks)) || stalledLongest(msg, asked, now, now.Sub(asked)/4)) {
					panic(stalledOut{})
				}
				Fail(msg)
			}
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-response-begun: a client whose response has begun to arrive ignores RPC_UNKNOWN: it does not restart its request, asks again for what it lacks and completes the call once that comes",
		labels("resend", "MUST", "HOMA-RESEND-017", "HOMA-RESEND-003"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			respLen, from, to := gapResponse(unsched(4*maxSegData()), laterSegment)
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			r.sendResponseBut(p, respLen, from, to)
			// Told RPC_UNKNOWN after response bytes came, a client has
			// nothing to restart: the server got the request and began
			// answering. HomaModule restarts only an RPC still in
			// RPC_OUTGOING and discards RPC_UNKNOWN otherwise
			// (homa_rpc_unknown_pkt), so the client goes on asking for
			// the segment it lacks.
			forget(p, r.control())
			told := p.Now()
			after := func(x *tester.Packet) error {
				if !x.At.After(told) {
					return errEarly
				}
				return nil
			}
			if pr.ResendTicks+pr.ResendInterval < pr.TimeoutTicks-2 {
				rs, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id, Checks: []tester.Check{after}},
					wait(pr.Ticks(pr.ResendInterval+2)))
				if err != nil {
					if res := (CallResult{}); r.poll(&res) {
						r.took(res)
						r.callOK(res, fmt.Sprintf("the call ended after RPC_UNKNOWN instead of asking again for response bytes [%d, %d)", from, to))
					}
				}
				ok(err, "the client's next RESEND for response bytes [%d, %d) after RPC_UNKNOWN", from, to)
				r.resendResponse(p, respLen, from, to, rs.Pkt.Resend().Priority())
			} else {
				// RPC_UNKNOWN resets no silent_ticks (homa_dispatch_pkts),
				// and timeout_ticks leaves no room for a second RESEND
				// round: the segment comes unasked, as a late first
				// transmission.
				r.sendResponse(p, respLen, from, to, respLen, unschedLevel(pr, respLen), pr.CutoffVersion, false)
			}
			res := r.wait()
			restarted := p.Received(tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{after}})
			if len(restarted) > 0 {
				Fail(fmt.Sprintf("%d request DATA after RPC_UNKNOWN told a client whose response had begun to arrive (a restart), the first: %v", len(restarted), restarted[0]))
			}
			r.callOK(res, "the call completes once the missing response bytes come")
			Expect(res.Response).To(Equal(respLen))
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-server-end: a server missing part of a request that its client answers with RPC_UNKNOWN ends the RPC: a RESEND for it then draws RPC_UNKNOWN, not BUSY",
		labels("resend", "MUST", "HOMA-RESEND-017", "HOMA-RESEND-022"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			m, _, _ := gapRequest(p, laterSegment)
			// The client has forgotten the RPC (it timed out, or its host
			// restarted): it answers the server's RESEND with RPC_UNKNOWN,
			// and the server ends the RPC (homa_rpc_unknown_pkt), which
			// would otherwise RESEND to a client that will never send the
			// bytes, until timeout_ticks.
			forget(p, m.control())
			told := p.Now()
			// A round of the server's timer later, ask: a server still
			// holding the RPC answers BUSY (it has not got the request),
			// one that ended it RPC_UNKNOWN (homa_resend_pkt). Behind the
			// RPC_UNKNOWN at the same level, so the server has processed it.
			pause(deadline(pr.Ticks(pr.ResendInterval+1)), "waiting a resend_interval after the RPC_UNKNOWN")
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(),
				Offset: 0, Length: 100, Priority: ctrlLevel(pr)}, "RESEND for an RPC the client said it does not know")).To(Succeed())
			a, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id, Checks: []tester.Check{func(x *tester.Packet) error {
				if t := x.Pkt.Type(); t != wire.TypeRPCUnknown && t != wire.TypeBusy {
					return fmt.Errorf("a %v, not BUSY or RPC_UNKNOWN", t)
				}
				if !x.At.After(told) {
					return errEarly
				}
				return nil
			}}}, wait(2*pr.Tick))
			ok(err, "the server's answer to a RESEND for the RPC its client said it does not know")
			if a.Pkt.Type() != wire.TypeRPCUnknown {
				Fail(fmt.Sprintf("the server answered a RESEND with %v %v after its client said RPC_UNKNOWN: it still holds the RPC", a.Pkt.Type(), a.At.Sub(told)))
			}
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-server-complete: a server holding the whole request ends the RPC when its client says RPC_UNKNOWN, whether its response waits for GRANTs or for the ACK: no NEED_ACK or DATA for it after, and a RESEND for it draws RPC_UNKNOWN",
		labels("resend", "MUST", "HOMA-RESEND-017", "HOMA-RESEND-006"), body(func() {
			need("need-ack", "grants")
			p := peer(0)
			pr := params()
			// One response held at the server's grant horizon, its
			// unscheduled bytes out (as in NEED_ACK-held-response) ...
			held := heldResponse(p)
			// ... and one sent whole, the server asking for its ACK.
			asked := answered(p)
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeNeedAck, From: iut(), RPC: asked.id}, wait(pr.Ticks(pr.RequestAckTicks+2)))
			ok(err, "NEED_ACK from the server for RPC %d, whose response it sent whole", asked.id)
			// The client has forgotten both RPCs (it gave up on them while
			// the server still lacked request bytes, and a late RESEND of
			// the server's drew its RPC_UNKNOWN). A server RPC ends on
			// RPC_UNKNOWN whatever its state (homa_rpc_unknown_pkt calls
			// homa_rpc_end for every server RPC): the held response is
			// never sent, and nobody is left to ACK the other.
			ms := []msgSpec{held, asked}
			for _, m := range ms {
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.RPCUnknownFields{Common: m.control()},
					"RPC_UNKNOWN no RESEND asked for, from a client that forgot an RPC whose request the server holds whole")).To(Succeed())
			}
			wantEnded(p, ms, p.Now(), "the client's RPC_UNKNOWN")
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-reply: a RESEND for an RPC the IUT never saw is answered with RPC_UNKNOWN, at the top level though the RESEND asks for level 0, and nothing else",
		labels("resend", "MUST", "HOMA-RESEND-006", "HOMA-PRIO-001"), body(func() {
			p := peer(0)
			pr := params()
			id := env.NewRPCID()
			// The RESEND asks for level 0: a RESEND's priority is the
			// level of the DATA it asks for, never of a control packet
			// answering it (__homa_xmit_control sends every control
			// packet at num_priorities-1 in every HomaModule version).
			Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.ResendFields{Common: wire.CommonFields{Sport: 40999, Dport: ServerPort, SenderID: id},
				Offset: 0, Length: 1000, Priority: 0}, "RESEND for an RPC that never existed, asking for level 0")).To(Succeed())
			u, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: id, Checks: []tester.Check{
				tester.Is("sport", uint64(ServerPort)), tester.Is("dport", 40999),
				tester.IPPriority(uint8(pr.NumPriorities-1), uint8(pr.NumPriorities-1)),
			}}, wait(2*pr.Tick))
			ok(err, "RPC_UNKNOWN")
			Expect(u.Pkt.SenderID()).To(Equal(id+1), "RPC_UNKNOWN carries the server's id (the RESEND's sender_id xor 1)")
			Expect(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: id}, window(2*pr.Tick))).To(Succeed())
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-client-reply: a RESEND for a client RPC the IUT has finished is answered with RPC_UNKNOWN from its client port",
		labels("resend", "MUST", "HOMA-RESEND-006", "HOMA-PRIO-001"), body(func() {
			p := peer(0)
			pr := params()
			r := iutCall(p, 100, 100)
			r.serveFully(p, 100)
			// The call returned its response, so the client has ended the
			// RPC (homa_rpc_end when the application receives it) and a
			// late RESEND from the server finds nothing: a host answers a
			// RESEND for an RPC it does not have with RPC_UNKNOWN whichever
			// role the RPC had (homa_resend_pkt), so that the server can
			// end it in turn.
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(),
				Offset: 0, Length: 100, Priority: ctrlLevel(pr)}, "RESEND for request bytes of an RPC whose call completed")).To(Succeed())
			u, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.Is("sport", uint64(r.cport)), tester.Is("dport", testerPort),
				tester.IPPriority(ctrlLevel(pr), ctrlLevel(pr)),
			}}, wait(2*pr.Tick))
			ok(err, "RPC_UNKNOWN from the client for RPC %d, which it finished", r.id)
			Expect(u.Pkt.SenderID()).To(Equal(r.id), "RPC_UNKNOWN carries the client's id (the RESEND's sender_id xor 1)")
			Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, window(2*pr.Tick))).To(Succeed(), "request DATA after the RESEND")
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-restart: a client told RPC_UNKNOWN mid-request retransmits the request from offset 0 with retransmit=1, every byte it had transmitted (scheduled ones too), (main) each with incoming those bytes' end, and completes it",
		labels("resend", "MUST", "HOMA-RESEND-007", "HOMA-RESEND-003", "HOMA-RESEND-020"), body(func() {
			needResends()
			need("grants")
			p := peer(0)
			pr := params()
			seg := maxSegData()
			r := iutCall(p, pastU(50000), 100)
			// Let the unscheduled bytes and two granted segments arrive,
			// then forget the RPC.
			got, sent := r.receiveUnsched(p)
			granted := min(r.msgLen, unsched(r.msgLen)+2*seg)
			sent = r.receiveTo(p, got, sent, granted)
			// The restart retransmits everything transmitted, [0, tx_end),
			// with retransmit=1 (homa_rpc_unknown_pkt → homa_resend_data):
			// the bytes past U the GRANT let out are not sent again as
			// first transmissions.
			again, last := r.restarted(p, sent, "the request restarted", func(dd wire.Data, sent int) {
				GinkgoHelper()
				// homa_resend_data writes the end of the range it
				// resends, here tx_end, in every packet (main since May
				// 2025; before, the granted offset, which
				// HOMA-RESEND-020 leaves a restart to).
				if int(dd.Offset()) < sent && onMain() {
					Expect(dd.Incoming()).To(Equal(uint32(sent)), "incoming of restarted DATA at offset %d: the %d bytes transmitted before RPC_UNKNOWN, the end of the range a restart resends (homa_rpc_unknown_pkt → homa_resend_data)", dd.Offset(), sent)
				}
			})
			r.receiveRest(p, again, granted, last)
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-restart-sent: a client told RPC_UNKNOWN after it transmitted its whole request, before any response byte, restarts it: the whole request again from offset 0 with retransmit=1, and the call completes",
		labels("resend", "MUST", "HOMA-RESEND-007", "HOMA-RESEND-003"), body(func() {
			needResends()
			p := peer(0)
			pr := params()
			// A multi-packet request, received whole; the tester then
			// holds the response back, as a server whose application is
			// slow, and answers the client's RESEND for the response with
			// RPC_UNKNOWN, as a server that crashed and restarted would.
			// The client is still RPC_OUTGOING (a client RPC moves to
			// RPC_INCOMING only with its first response byte), and
			// homa_rpc_unknown_pkt restarts such an RPC whether or not
			// its request was all sent: homa_resend_data over
			// [0, tx_end), here the whole request.
			r := iutCall(p, multiPacketResponse(), 100)
			r.receiveRequest(p)
			again, last := r.restarted(p, r.msgLen, "the whole request restarted", nil)
			r.receiveRest(p, again, r.msgLen, last)
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))

	It("RPC_UNKNOWN-restart-served: a server creates an RPC from a restarted request's retransmitted DATA (retransmit=1 from offset 0, sent after its RPC_UNKNOWN), grants the rest of a long one and answers it",
		labels("resend", "MUST", "HOMA-RESEND-006", "HOMA-GRANT-010", "HOMA-PRIO-003"), body(func() {
			p := peer(0)
			pr := params()
			// A short request, and one past unsched_bytes the server must
			// grant (facts RTX-11's restart seen from the server's side).
			lens := []int{unsched(1000)}
			if env.IUT.Info().Has(agent.CapGrants) {
				lens = append(lens, pastU(3*maxSegData()))
			}
			for _, n := range lens {
				m := newRequest(n, 100)
				// The request's first transmission never reached the
				// server, so the client's timer asks for the response
				// (RESEND {0, -1}: nothing of it received, homa_request_retrans)
				// and the server, which has no such RPC, answers
				// RPC_UNKNOWN (homa_resend_pkt).
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: m.control(), Offset: 0, Length: wire.ResendAll, Priority: ctrlLevel(pr)},
					"RESEND {0, -1} for a request whose DATA were all lost on the way")).To(Succeed())
				_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: m.id}, wait(2*pr.Tick))
				ok(err, "RPC_UNKNOWN for RPC %d, whose request the server never got", m.id)
				// The client restarts: what it had transmitted (the
				// unscheduled bytes) again from offset 0, retransmit=1, at
				// the level its cutoffs give the message, incoming the
				// bytes transmitted (homa_rpc_unknown_pkt → homa_resend_data).
				// Any DATA creates a server RPC the host does not have
				// (homa_dispatch_pkts → homa_rpc_alloc_server), whatever its
				// retransmit flag.
				u := unsched(n)
				m.send(p, 0, u, func(int) uint8 { return m.unschedPrio() }, u, true)
				// The rest as the server's GRANTs allow, then the response.
				m.finishPart(p, u)
			}
			checkExchange(p)
		}))
})

// gapResend expects the IUT client's RESEND for the missing range [from,
// to) of r's response (passing checks too; when says when, for the
// message) within resend_ticks and two ticks, and fails the spec if it
// came before resend_ticks of silence: the gap from the last response
// DATA the tester sent bounds the client's silence from above, and ticks
// are discrete and the timer may run late, so up to a tick early, less
// timer lateness, is allowed (as RESEND-gap).
func (r *iutRPC) gapResend(p *tester.Peer, from, to int, when string, checks ...tester.Check) *tester.Packet {
	GinkgoHelper()
	pr := params()
	silence := pr.Ticks(pr.ResendTicks)
	rs, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id, Checks: append([]tester.Check{
		tester.Is("offset", uint64(from)), tester.Is("length", uint64(to-from)),
	}, checks...)}, wait(silence+2*pr.Tick))
	ok(err, "a RESEND for the missing segment [%d, %d) of the response%s", from, to, when)
	last := lastSent(p, wire.TypeData, r.id+1, rs.At)
	earliest := silence - pr.Tick - min(env.Slack, pr.Tick)
	Expect(rs.At.Sub(last)).To(BeNumerically(">=", earliest),
		"the RESEND came %v after the last response DATA; resend_ticks %d allow it no earlier than %v",
		rs.At.Sub(last), pr.ResendTicks, earliest)
	return rs
}

// busyFor answers each RESEND the IUT's client sends for r during hold
// with BUSY, as a server that has not transmitted what is asked for does
// (homa_resend_pkt), and returns how many BUSYs it sent.
func (r *iutRPC) busyFor(p *tester.Peer, hold time.Duration) (busy int) {
	GinkgoHelper()
	return busyWhile(p, r.id, r.control(), hold)
}

// busyWhile answers each RESEND the IUT sends for RPC id during hold with
// BUSY (c: the header of the tester's packets for the RPC), as a peer
// that has not transmitted the bytes asked for does (homa_resend_pkt),
// and returns how many BUSYs it sent.
func busyWhile(p *tester.Peer, id uint64, c wire.CommonFields, hold time.Duration) (busy int) {
	GinkgoHelper()
	start := p.Now()
	for left := hold; left > 0; left = start.Add(hold).Sub(env.Clock.Now()) {
		rs, _ := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: id}, left)
		ok(ctx().Err(), "answering RPC %d's RESENDs with BUSY", id&^1)
		if rs != nil {
			Expect(p.Send(iut(), ctrlLevel(params()), &wire.BusyFields{Common: c})).To(Succeed())
			busy++
		}
	}
	return busy
}

// busyUntilEnded answers each RESEND the IUT's client sends for r with
// BUSY (as busyFor) until other's call ends, and returns other's result
// and how many BUSYs it sent. other's silence began with its request
// (the tester sends it nothing), so its call ends by late (timeoutLate)
// after that, or later only as far as measured stalls explain: a call
// not ended by wait(late) is judged by endedLate. A one-stall test (a
// quarter of the bound lost by one stall) failed the ref under load: its
// timer counts passes, so each of many short stalls delays the timeout by
// what it lost (a namespaces run beside other suites: RPC 48 timed out
// 1.06 s after its request, timeout_ticks 100 of 5 ms, the IUT agent's
// stalls of up to 166 ms summing past the overshoot).
func (r *iutRPC) busyUntilEnded(p *tester.Peer, other *iutRPC, late time.Duration) (res CallResult, busy int) {
	GinkgoHelper()
	silent := other.first.At
	resends := tester.Match{Type: wire.TypeResend, From: iut(), RPC: r.id}
	endedBy := func(by time.Time) (bool, error) {
		for !other.ended {
			if _, err := env.Clock.Wait(ctx(), by, func() bool {
				other.ended = other.ended || other.poll(&res)
				return other.ended || len(p.Received(resends)) > 0
			}); err != nil {
				return false, err
			}
			for rs, _ := p.Expect(ctx(), resends, 0); rs != nil; rs, _ = p.Expect(ctx(), resends, 0) {
				Expect(p.Send(iut(), ctrlLevel(params()), &wire.BusyFields{Common: r.control()})).To(Succeed())
				busy++
			}
			if !other.ended && !env.Clock.Now().Before(by) {
				return false, nil
			}
		}
		return true, nil
	}
	end := silent.Add(wait(late))
	ended, err := endedBy(end)
	ok(err, "answering RPC %d's RESENDs with BUSY until RPC %d's call ends", r.id, other.id)
	if !ended {
		pr := params()
		endedLate(silent, end, late, endedBy, func() string {
			return fmt.Sprintf("the IUT's call of RPC %d had not ended %v after its server went silent (timeout_ticks %d of %v, stretched by timer_drift %g, allow %v)",
				other.id, p.Now().Sub(silent), pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
		}, func(gone time.Duration) string {
			return fmt.Sprintf("the IUT gave the call of RPC %d up %v after its server went silent; timeout_ticks %d of %v, stretched by timer_drift %g, allow %v",
				other.id, gone, pr.TimeoutTicks, pr.Tick, pr.TimerDrift, late)
		})
	}
	return res, busy
}

// failedAfter reports whether r's call ended with an error (res) after
// the tester kept it alive (what it did, for the message), and fails the
// spec for it unless the call timed out after the tester, held up by a
// measured stall, had left it silent for timeout_ticks-2 ticks
// (rpcGaveUpDuringStall, r's own silences only): only then is the
// timeout the protocol's (timing-inconclusive). Stalls that held up no
// silence that long excuse nothing, however much they lost between them:
// a client that gives up a call its server kept answering failed.
func (r *iutRPC) failedAfter(res CallResult, what string) bool {
	GinkgoHelper()
	if res.Err == "" {
		return false
	}
	r.took(res)
	pr := params()
	msg := fmt.Sprintf("the IUT's call failed after %s (timeout_ticks %d of %v): %s", what, pr.TimeoutTicks, pr.Tick, res.Err)
	if !rpcGaveUpDuringStall(msg, []uint64{r.id &^ 1}, true) {
		Fail(msg)
	}
	return true
}

// failedDespiteBusy is failedAfter for a call whose server answered its
// RESENDs with BUSY (busy of them, busyFor) for hold.
func (r *iutRPC) failedDespiteBusy(res CallResult, busy int, hold time.Duration) bool {
	GinkgoHelper()
	return r.failedAfter(res, fmt.Sprintf("its server answered %d RESENDs with BUSY for %v", busy, hold))
}

// busyOrResent accepts the answers a sender may give a RESEND starting at
// offset end, the end of what the tester has seen of its message: BUSY
// (end is where its transmission stopped), or the retransmission of the
// bytes at end (it had sent more, still on the way: an skb of several
// segments). New DATA at end with no BUSY is neither.
func busyOrResent(end uint32) tester.Check {
	return func(x *tester.Packet) error {
		switch {
		case x.Pkt.Type() == wire.TypeBusy:
			return nil
		case x.Pkt.Type() == wire.TypeData && x.Pkt.Data().Offset() == end && x.Pkt.Data().Retransmit() != 0:
			return nil
		}
		return errors.New("want BUSY, or DATA retransmitted at the RESEND's offset")
	}
}

// busyOrResentIn accepts the answer to a RESEND for bytes [from, to) of
// a message its sender may not have transmitted yet: BUSY, or a
// retransmission (retransmit=1) of a packet overlapping the range.
func busyOrResentIn(from, to uint32) tester.Check {
	return func(x *tester.Packet) error {
		switch {
		case x.Pkt.Type() == wire.TypeBusy:
			return nil
		case x.Pkt.Type() == wire.TypeData && x.Pkt.Data().Retransmit() != 0 &&
			x.Pkt.Data().Offset() < to && x.Pkt.Data().Offset()+uint32(x.Pkt.Data().DataLen()) > from:
			return nil
		}
		return fmt.Errorf("want BUSY, or DATA retransmitted within [%d, %d)", from, to)
	}
}

// oneOfTypes accepts a packet of any of types (Match.Type names one).
func oneOfTypes(types ...wire.PacketType) tester.Check {
	return func(x *tester.Packet) error {
		if slices.Contains(types, x.Pkt.Type()) {
			return nil
		}
		return fmt.Errorf("type: want one of %v, got %v", types, x.Pkt.Type())
	}
}

// resendRange sends the IUT a RESEND for bytes [from, to) of r's request
// at priority prio and expects the retransmission of exactly those of its
// first transmissions pkts the range overlaps, each retransmit=1 at prio
// with its offset in seg.offset and, under HomaModule main's protocol,
// incoming to (the range lies within what the IUT transmitted), and no
// other retransmitted DATA within a tick after them (HomaModule
// homa_resend_data; older profiles write the granted offset, which the
// checker's HOMA-RESEND-020 allows them).
func (r *iutRPC) resendRange(p *tester.Peer, pkts []*tester.Packet, from, to int, prio uint8) {
	GinkgoHelper()
	pr := params()
	want := map[uint32]int{} // offset: length
	for _, x := range pkts {
		if d := x.Pkt.Data(); int(d.Offset()) < to && int(d.Offset())+d.DataLen() > from {
			want[d.Offset()] = d.DataLen()
		}
	}
	Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: uint32(from), Length: uint32(to - from), Priority: prio},
		fmt.Sprintf("RESEND at once (no silence) for [%d, %d), asking for priority %d", from, to, prio))).To(Succeed())
	resent := tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{tester.Is("retransmit", 1)}}
	for len(want) > 0 {
		x, err := p.Expect(ctx(), resent, wait(2*pr.Tick))
		ok(err, "retransmitted DATA at offsets %v, the packets the RESEND for [%d, %d) overlaps", slices.Sorted(maps.Keys(want)), from, to)
		d := x.Pkt.Data()
		n, asked := want[d.Offset()]
		if !asked {
			Fail(fmt.Sprintf("retransmitted DATA at offset %d for a RESEND asking for [%d, %d): a sender retransmits the packets the range overlaps, those at %v, and no other (homa_resend_data)",
				d.Offset(), from, to, slices.Sorted(maps.Keys(want))))
		}
		Expect(d.DataLen()).To(Equal(n), "retransmitted DATA at offset %d: the packet sent first with %d bytes", d.Offset(), n)
		Expect(x.Priority).To(Equal(prio), "retransmitted DATA at offset %d for a RESEND asking for [%d, %d) at priority %d: every packet goes at the asked priority (homa_resend_data)", d.Offset(), from, to, prio)
		so, _ := x.Pkt.Field("seg.offset")
		Expect(so).To(Equal(uint64(d.Offset())), "seg.offset of retransmitted DATA at offset %d: the true offset (homa_resend_data)", d.Offset())
		if onMain() {
			// homa_resend_pkt caps the range's end at what was
			// transmitted, and homa_resend_data writes that end in every
			// packet it retransmits (since 45a8cae, May 2025).
			Expect(d.Incoming()).To(Equal(uint32(to)), "incoming of retransmitted DATA at offset %d for a RESEND asking for [%d, %d), all transmitted: the range's end (homa_resend_data)", d.Offset(), from, to)
		}
		delete(want, d.Offset())
	}
	ok(p.ExpectNone(ctx(), resent, window(pr.Tick)), "no retransmitted DATA past the packets the RESEND for [%d, %d) overlaps", from, to)
}

// gapsRequest sends a request of seven segments (the response 100 bytes)
// without its segments 1 and 3 nor any byte from segment 5 on: its
// unscheduled bytes, and where those are fewer than the request's, what
// the IUT's GRANTs allow at the latest GRANT's priority (as
// sendGrantedBut), until the IUT's first RESEND for it. It returns the
// request, the bytes sent, the offset the IUT granted (the unscheduled
// bytes or its highest GRANT's offset) and that RESEND. An IUT whose
// grant window cannot reach past the two missing segments is unsupported.
func gapsRequest(p *tester.Peer) (m msgSpec, sent *byteranges.Set, granted int, first *tester.Packet) {
	GinkgoHelper()
	pr := params()
	seg := maxSegData()
	msgLen := 7 * seg
	if unsched(msgLen) < msgLen {
		need("grants")
		if w := int(pr.GrantWindow()); w <= 2*seg {
			Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves the request's gaps to its GRANTs, and a grant window of %d bytes cannot reach past two missing %d-byte segments (%s)", pr.UnschedBytes, w, seg, widerWindow(2*seg+1)))
		}
	}
	m = newRequest(msgLen, 100)
	sent = &byteranges.Set{}
	keep := func(a, b int, prio uint8) {
		sendBut(a, min(b, 5*seg), seg, 2*seg, func(a, b int) {
			sendBut(a, b, 3*seg, 4*seg, func(a, b int) {
				m.sendData(p, a, b, prio)
				sent.Add(uint32(a), uint32(b))
			})
		})
	}
	granted = unsched(msgLen)
	keep(0, granted, 0)
	for {
		x, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id, Checks: []tester.Check{grantOrResend}},
			wait(pr.ResponseTimeout+pr.Ticks(pr.ResendTicks+2)))
		ok(err, "a GRANT, or after resend_ticks of silence a RESEND, for a request the tester sent %s of", rangesText(*sent))
		if x.Pkt.Type() == wire.TypeResend {
			return m, sent, granted, x
		}
		if off := min(int(x.Pkt.Grant().Offset()), msgLen); off > granted {
			keep(granted, off, x.Pkt.Grant().Priority())
			granted = off
		}
	}
}

// grantOrResend accepts a GRANT or a RESEND.
func grantOrResend(x *tester.Packet) error {
	if t := x.Pkt.Type(); t != wire.TypeGrant && t != wire.TypeResend {
		return fmt.Errorf("a %v, not GRANT or RESEND", t)
	}
	return nil
}

// rangeText renders byte range g as [start, end).
func rangeText(g byteranges.Range) string { return fmt.Sprintf("[%d, %d)", g.Start, g.End) }

// rangesText renders byte ranges as a list of [start, end).
func rangesText(gs []byteranges.Range) string {
	var b strings.Builder
	for i, g := range gs {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(rangeText(g))
	}
	return b.String()
}

// multiPacketResponse is the length of a response of several packets
// that a spec sends the first of: three segments, unscheduled where
// unsched_bytes allows; where that is one segment or less, two segments
// past unsched_bytes (an IUT without GRANTs is unsupported then).
func multiPacketResponse() int {
	GinkgoHelper()
	seg := maxSegData()
	if n := unsched(3 * seg); n > seg {
		return n
	}
	need("grants")
	return pastU(2 * seg)
}

// wantTimedOut fails the spec unless the IUT's call ended in a timeout
// (ETIMEDOUT; when says what the server did to cause it).
func wantTimedOut(res CallResult, when string) {
	GinkgoHelper()
	Expect(agent.Completion{Error: res.Err}.Code()).To(Equal(agent.CodeTimeout),
		"the call ends in a timeout (ETIMEDOUT) when %s; got %q", when, res.Err)
}

// timedOutLate fails the spec with msg, a timeout that came after
// after (from, on the tester's clock; at to), or had not come by then,
// where the protocol allows late, unless stalls measured in [from, to] lost the overshoot,
// after-late, between them (offSchedule's reading of a late timer event:
// the IUT's timer, kept from running, makes one pass of the ticks a
// stall spans, so its abort comes late by what the stall lost); then it
// records msg as timing-inconclusive and the spec goes on (its round
// count after the timeout is still judged). Any stall overlapping the
// wait excused it before, however little it lost: an abort 40 ms late
// beside a 5 ms freeze passed with a timing note.
func timedOutLate(msg string, after, late time.Duration, from, to time.Time) {
	GinkgoHelper()
	wFrom, wTo, lost, _ := offSchedule(after, 0, late, from, to)
	if !stalledAtLeastOf(msg, wFrom, wTo, lost, nil) {
		Fail(msg)
	}
}

// heldAtTimeout tells a call still held at its timeout's bound end (its
// silence counted from from) that ends late from one that never does:
// it waits on (endedBy, which keeps the exchange going until by at most
// and reports whether the call ended) until the bound plus what the
// measured stalls lost (lateWithinStalls). ended: the call ended by then,
// and its lateness is judged (timedOutLate). !ended, judged: the IUT held
// the call past the bound and every measured stall's loss, which no stall
// excuses (the spec fails). !ended, !judged: the stalls lost more than
// stallCreditMost bounds, and nothing can be judged. Timing the call out
// at the bound excused it once stalls had lost the overshoot, without
// waiting to see whether it ended: an IUT that never times out passed.
func heldAtTimeout(from, end time.Time, endedBy func(by time.Time) (bool, error)) (ended, judged bool) {
	late := lateWithinStalls(from, end, func(by time.Time) (bool, error) {
		came, err := endedBy(by)
		ended = ended || came
		return came, err
	})
	return ended, ended || !late
}

// endedLate judges a call awaited in vain until end, its silence begun
// at from and its timeout due by late (timeoutLate): late, not never,
// the call must end within the bound plus what the measured stalls lost
// (heldAtTimeout; held says it still held), else the spec fails (or,
// the stalls having lost too much to judge, and one of them a quarter of
// the wait, it is timing-inconclusive). A call that ended is excused
// only by stalls that lost its overshoot past late between them
// (timedOutLate; gaveUp says it, given how long after from it ended):
// the IUT's timer counts passes, so each stall delays its timeout by
// what it lost, and many short ones add up.
func endedLate(from, end time.Time, late time.Duration, endedBy func(by time.Time) (bool, error), held func() string, gaveUp func(gone time.Duration) string) {
	GinkgoHelper()
	switch ended, judged := heldAtTimeout(from, end, endedBy); {
	case !judged && stalledLongest(held(), from, env.Clock.Now(), end.Sub(from)/4):
		panic(stalledOut{})
	case !ended:
		Fail(held())
	}
	now := env.Clock.Now()
	timedOutLate(gaveUp(now.Sub(from)), now.Sub(from), late, from, now)
}

// timeoutLate bounds how long after its silence began a client gives a
// call up: timeout_ticks stretched by timer_drift (HomaModule re-arms its
// hrtimer after each pass), two ticks of tolerance (RTX-10), and the
// environment's slack; later only during a stall the environment
// measured (then timing-inconclusive).
func timeoutLate(pr spec.Params) time.Duration {
	return time.Duration(float64(pr.Ticks(pr.TimeoutTicks))*(1+pr.TimerDrift)) + pr.Ticks(2) + env.Slack
}

// afterTimeout holds the exchange two resend_interval past an RPC's
// timeout, in which the checker fails a RESEND after timeout_ticks of
// silence (HOMA-RESEND-009, with its stall excuses, which a window here
// would lack), and fails the spec on more RESEND rounds for RPC id than
// one silence allows (roundsAtMost; checks select the silence's).
func afterTimeout(p *tester.Peer, id uint64, checks ...tester.Check) {
	GinkgoHelper()
	pr := params()
	pause(deadline(window(pr.Ticks(2*pr.ResendInterval))), "waiting two resend_interval after the timeout")
	roundsAtMost(p, id, checks...)
}

// requestGap is RESEND-gap losing segment lose of the request
// (gapRequest): the IUT server's RESEND asks for exactly that segment
// after resend_ticks of silence, no earlier, and the call completes once
// it is retransmitted. A receiver that has any DATA of the message asks
// for its gaps, a lost first segment among them, from its offset
// (homa_request_retrans; {0, -1} only while nothing arrived).
func requestGap(lose int) {
	GinkgoHelper()
	needResends()
	p := peer(0)
	pr := params()
	m, from, to := gapRequest(p, lose)
	silence := time.Duration(pr.ResendTicks) * pr.Tick
	r, err := p.Expect(ctx(), tester.Match{Type: wire.TypeResend, From: iut(), RPC: m.id, Checks: []tester.Check{
		tester.Is("offset", uint64(from)), tester.Is("length", uint64(to-from)),
		tester.Is("sport", uint64(serverPort())), tester.Is("dport", uint64(m.sport)),
	}}, wait(silence+2*pr.Tick))
	ok(err, "a RESEND for the missing segment [%d, %d)", from, to)
	// The IUT got the last DATA no earlier than the tester sent it
	// and sent the RESEND no later than it arrived, so this gap
	// bounds the IUT's silence from above: a shorter gap is a
	// RESEND before resend_ticks, whatever the machine's noise.
	// Ticks are discrete and the timer may run late, so the first
	// RESEND may come up to one tick early, less timer lateness
	// (at most another tick).
	last := lastSent(p, wire.TypeData, m.id, r.At)
	earliest := silence - pr.Tick - min(env.Slack, pr.Tick)
	Expect(r.At.Sub(last)).To(BeNumerically(">=", earliest),
		"the RESEND came %v after the last DATA; resend_ticks %d allow it no earlier than %v",
		r.At.Sub(last), pr.ResendTicks, earliest)
	m.fillGap(p, r, from, to)
	checkExchange(p)
}

// responseGap is RESEND-response-gap losing segment lose of the response
// (gapResponse): the IUT client's RESEND asks for exactly that segment
// after resend_ticks of silence (homa_request_retrans, as requestGap),
// and the call completes once it is retransmitted.
func responseGap(lose int) {
	GinkgoHelper()
	needResends()
	p := peer(0)
	respLen, from, to := gapResponse(unsched(1<<30)/2, lose)
	r := iutCall(p, 100, respLen)
	r.receiveRequest(p)
	r.sendResponseBut(p, respLen, from, to)
	rs := r.gapResend(p, from, to, "", tester.Is("sport", uint64(r.cport)), tester.Is("dport", testerPort))
	// Retransmitted as a sender answers a RESEND: retransmit=1 at
	// the asked priority, incoming the range's end (HOMA-RESEND-020).
	r.resendResponse(p, respLen, from, to, rs.Pkt.Resend().Priority())
	res := r.wait()
	r.callOK(res, "the IUT's call failed")
	Expect(res.Response).To(Equal(respLen))
	checkExchange(p)
}

// resendAll is RESEND-wakeup after the tester granted sched bytes past
// the unscheduled ones of the IUT's request and received them (0: none,
// RESEND-wakeup itself): the buffer wakeup a server sends when receive
// buffers free up (homa_pool_check_waiting), RESEND {0, -1}, which
// homa_resend_pkt takes as "everything up to tx_end": every byte the IUT
// transmitted comes again with retransmit=1, scheduled ones too, within
// response_timeout; it neither raises granted nor asks for bytes not yet
// sent.
func resendAll(sched int) {
	GinkgoHelper()
	need("grants")
	if !onMain() {
		Skip("unsupported: the buffer-wakeup RESEND {0, -1} is HomaModule main's (profile " + env.Profile + " wakes a sender with a GRANT)")
	}
	p := peer(0)
	pr := params()
	if pr.NumPriorities < 2 {
		Skip("unsupported: num_priorities 1 has no buffer-wakeup level (num_priorities-2)")
	}
	// A RESEND resets no silent_ticks: the client hears nothing from its
	// request's last DATA until the GRANT at the end.
	quietFits(2 * window(pr.Tick))
	r := iutCall(p, pastU(6*maxSegData()), 100)
	got, sent := r.receiveUnsched(p)
	granted := unsched(r.msgLen)
	if sched > 0 {
		granted = min(r.msgLen, granted+sched)
		sent = r.receiveTo(p, got, sent, granted)
	}
	wake := &wire.ResendFields{Common: r.control(), Offset: 0, Length: ^uint32(0), Priority: uint8(pr.HighPriority())}
	if sched == 0 {
		Expect(p.Send(iut(), ctrlLevel(pr), wake)).To(Succeed())
	} else {
		// HomaModule grants no message waiting for buffers, so its
		// receivers send no wakeup once they granted: deliberate, to
		// show that homa_resend_pkt answers length -1 with all it
		// transmitted, not only what needed no GRANT.
		Expect(p.SendDeliberate(iut(), ctrlLevel(pr), wake, "RESEND {0, -1} for a message the tester granted")).To(Succeed())
	}
	at := lastSent(p, wire.TypeResend, r.control().SenderID, p.Now())
	_, sent, _ = r.resentFromZero(p, at, sent, "the request retransmitted for the RESEND {0, -1}", wait(pr.ResponseTimeout+pr.Tick), func(d wire.Data, sent int) {
		GinkgoHelper()
		Expect(int(d.Offset())).To(BeNumerically("<", sent), "DATA at offset %d after the RESEND {0, -1}, past the %d bytes transmitted and granted (a RESEND {0, -1} asks only for what was sent)", d.Offset(), sent)
	})
	ok(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
		tester.DataOffsetIn(uint32(sent), ^uint32(0)),
	}}, window(pr.Tick)), "no DATA past the %d bytes transmitted and granted (a RESEND {0, -1} asks only for what was sent)", sent)
	// The tester now holds every byte transmitted: a sender may have sent
	// a batch past the grant whose tail receiveTo left unread
	// (homa_xmit_data stops only once next_xmit_offset reaches granted),
	// and it sends those bytes again only when asked.
	got.Add(0, uint32(sent))
	r.receiveRest(p, got, granted, env.Clock.Now())
	res := r.respond(p, 100, pr.CutoffVersion)
	r.callOK(res, "the IUT's call failed")
	checkExchange(p)
}
