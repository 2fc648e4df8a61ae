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

	It("IPV6-resend: over IPv6, a request with a missing segment draws a RESEND for exactly that segment, cut as for IPv6, after resend_ticks of silence, and is answered once it is retransmitted",
		labels("ipv6", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-008", "HOMA-PRIO-001"), needs(agent.CapIPv6), body(func() {
			// RESEND-gap over IPv6: the lost range follows the tester's
			// IPv6 segments, and a receiver asks for exactly its gap
			// (homa_request_retrans).
			overIPv6()
			requestGap(laterSegment)
		}))
})
