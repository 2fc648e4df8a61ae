package conformance

import (
	"cmp"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/agent"
	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec/wire"
)

// The specs over IPv6 (overIPv6): HomaModule takes a socket's IP header
// length from its family (ip_header_length, 40 bytes for IPv6) and cuts
// every message into segments of max_seg_data = mtu - ip_header_length -
// 56 (homa_message_out_fill), so over IPv6 a segment carries 20 bytes
// fewer than over IPv4; and it writes a packet's priority into the IPv6
// traffic class (__homa_xmit_control, __homa_xmit_data: ip6_xmit), which
// the tester reads as it reads the IPv4 TOS. The checker judges each
// DATA segment by its family (HOMA-WIRE-013).
var _ = Describe("IPv6", func() {
	It("IPV6-request: over IPv6, a request longer than U sent in IPv6-sized segments is granted, its GRANTs at num_priorities-1 in the traffic class, and answered with a response of several segments, each within max_seg_data for IPv6",
		labels("ipv6", "MUST", "HOMA-WIRE-013", "HOMA-PRIO-001", "HOMA-PRIO-002", "HOMA-PRIO-004",
			"HOMA-GRANT-001", "HOMA-GRANT-010"), needs(agent.CapIPv6), body(func() {
			need("grants")
			overIPv6()
			p := peer(0)
			pr := params()
			seg := maxSegData()
			// The tester sends the unscheduled bytes, then what the
			// IUT's GRANTs allow, each packet a segment for IPv6; the
			// IUT answers with three and a half segments of its own
			// (the tester grants them where they pass U).
			m := newRequest(pastU(3*seg), 3*seg+seg/2)
			u := unsched(m.msgLen)
			m.sendUnsched(p, 0, u)
			grants, _ := m.completeRequest(p, u)
			Expect(grants).NotTo(BeEmpty(), "GRANTs for a %d-byte request over IPv6 (U %d)", m.msgLen, u)
			for _, g := range grants {
				Expect(tester.IPPriority(ctrlLevel(pr), ctrlLevel(pr))(g)).To(Succeed(), "the IUT's GRANT %s: its traffic class", g)
			}
			checkExchange(p)
		}))

	It("IPV6-response: over IPv6, a client's request longer than U goes out in segments within max_seg_data for IPv6, unscheduled bytes first, the rest as granted; a RESEND from inside its third packet draws exactly the packets it overlaps, cut as first sent; and its response, longer than U too, is granted and completes the call",
		labels("ipv6", "MUST", "HOMA-WIRE-013", "HOMA-PRIO-001", "HOMA-PRIO-002", "HOMA-UNSCHED-001",
			"HOMA-GRANT-008", "HOMA-GRANT-010", "HOMA-RESEND-004", "HOMA-RESEND-016", "HOMA-RESEND-021", "HOMA-RESEND-029"), needs(agent.CapIPv6), body(func() {
			need("grants")
			overIPv6()
			p := peer(0)
			pr := params()
			// The client hears only the retransmissions from the last
			// GRANT to the response: up to two RESENDs, each answered at
			// once and followed by a tick's window.
			quietFits(3 * window(pr.Tick))
			// Both messages run past U: the IUT's request shows how it
			// cuts a message it sends over IPv6, and the tester's
			// response, in IPv6-sized segments, that it grants one.
			n := pastU(3 * maxSegData())
			r := iutCall(p, n, n)
			r.receiveRequest(p)
			// homa_resend_data retransmits the packets a range overlaps as
			// they were first cut, so a RESEND from inside a packet past
			// the second, where a cut for IPv4's larger segments lands off
			// IPv6's boundaries, draws those packets and no other: from
			// the third packet of the message, and from the third past U
			// when that is another.
			pkts := p.ReceivedAll(tester.Match{Type: wire.TypeData, From: iut(), RPC: r.id, Checks: []tester.Check{tester.Is("retransmit", 0)}})
			slices.SortFunc(pkts, func(a, b *tester.Packet) int { return cmp.Compare(a.Pkt.Data().Offset(), b.Pkt.Data().Offset()) })
			first := slices.IndexFunc(pkts, func(x *tester.Packet) bool { return int(x.Pkt.Data().Offset()) >= unsched(n) })
			third := first + 2
			if first < 0 || third >= len(pkts) {
				Skip(fmt.Sprintf("unsupported: the IUT sent the %d bytes of its request past U in fewer than three packets, where the spec asks for a third (each of at most %d bytes, max_seg_data for IPv6)", n-unsched(n), maxSegData()))
			}
			inside := func(i int) (int, int) {
				d := pkts[i].Pkt.Data()
				return int(d.Offset()) + 1, int(d.Offset()) + d.DataLen()
			}
			from, to := inside(2)
			r.resendRange(p, pkts, from, to, ctrlLevel(pr))
			if third != 2 {
				from, to = inside(third)
				r.resendRange(p, pkts, from, to, ctrlLevel(pr))
			}
			res := r.respond(p, n, pr.CutoffVersion)
			r.callOK(res, "the IUT's call failed")
			Expect(res.Response).To(Equal(n))
			checkExchange(p)
		}))

	It("IPV6-cutoffs-stale: over IPv6, request DATA with a stale cutoff_version draws CUTOFFS from the receiver, as over IPv4, at num_priorities-1 in the traffic class, carrying its current version",
		labels("ipv6", "SHOULD", "HOMA-CUTOFF-002", "HOMA-PRIO-001"), needs(agent.CapIPv6), body(func() {
			need("cutoffs")
			overIPv6()
			p := peer(0)
			pr := params()
			// homa_data_pkt compares every DATA's cutoff_version with
			// the receiver's own whatever the family, and answers a
			// stale one with CUTOFFS to its source (homa_xmit_control,
			// over ip6_xmit for an IPv6 peer): an IUT that answers only
			// IPv4 peers leaves an IPv6 sender on stale levels for good.
			m := newRequest(1000, 100)
			m.cutoffVersion = pr.CutoffVersion + 1
			m.deliberate = "DATA with a cutoff_version the IUT never sent (a stale one)"
			newJiffy()
			m.sendUnsched(p, 0, m.msgLen)
			c, err := p.Expect(ctx(), tester.Match{Type: wire.TypeCutoffs, From: iut(), Checks: []tester.Check{
				tester.IPPriority(ctrlLevel(pr), ctrlLevel(pr)),
			}}, wait(2*pr.Tick))
			ok(err, "CUTOFFS over IPv6 after request DATA with cutoff_version %d (the IUT's is %d)", pr.CutoffVersion+1, pr.CutoffVersion)
			Expect(c.Pkt.Cutoffs().CutoffVersion()).To(Equal(pr.CutoffVersion), "the CUTOFFS' cutoff_version: the IUT's current one")
			_, err = p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(2*pr.Tick))
			ok(err, "the response over IPv6")
			m.ack(p)
			checkExchange(p)
		}))

	It("IPV6-rpc-unknown: over IPv6, a RESEND for an RPC the IUT never saw is answered with RPC_UNKNOWN, as over IPv4: from the port the RESEND went to back to the port it came from, with the RESEND's sender_id xor 1, at num_priorities-1 in the traffic class, and nothing else",
		labels("ipv6", "MUST", "HOMA-RESEND-006", "HOMA-RESEND-002", "HOMA-PRIO-001"), needs(agent.CapIPv6), body(func() {
			// RPC_UNKNOWN-reply over IPv6: homa_resend_pkt answers a
			// RESEND for an unknown RPC with homa_xmit_unknown, which
			// swaps the ports and flips the id's low bit whatever the
			// family (skb_canonical_ipv6_saddr for the peer): an IUT
			// that builds the answer apart for IPv6 peers may get either
			// wrong where only IPv4 was ever tried.
			overIPv6()
			p := peer(0)
			pr := params()
			id := env.NewRPCID()
			Expect(p.SendDeliberate(iut(), ctrlLevel(pr), &wire.ResendFields{Common: wire.CommonFields{Sport: 40999, Dport: serverPort(), SenderID: id},
				Offset: 0, Length: 1000, Priority: ctrlLevel(pr)}, "RESEND over IPv6 for an RPC that never existed")).To(Succeed())
			u, err := p.Expect(ctx(), tester.Match{Type: wire.TypeRPCUnknown, From: iut(), RPC: id, Checks: []tester.Check{
				tester.Is("sport", uint64(serverPort())), tester.Is("dport", 40999),
				tester.IPPriority(ctrlLevel(pr), ctrlLevel(pr)),
			}}, wait(2*pr.Tick))
			ok(err, "RPC_UNKNOWN over IPv6")
			Expect(u.Pkt.SenderID()).To(Equal(id+1), "RPC_UNKNOWN carries the server's id (the RESEND's sender_id xor 1)")
			Expect(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: id}, window(2*pr.Tick))).To(Succeed())
			checkExchange(p)
		}))

	It("IPV6-resend: over IPv6, a request with a missing segment draws a RESEND for exactly that segment, cut as for IPv6, after resend_ticks of silence, and is answered once it is retransmitted",
		labels("ipv6", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-PRIO-001"), needs(agent.CapIPv6), body(func() {
			// RESEND-gap over IPv6: the lost range follows the tester's
			// IPv6 segments, and a receiver asks for exactly its gap
			// (homa_request_retrans).
			overIPv6()
			requestGap(laterSegment)
		}))
})
