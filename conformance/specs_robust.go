package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/conformance/tester"
	"github.com/homatest/homatest/spec/wire"
)

var _ = Describe("robustness", func() {
	It("MALFORMED-ignored: truncated, unknown-type and out-of-range packets are ignored and the IUT keeps serving",
		labels("robustness", "MUST", "HOMA-WIRE-001", "HOMA-RESEND-006"), body(func() {
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
			// Nothing answers the junk (the RPC it names does not exist and
			// no packet of it was well formed).
			Expect(p.ExpectNone(ctx(), tester.Match{From: iut(), RPC: id}, window(2*params().Tick))).To(Succeed())
			// And a well-formed request is served.
			m := newRequest(3000, 2000)
			m.sendData(p, 0, m.msgLen, 6, false)
			_, err := p.Expect(ctx(), tester.Match{Type: wire.TypeData, From: iut(), RPC: m.id}, wait(20*time.Millisecond))
			ok(err, "a response after the malformed packets")
			m.ack(p)
			checkExchange(p)
		}))
})
