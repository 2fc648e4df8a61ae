package conformance

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/homatest/homatest/spec"
)

// The rules a lossy workload exercises most (every MUST rule is checked).
var lossRules = []string{"HOMA-RESEND-001", "HOMA-RESEND-002", "HOMA-RESEND-003", "HOMA-RESEND-007",
	"HOMA-RESEND-010", "HOMA-UNSCHED-001", "HOMA-GRANT-005", "HOMA-ACK-004"}

var _ = Describe("workloads", func() {
	It("WORKLOAD-random-loss: W3 requests from two clients over links losing 5% of packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", lossRules...), func() {
			b := workloadSpec{hosts: 3, dist: "w3", rpcs: 150, concurrency: 12,
				imp: LinkImpairment{Loss: 0.05, Seed: 7}, seed: 1}.run()
			checkBench(b, spec.Must)
		})

	It("WORKLOAD-burst-loss: W3 requests over links losing bursts of 10 packets all complete, once each, and the capture keeps every MUST rule",
		labels("workload", "MUST", lossRules...), func() {
			b := workloadSpec{hosts: 3, dist: "w3", rpcs: 150, concurrency: 12,
				imp: LinkImpairment{BurstEvery: 300, BurstLen: 10, Seed: 8}, seed: 2}.run()
			checkBench(b, spec.Must)
		})

	It("WORKLOAD-incast: 200 KB requests from three clients to one server all complete and the capture keeps every MUST rule",
		labels("workload", "MUST", "HOMA-GRANT-002", "HOMA-GRANT-003", "HOMA-GRANT-005", "HOMA-GRANT-009"), func() {
			b := workloadSpec{hosts: 4, dist: "200000", rpcs: 30, concurrency: 6, seed: 3}.run()
			checkBench(b, spec.Must)
		})
})
