package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("cutoffs", func() {
	It("CUTOFFS-applied: after CUTOFFS, the IUT's unscheduled DATA to that peer uses the new levels and echoes the version",
		labels("cutoffs", "MUST", "HOMA-CUTOFF-001", "HOMA-PRIO-002"), body(func() {
			need("cutoffs", "priorities")
			p := peer(1)
			const reqLen = 5000
			// A first RPC makes the peers known to each other; then new
			// cutoffs, under which a 5000-byte message changes level.
			cut := testCutoffs
			const version = 7
			adoptCutoffs(p, reqLen, version)
			r := iutCall(p, reqLen, 100)
			Expect(r.first.Pkt.Data().CutoffVersion()).To(Equal(uint16(version)), "cutoff_version of the next request")
			// The levels below num_priorities count (homa_unsched_priority
			// starts at num_priorities-1).
			level := func(n int) uint8 { return spec.UnschedPriority(cut, params().NumPriorities, uint32(n)) }
			Expect(r.first.Priority).To(Equal(level(reqLen)), "IP priority of a %d-byte unscheduled message under cutoffs %v", reqLen, cut)
			r.serveFully(p, 100)
			// A cutoff is the largest length of its level: with 6 levels
			// or more, a message of exactly 4000 bytes belongs to level 5
			// (homa_unsched_priority compares cutoff >= length), one byte
			// more to level 4.
			for _, n := range []int{4000, 4001} {
				r = iutCall(p, n, 100)
				Expect(r.first.Priority).To(Equal(level(n)), "IP priority of a %d-byte unscheduled message under cutoffs %v with %d priorities (a cutoff is the largest length of its level)", n, cut, params().NumPriorities)
				r.serveFully(p, 100)
			}
			checkExchange(p)
			// Put the tester host and the IUT's view of it back to the
			// defaults.
			sendCutoffs(p, r.control(), params().UnschedCutoffs, params().CutoffVersion)
		}))

	It("CUTOFFS-per-peer: CUTOFFS from one peer change only what the IUT sends to that peer: its DATA to another peer keeps carrying that peer's cutoff_version at that peer's levels",
		labels("cutoffs", "MUST", "HOMA-CUTOFF-001", "HOMA-PRIO-002"), body(func() {
			need("cutoffs", "priorities")
			pr := params()
			p0, p1 := peer(0), peer(1)
			const reqLen = 5000
			// A first RPC with each tester host: the IUT knows both, and
			// each one's cutoffs (a stale version draws its CUTOFFS).
			// Tester host 1 alone then adopts new cutoffs; host 0 keeps
			// its own.
			other := iutCall(p0, reqLen, 100)
			other.serveFully(p0, 100)
			const version = 11
			first := adoptCutoffs(p1, reqLen, version)
			// HomaModule keeps cutoffs per peer (homa_cutoffs_pkt stores
			// them in the homa_peer of the packet's source), and each
			// DATA carries its destination peer's version
			// (__homa_xmit_data) at the level that peer's cutoffs give
			// (homa_unsched_priority).
			r := iutCall(p0, reqLen, 100)
			Expect(r.first.Pkt.Data().CutoffVersion()).To(Equal(pr.CutoffVersion),
				"cutoff_version of a request to %v, whose cutoffs are version %d, after CUTOFFS version %d from %v", p0.Addr(), pr.CutoffVersion, version, p1.Addr())
			Expect(r.first.Priority).To(Equal(spec.UnschedPriority(pr.UnschedCutoffs, pr.NumPriorities, reqLen)),
				"IP priority of a %d-byte unscheduled request to %v under its own cutoffs %v (CUTOFFS %v came from %v)", reqLen, p0.Addr(), pr.UnschedCutoffs, testCutoffs, p1.Addr())
			r.serveFully(p0, 100)
			checkExchange(p0, p1)
			// Put tester host 1 and the IUT's view of it back to the
			// defaults.
			sendCutoffs(p1, first.control(), pr.UnschedCutoffs, pr.CutoffVersion)
		}))

	It("CUTOFFS-mid-message: after CUTOFFS, every DATA of a message begun before them (its scheduled bytes and its retransmissions) carries the new cutoff_version",
		labels("cutoffs", "MUST", "HOMA-CUTOFF-001"), body(func() {
			need("cutoffs", "grants")
			if !onMain() {
				Skip("unsupported: before HomaModule main (profile " + env.Profile + ") a message begun before CUTOFFS may keep the old cutoff_version (HOMA-CUTOFF-001 judges only first packets there)")
			}
			p := peer(1)
			pr := params()
			seg := maxSegData()
			r := iutCall(p, pastU(4*seg), 100)
			got, _ := r.receiveUnsched(p)
			// The message's first packets went out with the version the
			// IUT held; new cutoffs arrive while it waits for GRANTs.
			const version = 9
			sendCutoffs(p, r.control(), [wire.NumCutoffs]uint32{0, 0, 0, 1000000, 8000, 4000, 2000, 100}, version)
			// HomaModule writes the peer's cutoff_version into each packet
			// as it transmits it (__homa_xmit_data), retransmissions
			// included (homa_resend_data calls it too), not once per
			// message.
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: r.control(), Offset: 0, Length: uint32(min(seg, r.msgLen)), Priority: ctrlLevel(pr)},
				"RESEND at once (no silence) for the first packet, to see its retransmission's cutoff_version")).To(Succeed())
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{
				tester.DataOffset(0), tester.Is("retransmit", 1), tester.Is("cutoff_version", version),
			}}, wait(2*pr.Tick))
			ok(err, "the first packet retransmitted after CUTOFFS version %d, carrying that version", version)
			// The scheduled bytes, first transmitted after the CUTOFFS.
			first := len(p.Log())
			r.receiveRest(p, got, unsched(r.msgLen), env.Clock.Now())
			for _, x := range p.Log()[first:] {
				if x.Sent || x.Err != nil || x.Src != iut() || x.Pkt.Type() != wire.TypeData || x.Pkt.SenderID() != r.id {
					continue
				}
				Expect(x.Pkt.Data().CutoffVersion()).To(Equal(uint16(version)), "cutoff_version of DATA at offset %d, sent after CUTOFFS version %d", x.Pkt.Data().Offset(), version)
			}
			res := r.respond(p, 100, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			checkExchange(p)
			sendCutoffs(p, r.control(), pr.UnschedCutoffs, pr.CutoffVersion)
		}))

	It("CUTOFFS-stale: DATA with a stale cutoff_version draws CUTOFFS from the receiver, for each peer, once for DATA in one jiffy (the once-a-jiffy limit is per peer)",
		labels("cutoffs", "SHOULD", "HOMA-CUTOFF-002", "HOMA-CUTOFF-005"), body(func() {
			need("cutoffs")
			// Two tester hosts back to back, in the same jiffy:
			// homa_data_pkt limits CUTOFFS to one a jiffy per peer
			// (peer->last_update_jiffies), so each gets its own.
			peers := []*tester.Peer{peer(0), peer(1)}
			// Three stale requests from each host, back to back: one
			// CUTOFFS per host for all (the checker judges the limit
			// against the jiffies between the CUTOFFS as they came,
			// HOMA-CUTOFF-005: a jiffy may end between two DATA however
			// close, so a second CUTOFFS may follow at once, a third only
			// a jiffy after the first).
			var msgs []msgSpec
			for range 3 * len(peers) {
				m := newRequest(1000, 100)
				m.cutoffVersion = params().CutoffVersion + 1
				m.deliberate = "DATA with a cutoff_version the IUT never sent (a stale one)"
				msgs = append(msgs, m)
			}
			peerOf := func(i int) *tester.Peer { return peers[i%len(peers)] }
			newJiffy()
			for i, m := range msgs {
				m.sendUnsched(peerOf(i), 0, m.msgLen)
			}
			for _, p := range peers {
				c, err := p.Expect(ctx(), tester.Match{Type: wire.TypeCutoffs, From: iut()}, wait(2*params().Tick))
				ok(err, "CUTOFFS to %v after its DATA with cutoff_version %d", p.Addr(), params().CutoffVersion+1)
				Expect(c.Pkt.Cutoffs().CutoffVersion()).To(Equal(params().CutoffVersion))
			}
			for i, m := range msgs {
				_, err := peerOf(i).Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(2*params().Tick))
				ok(err, "the response to %v", peerOf(i).Addr())
				m.ack(peerOf(i))
			}
			checkExchange(peers...)
		}))

	It("CUTOFFS-stale-response: response DATA with a stale cutoff_version draws CUTOFFS from the client",
		labels("cutoffs", "SHOULD", "HOMA-CUTOFF-002"), body(func() {
			need("cutoffs")
			p := peer(0)
			pr := params()
			// Before the call: a client waiting that long for its
			// response would RESEND, and with a short tick time out.
			newJiffy()
			r := iutCall(p, 100, 100)
			r.receiveRequest(p)
			// The version check runs on every DATA a host receives,
			// requests and responses alike (homa_data_pkt): a server's
			// stale view of the client's cutoffs is corrected too.
			full := responsePayload(r.callIDOf(p), 100)
			Expect(p.SendDeliberate(iut(), unschedLevel(pr, 100), wire.NewData(r.control(), 100, 100, pr.CutoffVersion+1, 0, full, false),
				"response DATA with a cutoff_version the IUT never sent (a stale one)")).To(Succeed())
			c, err := p.Expect(ctx(), tester.Match{Type: wire.TypeCutoffs, From: iut(), Checks: []tester.Check{
				tester.Is("sport", uint64(r.cport)), tester.Is("dport", testerPort),
			}}, wait(2*pr.Tick))
			ok(err, "CUTOFFS from the client after response DATA with cutoff_version %d", pr.CutoffVersion+1)
			Expect(c.Pkt.Cutoffs().CutoffVersion()).To(Equal(pr.CutoffVersion))
			res := r.wait()
			r.callOK(res, "the call completes")
			checkExchange(p)
		}))
})

// maxJiffy is the longest jiffy Linux has (HZ 100).
const maxJiffy = 10 * time.Millisecond

// newJiffy waits until the IUT's jiffy counter has surely moved on: a
// HomaModule host sends CUTOFFS to a peer at most once a jiffy
// (homa_data_pkt: jiffies != peer->last_update_jiffies), and an earlier
// spec may just have drawn one to this tester host.
func newJiffy() {
	GinkgoHelper()
	pause(deadline(maxJiffy), "waiting a jiffy so that the IUT may send CUTOFFS again")
}

// testCutoffs are the cutoffs a spec has a tester host adopt: with 8
// priorities a 5000-byte message belongs to level 4 under them (≤ 8000,
// > 4000), to level 5 under the defaults.
var testCutoffs = [wire.NumCutoffs]uint32{0, 0, 0, 1000000, 8000, 4000, 2000, 100}

// adoptCutoffs makes p's tester host known to the IUT with a first
// RPC (a reqLen-byte request the tester serves), then has it adopt
// testCutoffs at version (sendCutoffs). It returns that RPC, in whose
// header a spec's last CUTOFFS puts the defaults back.
func adoptCutoffs(p *tester.Peer, reqLen int, version uint16) *iutRPC {
	GinkgoHelper()
	first := iutCall(p, reqLen, 100)
	first.serveFully(p, 100)
	sendCutoffs(p, first.control(), testCutoffs, version)
	return first
}

// sendCutoffs has p's tester host adopt cutoffs cut at version and tells
// the IUT with a CUTOFFS packet in the header ctl of an RPC they share, as
// a receiver whose cutoffs changed does (homa_cutoffs_pkt takes any
// version), then waits until the IUT has processed it (barrier). The
// tester host then takes DATA carrying version as current, not stale.
func sendCutoffs(p *tester.Peer, ctl wire.CommonFields, cut [wire.NumCutoffs]uint32, version uint16) {
	GinkgoHelper()
	env.cutoffsHost(p.Addr()).Set(cut, version)
	Expect(p.SendDeliberate(iut(), ctrlLevel(params()), &wire.CutoffsFields{Common: ctl, UnschedCutoffs: cut, CutoffVersion: version},
		"CUTOFFS no stale DATA asked for, with a table of its own")).To(Succeed())
	barrier(p, ctrlLevel(params()))
}
