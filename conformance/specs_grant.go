package conformance

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/internal/byteranges"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("grants", func() {
	It("GRANT-long-request: the unscheduled DATA of a request longer than U, by 160 KB or by only a few bytes, draws GRANTs above U, rising to the message length, at a scheduled priority; the long one's first GRANT comes before its last unscheduled packet (a receiver grants as bytes arrive, not once all it authorised is in)",
		labels("grant", "MUST", "HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-004",
			"HOMA-GRANT-007", "HOMA-GRANT-009", "HOMA-GRANT-010", "HOMA-GRANT-024", "HOMA-PRIO-001"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			seg := maxSegData()
			// A long request, and two that end within a segment past U
			// (a few bytes, half a segment): a receiver grants every
			// message longer than its unscheduled bytes
			// (homa_grant_init_rpc marks it grantable when unsched falls
			// short of the length), however little is left.
			for i, n := range []int{longLen(), pastU(3), pastU(maxSegData() / 2)} {
				m := newRequest(n, 100)
				u := unsched(m.msgLen)
				// The long request's last unscheduled packet is held
				// back: every HomaModule version grants as each batch of
				// DATA is processed, received + window past the horizon
				// (homa_grant_try_send; linux_6.1.38 homa_grant_send:
				// grant_window - incoming), so a receiver whose window
				// exceeds the held bytes by a packet grants before they
				// come. The window is taken at its smallest
				// (max_overcommit messages active), and a receiver that
				// grants in whole packets is not faulted.
				sent, last := u, (u-1)/seg*seg
				early := i == 0 && last > 0 && int(pr.WindowFor(pr.MaxOvercommit)) >= u-last+seg
				if early {
					sent = last
				}
				m.sendUnsched(p, 0, sent)
				g, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id, Checks: []tester.Check{
					tester.Is("sport", uint64(ServerPort)), tester.Is("dport", uint64(m.sport)),
					tester.In("priority", 0, uint64(pr.MaxSchedPrio)),
					tester.IPPriority(uint8(pr.NumPriorities-1), uint8(pr.NumPriorities-1)),
				}}, wait(pr.ResponseTimeout+pr.Tick))
				if early {
					ok(err, "the first GRANT of a %d-byte request (U %d) with its bytes [0, %d) in and its last unscheduled packet held back: a receiver grants as bytes arrive (window %d), not once all it authorised is in", m.msgLen, u, sent, pr.WindowFor(pr.MaxOvercommit))
					m.sendUnsched(p, sent, u)
				}
				ok(err, "the first GRANT of a %d-byte request (U %d)", m.msgLen, u)
				Expect(g.Pkt.SenderID()).To(Equal(m.id+1), "GRANT sender_id: the server's id is the client's plus one")
				grantsRise([]*tester.Packet{g}, m.msgLen, false) // before sending by it
				to := grantedEnd(int(g.Pkt.Grant().Offset()), m.msgLen)
				m.sendData(p, u, to, g.Pkt.Grant().Priority())
				grants, resp := m.completeRequest(p, to)
				grantsRise(append([]*tester.Packet{g}, grants...), m.msgLen, true)
				Expect(resp.Pkt.SenderID()).To(Equal(m.id + 1))
				Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeGrant, RPC: m.id},
					window(time.Duration(pr.ResendTicks+2)*pr.Tick))).To(Succeed(), "no GRANT once the %d-byte message is complete", m.msgLen)
			}
			checkExchange(p)
		}))

	It("GRANT-incoming-short: a receiver takes a message's unscheduled bytes from its DATA's incoming, not from its own unsched_bytes: a request within the receiver's unsched_bytes whose sender sent only a smaller incoming unscheduled draws GRANTs for the rest and is answered once they are sent",
		labels("grant", "MUST", "HOMA-GRANT-001", "HOMA-GRANT-010"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			// Hosts may run with different unsched_bytes: a sender sends
			// its own unscheduled bytes and says how many in every DATA's
			// incoming. The receiver's horizon starts there
			// (homa_message_in_init, homa_grant_init_rpc), and a message
			// whose incoming is short of its length is grantable, whatever
			// the receiver's own unsched_bytes. Here the tester plays a
			// sender with a quarter of the IUT's U (a few segments at
			// least, half of U at most), and a request of three times
			// that, within U: a receiver that assumed its own U had been
			// sent would wait for bytes never sent, and never grant.
			big, seg := unsched(1<<30), maxSegData()
			in := max(big/4, min(3*seg, big/2))
			m := newRequest(min(3*in, big), 100)
			if in < 1 || m.msgLen <= in || m.msgLen < agent.PayloadHeaderLen {
				Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves no request within it of %d bytes or more that a sender with fewer unscheduled bytes would need GRANTs for", pr.UnschedBytes, agent.PayloadHeaderLen))
			}
			m.incoming = in
			m.deliberate = fmt.Sprintf("incoming %d, short of the IUT's unsched_bytes %d: a sender whose own unsched_bytes is %d", in, pr.UnschedBytes, in)
			m.sendUnsched(p, 0, in)
			g, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the first GRANT of a %d-byte request whose DATA carried incoming %d (bytes [0, %d) sent; the IUT's unsched_bytes %d): a receiver grants from the incoming its sender gave", m.msgLen, in, in, pr.UnschedBytes)
			to := grantedEnd(int(g.Pkt.Grant().Offset()), m.msgLen)
			m.sendData(p, in, to, g.Pkt.Grant().Priority())
			m.completeRequest(p, to)
			checkExchange(p)
		}))

	It("GRANT-long-response: a client receiving a response longer than unsched_bytes grants it: GRANTs above U at a scheduled priority, rising to the response's length, and the call completes",
		labels("grant", "MUST", "HOMA-GRANT-001", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-004",
			"HOMA-GRANT-007", "HOMA-GRANT-009", "HOMA-GRANT-010", "HOMA-PRIO-001"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			respLen := longLen()
			r := iutCall(p, 100, respLen)
			r.receiveRequest(p)
			grants, res := r.respondGranted(p, respLen)
			r.callOK(res, "the IUT's call failed")
			Expect(res.Response).To(Equal(respLen))
			g := grants[0]
			for _, c := range []tester.Check{
				tester.Is("sport", uint64(r.cport)), tester.Is("dport", testerPort),
				tester.In("priority", 0, uint64(pr.MaxSchedPrio)),
				tester.IPPriority(uint8(pr.NumPriorities-1), uint8(pr.NumPriorities-1)),
			} {
				Expect(c(g)).To(Succeed(), "the client's first GRANT %s", g)
			}
			Expect(g.Pkt.SenderID()).To(Equal(r.id), "GRANT sender_id: the client's own id")
			grantsRise(grants, respLen, true)
			checkExchange(p)
		}))

	It("GRANT-trickle: a client whose request is granted one segment a tick, for longer than timeout_ticks, sends each granted segment, RESENDs no sooner than resend_ticks after a GRANT, and completes the call",
		labels("grant", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-009"), body(func() {
			quietFits(params().Tick) // the senders hear a GRANT a tick
			need("grants")
			p := peer(0)
			pr := params()
			seg := maxSegData()
			// A receiver granting many messages may let this one on a
			// segment at a time. Each GRANT resets the sender's
			// silent_ticks as DATA and BUSY do (homa_dispatch_pkts), so a
			// GRANT every tick keeps it from RESENDing (resend_ticks) and
			// from timing out (timeout_ticks) however long the message
			// takes: here half as long again as timeout_ticks.
			// A message too long for max_message_length at a segment a
			// tick gets its GRANTs every gap ticks instead, still spanning
			// the hold (RESENDs after resend_ticks of it are then the
			// protocol's, and answered with BUSY).
			hold := holdTicks()
			pastU(seg)                                                            // a segment at least to grant
			n := max(1, min(hold, (int(pr.MaxMessageLength)-unsched(1<<30))/seg)) // GRANTs
			gap := (hold + n - 1) / n
			reqLen := min(unsched(1<<30)+n*seg, int(pr.MaxMessageLength))
			r := iutCall(p, reqLen, 100)
			var got byteranges.Set
			d := r.first.Pkt.Data()
			got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
			resends := 0
			// receive takes the IUT's packets for the RPC until it has
			// sent [0, to), answering its RESENDs with BUSY as a server
			// still receiving the request does (homa_resend_pkt).
			receive := func(to int) {
				for !got.Covers(0, uint32(to)) {
					x, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: r.id, Checks: []tester.Check{func(x *tester.Packet) error {
						if t := x.Pkt.Type(); t != wire.TypeData && t != wire.TypeResend {
							return fmt.Errorf("a %v", t)
						}
						return nil
					}}}, wait(2*pr.Tick))
					ok(err, "request bytes up to %d of %d (have %d; %d RESENDs)", to, reqLen, got.Total(), resends)
					if x.Pkt.Type() == wire.TypeResend {
						resends++
						Expect(p.Send(iut(), ctrlLevel(pr), &wire.BusyFields{Common: r.control()})).To(Succeed())
						continue
					}
					d := x.Pkt.Data()
					got.Add(d.Offset(), d.Offset()+uint32(d.DataLen()))
				}
			}
			granted := unsched(reqLen)
			receive(granted)
			start := p.Now()
			// Until the request is whole: a sender that sent a whole
			// segment for a GRANT within it may have sent the last
			// bytes already, and a receiver grants no complete message
			// (HOMA-GRANT-004, charged to the tester a tick after the
			// last DATA when judged with the simulator's own slack).
			for granted < reqLen && !got.Covers(0, uint32(reqLen)) {
				pause(deadline(pr.Ticks(gap)), "waiting %d ticks between GRANTs", gap)
				// Whole segments, so that a sender holding a packet back
				// until it is granted whole is not stalled.
				granted = min((granted/seg+1)*seg, reqLen)
				Expect(p.Send(iut(), ctrlLevel(pr), &wire.GrantFields{Common: r.control(), Offset: uint32(granted), Priority: 0})).To(Succeed())
				receive(granted)
			}
			res := r.respond(p, 100, pr.CutoffVersion)
			// Only a tester held up for most of timeout_ticks (its
			// GRANTs came every tick) leaves the client silent that long
			// (failedAfter).
			if r.failedAfter(res, fmt.Sprintf("its request was granted a segment a tick for %v", p.Now().Sub(start))) {
				return
			}
			Expect(res.Response).To(Equal(100))
			// The checker fails a RESEND that followed a GRANT within
			// resend_ticks (HOMA-RESEND-001), with its stall excuses.
			checkExchange(p)
		}))

	It("GRANT-repeated-alive: a client whose request waits at its grant horizon while the same GRANT comes again well within resend_ticks, for longer than timeout_ticks, keeps the RPC (every GRANT resets its silence, raising the horizon or not) and completes the call once granted the rest",
		labels("grant", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-009"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			hold := holdTicks()
			// Ticks between GRANTs: half of resend_ticks, so that a
			// tester late by a tick or two does not let the client reach
			// resend_ticks (a RESEND crossing a late GRANT, which the
			// checker can excuse only during a measured stall).
			gap := max(1, pr.ResendTicks/2)
			seg := maxSegData()
			reqLen := pastU(4 * seg)
			r := iutCall(p, reqLen, 100)
			got, _ := r.receiveUnsched(p)
			// One GRANT a whole segment past U, then the request waits
			// there: an RPC_OUTGOING client that has transmitted every
			// granted byte counts silent ticks (homa_timer_check_rpc).
			horizon := min(reqLen, (unsched(reqLen)/seg+1)*seg)
			grant := &wire.GrantFields{Common: r.control(), Offset: uint32(horizon)}
			Expect(p.Send(iut(), ctrlLevel(pr), grant)).To(Succeed())
			var last time.Time
			for !got.Covers(0, uint32(horizon)) {
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, wait(2*pr.Tick))
				ok(err, "the request's bytes up to the GRANT's %d: have %d", horizon, got.Total())
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
				last = d.At
			}
			// The same GRANT again every gap ticks for half as
			// long again as timeout_ticks: homa_dispatch_pkts zeroes
			// silent_ticks for every GRANT, whether or not it raises the
			// horizon (homa_grant_pkt), so the client neither times out
			// nor reaches resend_ticks of silence between them. The
			// tester answers no RESEND (a BUSY would reset the silence
			// too); the checker judges any RESEND against the latest
			// GRANT (HOMA-RESEND-001).
			for t := 0; t < hold; t += gap {
				pause(deadline(pr.Ticks(gap)), "waiting %d ticks between GRANTs", gap)
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), grant, "the same GRANT again (the horizon not raised), as a receiver repeating its GRANT sends it")).To(Succeed())
			}
			// Only a tester held up for most of timeout_ticks (its GRANTs
			// came every gap ticks) leaves the client silent that long
			// (failedAfter).
			what := fmt.Sprintf("the same GRANT came every %d ticks for %d ticks", gap, hold)
			var res CallResult
			if r.poll(&res) {
				r.failedAfter(res, what)
				return
			}
			r.receiveRest(p, got, horizon, last)
			res = r.respond(p, 100, pr.CutoffVersion)
			if r.failedAfter(res, what+", then the rest") {
				return
			}
			Expect(res.Response).To(Equal(100))
			checkExchange(p)
		}))

	It("GRANT-short-request: a request that fits in the unscheduled bytes draws no GRANT and is answered",
		labels("grant", "MUST", "HOMA-GRANT-001", "HOMA-PRIO-001"), body(func() {
			p := peer(0)
			// Exactly unsched_bytes; the response too fits in them (a
			// longer one would need the tester's GRANTs).
			m := newRequest(unsched(1<<30), unsched(1000))
			m.sendUnsched(p, 0, m.msgLen)
			resp, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id,
				Checks: []tester.Check{msgLenIs(m.respLen)}}, wait(20*time.Millisecond))
			ok(err, "the response")
			Expect(resp.Pkt.Common().Dport()).To(Equal(m.sport))
			Expect(p.ExpectNone(ctx(), tester.Match{Type: wire.TypeGrant, RPC: m.id}, window(2*params().Tick))).To(Succeed())
			m.ack(p)
			checkExchange(p)
		}))

	It("GRANT-srpt: messages from two senders are granted in SRPT order within max_overcommit",
		labels("grant", "SHOULD", "HOMA-GRANT-006", "HOMA-GRANT-007"), body(func() {
			need("grants")
			pr := params()
			peers := []*tester.Peer{peer(0), peer(1)}
			n := pr.MaxOvercommit + 2
			var msgs []msgSpec
			for i := 0; i < n; i++ {
				m := newRequest(pastU(20000*(i+1)), 100)
				msgs = append(msgs, m)
			}
			// Shortest first, alternating senders: no later arrival
			// outranks an earlier one, so the active set is the first
			// max_overcommit messages and the longest two wait.
			lowest := []uint8{ctrlLevel(pr), ctrlLevel(pr)} // each sender's lowest DATA level
			for i := 0; i < n; i++ {
				msgs[i].sendUnsched(peers[i%2], 0, unsched(msgs[i].msgLen))
				lowest[i%2] = min(lowest[i%2], msgs[i].unschedPrio())
			}
			// Once the IUT has processed every unscheduled byte (a barrier
			// behind the DATA from each sender), at most max_overcommit
			// messages hold GRANTs: the GRANTs those DATA triggered left
			// the IUT at level 7 before the barrier's RPC_UNKNOWN did.
			ends := []*tester.Packet{barrier(peers[0], lowest[0]), barrier(peers[1], lowest[1])}
			for i, m := range msgs[pr.MaxOvercommit:] {
				k := (i + pr.MaxOvercommit) % 2
				before := func(p *tester.Packet) error {
					if p.At.After(ends[k].At) {
						return errEarly // after the barrier: not counted
					}
					return nil
				}
				var early []string
				for _, g := range peers[k].Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id,
					Checks: []tester.Check{before}}) {
					early = append(early, g.String())
				}
				none(early, "message %d of %d (%d bytes) got a GRANT while the %d shorter ones were waiting; max_overcommit is %d",
					i+pr.MaxOvercommit+1, n, m.msgLen, pr.MaxOvercommit, pr.MaxOvercommit)
			}
			sent := make([]int, n)
			for i, m := range msgs {
				sent[i] = unsched(m.msgLen)
			}
			order := driveRequests(peers, msgs, sent)
			Expect(order).To(HaveLen(n))
			Expect(order[0]).To(BeNumerically("<", 2),
				"the first message granted to its end is one of the two shortest; order %v (0 = shortest)", order)
			// HOMA-GRANT-011 (SRPT ranking) and the checker's form of
			// HOMA-GRANT-006 compare bytes the receiver has received, which a
			// capture at the senders overstates while bytes are in flight:
			// they are this spec's focus on the switch capture of passive
			// specs; here, as every rule outside the spec's own, their
			// (SHOULD) findings are warnings.
			checkRules("HOMA-GRANT-007", peers...)
		}))

	It("GRANT-overcommit-all: a receiver given exactly max_overcommit messages longer than unsched_bytes grants every one of them, each a GRANT within response_timeout of its unscheduled bytes, before any is complete",
		labels("grant", "MUST", "HOMA-GRANT-010"), body(func() {
			need("grants")
			pr := params()
			k := pr.MaxOvercommit
			if pr.MaxRPCsPerPeer > 0 && 2*pr.MaxRPCsPerPeer < k {
				Skip(fmt.Sprintf("unsupported: max_rpcs_per_peer %d lets the receiver grant at most %d messages from the two tester hosts at once, fewer than max_overcommit %d (a max_rpcs_per_peer of %d or more runs it; HomaModule main has had no such limit since 3daedc3, and linux_6.13.9 takes 0 as no GRANTs at all)", pr.MaxRPCsPerPeer, 2*pr.MaxRPCsPerPeer, k, (k+1)/2))
			}
			seg := maxSegData()
			// Each a few segments past U, longer in the order they are
			// sent: a receiver with one active slot too few leaves the
			// last, which outranks none of the others (SRPT), without a
			// GRANT.
			var msgs []msgSpec
			total := 0
			for i := 0; i < k; i++ {
				m := newRequest(pastU((3+i)*seg), 100)
				msgs = append(msgs, m)
				total += m.msgLen
			}
			// Every GRANT is at most a message's scheduled bytes, and
			// its unscheduled bytes count as incoming until they arrive
			// (homa_grant_update_incoming): within max_incoming, no GRANT
			// waits for incoming to drain (homa_grant_try_send).
			if total > int(pr.MaxIncoming) {
				Skip(fmt.Sprintf("unsupported: max_overcommit %d messages of %d bytes in all exceed max_incoming %d, which may hold a GRANT back until bytes arrive (max_incoming %d or more, or a smaller unsched_bytes or max_overcommit, runs it)", k, total, pr.MaxIncoming, total))
			}
			peers := []*tester.Peer{peer(0), peer(1)}
			// Alternating senders. A message becomes grantable at its
			// first DATA; HomaModule keeps max_overcommit of them active
			// (homa_grant_manage_rpc: homa_grant_find_victim gives each
			// of these an empty slot) until its last byte arrives
			// (homa_grant_check_rpc → homa_grant_unmanage_rpc), and grants
			// each active message up to its window (homa_grant_try_send).
			// The tester sends no scheduled byte until every message has
			// a GRANT, so none completes and frees a slot meanwhile.
			sent := make([]int, k)
			for i, m := range msgs {
				sent[i] = unsched(m.msgLen)
				m.sendUnsched(peers[i%2], 0, sent[i])
			}
			// missing answers the RESENDs that came and lists the
			// messages still without a GRANT. A message granted and not
			// sent on RESENDs after resend_ticks: its sender, which has
			// not transmitted what is asked for, answers BUSY
			// (homa_resend_pkt), so that no RPC times out and frees a
			// slot (at a short tick the wait's bound outlasts
			// timeout_ticks).
			missing := func() []string {
				var without []string
				for i, m := range msgs {
					m.answerBusy(peers[i%2])
					if len(peers[i%2].Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id})) == 0 {
						without = append(without, fmt.Sprintf("message %d of %d (%d bytes, from %v)", i+1, k, m.msgLen, peers[i%2].Addr()))
					}
				}
				return without
			}
			grantedBy := func(by time.Time) (bool, error) {
				for {
					seen := tester.Arrivals(peers...)
					if len(missing()) == 0 {
						return true, nil
					}
					if !env.Clock.Now().Before(by) {
						return false, nil
					}
					if err := tester.WaitArrival(ctx(), by.Sub(env.Clock.Now()), seen, peers...); err != nil {
						return false, err
					}
				}
			}
			bound := wait(pr.ResponseTimeout + pr.Tick)
			start := env.Clock.Now()
			granted, err := grantedBy(start.Add(bound))
			ok(err, "waiting for the GRANTs")
			if !granted {
				// Past wait's generous bound only a late GRANT is
				// excused (timing-inconclusive): one that came within the
				// bound plus what the measured stalls lost
				// (lateWithinStalls), one stall having lost a quarter of
				// the bound. A GRANT still missing fails however loaded
				// the machine (any stall overlapping the wait excused it
				// before).
				msg := fmt.Sprintf("no GRANT within %v of its unscheduled bytes, with the %d messages the IUT had all incomplete; max_overcommit %d lets it grant every one", bound, k, k)
				without := missing()
				if now := env.Clock.Now(); lateWithinStalls(start, now, grantedBy) && stalledLongest(msg+": "+strings.Join(without, "; "), start, now, bound/4) {
					panic(stalledOut{})
				}
				// Ended at the IUT first, so that the specs after do not
				// find its grant slots taken.
				for i, m := range msgs {
					m.giveUp(peers[i%2], "the spec failed")
				}
				none(without, "%s", msg)
			}
			driveRequests(peers, msgs, sent)
			checkExchange(peers...)
		}))

	It("GRANT-overcommit-cap: a receiver given max_overcommit+1 messages longer than unsched_bytes, the longest sent last, grants the longest nothing (bar FIFO GRANTs) while the others are incomplete, not granted to their end, and their senders send what was granted",
		labels("grant", "MUST", "HOMA-GRANT-006", "HOMA-GRANT-010"), body(func() {
			need("grants")
			pr := params()
			k := pr.MaxOvercommit
			if k < 1 {
				Skip(fmt.Sprintf("unsupported: max_overcommit %d grants no message at all (max_overcommit 1 or more runs it)", k))
			}
			seg := maxSegData()
			w := int(pr.GrantWindow())
			// Every other message longer than U, the largest window and
			// two FIFO increments: neither the SRPT GRANT its
			// unscheduled bytes draw while it is alone nor a FIFO GRANT
			// after it grants it to its end (which frees its slot in
			// linux_6.13.9 and lets the next message in). The longest
			// is longer than every other by a few segments: it outranks
			// none of them, by bytes left to receive or to grant
			// (GRANT-08), so no version evicts one for it
			// (homa_grant_find_victim).
			inc := int(pr.FIFOGrantIncrement)
			var msgs []msgSpec
			for i := 0; i <= k; i++ {
				msgs = append(msgs, newRequest(pastU(w+2*inc+(i+1)*4*seg), 100))
			}
			long := msgs[k]
			// Alternating senders, the longest last: the newest, so
			// that no FIFO GRANT, which goes to the oldest message
			// (homa_grant_check_fifo), is owed to it. HomaModule main
			// keeps max_overcommit messages active (homa_grant_manage_rpc);
			// linux_6.1.38 and linux_6.13.9 fewer still with
			// max_rpcs_per_peer (each tester host has a shorter message
			// to grant first): either way the longest waits until a
			// message is granted to its end or ends.
			peers := []*tester.Peer{peer(0), peer(1)}
			sent := make([]int, k+1)
			for i, m := range msgs {
				sent[i] = unsched(m.msgLen)
				m.sendUnsched(peers[i%2], 0, sent[i])
			}
			// Level 0 barriers queue behind every DATA the tester sent;
			// the GRANTs that DATA drew (level 7) arrived before their
			// RPC_UNKNOWN. Then rounds: the others' senders send what
			// their GRANTs allow (requestDriver.step on the others
			// only), and the IUT grants again as those bytes arrive,
			// which frees max_incoming the first GRANTs took (a message
			// alone gets the whole window), until the longest has a
			// GRANT, another message is granted to its end, or four
			// rounds went by.
			barriers := func() []*tester.Packet { return []*tester.Packet{barrier(peers[0], 0), barrier(peers[1], 0)} }
			wholeAt := func() (time.Time, bool) { // the first GRANT granting another message to its end
				var at time.Time
				for i, m := range msgs[:k] {
					for _, g := range peers[i%2].ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}) {
						if int(g.Pkt.Grant().Offset()) >= m.msgLen && (at.IsZero() || g.At.Before(at)) {
							at = g.At
						}
					}
				}
				return at, !at.IsZero()
			}
			ends := barriers()
			d := &requestDriver{peers: peers, msgs: msgs[:k], sent: sent[:k], left: k,
				done: make([]bool, k), acked: make([]bool, k), fullyGranted: make([]bool, k)}
			for round := 0; round < 4; round++ {
				if _, whole := wholeAt(); whole || len(peers[k%2].Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: long.id})) > 0 {
					break
				}
				d.step()
				ends = barriers()
			}
			// The window judged ends at the last barriers, or earlier at
			// the first GRANT that granted another message to its end
			// (a slot may free then).
			cut := ends[k%2].At
			if at, whole := wholeAt(); whole && at.Before(cut) {
				cut = at
			}
			// A FIFO GRANT (level num_priorities-2, distinct from the
			// scheduled levels, raising the offset by at most
			// fifo_grant_increment) is excused: linux_6.13.9's
			// homa_grant_find_oldest skips active_rpcs[0] and messages
			// with enough granted, and may come to the newest.
			fifo := pr.FIFOGrantInterval() > 0 && pr.HighPriority() > pr.MaxSchedPrio
			granted := sent[k]
			var bad []string
			for _, g := range peers[k%2].Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: long.id}) {
				if !g.At.Before(cut) {
					continue
				}
				off := int(g.Pkt.Grant().Offset())
				if fifo && int(g.Pkt.Grant().Priority()) == pr.HighPriority() && off <= granted+int(pr.FIFOGrantIncrement) {
					granted = max(granted, off)
					continue
				}
				bad = append(bad, g.String())
			}
			if len(bad) > 0 {
				for i, m := range msgs {
					m.giveUp(peers[i%2], "the spec failed")
				}
			}
			none(bad, "the longest of %d messages (%d bytes, sent last) got an SRPT GRANT while the %d shorter ones were incomplete and none granted to its end; max_overcommit is %d",
				k+1, long.msgLen, k, k)
			driveRequests(peers, msgs, sent)
			// As GRANT-srpt: HOMA-GRANT-006's checker form compares bytes
			// received, which a capture at the senders overstates.
			checkRules("HOMA-GRANT-007", peers...)
		}))

	It("GRANT-waiting-alive: messages a receiver does not grant yet (past max_overcommit) stay alive while it grants the others a segment a tick for longer than timeout_ticks, then are granted and complete",
		labels("grant", "MUST", "HOMA-RESEND-009", "HOMA-RESEND-019"), body(func() {
			quietFits(params().Tick) // the senders hear a GRANT a tick
			// Not labelled HOMA-GRANT-010 (which messages get the slots
			// when): a measured stall excusing a grant-timing finding
			// would leave this spec unjudged, and its subject is only
			// that the waiting messages live. A MUST finding of any rule
			// still fails it.
			need("grants")
			pr := params()
			peers := []*tester.Peer{peer(0), peer(1)}
			n := pr.MaxOvercommit + 2
			start := env.Clock.Now()
			seg := maxSegData()
			// A message waiting for its receiver's own GRANTs owes the
			// receiver nothing: HomaModule zeroes its silent_ticks while
			// every granted byte has arrived (homa_timer_check_rpc), so it
			// neither RESENDs nor times out however long SRPT keeps it
			// waiting. The senders hold the active messages to a segment a
			// tick for half as long again as timeout_ticks; each is long
			// enough to last that.
			hold := holdTicks()
			pastU(seg) // a segment at least to grant
			var msgs []msgSpec
			for i := 0; i < n; i++ {
				msgs = append(msgs, newRequest(min(unsched(1<<30)+(hold+10)*seg+20000*(i+1), int(pr.MaxMessageLength)), 100))
			}
			// Shortest first, alternating senders, as in GRANT-srpt: the
			// longest two are the ones an SRPT receiver keeps waiting.
			sent := make([]int, n)
			for i, m := range msgs {
				sent[i] = unsched(m.msgLen)
				m.sendUnsched(peers[i%2], 0, sent[i])
			}
			horizon := slices.Clone(sent)
			prio := make([]uint8, n)
			granted := make([]bool, n)
			// A tester that cannot keep a segment a tick (a short tick on
			// a busy machine) leaves the IUT's messages silent for ticks
			// at a time: their RESENDs are the protocol's, and the spec
			// cannot judge what it is about. Four times the hold, and the
			// slack ten times, bound the loop in real time; past that the
			// spec is timing-inconclusive and gives its requests up (an
			// RPC_UNKNOWN, as a client that forgot them answers; the
			// server ends them) (at tick_ns 200000 beside two CPU hogs
			// it ran into its 5-minute node timeout, helper-161).
			budget := deadline(window(4*pr.Ticks(hold) + 9*env.Slack))
			for t := 0; t < hold; t++ {
				if !env.Virtual && !env.Clock.Now().Before(budget) {
					AddReportEntry(entryInconclusive, fmt.Sprintf("the tester kept a segment a tick for only %d of %d ticks (of %v) in %v: too busy a machine for this tick", t, hold, pr.Tick, env.Clock.Now().Sub(start)))
					for i, m := range msgs {
						if len(peers[i%2].Received(tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id})) == 0 {
							m.giveUp(peers[i%2], "it could not keep a segment a tick")
						}
					}
					return
				}
				pause(deadline(pr.Tick), "waiting a tick between segments")
				for i, m := range msgs {
					p := peers[i%2]
					for _, g := range m.takeGrants(p) {
						horizon[i] = max(horizon[i], min(int(g.Pkt.Grant().Offset()), m.msgLen))
						prio[i], granted[i] = g.Pkt.Grant().Priority(), true
					}
					if horizon[i] > sent[i] {
						to := min((sent[i]/seg+1)*seg, horizon[i])
						m.sendData(p, sent[i], to, prio[i])
						sent[i] = to
					}
					m.answerResends(p, sent[i])
				}
			}
			waited := slices.Index(granted, false) >= 0
			// The hold is over: send what is granted, and let
			// driveRequests send the rest as the GRANTs come.
			for i, m := range msgs {
				if horizon[i] > sent[i] {
					m.sendData(peers[i%2], sent[i], horizon[i], prio[i])
					sent[i] = horizon[i]
				}
			}
			// It fails unless every message is answered, late only
			// within what measured stalls lost, or a tester was held up
			// for timeout_ticks (its sender then went silent that long:
			// the IUT's timeout is the protocol's) (failStuck). Stalls
			// over the exchange that lost most of timeout_ticks between
			// them excused it before, a receiver that never grants among
			// them.
			driveRequests(peers, msgs, sent)
			if !waited {
				AddReportEntry("note", fmt.Sprintf("the IUT granted all %d messages within the first %d ticks: none waited for its GRANTs", n, hold))
			}
			checkExchange(peers...)
		}))

	It("GRANT-held-response-alive: a server whose response waits for its client's GRANTs for longer than timeout_ticks keeps the RPC (it has the whole request, so it counts no silence) and sends the rest of the response once granted",
		labels("grant", "MUST", "HOMA-RESEND-019", "HOMA-SEND-001"), body(func() {
			need("grants")
			hold := holdTicks()
			p := peer(0)
			pr := params()
			// The server sends the response's unscheduled bytes and waits
			// at its grant horizon. A client that has every byte it granted
			// counts no silence (homa_timer_check_rpc, RPC_INCOMING), so it
			// may withhold GRANTs as long as it likes (granting other
			// messages, say): it neither RESENDs nor times out, and here it
			// sends nothing for half as long again as timeout_ticks. A
			// server RPC past RPC_INCOMING has its silent_ticks zeroed on
			// every pass (homa_timer_check_rpc): it never times out while
			// its response waits, so the GRANT after the hold must let the
			// rest out (homa_grant_pkt).
			m := heldResponse(p)
			u := unsched(m.respLen)
			pause(deadline(pr.Ticks(hold)), "holding the response's GRANTs for %d ticks", hold)
			// The GRANT receiveGranted would send, which the rest of the
			// exchange (msgSpec.ack) goes on from.
			off := testerGrant(m.respLen, u)
			granted := p.Now()
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.GrantFields{Common: m.control(), Offset: uint32(off)})).To(Succeed())
			x, err := p.Expect(ctx(), tester.Match{From: iut(), RPC: m.id, Checks: []tester.Check{func(x *tester.Packet) error {
				switch t := x.Pkt.Type(); {
				case t == wire.TypeRPCUnknown:
					return nil
				case t != wire.TypeData:
					return fmt.Errorf("a %v", t)
				case int(x.Pkt.Data().Offset()) < u:
					return fmt.Errorf("offset %d: not past the %d unscheduled bytes", x.Pkt.Data().Offset(), u)
				}
				return nil
			}}}, wait(pr.ResponseTimeout+pr.Tick))
			ended := fmt.Sprintf("the IUT's server ended an RPC whose response waited for GRANTs (%d of %d bytes sent, the request whole; no GRANT for %d ticks, timeout_ticks %d)", u, m.respLen, hold, pr.TimeoutTicks)
			ok(err, "%s: no response bytes past %d within %v of a GRANT to %d", ended, u, wait(pr.ResponseTimeout+pr.Tick), off)
			if x.Pkt.Type() == wire.TypeRPCUnknown {
				Fail(fmt.Sprintf("%s: RPC_UNKNOWN %v after a GRANT to %d", ended, x.At.Sub(granted), off))
			}
			// The rest as it is granted, then the NEED_ACK the tester
			// answers.
			m.ack(p)
			checkExchange(p)
		}))

	It("GRANT-srpt-priority: a receiver granting two messages gives the one with clearly fewer bytes left a higher scheduled priority in its SRPT GRANTs",
		labels("grant", "MUST", "HOMA-GRANT-011", "HOMA-GRANT-007"), body(func() {
			pr := params()
			u, w, srpt := srptPairNeeds()
			pl, ps := peer(0), peer(1)
			// The long message stays clearly behind the short one even
			// after its FIFO GRANTs (net-next and linux_6.13.9 grant
			// fifo_grant_increment right after the first SRPT GRANT) and
			// against main's ranking by the short message's bytes left
			// when it joined (active_remaining, not updated).
			short := newRequest(pastU(10000), 100)
			long := newRequest(min(u+3*w+2*int(pr.FIFOGrantIncrement)+short.msgLen, int(pr.MaxMessageLength)), 100)
			if long.msgLen-short.msgLen <= int(pr.RankTolerance) {
				Skip(fmt.Sprintf("unsupported: max_message_length %d leaves no message clearly longer (rank_tolerance %d) than a %d-byte one past unsched_bytes %d", pr.MaxMessageLength, pr.RankTolerance, short.msgLen, pr.UnschedBytes))
			}
			long.sendUnsched(pl, 0, u)
			g1, err := pl.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: long.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the long message's first GRANT")
			barrier(pl, long.unschedPrio())
			// Every GRANT the long message drew while alone (an IUT may
			// grant per packet, all at level 0) came before the barrier's
			// answer: taken now, so that the GRANT compared below is one
			// its DATA drew after the short one joined.
			to1 := int(g1.Pkt.Grant().Offset())
			for _, g := range long.takeGrants(pl) {
				to1 = max(to1, int(g.Pkt.Grant().Offset()))
			}
			to1 = min(to1, long.msgLen)
			if to1 >= long.msgLen {
				Skip(fmt.Sprintf("unsupported: the %d-byte message was granted whole (%d) before a second one could join (window %d, fifo_grant_increment %d)", long.msgLen, to1, w, pr.FIFOGrantIncrement))
			}
			// A FIFO GRANT is not held to max_incoming (homa_grant_check_fifo):
			// with the long message's granted bytes filling it, the short
			// one's first GRANT waits for bytes this spec sends only after.
			if to1-u >= int(pr.MaxIncoming) {
				Skip(fmt.Sprintf("unsupported: the long message holds %d granted bytes not sent (window %d, fifo_grant_increment %d), which leave no room under max_incoming %d for a second message", to1-u, w, pr.FIFOGrantIncrement, pr.MaxIncoming))
			}
			// The short message joins: of n = 2 messages being granted, the
			// one with fewer bytes left to receive and to grant ranks first
			// and gets level min(max_sched_prio, n-1) = 1, the other 0
			// (HomaModule homa_grant: the lowest levels while fewer
			// messages than levels; facts GRANT-09). Neither message's
			// rank can change before the GRANTs below: the short one is
			// 10000 bytes past U, the long one 3 windows.
			short.sendUnsched(ps, 0, u)
			gs, err := ps.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: short.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the short message's first GRANT")
			// The long message's granted bytes draw its next SRPT GRANT,
			// sent while the short message is still incomplete.
			g2, sentL := long.nextSRPTGrant(pl, u, to1, g1.Pkt.Grant().Priority(), srpt)
			Expect(gs.Pkt.Grant().Priority()).To(BeNumerically(">", g2.Pkt.Grant().Priority()),
				"SRPT: want the %d-byte message's GRANT (%s) at a higher priority than the %d-byte message's GRANT its DATA drew after that (%s), while both were incomplete",
				short.msgLen, gs, long.msgLen, g2)
			finishPair(pl, ps, long, short, sentL, u, g2, gs)
		}))

	It("GRANT-srpt-remaining: a receiver ranks the messages it grants by bytes left to receive, not by length: a long message mostly received gets a scheduled priority at least as high as a shorter one with clearly more bytes left",
		labels("grant", "MUST", "HOMA-GRANT-011", "HOMA-GRANT-007"), body(func() {
			// homa_grant_outranks ranks by msgin.bytes_remaining (an earlier
			// Homa ranked by ungranted bytes, which orders these two the
			// same way); a receiver ranking by length grants the shorter
			// message above the one nearly done, the priority inversion
			// SRPT exists to avoid.
			pr := params()
			u, w, srpt := srptPairNeeds()
			pl, ps := peer(0), peer(1)
			tol, inc := int(pr.RankTolerance), int(pr.FIFOGrantIncrement)
			// The long message is sent past target first. After that it
			// keeps more than two windows and two FIFO increments to
			// grant (its next SRPT GRANT below cannot grant it whole,
			// which would take it out of the active set), and the short
			// message, joining then, has clearly more bytes left
			// (2*rank_tolerance) yet is clearly shorter (the target is
			// 3*rank_tolerance past U and more).
			target := u + max(w, 4*tol)
			n := target + 2*w + 4*inc + 3*tol
			if n > int(pr.MaxMessageLength) {
				Skip(fmt.Sprintf("unsupported: the spec needs a %d-byte message (unsched_bytes %d, window %d, fifo_grant_increment %d, rank_tolerance %d), longer than max_message_length %d", n, pr.UnschedBytes, w, inc, tol, pr.MaxMessageLength))
			}
			long := newRequest(n, 100)
			long.sendUnsched(pl, 0, u)
			_, sentL := long.sendGrantedTo(pl, u, target)
			// Every GRANT those bytes drew came before the barrier's
			// answer (level 0: behind every DATA sent): the horizon the
			// long message holds before the short one joins.
			barrier(pl, 0)
			gL := sentL
			var prioL uint8
			for _, g := range long.takeGrants(pl) {
				gL, prioL = max(gL, min(int(g.Pkt.Grant().Offset()), long.msgLen)), g.Pkt.Grant().Priority()
			}
			if gL >= long.msgLen {
				Skip(fmt.Sprintf("unsupported: the %d-byte message was granted whole (%d) before a second one could join (window %d, fifo_grant_increment %d)", long.msgLen, gL, w, inc))
			}
			short := newRequest(u+(long.msgLen-sentL)+2*tol, 100)
			short.sendUnsched(ps, 0, u)
			gs, err := ps.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: short.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the %d-byte message's first GRANT (the %d-byte one has %d bytes left)", short.msgLen, long.msgLen, long.msgLen-sentL)
			g2, sentL := long.nextSRPTGrant(pl, sentL, gL, prioL, srpt)
			// HomaModule main ranks against the bytes the other message
			// had left when it entered the active set (active_remaining,
			// homa_grant_try_send): both messages may get the top level
			// there, so only a lower level for the long one is wrong.
			Expect(g2.Pkt.Grant().Priority()).To(BeNumerically(">=", gs.Pkt.Grant().Priority()),
				"SRPT by bytes left: want the %d-byte message with %d bytes left (%s) at a priority no lower than the %d-byte message with %d left (%s, before)",
				long.msgLen, long.msgLen-sentL, g2, short.msgLen, short.msgLen-u, gs)
			finishPair(pl, ps, long, short, sentL, u, g2, gs)
		}))

	It("GRANT-displaced-in-flight: a receiver keeps granting a long message that has granted DATA in flight and fewer bytes left, to receive and to grant, than a newcomer that fills its max_overcommit: an SRPT GRANT past the message's granted offset once that DATA arrives",
		labels("grant", "MUST", "HOMA-GRANT-010", "HOMA-GRANT-007"), body(func() {
			// The newcomer is shorter than the long message X, so a
			// receiver ranking by length puts X last and leaves it out
			// once the newcomer fills max_overcommit.
			// Every version keeps X (facts GRANT-08): linux_6.1.38
			// re-picks the active set by bytes left (homa_grant_recalc,
			// homa_grant_pick_rpcs) and linux_6.13.9 inserts by bytes
			// left to grant (homa_grant_insert_active): X stays active in
			// both and is granted on its DATA. Main ranks active messages
			// by the bytes left when each joined (active_remaining, about
			// X's length): the newcomer evicts X (homa_grant_find_victim),
			// but X's next DATA compares afresh and brings it back
			// (homa_grant_update_incoming → homa_grant_promote_rpc) with
			// its true bytes left; homa_grant_try_send grants it at once
			// unless another active message is needy (max_incoming held
			// its grant back), and homa_grant_check_needy serves needy
			// ones by that value. So nothing here may be short of room:
			// the max_overcommit-1 others active beside X are short
			// (fewer bytes left than X: granted whole at once, they hold
			// their slots until complete, which the tester never makes
			// them), and the newcomer's window fits beside X's. All come
			// from one tester host: main picks a victim on the host with
			// the most active messages, and with linux_6.13.9's
			// max_rpcs_per_peer 1 X holds its host's only slot.
			need("grants")
			pr := params()
			if pr.FIFOGrantIncrement > 0 && pr.HighPriority() <= pr.MaxSchedPrio {
				Skip(fmt.Sprintf("unsupported: FIFO GRANTs (level %d) cannot be told from SRPT GRANTs (levels 0-%d) with num_priorities %d", pr.HighPriority(), pr.MaxSchedPrio, pr.NumPriorities))
			}
			srpt := tester.In("priority", 0, uint64(pr.MaxSchedPrio))
			p := peer(0)
			k := pr.MaxOvercommit
			u, seg := unsched(1<<30), maxSegData()
			tol, inc := int(pr.RankTolerance), int(pr.FIFOGrantIncrement)
			w1, wk := int(pr.WindowFor(1)), int(pr.WindowFor(k))
			// X is sent past U + 3·rank_tolerance (so that the newcomer,
			// with 2·rank_tolerance more bytes left than X, is still
			// shorter) and keeps, beyond the window it holds and FIFO
			// GRANTs (it is the oldest), more to grant than a window.
			start := u + 3*tol + seg
			x := newRequest(start+w1+2*wk+4*inc+4*seg, 100)
			fillers := make([]msgSpec, max(0, k-1))
			for i := range fillers {
				fillers[i] = newRequest(u+2*seg, 100)
			}
			// Room under max_incoming for the short ones' scheduled
			// bytes, X's window and two FIFO increments, and the
			// newcomer's window.
			if room := (k-1)*2*seg + 2*wk + 2*inc; x.msgLen > int(pr.MaxMessageLength) || room > int(pr.MaxIncoming) {
				Skip(fmt.Sprintf("unsupported: the spec needs a %d-byte message (max_message_length %d) and %d bytes of room under max_incoming %d (window(%d) %d, fifo_grant_increment %d)", x.msgLen, pr.MaxMessageLength, room, pr.MaxIncoming, k, wk, inc))
			}
			x.sendUnsched(p, 0, u)
			barrier(p, 0)
			// The others join: X's window shrinks to window(k).
			for _, f := range fillers {
				f.sendUnsched(p, 0, u)
			}
			barrier(p, 0)
			// X is sent as granted to start at least; the GRANTs its last
			// bytes drew (all before the barrier's answer) leave it
			// granted DATA not yet sent.
			_, sent := x.sendGrantedTo(p, u, start)
			barrier(p, 0)
			for _, f := range fillers {
				f.answerBusy(p)
			}
			granted, prio := sent, uint8(0)
			take := func() {
				for _, g := range x.takeGrants(p) {
					granted, prio = max(granted, min(int(g.Pkt.Grant().Offset()), x.msgLen)), g.Pkt.Grant().Priority()
				}
			}
			take()
			if granted >= x.msgLen || granted <= sent {
				Skip(fmt.Sprintf("unsupported: the %d-byte message, sent up to %d, was granted up to %d (window(%d) %d, fifo_grant_increment %d): want granted bytes in flight and more to grant", x.msgLen, sent, granted, k, wk, inc))
			}
			// The newcomer: 2·rank_tolerance more bytes left after its
			// unscheduled bytes than X has now (to receive; to grant X
			// has fewer still), and shorter than X.
			left := x.msgLen - sent
			nk := newRequest(u+left+2*tol, 100)
			Expect(nk.msgLen).To(BeNumerically("<", x.msgLen))
			nk.sendUnsched(p, 0, u)
			barrier(p, 0)
			for _, f := range fillers {
				f.answerBusy(p)
			}
			take() // (a FIFO GRANT to X, the oldest, meanwhile)
			if granted >= x.msgLen {
				Skip(fmt.Sprintf("unsupported: FIFO GRANTs granted the %d-byte message whole (fifo_grant_increment %d)", x.msgLen, inc))
			}
			// X's granted DATA arrives; nothing else moves. The others
			// are kept alive (BUSY to their RESENDs): one timing out
			// would free a slot and let X back in any receiver.
			others := append(fillers, nk)
			x.sendData(p, sent, granted, prio)
			awaitKeepingBusy(p, others, tester.Match{Type: wire.TypeGrant, From: iut(), RPC: x.id,
				Checks: []tester.Check{srpt, tester.In("offset", uint64(granted)+1, math.MaxUint32)}}, wait(pr.ResponseTimeout+pr.Tick),
				fmt.Sprintf("an SRPT GRANT past %d for the %d-byte message once its granted bytes arrived (%d bytes left, %d to grant), beside %d shorter messages granted whole and a %d-byte newcomer with %d bytes left (max_overcommit %d): a receiver ranking by length leaves it out",
					granted, x.msgLen, left, x.msgLen-granted, len(fillers), nk.msgLen, nk.msgLen-u, k))
			x.giveUp(p, "the spec is done with it")
			for _, m := range others {
				m.giveUp(p, "the spec is done with it")
			}
			checkExchange(p)
		}))

	It("GRANT-fifo-oldest: a receiver's FIFO GRANTs (level num_priorities-2) go to the oldest message it is granting (the earliest first DATA, whatever the RPC ids) while that one is eligible: a younger message gets one only as the receiver's kept choice or while the oldest may hold window + 2·fifo_grant_increment granted bytes not received",
		labels("grant", "MUST", "HOMA-GRANT-022", "HOMA-GRANT-018", "HOMA-GRANT-007"), body(func() {
			need("grants")
			needFIFOGrants()
			pr := params()
			// A MUST: how much bandwidth FIFO grants take is a tunable's
			// (grant_fifo_fraction; FIFO-01), but which message one goes
			// to is not: homa_grant_check_fifo grants grant->oldest_rpc
			// and nothing else, the choice homa_grant_find_oldest makes.
			// HomaModule homa_grant_check_fifo grants fifo_grant_increment
			// to grant->oldest_rpc, the message with the earliest birth
			// (first DATA) that homa_grant_find_oldest found among those
			// being granted and not fully granted, with fewer than window +
			// 2·fifo_grant_increment granted bytes not received; it keeps
			// that choice while it stays eligible. FIFO grants come at most
			// every fifo_grant_interval (320 µs at 25 Gbit/s), right after
			// an SRPT GRANT: the messages are long, so that the exchange
			// lasts several intervals. The old message comes first, from
			// one peer; two younger ones join once it is being granted, one
			// from each peer (the newest from the old one's peer).
			// RPC ids come from each client host's own counter
			// (homa_rpc_alloc_client), and a host need not start its
			// messages in the order it made them, so ids say nothing of
			// age: the newest message has the lowest id, which a receiver
			// that took the lowest id for the oldest message would
			// FIFO-grant instead (the age is the first DATA's:
			// msgin.birth); the other younger message has the highest.
			peers := []*tester.Peer{peer(0), peer(1)}
			newest := newRequest(min(int(pr.MaxMessageLength), pastU(400000)), 100)
			old := newRequest(min(int(pr.MaxMessageLength), 1000000), 100)
			msgs := []msgSpec{old, newRequest(min(int(pr.MaxMessageLength), pastU(400000)), 100), newest}
			for _, m := range msgs {
				if unsched(m.msgLen) >= m.msgLen {
					Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves nothing to grant in a %d-byte message (unsched_bytes=40000 runs it)", pr.UnschedBytes, m.msgLen))
				}
			}
			old.sendUnsched(peers[0], 0, unsched(old.msgLen))
			g1, err := peers[0].Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: old.id}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the old message's first GRANT")
			sent := []int{unsched(old.msgLen), 0, 0}
			// The younger messages' first DATA come clearly later (in the
			// simulator no time passes otherwise, and messages born at
			// one instant have no oldest).
			pause(deadline(10*time.Microsecond), "the pause before the younger messages")
			joined := env.Clock.Now()
			// The old message is kept eligible from here on: it holds
			// few granted bytes the receiver has not got. Granted alone,
			// it holds a window of max_incoming/2 (and maybe a FIFO
			// increment), which, once younger messages have shrunk the
			// receiver's window (windows[num_active]), can reach window +
			// 2·fifo_grant_increment; a receiver that then chose a
			// younger message for a FIFO GRANT would keep that choice
			// while it stays eligible (homa_grant_check_fifo keeps
			// grant->oldest_rpc). So each time a younger message has
			// joined (a barrier answered after its DATA), the tester sends
			// every byte the old message was granted, then a barrier on
			// the old message's peer: when it is answered the receiver
			// has those bytes (held: the barrier's answer, and the old
			// message's bytes sent before it). An SRPT GRANT then leaves
			// the old message at most the receiver's window of the
			// moment outstanding, which no later arrival shrinks once the
			// newest message has joined, and each round below sends what
			// FIFO GRANTs added.
			held := map[*tester.Packet]int{}
			msgs[1].sendUnsched(peers[1], 0, unsched(msgs[1].msgLen))
			sent[1] = unsched(msgs[1].msgLen)
			barrier(peers[1], 0)
			sent[0] = old.applyGrants(peers[0], sent[0], append([]*tester.Packet{g1}, old.takeGrants(peers[0])...))
			held[barrier(peers[0], 0)] = sent[0]
			newest.sendUnsched(peers[0], 0, unsched(newest.msgLen))
			sent[2] = unsched(newest.msgLen)
			sent[0] = old.applyGrants(peers[0], sent[0], old.takeGrants(peers[0]))
			settled := barrier(peers[0], 0)
			held[settled] = sent[0]
			// FIFO grants come at most every fifo_grant_interval, right
			// after an SRPT GRANT, which DATA draws: the tester sends what
			// the GRANTs allow in rounds a step apart (in the simulator the
			// IUT answers in no time), so that the exchange lasts several
			// intervals, then finishes it as a sender would.
			const step = 400 * time.Microsecond
			for round := 0; round < 16; round++ {
				pause(deadline(step), "the pause between rounds of DATA")
				moved := false
				for i, m := range msgs {
					if to := m.applyGrants(peers[i%2], sent[i], m.takeGrants(peers[i%2])); to > sent[i] {
						sent[i], moved = to, true
					}
				}
				if !moved {
					break
				}
			}
			driveRequests(peers, msgs, sent)
			// The receiver granted at most these messages, so its window
			// was at least max_incoming/(n+1) (homa_grant_update_sysctl_deps)
			// while they were being granted.
			w := int(pr.WindowFor(min(len(msgs), pr.MaxOvercommit)))
			limit := w + 2*int(pr.FIFOGrantIncrement)
			type fifoGrant struct {
				p   *tester.Packet
				msg int
			}
			var fifo []fifoGrant
			for i, m := range msgs {
				for _, g := range peers[i%2].ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}) {
					if int(g.Pkt.Grant().Priority()) == pr.HighPriority() && g.At.After(joined) {
						fifo = append(fifo, fifoGrant{g, i})
					}
				}
			}
			slices.SortStableFunc(fifo, func(a, b fifoGrant) int { return a.p.At.Compare(b.p.At) })
			if len(fifo) == 0 {
				AddReportEntry("note", fmt.Sprintf("no FIFO GRANT came while the %d-byte message and two younger ones were being granted: nothing judged", old.msgLen))
			}
			// The old message's bytes the tester had sent by a time, and
			// the largest GRANT offset it had got for it.
			sentBy := func(t time.Time) int {
				end := 0
				for _, x := range peers[0].Log() {
					if x.Sent && x.Err == nil && !x.At.After(t) && x.Pkt.Type() == wire.TypeData && x.Pkt.SenderID() == old.id {
						end = max(end, int(x.Pkt.Data().Offset())+x.Pkt.Data().DataLen())
					}
				}
				return end
			}
			grantedBy := func(t time.Time) int {
				g := unsched(old.msgLen)
				for _, x := range peers[0].ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: old.id}) {
					if !x.At.After(t) {
						g = max(g, min(int(x.Pkt.Grant().Offset()), old.msgLen))
					}
				}
				return g
			}
			// surely bounds, from the old message's peer's log up to f, a
			// FIFO GRANT the IUT sent on the same link (every packet logged
			// before f left or arrived before the IUT made it), the old
			// message's granted bytes the receiver had not received when
			// it made f: at most the largest GRANT offset less the bytes
			// held at the last barrier answered. An SRPT GRANT once the
			// newest message had joined left it at most a window of the
			// moment, which no later arrival shrank, outstanding, and each
			// FIFO GRANT since adds fifo_grant_increment. It returns the
			// largest offset, that bound, and, when such an SRPT GRANT
			// came, the FIFO GRANTs for the old message since the last.
			oldGrants := map[*tester.Packet]bool{}
			for _, g := range peers[0].ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: old.id}) {
				oldGrants[g] = true
			}
			surely := func(f *tester.Packet) (granted, out, fifoSince int, srpt bool) {
				granted, h, settledBy := unsched(old.msgLen), 0, false
				for _, x := range peers[0].Log() {
					if x == f {
						break
					}
					if n, ok := held[x]; ok {
						h, settledBy = max(h, n), settledBy || x == settled
					}
					if !oldGrants[x] {
						continue
					}
					granted = max(granted, min(int(x.Pkt.Grant().Offset()), old.msgLen))
					switch {
					case int(x.Pkt.Grant().Priority()) == pr.HighPriority():
						fifoSince++
					case settledBy:
						srpt, fifoSince = true, 0
					}
				}
				return granted, granted - h, fifoSince, srpt
			}
			toOld := 0
			for k, f := range fifo {
				if f.msg == 0 {
					toOld++
					continue
				}
				if k > 0 && fifo[k-1].msg == f.msg {
					continue // the receiver's kept choice (grant->oldest_rpc)
				}
				// The newest message's GRANTs share the old one's link: the
				// order of the log shows the old message eligible, whatever
				// the timing.
				if f.msg == 2 {
					g, out, n, srpt := surely(f.p)
					why := fmt.Sprintf("at most %d of that not received by the last barrier answered before (window %d + 2·fifo_grant_increment %d = %d)", out, w, pr.FIFOGrantIncrement, limit)
					if out >= limit {
						why = fmt.Sprintf("an SRPT GRANT once the newest message had joined left it at most a window outstanding, and %d FIFO GRANT came since", n)
					}
					if g < old.msgLen && (out < limit || srpt && n <= 1) {
						Fail(fmt.Sprintf("FIFO: the receiver chose the newest %d-byte message for a FIFO GRANT (%s) while the older %d-byte message was eligible: granted %d, %s; %d FIFO GRANTs went to the old message",
							newest.msgLen, f.p, old.msgLen, g, why, toOld))
					}
				}
				// A new choice: the old message must have been ineligible,
				// fully granted or with window + 2·fifo_grant_increment
				// granted bytes not received. Its bytes sent half a step
				// before (the previous round), and the measured noise's
				// slack before, have arrived; an SRPT GRANT since leaves
				// it a window outstanding (homa_grant_try_send), and each
				// FIFO GRANT adds fifo_grant_increment.
				pre := f.p.At.Add(-max(step/2, env.Slack))
				g, s := grantedBy(pre), sentBy(pre)
				out := max(g-s, w)
				for _, x := range fifo[:k] {
					if x.msg == 0 && x.p.At.After(pre) {
						out += int(pr.FIFOGrantIncrement)
					}
				}
				if grantedBy(f.p.At) < old.msgLen && out < limit {
					msg := fmt.Sprintf("FIFO: the receiver chose the younger %d-byte message for a FIFO GRANT (%s) while the older %d-byte message was eligible: granted %d, at most %d of that not received (window %d + 2·fifo_grant_increment %d = %d); %d FIFO GRANTs went to the old message",
						msgs[f.msg].msgLen, f.p, old.msgLen, grantedBy(f.p.At), out, w, pr.FIFOGrantIncrement, limit, toOld)
					// A receiver held up since pre had not processed those
					// bytes (or a tester held up recorded the GRANT late,
					// decided before they came): its rec_incoming may have
					// reached the bound. Only stalls there that lost the
					// time from pre to the GRANT between them could have
					// kept bytes sent by pre from counting; any stall
					// overlapping it excused the choice before.
					if !stalledAtLeast(msg, pre, f.p.At, f.p.At.Sub(pre)) {
						Fail(msg)
					}
				}
			}
			checkExchange(peers...)
		}))

	It("GRANT-fifo-paced: a receiver's FIFO GRANTs (level num_priorities-2) keep to the pace grant_fifo_fraction sets, at most a few per fifo_grant_interval however fast the senders send what it grants",
		labels("grant", "MUST", "HOMA-GRANT-023"), body(func() {
			need("grants")
			needFIFOGrants()
			pr := params()
			// HomaModule homa_grant_check_fifo makes a FIFO grant only once
			// fifo_grant_interval has passed since its last decision
			// (fifo_grant_time), after an SRPT GRANT, while the oldest
			// message holds fewer than window + 2·fifo_grant_increment
			// granted bytes not received. The tester sends every granted
			// byte at once, so that the oldest message stays eligible and
			// only the interval holds FIFO grants back: four long requests
			// from two peers keep the receiver granting, and HOMA-GRANT-023
			// judges the pace over the exchange. (In the simulator the whole
			// exchange takes almost no virtual time, so a receiver makes one
			// FIFO grant in it; in real time, many intervals' worth. Rounds
			// a fraction of an interval apart would spread it, but each
			// round's GRANTs then come in a burst the rule must allow at
			// the profile's slack: the unpaced exchange shows a receiver
			// that makes a FIFO grant at every SRPT grant decision more
			// plainly, dozens in microseconds.)
			peers := []*tester.Peer{peer(0), peer(1)}
			msgs := make([]msgSpec, 4)
			sent := make([]int, len(msgs))
			for i := range msgs {
				msgs[i] = newRequest(min(int(pr.MaxMessageLength), 1000000), 100)
				if unsched(msgs[i].msgLen) >= msgs[i].msgLen {
					Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves nothing to grant in a %d-byte message (unsched_bytes=40000 runs it)", pr.UnschedBytes, msgs[i].msgLen))
				}
			}
			for i, m := range msgs {
				sent[i] = unsched(m.msgLen)
				m.sendUnsched(peers[i%2], 0, sent[i])
			}
			driveRequests(peers, msgs, sent)
			fifo := 0
			for i, m := range msgs {
				for _, g := range peers[i%2].ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}) {
					if int(g.Pkt.Grant().Priority()) == pr.HighPriority() {
						fifo++
					}
				}
			}
			AddReportEntry("note", fmt.Sprintf("%d FIFO GRANTs for %d requests of %d bytes (fifo_grant_interval %v)", fifo, len(msgs), msgs[0].msgLen, pr.FIFOGrantInterval()))
			checkExchange(peers...)
		}))

	It("GRANT-fifo-counted: the bytes a receiver's FIFO GRANTs authorise count toward max_incoming: an SRPT GRANT for a newer message leaves the bytes granted and not received of an old message holding FIFO-granted bytes, the messages being granted beside it and the newer one within max_incoming (one fifo_grant_increment of slack)",
		labels("grant", "MUST", "HOMA-GRANT-013"), body(func() {
			need("grants")
			needFIFOGrants()
			pr := params()
			// A MUST, although HOMA-GRANT-013 (judged on any capture, where
			// a FIFO GRANT may legally take the sum past max_incoming) is a
			// SHOULD: every HomaModule that makes FIFO grants counts them
			// (homa_grant_check_fifo calls homa_grant_update_incoming: main,
			// linux_6.13.9, net-next), and homa_grant_try_send grants an
			// SRPT increment only within avl_incoming = max_incoming -
			// total_incoming. A receiver that left FIFO-granted bytes out
			// (until the message's next DATA recounts it) grants past the
			// bound while the old message's sender holds those bytes back.
			// Old message A (peer 0) is granted, and its sender sends what
			// leaves it one window outstanding; k messages (peer 1) are
			// granted beside it in rounds a fifo_grant_interval apart, each
			// of whose SRPT GRANTs may bring A a FIFO GRANT (while A holds
			// less than window + 2·fifo_grant_increment), of which A's
			// sender sends nothing; then the shorter, newer B (peer 0, so
			// that its GRANTs and A's share a link and their order is the
			// receiver's) sends its unscheduled bytes. At every SRPT GRANT
			// for B before the tester sends more, the granted bytes not
			// sent (a lower bound of those not received) of them all must
			// stay within max_incoming, plus one increment for a FIFO GRANT
			// another core decided after B's and sent first. A receiver
			// that counts FIFO grants gives B at most max_incoming less
			// (k+1) windows of k+1 messages and A's two increments; one
			// that leaves them out gives it a window of k+2 messages,
			// M/(k+3): past the slack where fifo_grant_increment >
			// M/((k+2)(k+3)), 5556 bytes at max_incoming 400000 with k = 6
			// (max_overcommit 8 holds A, the k and B).
			p0, p1 := peer(0), peer(1)
			k := min(6, pr.MaxOvercommit-2)
			if k < 1 {
				Skip(fmt.Sprintf("unsupported: max_overcommit %d grants fewer than the three messages this spec needs at once (max_overcommit=3 or more runs it)", pr.MaxOvercommit))
			}
			a := newRequest(min(int(pr.MaxMessageLength), 1000000), 100)
			// The messages beside A are shorter, so that one of them
			// outranks A: linux_6.13.9's homa_grant_find_oldest skips the
			// top-ranked active RPC (it "is already getting lots of
			// grants"), and with equal lengths that was A, which had sent
			// more (the lab: 0 FIFO GRANTs to A, a pass that judged no
			// FIFO-granted byte). main and the ref pick the oldest
			// whatever its rank.
			beside := make([]msgSpec, k)
			for i := range beside {
				beside[i] = newRequest(a.msgLen*3/5, 100)
			}
			b := newRequest(min(int(pr.MaxMessageLength), pastU(300000)), 100)
			for _, m := range append([]msgSpec{a, b}, beside...) {
				if unsched(m.msgLen) >= m.msgLen {
					Skip(fmt.Sprintf("unsupported: unsched_bytes %d leaves nothing to grant in a %d-byte message (unsched_bytes=40000 runs it)", pr.UnschedBytes, m.msgLen))
				}
			}
			iv := pr.FIFOGrantInterval()
			w := int(pr.WindowFor(k + 1))
			a.sendUnsched(p0, 0, unsched(a.msgLen))
			g1, err := p0.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: a.id}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the old message's first GRANT")
			grantedA, sentA := min(int(g1.Pkt.Grant().Offset()), a.msgLen), unsched(a.msgLen)
			// The others' first DATA clearly later: A is the oldest.
			pause(deadline(10*time.Microsecond), "the pause before the other messages")
			sent := make([]int, k)
			for i, m := range beside {
				sent[i] = unsched(m.msgLen)
				m.sendUnsched(p1, 0, sent[i])
			}
			barrier(p1, 0)
			// A's sender sends what leaves A a window of k+1 messages
			// granted and not sent; the receiver raises A to what it
			// received plus that window as the bytes arrive.
			for range 8 {
				for _, g := range a.takeGrants(p0) {
					grantedA = max(grantedA, min(int(g.Pkt.Grant().Offset()), a.msgLen))
				}
				to := min(grantedEnd(grantedA-w, a.msgLen), grantedA)
				if to <= sentA {
					break
				}
				a.sendData(p0, sentA, to, p0.Latest(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: a.id}).Pkt.Grant().Priority())
				sentA = to
				barrier(p0, 0)
			}
			// The others' rounds, a fifo_grant_interval (and a bit) apart:
			// each draws SRPT GRANTs, after which the receiver may make a
			// FIFO grant, to A, the oldest. A's sender sends none of it.
			fifoA := 0
			for range 6 {
				pause(deadline(iv+iv/4), "the pause between rounds of the other messages' DATA")
				moved := false
				for i, m := range beside {
					if to := m.applyGrants(p1, sent[i], m.takeGrants(p1)); to > sent[i] {
						sent[i], moved = to, true
					}
				}
				if !moved {
					break
				}
				barrier(p1, 0)
				for _, g := range a.takeGrants(p0) {
					grantedA = max(grantedA, min(int(g.Pkt.Grant().Offset()), a.msgLen))
					if int(g.Pkt.Grant().Priority()) == pr.HighPriority() {
						fifoA++
					}
				}
				if fifoA >= 2 || grantedA >= a.msgLen {
					break
				}
			}
			// B, the newer and shorter message, on A's peer.
			bFrom := env.Clock.Now()
			b.sendUnsched(p0, 0, unsched(b.msgLen))
			held := barrier(p0, 0)
			// The others' granted bytes not sent: their GRANTs that came
			// before B's DATA left (the receiver made them before B's).
			outBeside := 0
			for i, m := range beside {
				g := unsched(m.msgLen)
				for _, x := range p1.ReceivedAll(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}) {
					if !x.At.After(bFrom) {
						g = max(g, min(int(x.Pkt.Grant().Offset()), m.msgLen))
					}
				}
				outBeside += max(0, g-sent[i])
			}
			lim := int(pr.MaxIncoming) + int(pr.FIFOGrantIncrement)
			// Walk A's peer's log up to the barrier's answer: granted and
			// sent of A and B as the receiver had made and got them.
			gr := map[uint64]int{a.id: unsched(a.msgLen), b.id: unsched(b.msgLen)}
			lens := map[uint64]int{a.id: a.msgLen, b.id: b.msgLen}
			se := map[uint64]int{}
			judged, worst, why := 0, 0, ""
			for _, x := range p0.Log() {
				if x == held {
					break
				}
				if x.Err != nil {
					continue
				}
				id := x.Pkt.SenderID() &^ 1
				if _, mine := gr[id]; !mine {
					continue
				}
				switch {
				case x.Sent && x.Pkt.Type() == wire.TypeData:
					se[id] = max(se[id], int(x.Pkt.Data().Offset())+x.Pkt.Data().DataLen())
				case !x.Sent && x.Pkt.Type() == wire.TypeGrant:
					gr[id] = max(gr[id], min(int(x.Pkt.Grant().Offset()), lens[id]))
					if id != b.id || int(x.Pkt.Grant().Priority()) == pr.HighPriority() {
						continue
					}
					judged++
					outA, outB := max(0, gr[a.id]-se[a.id]), max(0, gr[b.id]-se[b.id])
					if sum := outA + outB + outBeside; sum > worst {
						worst = sum
						why = fmt.Sprintf("the receiver's SRPT GRANT %s for the %d-byte newer message left %d bytes granted and not received (at least) over %d messages, above max_incoming %d + one fifo_grant_increment %d: the %d-byte old message %d (granted %d, sent %d; %d FIFO GRANTs while its sender held them back), the %d messages beside it %d, the newer %d (granted %d, sent %d): FIFO-granted bytes not counted toward max_incoming",
							x, b.msgLen, sum, k+2, pr.MaxIncoming, pr.FIFOGrantIncrement, a.msgLen, outA, gr[a.id], se[a.id], fifoA, k, outBeside, outB, gr[b.id], se[b.id])
					}
				}
			}
			if worst > lim {
				Fail(why)
			}
			AddReportEntry("note", fmt.Sprintf("%d SRPT GRANTs for the newer message judged; %d FIFO GRANTs to the old message while its sender held them back; largest sum of granted bytes not received %d (max_incoming %d)", judged, fifoA, worst, pr.MaxIncoming))
			// The tester took A's GRANTs itself: it sends what they allow,
			// then plays a correct sender for them all.
			if to := grantedEnd(grantedA, a.msgLen); to > sentA {
				a.sendData(p0, sentA, to, p0.Latest(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: a.id}).Pkt.Grant().Priority())
				sentA = to
			}
			// driveRequests sends message i from peers[i] (i % len(peers)).
			msgs, sents, peers := []msgSpec{a, b}, []int{sentA, unsched(b.msgLen)}, []*tester.Peer{p0, p0}
			for i, m := range beside {
				msgs, sents, peers = append(msgs, m), append(sents, sent[i]), append(peers, p1)
			}
			driveRequests(peers, msgs, sents)
			checkExchange(p0, p1)
		}))

	It("GRANT-srpt-priority-top: a receiver granting max_sched_prio+1 messages or more gives the one with clearly fewest bytes left level max_sched_prio in its SRPT GRANTs, and one with max_sched_prio+1 clearly ahead level 0",
		labels("grant", "MUST", "HOMA-GRANT-011", "HOMA-GRANT-007"), body(func() {
			need("grants")
			pr := params()
			// With n messages being granted, the top one's level is
			// min(max_sched_prio, n-1) (HomaModule homa_grant_priority:
			// max_sched_prio - rank, lowered only while fewer than
			// max_sched_prio+1 are active; facts GRANT-09): k messages
			// reach max_sched_prio. GRANT-srpt-priority, with two, never
			// shows a receiver that stops a level short of it. One more
			// message, where max_overcommit allows it, ranks below every
			// level: its GRANTs must be at level 0 (HOMA-GRANT-011, judged
			// by the checker as one of this spec's own rules).
			k := min(pr.MaxSchedPrio+2, pr.MaxOvercommit)
			switch {
			case pr.MaxSchedPrio < 1:
				Skip("unsupported: max_sched_prio 0 leaves one scheduled level (" + moreSchedLevels + ")")
			case k < pr.MaxSchedPrio+1:
				Skip(fmt.Sprintf("unsupported: max_overcommit %d grants fewer than the %d messages that level max_sched_prio %d needs", pr.MaxOvercommit, pr.MaxSchedPrio+1, pr.MaxSchedPrio))
			case pr.MaxRPCsPerPeer > 0 && 2*pr.MaxRPCsPerPeer < k:
				Skip(fmt.Sprintf("unsupported: max_rpcs_per_peer %d grants the two tester hosts fewer than the %d messages that level max_sched_prio %d needs (a max_rpcs_per_peer of %d or more runs it; HomaModule main has had no such limit since 3daedc3, and linux_6.13.9 takes 0 as no GRANTs at all)", pr.MaxRPCsPerPeer, k, pr.MaxSchedPrio, (k+1)/2))
			case pr.FIFOGrantIncrement > 0 && pr.HighPriority() <= pr.MaxSchedPrio:
				Skip(fmt.Sprintf("unsupported: FIFO GRANTs (level %d) cannot be told from SRPT GRANTs (levels 0-%d) with num_priorities %d", pr.HighPriority(), pr.MaxSchedPrio, pr.NumPriorities))
			}
			peers := []*tester.Peer{peer(0), peer(1)}
			u, w := unsched(1<<30), int(pr.GrantWindow())
			// The long messages stay clearly behind the short one, and
			// none is granted to its end (leaving the active set), until
			// the GRANT judged below: each is sent no further than its
			// first GRANTs took it, at most one window past U, and the
			// bytes that draws reach at most another window (and FIFO
			// GRANTs) further.
			// Their lengths differ by more than rank_tolerance, so that
			// each has a clear SRPT rank.
			short := newRequest(pastU(10000), 100)
			base := u + 2*w + 2*int(pr.FIFOGrantIncrement) + short.msgLen
			step := int(pr.RankTolerance) + maxSegData()
			if base+(k-2)*step > int(pr.MaxMessageLength) {
				Skip(fmt.Sprintf("unsupported: max_message_length %d leaves no room for %d messages %d bytes apart (rank_tolerance %d) past %d bytes", pr.MaxMessageLength, k-1, step, pr.RankTolerance, base))
			}
			var msgs []msgSpec
			var from []*tester.Peer
			for i := range k - 1 {
				m := newRequest(base+i*step, 100)
				m.sendUnsched(peers[i%2], 0, u)
				msgs, from = append(msgs, m), append(from, peers[i%2])
			}
			// The IUT has every long message's unscheduled bytes (each
			// peer's barrier answered after them): all are being granted.
			for _, p := range peers {
				barrier(p, msgs[0].unschedPrio())
			}
			sent := make([]int, len(msgs))
			granted := make([]int, len(msgs))
			prio := make([]uint8, len(msgs))
			for i, m := range msgs {
				sent[i] = u
				for _, g := range m.takeGrants(from[i]) {
					if off := min(int(g.Pkt.Grant().Offset()), m.msgLen); off > granted[i] {
						granted[i], prio[i] = off, g.Pkt.Grant().Priority()
					}
				}
			}
			// The short message joins; the long ones' granted bytes then
			// make room under max_incoming for its first GRANT.
			short.sendUnsched(peers[(k-1)%2], 0, u)
			for i, m := range msgs {
				if granted[i] > sent[i] {
					m.sendData(from[i], sent[i], granted[i], prio[i])
					sent[i] = granted[i]
				}
			}
			srpt := tester.In("priority", 0, uint64(pr.MaxSchedPrio)) // not a FIFO GRANT (num_priorities-2)
			gs, err := peers[(k-1)%2].Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: short.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the short message's first SRPT GRANT, with %d longer messages being granted", k-1)
			Expect(int(gs.Pkt.Grant().Priority())).To(Equal(pr.MaxSchedPrio),
				"SRPT: with %d messages being granted (max_overcommit %d), want the %d-byte message's GRANT, the one with clearly fewest bytes left, at level max_sched_prio %d (%s)",
				k, pr.MaxOvercommit, short.msgLen, pr.MaxSchedPrio, gs)
			// The longest message has max_sched_prio+1 others clearly
			// ahead of it: every SRPT GRANT it has had, up to one its
			// bytes drew with all k being granted, is at level 0 (before
			// the tester gives any message up).
			if k > pr.MaxSchedPrio+1 {
				tail := msgs[k-2]
				_, err := from[k-2].Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: tail.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
				if err != nil {
					AddReportEntry("note", fmt.Sprintf("no SRPT GRANT for the %d-byte message ranked last came after the short one's: its level is judged on the GRANTs before", tail.msgLen))
				}
				for _, g := range from[k-2].Received(tester.Match{Type: wire.TypeGrant, From: iut(), RPC: tail.id}) {
					if srpt(g) == nil {
						Expect(int(g.Pkt.Grant().Priority())).To(BeZero(),
							"SRPT: want the %d-byte message's GRANTs, with %d messages being granted and %d of them clearly ahead of it, at level 0 (%s)",
							tail.msgLen, k, k-1, g)
					}
				}
			}
			// The long messages have served: the tester gives them up as
			// a client that forgot them answers (RPC_UNKNOWN: the server
			// ends them), which keeps the exchange to a few hundred KB
			// (sent whole, 2.4 MB at a 200 µs tick on a loaded machine
			// outlasted the IUT's timeouts), and finishes the short one.
			for i, m := range msgs {
				m.giveUp(from[i], "the spec is done with it")
			}
			goff := min(int(gs.Pkt.Grant().Offset()), short.msgLen)
			short.sendData(peers[(k-1)%2], u, goff, gs.Pkt.Grant().Priority())
			driveRequests([]*tester.Peer{peers[(k-1)%2]}, []msgSpec{short}, []int{goff})
			checkExchange(peers...)
		}))

	It("GRANT-srpt-priority-rises: a receiver that granted a message alone raises its scheduled priority once longer messages are being granted beside it: the message's next SRPT GRANT, with clearly fewest bytes left of n being granted, is at level min(max_sched_prio, n-1)",
		labels("grant", "MUST", "HOMA-GRANT-011", "HOMA-GRANT-007"), body(func() {
			// HomaModule computes a GRANT's level when it sends the GRANT,
			// from the message's rank and the number of messages being
			// granted then (main homa_grant_try_send and
			// homa_grant_priority, linux_6.13.9 homa_grant_update_granted,
			// linux_6.1.38 homa_grant_recalc; facts GRANT-09): a message
			// granted alone gets level 0 (the lowest levels while fewer
			// messages than levels), and once others join behind it, its
			// next GRANT must climb. GRANT-srpt-priority has the shorter
			// message join second, so both of the first message's levels
			// are 0 there, and a receiver that kept a message's first
			// level passed it.
			pr := params()
			u, w, srpt := srptPairNeeds()
			p0, p1 := peer(0), peer(1)
			inc := int(pr.FIFOGrantIncrement)
			// The first message is not granted whole before the others
			// join, nor by the FIFO GRANTs it may get meanwhile (it is the
			// oldest), and its next SRPT GRANT still has bytes to grant.
			// The others are longer by rank_tolerance, a segment and two
			// FIFO increments each, so it keeps rank 0 in every version's
			// ranking: by bytes left to receive, on main against the bytes
			// they had left when they joined (active_remaining), and by
			// bytes left to grant (net-next, linux_6.13.9), though it was
			// granted a window alone and a joined one may draw FIFO
			// GRANTs: linux_6.13.9 gives them to the oldest message but
			// the top-ranked one (homa_grant_find_oldest), and one may
			// follow each SRPT GRANT a joined message gets: its first, and
			// a second where max_incoming held part of the first back (in
			// the lab linux_6.13.9 put a message joined 21424 bytes longer
			// ahead after its first FIFO GRANT).
			step := int(pr.RankTolerance) + maxSegData() + 2*inc
			// The longer messages join one at a time, and the first
			// message's next SRPT GRANT is judged after each join. A FIFO
			// GRANT follows an SRPT GRANT (main homa_grant_try_send ends
			// in homa_grant_check_fifo), at most once per
			// fifo_grant_interval, to the oldest message (the first one)
			// while it holds fewer than window + 2·fifo_grant_increment
			// granted bytes not received. A joined message whose first
			// GRANT max_incoming cut short draws an SRPT GRANT as each of
			// the first message's packets frees room, and so a FIFO GRANT
			// to the first message, which takes that room back: where the
			// tester sends less than fifo_grant_increment per interval (a
			// loaded machine: 5 runs in 30 beside two CPU hogs, helper-230)
			// the first message never gets below a window outstanding and
			// FIFO GRANTs grant it whole, with no SRPT GRANT to judge.
			// Joining one at a time keeps the room: the first joined
			// message has its window once the first message holds at most
			// max_incoming - window(2) outstanding, before it may get FIFO
			// GRANTs (below window(2) + 2·fifo_grant_increment: 266667
			// against 233333 with the defaults), and for the second the
			// tester first sends the bytes the first joined one holds past
			// window(3) (which draws it no GRANT), so that the second has
			// its window by the time the first message holds window(3) +
			// 2·fifo_grant_increment. After that only the first message's
			// own SRPT GRANT can bring a FIFO GRANT. Where one still takes
			// the room (main gives a FIFO GRANT to the next oldest message
			// while the first is not eligible), the second stage may go
			// unjudged, which a note says; the first is always judged.
			least := u + 2*w + 2*inc
			if least+2*step > int(pr.MaxMessageLength) {
				Skip(fmt.Sprintf("unsupported: max_message_length %d leaves no room for three messages %d bytes apart (rank_tolerance %d, fifo_grant_increment %d) from %d bytes", pr.MaxMessageLength, step, pr.RankTolerance, inc, least))
			}
			// Two windows more where max_message_length has room: the
			// first stage's SRPT GRANTs take it a window further.
			first := newRequest(min(least+2*w, int(pr.MaxMessageLength)-2*step), 100)
			later := []msgSpec{newRequest(first.msgLen+step, 100), newRequest(first.msgLen+2*step, 100)}
			from := []*tester.Peer{p1, p0}
			first.sendUnsched(p0, 0, u)
			g1, err := p0.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: first.id, Checks: []tester.Check{srpt}}, wait(pr.ResponseTimeout+pr.Tick))
			ok(err, "the first message's first GRANT")
			barrier(p0, first.unschedPrio())
			// Every GRANT the first message drew alone came before the
			// barrier's answer.
			to1, prio := int(g1.Pkt.Grant().Offset()), g1.Pkt.Grant().Priority()
			take := func() {
				for _, g := range first.takeGrants(p0) {
					to1, prio = max(to1, int(g.Pkt.Grant().Offset())), g.Pkt.Grant().Priority()
				}
				to1 = min(to1, first.msgLen)
			}
			take()
			if to1 >= first.msgLen {
				Skip(fmt.Sprintf("unsupported: the %d-byte message was granted whole (%d) before others could join (window %d, fifo_grant_increment %d)", first.msgLen, to1, w, inc))
			}
			if to1-u >= int(pr.MaxIncoming) {
				Skip(fmt.Sprintf("unsupported: the first message holds %d granted bytes not sent (window %d, fifo_grant_increment %d), which leave no room under max_incoming %d for others", to1-u, w, inc, pr.MaxIncoming))
			}
			// n is 2 after the first join. After the second it is 3, or 2
			// where max_rpcs_per_peer holds the longest message (from the
			// first one's host) back: a per-host limit excuses a waiting
			// message, never requires one (main has had none since
			// 3daedc3), so either n allows its level.
			nHi := min(3, pr.MaxOvercommit)
			nLo := nHi
			if pr.MaxRPCsPerPeer > 0 {
				nLo = min(nHi, min(2, pr.MaxRPCsPerPeer)+1)
			}
			ns := [][2]int{{2, 2}, {nLo, nHi}}
			sent := u
			// The later messages' granted offsets, the levels of their
			// latest GRANTs and the bytes sent.
			gLater, pLater, sLater := []int{u, u}, []uint8{0, 0}, []int{u, u}
			for i, m := range later {
				// The message joins; its host's barrier answered, the IUT
				// has its unscheduled bytes, and every GRANT the first
				// message drew before (linux_6.1.38 recalculates at each
				// join; the first stage's SRPT GRANTs go on while its
				// bytes arrive) came before the first one's barrier.
				m.sendUnsched(from[i], 0, u)
				barrier(from[i], m.unschedPrio())
				// An earlier joiner's window shrank to window(n): the
				// bytes it holds granted past that are sent now, which
				// draws it no GRANT and frees room under max_incoming for
				// the new one before the first message's bytes go in
				// (with the defaults the new one then has its window by
				// the time the first message may get FIFO GRANTs again).
				for j, o := range later[:i] {
					for _, g := range o.takeGrants(from[j]) {
						gLater[j], pLater[j] = max(gLater[j], min(int(g.Pkt.Grant().Offset()), o.msgLen)), g.Pkt.Grant().Priority()
					}
					if to := gLater[j] - int(pr.WindowFor(ns[i][0])); to > sLater[j] {
						o.sendData(from[j], sLater[j], to, pLater[j])
						sLater[j] = to
						barrier(from[j], 0)
					}
				}
				barrier(p0, 0)
				take()
				g, s := first.srptGrantOrWhole(p0, sent, to1, prio, srpt)
				sent = s
				if g == nil {
					if i == 0 {
						Skip(fmt.Sprintf("unsupported: the %d-byte message was granted whole by FIFO GRANTs before another SRPT GRANT with one longer message joined (fifo_grant_increment %d, window(2) %d, max_incoming %d)", first.msgLen, inc, pr.WindowFor(2), pr.MaxIncoming))
					}
					AddReportEntry("note", fmt.Sprintf("FIFO GRANTs granted the %d-byte message whole before an SRPT GRANT once the %d-byte one joined: its level with n = %d-%d is not judged (n = 2 was)", first.msgLen, m.msgLen, nLo, nHi))
					break
				}
				lo, hi := min(pr.MaxSchedPrio, ns[i][0]-1), min(pr.MaxSchedPrio, ns[i][1]-1)
				Expect(int(g.Pkt.Grant().Priority())).To(SatisfyAll(BeNumerically(">=", lo), BeNumerically("<=", hi)),
					"SRPT: the %d-byte message, granted alone at level %d (%s), then ranked first of %d-%d messages being granted (%d longer joined, the last of %d bytes; max_sched_prio %d, max_overcommit %d, max_rpcs_per_peer %d): want its next SRPT GRANT at level %d-%d, min(max_sched_prio, n-1) (%s)",
					first.msgLen, g1.Pkt.Grant().Priority(), g1, ns[i][0], ns[i][1], i+1, m.msgLen, pr.MaxSchedPrio, pr.MaxOvercommit, pr.MaxRPCsPerPeer, lo, hi, g)
				to1, prio = min(int(g.Pkt.Grant().Offset()), first.msgLen), g.Pkt.Grant().Priority()
			}
			// The levels have served: the tester gives the messages up
			// (RPC_UNKNOWN: the server ends them), which keeps the
			// exchange short.
			first.giveUp(p0, "the spec is done with it")
			for i, m := range later {
				m.giveUp(from[i], "the spec is done with it")
			}
			checkExchange(p0, p1)
		}))

	It("GRANT-stale: a GRANT below what the sender was already granted takes no bytes back (every granted byte is sent), and its priority is used for the scheduled DATA sent after it",
		labels("grant", "MUST", "HOMA-GRANT-008", "HOMA-GRANT-005"), body(func() {
			need("grants")
			p := peer(0)
			pr := params()
			seg := maxSegData()
			// Past the first GRANT's bytes, room for the skb of up to
			// max_gso_size its sender may send whole beyond them
			// (homa_xmit_data) and two segments more.
			skb := max(int(pr.MaxGSOSize), seg)
			r := iutCall(p, pastU(4*seg+skb+2*seg), 100)
			got, sent := r.receiveUnsched(p)
			// Two levels the IUT must tell apart (with one level both are
			// 0 and only the bytes are judged).
			hi, lo := min(1, ctrlLevel(pr)), uint8(0)
			// Part of the message, then (as a GRANT the network delayed
			// would come) a lower offset at another priority, back to
			// back. homa_grant_pkt raises granted only when the offset is
			// higher, and always takes the priority.
			to, stale := sent+4*seg, sent+seg
			Expect(p.Send(iut(), ctrlLevel(pr), &wire.GrantFields{Common: r.control(), Offset: uint32(to), Priority: lo})).To(Succeed())
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.GrantFields{Common: r.control(), Offset: uint32(stale), Priority: hi},
				"a stale GRANT below the one just sent, at another priority")).To(Succeed())
			// Every byte the first GRANT authorised comes without another
			// GRANT or RESEND.
			bound := deadline(wait(pr.ResponseTimeout + pr.Tick))
			for !got.Covers(0, uint32(to)) {
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id}, bound.Sub(env.Clock.Now()))
				ok(err, "the bytes up to %d granted before the stale GRANT (offset %d; did it lower the horizon?): have %d",
					to, stale, got.Total())
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
			}
			if onMain() {
				// The stale GRANT's priority holds for what is sent next
				// without a GRANT: the bytes a RESEND for the message's
				// last byte lets out (homa_resend_pkt raises granted to
				// its end and calls homa_xmit_data, which sends at
				// sched_priority). That byte lies past anything sent so
				// far, skb and all; the RESEND follows the GRANTs at the
				// same level, so the IUT has processed them.
				last := uint32(r.msgLen - 1)
				// The RESEND waits until the GRANTs are older than the
				// judged slack, so that the checker (HOMA-GRANT-008, which
				// counts a GRANT that old at the sender's link processed)
				// judges the level on the run's whole capture too, not only
				// this spec's Expect.
				pause(deadline(iutParams().Slack+pr.Tick/4), "letting the GRANTs age past the slack")
				Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: last, Length: 1, Priority: ctrlLevel(pr)},
					"RESEND for the message's last byte, not yet sent, to let the rest out")).To(Succeed())
				d, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
					tester.DataOffsetIn(uint32(r.msgLen-seg), last), tester.Is("retransmit", 0),
				}}, wait(pr.ResponseTimeout+pr.Tick))
				ok(err, "the message's last DATA, which the RESEND let out")
				Expect(d.Priority).To(Equal(hi), "new scheduled DATA after the stale GRANT (priority %d) and the GRANT before it (priority %d) goes at the latest GRANT's priority", hi, lo)
				got.Add(d.Pkt.Data().Offset(), d.Pkt.Data().Offset()+uint32(d.Pkt.Data().DataLen()))
			}
			r.receiveRest(p, got, to, env.Clock.Now())
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
		}))
})

// srptPairNeeds skips an IUT on which two messages granted at once
// cannot show their SRPT levels apart, and returns unsched_bytes, the
// grant window and a Check passing only SRPT GRANTs (a FIFO GRANT has
// level num_priorities-2).
func srptPairNeeds() (u, w int, srpt tester.Check) {
	GinkgoHelper()
	need("grants")
	pr := params()
	if pr.MaxSchedPrio < 1 || pr.MaxOvercommit < 2 {
		Skip(fmt.Sprintf("unsupported: max_sched_prio %d and max_overcommit %d leave one scheduled level or one granted message (%s)", pr.MaxSchedPrio, pr.MaxOvercommit, moreSchedLevels))
	}
	if pr.FIFOGrantIncrement > 0 && pr.HighPriority() <= pr.MaxSchedPrio {
		Skip(fmt.Sprintf("unsupported: FIFO GRANTs (level %d) cannot be told from SRPT GRANTs (levels 0-%d) with num_priorities %d", pr.HighPriority(), pr.MaxSchedPrio, pr.NumPriorities))
	}
	// Two senders: linux_6.13.9 grants one message per peer at a time
	// (max_rpcs_per_peer 1).
	u, w = unsched(1<<30), int(pr.GrantWindow())
	if w >= int(pr.MaxIncoming) {
		// HomaModule main grants a second message only once the first
		// one's granted bytes arrive (homa_grant_try_send: no room under
		// max_incoming), which these specs do after it.
		Skip(fmt.Sprintf("unsupported: window %d leaves no room under max_incoming %d for a second message", w, pr.MaxIncoming))
	}
	return u, w, tester.In("priority", 0, uint64(pr.MaxSchedPrio))
}

// nextSRPTGrant sends request m's bytes [sent, to) at level prio, then
// those of every GRANT that comes (a FIFO GRANT may take the message past
// received + window, so that SRPT GRANTs wait for its bytes), until an
// SRPT GRANT past to, which it returns with the bytes sent.
func (m msgSpec) nextSRPTGrant(p *tester.Peer, sent, to int, prio uint8, srpt tester.Check) (*tester.Packet, int) {
	GinkgoHelper()
	x, sent := m.srptGrantOrWhole(p, sent, to, prio, srpt)
	if x == nil {
		pr := params()
		Skip(fmt.Sprintf("unsupported: the %d-byte message was granted whole by FIFO GRANTs before another SRPT GRANT (fifo_grant_increment %d, window %d)", m.msgLen, pr.FIFOGrantIncrement, pr.GrantWindow()))
	}
	return x, sent
}

// srptGrantOrWhole is nextSRPTGrant, but returns a nil GRANT (and the
// bytes sent: the whole message) where FIFO GRANTs granted the message
// whole before another SRPT GRANT came.
func (m msgSpec) srptGrantOrWhole(p *tester.Peer, sent, to int, prio uint8, srpt tester.Check) (*tester.Packet, int) {
	GinkgoHelper()
	pr := params()
	if to > sent {
		m.sendData(p, sent, to, prio)
		sent = to
	}
	for {
		x, err := p.Expect(ctx(), tester.Match{Type: wire.TypeGrant, From: iut(), RPC: m.id}, wait(pr.ResponseTimeout+pr.Tick))
		ok(err, "the %d-byte message's SRPT GRANT past %d once those bytes arrived (sent up to %d)", m.msgLen, to, sent)
		off := min(int(x.Pkt.Grant().Offset()), m.msgLen)
		if srpt(x) == nil && off > to {
			return x, sent
		}
		if off > sent {
			m.sendData(p, sent, off, x.Pkt.Grant().Priority())
			sent = off
		}
		if sent >= m.msgLen {
			return nil, sent
		}
	}
}

// finishPair has the tester finish requests long (sent up to sentL, last
// SRPT GRANT gl) and short (sent up to u, first GRANT gs) as senders
// would, and checks the exchange.
func finishPair(pl, ps *tester.Peer, long, short msgSpec, sentL, u int, gl, gs *tester.Packet) {
	GinkgoHelper()
	short.sendData(ps, u, int(gs.Pkt.Grant().Offset()), gs.Pkt.Grant().Priority())
	to := max(sentL, min(int(gl.Pkt.Grant().Offset()), long.msgLen))
	long.sendData(pl, sentL, to, gl.Pkt.Grant().Priority())
	driveRequests([]*tester.Peer{pl, ps}, []msgSpec{long, short}, []int{to, int(gs.Pkt.Grant().Offset())})
	checkExchange(pl, ps)
}

// moreSchedLevels says how an IUT gets the scheduled levels and granted
// messages the SRPT priority specs need: max_sched_prio is the level below
// the lowest one its unsched_cutoffs give unscheduled DATA (HomaModule
// homa_prios_changed), so fewer unscheduled levels or more levels in all
// raise it.
const moreSchedLevels = "to run it, give the IUT unsched_cutoffs that leave two levels or more below the unscheduled ones, or more num_priorities, and max_overcommit 2 or more"

// grantsRise checks the GRANTs a receiver sent for one message of msgLen
// bytes, in arrival order: the first above U and at most U plus the grant
// window (and the length), offsets strictly increasing up to the length
// (except that HomaModule main may grant a fully granted message its
// length again on a later batch of DATA, docs/homa-facts.md §8), and, when
// all is set, the last reaching into the message's last packet. The
// tester is away from the receiver, so a GRANT may arrive after a later
// one, as HOMA-GRANT-003 allows at such a capture point: an offset below
// the highest yet, new and less than slack after it, is one overtaken on
// the way (seen in the lab with HomaModule linux_6.1.38 under emulation:
// its veth link delivered two GRANTs sent from two CPUs 2 ms apart in
// the opposite order, and the switch port's capture had them in the
// order sent).
func grantsRise(grants []*tester.Packet, msgLen int, all bool) {
	GinkgoHelper()
	pr := params()
	u, w := unsched(msgLen), int(pr.GrantWindow())
	Expect(grants).NotTo(BeEmpty(), "GRANTs for a %d-byte message", msgLen)
	prev := int(grants[0].Pkt.Grant().Offset())
	Expect(prev).To(SatisfyAll(BeNumerically(">", u), BeNumerically("<=", min(msgLen, u+w))),
		"first GRANT offset: above U=%d, at most the message length %d and U + window %d", u, msgLen, w)
	seen, prevAt := map[int]bool{prev: true}, grants[0].At
	for _, x := range grants[1:] {
		off := int(x.Pkt.Grant().Offset())
		Expect(off).To(BeNumerically("<=", msgLen))
		switch {
		case off == msgLen && prev == msgLen:
		case off > prev:
			prev, prevAt = off, x.At
		default:
			Expect(seen[off]).To(BeFalse(), "GRANT offsets strictly increase: offset %d again", off)
			Expect(x.At.Sub(prevAt)).To(BeNumerically("<", env.Slack),
				"GRANT offsets strictly increase: offset %d came %v after offset %d, too late to have been overtaken on the way (slack %v)", off, x.At.Sub(prevAt), prev, env.Slack)
		}
		seen[off] = true
	}
	if all {
		// A sender sends each packet whose offset is below the GRANT's
		// whole (homa_xmit_data), so the last GRANT need only reach into
		// the message's last packet: a receiver granting received+window
		// has every byte once that packet lands.
		Expect(grantedEnd(prev, msgLen)).To(Equal(msgLen), "the last GRANT (offset %d) lets out the %d-byte message's last packet", prev, msgLen)
	}
}
