package conformance

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/homatest/homatest/netem"
	"github.com/homatest/homatest/spec"
	"github.com/homatest/homatest/spec/wire"
)

// planResponse is the response length of the fault-plan workloads: 14
// DATA packets of wire.MaxSegDataIPv4 bytes or fewer, all unscheduled.
const planResponse = 20000

// lastSegment is the offset range [from, to) in which the last DATA
// segment of a message of n bytes starts (segments of at most
// wire.MaxSegDataIPv4 bytes).
func lastSegment(n int) []uint32 { return []uint32{uint32(n - wire.MaxSegDataIPv4), uint32(n)} }

func plan(rules ...netem.Rule) *netem.Plan { return &netem.Plan{Rules: rules} }

var no = false

// Fault plans pick single packets by their Homa meaning; each spec checks
// that the plan hit the packets it names, that every RPC still completes
// with the right payload once, and that the capture keeps every MUST rule.
var _ = Describe("fault plans", func() {
	It("WORKLOAD-plan-drop-grants: every GRANT of a 500 KB request after the first is dropped; the server's RESENDs carry the message to the end",
		labels("workload", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-002", "HOMA-RESEND-008", "HOMA-GRANT-005", "HOMA-GRANT-003"), body(func() {
			imp := LinkImpairment{Plan: plan(netem.Rule{Name: "drop every GRANT of the first RPC from the 2nd on",
				Match: netem.Match{Type: "GRANT", RPC: 1, Nth: 2, Count: 100000}, Action: netem.Action{Drop: true}})}
			b := workloadSpec{hosts: 2, dist: "500000", resp: 100, rpcs: 2, concurrency: 1, imp: imp, seed: 10}.run()
			expectHits(b, 0, 1, time.Second)
			Expect(countSent(b, b.server, wire.TypeResend)).To(BeNumerically(">=", 1),
				"RESENDs from the server, the only way past the lost GRANTs")
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-plan-drop-last-data: the last DATA packet of every response is dropped once; each client RESENDs it",
		labels("workload", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-010", "HOMA-ACK-004"), body(func() {
			imp := LinkImpairment{Plan: plan(netem.Rule{Name: "drop the last DATA of every response",
				Match: netem.Match{Type: "DATA", Message: "response", Offset: lastSegment(planResponse), Retransmit: &no}, Action: netem.Action{Drop: true}})}
			const rpcs = 24
			b := workloadSpec{hosts: 3, dist: "1000", resp: planResponse, rpcs: rpcs, concurrency: 8, imp: imp, seed: 11}.run()
			Expect(expectHits(b, 0, rpcs, time.Second)).To(Equal(rpcs), "responses whose last DATA was dropped")
			Expect(countSent(b, b.clients, wire.TypeResend)).To(BeNumerically(">=", rpcs), "RESENDs from the clients")
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-plan-duplicate-resend: every RESEND arrives three times (the last DATA of every response dropped to cause them); the duplicates change nothing",
		labels("workload", "MUST", "HOMA-RESEND-003", "HOMA-RESEND-005", "HOMA-RESEND-010", "HOMA-WIRE-003"), body(func() {
			imp := LinkImpairment{Plan: plan(
				netem.Rule{Name: "drop the last DATA of every response",
					Match: netem.Match{Type: "DATA", Message: "response", Offset: lastSegment(planResponse), Retransmit: &no}, Action: netem.Action{Drop: true}},
				netem.Rule{Name: "duplicate every RESEND twice", Match: netem.Match{Type: "RESEND"}, Action: netem.Action{Duplicate: 2}})}
			const rpcs = 16
			b := workloadSpec{hosts: 3, dist: "1000", resp: planResponse, rpcs: rpcs, concurrency: 8, imp: imp, seed: 12}.run()
			expectHits(b, 0, rpcs, time.Second)
			expectHits(b, 1, rpcs, time.Second)
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-plan-delay-first-data: the first DATA of every response is delayed by 5 ms and arrives after the rest of its message",
		labels("workload", "MUST", "HOMA-RESEND-001", "HOMA-RESEND-010", "HOMA-WIRE-003", "HOMA-ACK-004"), body(func() {
			imp := LinkImpairment{Plan: plan(netem.Rule{Name: "delay the first DATA of every response by 5 ms",
				Match:  netem.Match{Type: "DATA", Message: "response", Offset: []uint32{0, 1}, Retransmit: &no},
				Action: netem.Action{Delay: 5 * time.Millisecond}})}
			const rpcs = 40
			b := workloadSpec{hosts: 3, dist: "1000", resp: 5000, rpcs: rpcs, concurrency: 8, imp: imp, seed: 13}.run()
			Expect(expectHits(b, 0, rpcs, time.Second)).To(Equal(rpcs), "responses whose first DATA was delayed")
			checkBench(b, spec.Must)
		}))

	It("WORKLOAD-plan-delay-ack: every ACK is delayed by 30 ms (three ticks), so servers send NEED_ACK again meanwhile; the late ACKs end the RPCs",
		labels("workload", "MUST", "HOMA-ACK-001", "HOMA-ACK-003", "HOMA-ACK-004", "HOMA-ACK-005"), body(func() {
			imp := LinkImpairment{Plan: plan(netem.Rule{Name: "delay every ACK by 30 ms",
				Match: netem.Match{Type: "ACK"}, Action: netem.Action{Delay: 30 * time.Millisecond}})}
			b := workloadSpec{hosts: 3, dist: "w2", rpcs: 10, concurrency: 10, imp: imp, seed: 14}.run()
			// The servers ask for ACKs request_ack_ticks after the last
			// responses went out, after the workload is done: wait for an
			// ACK from both clients, then for 100 ms without a new one,
			// so the last delayed ACK has arrived before the captures end.
			expectHits(b, 0, 2, 2*time.Second)
			quiet(b, 100*time.Millisecond)
			Expect(countSent(b, b.server, wire.TypeNeedAck)).To(BeNumerically(">", 2), "NEED_ACKs from the server")
			checkBench(b, spec.Must)
		}))
})
