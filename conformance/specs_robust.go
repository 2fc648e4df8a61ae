package conformance

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("robustness", func() {
	It("MALFORMED-ignored: truncated, unknown-type and out-of-range packets, and a request to a port nothing listens on, are ignored and the IUT keeps serving",
		labels("robustness", "MUST", "HOMA-WIRE-001", "HOMA-RESEND-006"), body(func() {
			if unsched(3000) < 3000 {
				need("grants") // the well-formed request at the end
			}
			p := peer(0)
			id := env.NewRPCID()
			c := wire.CommonFields{Sport: 41999, Dport: ServerPort, SenderID: id}
			var junk [][]byte
			for _, f := range []wire.Fields{
				&wire.DataFields{Common: c, MessageLength: 5000, Incoming: 5000, Payload: make([]byte, 1000)},
				&wire.GrantFields{Common: c, Offset: 1 << 30, Priority: 3},
				&wire.ResendFields{Common: c, Offset: 0, Length: 100, Priority: 7},
				&wire.AckFields{Common: c, Acks: []wire.AckEntry{{ClientID: id, ServerPort: ServerPort}}},
				&wire.CutoffsFields{Common: c, CutoffVersion: 3},
			} {
				b, err := f.AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
				ok(err, "unexpected error")
				full, err := wire.Decode(b, wire.DecodeOptions{Version: wire.VersionCurrent})
				ok(err, "unexpected error")
				// Cut inside the header: every prefix shorter than the
				// type's header is malformed.
				for _, cut := range []int{1, 11, 12, 20, 27, full.HeaderLen() - 1} {
					if cut < full.HeaderLen() {
						junk = append(junk, b[:cut])
					}
				}
			}
			unknown, _ := (&wire.BusyFields{Common: c}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
			unknown[11] = 0x30 // no such packet type
			junk = append(junk, unknown)
			// DATA whose bytes lie past its message_length, and one with
			// message_length 0.
			past, _ := (&wire.DataFields{Common: c, MessageLength: 1000, Incoming: 1000, SegOffset: 900,
				Payload: make([]byte, 500)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
			zero, _ := (&wire.DataFields{Common: c, MessageLength: 0, Incoming: 0,
				Payload: make([]byte, 10)}).AppendTo(nil, wire.EncodeOptions{FixLengths: true, SetMarks: true})
			junk = append(junk, past, zero)
			for i := 0; i < 3; i++ {
				for _, b := range junk {
					Expect(p.SendRaw(iut(), 6, b)).To(Succeed())
				}
			}
			// Nothing answers the junk except what the rule book asks of a
			// receiver that created server state from the two out-of-range
			// DATA packets, whose headers are well formed (HomaModule
			// homa_data_pkt creates the server RPC, homa_add_packet drops
			// the bytes past message_length and keeps the 10 bytes of the
			// second at [0, 10) of the 1000-byte message): CUTOFFS for
			// their stale cutoff_version 0 (CUT-01, HOMA-CUTOFF-001) and,
			// once resend_ticks have passed, RESEND for the missing bytes
			// of that message (RTX-01..03; checkExchange judges its
			// timing). Truncated headers and the unknown type draw
			// nothing (WIRE-01). Measured: HomaModule linux_6.13.9 sends
			// CUTOFFS twice and RESEND offset 10 length 990.
			Expect(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: id, Checks: []tester.Check{allowedAfterJunk(1000)}},
				window(2*params().Tick))).To(Succeed())
			// A well-formed first packet of a message one byte longer than
			// max_message_length: homa_message_in_init refuses it, so the
			// receiver creates no RPC and never asks for the rest (no
			// RESEND, CUTOFFS or GRANT for it, even after resend_ticks).
			// linux_6.1.38 (profile linux-2024) checks the length only
			// when sending: it takes such a message.
			if pr := params(); env.Profile != "linux-2024" {
				big := newRequest(int(pr.MaxMessageLength)+1, 100)
				Expect(p.SendDeliberate(iut(), big.unschedPrio(), wire.NewData(big.control(), uint32(big.msgLen), uint32(unsched(big.msgLen)),
					big.cutoffVersion, 0, big.payload[:1000], false), "the first DATA of a message longer than max_message_length")).To(Succeed())
				ok(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: big.id}, window(pr.Ticks(pr.ResendTicks+2))),
					"no answer to a message of max_message_length+1 bytes (%d)", big.msgLen)
			}
			// A well-formed request to a port no socket of the IUT listens
			// on (the suite listens on ServerPort and the ports above it)
			// draws no Homa packet: HomaModule (main, linux_6.13.9,
			// linux_6.1.38 homa_softirq) answers it with ICMP port
			// unreachable; RPC_UNKNOWN answers only a RESEND.
			pr := params()
			stray := newRequest(1000, 100)
			stray.port = ServerPort - 1
			Expect(p.SendDeliberate(iut(), stray.unschedPrio(), wire.NewData(stray.control(), uint32(stray.msgLen), uint32(stray.msgLen),
				stray.cutoffVersion, 0, stray.payload, false), "a request to a port no socket listens on")).To(Succeed())
			ok(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: stray.id}, window(pr.Ticks(pr.ResendTicks+2))),
				"no Homa packet answers a request to port %d, where no socket listens", stray.port)
			// And a well-formed request is served (past unsched_bytes as
			// the IUT's GRANTs allow).
			m := newRequest(3000, 2000)
			u := unsched(m.msgLen)
			m.sendUnsched(p, 0, u)
			driveRequests([]*tester.Peer{p}, []msgSpec{m}, []int{u})
			checkExchange(p)
		}))
})

// allowedAfterJunk rejects (returns errAllowed for) the packets a
// receiver may send for an RPC it created from a well-formed DATA header
// of a msgLen-byte message: CUTOFFS (the DATA's cutoff_version was stale)
// and RESEND for bytes of that message. With it, ExpectNone fails on any
// other packet only.
func allowedAfterJunk(msgLen uint32) tester.Check {
	return func(p *tester.Packet) error {
		switch p.Pkt.Type() {
		case wire.TypeCutoffs:
			return errAllowed
		case wire.TypeResend:
			r := p.Pkt.Resend()
			if r.IsResendAll() || uint64(r.Offset())+uint64(r.Length()) <= uint64(msgLen) {
				return errAllowed
			}
		}
		return nil
	}
}

// errAllowed marks a packet that a silence expectation accepts.
var errAllowed = errors.New("allowed by the rule book")
